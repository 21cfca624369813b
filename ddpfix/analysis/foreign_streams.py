"""Training loops of a script that draw their batches from an object no rule
shards: an instance of a batch-iterator class, or what a method or function of the script's own code
returns, where that code never builds a DataLoader (`train_loader = TextClassDataLoader(path, ...)`
handed to `train()`, `for X, Y in data.get_batches(X, Y, batch_size, True)` over a class of utils.py
that cuts batches from a `torch.randperm` itself). After the conversion every rank would train on
the same batches (as it does already in a distributed script), and no rule knows how to split such an object: DDP209 says so (the contract's
invariant 3) rather than report a conversion done.

What is read: the loop's iterable (through `enumerate`, `tqdm`, `iter`), a name bound to it before the
loop in the same function, or, for a parameter, the argument each caller of the function in this file
hands it. What is left alone: anything that reaches a DataLoader (a DataLoader or a loader factory of
the rules, a class or function whose code names `DataLoader`, an object built from a known loader),
a value that depends on the rank, and code out of sight (a library's).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from ..syntax import code_of, dotted, kwarg, positional, walk
from .config_factory import parsed
from .method_samples import sampled_names

UNWRAPPED = ("enumerate", "tqdm", "tqdm.tqdm", "iter")


@dataclass(frozen=True)
class UnknownStream:
    """A training loop over batches no rule shards: `node` the loop's iterable, `what` where they come
    from, `same` what follows, `loop` the loop, `cut` the function's parameters the batches are taken
    from, to cut by rank before the loop (None: nothing that can be cut there; reported only)."""

    node: cst.CSTNode
    what: str
    same: str
    loop: cst.For
    cut: list[str] | None

    @property
    def message(self) -> str:
        return (
            f"training batches come from {self.what}: not a DataLoader, and no rule shards it, so {self.same}; give "
            "each rank its own part of the data before it is built (its samples [RANK::WORLD_SIZE], the same number "
            "of batches on every rank)"
        )


def unknown_streams(facts) -> Iterator[UnknownStream]:
    """Each training loop over such an object."""
    distributed = facts.launch.init_calls or facts.launch.joins_elsewhere
    data = facts.data
    known = {loader.target for loader in data.loaders} | {f.target for f in data.foreign}
    for loop in facts.index.loops:
        if not isinstance(loop, cst.For) or not facts.training.trains_in(loop.body):
            continue
        scope = facts.index.scope_of(loop)
        if isinstance(scope, cst.FunctionDef) and any(
            facts.ranks.depends_on_rank(a.value) for c in facts.index.callers_of(scope) for a in c.args
        ):
            continue  # handed data cut by rank
        for value, name in _values(facts, loop):
            if any(facts.ranks.depends_on_rank(a.value) for a in value.args) or _mentions(value, known):
                continue
            found = _builder(facts, value)
            if found is None:
                continue
            built, method = found
            what = f"{name}, which {built} builds" if name else f"{code_of(value)} ({built})"
            same = (
                "every rank trains on the same batches"
                if distributed
                else "after the conversion every rank would train on the same batches"
            )
            cut = _cut(facts, loop, value, method) if name is None and method is not None else None
            yield UnknownStream(loop.iter, what, same, loop, cut)
            break


def _values(facts, loop: cst.For) -> list[tuple[cst.Call, str | None]]:
    """The calls whose result the loop iterates, with the name it is known by in the loop (None: the
    loop iterates the call itself)."""
    it = loop.iter
    while isinstance(it, cst.Call) and dotted(it.func) in UNWRAPPED and it.args:
        it = it.args[0].value
    if isinstance(it, cst.Call):
        return [(it, None)]
    name = dotted(it)
    if name is None or "." in name:
        return []
    return [(value, name) for value in resolved_calls(facts, name, loop)]


def resolved_calls(facts, name: str, at: cst.CSTNode) -> list[cst.Call]:
    """The calls whose result `name` holds at `at`: its binding before `at` in the same function, or, for
    a parameter of that function, what each caller in this file hands it (by the caller's binding)."""
    index = facts.index
    scope = index.scope_of(at)
    value = facts.names.value_before(scope, name, at)
    if value is not None:
        return [value] if isinstance(value, cst.Call) else []
    if not isinstance(scope, cst.FunctionDef):
        return []
    params = [p.name.value for p in scope.params.params]
    if name not in params:
        return []
    out = []
    for call in index.callers_of(scope):
        given = positional(call, params.index(name)) or kwarg(call, name)
        arg = given.value if given is not None else None
        handed = dotted(arg) if arg is not None else None
        if isinstance(arg, cst.Call):
            out.append(arg)
        elif handed is not None and "." not in handed:
            value = facts.names.value_before(index.scope_of(call), handed, call)
            if isinstance(value, cst.Call):
                out.append(value)
    return out


def _mentions(value: cst.Call, known: set[str | None]) -> bool:
    """Is the object built from a loader the rules know (`BatchIterator(train_loader)`)?"""
    return any(isinstance(n, cst.Name) and n.value in known for n in walk(value))


def _builder(facts, value: cst.Call) -> tuple[str, tuple[ast.Module, str] | None] | None:
    """`Class()` or `module.py's function()` where the code that makes the batches is the script's own
    and names no DataLoader, with, for a method of an instance of such a class, the tree of its module
    and the class; None otherwise (a library's, a loader factory, code that builds a loader)."""
    func = value.func
    target = facts.modules.target_of(func)
    if target is not None and target.summary is not None and target.member is not None:
        summary, member = target.summary, target.member
        if member not in summary.classes and summary.returns.get(member) is not None:
            return None  # a loader factory: DDP201's
        where = _unless_loader(parsed(summary.path), member, f"{member}() of {summary.path.name}")
        return (where, None) if where is not None else None
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        method = _method(facts, value)
        return (method[0], method[1:]) if method is not None else None
    own = _own(facts, dotted(func))
    return (f"{own.name.value}()", None) if own is not None else None


def _method(facts, value: cst.Call) -> tuple[str, ast.Module, str] | None:
    """For `data.get_batches(...)`, a method of an instance of a class of the script or its modules that
    names no DataLoader: (where it is, the tree of its module, the class)."""
    func = value.func
    assert isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
    for owner in resolved_calls(facts, func.value.value, value):
        if any(facts.ranks.depends_on_rank(a.value) for a in owner.args):
            return None
        target = facts.modules.target_of(owner.func)
        if target is not None and target.summary is not None and target.member in target.summary.classes:
            where = f"{target.member}.{func.attr.value}() of {target.summary.path.name}"
            tree = parsed(target.summary.path)
            found = _unless_loader(tree, target.member, where)
            return (found, tree, target.member) if found is not None and tree is not None else None
        own = _own(facts, dotted(owner.func))
        if isinstance(own, cst.ClassDef):
            return f"{own.name.value}.{func.attr.value}()", ast.parse(code_of(own)), own.name.value
    return None


def _cut(facts, loop: cst.For, value: cst.Call, method: tuple[ast.Module, str]) -> list[str] | None:
    """The parameters of the function around `loop` that `value` (the loop's own iterable, a method of
    the class `method` names in its module's tree) takes its samples from, each to be cut by rank right
    before the loop; None where that would not hold: a name it samples is bound in the function before the loop
    or is none of its parameters, the function reads it anywhere but in the loop's iterable (a number
    computed on the whole data would then be computed on this rank's part; the loop's own target
    rebinding it is fine), or the loop runs inside another (it would be cut again each pass)."""
    scope = facts.index.scope_of(loop)
    if not isinstance(scope, cst.FunctionDef):
        return None
    assert isinstance(value.func, cst.Attribute)
    names = sampled_names(method[0], method[1], value.func.attr.value, value)
    params = {p.name.value for p in scope.params.params}
    if names is None or any(n not in params or facts.names.value_before(scope, n, loop) is not None for n in names):
        return None
    if any(_read_elsewhere(facts, scope, loop, n) for n in names):
        return None
    outer = [o for o in facts.index.loops if o is not loop and _inside(facts, loop, o, scope)]
    return None if outer else names


def _read_elsewhere(facts, scope: cst.FunctionDef, loop: cst.For, name: str) -> bool:
    """Does the function use `name` outside the loop's iterable: anywhere, or, where the loop's target
    rebinds it (`for X, Y in data.get_batches(X, Y, ...)`), before the loop (`n = len(X)`, which would
    count this rank's part once cut)?"""
    rebound = any(isinstance(n, cst.Name) and n.value == name for n in walk(loop.target))
    start = facts.index.position(loop).start.line
    in_iter = {id(n) for n in walk(loop.iter)}
    return any(
        isinstance(n, cst.Name)
        and n.value == name
        and id(n) not in in_iter
        and (not rebound or facts.index.position(n).start.line < start)
        for n in walk(scope.body)
    )


def _inside(facts, node: cst.CSTNode, loop: cst.CSTNode, scope: cst.FunctionDef) -> bool:
    """Is `node` in `loop`'s body, both in `scope`?"""
    return facts.index.scope_of(loop) is scope and any(n is node for n in walk(loop))


def _own(facts, name: str | None) -> cst.ClassDef | cst.FunctionDef | None:
    """The script's own module-level class or function `name`, unless its code names DataLoader."""
    for stmt in facts.module.body:
        if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)) and stmt.name.value == name:
            if any(isinstance(n, cst.Name) and n.value == "DataLoader" for n in walk(stmt)):
                return None
            return stmt
    return None


def _unless_loader(tree: ast.Module | None, member: str, where: str) -> str | None:
    if tree is None:
        return None
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name == member:
            if any(_last(n) == "DataLoader" for n in ast.walk(node)):
                return None
            if isinstance(node, ast.ClassDef) and any("Loader" in _last(b) for b in node.bases):
                return None  # a subclass of a loader
            return where
    return None


def _last(node: ast.AST) -> str:
    """The name a node ends with (`data.DataLoader`, `DataLoader`: "DataLoader"); "" for anything else."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


__all__ = ["UnknownStream", "resolved_calls", "unknown_streams"]
