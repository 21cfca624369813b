"""Gradient accumulation: loops whose iterations are micro-steps (a `backward()` each, the optimizer
stepping on some of them only), which iteration steps, and which micro-steps the script runs under
`no_sync()`. Two shapes: the step under `if (i + 1) % accum == 0:` in the loop itself, and an inner
loop of micro-steps (`for micro in range(accum): ... loss.backward()`) with the step after it.

Whether a `no_sync()` covers the stepping micro-step is decided by evaluating the script's own
conditions for small accumulation counts: conditions over other names are left undecided."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ..syntax import assign_targets, assigned_value, calls_in, code_of, dotted, method_name, names_in, walk

SAMPLES = (2, 3, 4)  # accumulation counts the conditions are evaluated for
ITERATIONS = 13  # iterations of a loop that steps under a `%` test that are evaluated


@dataclass(eq=False)
class MicroLoop:
    """A loop whose iterations are micro-steps."""

    loop: cst.For | cst.While
    backward: cst.Call  # the first backward() of an iteration
    var: str | None  # the loop's counter (`i`, `micro`), when it has one
    step_test: cst.BaseExpression | None  # `(i + 1) % accum == 0` (the step under an if in the loop)
    count: str | None  # inner loop: the number of micro-steps (`accum`, `len(chunks)`)
    blocker: str | None = None  # why no `require_backward_grad_sync` line can be written for it

    def sync_when(self) -> str:
        """The condition, true on the micro-step that steps, the fix assigns to require_backward_grad_sync."""
        if self.step_test is not None:
            return code_of(self.step_test)
        return f"{self.var} == {self.count} - 1"


def micro_loops(loops, optimizers: set[str] | None = None, schedulers: set[str] | None = None) -> list[MicroLoop]:
    """Every loop of the file with one of the two accumulation shapes. Only an optimizer's step counts
    (`optimizer.step()`, `scaler.step(optimizer)`): `scheduler.step()` under `if (i + 1) % 8 == 0:`
    beside an optimizer that steps every iteration is no accumulation. `optimizers` and
    `schedulers` are the script's names for them, where known."""
    steps = _OptimizerSteps(optimizers or set(), schedulers or set())
    out = []
    for loop in loops:
        if not isinstance(loop.body, cst.IndentedBlock):
            continue
        body = list(loop.body.body)
        step_if = next((s for s in body if isinstance(s, cst.If) and _is_accum_step(s, steps)), None)
        if step_if is not None and any(steps.any_in(s) for s in body if s is not step_if):
            continue  # the optimizer also steps on every iteration
        if step_if is not None:
            backward = next(
                (c for s in body if s is not step_if for c in calls_in(s) if method_name(c) == "backward"), None
            )
            if backward is None:
                continue
            before = body[: body.index(step_if)]
            assigned = {t for s in before for n in walk(s) for t in bound(n)}
            blocker = None
            if isinstance(loop, cst.While) or names_in(step_if.test) & assigned:
                blocker = "its step condition is computed in the loop"
            var = _counter(loop)
            out.append(MicroLoop(loop, backward, var, step_if.test, None, blocker))
            continue
        inner = _inner_micro_loop(loop, body, steps)
        if inner is not None:
            out.append(inner)
    return out


class _OptimizerSteps:
    """Which `.step()` calls step an optimizer: on a name the script builds an optimizer into, or on
    any name but a scheduler's (`scaler.step(optimizer)` too)."""

    def __init__(self, optimizers: set[str], schedulers: set[str]) -> None:
        self.optimizers = optimizers
        self.schedulers = schedulers

    def __call__(self, call: cst.Call) -> bool:
        if method_name(call) != "step" or not isinstance(call.func, cst.Attribute):
            return False
        recv = dotted(call.func.value) or ""
        if recv in self.optimizers:
            return True
        return recv not in self.schedulers and "sched" not in recv.lower()

    def any_in(self, node: cst.CSTNode) -> bool:
        return any(self(c) for c in calls_in(node))


