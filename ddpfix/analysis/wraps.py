"""Wrappers the script already has: for `model = DDP(model)` or `ddp_model = DDP(model)`, how code
reaches the plain module, and whether a use of a handle runs once the handle is the wrapper."""

from __future__ import annotations

import libcst as cst

from ..syntax import assign_targets, assigned_value, dotted
from .index import TreeIndex
from .models import Models
from .names import Names


class Wraps:
    """Existing DDP wrappers and the plain modules behind them."""

    def __init__(self, index: TreeIndex, names: Names, models: Models) -> None:
        self.index = index
        self.names = names
        self.models = models

    def existing_raws(self) -> dict[str, str]:
        """Trained model handle -> its plain module, for models the script wraps itself."""
        out: dict[str, str] = {}
        for model in self.models.trained:
            existing = self.models.wrapped(model)
            if existing is not None:
                raw = self.existing_raw(existing, model.handle)
                if raw is not None:
                    out[model.handle] = raw
        return out

    def existing_raw(self, wrap: cst.Call, handle: str) -> str | None:
        """For `model = DDP(model)`: a `raw = model` kept just before, else `model.module` when unconditional."""
        index = self.index
        site = index.site(wrap)
        arg = wrap.args[0].value if wrap.args and wrap.args[0].keyword is None else None
        inner = dotted(arg) if arg is not None else None
        if inner and inner != handle and handle in assign_targets(site.stmt):
            return inner  # `ddp_model = DDP(model)`: `model` stays the plain module

        def kept_before(block, stmt) -> str | None:
            body = list(block.body)
            idx = next((i for i, s in enumerate(body) if s is stmt), 0)
            for prev in body[max(0, idx - 2) : idx]:
                if dotted(assigned_value(prev) or cst.Name("_")) == handle and assign_targets(prev):
                    return assign_targets(prev)[0]
            return None

        found = kept_before(site.block, site.stmt)
        if found:
            return found
        owner = index.parent.get(site.block)
        if isinstance(owner, cst.If) and owner.body is site.block:
            outer = index.site(owner)
            return kept_before(
                outer.block, owner
            )  # a conditional wrap needs a kept handle: `.module` breaks the plain run
        if handle in assign_targets(site.stmt):
            return f"{handle}.module"
        return None

    def separate_handles(self) -> dict[str, tuple[str, cst.CSTNode]]:
        """`ddp_model = DDP(model)`: the wrapper's handle -> (the plain module's handle, the wrap statement)."""
        out: dict[str, tuple[str, cst.CSTNode]] = {}
        for call in self.models.ddp_calls:
            site = self.index.site(call)
            targets = assign_targets(site.stmt)
            arg = call.args[0] if call.args and call.args[0].keyword is None else None
            inner = dotted(arg.value) if arg is not None else None
            if len(targets) == 1 and assigned_value(site.stmt) is call and inner and targets[0] != inner:
                out.setdefault(targets[0], (inner, site.stmt))
        return out

    def after_wrap(self, node: cst.CSTNode, handle: str, wrap_stmt: cst.CSTNode) -> bool:
        """Does `node` (a use of `handle`) run when `handle` is the wrapper? Same function: after the wrap;
        `self.model` in another method than `__init__`: yes; a plain name in another function: unknown, no."""
        index = self.index
        if node is wrap_stmt or any(a is wrap_stmt for a in index.ancestors(node)):
            return False  # the wrap statement itself, or the last preparation the wrap follows
        func = index.enclosing(node, cst.FunctionDef)
        wrap_func = index.enclosing(wrap_stmt, cst.FunctionDef)
        if func is wrap_func:
            return index.before(wrap_stmt, node)
        if handle.startswith("self.") and isinstance(func, cst.FunctionDef):
            if func.name.value == "__init__" or index.enclosing(func, cst.ClassDef) is not index.enclosing(
                wrap_stmt, cst.ClassDef
            ):
                return False
            callers = index.callers_of(func)
            if callers and all(
                index.enclosing(c, cst.FunctionDef) is wrap_func and index.before(c, wrap_stmt) for c in callers
            ):
                return False  # `self._load_snapshot()` called from __init__ before the wrap
            return True
        return False


__all__ = ["Wraps"]
