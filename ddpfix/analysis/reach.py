"""Could a call of the script train through its own modules? A cheap, conservative answer read with
Python's `ast`, before any module summary (summaries.py) is made.

A summary says TRAINS only where a function of a module the summaries read calls `backward()` or an
optimizer's `step()` (model_params.ast_trains). The modules they read are those the script's calls
resolve to (modules.py: `LocalModules.target_of`, star imports, a package's re-exports), and those
the calls and imports of each such module resolve to in turn. This module follows the same imports
with the same file lookups (imports.find_module), but more widely: every module prefix of a name,
every folder of the modules reached for an absolute import, no depth limit. A summary made earlier
in this process is reused as it is (what it read was found from the folders of the script that
made it), so its own word counts too. When no module so reached holds such a call, and no summary
of one says it trains, no call of the script trains through its modules."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from .ast_reading import ast_dotted, imported_names, nodes
from .imports import Imported, find_module, package_base
from .model_params import TRAINS, trains_call
from .stamps import Stamp, read_bytes, stamp
from .summaries import CACHE as SUMMARIES


@dataclass(frozen=True)
class ModuleNames:
    """What one module's `ast` says for the search: does it call `backward()` or an optimizer's
    `step()` anywhere, and the names it could resolve through its imports."""

    trains: bool
    imported: Imported
    names: frozenset[str] = field(default_factory=frozenset)  # called names and imported names


_MODULES: dict[Stamp, ModuleNames] = {}


def module_names(path: Path) -> ModuleNames | None:
    """The module's `ModuleNames` (cached by stamp, as summaries are); None when it cannot be read."""
    key = stamp(path)
    if key is None:
        return None
    found = _MODULES.get(key)
    if found is None:
        try:
            tree = ast.parse(read_bytes(path))
        except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
            found = ModuleNames(False, {})  # the summary of a module that cannot be parsed is empty
        else:
            calls = [n for n in nodes(tree) if type(n) is ast.Call]
            imported = imported_names(tree)  # (the same walk, listed once)
            names = {d for c in calls if (d := ast_dotted(c.func))} | set(imported)
            found = ModuleNames(any(trains_call(c) for c in calls), imported, frozenset(names))
        _MODULES[key] = found
    return found


def _summarised_trains(path: Path, head: str | None = None) -> bool:
    """Does a summary of the module made earlier in this process say it trains (its function or
    class `head`, or any)? The analysis reuses it as it is, with what the modules it read held when
    it was made (found, maybe, from another script's folder)."""
    key = stamp(path)
    summary = SUMMARIES.get(key) if key is not None else None
    if summary is None:
        return False
    return any(TRAINS in e for k, e in summary.effects.items() if head is None or k.split(".")[0] == head)


def chain(origin: tuple[str, str | None, int], name: str) -> list[str]:
    """The dotted path `name` spells through its import: `from utils import dist` and `dist.init`
    -> utils.dist.init (ImportTable.resolve tries prefixes of it)."""
    module, member, _ = origin
    return [*filter(None, module.split(".")), *([member] if member else []), *name.split(".")[1:]]