def _inner_micro_loop(
    outer: cst.For | cst.While, body: list[cst.BaseStatement], steps: _OptimizerSteps
) -> MicroLoop | None:
    """`for micro in range(accum): ... backward()` followed (in the same body) by an optimizer step."""
    for i, stmt in enumerate(body):
        if not isinstance(stmt, cst.For) or not isinstance(stmt.body, cst.IndentedBlock):
            continue
        backward = next((c for c in calls_in(stmt.body) if method_name(c) == "backward"), None)
        if backward is None or steps.any_in(stmt.body):
            continue
        if not any(steps.any_in(s) for s in body[i + 1 :]):
            continue
        var, count = _micro_count(stmt)
        blocker = None
        if var is None or count is None:
            blocker = "its micro-steps are not counted (`for micro in range(accum)` / `enumerate(chunks)`)"
        elif any(isinstance(n, (cst.Break, cst.Continue)) for n in walk(stmt.body)):
            blocker = "a micro-step may end early (break / continue)"
        else:
            assigned = {t for n in walk(stmt.body) for t in bound(n)}
            if (names_in(cst.parse_expression(count)) | {var}) & assigned:
                blocker = "its count changes inside the loop"
        return MicroLoop(stmt, backward, var, None, count, blocker)
    return None


def _micro_count(loop: cst.For) -> tuple[str | None, str | None]:
    """(`micro`, `accum`) for `for micro in range(accum)` / `range(0, accum)`; (`i`, `len(chunks)`)
    for `for i, x in enumerate(chunks)`."""
    it = loop.iter
    if not isinstance(it, cst.Call):
        return None, None
    name = dotted(it.func)
    args = [a for a in it.args if a.keyword is None and not a.star]
    if name == "range" and isinstance(loop.target, cst.Name) and len(args) == len(it.args):
        if len(args) == 1:
            return loop.target.value, code_of(args[0].value)
        if len(args) == 2 and isinstance(args[0].value, cst.Integer) and args[0].value.evaluated_value == 0:
            return loop.target.value, code_of(args[1].value)
        return loop.target.value, None
    if name == "enumerate" and len(args) == 1 == len(it.args) and dotted(args[0].value):
        target = loop.target
        if isinstance(target, cst.Tuple) and target.elements and isinstance(target.elements[0].value, cst.Name):
            return target.elements[0].value.value, f"len({dotted(args[0].value)})"
    return None, None


def _counter(loop: cst.For | cst.While) -> str | None:
    if not isinstance(loop, cst.For):
        return None
    target = loop.target
    if isinstance(target, cst.Name) and isinstance(loop.iter, cst.Call) and dotted(loop.iter.func) == "range":
        return target.value
    if (
        isinstance(target, cst.Tuple)
        and target.elements
        and isinstance(target.elements[0].value, cst.Name)
        and isinstance(loop.iter, cst.Call)
        and dotted(loop.iter.func) == "enumerate"
        and not any(a.keyword is not None for a in loop.iter.args[1:])
        and len(loop.iter.args) == 1
    ):
        return target.elements[0].value.value
    return None


def _is_accum_step(stmt: cst.If, steps: _OptimizerSteps) -> bool:
    has_mod = any(isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Modulo) for n in walk(stmt.test))
    return has_mod and steps.any_in(stmt.body) and stmt.orelse is None


def bound(node: cst.CSTNode) -> list[str]:
    """The names a statement or loop header binds."""
    if isinstance(node, cst.SimpleStatementLine):
        return assign_targets(node)
    if isinstance(node, cst.AugAssign):
        return [dotted(node.target) or ""]
    if isinstance(node, (cst.For, cst.CompFor)):
        return sorted(names_in(node.target))
    return []


def mentions_sync(node: cst.CSTNode) -> bool:
    """Does `node` decide DDP's gradient sync itself (`no_sync()`, `require_backward_grad_sync`)?"""
    return any(isinstance(n, cst.Name) and n.value in ("no_sync", "require_backward_grad_sync") for n in walk(node))


