"""Which parameter of a function an argument of a call binds: of a function of this file (LibCST) or
of a module's summary (its parameter names)."""

from __future__ import annotations

import libcst as cst

from ..syntax import dotted
from .model_params import Slot


def param_name(summary, member: str, call: cst.Call, arg: cst.Arg) -> str | None:
    """The parameter of `member` (a function or method of a module's summary) that `arg` binds."""
    params = summary.params.get(member)
    if params is None:
        return None
    slot = slot_of_arg(call, arg)
    name = slot if isinstance(slot, str) else (params[slot] if slot is not None and slot < len(params) else None)
    return name if name is not None and name in params else None


def slot_of_arg(call: cst.Call, arg: cst.Arg) -> Slot | None:
    if arg.keyword is not None:
        return arg.keyword.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return next((i for i, a in enumerate(positional) if a is arg), None)


def arg_named(call: cst.Call, name: str) -> cst.Arg | None:
    """The argument of `call` that is the name `name` itself (not starred), if any."""
    return next((a for a in call.args if not a.star and dotted(a.value) == name), None)


def param_names(func: cst.FunctionDef) -> set[str]:
    """Every parameter `func` names (positional-only, ordinary, keyword-only)."""
    params = func.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}


def param_for(func: cst.FunctionDef, call: cst.Call, arg: cst.Arg) -> str | None:
    """The parameter of `func` that `call` binds `arg` to."""
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    if params and params[0] in ("self", "cls") and isinstance(call.func, cst.Attribute):
        params = params[1:]
    slot = slot_of_arg(call, arg)
    if isinstance(slot, str):
        names = params + [p.name.value for p in func.params.kwonly_params]
        return slot if slot in names else None
    return params[slot] if slot is not None and slot < len(params) else None


__all__ = ["arg_named", "argument_for", "param_for", "param_name", "param_names", "slot_of_arg"]


def argument_for(func: cst.FunctionDef, call: cst.Call, param: str) -> cst.BaseExpression | None:
    """The expression `call` passes for `func`'s parameter `param` (positional or keyword)."""
    params = [p.name.value for p in func.params.params]
    if params and params[0] in ("self", "cls") and isinstance(call.func, cst.Attribute):
        params = params[1:]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == param:
            return arg.value
    positional_args = [a for a in call.args if a.keyword is None and not a.star]
    if param in params and params.index(param) < len(positional_args):
        return positional_args[params.index(param)].value
    return None
