"""Wrappers the script already has: for `model = DDP(model)` or `ddp_model = DDP(model)`, how code
reaches the plain module, and whether a use of a handle runs once the handle is the wrapper."""

from __future__ import annotations

import libcst as cst

from ..plain_spelling import UNWRAP
from ..syntax import assign_targets, assigned_value, dotted, walk
from .classes import module_under
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
            for prev in reversed(body[max(0, idx - 2) : idx]):  # the closest first; `model = model` keeps nothing
                targets = assign_targets(prev)
                if dotted(assigned_value(prev) or cst.Name("_")) == handle and targets and targets[0] != handle:
                    return targets[0]
            return None

        found = kept_before(site.block, site.stmt)
        if found:
            return found
        owner = index.parent.get(site.block)
        if isinstance(owner, cst.If) and owner.body is site.block:
            outer = index.site(owner)
            found = kept_before(outer.block, owner)
            if found or handle not in assign_targets(site.stmt):
                return found
            # a conditional wrap without a kept handle: `.module` would break the plain run
            return UNWRAP.format(name=handle)
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

    def after_wrap(self, node: cst.CSTNode, handle: str, wrap_stmt: cst.CSTNode, _depth: int = 0) -> bool:
        """Does `node` (a use of `handle`) run when `handle` is the wrapper? Same function: after the
        wrap, with no other value bound to the handle in between (`net = Net()` again before
        evaluation ends the wrapper's reach); `self.model` in another method than `__init__`: yes; a
        function that reads the module-level handle (`def evaluate(): model.generate()`): when every
        call of it runs after the wrap; a plain name in another function: unknown, no."""
        index = self.index
        if node is wrap_stmt or any(a is wrap_stmt for a in index.ancestors(node)):
            return False  # the wrap statement itself, or the last preparation the wrap follows
        func = index.enclosing(node, cst.FunctionDef)
        wrap_func = index.enclosing(wrap_stmt, cst.FunctionDef)
        if func is wrap_func:
            return index.before(wrap_stmt, node) and not self.rebound(handle, wrap_stmt, node)
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
        if wrap_func is None and "." not in handle and isinstance(func, cst.FunctionDef) and _depth < 3:
            return self._global_after_wrap(func, handle, wrap_stmt, _depth)
        return False

    def _global_after_wrap(self, func: cst.FunctionDef, handle: str, wrap_stmt: cst.CSTNode, depth: int) -> bool:
        """`func` reads the module-level `handle` (binds no local of that name, nor do the functions
        around it) and every call of it runs after the module-level wrap."""
        index = self.index
        outer: cst.CSTNode | None = func
        while isinstance(outer, cst.FunctionDef):
            if self.binds_locally(outer, handle):
                return False
            outer = index.enclosing(outer, cst.FunctionDef)
        callers = index.callers_of(func)
        return bool(callers) and all(
            c is not func and self.after_wrap(c, handle, wrap_stmt, depth + 1) for c in callers
        )

    def binds_locally(self, func: cst.FunctionDef, name: str) -> bool:
        """Does `func` have its own `name` (a parameter or an assignment in its body)?"""
        params = func.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        if params.star_arg is not None and isinstance(params.star_arg, cst.Param):
            every.append(params.star_arg)
        if params.star_kwarg is not None:
            every.append(params.star_kwarg)
        if any(p.name.value == name for p in every):
            return True
        if any(isinstance(n, cst.Global) and any(g.name.value == name for g in n.names) for n in walk(func.body)):
            return False
        return bool(self.names.assignments(func, name))

    def rebound(self, handle: str, wrap_stmt: cst.CSTNode, node: cst.CSTNode) -> bool:
        """Is another value bound to `handle` after the wrap and before `node`, in the wrap's scope?
        Re-binding the handle to itself moved or switched (`model = model.to(device)`) keeps the wrapper."""
        index = self.index
        scope = index.scope_of(wrap_stmt)
        if handle.startswith("self.") and isinstance(index.enclosing(wrap_stmt, cst.ClassDef), cst.ClassDef):
            return False
        for site in self.names.assignments(scope, handle):
            stmt = site.stmt
            if stmt is wrap_stmt or not index.before(wrap_stmt, stmt) or not index.before(stmt, node):
                continue
            if any(a is stmt for a in index.ancestors(node)):
                continue  # `model = model.generate(...)`: the use is the right-hand side
            if self.models.is_wrap(stmt) or _same_module(assigned_value(stmt), handle):
                continue
            return True
        return False

    def unconditional(self, wrap_stmt: cst.CSTNode, handle: str) -> bool:
        """Is `wrap_stmt` the script's own `handle = DDP(...)`, outside any `if`, so that
        `handle.module` always exists after it?"""
        if handle not in assign_targets(wrap_stmt) or not self.models.is_wrap(wrap_stmt):
            return False
        site = self.index.site(wrap_stmt)
        owner = self.index.parent.get(site.block)
        return not isinstance(owner, (cst.If, cst.Else, cst.Try, cst.ExceptHandler, cst.For, cst.While))


def _same_module(value: cst.BaseExpression | None, handle: str) -> bool:
    """`model.to(device)`, `model.train()`: the value is the module `handle` already holds."""
    return value is not None and dotted(module_under(value)) == handle


__all__ = ["Wraps"]
