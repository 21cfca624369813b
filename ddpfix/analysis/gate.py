"""Could this file be a training script? Decided from Python's `ast` alone, before LibCST parses it.

`ScriptFacts.is_training_script()` needs a script that uses torch (or trains through its own modules
alone: a `main.py` that only imports `Solver` and calls `solver.train()`), that no other library
distributes (Accelerate, Lightning...: DDP008's information line), and that trains (an optimizer over some
parameters, `backward()`, a call that trains through the script's own modules), joins a process
group (`init_process_group`) or wraps a model in DDP. `cannot_train(tree, path)` is True only where
each of those is certainly absent, so a file it passes over would get no finding and no fix: it is
the same analysis, with every name resolved more widely (every import that binds a name, not only
the last; see reach.py for the script's own modules), so it may keep a file the analysis then turns
down, never the reverse.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .ast_reading import ast_dotted, import_origins, nodes
from .classes import DDP_NAMES
from .imports import ImportTable, Origin, find_module, package_base
from .modules import library_import, script_folder
from .names import TRAINER_LIBRARIES, framework_of
from .reach import may_train_through
from .stamps import fresh_stamps
from .training import OPTIMIZER_CLASSES, OPTIMIZER_NAMES

PARAMETERS = ("parameters", "named_parameters")


def cannot_train(tree: ast.Module, path: str | None) -> bool:
    """Is the file certainly no training script, and distributed by no other library (no DDP008)?"""
    return not _Gate(tree, path).may_reach_rules()


class _Gate:
    def __init__(self, tree: ast.Module, path: str | None) -> None:
        self.tree = tree
        self.path = None if path in (None, "<string>", "-") else path
        everything = nodes(tree)  # one walk (Python's `ast.walk` is most of what this costs)
        self.calls = [n for n in everything if type(n) is ast.Call]
        self.imports = [n for n in everything if type(n) is ast.Import or type(n) is ast.ImportFrom]
        self.assigns = [n for n in everything if (type(n) is ast.Assign or type(n) is ast.AnnAssign) and n.value]
        self.aliases: dict[str, set[str]] = {}  # local name -> every qualified name an import gives it
        for node in self.imports:
            for local, full in _aliases(node):
                self.aliases.setdefault(local, set()).add(full)
        self.bindings: dict[str, list[tuple[str, str | None, int]]] = {}  # as modules.py reads imports
        for node in self.imports:
            for local, origin in import_origins(node):
                self.bindings.setdefault(local, []).append(origin)
        for node in tree.body:  # `Exp = Exp_Informer` at module level: the alias of an imported name
            if type(node) is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name:
                if type(node.value) is ast.Name and node.value.id in self.bindings:
                    self.bindings.setdefault(node.targets[0].id, []).extend(self.bindings[node.value.id])

    def may_reach_rules(self) -> bool:
        if any(framework_of(full) for node in self.imports for full in _imported(node)):
            return True  # another library distributes it: DDP008's line
        fresh_stamps()
        self.folder = script_folder(self.path) if self.path else None
        if self.folder is not None:
            self._library_names()
        quals = {id(c): self.quals(c.func) for c in self.calls}
        if any(q.split(".")[0] in TRAINER_LIBRARIES and q.endswith("Trainer") for qs in quals.values() for q in qs):
            return True  # a Hugging Face or TRL trainer: DDP008's line
        called = {d for c in self.calls if (d := ast_dotted(c.func))}
        stars = [(n.module or "", n.level) for n in self.imports if isinstance(n, ast.ImportFrom) and _star(n)]
        if not any(v == "torch" or v.startswith("torch.") for vs in self.aliases.values() for v in vs):
            # no torch here: only a script that trains through its own modules (`Solver(...).train()`)
            return may_train_through(self.folder, self.bindings, called, stars)
        for call in self.calls:
            if isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
                return True
            for q in quals[id(call)]:
                if (q.startswith("torch.") and q.endswith("init_process_group")) or q in DDP_NAMES:
                    return True
        if self._optimizer_sites(quals):
            return True
        return may_train_through(self.folder, self.bindings, called, stars)

    def quals(self, func: ast.AST) -> set[str]:
        """Every qualified name `func` may have through the imports (Names.qualname, each binding)."""
        d = ast_dotted(func)
        if d is None:
            return {""}
        head, _, rest = d.partition(".")
        if head not in self.aliases:
            return {d}
        return {f"{full}.{rest}" if rest else full for full in self.aliases[head]}

    def _library_names(self) -> None:
        """The library names the script takes from its own modules (LocalModules.library_names)."""
        heads = {d.split(".")[0] for c in self.calls if "." in (d := ast_dotted(c.func) or "")}
        for local, origins in self.bindings.items():
            if local not in heads:
                continue
            for origin in origins:
                if origin[1] is None:
                    continue
                found, path, inner = ImportTable({local: origin}, self._find).resolve(local)
                if found is Origin.LOCAL and path is not None and inner is not None:
                    library = library_import(path, inner, self._find)
                    if library is not None:
                        self.aliases.setdefault(local, set()).add(library)

    def _find(self, module: str, level: int) -> Path | None:
        return find_module(package_base(self.folder, level), module)  # type: ignore[arg-type]

    def _optimizer_sites(self, quals: dict[int, set[str]]) -> bool:
        """Training.optimizer_sites: a call handed some model's parameters (also through a name bound
        to them), assigned (or one per model of a list) to an optimizer-looking target or call."""
        if not any(_parameters_call(c) for c in self.calls):
            return False  # no model's parameters handed over anywhere
        bound = set()  # names some assignment binds to an expression holding `X.parameters()`
        for node in self.assigns:
            if _receivers(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bound |= {t for target in targets for t in _target_texts(target)}
        for node in self.assigns:
            value = node.value
            call = value.elt if isinstance(value, (ast.ListComp, ast.GeneratorExp)) else value
            if not isinstance(call, ast.Call):
                continue
            args = [*call.args, *(k.value for k in call.keywords)]
            names = {
                a.id for a in (x.value if isinstance(x, ast.Starred) else x for x in args) if isinstance(a, ast.Name)
            }
            if not (any(_receivers(a) for a in args) or names & bound):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            texts = [t for target in targets for t in _target_texts(target)]
            if any(OPTIMIZER_NAMES.search(t.split(".")[-1]) for t in texts) or any(
                q.startswith("torch.optim.") or OPTIMIZER_CLASSES.search(q) for q in quals.get(id(call), {""})
            ):
                return True
        return False


def _parameters_call(n: ast.AST) -> bool:
    """`X.parameters()` or `X.named_parameters()`, X a name or attribute chain (training._receivers)."""
    return (
        type(n) is ast.Call
        and type(n.func) is ast.Attribute
        and n.func.attr in PARAMETERS
        and ast_dotted(n.func.value) is not None
    )


def _receivers(node: ast.AST) -> bool:
    """Does `node` hold `X.parameters()` or `X.named_parameters()`?"""
    return any(_parameters_call(n) for n in ast.walk(node))


def _target_texts(target: ast.AST) -> list[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [t for el in target.elts for t in _target_texts(el.value if isinstance(el, ast.Starred) else el)]
    d = ast_dotted(target)
    return [d] if d else []


def _star(node: ast.ImportFrom) -> bool:
    return any(a.name == "*" for a in node.names)


def _aliases(node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
    """(local name, qualified name) for what an import binds, as Names reads it."""
    if isinstance(node, ast.Import):
        return [(a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0]) for a in node.names]
    if node.level or node.module is None or _star(node):
        return []
    return [(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names]


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """What an import brings in, by qualified name (names._imported)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level or node.module is None:
        return []
    if _star(node):
        return [node.module]
    return [f"{node.module}.{a.name}" for a in node.names]


__all__ = ["cannot_train"]
