"""How a model comes to be trained when no optimizer of the script is built over it: a loop that
updates its parameters by hand, or a helper that builds it (with its optimizer) and returns it, and
the caller's name for what the helper returns."""

from __future__ import annotations

import libcst as cst

from ..syntax import dotted, method_name, receiver, single_small, walk
from .index import Site, TreeIndex
from .model_params import Slot


def manual_updates(index: TreeIndex) -> list[tuple[Site, str]]:
    """Updates written without an optimizer object: (the loop, the model whose parameters it
    updates) for `for p in model.parameters(): p -= lr * p.grad` (also `p.data.add_(p.grad,
    alpha=-lr)`, `param.data -= lr * param.grad.data`, `named_parameters()`)."""
    out = []
    for loop in index.loops:
        if not isinstance(loop, cst.For):
            continue
        recv = _parameters_of(loop.iter)
        var = _loop_param(loop)
        if recv is None or var is None:
            continue
        if any(_updates_with_grad(stmt, var) for stmt in walk(loop.body) if isinstance(stmt, cst.BaseSmallStatement)):
            out.append((index.site(loop), recv))
    return out


def element_of(index: TreeIndex, call: cst.Call, name: str) -> str | None:
    """`nets` when `call` is the element of a comprehension over the list `nets` with `name` as its
    variable: `[SGD(net.parameters()) for net in nets]` builds one optimizer per model of `nets`."""
    comp = index.parent.get(call)
    if not isinstance(comp, (cst.ListComp, cst.GeneratorExp)) or comp.elt is not call:
        return None
    loop = comp.for_in
    if loop.inner_for_in is not None or loop.ifs or not isinstance(loop.target, cst.Name):
        return None
    if loop.target.value != name or not isinstance(loop.iter, cst.Name):
        return None
    return loop.iter.value


def receiver_of(index: TreeIndex, call: cst.Call, slot: Slot) -> tuple[str, Site] | None:
    """The caller's name for the model a builder returns at `slot`, and the statement that binds it:
    `model = build()`, `model, opt = build()`, `model = build()["model"]`, or `parts = build()` then
    `model, opt = parts["model"], parts["opt"]`."""
    site = index.site(call)
    small = single_small(site.stmt)
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return None
    target, value = small.targets[0].target, small.value
    if value is call:
        if slot == "" and dotted(target):
            return dotted(target), site  # type: ignore[return-value]
        if isinstance(slot, int) and isinstance(target, (cst.Tuple, cst.List)) and slot < len(target.elements):
            name = dotted(target.elements[slot].value)
            return (name, site) if name else None
        if isinstance(slot, str) and isinstance(target, cst.Name):
            return _key_taken(index, site, target.value, slot)
        return None
    if isinstance(slot, str) and _subscript_key(value) == (call, slot) and dotted(target):
        return dotted(target), site  # type: ignore[return-value]
    return None


def _key_taken(index: TreeIndex, site: Site, parts: str, key: str) -> tuple[str, Site] | None:
    """`model = parts["model"]` or `model, opt = parts["model"], parts["opt"]` after `parts = build()`."""
    body = list(site.block.body)
    for stmt in body[body.index(site.stmt) + 1 :]:
        small = single_small(stmt)
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            continue
        target, value = small.targets[0].target, small.value
        if _subscript_key(value, parts) == (parts, key) and dotted(target):
            return dotted(target), index.site(stmt)  # type: ignore[return-value]
        if isinstance(value, cst.Tuple) and isinstance(target, cst.Tuple):
            for el, tgt in zip(value.elements, target.elements):
                if _subscript_key(el.value, parts) == (parts, key) and dotted(tgt.value):
                    return dotted(tgt.value), index.site(stmt)  # type: ignore[return-value]
    return None


def _subscript_key(value: cst.BaseExpression, name: str | None = None) -> tuple[object, str] | None:
    """(the subscripted call or name, the string key) for `build()["model"]` / `parts["model"]`."""
    if not isinstance(value, cst.Subscript) or len(value.slice) != 1:
        return None
    index = value.slice[0].slice
    if not isinstance(index, cst.Index) or not isinstance(index.value, cst.SimpleString):
        return None
    key = index.value.evaluated_value
    if not isinstance(key, str):
        return None
    if name is not None:
        return (name, key) if dotted(value.value) == name else None
    return value.value, key


def _parameters_of(expr: cst.BaseExpression) -> str | None:
    """`model` for `model.parameters()`, `model.named_parameters()`, `list(model.parameters())`."""
    if isinstance(expr, cst.Call) and dotted(expr.func) in ("list", "tuple") and expr.args:
        expr = expr.args[0].value
    if isinstance(expr, cst.Call) and method_name(expr) in ("parameters", "named_parameters"):
        recv = receiver(expr)
        return dotted(recv) if recv is not None else None
    return None


def _loop_param(loop: cst.For) -> str | None:
    """The parameter variable of `for p in ...` / `for name, p in ...named_parameters()`."""
    target = loop.target
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Tuple) and len(target.elements) == 2 and isinstance(target.elements[1].value, cst.Name):
        return target.elements[1].value.value
    return None


UPDATE_METHODS = {"add_", "sub_", "copy_", "addcdiv_", "addcmul_", "mul_"}


def _updates_with_grad(small: cst.BaseSmallStatement, var: str) -> bool:
    """`p -= lr * p.grad`, `p.data.add_(p.grad, alpha=-lr)`, `p.data = p.data - lr * p.grad`: an
    in-place change of the parameter `var` computed from a gradient."""
    if not any(isinstance(n, cst.Attribute) and n.attr.value == "grad" for n in walk(small)):
        return False
    if isinstance(small, cst.AugAssign):
        return dotted(small.target) in (var, f"{var}.data")
    if isinstance(small, cst.Assign):
        return any(dotted(t.target) == f"{var}.data" for t in small.targets)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        call = small.value
        recv = receiver(call)
        return method_name(call) in UPDATE_METHODS and recv is not None and dotted(recv) in (var, f"{var}.data")
    return False


__all__ = ["element_of", "manual_updates", "receiver_of"]
