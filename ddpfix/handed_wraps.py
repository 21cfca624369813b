"""DDP301 across files: a model the script hands to a class of its own modules that moves it to its
device after keeping it (`Trainer(config, model, dataset)`, with `self.model = model` and then
`self.model = self.model.to(self.device)` in `Trainer.__init__`).

Wrapped by the script before the hand-over, the DDP wrapper would be built around a model still on
the CPU and then moved: its gradient buckets stay where they were built, and the first backward fails
on GPUs. The wrap belongs in the class, right after that move, decided at run time as module_wraps.py
does for the models a class builds:

    self.model = self.model.to(self.device)
    if dist.is_initialized():
        self.model = DDP(self.model, device_ids=[torch.cuda.current_device()] if next(self.model.parameters()).is_cuda else None)

The script's own name keeps the plain module. What the wrapper does not answer as the model would
is read through the plain module in the class's methods (module_routes.py), also through a local name
(`model, config = self.model, self.config`, then `model.configure_optimizers(config)`).

Not wrapped there, and the conversion withheld with the reason (`withheld`): a class that keeps the
model under more than one attribute, or binds that attribute again outside the top level of
`__init__`; the parameter itself called or handed on after the wrap (a forward there would bypass
DDP); a use the wrapper cannot serve nor the fix route; the script reading the
model back through the object (`trainer.model`), which would then be the wrapper.
"""

from __future__ import annotations

import libcst as cst

from .analysis.call_params import arg_named
from .analysis.handed_models import moved_by_trainer
from .module_routes import MOVES, mixed_keys, model_members, route, routes, unmoved
from .module_trials import Edit, tried
from .module_wraps import insert_wrap
from .rule import Context, Rule
from .syntax import dotted, walk


def hand_over(ctx: Context, handle: str):
    """(the call, the module's summary, the class, the parameter of its `__init__`) that hands `handle`
    to a class that moves it after keeping it; None when no class of the script's modules does."""
    facts = ctx.facts
    call = moved_by_trainer(facts.index, facts.models.helpers, handle)
    if call is None or facts.helpers is None:
        return None
    arg = arg_named(call, handle)
    found = facts.helpers.constructor_param(call, arg) if arg is not None else None
    return None if found is None else (call, *found)


def class_wrap(ctx: Context, rule: Rule, model) -> tuple[str | None, str, list[Edit]] | None:
    """For a model the class it is handed to moves after keeping it: (why the class cannot wrap it, None
    when it can; the words for where it does; the edits); None for any other model."""
    found = hand_over(ctx, model.handle)
    if found is None:
        return None
    call, summary, cls_name, param = found
    if ctx.fixing and "DDP301" not in ctx.fixing:
        return "DDP301 is not fixed", "", []
    others = ctx.others
    if others is None:
        return "cross-file edits are off", "", []
    read = _read_back(ctx, call)
    if read is not None:
        return read, "", []
    where = others.shown(summary.path)
    members = model_members(ctx.facts, model.handle, model.handle, call)
    plain = not ctx.fixing or "DDP402" in ctx.fixing
    routed: list[tuple[int, str]] = []
    edits: list[Edit] = [
        (
            summary.path,
            ("handed-wrap", summary.path, cls_name, param),
            lambda lines: _planner(cls_name, param, where, members, plain, lines, routed),
        )
    ]
    why, places, _ = tried(ctx, rule, edits)
    line = ctx.facts.index.position(call).start.line
    words = f"{dotted(call.func) or cls_name}() at line {line} moves it to its device after the hand-over"
    words += f": the fix wraps it in {cls_name} there, right after that move ({', '.join(places)})"
    if routed:
        uses = ", ".join(f"{use} at {where}:{n}" for n, use in sorted(set(routed))[:3])
        more = f" and {len(set(routed)) - 3} more" if len(set(routed)) > 3 else ""
        words += f', and reads what the wrapper lacks through getattr(..., "module", ...) ({uses}{more})'
    return why, words, edits


def withheld(ctx: Context) -> str | None:
    """Why a trained model that a class moves after the hand-over is not wrapped in this pass, as a
    clause for DDP001 and DDP201 (no process group, no sampler then); None when each is wrapped."""
    rule = ctx.rule
    if rule is None:
        return None
    for model in ctx.facts.models.trained:
        found = class_wrap(ctx, rule, model)
        if found is not None and found[0] is not None:
            return f"the fix cannot wrap {model.handle} in the class that moves it to its device ({found[0]})"
    return None


