"""Rules with deliberately broken fixes, registered for a test only (`registered(...)`), to show that the
output guard withholds what they do and says why."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import libcst as cst

from ddpfix import transforms
from ddpfix.diagnostic import NONE, SAFE
from ddpfix.rule import Context, Order, Rule
from ddpfix.syntax import assign_targets, expr_call


@contextlib.contextmanager
def registered(*rules: Rule) -> Iterator[None]:
    """Add `rules` to the registry (after the real ones) for the duration of the block."""
    for rule in rules:
        transforms.RULES.append(rule)
        transforms.BY_CODE[rule.code] = rule
    try:
        yield
    finally:
        for rule in rules:
            transforms.RULES.remove(rule)
            del transforms.BY_CODE[rule.code]


class _TestRule(Rule):
    fix = SAFE
    docs = "## What\nA rule for the guard's tests.\n"


class SecondInit(_TestRule):
    """Joins the process group again right before the script's own init (once: idempotent)."""

    code, name, message = "DDP901", "test-second-init", "joins the process group a second time"

    def run(self, ctx: Context) -> None:
        if len(ctx.facts.launch.init_calls) != 1:
            return
        stmt = ctx.facts.index.site(ctx.facts.launch.init_calls[0]).stmt
        if ctx.report(stmt):
            ctx.plan.insert_before(
                stmt, ctx.plan.statements('torch.distributed.init_process_group("gloo")'), order=Order.OPTIMIZER
            )


class EarlyBroadcast(_TestRule):
    """Broadcasts `x` right before the script's init (once: idempotent): a collective that no process
    group precedes."""

    code, name, message = "DDP907", "test-early-broadcast", "broadcasts before the process group is joined"

    def run(self, ctx: Context) -> None:
        if len(ctx.facts.launch.init_calls) != 1 or ctx.facts.ranks.collectives_in(ctx.facts.module):
            return
        stmt = ctx.facts.index.site(ctx.facts.launch.init_calls[0]).stmt
        if ctx.report(stmt):
            ctx.plan.insert_before(
                stmt, ctx.plan.statements("torch.distributed.broadcast(x, src=0)"), order=Order.OPTIMIZER
            )


class AlwaysInit(_TestRule):
    """Joins the process group at the top of the entry function, whatever the script already does."""

    code, name, message = "DDP904", "test-always-init", "joins the process group"

    def run(self, ctx: Context) -> None:
        entry = ctx.facts.launch.entry
        if not isinstance(entry, cst.FunctionDef):
            return
        first = entry.body.body[0]
        if "init_process_group" in cst.Module(body=[]).code_for_node(first):
            return  # once: idempotent
        if ctx.report(first):
            stmt = ctx.plan.statements('torch.distributed.init_process_group("gloo")')
            ctx.plan.insert_before(first, stmt, order=Order.PROCESS_GROUP)


class SetDeviceFirst(_TestRule):
    """Moves `torch.cuda.set_device(...)` right above `init_process_group(...)`, whatever it reads."""

    code, name, message = "DDP905", "test-set-device-first", "set_device after init_process_group"

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for call in facts.launch.set_device_calls:
            stmt, init = facts.index.site(call).stmt, facts.launch.init_calls
            if init and facts.index.before(init[0], call) and ctx.report(stmt):
                ctx.plan.move_before(stmt, facts.index.site(init[0]).stmt, order=Order.SET_DEVICE)


class ReadsDistributedFirst(_TestRule):
    """Inserts a line reading `DISTRIBUTED` at the top of the module, before anything binds it."""

    code, name, message = "DDP906", "test-reads-distributed-first", "reads the distributed flag"

    def run(self, ctx: Context) -> None:
        body = ctx.facts.module.body
        if not any("_was_distributed" in ctx.facts.index.identifiers for _ in (0,)) and ctx.report(body[0]):
            flag = ctx.env("DISTRIBUTED")
            ctx.plan.insert_before(body[0], ctx.plan.statements(f"_was_distributed = {flag}"), order=Order.IMPORTS)


