"""The training DataLoaders a class of the script's own modules builds for itself, read from its
module as the analysis sees it (as a fix leaves it, within `stamps.overlaid`):

    class Solver:
        def __init__(self, args):
            self.net = Net()
            self.optim = torch.optim.Adam(self.net.parameters())
            self.data_loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)

        def train(self):
            while step < self.max_iter:
                for x in self.data_loader:
                    ...
                    loss.backward()

A loader is the class's own when a method of the class builds it, with no DistributedSampler yet (`self.data_loader = DataLoader(...)`,
or a local `loader = DataLoader(...)` in the method that loops over it) and a loop of the class over it
trains: its body calls `backward()`, itself or through a method of the class it calls (or the method
draws its batches with next() from `iter(loader)` in a loop that trains).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .ast_reading import ast_dotted
from .config_factory import parsed
from .factory_classes import iterates
from .module_summary import LOADER, SAMPLER
from .returns import Built

TRAINS = frozenset({"backward"})


@dataclass(frozen=True)
class OwnLoader:
    path: Path
    cls: str
    reach: str  # how the training loop names it: `self.data_loader`, or a local of `method`
    method: str  # the method whose loop trains on it
    line: int  # of its DataLoader(...) call
    stream: bool = False  # it draws with replacement (`sampler=RandomSampler(ds, replacement=True, ...)`): no epochs
    function: bool = False  # `cls` is a module-level function, its own one method (ClassSummary.function)

    @property
    def member(self) -> str:
        """The function whose loop trains on it, as module_epochs.function_of finds it."""
        return self.method if self.function else f"{self.cls}.{self.method}"


def own_loaders(path: Path, cls: str, function: bool = False) -> list[OwnLoader]:
    """The loaders the class `cls` of the module at `path` builds and trains on, in line order; with
    `function`, those the module-level function `cls` builds and trains on (ClassSummary.function)."""
    tree = parsed(path)
    kind = ast.FunctionDef if function else ast.ClassDef
    node = next((n for n in tree.body if isinstance(n, kind) and n.name == cls), None) if tree else None
    if node is None:
        return []
    methods = {node.name: node} if function else {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
    built = [(m, target, call) for m in methods.values() for target, call in _builds(m)]
    out = []
    for method, target, call in built:
        if sharded(method, call):
            continue
        if target.startswith("self."):
            searched = list(methods.values())
        else:
            searched = [method]
        loop = next((m for m in searched if _trains_over(m, target, methods)), None)
        if loop is not None:
            out.append(OwnLoader(path, cls, target, loop.name, call.lineno, _stream(call) is not None, function))
    return sorted(out, key=lambda o: o.line)


@dataclass(frozen=True)
class ForeignLoader:
    reach: str  # `self.loader`, or a local of the method that trains on it
    line: int  # of the call that builds it
    builder: str  # that call's function: `build_loader`, `data.get_loader`
    method: str = ""  # the method whose loop trains on it


WRAPPERS = frozenset({"iter", "enumerate", "zip", "list", "tuple", "range", "len", "tqdm", "tqdm.tqdm"})


def foreign_loaders(summary, cls: str) -> list[ForeignLoader]:
    """The training loops of the class `cls` (of the module `summary`) over what a call of another
    function builds in the class (`self.loader = build_loader(dataset, 8)`), where the class's methods
    build a DataLoader through such calls (the summary's LOADER) and no DistributedSampler (SAMPLER):
    a loader no rule shards, built where the fix does not reach."""
    members = [m for m in summary.effects if m.startswith(f"{cls}.")]
    if not any(summary.does(m, LOADER) for m in members):
        return []
    sampled = any(summary.does(m, SAMPLER) for m in members)
    tree = parsed(summary.path)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None) if tree else None
    if node is None:
        return []
    methods = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
    out = []
    for method in methods.values():
        for target, call in _builds(method, lambda func: func.split(".")[-1] != "DataLoader" and func not in WRAPPERS):
            if any(word in ast.unparse(call).lower() for word in ("rank", "distributed", "world")):
                continue  # built per rank already
            if sampled and not _gated(summary, ast_dotted(call.func)):
                continue  # a DistributedSampler the class or the function builds
            searched = list(methods.values()) if target.startswith("self.") else [method]
            loop = next((m for m in searched if _trains_over(m, target, methods)), None)
            if loop is not None:
                out.append(ForeignLoader(target, call.lineno, ast_dotted(call.func) or "a call", loop.name))
    return sorted(out, key=lambda f: f.line)


def _gated(summary, func: str | None) -> bool:
    """Does `func` return a loader that gets its sampler only when a parameter asks for it?"""
    built = summary.returns.get(func or "")
    return isinstance(built, Built) and built.gate is not None


def _builds(
    method: ast.FunctionDef, picks=lambda func: func.split(".")[-1] == "DataLoader"
) -> list[tuple[str, ast.Call]]:
    """(`self.data_loader` or `loader`, the call) for each `<name> = DataLoader(...)` of the method that
    no loop of it holds (or each call `picks` by its function's name)."""
    out = []
    looped = {id(n) for loop in ast.walk(method) if isinstance(loop, (ast.For, ast.While)) for n in ast.walk(loop)}
    for node in ast.walk(method):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call)):
            continue
        if id(node) in looped:
            continue  # built anew in a loop (each epoch): no sampler set once before the epochs
        func = ast_dotted(node.value.func) or ""
        target = ast_dotted(node.targets[0])
        if func and picks(func) and target and (target.count(".") == 0 or _own_attr(target)):
            out.append((target, node.value))
    return out