# --------------------------------------------------------------------------- where no_sync falls
class Undecided(Exception):
    """A condition over something other than the loop counter and the accumulation count."""


def unsynced_step(index, micro: MicroLoop) -> cst.CSTNode | None:
    """The `no_sync()` (or `require_backward_grad_sync = ...`) under which the last backward of a
    stepping micro-step runs, for some small accumulation count: that step's gradients are never
    averaged. None when every stepping micro-step syncs, or when that cannot be told."""
    loop = micro.loop
    backwards = [c for c in calls_in(loop.body) if method_name(c) == "backward" and _loop_of(index, c) is loop]
    try:
        decisions = [(_runs(index, c, loop), _no_sync(index, c, loop)) for c in backwards]
    except Undecided:
        return None
    symbols = set()
    for runs, (cond, _) in decisions:
        for test, _ in runs:
            symbols |= _symbols(test)
        if isinstance(cond, cst.BaseExpression):
            symbols |= _symbols(cond)
    if micro.step_test is not None:
        symbols |= _symbols(micro.step_test)
    count = cst.parse_expression(micro.count) if micro.count is not None else None
    if count is not None:
        symbols |= _symbols(count)
    symbols.discard(micro.var)
    if micro.var is None or len(symbols) > 1:
        return None
    try:
        for value in SAMPLES:
            env = dict.fromkeys(symbols, value)
            if count is not None:
                steps = [_eval(count, env) - 1]
            else:
                steps = [i for i in range(ITERATIONS) if _eval(micro.step_test, {**env, micro.var: i})]
            for i in steps:
                env[micro.var] = i
                ran = [d for d in decisions if all(bool(_eval(t, env)) is pol for t, pol in d[0])]
                if not ran:
                    continue
                cond, where = ran[-1][1]
                if cond is True or (isinstance(cond, cst.BaseExpression) and _eval(cond, env)):
                    return where
    except Undecided:
        return None
    return None


def _loop_of(index, node: cst.CSTNode) -> cst.CSTNode | None:
    for anc in index.ancestors(node):
        if isinstance(anc, (cst.For, cst.While, cst.FunctionDef)):
            return anc
    return None


def _runs(index, node: cst.CSTNode, loop: cst.CSTNode) -> list[tuple[cst.BaseExpression, bool]]:
    """The branch tests (and the outcome each needs) under which `node` runs in an iteration of `loop`."""
    out = []
    child = node
    for anc in index.ancestors(node):
        if anc is loop:
            return out
        if isinstance(anc, cst.If):
            out.append((anc.test, child is anc.body))
        elif isinstance(anc, (cst.Try, cst.While, cst.For)):
            raise Undecided
        child = anc
    return out


def _no_sync(index, node: cst.CSTNode, loop: cst.CSTNode):
    """(when the backward `node` runs without syncing: True, False or a condition; the node that
    decides it)."""
    for anc in index.ancestors(node):
        if anc is loop:
            break
        if isinstance(anc, cst.With):
            for item in anc.items:
                found = _no_sync_item(index, item.item, loop)
                if found is not None:
                    return found, item
    flag = None
    for stmt in _top_statements(index, node, loop):
        targets = assign_targets(stmt)
        if any(t.endswith(".require_backward_grad_sync") for t in targets):
            flag = stmt
    if flag is None:
        if any(isinstance(n, cst.Attribute) and n.attr.value == "require_backward_grad_sync" for n in walk(loop.body)):
            raise Undecided  # set under a branch
        return False, None
    value = assigned_value(flag)
    return cst.UnaryOperation(operator=cst.Not(), expression=value), flag  # type: ignore[arg-type]


