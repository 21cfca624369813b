"""Summaries of the script's local modules, read with Python's `ast` and cached by path, size and modification
time: which of a module's functions join or leave a process group, return a rank test, silence `print` on other
ranks, build samplers, loaders or DDP wrappers, save or load checkpoints, issue collectives or train (following the
calls between functions and local modules), what each does with a model it receives and which model it returns
(model_params.py), and its classes, with the methods they take from their bases (class_bases.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from .ast_cuda_join import cuda_join_line, joins_itself
from .ast_reading import (
    ast_dotted,
    calls,
    imported_names,
    is_rank_test,
    nodes,
    star_imports,
)
from .class_bases import inherit_methods, is_main_block
from .class_models import ast_function_locals, ast_local_models, ast_trained_attributes, ast_wraps
from .imports import ImportTable, Origin, find_module
from .input_parameters import built_parameters, read_input_parameters
from .kept_models import kept_uses
from .loader_params import ast_loader_uses
from .model_params import (
    TRAINS,
    Slot,
    ast_forward_methods,
    ast_model_return,
    ast_params,
    ast_trains,
    ast_uses,
    resolve_passes,
    trains_call,
)
from .module_summary import (
    COLLECTIVE,
    DESTROY,
    GLOBAL_RANK_DEVICE,
    HARDCODED_BACKEND,
    INIT,
    INIT_ARGS,
    LOAD,
    LOADER,
    RANK_TEST,
    SAMPLER,
    SAVE,
    SET_DEVICE,
    SILENCES_PRINT,
    WRAP,
    ClassSummary,
    Finding,
    ModuleSummary,
)
from .module_writes import PER_RANK_KINDS, every_rank_writes, rank_guarded_calls
from .path_templates import path_templates
from .reduced_sums import REDUCED, REDUCED_EACH_BATCH, SumLoop, ast_averages, ast_call_averages, ast_sum_op, ast_summed
from .returns import LOADER as RETURNS_LOADER
from .returns import SAMPLER as RETURNS_SAMPLER
from .returns import returned
from .setup_findings import setup_findings
from .stamps import Stamp, read_bytes, stamp
from .torch_api import COLLECTIVES

_DIRECT = {
    "init_process_group": INIT,
    "destroy_process_group": DESTROY,
    "set_device": SET_DEVICE,
    "DistributedSampler": SAMPLER,
    "DataLoader": LOADER,
    "DistributedDataParallel": WRAP,
    "save": SAVE,
    "load": LOAD,
}
DEPTH = 4  # how far calls between local functions (and local modules) are followed


CACHE: dict[Stamp, ModuleSummary] = {}
# the other modules a cached summary read (stamped as they were then): a change to any of them, not
# only to the module itself, makes the summary stale (a package's `__init__.py` hands on what it reads)
_READ: dict[Stamp, frozenset[Stamp]] = {}


def _current(key: Stamp) -> bool:
    return all(stamp(Path(other[0])) == other for other in _READ.get(key, ()))


# --------------------------------------------------------------------------- finding files
def summarise(path: Path, find, _seen: frozenset[Path] = frozenset()) -> ModuleSummary:
    """The summary of one local module (cached by path, size and modification time, its own and
    those of the modules it read). `find(module, level)` locates the modules it imports."""
    key = stamp(path)
    if key is None:
        return ModuleSummary(path)
    cached = CACHE.get(key)
    if cached is not None and _current(key):
        return cached
    summary = ModuleSummary(path)
    if path in _seen or len(_seen) > DEPTH:
        return summary  # an import cycle, or too deep: read as empty, not cached
    try:
        tree = ast.parse(read_bytes(path))
    except (SyntaxError, ValueError, OSError, RecursionError):
        CACHE[key] = summary
        return summary
    summary.imported, summary.stars = imported_names(tree), star_imports(tree)
    summariser = _Summariser(summary, tree, ImportTable(summary.imported, find), _seen | {path})
    summariser.run()
    CACHE[key] = summary
    _READ[key] = frozenset(summariser.read)
    return summary


def finder(path: Path, outer):
    """Where the imports of the module at `path` are found: relative ones from its package, absolute
    ones next to it or where the script's own imports are found."""

    def find(module: str, level: int) -> Path | None:
        if level:
            base = path.parent
            for _ in range(level - 1):
                base = base.parent
            return find_module(base, module)
        return find_module(path.parent, module) or outer(module, 0)

    return find


