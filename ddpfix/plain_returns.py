"""A function that trains the model it wraps hands back the plain module, as a plain run does.

DDP301 wraps a model where it is trained; when that is inside a function that then returns it
(`def train(loader): model = Net(); ...; return model`), the caller would get the wrapper under
torchrun and the model under `python train.py`. What callers do with it after training (evaluate it,
load a checkpoint into it, save or print it, read its attributes) is written for the model, so the
function's `return model` after the wrap returns `raw_model`, the plain module the wrap keeps: the
same object a plain run returns, trained in sync.
"""

from __future__ import annotations

import libcst as cst

from .rule import Context
from .syntax import walk


def return_plain(ctx: Context, handle: str, raw: str, anchor: cst.CSTNode) -> None:
    """Each `return <handle>` (alone or in a returned tuple) of the function `anchor` is in, after it,
    returns `raw` instead."""
    index = ctx.facts.index
    func = index.enclosing(anchor, cst.FunctionDef)
    if not isinstance(func, cst.FunctionDef) or "." in handle:
        return
    for node in walk(func.body):
        if type(node) is not cst.Return or node.value is None or index.scope_of(node) is not func:
            continue
        if not index.before(anchor, node):
            continue
        for name in _returned_names(node.value, handle):
            ctx.plan.replace(name, lambda n, raw=raw: n.with_changes(value=raw))


def _returned_names(value: cst.BaseExpression, handle: str) -> list[cst.Name]:
    if type(value) is cst.Name:
        return [value] if value.value == handle else []
    if type(value) is cst.Tuple:
        return [e.value for e in value.elements if type(e.value) is cst.Name and e.value.value == handle]
    return []


__all__ = ["return_plain"]
