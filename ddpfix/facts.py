"""One read-only analysis of a training script, shared by every rule.

`ScriptFacts` records, in a single pass over the tree, what the script is made of: torch import
aliases, calls (resolved to qualified names), assignments, loops, functions and classes, and the
statement and block that hold each of them. Everything rules ask ("which model is trained", "where is
the epoch loop", "is this statement already rank-guarded") is derived from those records on demand
and cached, so no rule re-walks the tree.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property

import libcst as cst
from libcst.metadata import CodeRange

from .positions import StatementPositions, module_positions
from .syntax import (
    assign_targets,
    assigned_value,
    calls_in,
    child_nodes,
    code_of,
    dotted,
    expr_call,
    index_module,
    kwarg,
    mentions,
    method_name,
    positional,
    receiver,
    walk,
)

Block = cst.Module | cst.IndentedBlock
Scope = cst.Module | cst.FunctionDef

RANK_NAME = re.compile(
    r"(^|_)(rank|gpu_id|gpu)$|is_main|is_master|main_process|master_process|rank_?zero|global_zero|^master$",
    re.IGNORECASE,
)
OPTIMIZER_NAMES = re.compile(r"opt", re.IGNORECASE)
SCHEDULER_NAMES = re.compile(r"sched", re.IGNORECASE)
LOGGER_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
FILE_HANDLERS = {
    "logging.FileHandler",
    "logging.handlers.RotatingFileHandler",
    "logging.handlers.TimedRotatingFileHandler",
    "logging.handlers.WatchedFileHandler",
}
TRACKER_CTORS = {
    "torch.utils.tensorboard.SummaryWriter",
    "torch.utils.tensorboard.writer.SummaryWriter",
    "tensorboardX.SummaryWriter",
}
TRACKER_MODULES = ("wandb", "mlflow")
DDP_NAMES = {
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.DistributedDataParallel",
}
DP_NAMES = {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"}
LOADER_NAMES = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
SAMPLER_NAMES = {"torch.utils.data.distributed.DistributedSampler", "torch.utils.data.DistributedSampler"}
FRAMEWORKS = {
    "accelerate",
    "lightning",
    "pytorch_lightning",
    "deepspeed",
    "horovod",
    "torch_xla",
    "colossalai",
    "fairscale",
}
BATCHNORM = re.compile(r"^torch\.nn\.(modules\.batchnorm\.)?BatchNorm[123]d$|^torch\.nn\.BatchNorm$")


@dataclass(eq=False)
class Site:
    """A node together with where it sits: its statement, the block holding that, and its scope."""

    node: cst.CSTNode
    stmt: cst.BaseStatement
    block: Block
    func: cst.FunctionDef | None
    cls: cst.ClassDef | None


@dataclass(eq=False)
class Model:
    """A model the script trains: the handle it is trained through and where it is defined."""

    handle: str  # "model", "self.model", "netG"
    definition: Site  # the assignment that gives the handle its final (pre-training) value
    optimizers: list[Site]


@dataclass(eq=False)
class Loader:
    site: Site  # the DataLoader(...) call
    target: str | None  # "train_loader", "self.train_loader"
    binding: cst.CSTNode | None = None  # the statement binding `target` (a factory's call site, or the loader's own)


@dataclass(eq=False)
class EpochLoop:
    loop: cst.For
    site: Site
    epoch: str | None  # loop variable, when it is a plain name
    loader_expr: str | None  # how the loader is reached from the loop's scope


class _Collector:
    """One pass over the tree (syntax nodes only, no whitespace), recording parents, source order
    and the node kinds the rules ask about."""

    def __init__(self) -> None:
        self.parent: dict[cst.CSTNode, cst.CSTNode] = {}
        self.order: dict[cst.CSTNode, int] = {}
        self.nodes: list[cst.CSTNode] = []  # pre-order
        self.spans: dict[int, list[int]] = {}  # id(node) -> [start, end) in `nodes`
        self.calls: list[cst.Call] = []
        self.loops: list[cst.For | cst.While] = []
        self.funcs: list[cst.FunctionDef] = []
        self.classes: list[cst.ClassDef] = []
        self.ifs: list[cst.If] = []
        self.strings: list[cst.SimpleString] = []
        self.assigns: list[cst.Assign] = []
        self.aliases: dict[str, str] = {}
        self.names: set[str] = set()
        self._kinds = {
            cst.Call: self.calls,
            cst.For: self.loops,
            cst.While: self.loops,
            cst.FunctionDef: self.funcs,
            cst.ClassDef: self.classes,
            cst.If: self.ifs,
            cst.SimpleString: self.strings,
            cst.Assign: self.assigns,
        }

    def run(self, module: cst.Module) -> None:
        stack: list = [(module, None)]
        nodes, spans, parent, order = self.nodes, self.spans, self.parent, self.order
        while stack:
            node, up = stack.pop()
            if up is _LEAVE:
                spans[id(node)][1] = len(nodes)
                continue
            if up is not None:
                parent[node] = up
            order[node] = len(nodes)
            spans[id(node)] = [len(nodes), 0]
            nodes.append(node)
            self._record(node)
            stack.append((node, _LEAVE))
            stack.extend((child, node) for child in reversed(child_nodes(node)))

    def _record(self, node: cst.CSTNode) -> None:
        kind = self._kinds.get(type(node))
        if kind is not None:
            kind.append(node)
        elif type(node) is cst.Name:
            self.names.add(node.value)  # type: ignore[attr-defined]
        elif type(node) is cst.Import:
            for alias in node.names:  # type: ignore[attr-defined]
                full = dotted(alias.name) or ""
                if alias.asname is not None:
                    self.aliases[alias.asname.name.value] = full  # type: ignore[union-attr]
                else:
                    head = full.split(".")[0]
                    self.aliases[head] = head
        elif type(node) is cst.ImportFrom and node.module is not None and not node.relative:  # type: ignore[attr-defined]
            mod = dotted(node.module) or ""  # type: ignore[attr-defined]
            if not isinstance(node.names, cst.ImportStar):  # type: ignore[attr-defined]
                for alias in node.names:  # type: ignore[attr-defined]
                    name = dotted(alias.name) or ""
                    local = alias.asname.name.value if alias.asname is not None else name  # type: ignore[union-attr]
                    self.aliases[local] = f"{mod}.{name}"


_LEAVE = object()
_UNKNOWN = object()


class ScriptFacts:
    """What a script is, computed once and shared by every rule."""

    def __init__(self, module: cst.Module, text: str | None = None, tree: ast.Module | None = None) -> None:
        """`text`, the source `module` was parsed from, and `tree`, Python's parse of it, make reported
        positions cheaper to find (see positions.py); both are optional."""
        self.module = module
        self._text, self._tree = text, tree
        c = _Collector()
        c.run(module)
        self.parent = c.parent
        self.order = c.order
        index_module(c.nodes, c.spans)
        self._spans = c.spans
        self.calls = c.calls
        self.loops = c.loops
        self.funcs = c.funcs
        self.classes = c.classes
        self.ifs = c.ifs
        self.strings = c.strings
        self.assigns = c.assigns
        self.aliases = c.aliases
        self.names = c.names
        self._positions = None

    # ----------------------------------------------------------------- positions
    def position(self, node: cst.CSTNode) -> CodeRange:
        """1-based line, 0-based column range of `node` (computed once, only when asked)."""
        if self._positions is None:
            if self._text is None:
                self._positions = module_positions(self.module)
            else:
                self._positions = StatementPositions(self.module, self._text, self.parent, self._tree)
        return self._positions[node]

    # ----------------------------------------------------------------- names
    def qualname(self, node: cst.BaseExpression) -> str | None:
        """`t.utils.data.DataLoader` -> `torch.utils.data.DataLoader` through the import aliases."""
        d = dotted(node)
        if d is None:
            return None
        head, _, rest = d.partition(".")
        if head in self.aliases:
            full = self.aliases[head]
            return f"{full}.{rest}" if rest else full
        return d

    @cached_property
    def _call_quals(self) -> dict[cst.Call, str | None]:
        return {c: self.qualname(c.func) for c in self.calls}

    def call_qual(self, call: cst.Call) -> str | None:
        q = self._call_quals.get(call, _UNKNOWN)
        return self.qualname(call.func) if q is _UNKNOWN else q  # type: ignore[return-value]

    def alias_for(self, qualified: str, *, via_parent: bool = False) -> str | None:
        """Local spelling of a module or object the script already imports (`dist` for torch.distributed).

        With `via_parent`, `import torch` is enough to spell `torch.nn` as `torch.nn`.
        """
        for local, full in self.aliases.items():
            if full == qualified:
                return local
        head, _, rest = qualified.partition(".")
        if via_parent and self.aliases.get(head) == head and rest:
            return qualified
        return None

    @cached_property
    def uses_torch(self) -> bool:
        return any(v == "torch" or v.startswith("torch.") for v in self.aliases.values())

    @cached_property
    def other_launcher(self) -> str | None:
        """A library that distributes the script itself (Accelerate, Lightning, DeepSpeed, FSDP,
        Horovod, XLA): its own setup, samplers and wrappers are not DDP's to rewrite."""
        for full in self.aliases.values():
            top = full.split(".")[0]
            if top in FRAMEWORKS or full.startswith(("torch.distributed.fsdp", "torch.distributed._composable.fsdp")):
                return top if top in FRAMEWORKS else "FSDP"
        return None

    # ----------------------------------------------------------------- structure
    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        cur = self.parent.get(node)
        while cur is not None:
            yield cur
            cur = self.parent.get(cur)

    def site(self, node: cst.CSTNode) -> Site:
        """The statement holding `node` (a direct child of a block) and its block/function/class."""
        child = node
        stmt = block = None
        func = cls = None
        for anc in self.ancestors(node):
            if (
                stmt is None
                and isinstance(anc, (cst.Module, cst.IndentedBlock))
                and isinstance(child, cst.BaseStatement)
            ):
                stmt, block = child, anc
            if stmt is not None and func is None and isinstance(anc, cst.FunctionDef):
                func = anc
            if stmt is not None and cls is None and isinstance(anc, cst.ClassDef):
                cls = anc
            child = anc
        if stmt is None:  # node is itself a top-level statement
            stmt, block = node, self.module  # type: ignore[assignment]
        return Site(node, stmt, block, func, cls)  # type: ignore[arg-type]

    def block_owner(self, block: Block) -> cst.CSTNode | None:
        return self.parent.get(block)

    def enclosing(self, node: cst.CSTNode, kind: type) -> cst.CSTNode | None:
        for anc in self.ancestors(node):
            if isinstance(anc, kind):
                return anc
        return None

    def scope_of(self, node: cst.CSTNode) -> Scope:
        return self.enclosing(node, cst.FunctionDef) or self.module  # type: ignore[return-value]

    def in_one_line_suite(self, node: cst.CSTNode) -> bool:
        """True for statements written on one line after `:` (`if x: y()`), which cannot take a guard."""
        return any(isinstance(a, cst.SimpleStatementSuite) for a in self.ancestors(node))

    def is_rank_test(self, expr: cst.CSTNode) -> bool:
        for n in walk(expr):
            if isinstance(n, (cst.Name, cst.Attribute)):
                d = dotted(n) or ""
                if RANK_NAME.search(d.split(".")[-1]):
                    return True
            if isinstance(n, cst.Call):
                q = self.call_qual(n) or ""
                if q.endswith("get_rank") or q.endswith("is_main_process"):
                    return True
        return False

    def rank_guarded(self, node: cst.CSTNode, _depth: int = 0) -> bool:
        """Is `node` inside a branch that depends on the rank (`if rank == 0:`, `if is_main_process():`),
        or in a function of this file that is only ever called from such branches?"""
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.If, cst.IfExp, cst.While)) and self.is_rank_test(anc.test):
                return True
            if isinstance(anc, cst.FunctionDef):
                if self.is_rank_test(anc.name):
                    return True  # def save_on_master(...): the helper itself is rank-0 only
                if _depth < 3:
                    callers = [c for c in self.calls if self._local_callee(c) is anc]
                    if callers and all(self.rank_guarded(c, _depth + 1) for c in callers):
                        return True
                return False
        return False

    def loader_reach(self, loader: "Loader", loop: cst.CSTNode) -> str | None:
        """How code at `loop` names the loader: its variable in the same scope, or the attribute
        a class stores it in (`Trainer(model, train_loader)` -> `self.train_data`)."""
        if loader.target is None or loader.binding is None:
            return None
        if self.scope_of(loop) is self.scope_of(loader.binding):
            return loader.target
        cls = self.enclosing(loop, cst.ClassDef)
        if isinstance(cls, cst.ClassDef):
            if loader.target.startswith("self.") and loader.site.cls is cls:
                return loader.target
            return self.attribute_holding(cls, loader.target)
        return None

    def calls_to(self, *qualified: str) -> list[cst.Call]:
        wanted = set(qualified)
        return [c for c, q in self._call_quals.items() if q in wanted]

    def calls_matching(self, pred) -> list[cst.Call]:
        return [c for c, q in self._call_quals.items() if pred(q or "")]

    def method_calls(self, *methods: str) -> list[cst.Call]:
        wanted = set(methods)
        return [c for c in self.calls if method_name(c) in wanted]

    @cached_property
    def func_by_name(self) -> dict[str, cst.FunctionDef]:
        """Module-level functions by name (methods are not included)."""
        return {
            f.name.value: f
            for f in self.funcs
            if self.parent.get(self.parent.get(f)) is None or self.parent.get(f) is self.module
        }

    def methods_of(self, cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
        cache = self.__dict__.setdefault("_methods", {})
        if cls not in cache:
            cache[cls] = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}  # type: ignore[union-attr]
        return cache[cls]

    @cached_property
    def _assigning(self) -> dict[str, list[cst.SimpleStatementLine]]:
        """Every statement line of the module by the targets it assigns, in source order."""
        out: dict[str, list[cst.SimpleStatementLine]] = {}
        for n in walk(self.module):
            if isinstance(n, cst.SimpleStatementLine):
                for target in dict.fromkeys(assign_targets(n)):
                    out.setdefault(target, []).append(n)
        return out

    def assignments(self, scope: cst.CSTNode, target: str) -> list[Site]:
        """Statements in `scope` (not nested functions) that assign `target`, in source order."""
        span = self._spans.get(id(scope))
        if span is not None and self.order.get(scope) == span[0]:  # a node of this module: ask the index
            lines = [n for n in self._assigning.get(target, ()) if span[0] <= self.order[n] < span[1]]
        else:
            lines = [n for n in walk(scope) if isinstance(n, cst.SimpleStatementLine) and target in assign_targets(n)]
        return [self.site(n) for n in lines if isinstance(scope, cst.ClassDef) or self.scope_of(n) is scope]

    def before(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """Does `a` start before `b` in the source?"""
        return self.order[a] < self.order[b]

    # ----------------------------------------------------------------- distributed state
    def _qual_endswith(self, *suffixes: str) -> list[cst.Call]:
        return [
            c
            for c in self.calls
            if (self.call_qual(c) or "").startswith("torch.") and (self.call_qual(c) or "").endswith(suffixes)
        ]

    @cached_property
    def init_calls(self) -> list[cst.Call]:
        return self._qual_endswith("init_process_group")

    @cached_property
    def set_device_calls(self) -> list[cst.Call]:
        return self.calls_to("torch.cuda.set_device")

    @cached_property
    def destroy_calls(self) -> list[cst.Call]:
        return self._qual_endswith("destroy_process_group")

    @cached_property
    def spawn_calls(self) -> list[cst.Call]:
        return self.calls_to("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes")

    @cached_property
    def ddp_calls(self) -> list[cst.Call]:
        return self.calls_matching(lambda q: q in DDP_NAMES)

    @cached_property
    def sampler_calls(self) -> list[cst.Call]:
        return self.calls_matching(lambda q: q in SAMPLER_NAMES)

    @cached_property
    def loader_calls(self) -> list[cst.Call]:
        return self.calls_matching(lambda q: q in LOADER_NAMES)

    @cached_property
    def syncbn_calls(self) -> list[cst.Call]:
        return [c for c in self.method_calls("convert_sync_batchnorm")]

    @cached_property
    def batchnorm_calls(self) -> list[cst.Call]:
        return self.calls_matching(lambda q: bool(BATCHNORM.match(q)))

    def string_literals(self, needle: str) -> list[tuple[cst.SimpleString, str]]:
        """(node, value) of the text string literals whose source mentions `needle` (evaluating every
        literal of a file costs a Python parse each)."""
        out = []
        for string in self.strings:
            if needle in string.value:
                value = string.evaluated_value
                if isinstance(value, str):
                    out.append((string, value))
        return out

    @cached_property
    def _env_string_lines(self) -> set[cst.CSTNode]:
        """Statement lines holding a string literal that names a torchrun variable (`"LOCAL_RANK"`): the
        only ones whose text the environment lookups need to read."""
        out = set()
        for string in self.strings:
            if "RANK" in string.value or "WORLD_SIZE" in string.value:
                line = next((a for a in self.ancestors(string) if isinstance(a, cst.SimpleStatementLine)), None)
                if line is not None:
                    out.add(line)
        return out

    def reads_environment(self, stmt: cst.CSTNode) -> bool:
        """Might `stmt` (a statement line) read RANK, LOCAL_RANK or WORLD_SIZE from the environment?"""
        return stmt in self._env_string_lines

    @cached_property
    def env_names(self) -> dict[str, str]:
        """Module-level names already bound to torchrun's environment: {"RANK": "RANK", ...}.

        Recognises `X = int(os.environ[...]("RANK"...))` and `DISTRIBUTED = WORLD_SIZE > 1` shapes.
        """
        found: dict[str, str] = {}
        for stmt in self.module.body:
            targets = assign_targets(stmt)
            value = assigned_value(stmt)
            if (
                len(targets) != 1
                or value is None
                or not (self.reads_environment(stmt) or isinstance(value, cst.Comparison))
            ):
                continue
            text = code_of(value)
            m = re.search(r"environ(?:\.get\(|\[)\s*['\"](RANK|LOCAL_RANK|WORLD_SIZE)['\"]", text)
            if m:
                found.setdefault(m.group(1), targets[0])
            elif "WORLD_SIZE" in found and re.fullmatch(rf"{re.escape(found['WORLD_SIZE'])}\s*>\s*1", text):
                found.setdefault("DISTRIBUTED", targets[0])
        return found

    # ----------------------------------------------------------------- training
    @cached_property
    def backward_calls(self) -> list[cst.Call]:
        return self.method_calls("backward")

    @cached_property
    def optimizer_sites(self) -> list[Site]:
        """`opt = SGD(model.parameters(), ...)`-shaped statements."""
        out = []
        for call in self.calls:
            q = self.call_qual(call) or ""
            receivers = self._parameter_receivers(call)
            if not receivers:
                continue
            site = self.site(call)
            targets = assign_targets(site.stmt)
            if assigned_value(site.stmt) is not call:
                continue
            if (
                q.startswith("torch.optim.")
                or any(OPTIMIZER_NAMES.search(t.split(".")[-1]) for t in targets)
                or re.search(r"(Adam|SGD|Lion|LAMB|Adafactor|RMSprop|Adagrad|Optimizer)", q)
            ):
                out.append(site)
        return out

    def _parameter_receivers(self, call: cst.Call) -> list[str]:
        out = []
        for arg in call.args:
            for inner in calls_in(arg.value):
                if method_name(inner) in ("parameters", "named_parameters") and receiver(inner) is not None:
                    d = dotted(receiver(inner))  # type: ignore[arg-type]
                    if d:
                        out.append(d)
        return out

    @cached_property
    def optimizer_targets(self) -> set[str]:
        return {t for s in self.optimizer_sites for t in assign_targets(s.stmt)}

    @cached_property
    def scheduler_sites(self) -> list[Site]:
        out = []
        for call in self.calls:
            site = self.site(call)
            if assigned_value(site.stmt) is not call:
                continue
            q = self.call_qual(call) or ""
            first = positional(call, 0) or kwarg(call, "optimizer")
            if first is None or dotted(first.value) not in self.optimizer_targets:
                continue
            if "lr_scheduler" in q or any(SCHEDULER_NAMES.search(t) for t in assign_targets(site.stmt)):
                out.append(site)
        return out

    @cached_property
    def trains(self) -> bool:
        return bool(self.optimizer_sites or self.backward_calls)

    @cached_property
    def models(self) -> list[Model]:
        """The models the script trains, each with the handle and the definition to wrap after."""
        by_handle: dict[str, Model] = {}
        for opt in self.optimizer_sites:
            for recv in self._parameter_receivers(opt.node):  # type: ignore[arg-type]
                if recv.endswith(".module"):
                    recv = recv[: -len(".module")]
                definition = self._definition_for(recv, opt)
                if definition is None:
                    continue
                handle = assign_targets(definition.stmt)[0] if len(assign_targets(definition.stmt)) == 1 else recv
                if handle in by_handle:
                    by_handle[handle].optimizers.append(opt)
                else:
                    by_handle[handle] = Model(handle, definition, [opt])
        return list(by_handle.values())

    def _definition_for(self, recv: str, opt: Site) -> Site | None:
        """Where the model reaches its final handle before training.

        Preference: a class attribute (`self.<name> = ...`) of a class that trains through it; else the
        last assignment of `recv` before the optimizer in the optimizer's scope; else a module-level one.
        """
        base = recv.split(".")[-1]
        for cls in self.classes:
            handle = f"self.{base}"
            if not self._class_trains_through(cls, handle):
                continue
            defs = [s for s in self.assignments(cls, handle) if not self._is_wrap(s.stmt)]
            if defs:
                return defs[-1]
        return self._local_definition(recv, opt.stmt, opt.func, depth=0)

    def _local_definition(self, name: str, at: cst.CSTNode, func: cst.FunctionDef | None, depth: int) -> Site | None:
        """The last assignment of `name` before `at` in `func`; for a parameter of `func`, the
        definition of the argument its caller passes (`train(args, model)` -> `model = Net()` in main)."""
        scope = func or self.module
        before = [s for s in self.assignments(scope, name) if self.before(s.stmt, at)]
        if not before and isinstance(func, cst.FunctionDef) and depth < 2 and "." not in name:
            for call in self.calls:
                if self._local_callee(call) is not func:
                    continue
                arg = _argument_for(func, call, name)
                caller_name = dotted(arg) if arg is not None else None
                if caller_name:
                    found = self._local_definition(caller_name, call, self.enclosing(call, cst.FunctionDef), depth + 1)  # type: ignore[arg-type]
                    if found is not None:
                        return found
        if not before and scope is not self.module:
            before = self.assignments(self.module, name)
        defs = [s for s in before if not self._is_wrap(s.stmt)] or before  # `model = DDP(Net())`: the wrap defines it
        return defs[-1] if defs else None

    def _class_trains_through(self, cls: cst.ClassDef, handle: str) -> bool:
        for method in self.methods_of(cls).values():
            if not any(True for c in calls_in(method) if method_name(c) == "backward" or (method_name(c) == "step")):
                continue
            if any(dotted(c.func) == handle for c in calls_in(method)):
                return True
        for method in self.methods_of(cls).values():  # forward in one method, backward in another
            if any(dotted(c.func) == handle for c in calls_in(method)):
                return any(method_name(c) == "backward" for m in self.methods_of(cls).values() for c in calls_in(m))
        return False

    def _is_wrap(self, stmt: cst.CSTNode) -> bool:
        value = assigned_value(stmt)
        return isinstance(value, cst.Call) and (self.call_qual(value) in DDP_NAMES or self.call_qual(value) in DP_NAMES)

    def wrap_point(self, model: Model) -> "WrapPoint":
        """Where this model gets wrapped (see `_wrap_point`), computed once per model."""
        cache = self.__dict__.setdefault("_wrap_points", {})
        if id(model) not in cache:
            cache[id(model)] = _wrap_point(self, model)
        return cache[id(model)]

    def wrapped(self, model: Model) -> cst.Call | None:
        """An existing `DDP(<model>...)` call for this model, if the script has one."""
        value = assigned_value(model.definition.stmt)
        if isinstance(value, cst.Call) and self.call_qual(value) in DDP_NAMES:
            return value  # `model = DDP(Net())`: built inside the wrap
        return self._wrapper_call(model, self.ddp_calls)

    def dataparallel(self, model: Model) -> cst.Call | None:
        """An `nn.DataParallel(<model>)` call for this model, if the script has one."""
        return self._wrapper_call(model, self.calls_matching(lambda q: q in DP_NAMES))

    def model_class(self, name: str, at: cst.CSTNode, _depth: int = 0) -> cst.ClassDef | None:
        """The class of this file that `name` holds at `at`: `model = Net(...).to(device)` -> Net."""
        scope = self.scope_of(at)
        defs = [s for s in self.assignments(scope, name) if not self.before(at, s.stmt)] or self.assignments(
            self.module, name
        )
        if name.startswith("self.") and isinstance(self.enclosing(at, cst.ClassDef), cst.ClassDef):
            defs = self.assignments(self.enclosing(at, cst.ClassDef), name)
        by_name = {c.name.value: c for c in self.classes}
        for site in reversed(defs):
            value = assigned_value(site.stmt)
            while isinstance(value, cst.Call):
                if isinstance(value.func, cst.Name) and value.func.value in by_name:
                    return by_name[value.func.value]
                if self.call_qual(value) in DDP_NAMES | DP_NAMES and value.args:
                    value = value.args[0].value  # ddp_model = DDP(model)
                    continue
                value = receiver(value)  # Net().to(device).train()
            if value is not None and dotted(value) is not None and dotted(value) != name and _depth < 3:
                return self.model_class(dotted(value), site.stmt, _depth + 1)  # type: ignore[arg-type]
        return None

    def class_members(self, cls: cst.ClassDef) -> tuple[set[str], set[str]]:
        """(methods, attributes set on `self`) of a class of this file and its in-file bases."""
        methods: set[str] = set()
        attrs: set[str] = set()
        by_name = {c.name.value: c for c in self.classes}
        todo, seen = [cls], set()
        while todo:
            c = todo.pop()
            if id(c) in seen:
                continue
            seen.add(id(c))
            methods |= set(self.methods_of(c))
            for n in walk(c):
                if (
                    isinstance(n, cst.AssignTarget)
                    and isinstance(n.target, cst.Attribute)
                    and dotted(n.target.value) == "self"
                ):
                    attrs.add(n.target.attr.value)
            todo += [by_name[b] for b in (dotted(a.value) for a in c.bases) if b in by_name]
        return methods, attrs

    def _wrapper_call(self, model: Model, calls: list[cst.Call]) -> cst.Call | None:
        base = model.handle.split(".")[-1]
        for call in calls:
            arg = positional(call, 0) or kwarg(call, "module")
            if arg is not None and any(
                (dotted(n) or "").split(".")[-1] == base
                for n in walk(arg.value)
                if isinstance(n, (cst.Name, cst.Attribute))
            ):
                return call
        return None

    # ----------------------------------------------------------------- data
    @cached_property
    def loaders(self) -> list[Loader]:
        out = []
        for call in self.loader_calls:
            site = self.site(call)
            targets = assign_targets(site.stmt)
            target = targets[0] if len(targets) == 1 and assigned_value(site.stmt) is call else None
            binding: cst.CSTNode | None = site.stmt if target else None
            small = site.stmt.body[0] if isinstance(site.stmt, cst.SimpleStatementLine) else None
            if target is None and isinstance(small, cst.Return) and small.value is call and site.func is not None:
                target, binding = self._factory_binding(site.func)  # return DataLoader(...) in a factory
            out.append(Loader(site, target, binding))
        return out

    def _factory_binding(self, func: cst.FunctionDef) -> tuple[str | None, cst.CSTNode | None]:
        """`train_data = prepare_dataloader(...)`: the name a factory's result is bound to."""
        for call in self.calls:
            if self._local_callee(call) is func:
                stmt = self.site(call).stmt
                targets = assign_targets(stmt)
                if len(targets) == 1 and assigned_value(stmt) is call:
                    return targets[0], stmt
        return None, None

    def training_loop_of(self, loader: Loader) -> cst.For | None:
        """The batch loop that iterates `loader` and trains (calls backward/step inside, maybe via helpers)."""
        if loader.target is None:
            return None
        for loop in self.loops:
            if isinstance(loop, cst.For) and self._iterates(loop, loader) and self._trains_in(loop):
                return loop
        return None

    def _iterates(self, loop: cst.For, loader: Loader) -> bool:
        it = loop.iter
        names = {dotted(n) for n in walk(it) if isinstance(n, (cst.Name, cst.Attribute))}
        target = loader.target or ""
        if target in names:
            return True
        for name in names:  # `pbar = tqdm(train_loader)` ... `for batch in pbar:`
            if name and any(
                mentions(assigned_value(s.stmt) or cst.Name("_"), target)
                for s in self.assignments(self.scope_of(loop), name)
                if self.before(s.stmt, loop)
            ):
                return True
        # reached through a parameter: f(model, train_loader) -> def f(model, loader): for b in loader
        func = self.enclosing(loop, cst.FunctionDef)
        if isinstance(func, cst.FunctionDef):
            for pname in self._params_bound_to(func, target):
                if pname in names:
                    return True
            base = target.split(".")[-1]
            if f"self.{base}" in names and target.startswith("self."):
                return True
        cls = self.enclosing(loop, cst.ClassDef)
        if isinstance(cls, cst.ClassDef):
            attr = self.attribute_holding(cls, target)
            if attr is not None and attr in names:
                return True
        return False

    def attribute_holding(self, cls: cst.ClassDef, value: str) -> str | None:
        """`self.train_data` when `Trainer(model, train_loader)` stores that argument in it."""
        init = self.methods_of(cls).get("__init__")
        if init is None:
            return None
        params = [p.name.value for p in init.params.params][1:]
        bound: list[str] = []
        for call in self.calls:
            if dotted(call.func) != cls.name.value:
                continue
            pos = [a for a in call.args if a.keyword is None]
            bound += [params[i] for i, a in enumerate(pos) if i < len(params) and dotted(a.value) == value]
            bound += [a.keyword.value for a in call.args if a.keyword is not None and dotted(a.value) == value]
        for stmt in walk(init):
            if isinstance(stmt, cst.SimpleStatementLine) and dotted(assigned_value(stmt) or cst.Name("_")) in bound:
                targets = assign_targets(stmt)
                if len(targets) == 1 and targets[0].startswith("self."):
                    return targets[0]
        return None

    def _params_bound_to(self, func: cst.FunctionDef, value: str) -> list[str]:
        """Parameters of `func` that some call in the file passes `value` to."""
        params = [p.name.value for p in func.params.params]
        if params and params[0] in ("self", "cls"):
            params_pos = params[1:]
        else:
            params_pos = params
        out = []
        for call in self.calls:
            callee = call.func
            name = (
                callee.attr.value
                if isinstance(callee, cst.Attribute)
                else (callee.value if isinstance(callee, cst.Name) else None)
            )
            if name != func.name.value:
                continue
            pos = [a for a in call.args if a.keyword is None]
            for i, arg in enumerate(pos):
                if dotted(arg.value) == value and i < len(params_pos):
                    out.append(params_pos[i])
            for arg in call.args:
                if arg.keyword is not None and dotted(arg.value) == value:
                    out.append(arg.keyword.value)
        return out

    def _trains_in(self, node: cst.CSTNode, depth: int = 0) -> bool:
        for c in calls_in(node):
            if method_name(c) == "backward":
                return True
            if method_name(c) == "step" and dotted(receiver(c)) in self.optimizer_targets:  # type: ignore[arg-type]
                return True
            if depth < 3:
                callee = self._local_callee(c)
                if callee is not None and callee is not node and self._trains_in(callee, depth + 1):
                    return True
        return False

    def _local_callee(self, call: cst.Call) -> cst.FunctionDef | None:
        """The function or method of this file that `call` invokes, when that can be told by name."""
        cache = self.__dict__.setdefault("_callees", {})
        if call not in cache:
            cache[call] = self._find_callee(call)
        return cache[call]

    def _find_callee(self, call: cst.Call) -> cst.FunctionDef | None:
        func = call.func
        if isinstance(func, cst.Name):
            return self.func_by_name.get(func.value)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            cls = self.enclosing(call, cst.ClassDef)
            if isinstance(cls, cst.ClassDef):
                return self.methods_of(cls).get(func.attr.value)
        return None

    def epoch_loop_for(self, batch_loop: cst.For) -> cst.For | None:
        """The loop around the batch loop: directly enclosing it, or calling the function that holds it."""
        for anc in self.ancestors(batch_loop):
            if isinstance(anc, cst.For):
                return anc
            if isinstance(anc, cst.FunctionDef):
                return self._loop_calling(anc, depth=0)
        return None

    def _loop_calling(self, func: cst.FunctionDef, depth: int) -> cst.For | None:
        if depth > 3:
            return None
        for call in self.calls:
            if self._local_callee(call) is func:
                for anc in self.ancestors(call):
                    if isinstance(anc, cst.For):
                        return anc
                    if isinstance(anc, cst.FunctionDef):
                        found = self._loop_calling(anc, depth + 1)
                        if found is not None:
                            return found
                        break
        return None

    @cached_property
    def training_loaders(self) -> list[tuple[Loader, cst.For]]:
        out = []
        for loader in self.loaders:
            loop = self.training_loop_of(loader)
            if loop is not None:
                out.append((loader, loop))
        return out

    # ----------------------------------------------------------------- device
    def device_var(self, scope_node: cst.CSTNode) -> tuple[str, bool] | None:
        """A device variable visible from `scope_node`: (spelling, is_torch_device)."""
        scopes: list[cst.CSTNode] = []
        func = (
            self.enclosing(scope_node, cst.FunctionDef) if not isinstance(scope_node, cst.FunctionDef) else scope_node
        )
        if isinstance(func, cst.FunctionDef) and any(p.name.value == "device" for p in func.params.params):
            return "device", False  # a parameter: its type is the caller's business
        if func is not None:
            scopes.append(func)
        cls = self.enclosing(scope_node, cst.ClassDef)
        scopes.append(self.module)
        for scope in scopes:
            for cand in ("device",):
                defs = self.assignments(scope, cand)
                defs = [d for d in defs if self.before(d.stmt, scope_node)] if scope is func else defs
                if defs:
                    return cand, self._is_torch_device(assigned_value(defs[-1].stmt))
        if isinstance(cls, cst.ClassDef):
            defs = self.assignments(cls, "self.device")
            if defs:
                return "self.device", self._is_torch_device(assigned_value(defs[-1].stmt))
        return None

    def _is_torch_device(self, value: cst.BaseExpression | None) -> bool:
        return isinstance(value, cst.Call) and self.call_qual(value) == "torch.device"

    # ----------------------------------------------------------------- entry point
    @cached_property
    def main_guard(self) -> cst.If | None:
        for stmt in self.module.body:
            if isinstance(stmt, cst.If) and re.fullmatch(
                r"__name__\s*==\s*['\"]__main__['\"]|['\"]__main__['\"]\s*==\s*__name__", code_of(stmt.test)
            ):
                return stmt
        return None

    @cached_property
    def entry(self) -> cst.FunctionDef | cst.If | cst.Module:
        """Where the process group is set up and torn down: the function `__main__` calls, or the
        `__main__` block itself, or the module for module-level scripts."""
        guard = self.main_guard
        stmts: Iterable[cst.BaseStatement] = guard.body.body if guard is not None else self.module.body  # type: ignore[union-attr]
        for stmt in stmts:
            call = expr_call(stmt)
            if call is None:
                value = assigned_value(stmt)
                call = value if isinstance(value, cst.Call) else None
            if call is not None and isinstance(call.func, cst.Name) and call.func.value in self.func_by_name:
                func = self.func_by_name[call.func.value]
                if self._reaches_training(func):
                    return func
        if guard is not None and self._reaches_training(guard):
            return guard
        return self.module

    def _reaches_training(self, node: cst.CSTNode, depth: int = 0) -> bool:
        if any(
            self.enclosing(o.stmt, type(node)) is node or o.stmt is node for o in self.optimizer_sites
        ) and not isinstance(node, cst.Module):
            return True
        if self._trains_in(node):
            return True
        if depth < 3:
            for c in calls_in(node):
                callee = self._local_callee(c)
                if callee is not None and callee is not node and self._reaches_training(callee, depth + 1):
                    return True
            for c in calls_in(node):  # Trainer(...).train(): a class of this file
                name = dotted(c.func)
                for cls in self.classes:
                    if name == cls.name.value and self._trains_in(cls):
                        return True
        return False


def _argument_for(func: cst.FunctionDef, call: cst.Call, param: str) -> cst.BaseExpression | None:
    """The expression `call` passes for `func`'s parameter `param` (positional or keyword)."""
    params = [p.name.value for p in func.params.params]
    if params and params[0] in ("self", "cls") and isinstance(call.func, cst.Attribute):
        params = params[1:]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == param:
            return arg.value
    positional_args = [a for a in call.args if a.keyword is None and not a.star]
    if param in params and params.index(param) < len(positional_args):
        return positional_args[params.index(param)].value
    return None


PREP_METHODS = {
    "to",
    "cuda",
    "cpu",
    "load_state_dict",
    "apply",
    "float",
    "half",
    "double",
    "bfloat16",
    "train",
    "eval",
    "requires_grad_",
    "share_memory",
    "tie_weights",
    "init_weights",
    "reset_parameters",
}
BENIGN_CALLS = {"print", "len", "sum", "str", "repr", "format", "type", "isinstance", "hasattr", "getattr", "id"}


@dataclass(eq=False)
class WrapPoint:
    """Where `model = DDP(model)` goes: after `anchor` (the last preparation of the model in its block)."""

    anchor: cst.BaseStatement
    block: Block
    moves: list[cst.BaseStatement]  # optimizer/scheduler statements between definition and anchor
    blocked: list[cst.BaseStatement]  # optimizer statements that must stay before a later device move


def _wrap_point(facts: ScriptFacts, model: Model) -> WrapPoint:
    d = model.definition
    body = list(d.block.body)
    start = next(i for i, s in enumerate(body) if s is d.stmt)
    handle = model.handle
    opt_stmts = {id(s.stmt) for s in facts.optimizer_sites} | {id(s.stmt) for s in facts.scheduler_sites}
    anchor = d.stmt
    pending: list[cst.BaseStatement] = []
    blocked: list[cst.BaseStatement] = []
    moved_names: set[str] = set()
    for stmt in body[start + 1 :]:
        if id(stmt) in opt_stmts or (
            moved_names and any(mentions(stmt, n) for n in moved_names) and assign_targets(stmt)
        ):
            if not mentions(stmt, handle) or id(stmt) in opt_stmts:
                pending.append(stmt)
                moved_names.update(assign_targets(stmt))
                continue
        if isinstance(stmt, (cst.For, cst.While)):
            break
        if not mentions(stmt, handle):
            continue
        kind = model_use(facts, stmt, handle)
        if kind == "prep":
            if any(mentions(stmt, n) for n in moved_names):
                # a resume block loading the optimizer: it cannot move past this; it only matters
                # when the model still moves device afterwards
                stuck, pending = pending, []
                if any(moves_device(later, handle) for later in body[body.index(stmt) + 1 :]):
                    blocked.extend(stuck)
            anchor = stmt
        elif kind == "use":
            break
    anchor_idx = next(i for i, s in enumerate(body) if s is anchor)
    moves = [s for s in pending if next(i for i, b in enumerate(body) if b is s) < anchor_idx]
    return WrapPoint(anchor, d.block, moves, blocked)


def moves_device(stmt: cst.BaseStatement, handle: str) -> bool:
    """Does `stmt` move `handle` to a device (`handle.to(...)`, `handle.cuda()`)?"""
    return any(
        method_name(c) in ("to", "cuda") and (dotted(receiver(c)) if receiver(c) is not None else None) == handle
        for c in calls_in(stmt)
    )


def model_use(facts: ScriptFacts, stmt: cst.BaseStatement, handle: str) -> str:
    """ "prep" (moves/loads/converts the model), "use" (runs or hands it on), or "benign" (prints it)."""
    prep = False
    for call in calls_in(stmt):
        func = call.func
        if dotted(func) == handle:
            return "use"  # forward
        recv = receiver(call)
        if recv is not None and (dotted(recv) or "").startswith(handle) and method_name(call) in PREP_METHODS:
            prep = True
            continue
        if recv is not None and dotted(recv) == handle and method_name(call) in ("parameters", "named_parameters"):
            continue
        if any(dotted(a.value) == handle for a in call.args):
            name = dotted(func) or ""
            q = facts.call_qual(call) or ""
            if name in BENIGN_CALLS or name.split(".")[-1] in LOGGER_METHODS:
                continue
            if q.endswith("convert_sync_batchnorm"):
                prep = True
                continue
            return "use"
    targets = assign_targets(stmt)
    if handle in targets:
        return "prep" if prep else "use"
    if isinstance(stmt, (cst.For, cst.While)):
        return "use"
    return "prep" if prep else "benign"