class Search:
    """The modules a script's calls may reach, and whether any of them trains."""

    def __init__(self, folder: Path) -> None:
        self.folders = {folder}  # where a module's absolute import may be found
        self.absolute: dict[str, set[str]] = {}  # module looked up absolutely -> the rest of the name
        self.paths: dict[Path, set[str]] = {}  # module reached -> the names resolved in its imports
        self.todo: list[tuple[Path, str]] = []
        self.looked: dict[tuple[Path, str], Path | None] = {}
        self.listed: dict[Path, set[str] | None] = {}  # a folder's entries, lower-cased

    def _find(self, base: Path, module: str) -> Path | None:
        key = (base, module)
        if key not in self.looked:
            names = self.listed.get(base)
            if names is None:
                try:
                    names = self.listed[base] = {n.lower() for n in os.listdir(base)}
                except OSError:
                    names = self.listed[base] = None  # type: ignore[assignment]
            head = module.split(".")[0].lower()  # (lower: a file system that ignores case finds it)
            if names is not None and head not in names and head + ".py" not in names:
                self.looked[key] = None  # neither head.py nor head/ there: find_module finds nothing
            else:
                self.looked[key] = find_module(base, module)
        return self.looked[key]

    def add_name(self, origin: tuple[str, str | None, int], name: str, base: Path, script: bool = False) -> None:
        """`name` bound by an import `origin` in the module (or the `script`) whose folder is `base`."""
        parts = chain(origin, name)
        level = origin[2]
        base = package_base(base, level)
        for k in range(1, len(parts) + 1):
            module, rest = ".".join(parts[:k]), ".".join(parts[k:])
            if level or script:  # the script's own imports are looked up beside it only
                self.reached(self._find(base, module), rest)
                continue
            rests = self.absolute.setdefault(module, set())
            if rest in rests:
                continue
            rests.add(rest)
            for folder in list(self.folders):
                self.reached(self._find(folder, module), rest)

    def reached(self, path: Path | None, rest: str) -> None:
        if path is None:
            return
        names = self.paths.get(path)
        if names is None:
            names = self.paths[path] = set()
            if path.parent not in self.folders:
                self.new_folder(path.parent)
        if rest not in names:
            names.add(rest)
            self.todo.append((path, rest))

    def new_folder(self, folder: Path) -> None:
        self.folders.add(folder)
        for module, rests in self.absolute.items():
            for rest in list(rests):
                self.reached(self._find(folder, module), rest)

    def trains(self) -> bool:
        """Does any module reached (so far, and from it on) hold a training step, or a summary that
        says it trains? Every module is reached first (the folders for the closer look)."""
        done: set[Path] = set()
        found = False
        while self.todo:
            path, rest = self.todo.pop()
            info = module_names(path)
            if info is None:
                continue
            found = found or info.trains or _summarised_trains(path)
            names = set() if path in done else set(info.names)
            done.add(path)
            if rest:
                names.add(rest)  # a package's re-export of what the script names through it
            for name in names:
                origin = info.imported.get(name.split(".")[0])
                if origin is not None:
                    self.add_name(origin, name, path.parent)
        return found

    def resolve(self, origin: tuple[str, str | None, int], name: str, base: Path, script: bool = False):
        """The (module, member) pairs `name` may resolve to (as `add_name` looks, once all is reached)."""
        parts, level = chain(origin, name), origin[2]
        base = package_base(base, level)
        for k in range(1, len(parts)):  # a module and a member in it
            module, rest = ".".join(parts[:k]), ".".join(parts[k:])
            for folder in [base] if level or script else list(self.folders):
                path = self._find(folder, module)
                if path is not None:
                    yield path, rest

    def member_trains(self, starts: list[tuple[Path, str]]) -> bool:
        """Does one of these functions or classes of modules (`(path, "Class.method")`) train: call
        `backward()` or an optimizer's `step()`, itself or through the functions, methods and modules
        it calls (summaries.py's `_call_effects`, more widely)?"""
        seen: set[tuple[Path, str]] = set()
        todo = list(starts)
        while todo:
            path, member = todo.pop()
            if member.count(".") > MAX_PARTS:
                return True  # (a name no script spells: no closer look)
            defs, info = module_defs(path), module_names(path)
            if defs is None or info is None:
                continue
            head = member.split(".")[0]
            key = (path, head) if head in defs.trains else (path, member)  # a whole function or class
            if key in seen:
                continue
            seen.add(key)
            if _summarised_trains(path, head):
                return True
            if head not in defs.trains:  # a name it imports: what it hands on (a package's re-export)
                origin = info.imported.get(head)
                todo += self.resolve(origin, member, path.parent) if origin is not None else []
                continue
            if defs.trains[head]:
                return True
            for name in defs.calls[head]:
                first = name.split(".")[0]
                if first in defs.trains:
                    todo.append((path, name))
                if first == "self" and name.count(".") == 1:  # a method of a class here, or taken in
                    todo += [(path, cls) for cls in defs.methods.get(name[5:], ())]
                    todo += [(p, m) for imp in defs.top_imports for p, m in self._imported(info, imp, path)]
                if first in info.imported:
                    todo += self.resolve(info.imported[first], name, path.parent)
        return False

    def _imported(self, info: ModuleNames, local: str, path: Path):
        origin = info.imported.get(local)
        return self.resolve(origin, local, path.parent) if origin is not None else ()


def may_train_through(folder: Path | None, bindings: dict[str, list], called: set[str], stars: list) -> bool:
    """Could a call of a script in `folder` (its imports `bindings`: local name -> every import that
    binds it; `called`: the dotted names it calls; `stars`: (module, level) of its `import *`s) train
    through the script's own modules?"""
    if folder is None:
        return False  # no folder: no module of the script's is read
    search = Search(folder)
    for name in called:
        for origin in bindings.get(name.split(".")[0], ()):
            search.add_name(origin, name, folder, script=True)
    star_paths = []
    for module, level in stars:
        if module:
            search.add_name((module, None, level), module.split(".")[0], folder, script=True)
            star_paths += [p for p in [search._find(package_base(folder, level), module)] if p is not None]
    if not search.trains():
        return False
    starts = [
        (path, member)
        for name in called
        for origin in bindings.get(name.split(".")[0], ())
        for path, member in search.resolve(origin, name, folder, script=True)
    ]
    starts += [(path, name) for path in star_paths for name in called if name.split(".")[0] not in bindings]
    return search.member_trains(starts)


@dataclass(frozen=True)
class ModuleDefs:
    """A module's top-level functions and classes, for the closer look: does each hold a training
    step itself, what does it call, and which classes have a method of each name."""

    trains: dict[str, bool]
    calls: dict[str, set[str]]
    methods: dict[str, set[str]]
    top_imports: list[str]  # the names its module-level imports bind (summaries.py `_imported`)


_DEFS: dict[Stamp, ModuleDefs] = {}
MAX_PARTS = 32


def module_defs(path: Path) -> ModuleDefs | None:
    key = stamp(path)
    if key is None:
        return None
    if key not in _DEFS:
        try:
            tree = ast.parse(read_bytes(path))
        except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
            tree = ast.Module(body=[], type_ignores=[])
        defs = ModuleDefs({}, {}, {}, [])
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                calls = [n for n in ast.walk(stmt) if type(n) is ast.Call]
                defs.trains[stmt.name] = any(trains_call(c) for c in calls)
                defs.calls[stmt.name] = {d for c in calls if (d := ast_dotted(c.func))}
            if isinstance(stmt, ast.ClassDef):
                for item in stmt.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        defs.methods.setdefault(item.name, set()).add(stmt.name)
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                defs.top_imports.extend(a.asname or a.name.split(".")[0] for a in stmt.names if a.name != "*")
        _DEFS[key] = defs
    return _DEFS[key]


__all__ = ["ModuleNames", "may_train_through", "module_names"]
