"""Which rank an expression holds, judged by what it is bound to rather than by its name: the global
rank (`dist.get_rank()`, RANK), the local one (LOCAL_RANK, `rank % n`, an mp.spawn target's process
index), a constant (a single process's fallback), or unknown. DDP005 reads it to tell a device
picked by the global rank from one picked by the local rank."""

from __future__ import annotations

import re

import libcst as cst

from ..syntax import assigned_value, code_of, dotted, kwarg, positional

GLOBAL, LOCAL, CONSTANT = "global", "local", "constant"
ENV_RANK = re.compile(r"""(?:environ(?:\.get\(|\[)|getenv\()\s*['"](LOCAL_RANK|RANK)['"]""")


def rank_kind(facts, expr: cst.BaseExpression, depth: int = 0) -> str | None:
    """Which rank `expr` holds, by what it is bound to rather than by its name: GLOBAL (`dist.get_rank()`,
    the RANK variable), LOCAL (LOCAL_RANK, `rank % n`, an mp.spawn target's process index), CONSTANT
    (a single process's fallback), or None when its bindings disagree or say nothing. A name follows
    its assignments in its function (else at module level), a parameter the arguments its callers
    pass; constants among several bindings are the fallback of a run without the environment."""
    if depth > 4:
        return None
    if isinstance(expr, (cst.Integer, cst.SimpleString)) or (isinstance(expr, cst.Name) and expr.value == "None"):
        return CONSTANT
    if isinstance(expr, cst.UnaryOperation):
        return rank_kind(facts, expr.expression, depth + 1) if isinstance(expr.expression, cst.Integer) else None
    if isinstance(expr, cst.IfExp):
        return _agree([rank_kind(facts, expr.body, depth + 1), rank_kind(facts, expr.orelse, depth + 1)])
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
        return LOCAL  # `rank % torch.cuda.device_count()`: the index on this node
    if isinstance(expr, (cst.Call, cst.Subscript)):
        return _source_kind(facts, expr, depth)
    name = dotted(expr)
    if name is None:
        return None
    env = facts.launch.env_names
    if name == env.get("RANK"):
        return GLOBAL
    if name == env.get("LOCAL_RANK") or name.rsplit(".", 1)[-1].lower() in ("local_rank", "localrank"):
        return LOCAL
    scope = facts.index.scope_of(expr)
    sites = facts.names.assignments(scope, name)
    if not sites and isinstance(scope, cst.FunctionDef) and name in param_names(scope):
        return _param_kind(facts, scope, name, depth)
    sites = sites or facts.names.assignments(facts.module, name)
    return _agree([_value_kind(facts, s.stmt, depth) for s in sites])


def _source_kind(facts, expr: cst.BaseExpression, depth: int) -> str | None:
    """A call or subscript that reads a rank: `dist.get_rank()`, `int(os.environ["LOCAL_RANK"])`."""
    if isinstance(expr, cst.Call):
        q = facts.names.call_qual(expr) or dotted(expr.func) or ""
        if q.endswith("get_local_rank"):
            return LOCAL
        if q.endswith("distributed.get_rank") and not expr.args:
            return GLOBAL
        if q == "int" and expr.args:
            return rank_kind(facts, expr.args[0].value, depth + 1)
        if q not in ("os.environ.get", "os.getenv"):
            return None
    elif not (dotted(expr.value) or "").endswith("environ"):  # type: ignore[attr-defined]
        return None
    m = ENV_RANK.search(code_of(expr))
    if m is None:
        return None
    return LOCAL if m.group(1) == "LOCAL_RANK" else GLOBAL


def _value_kind(facts, stmt: cst.CSTNode, depth: int) -> str | None:
    value = assigned_value(stmt)
    return rank_kind(facts, value, depth + 1) if value is not None else None


def param_names(func: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)]


def _param_kind(facts, func: cst.FunctionDef, name: str, depth: int) -> str | None:
    """A parameter's rank: the process index of an mp.spawn target, else what its callers pass."""
    positional_names = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    if func in {t for t, _ in spawns(facts)} and positional_names and positional_names[0] == name:
        return LOCAL  # (several nodes: the global rank built from it is spawned_ranks' business)
    pos = positional_names.index(name) if name in positional_names else -1
    if pos >= 0 and facts.index.enclosing(func, cst.ClassDef) is not None:
        pos -= 1  # self
    kinds = []
    for call in facts.index.callers_of(func):
        arg = kwarg(call, name) or (positional(call, pos) if pos >= 0 else None)
        kinds.append(rank_kind(facts, arg.value, depth + 1) if arg is not None else None)
    return _agree(kinds)


def _agree(kinds: list[str | None]) -> str | None:
    """The one rank the bindings give (constants aside); None when they disagree or give none."""
    found = {k for k in kinds if k != CONSTANT}
    if not kinds or None in found or len(found) > 1:
        return None
    return found.pop() if found else CONSTANT


def judged_at_callers(facts, expr: cst.BaseExpression) -> bool:
    """Is `expr` a parameter of a function of this file that others call (`def pick(rank)`)? Its callers'
    arguments are the uses to judge, one finding each, not the parameter inside."""
    func = facts.index.enclosing(expr, cst.FunctionDef)
    return (
        isinstance(expr, cst.Name)
        and isinstance(func, cst.FunctionDef)
        and expr.value in param_names(func)
        and not facts.names.assignments(func, expr.value)
        and bool(facts.index.callers_of(func))
    )


def spawns(facts):
    """(target function, spawn call) for every mp.spawn of a function of this file."""
    for call in facts.launch.spawn_calls:
        arg = positional(call, 0) or kwarg(call, "fn")
        func = facts.index.func_by_name.get(dotted(arg.value) or "") if arg is not None else None
        if func is not None and func.params.params:
            yield func, call


__all__ = ["CONSTANT", "GLOBAL", "LOCAL", "judged_at_callers", "param_names", "rank_kind", "spawns"]
