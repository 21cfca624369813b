"""`ddpfix explain`: from a rule code, an error message or a whole log to the rules behind it."""

from __future__ import annotations

import re
from dataclasses import dataclass

# (pattern, rule codes most likely behind it, what the message means). Ordered: the first
# patterns are the most specific.
PATTERNS: list[tuple[str, tuple[str, ...], str]] = [
    (
        r"sampler option is mutually exclusive with shuffle|batch_sampler option is mutually exclusive",
        ("DDP203", "DDP202"),
        "the DataLoader got both shuffle= and a sampler",
    ),
    (
        r"Unexpected key\(s\) in state_dict:\s*\"module\.|Missing key\(s\) in state_dict:\s*\"module\.",
        ("DDP403", "DDP402"),
        "a checkpoint and a model disagree on the 'module.' prefix of the DDP wrapper",
    ),
    (r"Error\(s\) in loading state_dict", ("DDP403", "DDP402"), "state_dict keys do not match the model"),
    (
        r"Default process group has not been initialized|environment variable (RANK|WORLD_SIZE|MASTER_ADDR) expected, but not set",
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
    (r"invalid device ordinal", ("DDP005", "DDP007"), "a device index that does not exist on this node"),
    (r"ProcessGroupNCCL is only supported with GPUs|no GPUs found", ("DDP002",), "NCCL on a machine without GPUs"),
    (r"device_ids and output_device arguments only work with", ("DDP303",), "device_ids given for a CPU module"),
    (
        r"'DistributedDataParallel' object has no attribute",
        ("DDP308",),
        "a custom attribute reached through the wrapper",
    ),
    (
        r"Detected mismatch between collectives|Collectives differ in the following aspects",
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
        r"DistStoreError|wait timeout after \d+ms|Timed out after \d+ seconds waiting for clients",
        ("DDP003", "DDP004"),
        "the rendezvous waits for ranks that never come (rank/world size by hand)",
    ),
    (
        r"PytorchStreamReader failed reading|failed finding central directory",
        ("DDP410", "DDP401"),
        "a checkpoint read while another rank was writing it",
    ),
    (
        r"Watchdog caught collective operation timeout|Timed out waiting \d+ms for (recv|send)|Connection closed by peer|"
        r"Connection reset by peer|failed to pass monitoredBarrier",
        ("DDP101", "DDP102", "DDP105", "DDP104", "DDP410"),
        "a rank waits in a collective the others never reach",
    ),
    (r"destroy_process_group\(\) was not called", ("DDP001",), "the process group is never torn down"),
    (r"FileExistsError: \[Errno 17\] File exists", ("DDP420",), "several ranks created the same folder at once"),
    (
        r"File is not a zip file|Compressed file ended before the end-of-stream|(MD5|checksum|Checksum).*(mismatch|failed|does not match)",
        ("DDP208", "DDP410"),
        "a download or archive read while another rank was still writing it",
    ),
    (
        r"find_unused_parameters=True was specified in DDP constructor, but did not find any unused",
        ("DDP310",),
        "find_unused_parameters costs a graph traversal per step for nothing",
    ),
]

CODE = re.compile(r"^DDP\d{3}$", re.IGNORECASE)


@dataclass(frozen=True)
class Match:
    codes: tuple[str, ...]
    meaning: str
    line_no: int
    line: str


def explain_text(text: str) -> list[Match]:
    """The rules an error message or log points at, each with the first line that matched."""
    out: list[Match] = []
    seen: set[str] = set()
    covered: set[str] = set()
    lines = text.splitlines() or [text]
    for pattern, codes, meaning in PATTERNS:
        if set(codes) <= covered:
            continue  # a more specific pattern already named these rules
        rx = re.compile(pattern)
        for no, line in enumerate(lines, 1):
            if rx.search(line):
                if pattern not in seen:
                    seen.add(pattern)
                    covered.update(codes)
                    out.append(Match(codes, meaning, no, line.strip()))
                break
        else:
            if rx.search(text) and pattern not in seen:  # a message wrapped over several lines
                seen.add(pattern)
                covered.update(codes)
                out.append(Match(codes, meaning, 0, ""))
    return out


def likely_codes(matches: list[Match]) -> list[str]:
    codes: list[str] = []
    for m in matches:
        for c in m.codes:
            if c not in codes:
                codes.append(c)
    return codes


def explain(
    subject: str,
    script: str | None = None,
    *,
    echo=print,
) -> int:
    """Print what `subject` (a rule code, an error text, a log file or '-') points at; return the exit code."""
    import sys
    from pathlib import Path

    from .api import check_source
    from .errors import DdpfixError
    from .transforms import BY_CODE

    if CODE.match(subject.strip()):
        rule = BY_CODE.get(subject.strip().upper())
        if rule is None:
            raise DdpfixError(f"unknown rule: {subject}")
        echo(f"# {rule.code} {rule.name}\n\n{rule.message}\n\nFix: {rule.fix}\n{rule.docs}")
        return 0
    if subject == "-":
        text = sys.stdin.read()
    elif len(subject) < 4096 and "\n" not in subject and Path(subject).is_file():
        text = Path(subject).read_text(encoding="utf-8", errors="replace")
    else:
        text = subject
    matches = explain_text(text)
    if not matches:
        echo("No known DDP failure in this text. `ddpfix rules` lists what ddpfix knows about.")
        return 1
    for m in matches:
        names = ", ".join(f"{c} ({BY_CODE[c].name})" if c in BY_CODE else c for c in m.codes)
        echo(f"{m.meaning}: {names}")
        if m.line:
            echo(f"    matched line {m.line_no}: {m.line[:200]}")
    if script is not None:
        try:
            data = Path(script).read_bytes()
        except OSError as exc:
            raise DdpfixError(f"{script}: cannot read: {exc.strerror or exc}") from None
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