def _stream(call: ast.Call) -> ast.Call | None:
    """`sampler=RandomSampler(ds, replacement=True, ...)`: the sampler call, drawing with replacement."""
    sampler = next((k.value for k in call.keywords if k.arg == "sampler"), None)
    if not (isinstance(sampler, ast.Call) and (ast_dotted(sampler.func) or "").split(".")[-1] == "RandomSampler"):
        return None
    replacement = next((k.value for k in sampler.keywords if k.arg == "replacement"), None)
    if replacement is None and len(sampler.args) > 1:
        replacement = sampler.args[1]
    return sampler if isinstance(replacement, ast.Constant) and replacement.value is True else None


def sharded(method: ast.FunctionDef, call: ast.Call) -> bool:
    """Does the loader get a DistributedSampler already (`sampler=DistributedSampler(...)`, or a name
    the method assigns one to, under a test or not), or, drawing with replacement, a generator seeded
    per rank (by the fix, or by hand)?"""
    stream = _stream(call)
    if stream is not None:
        generator = next((k.value for k in stream.keywords if k.arg == "generator"), None)
        return generator is not None and "rank" in ast.unparse(generator).lower()
    sampler = next((k.value for k in call.keywords if k.arg == "sampler"), None)
    if sampler is None:
        return False
    values = [sampler]
    if isinstance(sampler, ast.Name):
        values += [
            n.value
            for n in ast.walk(method)
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == sampler.id for t in n.targets)
        ]
    return any(
        isinstance(n, ast.Call) and (ast_dotted(n.func) or "").split(".")[-1] == "DistributedSampler"
        for v in values
        for n in ast.walk(v)
    )


def _own_attr(name: str) -> bool:
    return name.startswith("self.") and name.count(".") == 1


def _trains_over(method: ast.FunctionDef, reach: str, methods: dict[str, ast.FunctionDef]) -> bool:
    """Does a loop of `method` over `reach` train (call backward(), itself or in a method it calls), or
    does `method` draw batches from `iter(reach)` with next() in a loop that trains?"""
    for loop in ast.walk(method):
        if isinstance(loop, ast.For) and iterates(loop.iter, reach) and _steps(loop, methods, 2):
            return True
    drawn = any(
        isinstance(n, ast.Call) and ast_dotted(n.func) == "iter" and n.args and ast_dotted(n.args[0]) == reach
        for n in ast.walk(method)
    )
    return drawn and any(isinstance(n, (ast.For, ast.While)) and _steps(n, methods, 2) for n in ast.walk(method))


def _steps(node: ast.AST, methods: dict[str, ast.FunctionDef], depth: int) -> bool:
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        if isinstance(call.func, ast.Attribute) and call.func.attr in TRAINS:
            return True
        name = ast_dotted(call.func) or ""
        callee = methods.get(name[5:]) if _own_attr(name) else None
        if callee is not None and depth > 0 and _steps(callee, methods, depth - 1):
            return True
    return False


__all__ = ["ForeignLoader", "OwnLoader", "foreign_loaders", "own_loaders", "sharded"]