class EarlyWrap(_TestRule):
    """Wraps the model in DDP where it is defined, whether or not a process group exists (once)."""

    code, name, message = "DDP902", "test-early-wrap", "wraps the model without a process group"

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if facts.models.ddp_calls or not facts.models.trained:
            return
        model = facts.models.trained[0]
        if ctx.report(model.definition.stmt):
            ctx.plan.insert_after(
                model.definition.stmt,
                ctx.plan.statements("{m} = torch.nn.parallel.DistributedDataParallel({m})", m=model.handle),
                order=Order.OPTIMIZER,
            )


class BrokenSyntax(_TestRule):
    """Puts a statement where the first argument of `print(...)` was: the output does not parse."""

    code, name, message = "DDP903", "test-broken-syntax", "print call"

    def run(self, ctx: Context) -> None:
        for call in ctx.facts.index.calls:
            if isinstance(call.func, cst.Name) and call.func.value == "print" and call.args:
                if ctx.report(call):
                    bad = cst.parse_statement("del x\n")
                    ctx.plan.replace(call, lambda n, bad=bad: n.with_changes(args=[n.args[0].with_changes(value=bad)]))
                return


class Restless(_TestRule):
    """Adds a statement at the end of the module on every run: the output never settles."""

    code, name, message = "DDP904", "test-restless", "module end"

    def run(self, ctx: Context) -> None:
        last = ctx.facts.module.body[-1]
        if ctx.report(last):
            ctx.plan.insert_after(last, ctx.plan.statements("_restless = 0"), order=Order.OPTIMIZER)


class TwoSteps(_TestRule):
    """Adds `_step = 1` at the end of the module until there are two: settles on the second pass."""

    code, name, message = "DDP905", "test-two-steps", "module end"

    def run(self, ctx: Context) -> None:
        body = ctx.facts.module.body
        if sum(1 for s in body if assign_targets(s) == ["_step"]) >= 2:
            return
        if ctx.report(body[-1]):
            ctx.plan.insert_after(body[-1], ctx.plan.statements("_step = 1"), order=Order.OPTIMIZER)


class SilentEditor(_TestRule):
    """Offers no fix, yet guards the first print: an edit nobody asked for."""

    code, name, message = "DDP906", "test-silent-editor", "print call"
    fix = NONE

    def run(self, ctx: Context) -> None:
        for stmt in ctx.facts.module.body:
            call = expr_call(stmt)
            if call is not None and isinstance(call.func, cst.Name) and call.func.value == "print":
                ctx.report(stmt)
                ctx.plan.guard(stmt, "True")
                return


class RenameX(_TestRule):
    """Renames the module-level `x = ...` to `y = ...` (fine on its own: nothing else reads `x`)."""

    code, name, message = "DDP907", "test-rename-x", "x"

    def run(self, ctx: Context) -> None:
        for stmt in ctx.facts.module.body:
            if assign_targets(stmt) == ["x"] and ctx.report(stmt):
                ctx.plan.replace(
                    stmt, lambda n: cst.parse_statement("y = 1\n").with_changes(leading_lines=n.leading_lines)
                )
                return


class PrintX(_TestRule):
    """Prints `x` at the end of the module (fine on its own: `x` is defined)."""

    code, name, message = "DDP908", "test-print-x", "x"

    def run(self, ctx: Context) -> None:
        body = ctx.facts.module.body
        if "_shown" in ctx.facts.index.identifiers:
            return
        if "x" in ctx.facts.index.identifiers and ctx.report(body[-1]):
            ctx.plan.insert_after(body[-1], ctx.plan.statements("_shown = print(x)"), order=Order.OPTIMIZER)


__all__ = [
    "registered",
    "SecondInit",
    "EarlyWrap",
    "BrokenSyntax",
    "Restless",
    "TwoSteps",
    "SilentEditor",
    "RenameX",
    "PrintX",
]
