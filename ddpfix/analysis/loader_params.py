"""What a function of the script's own modules does with a DataLoader it receives, read with Python's
`ast` (summaries.py records it with the other parameter uses): it trains over it in a loop, does so
once per epoch (that loop sits in an outer loop, or the function hands the loader on from inside a
loop), and whether it calls the loader's `sampler.set_epoch(...)` itself."""

from __future__ import annotations

import ast
import builtins
import copy
from collections.abc import Callable

from .ast_reading import ast_dotted, kept_params, nodes
from .ast_reading import parents as parents_of
from .model_params import ast_trains

TRAINS_ON = "trains_on"  # `for batch in loader:` (or `tqdm(loader)`, `enumerate(loader)`) with a training step in it
EPOCHS = "epochs"  # iterated (or handed on) inside an outer loop: one pass per epoch
SETS_EPOCH = "sets_epoch"  # `loader.sampler.set_epoch(...)`
KEPT_AS = "kept_as:"  # + how a class that keeps the loader names it (`kept_as:self.data_loader`)

# Calls that wrap an iterable and hand its items on (`for i, b in enumerate(tqdm(loader))`).
WRAPPERS = {"enumerate", "tqdm", "iter", "zip", "track", "islice", "progress_bar"}
BUILTINS = set(dir(builtins))
# Calls over a loader that do not hand its batches on.
COUNTING = {"len", "range", "min", "max", "sum", "any", "all", "print", "str", "repr", "id", "hasattr", "getattr"}


def ast_loader_uses(
    func: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str], trains: Callable[[ast.AST], bool] = ast_trains
) -> dict[str, set[str]]:
    """parameter -> TRAINS_ON / EPOCHS / SETS_EPOCH for the parameters of `func` used as loaders;
    `trains(node)`: does `node` run a training step (by default: itself, not through a call)."""
    out: dict[str, set[str]] = {p: set() for p in params}
    parents = parents_of(func)
    loop_heads = {
        id(n) for loop in nodes(func) if isinstance(loop, (ast.For, ast.AsyncFor)) for n in ast.walk(loop.iter)
    }
    for node in nodes(func):
        if isinstance(node, (ast.For, ast.AsyncFor)):
            param = iterated_param(node.iter, out)
            if param is None:
                continue
            if trains(node):
                out[param].add(TRAINS_ON)
            if _in_loop(node, parents, func):
                out[param].add(EPOCHS)
        elif isinstance(node, ast.Call) and id(node) not in loop_heads:
            name = ast_dotted(node.func) or ""
            head = name.split(".")[0]
            if name.endswith(".sampler.set_epoch") and (head in out or name[: -len(".sampler.set_epoch")] in out):
                out[head if head in out else name[: -len(".sampler.set_epoch")]].add(SETS_EPOCH)
                continue
            first = node.args[0] if node.args else None
            if name == "iter" and isinstance(first, ast.Name) and first.id in out:  # `it = iter(loader)`, then next(it)
                if trains(func):
                    out[first.id].add(TRAINS_ON)
                if _in_loop(node, parents, func):  # made again inside the loop: one pass per epoch
                    out[first.id].add(EPOCHS)
                continue
            if name in BUILTINS or name.split(".")[-1] in WRAPPERS:
                continue  # `len(loader)`, `print(...)`: not handing the loader on to a training helper
            handed = [ast_dotted(a) for a in [*node.args, *(k.value for k in node.keywords)]]
            for p in handed:
                if p in out and _in_loop(node, parents, func):
                    out[p].add(EPOCHS)
    for param, loops in _drawn_through(func, out, parents).items():
        if any(trains(loop) for loop in loops):
            out[param] |= {TRAINS_ON, EPOCHS}
    return {p: uses for p, uses in out.items() if uses}


DRAWS = {"__next__", "next"}  # `batches.__next__()`, `batches.next()`


def _drawn_through(func: ast.AST, params: dict, parents: dict) -> dict[str, list[ast.AST]]:
    """parameter -> the loops that draw batches with next() from what a call made of it (`self.data =
    self.get_infinite_batches(train_loader)`, then `images = self.data.__next__()` in the loop): a
    generator or wrapper handing the loader's batches on, pass after pass."""
    made: dict[str, str] = {}  # `self.data` -> `train_loader`
    for node in nodes(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call):
            target = ast_dotted(node.targets[0])
            callee = ast_dotted(node.value.func) or ""
            handed = [ast_dotted(a) for a in node.value.args]
            if target is not None and callee not in BUILTINS and len(handed) >= 1 and handed[0] in params:
                made[target] = handed[0]  # type: ignore[assignment]
    out: dict[str, list[ast.AST]] = {}
    for node in nodes(func) if made else ():
        if not isinstance(node, ast.Call):
            continue
        name = ast_dotted(node.func) or ""
        first = ast_dotted(node.args[0]) if node.args else None
        source = first if name == "next" else name.rpartition(".")[0] if name.rpartition(".")[2] in DRAWS else None
        loop = _loop_of(node, parents, func)
        if source in made and loop is not None:
            out.setdefault(made[source], []).append(loop)
    return out


