"""`ddpfix explain`: from a rule code, an error message or a whole log to the rules behind it."""

from __future__ import annotations

import codecs
import html
import os
import re
import stat
import sys
from dataclasses import dataclass

# Forum wording: a line that says something hangs and where. Lowercase stems; the patterns are
# matched without regard to case. The hang words include a few languages, since users paste the
# PyTorch names (barrier, init_process_group) inside their own sentences.
_HANG = (
    r"(?:(?<![a-z])hang|(?<![a-z])hung(?![a-z])|stuck|freez|froze|deadlock|never (?:returns|finishes|ends|completes)"
    r"|(?:waits?|waiting|blocks?|blocked) forever|卡住|卡死|卡在|卡着|挂起|死锁|阻塞|завис|висит|застр"
    r"|ハング|フリーズ|止ま|固ま|멈|häng|bloqu|se cuelga|colgad|trava|congela)"
)
_HANG_GATE = (  # a superset of _HANG made of plain words, much faster to look for
    r"hang|hung|stuck|freez|froze|deadlock|forever|never|卡|挂起|死锁|阻塞|завис|висит|застр|ハング|フリーズ|止ま|固ま|멈"
    r"|häng|bloqu|cuelga|colgad|trava|congela"
)
_INIT = r"(?:init_process_group|rendezvous|rdzv|tcpstore|master_addr|master_port)"
_END = (
    r"(?:end of (?:the )?(?:training|(?:first |last |final )?epoch)|(?:last|final) (?:epoch|batch|iteration|step)"
    r"|after (?:the )?training|(?:on|at|before) exit|when exiting|destroy_process_group)"
)
_EVAL = r"(?:validat|evaluat|(?<![a-z])eval(?![a-z])|(?<![a-z])inference)"
_COLLECTIVE = (
    r"(?:barrier|all_?reduce|all_?gather|broadcast|reduce_scatter|collective|nccl|gloo|ddp|distributed"
    r"|multi[- ]?gpu|torchrun|backward)"
)
_GPU0 = (
    r"^(?=.*(?:all|every|each|both|multiple|several) (?:\w+ )?(?:process|rank|worker)s?)"
    r"(?=.*(?:same gpu|one gpu|single gpu|gpu ?0|cuda:0|device 0))"
)
_SAME_DATA = (
    r"^(?=.*(?:same|identical|duplicated?|whole|entire|full) (?:\w+ )?(?:data(?:set)?|batch(?:es)?|samples?))"
    r"(?=.*(?:every|each|all|both) (?:\w+ )?(?:ranks?|gpus?|process(?:es)?|workers?|devices?))"
)
_PRINTED = (
    r"(?:prints?|printed|logs?|logged|messages?|lines?) (?:\w+ ){0,3}?"
    r"(?:twice|\d+ times|(?:once )?(?:per|for each|for every) (?:gpu|rank|process))(?! (?:per|each|every) )"
    r"|(?:multiple|several|\d+) (?:tqdm |progress )+bars"
)
_KEYS = r"(?:\s*[\"'][^\"']*[\"'],)*\s*[\"']module\."  # a quoted key list with a 'module.' key anywhere in it

