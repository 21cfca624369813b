"""Methods of the script's own classes called through an instance: `solver = Solver(args)`, then
`solver.run()` (in the same function, or at module level), or `Solver(args).run()`."""

from __future__ import annotations

import libcst as cst

from ..syntax import assigned_value, dotted
from .index import TreeIndex
from .names import Names


def instance_of(index: TreeIndex, names: Names, call: cst.Call, cls: cst.ClassDef) -> bool:
    """Is the receiver of the method call `call` bound, in its scope, to `cls(...)`?"""
    receiver = dotted(call.func.value)  # type: ignore[attr-defined]
    if receiver is None:
        return False
    return any(_constructs(assigned_value(s.stmt), cls) for s in names.assignments(index.scope_of(call), receiver))


def method_callers(index: TreeIndex, names: Names, method: cst.FunctionDef) -> list[cst.Call]:
    """The calls of `method` (a method of a class of this file) through an instance of its class, made
    outside the class (`self.method()` inside it is `TreeIndex.callers_of`'s); `__init__`: the calls
    that construct the class."""
    cls = index.enclosing(method, cst.ClassDef)
    if not isinstance(cls, cst.ClassDef) or index.methods_of(cls).get(method.name.value) is not method:
        return []
    if method.name.value == "__init__":
        return index.class_calls(cls)
    out = []
    for call in index.calls_by_name(method.name.value):
        func = call.func
        if type(func) is not cst.Attribute or index.contains(cls, call):
            continue
        receiver = func.value
        if type(receiver) is cst.Call and dotted(receiver.func) == cls.name.value:
            out.append(call)
        elif type(receiver) is cst.Name and _bound_to(index, names, call, receiver.value, cls):
            out.append(call)
    return out


def _bound_to(index: TreeIndex, names: Names, call: cst.Call, name: str, cls: cst.ClassDef) -> bool:
    """Is `name`, where `call` reads it, bound to `cls(...)`: in the call's scope, or at module level
    where that scope binds no such name? Every binding must be one."""
    sites = names.assignments(index.scope_of(call), name) or names.assignments(index.module, name)
    return bool(sites) and all(_constructs(assigned_value(site.stmt), cls) for site in sites)


def _constructs(value, cls: cst.ClassDef) -> bool:
    return isinstance(value, cst.Call) and dotted(value.func) == cls.name.value


__all__ = ["instance_of", "method_callers"]
