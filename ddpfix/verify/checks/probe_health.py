"""`probe`: the probe observed what it patches in every rank, and every trace line it wrote arrived.

A probe that could not patch torch.save, the DataLoader, torch.distributed, DDP or the optimizer, or
that failed while recording, leaves the other checks judging a partial trace: this check fails then,
naming what went unobserved. Trace lines carry a sequence number ``i``; a gap, or a line that is not
JSON, is a lost line.
"""

from __future__ import annotations

from .evidence import all_ranks, events, first, fmt_ranks, plural
from .model import FAIL, NA, PASS, CheckResult, RunData, result

# probe_error "what" -> what the other checks did not get to see
_UNSEEN = {
    "patch torch": "DataLoader passes, optimizer steps, collectives, DDP models and torch.save",
    "patch torch.save": "files written with torch.save",
    "patch DataLoader": "DataLoader passes",
    "start pass": "DataLoader passes",
    "patch torch.distributed": "collectives and process-group set-up",
    "patch DistributedDataParallel": "DistributedDataParallel models",
    "record DDP": "DistributedDataParallel models",
    "patch optimizer hook": "optimizer steps",
    "digest": "parameter checksums",
    "register comm hook": "DDP's gradient all-reduce",
    "record ddp.allreduce": "DDP's gradient all-reduce",
    "patch module forward": "training inputs and the modules trained outside DDP",
    "record forward": "training inputs and the modules trained outside DDP",
    "patch autograd.backward": "backward passes",
    "record backward": "backward passes",
    "patch logging": "log files",
    "patch torch.utils.tensorboard.writer": "TensorBoard writers",
    "patch tensorboardX.writer": "TensorBoard writers",
    "patch wandb": "wandb runs",
}


def _unseen(what: str) -> str:
    if what in _UNSEEN:
        return _UNSEEN[what]
    return "collectives" if what.startswith("record ") else "part of the run"


def lost_lines(run: RunData, r: int) -> tuple[int, int]:
    """(lines missing from the sequence, lines that were not JSON) of one rank's trace."""
    trace = run.traces.get(r, [])
    seen = {e["i"] for e in trace if isinstance(e.get("i"), int)}
    missing = 0
    if seen:
        end = first(run, r, "end")
        last = end["i"] if end is not None and isinstance(end.get("i"), int) else max(seen)
        missing = last + 1 - len({i for i in seen if i <= last})
    return missing, int(run.unreadable.get(r, 0))


def check_probe(run: RunData) -> CheckResult:
    ranks = [r for r in all_ranks(run) if run.traces.get(r) or run.unreadable.get(r)]
    if not ranks:
        return result("probe", NA, "no rank wrote a trace (see completes)")
    errors: dict = {}  # (what, error) -> [ranks]
    lost, installed = [], {}
    lines = patches = 0
    for r in ranks:
        for e in events(run, r, "probe_error"):
            errors.setdefault((str(e.get("what")), str(e.get("error"))), []).append(r)
        missing, unreadable = lost_lines(run, r)
        if missing or unreadable:
            lost.append((r, missing, unreadable))
        lines += len(run.traces.get(r, [])) + unreadable
        for e in events(run, r, "patched"):
            patches += len(e.get("installed") or [])
            installed[r] = list(e.get("installed") or [])
    compared = {"ranks": len(ranks), "lines": lines, "patches": patches}
    failures = []
    for (what, error), rs in errors.items():
        rs = sorted(set(rs))
        failures.append(f"{fmt_ranks(rs)}: the probe failed at {what} ({error}): {_unseen(what)} not observed")
    for r, missing, unreadable in lost:
        parts = [f"{n} {how}" for n, how in ((missing, "missing"), (unreadable, "not readable")) if n]
        failures.append(f"rank {r}: {plural(missing + unreadable, 'trace line')} lost ({', '.join(parts)})")
    if failures:
        return result("probe", FAIL, failures, compared)
    if installed:
        names = list(dict.fromkeys(n for v in installed.values() for n in v))
        what = f"{', '.join(names)} patched on {fmt_ranks(sorted(installed))}"
    else:
        what = "torch never imported (only file writes observed)"
    return result("probe", PASS, f"{what}; {lines} trace lines, none lost", compared)