# (pattern, rule codes most likely behind it, what the message means). Matched without regard to
# case: lowered, against lowercased text (escapes such as \S keep their meaning). Ordered: the first
# patterns are the most specific; a later pattern whose rules were all named already is not
# reported again.
PATTERNS: list[tuple[str, tuple[str, ...], str]] = [
    (
        r"sampler option is mutually exclusive with shuffle|batch_sampler option is mutually exclusive",
        ("DDP203", "DDP202"),
        "the DataLoader got both shuffle= and a sampler",
    ),
    (
        r"Error\(s\) in loading state_dict for DistributedDataParallel|Missing key\(s\) in state_dict:" + _KEYS,
        ("DDP403", "DDP402"),
        "a plain checkpoint loaded into the DDP wrapper: its keys lack the wrapper's 'module.' prefix",
    ),
    (
        r"Unexpected key\(s\) in state_dict:" + _KEYS,
        ("DDP402", "DDP403"),
        "a checkpoint saved from the DDP wrapper: its keys carry the 'module.' prefix the model lacks",
    ),
    (r"Error\(s\) in loading state_dict", ("DDP403", "DDP402"), "state_dict keys do not match the model"),
    (
        r"Default process group has not been initialized"
        r"|environment variable (RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT|LOCAL_RANK) expected, but not set"
        r"|KeyError: '(LOCAL_RANK|RANK|WORLD_SIZE|LOCAL_WORLD_SIZE)'",
        ("DDP001",),
        "distributed code ran without a process group (or outside torchrun)",
    ),
    (
        r"Expected to have finished reduction in the prior iteration",
        ("DDP310", "DDP102"),
        "some parameters got no gradient, or ranks ran different steps",
    ),
    (r"SyncBatchNorm expected input tensor to be on GPU", ("DDP306",), "SyncBatchNorm ran on CPU tensors"),
    (r"Duplicate GPU detected", ("DDP006", "DDP007", "DDP005"), "two ranks share one GPU"),
    (
        r"ncclInvalidUsage|invalid usage(?: \(run with NCCL_DEBUG=WARN for details\))?, NCCL version",
        ("DDP006", "DDP007", "DDP005"),
        "NCCL refused the setup; most often two ranks share one GPU",
    ),
    (r"invalid device ordinal", ("DDP005", "DDP007"), "a device index that does not exist on this node"),
    (
        r"Expected all tensors to be on the same device, but found at least two devices, cuda:\d+ and cuda:\d+",
        ("DDP007", "DDP404", "DDP005", "DDP006"),
        "tensors on another rank's GPU: a hard-coded device, or a checkpoint loaded without map_location",
    ),
    (r"ProcessGroupNCCL is only supported with GPUs|no GPUs found", ("DDP002",), "NCCL on a machine without GPUs"),
    (
        r"No backend type associated with device type cpu|Tensors must be CUDA and dense"
        r"|Distributed package doesn't have NCCL built in",
        ("DDP002",),
        "the NCCL backend got CPU tensors, or this PyTorch has no NCCL",
    ),
    (r"device_ids and output_device arguments only work with", ("DDP303",), "device_ids given for a CPU module"),
    (
        r"'DistributedDataParallel' object has no attribute",
        ("DDP308",),
        "a custom attribute reached through the wrapper",
    ),
    (
        r"Detected mismatch between collectives|Collectives differ in the following aspects|unexpected collective"
        r"|collectives? (?:do not|don't|did not|didn't) match",
        ("DDP101", "DDP102"),
        "ranks issued different collectives",
    ),
    (
        r"Received data size doesn't match expected size|collective mismatch",
        ("DDP103", "DDP101"),
        "a collective on some ranks only (often a forward of the wrapper on rank 0)",
    ),
    (
        r"takes \d+ positional arguments? but \d+ (were|was) given",
        ("DDP004",),
        "an mp.spawn target without the process index",
    ),
    (
        r"DistStoreError|wait timeout after \d+ms|Timed out after \d+ seconds waiting for clients"
        r"|The client socket has timed out after|failed to connect/validate to host|Socket Timeout",
        ("DDP003", "DDP004"),
        "the rendezvous waits for ranks that never come (rank/world size by hand)",
    ),
    (
        r"server socket has failed to listen|EADDRINUSE|address already in use",
        ("DDP003",),
        "the rendezvous port is taken: another job uses it, or a hand-written init_method fixes it",
    ),
    (
        r"PytorchStreamReader failed reading|failed finding central directory",
        ("DDP410", "DDP401"),
        "a checkpoint read while another rank was writing it",
    ),
    (
        r"Watchdog caught collective operation timeout|WorkNCCL\(.*\) ran for \d+ milliseconds before timing out"
        r"|Some NCCL operations have failed or timed out|NCCL communicator was aborted|Heartbeat monitor timed out"
        r"|watchdog got stuck|Timed out waiting \d+ms for (recv|send)|Connection closed by peer"
        r"|Connection reset by peer|failed to pass monitoredBarrier|timed out in monitoredBarrier"
        r"|barrier failed -- missing ranks|barrier timeout after \d+ms|ncclRemoteError"
        r"|remote process exiting prematurely",
        ("DDP101", "DDP102", "DDP105", "DDP104", "DDP410"),
        "a rank waits in a collective the others never reach",
    ),
    (r"destroy_process_group\(\) was not called", ("DDP001",), "the process group is never torn down"),
    (
        r"find_unused_parameters=True was specified in DDP constructor, but did not find any unused",
        ("DDP310",),
        "find_unused_parameters costs a graph traversal per step for nothing",
    ),
    # Forum wording, after the PyTorch messages that say the same more precisely.
    (
        rf"^(?=.*{_HANG})(?=.*{_INIT})",
        ("DDP003", "DDP004"),
        "the rendezvous waits for ranks that never come (rank/world size by hand)",
    ),
    (
        rf"^(?=.*{_HANG})(?=.*{_END})(?!.*{_INIT})",
        ("DDP104", "DDP102"),
        "ranks ran different numbers of steps: the ones that finish first leave the others waiting",
    ),
    (
        rf"^(?=.*{_HANG})(?=.*{_EVAL})(?!.*{_INIT})(?!.*{_END})",
        ("DDP103", "DDP101"),
        "evaluation on some ranks only: it runs collectives (or DDP's forward) the others never join",
    ),
    (
        rf"^(?=.*{_HANG})(?=.*{_COLLECTIVE})(?!.*{_INIT})(?!.*{_END})(?!.*{_EVAL})",
        ("DDP101", "DDP102", "DDP105", "DDP104", "DDP410"),
        "a rank waits in a collective the others never reach",
    ),
    (
        _GPU0,
        ("DDP006", "DDP007", "DDP005"),
        "two ranks share one GPU",
    ),
    (
        _SAME_DATA,
        ("DDP201", "DDP202", "DDP205"),
        "every rank iterates the whole dataset (no DistributedSampler, or one never passed to the DataLoader)",
    ),
    (
        r"same (?:order|shuffle|batches|samples) (?:in |on |for )?(?:every|each) epoch"
        r"|every epoch (?:has|sees|gets|uses) the same (?:order|shuffle|batches|samples)",
        ("DDP204",),
        "the DistributedSampler never gets set_epoch(): every epoch uses the same order",
    ),
    (
        _PRINTED,
        ("DDP406", "DDP405", "DDP408"),
        "every rank prints, logs or draws a progress bar",
    ),
    (
        r"module\.[\"'`]? prefix|prefix [\"'`]?module\.",
        ("DDP402", "DDP403"),
        "a checkpoint and a model disagree on the 'module.' prefix of the DDP wrapper",
    ),
]

