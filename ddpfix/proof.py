"""What a verified rewrite proved, in words, built from verify's check results and the counts each check
compared: ``verified on 2 processes: every rank finished, shards disjoint, parameters in sync after 8
steps, 1 writer per file``; and the failed checks with their evidence. Standard library only."""

from __future__ import annotations


def _n(compared: dict, key: str) -> int:
    try:
        return int(compared.get(key) or 0)
    except (TypeError, ValueError):
        return 0


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _shards(c) -> str:
    passes, inputs = _n(c.compared, "passes"), _n(c.compared, "inputs")
    if passes:
        return f"shards disjoint ({_plural(passes, 'pass', 'passes')}, {_n(c.compared, 'indices')} indices)"
    return f"each rank fed its own training inputs ({inputs} compared)"


def _params(c) -> str:
    steps = _n(c.compared, "steps")
    return f"parameters in sync after {_plural(steps, 'step', 'steps')}" if steps else "parameters in sync"


def _files(c) -> str:
    files = _n(c.compared, "files")
    return f"1 writer per file ({_plural(files, 'file', 'files')})"


def _collectives(c) -> str:
    return f"the same {_plural(_n(c.compared, 'collectives'), 'collective', 'collectives')} on every rank"


# check name -> what its pass proves (in the order verify runs the checks)
PHRASES = {
    "completes": lambda c: "every rank finished",
    "ddp": lambda c: "gradients all-reduced through DDP",
    "shards": _shards,
    "epoch_order": lambda c: "a new order each epoch",
    "params": _params,
    "files": _files,
    "collectives": _collectives,
    "single": lambda c: "the plain run works",
}


def proven(report) -> str:
    """One line: what the run proved (the checks that passed), which checks did not apply, or what failed."""
    world = (report.meta or {}).get("world_size") or "?"
    failed = [c.name for c in report.checks if c.status == "fail"]
    na = [c.name for c in report.checks if c.status == "n/a"]
    if failed:
        return f"verification failed on {world} processes: {', '.join(failed)}"
    said = [PHRASES[c.name](c) for c in report.checks if c.status == "pass" and c.name in PHRASES]
    text = f"verified on {world} processes: {', '.join(said) or 'nothing compared'}"
    return text + (f" (n/a: {', '.join(na)})" if na else "")


def failure_lines(report, indent: str = "      ") -> list[str]:
    """Each failed check (``FAIL  shards: Shards disjoint and covering``), its evidence indented below it."""
    out = []
    for c in report.checks:
        if c.status != "fail":
            continue
        out.append(f"FAIL  {c.name}: {c.title}")
        out.extend(f"{indent}{line}" for line in c.evidence)
    return out


__all__ = ["PHRASES", "failure_lines", "proven"]