def _read_back(ctx: Context, call: cst.Call) -> str | None:
    """The script reading an attribute of the object `call` makes (`trainer.model`), other than calling
    its methods: after the wrap in the class, the model there is the wrapper."""
    facts = ctx.facts
    site = facts.index.site(call)
    stmt = site.stmt if site is not None else None
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
    if not (isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1):
        return None
    owner = dotted(small.targets[0].target)
    if owner is None:
        return None
    for node in walk(facts.module):
        if type(node) is not cst.Attribute or dotted(node.value) != owner:
            continue
        parent = facts.index.parent.get(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            continue  # trainer.fit(...)
        line = facts.index.position(node).start.line
        return f"the script reads {dotted(node)} at line {line}, which would be the DDP wrapper"
    return None


def _planner(cls_name: str, param: str, where: str, members, plain: bool, lines: list[int], routed: list):
    """Wrap the attribute `__init__` of `cls_name` keeps its parameter `param` as, after the last
    statement there that binds or moves it; route the uses the wrapper does not serve; `lines` gets
    the line of that statement, `routed` (line, use) for each use routed."""

    def plan(ctx: Context) -> str | None:
        facts = ctx.facts
        cls = next((s for s in facts.module.body if isinstance(s, cst.ClassDef) and s.name.value == cls_name), None)
        init = facts.index.methods_of(cls).get("__init__") if cls is not None else None
        if init is None:
            return f"{cls_name} has no __init__ at the top level of the module ({where})"
        body = list(init.body.body)
        kept = [i for i, s in enumerate(body) if _bound(s) and _kept_value(s, param)]
        attrs = {attr for i in kept for attr in _bound(body[i])}
        if len(attrs) != 1:
            return f"{cls_name}.__init__ keeps {param} under {len(attrs)} attributes ({where}): the fix wraps one"
        name = next(iter(attrs))
        tops = {id(n): i for i, s in enumerate(body) for n in walk(s)}  # node -> its statement in __init__
        binds = [
            s for s in walk(cls) if isinstance(s, cst.SimpleStatementLine) and (name in _bound(s) or _moves(s, name))
        ]
        if any(id(s) not in tops for s in binds):
            return (
                f"{name} is bound or moved outside {cls_name}.__init__ ({where}): the wrap must follow the last of them"
            )
        start = kept[0]
        last = max(tops[id(s)] for s in binds)  # after the whole `if` that moves it, where one does
        anchor, before = body[last], body[start : last + 1]
        late = _param_read_late(facts, body[last + 1 :], param)
        if late is not None:
            return f"{param} is read at {where}:{late} after the wrap: the plain module there, not the wrapper"
        uses = routes(ctx, cls, name, before, where, model=members)
        if isinstance(uses, str):
            return uses
        why = None if plain else mixed_keys(ctx, cls, name, uses, where)
        if why is not None:
            return why
        ctx.joins_elsewhere()  # the module does not know how its caller launched: ask the process group
        route(ctx, uses, name)
        insert_wrap(ctx, name, anchor)
        lines.append(facts.index.position(anchor).start.line)
        routed.extend((facts.index.position(use).start.line, dotted(use)) for use in uses)
        return None

    return plan


def _bound(stmt: cst.CSTNode) -> list[str]:
    """`self.x` for each attribute of `self` the simple statement `stmt` assigns."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return []
    out = []
    for small in stmt.body:
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else []
        if isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets = [small.target]
        out += [n for n in map(dotted, targets) if n and n.startswith("self.") and n.count(".") == 1]
    return out


def _kept_value(stmt: cst.SimpleStatementLine, param: str) -> bool:
    """Does `stmt` assign `param` itself, maybe moved (`model.to(device)`)?"""
    small = stmt.body[0]
    value = small.value if isinstance(small, cst.Assign) else None
    value = unmoved(value)
    return type(value) is cst.Name and value.value == param


def _moves(stmt: cst.CSTNode, name: str) -> bool:
    """`self.model.to(self.device)` as a statement of its own."""
    if not isinstance(stmt, cst.SimpleStatementLine) or not isinstance(stmt.body[0], cst.Expr):
        return False
    call = stmt.body[0].value
    return (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value in MOVES
        and dotted(call.func.value) == name
    )


def _param_read_late(facts, stmts: list[cst.CSTNode], param: str) -> int | None:
    """The line of a use of `param` in `stmts` that needs the wrapper: a call of it (a forward DDP would
    not see) or the plain module handed on; reading its attributes or parameters is as a plain run's."""
    for stmt in stmts:
        for node in walk(stmt):
            if type(node) is not cst.Name or node.value != param:
                continue
            parent = facts.index.parent.get(node)
            if (isinstance(parent, cst.Call) and parent.func is node) or isinstance(parent, cst.Arg):
                return facts.index.position(node).start.line
    return None


__all__ = ["class_wrap", "hand_over", "withheld"]
