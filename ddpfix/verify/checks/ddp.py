"""`ddp`: every rank that took optimizer steps constructed DistributedDataParallel and ran forward through it."""

from __future__ import annotations

from .evidence import all_ranks, events, first, fmt_ranks, fmt_site, plural
from .model import FAIL, NA, PASS, CheckResult, RunData, result


def step_counts(run: RunData) -> dict:
    """rank -> optimizer steps it took (the step records, or the count at exit when more)."""
    out = {}
    for r in all_ranks(run):
        end = first(run, r, "end")
        out[r] = max(len(events(run, r, "step")), end.get("steps", 0) if end else 0)
    return out


def check_ddp(run: RunData) -> CheckResult:
    if run.world_size < 2:
        return result("ddp", NA, "one process: nothing to synchronise")
    steps = step_counts(run)
    ddps = {r: events(run, r, "ddp") for r in all_ranks(run)}
    stepping = [r for r, n in steps.items() if n]
    if not stepping:
        if any(ddps.values()):
            names = sorted({e.get("module") for v in ddps.values() for e in v})
            return result(
                "ddp", NA, f"{', '.join(names)} wrapped in DistributedDataParallel, but no optimizer step ran"
            )
        return result("ddp", NA, "no optimizer step ran")
    compared = {"ranks": len(stepping), "steps": max(steps[r] for r in stepping)}  # steps: the most a rank took
    without = [r for r in stepping if not ddps[r]]
    if len(without) == len(stepping):
        return result(
            "ddp",
            FAIL,
            f"{fmt_ranks(stepping)} ran optimizer steps ({', '.join(f'{steps[r]}' for r in stepping)}) but no "
            "DistributedDataParallel was constructed: every rank trains its own copy of the model",
            compared,
        )
    evidence = []
    if without:
        evidence.append(f"{fmt_ranks(without)} ran optimizer steps without constructing DistributedDataParallel")
    unused: dict = {}
    for r in stepping:
        end = first(run, r, "end")
        fwd = (end or {}).get("ddp_forwards") or {}
        for e in ddps[r]:
            if end is not None and int(fwd.get(str(e["id"]), 0)) == 0:
                unused.setdefault(e["id"], (e, []))[1].append(r)
    for e, rs in unused.values():
        evidence.append(
            f"the DistributedDataParallel wrapper of {e.get('module')} ({fmt_site(e.get('site'), run, False)}) never ran "
            f"forward on {fmt_ranks(rs)}, which took {plural(max(steps[r] for r in rs), 'optimizer step')}: gradients "
            "were not synchronised (forward through `.module`?)"
        )
    if evidence:
        return result("ddp", FAIL, evidence, compared)
    e0 = ddps[stepping[0]][0]
    return result(
        "ddp",
        PASS,
        f"{e0.get('module')} wrapped at {fmt_site(e0.get('site'), run, False)} on "
        f"{len(stepping)} ranks; forward ran through the wrapper",
        compared,
    )
