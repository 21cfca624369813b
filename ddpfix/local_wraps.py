"""DDP301 across files, for a model a method of a class of the script's modules builds and trains as
its own local (`Trainer(args).train()`, with `model = Net(); model = model.to(self.device); optimizer =
Adam(model.parameters())` in `Trainer.train`): where module_wraps.py puts the wrap of such a model.

The wrap follows the statements that build and prepare the model at the method's top level (`model =
model.to(self.device)`, `model.load_state_dict(...)`) and comes before the optimizer built over its
parameters, decided at run time like every wrap in the script's modules:

    model = model.to(self.device)
    if dist.is_initialized():
        model = DDP(model, device_ids=[torch.cuda.current_device()] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

Left alone, with the reason: a model bound inside a block of the method (a branch, a loop), bound to
something else before its optimizer or bound again after it, a parameter of the method (the caller's
to wrap), or put in `nn.DataParallel` there (DDP around DataParallel is no conversion: by hand)."""

from __future__ import annotations

import libcst as cst

from .syntax import dotted, mentions, walk


def local_wrap_point(func: cst.FunctionDef, name: str, assigns, optimizes) -> tuple[cst.CSTNode, list] | str:
    """The statement the wrap of the local `name` follows in `func` and the statements from its build to
    there; or why there is none. `assigns(stmt, name)` / `optimizes(stmt, name)`: does the statement bind
    `name` / build an optimizer over `name.parameters()`."""
    where = f"{func.name.value}()"
    if name in {p.name.value for p in [*func.params.params, *func.params.kwonly_params]}:
        return f"{name} is a parameter of {where}: the caller's to wrap"
    body = list(func.body.body)
    binds = [n for n in walk(func) if isinstance(n, cst.SimpleStatementLine) and assigns(n, name)]
    top = [i for i, s in enumerate(body) if any(s is b for b in binds)]
    if not binds or len(top) != len(binds):
        return f"{name} is bound inside a block of {where}: the fix wraps a model built at the top level of {where}"
    start = top[0]
    optimizer = next((i for i in range(start + 1, len(body)) if optimizes(body[i], name)), None)
    if optimizer is None:
        return f"the optimizer over {name}.parameters() is not built at the top level of {where} after {name}"
    if any(i > optimizer for i in top):
        return f"{name} is bound again after its optimizer is built in {where}: the fix wraps a model built once"
    if _mentions(body[start], name) or not all(_mentions(body[i], name) for i in top[1:]):
        return f"{name} is bound to another model before its optimizer in {where}"
    if any(
        isinstance(n, cst.Call) and (dotted(n.func) or "").endswith("DataParallel")
        for s in body[start:optimizer]
        for n in walk(s)
    ):
        return f"{name} is put in nn.DataParallel in {where}: convert it to DDP there by hand"
    last = max(i for i in range(start, optimizer) if i == start or _mentions(body[i], name))
    return body[last], body[start : last + 1]


def _mentions(stmt: cst.CSTNode, name: str) -> bool:
    """Does `stmt` read `name` (on the right of an assignment, or anywhere in another statement)?"""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
        stmt = small.value
    return mentions(stmt, name)


__all__ = ["local_wrap_point"]
