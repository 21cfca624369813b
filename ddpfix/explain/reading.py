"""What `ddpfix explain` reads: a message, a log file, or standard input."""

from __future__ import annotations

import codecs
import os
import stat
import sys

from ..errors import DdpfixError


def decode(data: bytes) -> str:
    """A log's bytes as text: UTF-8 unless a byte order mark says UTF-16; undecodable bytes replaced."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and not data.startswith(codecs.BOM_UTF32_LE):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def _stat(subject: str) -> os.stat_result | None:
    """The file `subject` names, or None when it names none (a message is seldom a valid path: too
    long, a NUL byte, characters the file system cannot encode)."""
    try:
        return os.stat(subject)
    except (OSError, ValueError):
        return None


PATH_SUFFIXES = (".log", ".txt", ".py")


def looks_like_path(subject: str) -> bool:
    """Whether an argument is meant as a file: one word (no whitespace) that ends in .log, .txt or .py,
    or holds a '/' (or a '\\'), and is not a URL. Such an argument must name an existing file; an
    error message has spaces."""
    if not subject or any(c.isspace() for c in subject) or "://" in subject:
        return False
    return subject.lower().endswith(PATH_SUFFIXES) or "/" in subject or "\\" in subject


def _interactive(stream) -> bool:
    """Whether `stream` is a terminal (or missing): then nothing was piped in."""
    try:
        return stream is None or stream.isatty()
    except (OSError, ValueError):
        return True


def _read_stdin() -> str:
    stream = sys.stdin
    if stream is None:
        raise DdpfixError("cannot read standard input: it is closed")
    try:
        buffer = getattr(stream, "buffer", None)
        return decode(buffer.read()) if buffer is not None else stream.read()
    except (OSError, ValueError) as exc:
        raise DdpfixError(f"cannot read standard input: {exc}") from None


def read_subject(subject: str | None) -> str:
    """The text to explain: standard input for None or '-', a file's text when `subject` names an
    existing file, else `subject` itself."""
    if subject is None or subject == "-":
        if subject is None and _interactive(sys.stdin):
            raise DdpfixError("nothing to explain: give a rule code, an error message or a log file, or pipe a log in")
        text, where = _read_stdin(), "standard input"
    else:
        st = _stat(subject)
        if st is None and looks_like_path(subject):
            raise DdpfixError(f"{subject}: no such file (quote an error message; a log file must exist)")
        if st is None:
            text, where = subject, "the message"
        elif stat.S_ISDIR(st.st_mode):
            raise DdpfixError(f"{subject}: is a folder; give a log file, an error message or '-'")
        elif not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise DdpfixError(f"{subject}: not a regular file; give a log file, an error message or '-'")
        else:
            try:
                with open(subject, "rb") as f:
                    text = decode(f.read())
            except OSError as exc:
                raise DdpfixError(f"{subject}: cannot read: {exc.strerror or exc}") from None
            where = subject
    if not text.strip():
        raise DdpfixError(f"nothing to explain: {where} is empty")
    return text


__all__ = ["PATH_SUFFIXES", "decode", "looks_like_path", "read_subject"]
