"""A trained model reached only through a module that holds it.

`trainer = DiffusionTrainer(model).to(device)`, then `loss = trainer(x0)` in the training loop: the
optimizer is over `model.parameters()`, but the forward that makes the loss is the holder's, which
runs `model` inside it. The wrap belongs on the holder, after it is built and moved: wrapping `model`
where it is built would put the wrapper inside the holder before the holder moves it to its device
(DDP's buckets stay where they were built), and every other use of `model` (an EMA copy made with
`copy.deepcopy(model)`, `ema(model, ema_model)` reading its state_dict, the checkpoint) would get the
wrapper instead of the plain module.

A holder is taken only where that is certain: an instance of an nn.Module class of this file or of
the script's own modules, built (after the model, in the same function) with the model's own name as
an argument and bound to a name; the one such module the function calls with gradients on (not under
`torch.no_grad()`), in a function that runs `backward()`; and the model itself is never run there,
nor handed to a function of the script that runs it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst

from ..syntax import assign_targets, assigned_value, dotted
from .call_params import arg_named
from .classes import SELF_RETURNING
from .index import Site, TreeIndex
from .model_params import FORWARD
from .names import Names

if TYPE_CHECKING:
    from .helpers import Helpers

MODULE_BASES = {"Module", "Sequential", "ModuleList", "ModuleDict"}
NO_GRAD = ("no_grad", "inference_mode")


def holder_of(index: TreeIndex, names: Names, helpers: Helpers | None, model) -> tuple[str, Site] | None:
    """(the holder's name, its binding) for a trained model reached only through a holder module."""
    handle = model.handle
    if helpers is None or model.each is not None or model.built_by is not None or "." in handle:
        return None
    scope = model.definition.func or index.module
    if not any(index.scope_of(c) is scope for c in names.method_calls("backward")):
        return None
    ours = [c for c in index.calls if index.scope_of(c) is scope]
    holders = [
        found
        for call in ours
        if index.before(model.definition.stmt, call) and passes(call, handle)
        for found in [_holder_binding(index, helpers, call)]
        if found is not None
    ]
    called = [(name, site) for name, site in holders if any(runs_with_grad(index, c, name) for c in ours)]
    if len(called) != 1 or any(runs_with_grad(index, c, handle) for c in ours):
        return None
    held = {id(site.stmt) for _, site in holders}
    for call in ours:
        if id(index.site(call).stmt) in held or not passes(call, handle):
            continue
        target = helpers.modules.target_of(call.func)
        if index.callee_of(call) is None and (target is None or target.summary is None):
            continue  # a library's function (copy.deepcopy(model)): it runs no forward of the script's
        uses = helpers.uses(call, arg_named(call, handle))  # type: ignore[arg-type]
        if uses is None or FORWARD in uses:
            return None  # a function of the script that may run the model itself
    return called[0]


def to_holders(index: TreeIndex, names: Names, helpers: Helpers | None, by_handle: dict) -> dict:
    """The trained models by handle, each reached only through a holder replaced by that holder (the
    same optimizers)."""
    out = {}
    for handle, model in by_handle.items():
        held = holder_of(index, names, helpers, model)
        if held is not None and held[0] not in by_handle:
            model = dataclasses.replace(model, handle=held[0], definition=held[1])
            handle = held[0]
        out[handle] = model
    return out


def passes(call: cst.Call, handle: str) -> bool:
    """Does `call` take the name `handle` itself as an argument?"""
    return arg_named(call, handle) is not None


def runs_with_grad(index: TreeIndex, call: cst.Call, name: str) -> bool:
    """Is `call` `name(...)` with gradients on: not under `with torch.no_grad():` (or
    `inference_mode`) in its function, nor in a function decorated with either?"""
    if dotted(call.func) != name:
        return False
    for anc in index.ancestors(call):
        if isinstance(anc, cst.FunctionDef):
            return not any(_no_grad(d.decorator) for d in anc.decorators)
        if isinstance(anc, cst.ClassDef):
            break
        if isinstance(anc, cst.With) and any(_no_grad(item.item) for item in anc.items):
            return False
    return True


def _no_grad(expr: cst.BaseExpression) -> bool:
    func = expr.func if isinstance(expr, cst.Call) else expr
    return (dotted(func) or "").endswith(NO_GRAD)


def _holder_binding(index: TreeIndex, helpers: Helpers, call: cst.Call) -> tuple[str, Site] | None:
    """`H = Cls(..., model, ...)` (maybe `.to(device)` after it), Cls an nn.Module of the script's."""
    site = index.site(call)
    targets = assign_targets(site.stmt)
    if len(targets) != 1 or "." in targets[0]:
        return None
    value = assigned_value(site.stmt)
    while (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in SELF_RETURNING
    ):
        value = value.func.value
    if value is not call or not _module_class(index, helpers, call):
        return None
    return targets[0], site


def _module_class(index: TreeIndex, helpers: Helpers, call: cst.Call) -> bool:
    """Does `call` build an nn.Module of a class of this file (through its bases here) or of the
    script's own modules (as their summary records it)?"""
    if isinstance(call.func, cst.Name):
        by_name = {c.name.value: c for c in index.classes}
        seen: set[str] = set()
        todo = [call.func.value]
        while todo:
            name = todo.pop()
            cls = by_name.get(name)
            if cls is None or name in seen:
                continue
            seen.add(name)
            for base in cls.bases:
                last = (dotted(base.value) or "").split(".")[-1]
                if last in MODULE_BASES:
                    return True
                todo.append(last)
        if call.func.value in by_name:
            return False
    target = helpers.modules.target_of(call.func)
    if target is None or target.summary is None or target.member is None:
        return False
    cls = target.summary.classes.get(target.member)
    return cls is not None and (cls.is_module or any(b.split(".")[-1] in MODULE_BASES for b in cls.bases))


__all__ = ["holder_of", "passes", "runs_with_grad", "to_holders"]
