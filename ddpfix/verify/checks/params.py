"""`params`: the parameters of every DDP-wrapped module are equal on all ranks after the wrap, after the
optimizer steps the probe checksummed and at exit, and every rank took the same number of steps. The
parameters an optimizer steps outside every DDP wrapper (a model wrapped in part) are compared after
the same steps: nothing but the script's own all-reduces keeps them equal."""

from __future__ import annotations

from .evidence import all_ranks, events, first, fmt_site
from .model import FAIL, NA, PASS, CheckResult, RunData, result


def _sums(digs: dict) -> str:
    return ", ".join(
        f"rank {r} sum {d.get('sum', 0):.6g} (sha1 {d.get('sha1', '?')[:8]})" for r, d in sorted(digs.items())
    )


def _differ(digs: dict) -> bool:
    return len({d.get("sha1") for d in digs.values()}) > 1


class _Modules:
    """The DDP-wrapped modules of a run, by the id the probe gave them."""

    def __init__(self, ddps: dict, with_ddp: list):
        self.ddps, self.with_ddp = ddps, with_ddp

    def name(self, ddp_id) -> str:
        return next((e.get("module") for e in self.ddps[self.with_ddp[0]] if e.get("id") == ddp_id), "the model")

    def label(self, what) -> str:
        """What differs at a step: a DDP wrapper's id (its module named) or the parameters outside DDP."""
        return f"parameters of {self.name(what)}" if isinstance(what, int) else what

    def names(self) -> str:
        return ", ".join(sorted({str(e.get("module")) for v in self.ddps.values() for e in v}))


def _at_wrap(ddps: dict, with_ddp: list):
    """(checksums compared, first module that differs right after the wrap or None)."""
    compared = 0
    for i in range(max(len(v) for v in ddps.values())):
        digs = {r: ddps[r][i]["digest"] for r in with_ddp if len(ddps[r]) > i and ddps[r][i].get("digest")}
        if len(digs) < 2:
            continue
        compared += 1
        if _differ(digs):
            return compared, (ddps[with_ddp[0]][i].get("module"), digs)
    return compared, None


def _outside(step: dict, opts: dict) -> dict:
    """label -> digest of the parameters each optimizer of a step record trains outside every DDP wrapper."""
    out = {}
    for d in step.get("outside") or ():
        name = opts.get(d.get("opt"), "an optimizer")
        values = f"{d.get('tensors', '?')} tensors, {d.get('numel', '?')} values"
        out[f"parameters stepped by {name} outside every DistributedDataParallel wrapper ({values})"] = d
    return out


def _after_steps(run: RunData, with_ddp: list):
    """(steps compared, checksums compared, (step, what, digests, steps compared before) of the first
    difference or None, the optimizers whose parameters outside DDP were compared); `what`: a DDP
    wrapper's id, or a label of parameters outside DDP."""
    records = {r: events(run, r, "step") for r in with_ddp}
    steps = {r: {e["n"]: e for e in records[r] if e.get("digests") or e.get("outside")} for r in with_ddp}
    opts = {}  # optimizer ordinal -> its class name, "#k" added when several stepped
    for e in records[with_ddp[0]]:
        for d in e.get("outside") or ():
            opts.setdefault(d.get("opt"), e.get("opt", "an optimizer"))
    if len(opts) > 1:
        opts = {k: f"{v} #{k + 1}" for k, v in opts.items()}
    common = sorted(set.intersection(*(set(s) for s in steps.values())))
    compared = n_steps = 0
    seen: set = set()
    for n in common:
        per = {r: {d["ddp"]: d for d in steps[r][n].get("digests") or ()} for r in with_ddp}
        ids = sorted(set.intersection(*(set(p) for p in per.values())))
        out = {r: _outside(steps[r][n], opts) for r in with_ddp}
        labels = sorted(set.intersection(*(set(o) for o in out.values())))
        n_steps += bool(ids or labels)
        pairs: list = [(i, {r: per[r][i] for r in with_ddp}) for i in ids]
        pairs += [(label, {r: out[r][label] for r in with_ddp}) for label in labels]
        seen.update(opts.get(d.get("opt"), "an optimizer") for d in steps[with_ddp[0]][n].get("outside") or ())
        for what, digs in pairs:
            compared += 1
            if _differ(digs):
                return n_steps, compared, (n, what, digs, [m for m in common if m < n]), seen
    return n_steps, compared, None, seen


