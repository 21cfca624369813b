"""Training loops that walk one tensor stream by hand, in windows a helper cuts from it:

    train_data = batchify(corpus.train, args.batch_size)
    ...
    while i < train_data.size(0) - 1 - 1:
        seq_len = max(5, int(np.random.normal(bptt, 5)))
        data, targets = get_batch(train_data, i, seq_len=seq_len)
        ...
        i += seq_len

(a language model's bptt windows of a random length; `get_batch` of the script or of one of its
modules, slicing its first parameter at its second). There is no range of batch offsets to stride by
rank (DDP209's `for i in range(...)` shape): the window lengths vary, so what each rank can take is
its own stretch of the stream, and every rank then takes as many windows only when the stretches are
as long and the lengths are the same on every rank (drawn under one seed, or fixed).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from ..syntax import assigned_value, calls_in, dotted, walk
from .config_factory import parsed
from .flow import binds
from .index import Site

RANDOM_HEADS = ("torch.rand", "torch.normal", "numpy.random.", "random.")


@dataclass(frozen=True)
class StreamWindows:
    loop: cst.While
    call: cst.Call  # the helper's call that cuts the window: `get_batch(train_data, i, seq_len=seq_len)`
    data: str  # the stream: `train_data`
    binding: Site | None  # its one binding, outside every loop (None: see `unbound`)
    unseeded: str | None  # a window length drawn at random with no seed: the draw, as written
    unbound: str = ""  # why there is no such binding: "is bound more than once", ...


def stream_windows(facts) -> list[StreamWindows]:
    """Each `while` loop that trains on windows a helper cuts from a stream no rank has its part of."""
    out = []
    for loop in facts.index.loops:
        if not isinstance(loop, cst.While) or not facts.training.trains_in(loop.body):
            continue
        if facts.ranks.depends_on_rank(loop.test):
            continue
        advanced = _advanced(loop)
        local = binds(loop.body)
        tested = {n.value for n in walk(loop.test) if isinstance(n, cst.Name)}
        for call in calls_in(loop.body):
            args = [a.value for a in call.args if a.keyword is None and not a.star]
            if len(args) < 2 or not all(isinstance(a, cst.Name) for a in args[:2]):
                continue
            data, pos = args[0].value, args[1].value  # type: ignore[attr-defined]
            if pos not in advanced or data in local or data not in tested or not _cuts(facts, call):
                continue
            sites = _bindings(facts, loop, data)
            if any(facts.ranks.depends_on_rank(assigned_value(s.stmt) or s.stmt) for s in sites):
                break  # each rank holds its own part already
            unbound = (
                "is not bound where the loop's function or the script's top level binds it"
                if not sites
                else "is bound more than once"
                if len(sites) > 1
                else "is bound in a loop"
                if _in_loop(facts, sites[0].stmt)
                else ""
            )
            binding = None if unbound else sites[0]
            out.append(StreamWindows(loop, call, data, binding, _unseeded(facts, loop, advanced[pos]), unbound))
            break
    return out


def _advanced(loop: cst.While) -> dict[str, cst.BaseExpression]:
    """Names the loop's body advances (`i += seq_len`) -> by what."""
    return {
        n.target.value: n.value
        for n in walk(loop.body)
        if isinstance(n, cst.AugAssign) and isinstance(n.operator, cst.AddAssign) and isinstance(n.target, cst.Name)
    }


def _bindings(facts, loop: cst.While, name: str) -> list[Site]:
    scope = facts.index.scope_of(loop)
    sites = facts.names.assignments(scope, name)
    if not sites and scope is not facts.module:
        sites = facts.names.assignments(facts.module, name)
    return sites


def _in_loop(facts, stmt: cst.CSTNode) -> bool:
    return any(isinstance(a, (cst.For, cst.While)) for a in facts.index.ancestors(stmt))


def _unseeded(facts, loop: cst.While, step: cst.BaseExpression) -> str | None:
    """The random draw a window length comes from (`np.random.normal(bptt, 5)`), when nothing in the
    script seeds a generator; None when the lengths are the same on every rank."""
    if any("seed" in (dotted(c.func) or "").split(".")[-1].lower() for c in facts.index.calls):
        return None
    names = {n.value for n in walk(step) if isinstance(n, cst.Name)}
    values = [step] + [
        n.value
        for n in walk(loop.body)
        if isinstance(n, cst.Assign)
        and any(isinstance(t.target, cst.Name) and t.target.value in names for t in n.targets)
    ]
    for value in values:
        for call in calls_in(value):
            qual = facts.names.call_qual(call) or dotted(call.func) or ""
            if qual.startswith(RANDOM_HEADS):
                return dotted(call.func) or qual
    return None


def _cuts(facts, call: cst.Call) -> bool:
    """Does the function `call` runs (of this file, or of one of the script's modules) slice its first
    parameter at a bound that reads its second (`source[i:i + seq_len]`)?"""
    callee = facts.index.callee_of(call)
    if callee is not None:
        params = [p.name.value for p in callee.params.params]
        if len(params) < 2:
            return False
        return any(
            isinstance(n, cst.Subscript)
            and dotted(n.value) == params[0]
            and any(isinstance(m, cst.Name) and m.value == params[1] for m in walk(n.slice[0]) if n.slice)
            for n in walk(callee.body)
        )
    modules = facts.modules
    target = modules.target_of(call.func) if modules is not None else None
    if target is None or target.summary is None or not target.member or "." in target.member:
        return False
    tree = parsed(target.summary.path)
    func = next(
        (n for n in (tree.body if tree else []) if isinstance(n, ast.FunctionDef) and n.name == target.member), None
    )
    if func is None or len(func.args.args) < 2:
        return False
    first, second = func.args.args[0].arg, func.args.args[1].arg
    return any(
        isinstance(n, ast.Subscript)
        and isinstance(n.value, ast.Name)
        and n.value.id == first
        and any(isinstance(m, ast.Name) and m.id == second for m in ast.walk(n.slice))
        for n in ast.walk(func)
    )


__all__ = ["StreamWindows", "stream_windows"]
