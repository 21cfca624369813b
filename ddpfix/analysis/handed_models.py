"""Models the script hands to code of its own modules that trains them (`fit(model, loader)` from a
local package, `Trainer(model, loader)`), read from what that code does with each argument."""

from __future__ import annotations

import libcst as cst

from ..syntax import dotted
from .index import Site, TreeIndex
from .model_params import FORWARD, MOVES, PARAMETERS, TRAINS


def handed_to_trainers(index: TreeIndex, helpers, local_definition) -> list[tuple[cst.Call, str, Site]]:
    """Models the script hands to a function of its own modules that runs their forward, takes
    their parameters (for its optimizer, for gradient clipping) and trains (`fit(model, loader)`
    from a local package), or to a class of theirs that keeps them, builds its optimizer over
    them and trains them (`Trainer(model, loader)`: kept_models.py), with where each gets its
    final handle."""
    out: list[tuple[cst.Call, str, Site]] = []
    handed: list[tuple[cst.Call, str, set]] = []
    parameters: set[tuple[int, str]] = set()  # (scope, name) whose parameters some call of the modules takes
    for call in index.calls:
        if index.callee_of(call) is not None or helpers.modules.target_of(call.func) is None:
            continue
        for arg in call.args:
            name = dotted(arg.value)
            if arg.star or not name:
                continue
            uses = helpers.uses(call, arg) or helpers.constructor_uses(call, arg)
            if uses:
                handed.append((call, name, uses))
                if PARAMETERS in uses:
                    parameters.add((id(index.scope_of(call)), name))
    for call, name, uses in handed:
        # the optimizer over its parameters may come from another function of the modules
        # (`optimizer = build_optimizer(model)`, then `train(model, optimizer, loader)`)
        given = PARAMETERS in uses or (id(index.scope_of(call)), name) in parameters
        if {FORWARD, TRAINS} <= uses and given:
            definition = local_definition(name, call)
            if definition is not None:
                out.append((call, name, definition))
    return out


def moved_by_trainer(index: TreeIndex, helpers, handle: str) -> cst.Call | None:
    """The call that hands `handle` to a class of the script's own modules that moves it to a device
    after keeping it (`self.model = self.model.to(self.device)`: kept_models.py), where the script does
    not move it before that call. Wrapped by the script, the DDP wrapper would hold a model on the CPU,
    then be moved: on GPUs its first backward fails (its gradient buckets stay where it was built)."""
    if helpers is None:
        return None
    for call in index.calls:
        if helpers.modules.target_of(call.func) is None:
            continue
        for arg in call.args:
            if arg.star or dotted(arg.value) != handle:
                continue
            if MOVES in (helpers.constructor_uses(call, arg) or set()) and not _moved_before(index, handle, call):
                return call
    return None


def _moved_before(index: TreeIndex, handle: str, call: cst.Call) -> bool:
    """Does the script move `handle` to a device before `call` (`model.to(device)`, `model.cuda()`, in
    the statement that builds it or after)?"""
    scope = index.scope_of(call)
    for other in index.calls:
        func = other.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda")):
            continue
        if index.scope_of(other) is not scope or not index.before(other, call):
            continue
        if dotted(func.value) == handle:
            return True
        site = index.site(other)
        if site is not None and isinstance(site.stmt, cst.SimpleStatementLine):
            small = site.stmt.body[0]
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else []
            if any(dotted(t) == handle for t in targets):
                return True
    return False


__all__ = ["handed_to_trainers", "moved_by_trainer"]
