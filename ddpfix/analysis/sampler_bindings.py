"""Where the script binds a DistributedSampler: built right there (`sampler = DistributedSampler(ds)`,
maybe `... if DISTRIBUTED else None`), or returned by a helper of this file or of its own modules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from ..syntax import assign_targets, assigned_value, dotted, is_literal, kwarg, positional, walk

if TYPE_CHECKING:
    from .data import Data


@dataclass
class SamplerBinding:
    """A name a DistributedSampler is bound to: built right there, or returned by a helper."""

    name: str
    stmt: cst.BaseStatement  # the statement binding it
    dataset: cst.BaseExpression | None  # the dataset it samples, as the binding's scope spells it
    conditional: bool  # may be None (`... if DISTRIBUTED else None`, a helper that may return None)
    ctor: cst.Call | None  # the DistributedSampler(...) call, when it is built in that statement
    report: cst.CSTNode  # where the finding points: the constructor, or the helper's call


def sampler_bindings(data: Data):
    index = data.index
    for call in data.sampler_calls:
        site = index.site(call)
        value = assigned_value(site.stmt)
        conditional = isinstance(value, cst.IfExp) and value.body is call
        targets = assign_targets(site.stmt)
        ds = positional(call, 0) or kwarg(call, "dataset")
        if len(targets) == 1 and (value is call or conditional):
            yield SamplerBinding(targets[0], site.stmt, ds.value if ds else None, conditional, call, call)
            continue
        for h in data.values.handles(call):  # `sampler = make_sampler(train_set)`
            if h.factory is None or len(h.via) != 1 or dotted(cst.parse_expression(h.target)) is None:
                continue
            maybe_none = isinstance(index.parent.get(call), cst.IfExp) or _returns_none(h.factory)
            dataset = _argument(h.factory, h.via[0], ds.value) if ds is not None else None
            yield SamplerBinding(h.target, h.binding, dataset, maybe_none, None, h.via[0])
    for f in data.foreign_samplers():  # the same, with the helper in one of the script's modules
        if dotted(cst.parse_expression(f.target)) is None:
            continue
        arg = kwarg(f.call, f.built.dataset) if f.built.dataset else None
        if arg is None and f.built.dataset_pos is not None:
            arg = positional(f.call, f.built.dataset_pos)
        yield SamplerBinding(f.target, f.binding, arg.value if arg else None, f.built.maybe_none, None, f.call)


def _argument(func: cst.FunctionDef, call: cst.Call, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """What `expr` in `func` is at `call`: the argument given for it when it is a parameter, else itself."""
    if not isinstance(expr, cst.Name):
        return expr
    params = [p.name.value for p in func.params.params]
    if params and params[0] in ("self", "cls") and isinstance(call.func, cst.Attribute):
        params = params[1:]  # a method called through its object
    if expr.value not in params and expr.value not in [p.name.value for p in func.params.kwonly_params]:
        return expr
    by_keyword = kwarg(call, expr.value)
    if by_keyword is not None:
        return by_keyword.value
    if expr.value in params:
        arg = positional(call, params.index(expr.value))
        return arg.value if arg is not None else None
    return None


def _returns_none(func: cst.FunctionDef) -> bool:
    return any(isinstance(n, cst.Return) and (n.value is None or is_literal(n.value, None)) for n in walk(func.body))


__all__ = ["SamplerBinding", "sampler_bindings"]
