"""The few edit helpers rules share: rank-0 guards, keyword arguments, device tests, set_epoch."""

from __future__ import annotations

import libcst as cst

from .facts import Model, ScriptFacts
from .rule import Context
from .syntax import assign_targets, assigned_value, dotted, kwarg


def guardable(facts: ScriptFacts, stmt: cst.CSTNode) -> bool:
    """A statement that can be wrapped in `if RANK == 0:` on its own line."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) > 1:
        return False  # `msg = f(x); print(msg)`: a guard would hide the assignment from other ranks
    return not facts.in_one_line_suite(stmt) and isinstance(facts.parent.get(stmt), (cst.IndentedBlock, cst.Module))


def guard_site(ctx: Context, node: cst.CSTNode, message: str | None = None) -> None:
    """Report `node` and guard the statement holding it to rank 0, when that is possible."""
    facts = ctx.facts
    if facts.rank_guarded(node):
        return
    stmt = facts.site(node).stmt
    stmt = _enclosing_write_with(facts, stmt)
    if not guardable(facts, stmt):
        ctx.report(
            node, (message or ctx.rule.message) + " (shares its line with other code: guard it by hand)", fix="none"
        )
        return
    if ctx.report(node, message):
        ctx.plan.guard(stmt, ctx.rank0(node))


def _enclosing_write_with(facts: ScriptFacts, stmt: cst.CSTNode) -> cst.CSTNode:
    """`with open(p, "wb") as f: torch.save(sd, f)` is guarded as a whole: the open truncates the file."""
    block = facts.parent.get(stmt)
    owner = facts.parent.get(block) if block is not None else None
    if isinstance(owner, cst.With) and len(owner.body.body) == 1:  # type: ignore[union-attr]
        for item in owner.items:
            call = item.item
            if isinstance(call, cst.Call) and dotted(call.func) == "open" and opens_for_writing(call):
                return owner
    return stmt


def opens_for_writing(call: cst.Call) -> bool:
    mode = kwarg(call, "mode") or (call.args[1] if len(call.args) > 1 and call.args[1].keyword is None else None)
    if mode is None or not isinstance(mode.value, cst.SimpleString):
        return False
    value = mode.value.evaluated_value
    return isinstance(value, str) and any(ch in value for ch in "wax")


def with_kwarg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value` appended (or replaced), keeping the call's comma and line style."""
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[i] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    new = cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    if isinstance(last.comma, cst.Comma):  # trailing comma: the new argument takes the same layout
        args.append(new.with_changes(comma=last.comma))
    else:  # the separator between the last two arguments (a newline in a multi-line call) is reused
        sep = (
            args[-2].comma
            if len(args) > 1 and isinstance(args[-2].comma, cst.Comma)
            else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        args[-1] = last.with_changes(comma=sep, whitespace_after_arg=cst.SimpleWhitespace(""))
        args.append(new.with_changes(whitespace_after_arg=last.whitespace_after_arg))
    return call.with_changes(args=args)


def without_kwarg(call: cst.Call, name: str) -> cst.Call:
    args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == name)]
    if args and not any(isinstance(a.comma, cst.Comma) and "\n" in _code(a.comma) for a in call.args):
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def cuda_test(ctx: Context, model_handle: str, at: cst.CSTNode) -> str:
    """An expression that is true when the model lives on a CUDA device, in the script's own terms."""
    dev = ctx.facts.device_var(at)
    if dev is not None and dev[1]:
        return f'{dev[0]}.type == "cuda"'
    return f"next({model_handle}.parameters()).is_cuda"


def torch_name(ctx: Context) -> str:
    return ctx.plan.ref("torch", "torch", style="import")


def raw_handle(ctx: Context, model: Model) -> str:
    """`raw_model` for `model`, `self.raw_model` for `self.model`, `raw_netG` for `netG`."""
    key = ("raw", model.handle)
    if key in ctx.shared:
        return ctx.shared[key]
    head, _, base = model.handle.rpartition(".")
    raw_base = "raw_model" if base == "model" else f"raw_{base}"
    if head:
        name = f"{head}.{raw_base}"
        i = 2
        while ctx.facts.assignments(ctx.facts.module, name) or name in ctx.shared.values():
            name = f"{head}.{raw_base}_{i}"
            i += 1
    else:
        name = ctx.plan.fresh(raw_base)
    ctx.shared[key] = name
    return name


def raw_handles(ctx: Context) -> dict[str, str]:
    """Wrapped model handle -> how to reach the plain module: `raw_model` kept before the wrap
    (ours, planned in this run, or one the script already has), or `model.module` for an
    unconditional wrap."""
    if "raw_handles" in ctx.shared:
        return ctx.shared["raw_handles"]
    facts = ctx.facts
    out: dict[str, str] = dict(ctx.shared.get("wrapped", {}))
    for model in facts.models:
        existing = facts.wrapped(model)
        if model.handle not in out and existing is not None:
            raw = existing_raw(facts, existing, model.handle)
            if raw is not None:
                out[model.handle] = raw
    ctx.shared["raw_handles"] = out
    return out


