"""Batch indices drawn at random in the training loop (DDP209): where a draw is one batch's, and
whether the script seeds its generators (Python's `random`, or any global one) alike on every rank."""

from __future__ import annotations

import libcst as cst

from ..syntax import assigned_value, dotted, single_small, walk


def seeds_random_alike(facts) -> bool:
    """Does the script seed Python's `random` with a value that is the same on every rank? (Unseeded,
    each process draws from its own stream.)"""
    return any(not facts.ranks.mentions_rank(c) for c in facts.names.calls_matching(lambda q: q == "random.seed"))


def seed_calls(facts) -> list[cst.Call]:
    """The script's calls of a function named `*seed*` (`torch.manual_seed`, `np.random.seed`,
    `set_seed(...)`); a method of a generator built in place (`torch.Generator().manual_seed(0)`) seeds
    only that generator and is none."""
    return [c for c in facts.index.calls if "seed" in (dotted(c.func) or "").split(".")[-1].lower()]


def seeds_alike(facts) -> bool:
    """Does the script seed a global generator with a value that is the same on every rank (a seed call
    whose arguments do not mention the rank)?"""
    return any(not facts.ranks.mentions_rank(c) for c in seed_calls(facts))


def draws_batch(facts, call: cst.Call, loops: list[cst.For]) -> bool:
    """A draw of batch indices: bound to a name the same function then indexes data with, in a
    training loop or in a function such a loop calls."""
    stmt = facts.index.site(call).stmt
    if assigned_value(stmt) is not call:
        return False
    small = single_small(stmt)
    target = small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 else None
    if not isinstance(target, cst.Name):
        return False
    scope = facts.index.scope_of(call)
    if not indexes_with(facts, scope, target.value, stmt):
        return False
    if any(facts.index.contains(loop.body, call) for loop in loops):
        return True
    if isinstance(scope, cst.FunctionDef):
        return any(any(facts.index.contains(loop.body, c) for loop in loops) for c in facts.index.callers_of(scope))
    return False


def indexes_with(facts, scope: cst.CSTNode, name: str, after: cst.CSTNode) -> bool:
    """Is `name` used after `after` as an index (`x[ix]`) or as what a loop or comprehension walks
    (`[data[i:i + n] for i in ix]`)?"""
    for node in walk(scope):
        if isinstance(node, cst.SubscriptElement) and any(
            isinstance(n, cst.Name) and n.value == name for n in walk(node)
        ):
            if facts.index.before(after, node):
                return True
        if isinstance(node, (cst.CompFor, cst.For)) and isinstance(node.iter, cst.Name) and node.iter.value == name:
            if facts.index.before(after, node):
                return True
    return False


__all__ = ["draws_batch", "indexes_with", "seed_calls", "seeds_alike", "seeds_random_alike"]