def _at_exit(run: RunData, with_ddp: list):
    """(checksums compared, (ddp id, digests) of the first difference or None)."""
    final = {}
    for r in with_ddp:
        end = first(run, r, "end")
        if end and end.get("digests"):
            final[r] = {d["ddp"]: d for d in end["digests"]}
    if len(final) < 2:
        return 0, None
    compared = 0
    for ddp_id in sorted(set.intersection(*(set(f) for f in final.values()))):
        compared += 1
        digs = {r: final[r][ddp_id] for r in final}
        if _differ(digs):
            return compared, (ddp_id, digs)
    return compared, None


def check_params(run: RunData) -> CheckResult:
    if run.world_size < 2:
        return result("params", NA, "one process: nothing to compare")
    ranks = all_ranks(run)
    ddps = {r: events(run, r, "ddp") for r in ranks}
    with_ddp = [r for r in ranks if ddps[r]]
    if not with_ddp:
        return result("params", NA, "no DistributedDataParallel model was constructed")
    if len(with_ddp) < 2:
        return result("params", NA, f"only rank {with_ddp[0]} constructed DistributedDataParallel: nothing to compare")
    mods = _Modules(ddps, with_ddp)
    counts = {r: len(events(run, r, "step")) for r in with_ddp}
    total = max(counts.values())
    wrap_n, wrap_bad = _at_wrap(ddps, with_ddp)
    if wrap_bad:
        name, digs = wrap_bad
        msg = f"parameters of {name} differ right after the DDP wrap: {_sums(digs)}"
        return result("params", FAIL, msg, {"checksums": wrap_n}, first_step=0)
    n_steps, step_n, step_bad, outside = _after_steps(run, with_ddp)
    exit_n, exit_bad = _at_exit(run, with_ddp) if not step_bad else (0, None)
    compared = {"ranks": len(with_ddp), "steps": n_steps, "checksums": wrap_n + step_n + exit_n}
    evidence = []
    if len(set(counts.values())) > 1:
        evidence.append("optimizer steps differ: " + ", ".join(f"rank {r} took {n}" for r, n in sorted(counts.items())))
    if step_bad:
        n, what, digs, before = step_bad
        site = next((e.get("site") for e in events(run, with_ddp[0], "step") if e.get("n") == n), None)
        notes = [fmt_site(site, run)] if site else []
        if (before[-1] if before else 0) != n - 1:  # steps in between were not checksummed
            notes.append(f"equal after step {before[-1]}" if before else "equal after the wrap")
        at = f" ({', '.join(notes)})" if notes else ""
        evidence.insert(0, f"{mods.label(what)} first differ after optimizer step {n} of {total}{at}: {_sums(digs)}")
        return result("params", FAIL, evidence, compared, first_step=n)
    if exit_bad:
        ddp_id, digs = exit_bad
        evidence.insert(0, f"parameters of {mods.name(ddp_id)} differ at exit: {_sums(digs)}")
        return result("params", FAIL, evidence, compared, first_step=None)
    if evidence:
        return result("params", FAIL, evidence, compared)
    if not compared["checksums"]:
        return result(
            "params", NA, f"{mods.names()}: no parameter checksum was recorded ({total} optimizer steps)", compared
        )
    points = ["after the wrap"] if wrap_n else []
    if n_steps:
        sampled = "" if n_steps == total else f" ({n_steps} of them checksummed)"
        points.append(f"after each of {total} optimizer steps{sampled}")
    if exit_n:
        points.append("at exit")
    where = ", ".join(points[:-1]) + " and " + points[-1] if len(points) > 1 else points[0]
    unsampled = f"; none of the {total} optimizer steps was checksummed" if total and not n_steps else ""
    also = f" (and those {' and '.join(sorted(outside))} steps outside DDP)" if outside else ""
    text = f"{mods.names()}: parameters{also} equal on {len(with_ddp)} ranks {where}{unsampled}"
    return result("params", PASS, text, compared)
