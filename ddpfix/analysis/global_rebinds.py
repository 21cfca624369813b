"""A module-level model that a function rebinds through `global` (`def model_load(fn): global model;
model, criterion, optimizer = torch.load(f)`), called after the model is wrapped: from that call on
`model` is whatever was loaded, while every route to the plain module (`raw_model.decoder`) still
reads the old one."""

from __future__ import annotations

import libcst as cst

from ..syntax import assign_targets, dotted, walk
from .handed_models import moved_by_trainer
from .index import TreeIndex


def rebinding_functions(index: TreeIndex, handle: str) -> list[cst.FunctionDef]:
    """Functions that declare `global handle` and assign it."""
    return [
        func
        for func in index.declared_global.get(handle, ())
        if any(isinstance(n, cst.SimpleStatementLine) and handle in assign_targets(n) for n in walk(func.body))
    ]


def rebound_after(index: TreeIndex, handle: str, anchor: cst.CSTNode, training=None) -> tuple[str, int] | None:
    """(function, line of its call) for the first call, after `anchor`, of a function that rebinds the
    module-level `handle` through `global`; None where there is none. With `training` (the script's
    Training), a call after which nothing trains is left out (`after_training`)."""
    if "." in handle:
        return None
    funcs = rebinding_functions(index, handle)
    if not funcs:  # (before the anchor's position, which costs a render of its statement)
        return None
    start = index.position(anchor).end.line
    for func in funcs:
        for call in index.callers_of(func):
            line = index.position(call).start.line
            if line > start and (training is None or not after_training(index, training, call)):
                return func.name.value, line
    return None


def after_training(index: TreeIndex, training, call: cst.CSTNode) -> bool:
    """Does `call` run once, at the script's top level (also under `if __name__ == "__main__":`), after
    everything that trains: no loop around it, nothing after it that trains, and training before it
    (`model_load(args.save)` to test the best model once training is over)? From there on the name
    holds the loaded module, which no step trains."""
    node, trained_before = call, False
    while not isinstance(node, cst.Module):
        parent = index.parent.get(node)
        if parent is None or isinstance(parent, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        body = getattr(parent, "body", None)
        stmts = body if isinstance(body, (list, tuple)) else getattr(body, "body", None)
        if isinstance(stmts, (list, tuple)) and node in stmts:
            i = stmts.index(node)
            if any(training.reaches_training(s) for s in stmts[i + 1 :]):
                return False
            trained_before = trained_before or any(training.reaches_training(s) for s in stmts[:i])
        node = parent
    return trained_before


def blocked_wrap(models, index: TreeIndex, training=None) -> str | None:
    """Why the fix cannot wrap a trained model of the script, as a clause ("the fix cannot wrap model
    (...)"): no process group and no sampler then either (no half conversion); None when it can."""
    for model in models.trained:
        if models.wrapped(model) is not None or models.dataparallel(model) is not None:
            continue
        # (a list of models wrapped one by one keeps a name for the list: no later rebinding of it)
        found = rebound_after(
            index, model.handle, models.wrap_point(model).anchor, training if model.each is None else None
        )
        if found is not None:
            return (
                f"the fix cannot wrap {model.handle} ({found[0]}() rebinds the global {model.handle} after the "
                f"wrap, at line {found[1]}: the plain module and the wrapper would no longer be the model it loads)"
            )
    return None


def moved_after_wrap(models, index: TreeIndex, handle: str) -> str | None:
    """Why the wrap of `handle` in the script would come before the model reaches its device: a class of
    the script's modules it is handed to moves it there (handed_models.moved_by_trainer)."""
    call = moved_by_trainer(index, models.helpers, handle)
    if call is None:
        return None
    line = index.position(call).start.line
    owner = dotted(call.func) or "the class"
    return (
        f"{owner}() at line {line} moves it to its device after the hand-over, so the DDP wrapper would be built "
        f"around a model still on the CPU and then moved, which fails at the first backward on GPUs: move "
        f"{handle} to its device before handing it over, or wrap it in that class after its move"
    )


__all__ = ["after_training", "blocked_wrap", "moved_after_wrap", "rebinding_functions", "rebound_after"]
