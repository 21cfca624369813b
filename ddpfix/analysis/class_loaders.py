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

A loader is the class's own when a method of the class builds it (`self.data_loader = DataLoader(...)`,
or a local `loader = DataLoader(...)` in the method that loops over it) and a loop of the class over it
trains: its body calls `backward()`, itself or through a method of the class it calls.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .ast_reading import ast_dotted
from .config_factory import parsed
from .factory_classes import iterates

TRAINS = frozenset({"backward"})


@dataclass(frozen=True)
class OwnLoader:
    path: Path
    cls: str
    reach: str  # how the training loop names it: `self.data_loader`, or a local of `method`
    method: str  # the method whose loop trains on it
    line: int  # of its DataLoader(...) call


def own_loaders(path: Path, cls: str) -> list[OwnLoader]:
    """The loaders the class `cls` of the module at `path` builds and trains on, in line order."""
    tree = parsed(path)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None) if tree else None
    if node is None:
        return []
    methods = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
    built = [(m, target, call) for m in methods.values() for target, call in _builds(m)]
    out = []
    for method, target, call in built:
        if target.startswith("self."):
            searched = list(methods.values())
        else:
            searched = [method]
        loop = next((m for m in searched if _trains_over(m, target, methods)), None)
        if loop is not None:
            out.append(OwnLoader(path, cls, target, loop.name, call.lineno))
    return sorted(out, key=lambda o: o.line)


def _builds(method: ast.FunctionDef) -> list[tuple[str, ast.Call]]:
    """(`self.data_loader` or `loader`, the call) for each `<name> = DataLoader(...)` of the method that
    no loop of it holds."""
    out = []
    looped = {id(n) for loop in ast.walk(method) if isinstance(loop, (ast.For, ast.While)) for n in ast.walk(loop)}
    for node in ast.walk(method):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call)):
            continue
        if id(node) in looped:
            continue  # built anew in a loop (each epoch): no sampler set once before the epochs
        func = ast_dotted(node.value.func) or ""
        target = ast_dotted(node.targets[0])
        if func.split(".")[-1] == "DataLoader" and target and (target.count(".") == 0 or _own_attr(target)):
            out.append((target, node.value))
    return out


def _own_attr(name: str) -> bool:
    return name.startswith("self.") and name.count(".") == 1


def _trains_over(method: ast.FunctionDef, reach: str, methods: dict[str, ast.FunctionDef]) -> bool:
    """Does a loop of `method` over `reach` train (call backward(), itself or in a method it calls)?"""
    for loop in ast.walk(method):
        if isinstance(loop, ast.For) and iterates(loop.iter, reach) and _steps(loop, methods, 2):
            return True
    return False


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


__all__ = ["OwnLoader", "own_loaders"]
