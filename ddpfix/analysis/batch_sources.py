"""Training batches the script asks an object of its own modules for, one call at a time, where that
object draws them with next() from DataLoaders its class builds for itself:

    train_dataset = Batch_Balanced_Dataset(opt)    # __init__: one shuffled DataLoader per dataset,
    while True:                                    #   and iter() of each
        images, labels = train_dataset.get_batch() # next() of each; iter() again on StopIteration
        ...
        cost.backward()

or from a DataLoader such an object keeps as an attribute, which the script's training loop iterates:

    dataset = Cifar(args.batch_size, args.threads)   # __init__: self.train = DataLoader(..., shuffle=True)
    for epoch in range(args.epochs):
        for batch in dataset.train:
            ...

The script holds no loader to shard and the class trains nothing itself (class_loaders.py's case), so
the loaders are sharded where the class builds them; each pass the class starts again over one of them
moves its sampler's epoch on, and a loop of the script over the attribute sets it from its epoch loop
(batch_source_loaders.py)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from ..syntax import assigned_value, dotted, walk
from .ast_reading import ast_dotted
from .class_loaders import sharded
from .config_factory import parsed
from .foreign_streams import UNWRAPPED, resolved_calls


@dataclass(frozen=True)
class BatchSource:
    at: cst.CSTNode  # where the script draws: `train_dataset.get_batch()`, or the `dataset.train` it iterates
    path: Path  # the module of the class
    cls: str
    method: str  # `get_batch`, or the attribute: `train`
    loaders: tuple[int, ...]  # lines of the DataLoader(...) calls the class builds, with no DistributedSampler
    restarts: tuple[int, ...]  # lines of the iter(...) calls that start a new pass over one of them
    problem: str | None = None  # why the fix cannot shard them there
    loop: cst.For | None = None  # the script's loop over the attribute `method` names (None: a drawing method)


def batch_sources(facts) -> list[BatchSource]:
    """Each class of the script's modules the script's training loops draw batches from that way, once,
    at the first such call or loop."""
    out: list[BatchSource] = []
    seen: set[tuple[Path, str, str]] = set()
    index = facts.index

    def add(node: cst.CSTNode, holder: cst.Name, member: str, find, loop: cst.For | None = None) -> None:
        for owner in resolved_calls(facts, holder.value, node) or _outer_calls(facts, holder.value, node):
            target = facts.modules.target_of(owner.func)
            if target is None or target.summary is None or target.member not in target.summary.classes:
                continue
            key = (target.summary.path, target.member, member)
            if key in seen:
                continue
            found = find(target.summary.path, target.member, member)
            if found is not None:
                seen.add(key)
                out.append(BatchSource(node, target.summary.path, target.member, member, *found, loop=loop))

    for loop in index.loops:
        if not facts.training.trains_in(loop.body):
            continue
        if type(loop) is cst.For:  # `for batch in dataset.train:`
            over = _unwrapped(loop.iter)
            if type(over) is cst.Attribute and type(over.value) is cst.Name:
                add(over, over.value, over.attr.value, _kept_loader, loop)
        scope = index.scope_of(loop)
        for call in walk(loop.body):
            if type(call) is not cst.Call or type(call.func) is not cst.Attribute:
                continue
            holder = call.func.value
            if type(holder) is not cst.Name or index.scope_of(call) is not scope:
                continue
            add(call, holder, call.func.attr.value, _source)
    return out


def _outer_calls(facts, name: str, at: cst.CSTNode) -> list[cst.Call]:
    """The calls an enclosing scope assigns `name` (a global, or a local of the function around a nested
    one) where the function around `at` reads it without binding it itself."""
    index = facts.index
    func = index.scope_of(at)
    if type(func) is not cst.FunctionDef or name in {p.name.value for p in func.params.params}:
        return []
    if facts.names.assignments(func, name):
        return []
    values = [assigned_value(site.stmt) for site in facts.names.assignments(index.scope_of(func), name)]
    return [v for v in values if type(v) is cst.Call]


def _unwrapped(node: cst.BaseExpression) -> cst.BaseExpression:
    """What `enumerate(x)`, `tqdm(x)`, `iter(x)` go over: x."""
    while type(node) is cst.Call and dotted(node.func) in UNWRAPPED and node.args:
        node = node.args[0].value
    return node


def _kept_loader(path: Path, cls: str, attr: str) -> tuple[tuple[int, ...], tuple[int, ...], str | None] | None:
    """(the lines, no restarts, problem) when methods of the class set `self.<attr> = DataLoader(...)`
    (in one place, or in each branch of a test) with no DistributedSampler; None otherwise."""
    tree = parsed(path)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None) if tree else None
    if node is None:
        return None
    kept = [
        (m, n.value)
        for m in node.body
        if isinstance(m, ast.FunctionDef)
        for n in ast.walk(m)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and ast_dotted(n.targets[0]) == f"self.{attr}"
        and isinstance(n.value, ast.Call)
        and _loader(n.value)
    ]
    unsharded = [(m, c) for m, c in kept if not sharded(m, c)]
    if not unsharded:
        return None
    elsewhere = next((m.name for m, _ in unsharded if m.name != "__init__"), None)
    problem = None if elsewhere is None else f"{cls}.{elsewhere}() builds it each time it is called"
    return tuple(sorted(c.lineno for _, c in unsharded)), (), problem


def _source(path: Path, cls: str, method: str) -> tuple[tuple[int, ...], tuple[int, ...], str | None] | None:
    """(unsharded loader lines, restart lines, problem) when `cls.method` draws with next() from DataLoaders
    the class builds (a loader it keeps for anything else, a validation loader, is not one); None
    otherwise."""
    tree = parsed(path)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None) if tree else None
    if node is None:
        return None
    methods = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
    drawing = methods.get(method)
    if drawing is None or not _draws(drawing, methods):
        return None
    reading = [drawing, *_callees(drawing, methods)]
    read = {ast_dotted(n) for m in reading for n in ast.walk(m) if isinstance(n, ast.Attribute)}
    built = [(m, c) for m in methods.values() for c in ast.walk(m) if isinstance(c, ast.Call) and _loader(c)]
    drawn = [(m, c) for m, c in built if m in reading or _holders(m, c) & read]  # built where it is drawn, or kept
    unsharded = [(m, c) for m, c in drawn if not sharded(m, c)]
    if not unsharded:
        return None
    problem = None
    elsewhere = next((m.name for m, _ in unsharded if m.name != "__init__"), None)
    if elsewhere is not None:
        problem = f"{cls}.{elsewhere}() builds a DataLoader each time it is called"
    restarts = tuple(sorted(c.lineno for m in reading if m.name != "__init__" for c in ast.walk(m) if _iter_call(c)))
    return tuple(sorted(c.lineno for _, c in unsharded)), restarts, problem


def _callees(method: ast.FunctionDef, methods: dict[str, ast.FunctionDef]) -> list[ast.FunctionDef]:
    """The methods of the class `method` calls on self."""
    out = []
    for c in ast.walk(method):
        name = ast_dotted(c.func) if isinstance(c, ast.Call) else None
        callee = methods.get(name[5:]) if name and name.startswith("self.") and name.count(".") == 1 else None
        if callee is not None and callee is not method and callee not in out:
            out.append(callee)
    return out


def _holders(method: ast.FunctionDef, call: ast.Call) -> set[str]:
    """The attributes of self that keep the loader `call` builds in `method`, or an iterator of it:
    `self.loader = DataLoader(...)`, `self.loaders.append(loader)`, `self.iters.append(iter(loader))`."""
    target = next(
        (ast_dotted(n.targets[0]) for n in ast.walk(method) if isinstance(n, ast.Assign) and n.value is call), None
    )
    if target is None:
        return set()
    out = {target} if target.startswith("self.") else set()

    def keeps(value: ast.AST) -> bool:
        if isinstance(value, ast.Call) and _iter_call(value):
            value = value.args[0] if value.args else value.func.value  # type: ignore[attr-defined]
        return ast_dotted(value) == target

    for n in ast.walk(method):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "append" and n.args:
            holder = ast_dotted(n.func.value) or ""
            if holder.startswith("self.") and keeps(n.args[0]):
                out.add(holder)
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and keeps(n.value):
            holder = ast_dotted(n.targets[0]) or ""
            if holder.startswith("self."):
                out.add(holder)
    return out


def _draws(method: ast.FunctionDef, methods: dict[str, ast.FunctionDef]) -> bool:
    """Does `method` call next() (or `.__next__()`), itself or in a method of the class it calls?"""
    return any(_calls_next(m) for m in (method, *_callees(method, methods)))


def _calls_next(method: ast.FunctionDef) -> bool:
    names = (ast_dotted(c.func) or "" for c in ast.walk(method) if isinstance(c, ast.Call))
    return any(name == "next" or name.endswith(".__next__") for name in names)


def _loader(call: ast.Call) -> bool:
    return (ast_dotted(call.func) or "").split(".")[-1] == "DataLoader"


def _iter_call(node: ast.AST) -> bool:
    """`iter(x)` or `x.__iter__()`."""
    if not isinstance(node, ast.Call):
        return False
    name = ast_dotted(node.func) or ""
    return (name == "iter" and len(node.args) == 1) or (name.endswith(".__iter__") and not node.args)


__all__ = ["BatchSource", "batch_sources"]