class _Summariser:
    def __init__(self, summary: ModuleSummary, tree: ast.Module, table: ImportTable, seen: frozenset[Path]) -> None:
        self.summary = summary
        self.tree = tree
        self.table = table
        self.seen = seen
        self.calls: dict[str, list[ast.Call]] = {}  # function -> calls in it
        self.direct: dict[str, set[str]] = {}
        self.defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}  # function or Class.method -> its node
        self.passes: dict[str, dict[str, list[tuple[str, Slot]]]] = {}  # function -> parameter -> (callee, slot)
        self.guarded: dict[str, set[int]] = {}  # function -> its calls under a rank test (ids)
        self.summed: dict[str, dict[str, SumLoop]] = {}  # function -> loader parameter -> its summing loop
        self.read: set[Stamp] = set()  # the other modules read, and what they read

    def _other(self, path: Path) -> ModuleSummary:
        """The summary of another local module this one reads."""
        other = summarise(path, finder(path, self.table.find), self.seen)
        key = stamp(path)
        if key is not None:
            self.read |= {key, *_READ.get(key, ())}
        return other

    def run(self) -> None:
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(node.name, node)
                built = ast_function_locals(node) if isinstance(node, ast.FunctionDef) else []
                if built:
                    self.summary.builders[node.name] = ClassSummary(
                        node.name,
                        [],
                        methods={node.name},
                        local_models=[(node.name, n, line) for n, line in built],
                        function=True,
                    )
            elif isinstance(node, ast.ClassDef):
                self._class(node)
            elif is_main_block(node):
                self.summary.runs_as_program = True
        self._propagate()
        for name, node in self.defs.items():  # what it does with a DataLoader, training here or through a call
            for param, uses in ast_loader_uses(node, self.summary.params[name], self._trains_in).items():
                self.summary.param_uses[name][param] |= uses
        resolve_passes(self.summary.param_uses, self.passes, self.summary.params)
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or is_main_block(stmt):
                continue
            for call in (n for n in ast.walk(stmt) if isinstance(n, ast.Call)):
                self.summary.at_import |= self._call_effects(call, self.summary.effects)
        self._imported()
        inherit_methods(self.summary, self.tree)
        own = [n.name for n in self.tree.body if isinstance(n, ast.ClassDef)]
        built_parameters(self.summary.classes, own)

    def _trains_in(self, node: ast.AST) -> bool:
        """Does `node` run a training step, itself or through a function or method of this module (or of
        another local module) it calls (`for data in loader: self._critic_train_iteration(data)`)?"""
        effects = self.summary.effects
        return any(trains_call(c) or TRAINS in self._call_effects(c, effects) for c in calls(node))

    def _imported(self) -> None:
        """What the module's own imports make of its names: a library module or function it imports
        (`import torch.distributed as dist`: `dist` is `torch.distributed`), and a function or class
        it takes from another local module, which a package's `__init__.py` hands on
        (`from .distributed_utils import init_distributed_mode`): read as if it were defined here."""
        for node in self.tree.body:
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for alias in (a for a in node.names if a.name != "*"):
                local = alias.asname or alias.name.split(".")[0]
                origin, path, member = self.table.resolve(local)
                if origin is Origin.LIBRARY and local in self.table.imported:
                    module, name, _ = self.table.imported[local]
                    self.summary.library[local] = ".".join(filter(None, [module, name]))
                elif origin is Origin.LOCAL and path is not None and member and path not in self.seen:
                    if local in self.summary.effects or local in self.summary.classes:
                        continue
                    self._take(local, self._other(path), member)

    def _take(self, local: str, other: ModuleSummary, member: str) -> None:
        """`member` of `other`, known here as `local`: its effects, or its class with its methods."""
        summary = self.summary
        for key, effects in other.effects.items():
            if key == member:
                summary.effects[local] = set(effects)
            elif key.startswith(f"{member}."):
                summary.effects[f"{local}{key[len(member) :]}"] = set(effects)
        if member in other.classes:
            summary.classes[local] = other.classes[member]
        if member in other.library:
            summary.library[local] = other.library[member]
        for table in ("returns", "params", "param_uses", "model_returns", "joins_on_cuda", "file_paths"):
            value = getattr(other, table).get(member)
            if value is not None:
                getattr(summary, table)[local] = value

    def _function(self, name: str, node: ast.AST) -> None:
        self.calls[name] = calls(node)
        direct = set()
        for n in nodes(node):
            if isinstance(n, ast.Return) and n.value is not None and is_rank_test(n.value):
                direct.add(RANK_TEST)
            if isinstance(n, (ast.Assign, ast.AugAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if any(ast_dotted(t) in ("builtins.print", "__builtin__.print", "__builtins__.print") for t in targets):
                    direct.add(SILENCES_PRINT)
        direct.update(setup_findings(node, self._qual, self.summary.path))
        direct.update(every_rank_writes(node, self._qual, self.summary.path))
        self.guarded[name] = rank_guarded_calls(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):  # what it does with a model it receives
            params = self.summary.params[name] = ast_params(node, method="." in name)
            self.summary.param_uses[name], self.passes[name] = ast_uses(node, params, name.rpartition(".")[0] or None)
            self.summed[name] = ast_summed(node, params)
            averages = ast_averages(node, params)
            if averages:
                self.summary.averages[name] = averages
            self.defs[name] = node
            if ast_trains(node):
                direct.add(TRAINS)
            slot = ast_model_return(node)
            if slot is not None:
                self.summary.model_returns[name] = slot
            line = cuda_join_line(node, self._qual)
            if line is not None:
                self.summary.joins_on_cuda[name] = line
            paths = path_templates(node, self._qual)
            if paths:
                self.summary.file_paths[name] = paths
        self.direct[name] = direct
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            shape = returned(node, self._builds)
            if shape is not None:
                self.summary.returns[name] = shape

    def _builds(self, call: ast.Call) -> str | None:
        """RETURNS_LOADER for a torch DataLoader(...) call, RETURNS_SAMPLER for a DistributedSampler(...)."""
        name = ast_dotted(call.func)
        if name is None:
            return None
        origin = self.table.imported.get(name.split(".")[0])
        qual = name if origin is None else ".".join(filter(None, [origin[0], origin[1], *name.split(".")[1:]]))
        if not qual.startswith("torch"):
            return None
        return {"DataLoader": RETURNS_LOADER, "DistributedSampler": RETURNS_SAMPLER}.get(name.split(".")[-1])

    def _qual(self, name: str) -> str:
        origin = self.table.imported.get(name.split(".")[0])
        return name if origin is None else ".".join(filter(None, [origin[0], origin[1], *name.split(".")[1:]]))

    def _class(self, node: ast.ClassDef) -> None:
        trained, wraps = ast_trained_attributes(node), ast_wraps(node)
        cls = ClassSummary(node.name, [ast_dotted(b) or "" for b in node.bases], trained=trained, wraps=wraps)
        cls.local_models = ast_local_models(node)
        read_input_parameters(cls, node, str(self.summary.path))
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                cls.methods.add(item.name)
                self._function(f"{node.name}.{item.name}", item)
                for n in nodes(item):
                    if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and ast_dotted(n.value) == "self":
                        cls.attributes.add(n.attr)
            elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                cls.attributes.update(t.id for t in targets if isinstance(t, ast.Name))
        cls.forward_like = ast_forward_methods(node)
        kept_uses(self.summary.param_uses, node)  # a loader or a model it keeps and trains
        self.summary.classes[node.name] = cls

    def _propagate(self) -> None:
        effects = {name: set(d) for name, d in self.direct.items()}
        for _ in range(DEPTH + 1):  # functions of this module calling each other
            changed = False
            for name, called in self.calls.items():
                for call in called:
                    new = self._call_effects(call, effects) - effects[name] - {RANK_TEST}
                    if id(call) in self.guarded.get(name, ()):  # what it writes, only some ranks write
                        new = {e for e in new if not (isinstance(e, Finding) and e.kind in PER_RANK_KINDS)}
                    if new:
                        effects[name] |= new
                        changed = True
            if not changed:
                break
        self.summary.effects = effects
        for name, by_param in self.summed.items():  # a sum over a loader, reduced over the ranks after the loop
            for param, loop in by_param.items():
                if loop.averaged or not any(self._sums(call, effects) for call in loop.after):
                    continue  # an average over the ranks of whole-set values is the whole-set value
                quiet = loop.no_grad and not any(COLLECTIVE in self._call_effects(c, effects) for c in loop.inside)
                self.summary.param_uses[name].setdefault(param, set()).add(REDUCED if quiet else REDUCED_EACH_BATCH)
        for name in list(self.summary.joins_on_cuda):  # a join through another function: not known to need a GPU
            if any(INIT in self._call_effects(c, effects) for c in self.calls[name] if not joins_itself(c, self._qual)):
                del self.summary.joins_on_cuda[name]

    def _sums(self, call: ast.Call, effects: dict[str, set[str]]) -> bool:
        """Does `call` add up its argument over the ranks: a collective that sums (`dist.all_reduce(x)`), or a
        function of the script's modules that issues one and does not divide that argument by the world
        size (`reduce_value(x, average=False)`, where `if average: value /= world_size`)?"""
        if COLLECTIVE not in self._call_effects(call, effects):
            return False
        if self._qual(ast_dotted(call.func) or "").startswith("torch.distributed"):
            return ast_sum_op(call)
        found = self._signature(call)
        return found is not None and not ast_call_averages(call, *found)

    def _signature(self, call: ast.Call) -> tuple[list[str], dict[str, tuple]] | None:
        """(parameters, averaged parameters) of the function of this or another local module `call` calls."""
        name = ast_dotted(call.func) or ""
        summary, member = (self.summary, name) if name in self.summary.params else (None, None)
        if summary is None and name.split(".")[0] in self.table.imported:
            kind, path, member = self.table.resolve(name)
            if kind is Origin.LOCAL and path is not None and member and path not in self.seen:
                summary = self._other(path)
        return None if summary is None else (summary.params.get(member, []), summary.averages.get(member, {}))

    def _call_effects(self, call: ast.Call, effects: dict[str, set[str]]) -> set[str]:
        name = ast_dotted(call.func)
        if name is None:
            return set()
        origin = self.table.imported.get(name.split(".")[0])
        qual = name if origin is None else ".".join(filter(None, [origin[0], origin[1], *name.split(".")[1:]]))
        last = qual.split(".")[-1]  # `DDP(...)` after `from torch.nn.parallel import DistributedDataParallel as DDP`
        out = set()
        if qual.startswith("torch"):
            effect = _DIRECT.get(last)
            if effect is not None:
                out.add(effect)
            if qual.startswith("torch.distributed") and last in COLLECTIVES:
                out.add(COLLECTIVE)
        if name in effects:
            return out | effects[name]  # a function of this module
        if name.startswith("self.") and name.count(".") == 1:
            for key, value in effects.items():  # a method of a class of this module
                if key.endswith(f".{last}"):
                    out |= value
            return out
        if origin is not None:
            kind, path, member = self.table.resolve(name)
            if kind is Origin.LOCAL and path is not None and member and path not in self.seen:
                other = self._other(path)
                out |= other.effects.get(member, set())
        return out


# the effects and finding kinds (module_summary.py) are read from here by the rules and the analysis
__all__ = [
    "COLLECTIVE",
    "TRAINS",
    "DESTROY",
    "GLOBAL_RANK_DEVICE",
    "HARDCODED_BACKEND",
    "INIT_ARGS",
    "SET_DEVICE",
    "Finding",
    "INIT",
    "LOAD",
    "LOADER",
    "RANK_TEST",
    "SAMPLER",
    "SAVE",
    "SILENCES_PRINT",
    "WRAP",
    "ClassSummary",
    "ModuleSummary",
    "finder",
    "summarise",
]
