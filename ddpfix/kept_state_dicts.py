"""DDP402 through an object of the script's modules that keeps the wrapper: `trainer = Trainer(model,
...)` with `self.G = generator` in `Trainer.__init__`, then `torch.save(trainer.G.state_dict(), path)`
in the script. `trainer.G` is the wrapper the script handed over, so its state_dict() has `module.`
keys. The fix saves

    getattr(trainer.G, "module", trainer.G).state_dict()

the plain module's keys under DDP and the same object in a plain run (module_unwrap.py's spelling,
which also serves a class that rebinds the attribute later). Read with Python's `ast`: the class must
be defined at the top level of the module the constructor names, and keep the parameter the wrapper
is passed as (`self.<attr> = <param>`) in its `__init__`."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst

from .analysis.ast_reading import kept_params
from .analysis.config_factory import parsed
from .handles import once_wrapped, wrap_level, wrappers
from .module_unwrap import inside_load
from .plain_spelling import unwrap_code
from .rule import Context
from .syntax import arg_slots, dotted, receiver


def unwrap_kept_attributes(ctx: Context) -> None:
    """Report (and fix) each `<obj>.<attr>.state_dict()` of the script where `<obj>` is an object of a
    class of its modules that keeps the wrapper as `self.<attr>`."""
    facts = ctx.facts
    for handle, (_raw, wrap_stmt) in wrappers(ctx).items():
        for call in facts.names.method_calls("state_dict"):
            recv = receiver(call)
            name = dotted(recv) if recv is not None else None
            if name is None or name.count(".") != 1 or inside_load(facts, call):
                continue
            obj, attr = name.split(".")
            ctor = facts.names.value_before(facts.index.scope_of(call), obj, call)
            target = facts.modules.target_of(ctor.func) if isinstance(ctor, cst.Call) else None
            if target is None or target.summary is None or target.member not in target.summary.classes:
                continue
            if not facts.wraps.after_wrap(ctor, handle, wrap_stmt):
                continue
            slots = [slot for slot, arg in arg_slots(ctor) if dotted(arg.value) == handle]
            if not any(attr in kept_as(target.summary.path, target.member, s) for s in slots):
                continue
            said = once_wrapped(
                ctx,
                handle,
                f"{name}.state_dict() saves the DDP wrapper ('module.' keys): {obj} keeps {handle} as self.{attr}",
                f"{name}.state_dict() would save the wrapper's 'module.'-prefixed keys: {obj} keeps {handle} as "
                f"self.{attr}",
            )
            level, why = wrap_level(ctx, handle)
            spelled = unwrap_code(ctx.facts.index, call, name)
            if ctx.report(call, f"{said}; use {spelled}.state_dict(){why}", fix=level):
                ctx.plan.replace(recv, lambda _n, s=spelled: cst.parse_expression(s))  # type: ignore[arg-type]


def kept_as(path: Path, cls_name: str, slot: int | str) -> set[str]:
    """The attributes (`G` for `self.G = generator`) the `__init__` of class `cls_name` of the module at
    `path` keeps its parameter `slot` (a position after `self`, or a keyword) as."""
    tree = parsed(path)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name), None) if tree else None
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if cls else None
    if init is None:
        return set()
    params = [a.arg for a in [*init.args.posonlyargs, *init.args.args]][1:]
    name = slot if isinstance(slot, str) else (params[slot] if slot < len(params) else None)
    return {attr.removeprefix("self.") for attr, param in kept_params(init).items() if param == name}


__all__ = ["kept_as", "unwrap_kept_attributes"]
