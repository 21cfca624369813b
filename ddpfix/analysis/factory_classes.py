"""What a fix needs to know of the classes a config may name (config_factory.py), read from each
module as the analysis sees it (as a fix leaves it, within `stamps.overlaid`):

- `loader_builds(cls)`: where a DataLoader class builds its loader, `super().__init__(dataset, ...)`
  in the `__init__` of the class of its chain whose base is torch's DataLoader;
- `reaches(cls, slot)`: each class of its chain an argument of the factory call reaches, with its
  place there (`Trainer(model, optimizer, data_loader=...)` hands `model` on to
  `BaseTrainer.__init__` through `super().__init__(model, optimizer, **kwargs)`);
- `kept(cls, slot)`: the attributes that keep that argument (`self.data_loader = data_loader`);
- `epoch_meeting(cls, attr)`: where the epoch number and that loader meet, the method of the chain
  that iterates it and how it knows the epoch: its own loop around the pass, or a parameter the
  epoch loop of another method of the chain (a base class, in another file) hands it
  (`for epoch in ...: self._train_epoch(epoch)`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .ast_reading import ast_dotted
from .config_factory import FactoryClass, parsed
from .loader_params import COUNTING
from .model_params import ast_params

Slot = int | str


@dataclass(frozen=True)
class Build:
    path: Path
    cls: str  # the class whose __init__ builds the loader
    line: int  # of its super().__init__(...)
    sampled: bool  # it passes a sampler (or batch_sampler) of its own


@dataclass(frozen=True)
class Meeting:
    path: Path
    cls: str
    method: str  # the method of `cls` that iterates the loader
    epoch: str | None  # its parameter that is the epoch; None: its own loop around the pass names it
    line: int


def loader_builds(cls: FactoryClass) -> list[Build] | None:
    """The `super().__init__(...)` calls into torch's DataLoader of the class's chain; None where the
    chain builds its loader otherwise (no such call, or a class with several bases of the script's)."""
    out = []
    for summary, name in cls.chain:
        node = _class_node(summary.path, name)
        if node is None:
            return None
        local = [b for b in summary.classes[name].bases if b in summary.classes]
        torch_base = any(b.split(".")[-1].endswith("DataLoader") for b in summary.classes[name].bases if b not in local)
        if len(local) > 1 or (local and torch_base):
            return None
        init = _method(node, "__init__")
        if not torch_base:
            if init is not None and _super_init(init) is None:
                return None  # it builds its loader without the base class's __init__
            continue
        call = _super_init(init) if init is not None else None
        if call is None:
            return None
        keys = {k.arg for k in call.keywords}
        out.append(Build(summary.path, name, call.lineno, bool(keys & {"sampler", "batch_sampler"})))
    return out or None


def reaches(cls: FactoryClass, slot: Slot) -> list[tuple[Path, str, Slot]] | None:
    """(module, class, slot) for each class of the chain the argument at `slot` reaches; None where a
    class hands it on in a way not followed here (several bases of the script's, `*args`)."""
    out: list[tuple[Path, str, Slot]] = []
    for summary, name in cls.chain:
        node = _class_node(summary.path, name)
        if node is None or len([b for b in summary.classes[name].bases if b in summary.classes]) > 1:
            return None
        out.append((summary.path, name, slot))
        init = _method(node, "__init__")
        if init is None:
            continue  # the base class gets the same arguments
        handed = _handed_on(init, slot)
        if handed is None:
            break
        slot = handed
    return out


def accepts(cls: FactoryClass, slot: Slot) -> bool:
    """Can the class be built with an argument at `slot` (the first `__init__` of its chain takes it)?"""
    for summary, name in cls.chain:
        init = _method(_class_node(summary.path, name), "__init__")
        if init is not None:
            if _param(init, slot) is not None:
                return True
            return (init.args.kwarg if isinstance(slot, str) else init.args.vararg) is not None
    return False


def kept(cls: FactoryClass, slot: Slot) -> set[str]:
    """`self.data_loader` where a class the argument reaches runs `self.data_loader = data_loader`."""
    out = set()
    for path, name, at in reaches(cls, slot) or []:
        init = _method(_class_node(path, name), "__init__")
        param = _param(init, at) if init is not None else None
        for node in ast.walk(init) if init is not None and param is not None else ():
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == param:
                out.update(
                    t for t in map(ast_dotted, node.targets) if t and t.startswith("self.") and t.count(".") == 1
                )
    return out


def epoch_meeting(cls: FactoryClass, attr: str) -> Meeting | None:
    """Where the epoch number and the loader `attr` meet in the class's chain (None: nowhere found)."""
    methods = [(s.path, n, m) for s, n in cls.chain for m in _methods(_class_node(s.path, n))]
    for path, name, method in methods:
        for loop in ast.walk(method):
            if not (isinstance(loop, ast.For) and iterates(loop.iter, attr)):
                continue
            if any(isinstance(n, (ast.For, ast.While)) and _holds(n, loop) for n in ast.walk(method)):
                return Meeting(path, name, method.name, None, loop.lineno)
            epoch = _epoch_handed(methods, method)
            if epoch is not None:
                return Meeting(path, name, method.name, epoch, method.lineno)
    return None


def sets_epoch(cls: FactoryClass) -> bool:
    """Does a method of the class's chain call `set_epoch`?"""
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "set_epoch"
        for s, name in cls.chain
        for n in ast.walk(_class_node(s.path, name) or ast.Module(body=[], type_ignores=[]))
    )


