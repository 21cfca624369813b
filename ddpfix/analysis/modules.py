"""The script's own modules: what `from utils import init_distributed_mode` brings in.

A script's imports are resolved against the folder it lives in (and, for relative imports, the
package around it); each local module found is summarised (summaries.py). A name imported from a
module that is neither local nor a library is *unknown*: a rule that needs to know whether, say, the
process group exists treats a call into it as "maybe", never as "no".
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import libcst as cst

from ..syntax import dotted
from .ast_reading import imported_names
from .flow import binds
from .imports import Imported, ImportTable, Origin, find_module, package_base
from .stamps import fresh_stamps, read_bytes, stamp
from .summaries import ClassSummary, Finding, ModuleSummary, finder, summarise


@dataclass(frozen=True)
class Target:
    """What a dotted name of the script refers to: a function or class of a local module (`summary`
    and `member`), something of a library, or something that could not be read."""

    origin: Origin
    summary: ModuleSummary | None = None
    member: str | None = None  # the function or class name in `summary` (None: the module itself)


class LocalModules:
    """The script's imports, resolved: local modules summarised, libraries known, the rest unknown."""

    def __init__(
        self, imports: list[cst.Import | cst.ImportFrom], path: str | None, module: cst.Module | None = None
    ) -> None:
        fresh_stamps()  # the script's modules as they are now
        self.folder = script_folder(path)
        self.table = ImportTable(_imported_cst(imports), self._find)
        self._targets: dict[str, Target | None] = {}
        # id(called expression) -> (it, its target): asked as often as `TreeIndex.callee_of`, and kept
        # inline like it
        self._by_node: dict[int, tuple[cst.BaseExpression, Target | None]] = {}
        self._module = module  # the script: the names it binds itself shadow a star import's
        self._stars = [
            (dotted(node.module) if node.module is not None else "", len(node.relative))
            for node in imports
            if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar)
        ]

    def _find(self, module: str, level: int) -> Path | None:
        if self.folder is None:
            return None
        return find_module(package_base(self.folder, level), module)

    def finder_for(self, path: Path):
        """How the module at `path` finds the modules it imports (a relative import: beside it)."""
        return finder(path, self._find)

    def target_of(self, func: cst.BaseExpression) -> Target | None:
        """What a called name refers to (`init_distributed_mode`, `utils.init_distributed_mode`);
        None for names no import of the script binds."""
        known = self._by_node.get(id(func))
        if known is None:
            known = self._by_node[id(func)] = (func, self._target_of(func))  # (keeps the node: its id stays its own)
        return known[1]

    def _target_of(self, func: cst.BaseExpression) -> Target | None:
        name = dotted(func)
        if name is None:
            return None
        if name.split(".")[0] not in self.table.imported:
            return self._star_target(name)
        if name not in self._targets:
            origin, path, member = self.table.resolve(name)
            summary = summarise(path, finder(path, self._find)) if path is not None else None
            if summary is not None and member is not None:
                summary, member = self._reexported(summary, member)
            self._targets[name] = Target(origin, summary, member if path is not None else None)
        return self._targets[name]

    def library_names(self, heads: set[str]) -> dict[str, str]:
        """Library modules the script takes from its own modules and calls through (`heads`: the
        names its calls are made on): `from utils.distributed_utils import dist` where that module
        has `import torch.distributed as dist` -> {"dist": "torch.distributed"}. Only the imports
        of those modules are read, not the modules' summaries."""
        out: dict[str, str] = {}
        for local, (_, member, _) in self.table.imported.items():
            if member is None or local not in heads:
                continue  # `import utils`: a module of the script, read through its attributes
            origin, path, inner = self.table.resolve(local)
            if origin is Origin.LOCAL and path is not None and inner is not None:
                library = library_import(path, inner, self._find)
                if library is not None:
                    out[local] = library
        return out

    def _reexported(self, summary: ModuleSummary, member: str) -> tuple[ModuleSummary, str]:
        """`from train_utils import train_one_epoch` where train_utils/__init__.py has `from
        .train_and_eval import train_one_epoch` (or `from .train_and_eval import *`): the module that
        defines it, and its name there."""
        for _ in range(3):
            head = member.split(".")[0]
            if summary.defines(head):
                break
            find = finder(summary.path, self._find)
            if head not in summary.imported:
                starred = _star_source(summary, head, find, self._find)
                if starred is None:
                    break
                summary = starred
                continue
            origin, path, inner = ImportTable(summary.imported, find).resolve(member)
            if origin is not Origin.LOCAL or path is None or inner is None:
                break
            summary, member = summarise(path, finder(path, self._find)), inner
        return summary, member

    def _star_target(self, name: str) -> Target | None:
        """`CharRNN` after `from model import *`: the class or function of a local module imported
        with `*` that defines it, unless the script binds that name itself."""
        if not self._stars:
            return None
        if name not in self._targets:
            found = None
            head = name.split(".")[0]
            if head not in self._own_names:
                for module, level in self._stars:
                    path = self._find(module, level) if module else None
                    summary = summarise(path, finder(path, self._find)) if path is not None else None
                    if summary is not None and (head in summary.classes or head in summary.params):
                        found = Target(Origin.LOCAL, summary, name)
                        break
            self._targets[name] = found
        return self._targets[name]

    @cached_property
    def _own_names(self) -> set[str]:
        out: set[str] = set()
        for stmt in self._module.body if self._module is not None else ():
            if not isinstance(stmt, cst.SimpleStatementLine) or not all(
                isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
            ):
                out |= binds(stmt)
        return out

    def call_does(self, call: cst.Call, effect: str) -> bool | None:
        """Does `call` do `effect` (INIT, RANK_TEST, ...) through a local module? True / False, or
        None when it calls into a module that could not be read."""
        target = self.target_of(call.func)
        if target is None or target.origin is Origin.LIBRARY:
            return False
        if target.origin is Origin.UNKNOWN or target.summary is None:
            return None
        if target.member is None:
            return False
        if target.member in target.summary.classes:
            return target.summary.does(f"{target.member}.__init__", effect)
        return target.summary.does(target.member, effect)

    def findings(self, call: cst.Call, kind: str) -> list[Finding]:
        """What `call` does through a local module that a rule reports at the call (`kind`:
        HARDCODED_BACKEND, INIT_ARGS, GLOBAL_RANK_DEVICE), with the module's file and line."""
        found = self._function_called(call)
        return [] if found is None else found[0].findings(found[1], kind)

    def joins_on_cuda(self, call: cst.Call) -> bool:
        """Does `call`, a function of a local module, join the process group only after committing
        to a GPU (`torch.cuda.set_device(...)` or "nccl" on the join's own path)?"""
        found = self._function_called(call)
        return found is not None and found[1] in found[0].joins_on_cuda

    def _function_called(self, call: cst.Call) -> tuple[ModuleSummary, str] | None:
        """The summary of the local module `call` calls into and the function it runs there (a
        class's `__init__` for a class); None for a call of no local module's function."""
        target = self.target_of(call.func)
        if target is None or target.summary is None or target.member is None:
            return None
        member = target.member
        return target.summary, f"{member}.__init__" if member in target.summary.classes else member

    def class_of(self, func: cst.BaseExpression) -> ClassSummary | None:
        """The local class a constructor call names (`models.Net(...)`, or `Net(...)` imported)."""
        target = self.target_of(func)
        if target is None or target.summary is None or target.member is None:
            return None
        return target.summary.classes.get(target.member)

    def library_name(self, func: cst.BaseExpression) -> str | None:
        """The library name a script's module hands on: `dist.barrier` where the script took `dist`
        from its own `utils.py`, which imports `torch.distributed as dist`, is `torch.distributed.barrier`."""
        target = self.target_of(func)
        if target is None or target.summary is None or target.member is None:
            return None
        head, _, rest = target.member.partition(".")
        library = target.summary.library.get(head)
        return None if library is None else ".".join(filter(None, [library, rest]))

    def unknown(self, func: cst.BaseExpression) -> bool:
        """Does `func` name something of an import that could not be read?"""
        target = self.target_of(func)
        return target is not None and target.origin is Origin.UNKNOWN


