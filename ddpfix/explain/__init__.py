"""`ddpfix explain`: from a rule code, an error message or a whole log to the rules behind it."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from .patterns import GATES, PATTERNS
from .reading import read_subject

CODE = re.compile(r"^DDP\d{3}$", re.IGNORECASE)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_INVISIBLE = re.compile(r"[\u200b-\u200d\u2060\ufeff]")
_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2018": "'", "\u2019": "'"})
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SHOWN = 200  # characters of a matched line that are printed


@dataclass(frozen=True)
class Match:
    codes: tuple[str, ...]
    meaning: str
    line_no: int
    line: str
    start: int = 0  # where in `line` the match starts


def plain(text: str) -> str:
    """Text as pasted from a terminal or a web page, brought back to what PyTorch printed: no colour
    codes or HTML entities, plain spaces and quotes."""
    if "&" in text:
        text = html.unescape(text)
    text = _ANSI.sub("", text)
    text = _SPACES.sub(" ", text)
    text = _INVISIBLE.sub("", text)
    return text.translate(_QUOTES)


def _lowercase_pattern(pattern: str) -> str:
    """`pattern` for lowercased text: letters lowered, escapes such as \\d and \\S kept."""
    return re.sub(r"\\.|[^\\]+", lambda m: m.group() if m.group().startswith("\\") else m.group().lower(), pattern)


def _lowercase(text: str) -> str:
    """`text` lowercased, each character where it was (matching a lowered pattern is much faster than
    matching with re.IGNORECASE)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(low := c.lower()) != 1 else low for c in text)  # 'İ' lowers to two characters


def _lines_with(pattern: str, text: str) -> list[tuple[int, int]]:
    """Start and end of each line of `text` where `pattern` matches."""
    spans: list[tuple[int, int]] = []
    for hit in re.finditer(pattern, text):
        begin = text.rfind("\n", 0, hit.start()) + 1
        if spans and spans[-1][0] == begin:
            continue
        end = text.find("\n", hit.start())
        spans.append((begin, len(text) if end < 0 else end))
    return spans


def explain_text(text: str) -> list[Match]:
    """The rules an error message or log points at, each with the line where the first match starts
    (a match may run on over the next lines: a message wrapped by a terminal)."""
    text = "\n".join(plain(text).splitlines())  # every line break as '\n', the one `^` and `.` know
    lowered = _lowercase(text)
    out: list[Match] = []
    covered: set[str] = set()
    gated: dict[str, list[tuple[int, int]]] = {}  # gate -> the lines it matches
    for pattern, codes, meaning in PATTERNS:
        if set(codes) <= covered:
            continue  # a more specific pattern already named these rules
        rx = re.compile(_lowercase_pattern(pattern), re.MULTILINE)
        gate = GATES.get(pattern)
        if gate is None:
            hit = rx.search(lowered)
        else:
            if gate not in gated:
                gated[gate] = _lines_with(gate, lowered)
            hit = next((h for begin, end in gated[gate] if (h := rx.search(lowered, begin, end))), None)
        if hit is None:
            continue
        begin = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", hit.start())
        line = text[begin : len(text) if end < 0 else end]
        indent = len(line) - len(line.lstrip())
        covered.update(codes)
        out.append(
            Match(codes, meaning, text.count("\n", 0, begin) + 1, line.strip(), max(0, hit.start() - begin - indent))
        )
    return out


def likely_codes(matches: list[Match]) -> list[str]:
    codes: list[str] = []
    for m in matches:
        for c in m.codes:
            if c not in codes:
                codes.append(c)
    return codes


def shown(line: str, start: int = 0) -> str:
    """A matched line as printed: control characters replaced, at most SHOWN characters of it, from a
    little before `start` when the match lies beyond them."""
    line = _CONTROL.sub("?", line)
    if len(line) <= SHOWN:
        return line
    if start > SHOWN // 2:
        begin = max(0, start - 20)
        part = line[begin : begin + SHOWN]
        return "..." + part + ("..." if begin + SHOWN < len(line) else "")
    return line[:SHOWN] + "..."


def explain(
    subject: str | None,
    script: str | None = None,
    *,
    echo=print,
) -> int:
    """Print what `subject` points at: a rule code, an error text, a log file, or standard input
    ('-' or None). Return the exit code: 0 rules named, 1 no known DDP error in the text."""
    from pathlib import Path

    from ..api import check_source
    from ..docs import rule_page
    from ..errors import DdpfixError
    from ..transforms import BY_CODE

    if subject is not None and CODE.match(subject.strip()):
        rule = BY_CODE.get(subject.strip().upper())
        if rule is None:
            raise DdpfixError(f"unknown rule: {subject.strip()}")
        echo(rule_page(rule))
        return 0
    text = read_subject(subject)
    matches = explain_text(text)
    if not matches:
        echo("No known DDP error in this text. `ddpfix rules` lists what ddpfix knows about.")
        return 1
    for m in matches:
        names = ", ".join(f"{c} ({BY_CODE[c].name})" if c in BY_CODE else c for c in m.codes)
        echo(f"{m.meaning}: {names}")
        if m.line:
            echo(f"    matched line {m.line_no}: {shown(m.line, m.start)}")
    if script is not None:
        try:
            data = Path(script).read_bytes()
        except (OSError, ValueError) as exc:
            raise DdpfixError(f"{script}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
        codes = [c for c in likely_codes(matches) if c in BY_CODE]
        found = check_source(data, path=script, select=codes) if codes else []
        echo("")
        if found:
            echo(f"In {script}:")
            for d in found:
                echo("  " + d.format(script))
        elif (line := traceback_line(text, script, data)) is not None:
            echo(f"In {script}: none of these rules finds anything, but the traceback points at line {line[0]}:")
            echo(f"  {line[0]} | {shown(line[1].strip())}")
            for c in codes:
                echo(f"  {c} ({BY_CODE[c].name}) would apply there: {BY_CODE[c].message}")
        else:
            echo(
                f"In {script}: none of these rules finds anything; the cause may be outside the script (launch, data)."
            )
    return 0


_FRAME = re.compile(r'File "([^"\n]+)", line (\d+)')


def _same_file(frame: str, script: str) -> bool:
    """Whether a traceback's file is `script`: the same file here, or a path ending in the script's
    path as given (`train.py` is `/home/me/run/train.py`; an absolute script by its name)."""
    import os
    from pathlib import PurePath

    try:
        if os.path.samefile(frame, script):
            return True
    except (OSError, ValueError):
        pass
    theirs = PurePath(frame.replace("\\", "/")).parts
    mine = [p for p in PurePath(script.replace("\\", "/")).parts if p != "."]
    if PurePath(script).is_absolute():
        mine = mine[-1:]
    return bool(mine) and len(theirs) >= len(mine) and list(theirs[-len(mine) :]) == mine


def traceback_line(text: str, script: str, data: bytes) -> tuple[int, str] | None:
    """The innermost frame of a traceback in `text` that lies in `script`: its line number and that
    line of the script (whose bytes are `data`); None when no frame points into it."""
    from .reading import decode

    lines = decode(data).splitlines()
    for frame in reversed(_FRAME.findall(plain(text))):
        number = int(frame[1])
        if _same_file(frame[0], script) and 1 <= number <= len(lines):
            return number, lines[number - 1]
    return None


__all__ = ["GATES", "PATTERNS", "Match", "explain", "explain_text", "likely_codes", "read_subject", "traceback_line"]
