"""Objects a config names by class, built through a factory of the script's own modules:
`init_obj(module_trainer, config["trainer"], model, optimizer)` where utils.py has
`return getattr(module, cfg["type"])(*args, **cfg["args"])`. Which class it builds is decided at run
time, so no fix can edit it from the script; the classes the module offers are known, and what they
do is, for the rules to report at the call with the module's file and line (DDP201: a DataLoader
class that builds its own sampler-less loader; DDP401/DDP406: a trainer class that saves or prints on
every rank)."""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from ..syntax import positional
from .ast_reading import ast_dotted
from .imports import ImportTable, Origin
from .model_params import ast_params
from .module_summary import ModuleSummary
from .stamps import read_bytes, stamp
from .summaries import summarise

DEPTH = 3  # base classes followed
OPTIMIZERS = re.compile(r"opt|sched", re.IGNORECASE)


@dataclass(frozen=True)
class FactoryClass:
    name: str
    summary: ModuleSummary  # of the module that defines it
    line: int
    chain: tuple[tuple[ModuleSummary, str], ...]  # the class and its base classes of the script's modules


@dataclass(frozen=True)
class FactoryCall:
    call: cst.Call
    where: str  # the getattr that picks the class: "utils.py:6"
    classes: tuple[FactoryClass, ...]  # those the module offers
    named: int | None = None  # the factory's parameters before `*args`, which it hands on first; None: not so
    keywords: bool = False  # the factory hands its `**kwargs` on to the class
    config_at: int | None = None  # the factory's parameter whose "type" names the class (`cfg`)

    def slot(self, arg: cst.Arg) -> int | str | None:
        """Where the class gets the factory call's argument `arg`: its keyword, or its position among
        the arguments the factory hands on; None where the factory does not hand it on as it is."""
        if arg.star:
            return None
        if arg.keyword is not None:
            return arg.keyword.value if self.keywords else None
        args = [a for a in self.call.args if a.keyword is None]
        at = next((i for i, a in enumerate(args) if a is arg), None)
        if self.named is None or at is None or at < self.named or any(a.star for a in args[:at]):
            return None
        return at - self.named

    def is_loader(self, cls: FactoryClass) -> bool:
        """Is `cls` a DataLoader (its own base classes, or theirs, end in `DataLoader`)?"""
        return any(b.split(".")[-1].endswith("DataLoader") for summary, c in cls.chain for b in _bases(summary, c))


def factory_calls(facts) -> list[FactoryCall]:
    """The script's calls of a local factory that builds the class a config names in a local module."""
    modules = facts.modules
    if modules is None:
        return []
    out = []
    for call in facts.index.calls:
        target = modules.target_of(call.func)
        if target is None or target.summary is None or target.member is None:
            continue
        if target.member in target.summary.classes:
            continue
        picked = _getattr_param(target.summary.path, target.member)
        arg = positional(call, picked[0]) if picked is not None else None
        chosen = modules.target_of(arg.value) if arg is not None else None
        if picked is None or chosen is None or chosen.summary is None or chosen.member is not None:
            continue
        classes = tuple(c for name in sorted(chosen.summary.classes) if (c := _class(modules, chosen.summary, name)))
        if classes:
            where = f"{_shown(modules.folder, target.summary.path)}:{picked[1]}"
            out.append(FactoryCall(call, where, classes, *picked[2:]))
    return out


def findings(cls: FactoryClass, kind: str) -> list:
    """What the class's methods (and its base classes') do of `kind` (module_writes.py's kinds)."""
    found = {
        f
        for summary, c in cls.chain
        for method in summary.classes[c].methods
        for f in summary.findings(f"{c}.{method}", kind)
    }
    return sorted(found, key=lambda f: (str(f.path), f.line))


def state_dicts(cls: FactoryClass) -> list[tuple[Path, str, int]]:
    """(file, `self.<attr>`, line) for each `self.<attr>.state_dict()` in the class's methods and its
    base classes' (not of an optimizer or scheduler: those have no wrapper)."""
    out = []
    for summary, name in cls.chain:
        tree = parsed(summary.path)
        for node in tree.body if tree is not None else ():
            if not (isinstance(node, ast.ClassDef) and node.name == name):
                continue
            for call in ast.walk(node):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                    continue
                owner = ast_dotted(call.func.value) or ""
                if call.func.attr == "state_dict" and owner.startswith("self.") and not OPTIMIZERS.search(owner):
                    out.append((summary.path, owner, call.lineno))
    return sorted(set(out))