# Cheap supersets of the slow forum patterns: only the lines where the gate matches are tried
# against the pattern itself, which keeps a long log fast.
GATES: dict[str, str] = {
    pattern: gate
    for pattern, gate in (
        *((p, _HANG_GATE) for p, _, _ in PATTERNS if _HANG in p),
        (_GPU0, r"gpu|cuda:0|device 0"),
        (_SAME_DATA, r"same|identical|duplicat|whole|entire|full"),
        (_PRINTED, r"twice|times|per gpu|per rank|per process|for each|for every|bars"),
    )
}

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


def _interactive(stream) -> bool:
    """Whether `stream` is a terminal (or missing): then nothing was piped in."""
    try:
        return stream is None or stream.isatty()
    except (OSError, ValueError):
        return True


def _read_stdin() -> str:
    stream = sys.stdin
    if stream is None:
        from .errors import DdpfixError

        raise DdpfixError("cannot read standard input: it is closed")
    try:
        buffer = getattr(stream, "buffer", None)
        return decode(buffer.read()) if buffer is not None else stream.read()
    except (OSError, ValueError) as exc:
        from .errors import DdpfixError

        raise DdpfixError(f"cannot read standard input: {exc}") from None


def read_subject(subject: str | None) -> str:
    """The text to explain: standard input for None or '-', a file's text when `subject` names an
    existing file, else `subject` itself."""
    from .errors import DdpfixError

    if subject is None or subject == "-":
        if subject is None and _interactive(sys.stdin):
            raise DdpfixError("nothing to explain: give a rule code, an error message or a log file, or pipe a log in")
        text, where = _read_stdin(), "standard input"
    else:
        st = _stat(subject)
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

    from .api import check_source
    from .docs import rule_page
    from .errors import DdpfixError
    from .transforms import BY_CODE

    if subject is not None and CODE.match(subject.strip()):
        rule = BY_CODE.get(subject.strip().upper())
        if rule is None:
            raise DdpfixError(f"unknown rule: {subject.strip()}")
        echo(rule_page(rule))
        return 0
    matches = explain_text(read_subject(subject))
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
        else:
            echo(
                f"In {script}: none of these rules finds anything; the cause may be outside the script (launch, data)."
            )
    return 0