def _epoch_handed(methods: list, method: ast.FunctionDef) -> str | None:
    """The parameter of `method` another method's epoch loop hands its loop variable
    (`for epoch in range(...): self._train_epoch(epoch)`)."""
    params = ast_params(method, method=True)
    for _path, _name, other in methods:
        for loop in ast.walk(other):
            if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)):
                continue
            epoch = loop.target.id
            for call in (n for stmt in loop.body for n in ast.walk(stmt)):
                if not (isinstance(call, ast.Call) and ast_dotted(call.func) == f"self.{method.name}"):
                    continue
                for i, arg in enumerate(call.args):
                    if isinstance(arg, ast.Name) and arg.id == epoch and i < len(params):
                        return params[i]
                for kw in call.keywords:
                    if isinstance(kw.value, ast.Name) and kw.value.id == epoch and kw.arg in params:
                        return kw.arg
    return None


def _handed_on(init: ast.FunctionDef, slot: Slot) -> Slot | None:
    """The slot `super().__init__(...)` in `init` gets the argument at `slot` in, or None."""
    call = _super_init(init)
    param = _param(init, slot)
    if call is None:
        return None
    if param is None:  # a keyword `init` takes as **kwargs, handed on whole
        kwargs = init.args.kwarg
        forwards = kwargs is not None and isinstance(slot, str)
        if forwards and any(k.arg is None and _is_name(k.value, kwargs.arg) for k in call.keywords):
            return slot
        return None
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if _is_name(arg, param):
            return i
    return next((k.arg for k in call.keywords if k.arg is not None and _is_name(k.value, param)), None)


def _param(init: ast.FunctionDef, slot: Slot) -> str | None:
    params = ast_params(init, method=True)
    if isinstance(slot, int):
        return params[slot] if slot < len(params) else None
    return slot if slot in params or slot in {a.arg for a in init.args.kwonlyargs} else None


def _super_init(init: ast.FunctionDef) -> ast.Call | None:
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            inner = node.func.value
            if isinstance(inner, ast.Call) and ast_dotted(inner.func) == "super":
                return node
    return None


def iterates(expr: ast.expr, attr: str) -> bool:
    """Does a loop over `expr` iterate `attr` (itself, or the first argument of the calls around it)?"""
    while isinstance(expr, ast.Call) and expr.args and (ast_dotted(expr.func) or "") not in COUNTING:
        expr = expr.args[0]
    return ast_dotted(expr) == attr


def _holds(outer: ast.AST, inner: ast.AST) -> bool:
    return outer is not inner and any(n is inner for stmt in getattr(outer, "body", []) for n in ast.walk(stmt))


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _class_node(path: Path, name: str) -> ast.ClassDef | None:
    tree = parsed(path)
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None) if tree else None


def _methods(node: ast.ClassDef | None) -> list[ast.FunctionDef]:
    return [n for n in node.body if isinstance(n, ast.FunctionDef)] if node is not None else []


def _method(node: ast.ClassDef | None, name: str) -> ast.FunctionDef | None:
    return next((m for m in _methods(node) if m.name == name), None)


__all__ = ["Build", "Meeting", "accepts", "epoch_meeting", "iterates", "kept", "loader_builds", "reaches", "sets_epoch"]
