"""Loaders every rank iterates whole while what is summed over them is reduced over the ranks (DDP212):
a loop over the loader that trains nothing and adds into a name (`correct += (pred == y).sum()`), then,
after that loop, a collective handed the name (`dist.all_reduce(correct)`, or a helper that issues
one, `reduce_value(correct, average=False)`). The loop runs where the loader is built, in a function of
the script it is handed to, or in a function or method of the script's own modules (reduced_sums.py).
Each rank counts the whole set and the reduction adds the ranks' counts: WORLD_SIZE times the total."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from ..syntax import calls_in, code_of, dotted, kwarg, positional, walk
from .data import Loader
from .model_params import ast_params
from .reduced_sums import NO_GRAD, SUM_OPS, ast_averages, ast_call_averages, divided_after


@dataclass(frozen=True)
class Summed:
    loader: Loader
    where: str  # what sums and reduces: "evaluate() in train_eval_utils.py", "the loop at line 40"
    # the loop runs under no_grad and issues no collective at each batch: shards that differ by one
    # sample leave no rank waiting (else only equal shards would do, which repeat samples)
    quiet: bool


def summed_loaders(facts) -> list[Summed]:
    """The loaders no training loop draws from whose sums are reduced over the ranks, once each."""
    data = facts.data
    training = {id(loader.site.node) for loader, _ in data.training_loaders}
    out: list[Summed] = []
    seen: set[int] = set()
    for loader in data.loaders:
        node = loader.site.node
        if id(node) in training or id(node) in seen or loader.target is None or loader.binding is None:
            continue
        found = _here(facts, loader)
        if found is None:
            handed = data.handoffs.summed_by(loader.target, loader.binding)
            found = (handed[0].where, handed[1]) if handed is not None else None
        if found is not None:
            seen.add(id(node))
            out.append(Summed(loader, *found))
    return out


def _here(facts, loader: Loader) -> tuple[str, bool] | None:
    """A loop of this file over `loader` (where it is built, or in a function handed it) whose sums a
    collective after the loop reduces: (how a message names that code, whether it runs quietly)."""
    index = facts.index
    for loop in index.loops:
        if type(loop) is not cst.For or not facts.data.iterates(loop, loader) or facts.training.trains_in(loop):
            continue
        sums = {n.target.value for n in walk(loop.body) if type(n) is cst.AugAssign and type(n.target) is cst.Name}
        if not sums:
            continue
        scope = index.scope_of(loop)
        body = scope.body if isinstance(scope, cst.FunctionDef) else scope
        for call in calls_in(body):
            if index.contains(loop, call) or not index.before(loop, call):
                continue
            handed = [a.value for a in call.args]
            if not any(type(v) is cst.Name and v.value in sums for v in handed) or not _sums(facts, call):
                continue
            tree = _ast_def(facts, scope) if isinstance(scope, cst.FunctionDef) else index.ast_tree
            if tree is None or divided_after(tree, index.position(loop).end.line, sums):
                return None  # maybe averaged over the ranks: whole-set values stay what they are
            line = index.position(loop).start.line
            where = f"{scope.name.value}()" if isinstance(scope, cst.FunctionDef) else f"the loop at line {line}"
            return where, _no_grad(facts, loop) and not facts.ranks.collectives_in(loop.body)
    return None


def _sums(facts, call: cst.Call) -> bool:
    """Does `call` add up its arguments over the ranks: a collective that sums (`dist.all_reduce(x)`), or a
    function of this file or of the script's modules that issues one and does not divide what it is
    handed by the world size (`reduce_value(x, average=False)`, where `if average: value /= world_size`)?"""
    op = facts.ranks.collective_op(call)
    if op is None:
        return False
    if not op.endswith("()"):  # torch.distributed's own
        given = kwarg(call, "op") or positional(call, 1)
        return given is None or (dotted(given.value) or "").split(".")[-1] in SUM_OPS
    callee = facts.index.callee_of(call)
    if isinstance(callee, cst.FunctionDef):
        func = _ast_def(facts, callee)
        if func is None:
            return False
        params = ast_params(func, method=False)
        averages = ast_averages(func, params)
    else:
        target = facts.modules.target_of(call.func)
        if target is None or target.summary is None or target.member is None:
            return False
        params = target.summary.params.get(target.member, [])
        averages = target.summary.averages.get(target.member, {})
    try:  # read as Python reads it, as the summaries read their modules' calls
        parsed = ast.parse(code_of(call).strip(), mode="eval").body
    except SyntaxError:
        return False
    return isinstance(parsed, ast.Call) and not ast_call_averages(parsed, params, averages)


def _ast_def(facts, func: cst.FunctionDef) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """Python's parse of the function `func` of this file (same name, same `def` line)."""
    line = facts.index.position(func.name).start.line
    for node in ast.walk(facts.index.ast_tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func.name.value:
            if node.lineno == line:
                return node
    return None


def _no_grad(facts, loop: cst.For) -> bool:
    """Under `with torch.no_grad():` (or inference_mode), or in a function decorated with it."""
    for up in facts.index.ancestors(loop):
        if isinstance(up, cst.With) and any(_grad_off(i.item) for i in up.items):
            return True
        if isinstance(up, cst.FunctionDef) and any(_grad_off(d.decorator) for d in up.decorators):
            return True
    return False


def _grad_off(expr: cst.BaseExpression) -> bool:
    target = expr.func if isinstance(expr, cst.Call) else expr
    return (dotted(target) or "").split(".")[-1] in NO_GRAD


__all__ = ["Summed", "summed_loaders"]
