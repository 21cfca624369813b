"""DDP402: saving the DDP wrapper's state_dict (keys get a `module.` prefix)."""
from __future__ import annotations

import libcst as cst

from ..rule import Context, Rule
from ..syntax import assign_targets, assigned_value, dotted, method_name, receiver


class WrappedStateDict(Rule):
    code = "DDP402"
    name = "wrapped-state-dict"
    message = "state_dict() of the DDP-wrapped model: keys get a 'module.' prefix; use the unwrapped model"
    requires = ("DDP301",)
    docs = """
## What
`model.state_dict()` where `model` is (or becomes) the `DistributedDataParallel` wrapper.

## Why
The wrapper's keys are `module.conv.weight`, ...; loading such a checkpoint into a plain model fails
with `Missing key(s) in state_dict: "conv.weight" ... Unexpected key(s) in state_dict: "module.conv.weight"`.

## Example
```python
torch.save(model.state_dict(), "checkpoint.pt")
```
becomes
```python
torch.save(raw_model.state_dict(), "checkpoint.pt")
```
(`raw_model` is the handle kept before wrapping; for a wrap the script already had, `model.module`.)

## Fix safety
Safe: the unwrapped model's keys are what a plain run saves.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        planned: dict[str, str] = ctx.shared.get("wrapped", {})
        raw_for: dict[str, tuple[str, cst.CSTNode]] = {}
        for model in facts.models:
            if model.handle in planned:
                raw_for[model.handle] = (planned[model.handle], facts.wrap_point(model).anchor)
                continue
            existing = facts.wrapped(model)
            if existing is not None:
                raw = _existing_raw(facts, existing, model.handle)
                if raw is not None:
                    raw_for[model.handle] = (raw, facts.site(existing).stmt)
        if not raw_for:
            return
        for call in facts.method_calls("state_dict"):
            handle = dotted(receiver(call)) if receiver(call) is not None else None
            if handle not in raw_for:
                continue
            raw, wrap_stmt = raw_for[handle]
            if not self._after_wrap(facts, call, wrap_stmt) or _inside_load(facts, call):
                continue
            if ctx.report(call, f"{handle}.state_dict() saves the DDP wrapper ('module.' keys): use {raw}.state_dict()"):
                ctx.plan.replace(call.func, lambda n, raw=raw: n.with_changes(value=cst.parse_expression(raw)))

    @staticmethod
    def _after_wrap(facts, call: cst.CSTNode, wrap_stmt: cst.CSTNode) -> bool:
        func = facts.enclosing(call, cst.FunctionDef)
        wrap_func = facts.enclosing(wrap_stmt, cst.FunctionDef)
        if func is not wrap_func:
            return not (isinstance(func, cst.FunctionDef) and func.name.value == "__init__")
        return facts.before(wrap_stmt, call)


def _inside_load(facts, call: cst.CSTNode) -> bool:
    return any(isinstance(a, cst.Call) and method_name(a) == "load_state_dict" for a in facts.ancestors(call))


def _existing_raw(facts, wrap: cst.Call, handle: str) -> str | None:
    """For `model = DDP(model)`: a `raw = model` kept just before, else `model.module` when unconditional."""
    site = facts.site(wrap)
    body = list(site.block.body)
    idx = next((i for i, s in enumerate(body) if s is site.stmt), None)
    stmt = site.stmt
    for prev in body[max(0, (idx or 0) - 2): idx or 0]:
        if dotted(assigned_value(prev) or cst.Name("_")) == handle and assign_targets(prev):
            return assign_targets(prev)[0]
    owner = facts.parent.get(site.block)
    if isinstance(owner, cst.If) and owner.body is site.block:
        grand = facts.site(owner)
        gbody = list(grand.block.body)
        gidx = next((i for i, s in enumerate(gbody) if s is owner), 0)
        for prev in gbody[max(0, gidx - 2): gidx]:
            if dotted(assigned_value(prev) or cst.Name("_")) == handle and assign_targets(prev):
                return assign_targets(prev)[0]
        return None  # conditional wrap without a raw handle: `.module` would break the plain run
    if handle in assign_targets(stmt):
        return f"{handle}.module"
    return None