def existing_raw(facts: ScriptFacts, wrap: cst.Call, handle: str) -> str | None:
    """For `model = DDP(model)`: a `raw = model` kept just before, else `model.module` when unconditional."""
    site = facts.site(wrap)
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
    owner = facts.parent.get(site.block)
    if isinstance(owner, cst.If) and owner.body is site.block:
        outer = facts.site(owner)
        return kept_before(outer.block, owner)  # a conditional wrap needs a kept handle: `.module` breaks the plain run
    if handle in assign_targets(site.stmt):
        return f"{handle}.module"
    return None


def wrappers(ctx: Context) -> dict[str, tuple[str, cst.CSTNode]]:
    """Every handle that is (or this plan makes) a DDP wrapper -> (how to reach the plain module, the
    statement from which on the handle is the wrapper). Covers `raw_handles` (our wraps, the script's
    `model = DDP(model)`, a DataParallel replaced by one) and `ddp_model = DDP(model)`, where `model`
    stays the plain module."""
    if "wrappers" in ctx.shared:
        return ctx.shared["wrappers"]
    facts = ctx.facts
    out: dict[str, tuple[str, cst.CSTNode]] = {}
    by_handle = {m.handle: m for m in facts.models}
    for handle, raw in raw_handles(ctx).items():
        stmt = ctx.shared.get("wrap_stmt", {}).get(handle)
        model = by_handle.get(handle)
        if stmt is None and model is not None:
            existing = facts.wrapped(model)
            stmt = facts.site(existing).stmt if existing is not None else facts.wrap_point(model).anchor
        if stmt is not None:
            out[handle] = (raw, stmt)
    for call in facts.ddp_calls:
        site = facts.site(call)
        targets = assign_targets(site.stmt)
        arg = call.args[0] if call.args and call.args[0].keyword is None else None
        inner = dotted(arg.value) if arg is not None else None
        if (
            len(targets) == 1
            and assigned_value(site.stmt) is call
            and inner
            and targets[0] != inner
            and targets[0] not in out
        ):
            out[targets[0]] = (inner, site.stmt)
    ctx.shared["wrappers"] = out
    return out


def after_wrap(facts: ScriptFacts, node: cst.CSTNode, handle: str, wrap_stmt: cst.CSTNode) -> bool:
    """Does `node` (a use of `handle`) run when `handle` is the wrapper? Same function: after the wrap;
    `self.model` in another method than `__init__`: yes; a plain name in another function: unknown, no."""
    if node is wrap_stmt or any(a is wrap_stmt for a in facts.ancestors(node)):
        return False  # the wrap statement itself, or the last preparation the wrap follows
    func = facts.enclosing(node, cst.FunctionDef)
    wrap_func = facts.enclosing(wrap_stmt, cst.FunctionDef)
    if func is wrap_func:
        return facts.before(wrap_stmt, node)
    if handle.startswith("self.") and isinstance(func, cst.FunctionDef):
        if func.name.value == "__init__" or facts.enclosing(func, cst.ClassDef) is not facts.enclosing(
            wrap_stmt, cst.ClassDef
        ):
            return False
        callers = [c for c in facts.calls if facts._local_callee(c) is func]
        if callers and all(
            facts.enclosing(c, cst.FunctionDef) is wrap_func and facts.before(c, wrap_stmt) for c in callers
        ):
            return False  # `self._load_snapshot()` called from __init__ before the wrap
        return True
    return False


def set_epoch_statements(ctx: Context, sampler: str, epoch: str, *, optional: bool) -> list[cst.BaseStatement]:
    if optional:
        return ctx.plan.statements(
            """
            if {s} is not None:
                {s}.set_epoch({e})
            """,
            s=sampler,
            e=epoch,
        )
    return ctx.plan.statements("{s}.set_epoch({e})", s=sampler, e=epoch)


def epoch_name(loop: cst.For) -> str | None:
    return loop.target.value if isinstance(loop.target, cst.Name) else None


def has_set_epoch(facts: ScriptFacts) -> bool:
    return any(
        isinstance(n, cst.Call) and dotted(n.func) and (dotted(n.func) or "").endswith(".set_epoch")
        for n in facts.calls
    )


def statement_calls(facts: ScriptFacts, pred) -> list[cst.Call]:
    """Calls that are whole expression statements (`f(...)` on its own line) and match `pred`."""
    out = []
    for call in facts.calls:
        parent = facts.parent.get(call)
        if isinstance(parent, cst.Expr) and pred(call):
            out.append(call)
    return out


__all__ = [
    "guardable",
    "guard_site",
    "with_kwarg",
    "without_kwarg",
    "cuda_test",
    "torch_name",
    "raw_handle",
    "wrappers",
    "after_wrap",
    "set_epoch_statements",
    "epoch_name",
    "has_set_epoch",
    "statement_calls",
    "opens_for_writing",
]