def _loop_of(node: ast.AST, parents: dict, func: ast.AST) -> ast.AST | None:
    """The outermost loop of `func` around `node` (None: not in a loop of its own)."""
    found, cur = None, parents.get(node)
    while cur is not None and cur is not func:
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)):
            found = cur
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return None
        cur = parents.get(cur)
    return found


class AttributesAsNames(ast.NodeTransformer):
    """`self.data_loader` read as one name, "self.data_loader", for `ast_loader_uses`."""

    def __init__(self, names: set[str], aliases: dict[str, str] | None = None) -> None:
        self.names = names
        self.aliases = aliases or {}  # a local name that stands for one of them (`model = self.model`)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == "self" and f"self.{node.attr}" in self.names:
            return ast.copy_location(ast.Name(id=f"self.{node.attr}", ctx=node.ctx), node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.aliases:
            return ast.copy_location(ast.Name(id=self.aliases[node.id], ctx=node.ctx), node)
        return node


def iterated_param(expr: ast.AST, params: dict) -> str | None:
    """The parameter (or attribute: `self.train_loader`) a `for` loop iterates: itself, or through calls that hand its items on
    (`enumerate(tqdm(loader))`, a logger's `metric_logger.log_every(loader, 10, header)`): the first
    argument of any call but those that only count (`range(len(loader))`)."""
    while isinstance(expr, ast.Call) and expr.args and (ast_dotted(expr.func) or "") not in COUNTING:
        expr = expr.args[0]
    name = ast_dotted(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
    return name if name in params else None


def stored_loader_uses(uses: dict[str, dict[str, set[str]]], cls: ast.ClassDef) -> None:
    """Add to the uses of `Cls.__init__`'s parameters what the class does with a loader it keeps
    (see `ast_stored_loader_uses`)."""
    for param, found in ast_stored_loader_uses(cls).items():
        uses.setdefault(f"{cls.name}.__init__", {}).setdefault(param, set()).update(found)


def ast_stored_loader_uses(cls: ast.ClassDef) -> dict[str, set[str]]:
    """`__init__` parameter -> TRAINS_ON / EPOCHS / SETS_EPOCH for a loader the class keeps
    (`self.train_loader = train_loader`) and iterates in its methods: in an epoch loop of `fit`, or in
    a method that a loop of another one calls (`for epoch in ...: self.train_epoch()`)."""
    methods = [f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    init = next((f for f in methods if f.name == "__init__"), None)
    if init is None:
        return {}
    kept = kept_params(init)  # `self.train_loader` -> `train_loader`
    out: dict[str, set[str]] = {}
    for method in methods if kept else []:
        named = AttributesAsNames(set(kept)).visit(copy.deepcopy(method))  # `iter(self.data_loader)` too
        for attr, uses in ast_loader_uses(named, list(kept)).items():
            if TRAINS_ON in uses and _called_in_loop(methods, method.name):
                uses = uses | {EPOCHS}
            if TRAINS_ON in uses:
                uses = uses | {KEPT_AS + attr}  # how the class names it: "self.data_loader"
            out.setdefault(kept[attr], set()).update(uses)
    return out


def _called_in_loop(methods: list, name: str) -> bool:
    """Does a method of the class call `self.<name>(...)` inside a loop?"""
    for method in methods:
        parents = parents_of(method)
        for n in nodes(method):
            if isinstance(n, ast.Call) and ast_dotted(n.func) == f"self.{name}" and _in_loop(n, parents, method):
                return True
    return False


def _in_loop(node: ast.AST, parents: dict, func: ast.AST) -> bool:
    cur = parents.get(node)
    while cur is not None and cur is not func:
        if isinstance(cur, (ast.For, ast.AsyncFor, ast.While)):
            return True
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        cur = parents.get(cur)
    return False


__all__ = [
    "EPOCHS",
    "AttributesAsNames",
    "KEPT_AS",
    "SETS_EPOCH",
    "TRAINS_ON",
    "ast_loader_uses",
    "ast_stored_loader_uses",
    "iterated_param",
    "stored_loader_uses",
]