def _star_source(summary: ModuleSummary, name: str, find, outer) -> ModuleSummary | None:
    """The local module a star import of `summary`'s module takes `name` from (the last one that
    defines it, as Python binds it), or None."""
    for module, level in reversed(summary.stars):
        path = find(module, level) if module else None
        if path is not None:
            source = summarise(path, finder(path, outer))
            if source.defines(name):
                return source
    return None


def _imported_cst(imports: list[cst.Import | cst.ImportFrom]) -> Imported:
    out: Imported = {}
    for node in imports:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted(alias.name) or ""
                if alias.asname is not None:
                    out[alias.asname.name.value] = (full, None, 0)  # type: ignore[union-attr]
                else:
                    out[full.split(".")[0]] = (full.split(".")[0], None, 0)
        elif not isinstance(node.names, cst.ImportStar):
            mod = dotted(node.module) if node.module is not None else ""
            for alias in node.names:
                name = dotted(alias.name) or ""
                local = alias.asname.name.value if alias.asname is not None else name  # type: ignore[union-attr]
                out[local] = (mod or "", name, len(node.relative))
    return out


def script_folder(path: str | None) -> Path | None:
    if not path or path in ("-", "<string>") or path.startswith("<"):
        return None
    p = Path(path)
    folder = p.parent if p.suffix or p.is_file() else p
    return folder if folder.is_dir() else None


def library_import(path: Path, name: str, outer_find, hops: int = 3) -> str | None:
    """What `name` is in the module at `path` when that module (or a module it hands the name on
    from, `hops` deep) imports it from a library: its qualified name; None otherwise."""
    for _ in range(hops):
        imported = _imports_of(path)
        if name not in imported:
            return None
        origin, found, inner = ImportTable(imported, finder(path, outer_find)).resolve(name)
        if origin is Origin.LIBRARY:
            module, member, _ = imported[name]
            return ".".join(filter(None, [module, member]))
        if origin is not Origin.LOCAL or found is None or inner is None:
            return None
        path, name = found, inner
    return None


def _imports_of(path: Path) -> Imported:
    """The names a module's imports bind, read with Python's parse (cached by path and stamp)."""
    key = stamp(path)
    if key is None:
        return {}
    if key not in _IMPORTS:
        try:
            _IMPORTS[key] = imported_names(ast.parse(read_bytes(path)))
        except (SyntaxError, ValueError, OSError, RecursionError):
            _IMPORTS[key] = {}
    return _IMPORTS[key]


_IMPORTS: dict[tuple[str, int, int], Imported] = {}


__all__ = ["LocalModules", "Target", "library_import", "script_folder"]