def _no_sync_item(index, item: cst.BaseExpression, loop: cst.CSTNode):
    if isinstance(item, cst.Call) and method_name(item) == "no_sync":
        return True
    if isinstance(item, cst.IfExp):
        body, orelse = _no_sync_item(index, item.body, loop), _no_sync_item(index, item.orelse, loop)
        if body is True and orelse is None:
            return item.test
        if orelse is True and body is None:
            return cst.UnaryOperation(operator=cst.Not(), expression=item.test)
        if body is not None or orelse is not None:
            raise Undecided
        return None
    if isinstance(item, cst.Name):
        sites = [
            n for n in walk(loop.body) if isinstance(n, cst.SimpleStatementLine) and item.value in assign_targets(n)
        ]
        if len(sites) == 1:
            value = assigned_value(sites[0])
            return _no_sync_item(index, value, loop) if value is not None else None
    return None


def _top_statements(index, node: cst.CSTNode, loop: cst.CSTNode) -> list[cst.BaseStatement]:
    """The statements of the loop's own body before the one holding `node`."""
    top = node
    for anc in index.ancestors(node):
        if anc is loop.body:
            break
        top = anc
    body = list(loop.body.body)
    return body[: body.index(top)] if top in body else []


def _symbols(expr: cst.CSTNode) -> set[str]:
    """The names (and `len(x)` calls) a condition reads."""
    if isinstance(expr, cst.Name):
        return set() if expr.value in ("True", "False") else {expr.value}
    if isinstance(expr, cst.Attribute):
        return {dotted(expr)} if dotted(expr) else set()  # type: ignore[return-value]
    if isinstance(expr, cst.Call):
        return {code_of(expr)} if dotted(expr.func) == "len" else set()
    if isinstance(expr, (cst.BinaryOperation, cst.BooleanOperation)):
        return _symbols(expr.left) | _symbols(expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return _symbols(expr.expression)
    if isinstance(expr, cst.Comparison):
        return _symbols(expr.left).union(*(_symbols(c.comparator) for c in expr.comparisons))
    return set()


_BINARY = {
    cst.Add: lambda a, b: a + b,
    cst.Subtract: lambda a, b: a - b,
    cst.Multiply: lambda a, b: a * b,
    cst.FloorDivide: lambda a, b: a // b,
    cst.Modulo: lambda a, b: a % b,
}
_COMPARE = {
    cst.Equal: lambda a, b: a == b,
    cst.NotEqual: lambda a, b: a != b,
    cst.LessThan: lambda a, b: a < b,
    cst.LessThanEqual: lambda a, b: a <= b,
    cst.GreaterThan: lambda a, b: a > b,
    cst.GreaterThanEqual: lambda a, b: a >= b,
}


def _eval(expr, env: dict[str, int]):
    """The value of a small integer expression over `env`; Undecided for anything else."""
    if isinstance(expr, cst.Integer):
        return expr.evaluated_value
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    if isinstance(expr, (cst.Name, cst.Attribute)) or (isinstance(expr, cst.Call) and dotted(expr.func) == "len"):
        key = code_of(expr) if isinstance(expr, cst.Call) else dotted(expr)
        if key in env:
            return env[key]
        raise Undecided
    if isinstance(expr, cst.BinaryOperation) and type(expr.operator) in _BINARY:
        right = _eval(expr.right, env)
        if right == 0 and isinstance(expr.operator, (cst.Modulo, cst.FloorDivide)):
            raise Undecided
        return _BINARY[type(expr.operator)](_eval(expr.left, env), right)
    if isinstance(expr, cst.UnaryOperation):
        value = _eval(expr.expression, env)
        if isinstance(expr.operator, cst.Not):
            return not value
        if isinstance(expr.operator, cst.Minus):
            return -value
        raise Undecided
    if isinstance(expr, cst.BooleanOperation):
        left = _eval(expr.left, env)
        if isinstance(expr.operator, cst.And):
            return left and _eval(expr.right, env)
        return left or _eval(expr.right, env)
    if isinstance(expr, cst.Comparison):
        left = _eval(expr.left, env)
        for comp in expr.comparisons:
            if type(comp.operator) not in _COMPARE:
                raise Undecided
            right = _eval(comp.comparator, env)
            if not _COMPARE[type(comp.operator)](left, right):
                return False
            left = right
        return True
    raise Undecided


__all__ = ["MicroLoop", "bound", "mentions_sync", "micro_loops", "unsynced_step"]