def shown_finding(folder: Path | None, finding) -> str:
    return f"{_shown(folder, finding.path)}:{finding.line}"


def _class(modules, summary: ModuleSummary, name: str, depth: int = 0) -> FactoryClass | None:
    """The class `name` of `summary`, followed to the module that defines it (a package re-exports),
    with its base classes of the script's modules, each in the module that defines it."""
    for _ in range(DEPTH):
        if name not in summary.imported:
            break
        find = modules.finder_for(summary.path)
        origin, path, inner = ImportTable(summary.imported, find).resolve(name)
        if origin is not Origin.LOCAL or path is None or inner is None:
            return None
        summary, name = summarise(path, modules.finder_for(path)), inner
    line = _class_line(summary.path, name)
    if name not in summary.classes or line is None:
        return None
    chain = [(summary, name)]
    for base in _bases(summary, name) if depth < DEPTH else ():
        if base in summary.classes and base != name:
            inherited = _class(modules, summary, base, depth + 1)
            if inherited is not None:
                chain.extend(inherited.chain)
    return FactoryClass(name, summary, line, tuple(chain))


def _bases(summary: ModuleSummary, name: str) -> list[str]:
    cls = summary.classes.get(name)
    return list(cls.bases) if cls is not None else []


@functools.lru_cache(maxsize=256)
def _tree(path: Path, stamped: tuple) -> ast.Module | None:
    try:
        return ast.parse(read_bytes(path))
    except (OSError, SyntaxError, ValueError):
        return None


def parsed(path: Path) -> ast.Module | None:
    """The module's tree as the analysis sees it (as a fix leaves it, within `stamps.overlaid`)."""
    stamped = stamp(path)
    return _tree(path, stamped) if stamped is not None else None


def _getattr_param(path: Path, name: str) -> tuple[int, int, int | None, bool, int | None] | None:
    """(the parameter's position, the line, how many parameters precede the `*args` the call hands on
    first, whether it hands on `**kwargs`, the parameter `<cfg>["type"]` reads) where the module's
    function `name` calls what `getattr(<that parameter>, ...)` returns."""
    stamped = stamp(path)
    return _read_getattr_param(path, stamped, name) if stamped is not None else None


@functools.lru_cache(maxsize=1024)
def _read_getattr_param(path: Path, stamped: tuple, name: str) -> tuple[int, int, int | None, bool, int | None] | None:
    """`_getattr_param` of the module as `stamped` (its walk is read once per version of the file)."""
    tree = _tree(path, stamped)
    func = (
        next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)
        if tree is not None
        else None
    )
    if func is None:
        return None
    params = ast_params(func, method=False)
    for node in ast.walk(func):
        inner = node.func if isinstance(node, ast.Call) else None
        if isinstance(inner, ast.Call) and ast_dotted(inner.func) == "getattr" and inner.args:
            first = inner.args[0]
            if isinstance(first, ast.Name) and first.id in params:
                star, kwargs = func.args.vararg, func.args.kwarg
                lead = node.args[0] if node.args else None
                forwards = isinstance(lead, ast.Starred) and isinstance(lead.value, ast.Name) and star is not None
                named = len(params) if forwards and lead.value.id == star.arg else None
                keywords = kwargs is not None and any(
                    k.arg is None and isinstance(k.value, ast.Name) and k.value.id == kwargs.arg for k in node.keywords
                )
                second = inner.args[1] if len(inner.args) > 1 else None
                cfg = second.value if isinstance(second, ast.Subscript) else None
                config_at = params.index(cfg.id) if isinstance(cfg, ast.Name) and cfg.id in params else None
                return params.index(first.id), node.lineno, named, keywords, config_at
    return None


def _class_line(path: Path, name: str) -> int | None:
    tree = parsed(path)
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node.lineno
    return None


def _shown(folder: Path | None, path: Path) -> str:
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix() if folder is not None else path.name
    except ValueError:
        return str(path)


__all__ = ["FactoryCall", "FactoryClass", "factory_calls", "findings", "parsed", "shown_finding", "state_dicts"]
