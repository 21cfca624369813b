"""`ddp`: the model a rank trains is synchronised: every rank that took optimizer steps constructed
DistributedDataParallel and ran forward through it, and no backward pass reached the parameters of a
module outside a DDP wrapper without a gradient all-reduce (manual updates such as
``p -= lr * p.grad`` count as training: an optimizer need not step)."""

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


def backward_counts(run: RunData) -> dict:
    """rank -> backward passes it ran (``backward()`` records, or the count at exit when more)."""
    out = {}
    for r in all_ranks(run):
        end = first(run, r, "end") or {}
        out[r] = max(len(events(run, r, "backward")), int(end.get("backwards") or 0))
    return out


def plain_reached(run: RunData, r: int) -> list:
    """The modules outside any DDP wrapper whose parameters a backward pass of rank ``r`` reached."""
    end = first(run, r, "end")
    if end is not None and end.get("plain_trained") is not None:
        return [m for m in end["plain_trained"] if m.get("reached")]
    ids = {i for e in events(run, r, "backward") for i in e.get("plain") or ()}
    return [m for m in events(run, r, "train_module") if m.get("id") in ids]


def gradient_allreduces(run: RunData, r: int) -> int:
    """DDP's bucket all-reduces and the script's own all_reduce calls on gradients, on rank ``r``."""
    colls = events(run, r, "coll")
    return sum(1 for e in colls if e.get("op") == "ddp.allreduce" or e.get("grad"))


def _unsynchronised(run: RunData, backwards: dict, steps: dict) -> list:
    """(the module is a DDP wrapper's own module, evidence) for the ranks whose backward passes reached a
    module outside DDP with no gradient all-reduce."""
    by_module: dict = {}
    for r, n in backwards.items():
        if not n or gradient_allreduces(run, r):
            continue
        for m in plain_reached(run, r):
            key = (m.get("module"), m.get("site"), bool(m.get("ddp_inner")))
            by_module.setdefault(key, []).append(r)
    out = []
    for (module, site, inner), rs in by_module.items():
        where = f" (forward at {fmt_site(site, run, False)})" if site else ""
        bw = first(run, rs[0], "backward") or {}
        at = f" at {fmt_site(bw['site'], run, False)}" if bw.get("site") else ""
        n_steps = max(steps[r] for r in rs)
        stepped = plural(n_steps, "optimizer step") if n_steps else "no optimizer step"
        what = (
            "the module of a DistributedDataParallel wrapper, called directly"
            if inner
            else "not inside a DistributedDataParallel wrapper"
        )
        n_back = plural(max(backwards[r] for r in rs), "backward pass", "backward passes")
        text = (
            f"{fmt_ranks(rs)}: backward(){at} reached the parameters of {module}{where}, {what}, and no gradient "
            f"all-reduce ran ({n_back}, {stepped}): every rank trains its own copy of the model"
        )
        out.append((inner, text))
    return out


def check_ddp(run: RunData) -> CheckResult:
    if run.world_size < 2:
        return result("ddp", NA, "one process: nothing to synchronise")
    steps = step_counts(run)
    backwards = backward_counts(run)
    ddps = {r: events(run, r, "ddp") for r in all_ranks(run)}
    stepping = [r for r, n in steps.items() if n]
    training = sorted(set(stepping) | {r for r, n in backwards.items() if n})
    if not training:
        if any(ddps.values()):
            names = sorted({e.get("module") for v in ddps.values() for e in v})
            return result("ddp", NA, f"{', '.join(names)} wrapped in DistributedDataParallel, but no backward pass ran")
        return result("ddp", NA, "no backward pass and no optimizer step ran")
    compared = {"ranks": len(training), "steps": max(steps[r] for r in training)}  # steps: the most a rank took
    if any(backwards.values()):
        compared["backwards"] = max(backwards.values())
    unsynced = _unsynchronised(run, backwards, steps)
    without = [r for r in stepping if not ddps[r]]
    if stepping and len(without) == len(stepping):
        return result(
            "ddp",
            FAIL,
            [
                f"{fmt_ranks(stepping)} ran optimizer steps ({', '.join(f'{steps[r]}' for r in stepping)}) but no "
                "DistributedDataParallel was constructed: every rank trains its own copy of the model"
            ]
            + [text for _, text in unsynced],
            compared,
        )
    evidence = []
    if without:
        evidence.append(f"{fmt_ranks(without)} ran optimizer steps without constructing DistributedDataParallel")
    unused: dict = {}
    for r in training:
        end = first(run, r, "end")
        fwd = (end or {}).get("ddp_forwards") or {}
        for e in ddps[r]:
            if end is not None and int(fwd.get(str(e["id"]), 0)) == 0:
                unused.setdefault(e["id"], (e, []))[1].append(r)
    for e, rs in unused.values():
        n = max(steps[r] for r in rs)
        took = (
            plural(n, "optimizer step")
            if n
            else plural(max(backwards[r] for r in rs), "backward pass", "backward passes")
        )
        evidence.append(
            f"the DistributedDataParallel wrapper of {e.get('module')} ({fmt_site(e.get('site'), run, False)}) never ran "
            f"forward on {fmt_ranks(rs)}, which took {took}: gradients "
            "were not synchronised (forward through `.module`?)"
        )
    # a wrapper bypassed (forward through `.module`) is said above; its module's backward adds nothing
    evidence += [text for inner, text in unsynced if not (inner and unused)]
    if evidence:
        return result("ddp", FAIL, evidence, compared)
    wrapped = [r for r in training if ddps[r]]
    if not wrapped:
        return result("ddp", NA, "backward passes ran, but the probe saw no module they trained", compared)
    e0 = ddps[wrapped[0]][0]
    return result(
        "ddp",
        PASS,
        f"{e0.get('module')} wrapped at {fmt_site(e0.get('site'), run, False)} on "
        f"{len(wrapped)} ranks; forward ran through the wrapper",
        compared,
    )
