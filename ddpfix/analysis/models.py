"""Models: which models the script trains, where each reaches its final handle, where the DDP wrap
goes, existing DDP/DataParallel wrappers, a model's class, and the device variable."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import libcst as cst

from ..syntax import (
    assign_targets,
    assigned_value,
    calls_in,
    dotted,
    kwarg,
    mentions,
    method_name,
    positional,
    receiver,
    walk,
)
from .classes import DDP_NAMES, DP_NAMES, SELF_RETURNING, Classes
from .effects import LOGGER_METHODS
from .index import Block, Site, TreeIndex
from .model_params import FORWARD, LOAD_STATE, TRAINS
from .names import Names
from .trained import manual_updates, receiver_of
from .training import Training

if TYPE_CHECKING:
    from .helpers import Helpers

BATCHNORM = re.compile(r"^torch\.nn\.(modules\.batchnorm\.)?BatchNorm[123]d$|^torch\.nn\.BatchNorm$")
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
class Model:
    """A model the script trains: the handle it is trained through and where it is defined."""

    handle: str  # "model", "self.model", "netG"
    definition: Site  # the assignment that gives the handle its final (pre-training) value
    optimizers: list[Site]  # the optimizers over its parameters, or the loops that update them by hand
    built_by: cst.Call | None = None  # `build(cfg)` in `model, opt = build(cfg)`: a helper built it


@dataclass(eq=False)
class WrapPoint:
    """Where `model = DDP(model)` goes: after `anchor` (the last preparation of the model in its block)."""

    anchor: cst.BaseStatement
    block: Block
    moves: list[cst.BaseStatement]  # optimizer/scheduler statements between definition and anchor
    blocked: list[cst.BaseStatement]  # optimizer statements that must stay before a later device move


class Models:
    """The trained models and their wrappers."""

    def __init__(self, index: TreeIndex, names: Names, training: Training, helpers: Helpers | None = None) -> None:
        self.index = index
        self.names = names
        self.training = training
        self.helpers = helpers
        self.classes = Classes(index, names)
        self._wrap_points: dict[int, WrapPoint] = {}

    # ----------------------------------------------------------------- catalogues
    @cached_property
    def ddp_calls(self) -> list[cst.Call]:
        return self.names.calls_matching(lambda q: q in DDP_NAMES)

    @cached_property
    def dp_calls(self) -> list[cst.Call]:
        return self.names.calls_matching(lambda q: q in DP_NAMES)

    @cached_property
    def syncbn_calls(self) -> list[cst.Call]:
        return self.names.method_calls("convert_sync_batchnorm")

    @cached_property
    def batchnorm_calls(self) -> list[cst.Call]:
        return self.names.calls_matching(lambda q: bool(BATCHNORM.match(q)))

    # ----------------------------------------------------------------- trained models
    @cached_property
    def manual_updates(self) -> list[tuple[Site, str]]:
        """Loops that update a model's parameters by hand, and that model (trained.py)."""
        return manual_updates(self.index)

    @cached_property
    def trained(self) -> list[Model]:
        """The models the script trains, each with the handle and the definition to wrap after: those
        an optimizer updates, and those a loop of the script updates by hand (`p -= lr * p.grad`)."""
        by_handle: dict[str, Model] = {}
        steps = [(opt, self.training.parameter_receivers(opt.node)) for opt in self.training.optimizer_sites]
        steps += [(loop, [recv]) for loop, recv in self.manual_updates]
        for opt, receivers in steps:
            for recv in receivers:  # type: ignore[arg-type]
                if recv.endswith(".module"):
                    recv = recv[: -len(".module")]
                definition = self._definition_for(recv, opt)
                if definition is None:
                    continue
                found = assign_targets(definition.stmt)[0] if len(assign_targets(definition.stmt)) == 1 else recv
                for handle, site, built_by in self._lifted(found, definition):
                    if handle in by_handle:
                        by_handle[handle].optimizers.append(opt)
                    else:
                        by_handle[handle] = Model(handle, site, [opt], built_by)
        for call, slot in self.helpers.builder_calls() if self.helpers is not None else ():
            found = receiver_of(self.index, call, slot)
            if found is not None and found[0] not in by_handle and self._trains_after(call):
                by_handle[found[0]] = Model(found[0], found[1], [self.index.site(call)], call)
        return list(by_handle.values())

    def _lifted(self, handle: str, definition: Site) -> list[tuple[str, Site, cst.Call | None]]:
        """A model a function of this file builds and returns (`return model, optimizer`) is wrapped
        where it is called (`model, optimizer = build(cfg)`), in each caller that goes on to train."""
        func = definition.func
        same = [(handle, definition, None)]
        if func is None or self.helpers is None or "." in handle:
            return same
        slot = self.helpers.returned_slot(func, {handle})
        if slot is None:
            return same
        out = []
        for call in self.index.callers_of(func):
            found = receiver_of(self.index, call, slot)
            if found is not None and self._trains_after(call):
                out.append((found[0], found[1], call))
        return out or same

    def _trains_after(self, call: cst.Call) -> bool:
        scope = self.index.scope_of(call)
        return self.training.reaches_training(scope)

    def _definition_for(self, recv: str, opt: Site) -> Site | None:
        """Where the model reaches its final handle before training.

        Preference: a class attribute (`self.<name> = ...`) of a class that trains through it; else the
        last assignment of `recv` before the optimizer in the optimizer's scope; else a module-level one.
        """
        base = recv.split(".")[-1]
        for cls in self.index.classes:
            handle = f"self.{base}"
            if not self._class_trains_through(cls, handle):
                continue
            defs = [s for s in self.names.assignments(cls, handle) if not self.is_wrap(s.stmt)]
            if defs:
                return defs[-1]
        return self._local_definition(recv, opt.stmt, opt.func, depth=0)

    def _local_definition(self, name: str, at: cst.CSTNode, func: cst.FunctionDef | None, depth: int) -> Site | None:
        """The last assignment of `name` before `at` in `func`; for a parameter of `func`, the
        definition of the argument its caller passes (`train(args, model)` -> `model = Net()` in main)."""
        index = self.index
        scope = func or index.module
        before = [s for s in self.names.assignments(scope, name) if index.before(s.stmt, at)]
        if not before and isinstance(func, cst.FunctionDef) and depth < 2 and "." not in name:
            for call in index.callers_of(func):
                arg = argument_for(func, call, name)
                caller_name = dotted(arg) if arg is not None else None
                if caller_name:
                    caller = index.enclosing(call, cst.FunctionDef)
                    found = self._local_definition(caller_name, call, caller, depth + 1)  # type: ignore[arg-type]
                    if found is not None:
                        return found
        if not before and scope is not index.module:
            before = self.names.assignments(index.module, name)
        defs = [s for s in before if not self.is_wrap(s.stmt)] or before  # `model = DDP(Net())`: the wrap defines it
        return defs[-1] if defs else None

    def _class_trains_through(self, cls: cst.ClassDef, handle: str) -> bool:
        methods = self.index.methods_of(cls).values()
        for method in methods:
            if not any(True for c in calls_in(method) if method_name(c) == "backward" or (method_name(c) == "step")):
                continue
            if any(dotted(c.func) == handle for c in calls_in(method)):
                return True
        for method in methods:  # forward in one method, backward in another
            if any(dotted(c.func) == handle for c in calls_in(method)):
                return any(method_name(c) == "backward" for m in methods for c in calls_in(m))
        return False

    def is_wrap(self, stmt: cst.CSTNode) -> bool:
        value = assigned_value(stmt)
        return isinstance(value, cst.Call) and (
            self.names.call_qual(value) in DDP_NAMES or self.names.call_qual(value) in DP_NAMES
        )

    # ----------------------------------------------------------------- wrappers
    def wrap_point(self, model: Model) -> WrapPoint:
        """Where this model gets wrapped (see `_wrap_point`), computed once per model."""
        if id(model) not in self._wrap_points:
            self._wrap_points[id(model)] = self._wrap_point(model)
        return self._wrap_points[id(model)]

    def wrapped(self, model: Model) -> cst.Call | None:
        """An existing `DDP(<model>...)` call for this model, if the script has one."""
        value = assigned_value(model.definition.stmt)
        if isinstance(value, cst.Call) and self.names.call_qual(value) in DDP_NAMES:
            return value  # `model = DDP(Net())`: built inside the wrap
        return self._wrapper_call(model, self.ddp_calls)

    def dataparallel(self, model: Model) -> cst.Call | None:
        """An `nn.DataParallel(<model>)` call for this model, if the script has one."""
        return self._wrapper_call(model, self.dp_calls)

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

    def _wrap_point(self, model: Model) -> WrapPoint:
        d = model.definition
        body = list(d.block.body)
        start = next(i for i, s in enumerate(body) if s is d.stmt)
        handle = model.handle
        training = self.training
        opt_stmts = {id(s.stmt) for s in training.optimizer_sites} | {id(s.stmt) for s in training.scheduler_sites}
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
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) or not mentions(stmt, handle):
                continue  # a definition runs nothing: `def evaluate(): model.eval()` prepares no model
            kind = self.use_of(stmt, handle)
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

    def _loads_into(self, call: cst.Call, handle: str) -> bool:
        """`load_checkpoint(model, path)`: a helper that loads a state_dict into the model and runs nothing."""
        if self.helpers is None:
            return False
        arg = next(a for a in call.args if dotted(a.value) == handle)
        uses = self.helpers.uses(call, arg)
        return bool(uses) and LOAD_STATE in uses and not uses & {FORWARD, TRAINS}  # type: ignore[operator]

    def moved_with(self, model: Model, anchor: cst.CSTNode, device: str) -> bool:
        """Is the model moved with `device` (`.to(device)`) by its definition or a statement after it, up
        to `anchor`? Only then does the device variable tell where the model is."""
        body = list(model.definition.block.body)
        start = next(i for i, s in enumerate(body) if s is model.definition.stmt)
        end = next((i for i, s in enumerate(body) if s is anchor), start)
        for i, stmt in enumerate(body[start : end + 1]):
            for call in calls_in(stmt):
                if method_name(call) not in ("to", "cuda") or not any(mentions(a.value, device) for a in call.args):
                    continue
                recv = receiver(call)
                if i == 0 or (recv is not None and dotted(recv) == model.handle):
                    return True
        return False

    def use_of(self, stmt: cst.BaseStatement, handle: str) -> str:
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
                q = self.names.call_qual(call) or ""
                if name in BENIGN_CALLS or name.split(".")[-1] in LOGGER_METHODS:
                    continue
                if q.endswith("convert_sync_batchnorm") or self._loads_into(call, handle):
                    prep = True
                    continue
                return "use"
        targets = assign_targets(stmt)
        if handle in targets:
            return "prep" if prep else "use"
        if isinstance(stmt, (cst.For, cst.While)):
            return "use"
        return "prep" if prep else "benign"

    # ----------------------------------------------------------------- classes
    def model_class(self, name: str, at: cst.CSTNode) -> cst.ClassDef | None:
        """The class of this file that `name` holds at `at` (classes.py)."""
        return self.classes.model_class(name, at)

    def constructor(self, name: str, at: cst.CSTNode) -> cst.Call | None:
        """The call that builds the module `name` holds at `at` (classes.py)."""
        return self.classes.constructor(name, at)

    def class_members(self, cls: cst.ClassDef) -> tuple[set[str], set[str]]:
        return self.classes.class_members(cls)

    def forward_like(self, cls: cst.ClassDef) -> set[str]:
        return self.classes.forward_like(cls)

    # ----------------------------------------------------------------- device
    def device_var(self, scope_node: cst.CSTNode) -> tuple[str, bool] | None:
        """A device variable visible from `scope_node`: (spelling, is_torch_device)."""
        index = self.index
        scopes: list[cst.CSTNode] = []
        func = (
            index.enclosing(scope_node, cst.FunctionDef) if not isinstance(scope_node, cst.FunctionDef) else scope_node
        )
        if isinstance(func, cst.FunctionDef) and any(p.name.value == "device" for p in func.params.params):
            return "device", False  # a parameter: its type is the caller's business
        if func is not None:
            scopes.append(func)
        cls = index.enclosing(scope_node, cst.ClassDef)
        scopes.append(index.module)
        for scope in scopes:
            defs = self.names.assignments(scope, "device")
            defs = [d for d in defs if index.before(d.stmt, scope_node)] if scope is func else defs
            if defs:
                return "device", self._is_torch_device(assigned_value(defs[-1].stmt))
        if isinstance(cls, cst.ClassDef):
            defs = self.names.assignments(cls, "self.device")
            if defs:
                return "self.device", self._is_torch_device(assigned_value(defs[-1].stmt))
        return None

    def _is_torch_device(self, value: cst.BaseExpression | None) -> bool:
        return isinstance(value, cst.Call) and self.names.call_qual(value) == "torch.device"


def argument_for(func: cst.FunctionDef, call: cst.Call, param: str) -> cst.BaseExpression | None:
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


def moves_device(stmt: cst.BaseStatement, handle: str) -> bool:
    """Does `stmt` move `handle` to a device (`handle.to(...)`, `handle.cuda()`)?"""
    return any(
        method_name(c) in ("to", "cuda") and (dotted(receiver(c)) if receiver(c) is not None else None) == handle
        for c in calls_in(stmt)
    )


__all__ = [
    "BATCHNORM",
    "DDP_NAMES",
    "DP_NAMES",
    "SELF_RETURNING",
    "Model",
    "Models",
    "WrapPoint",
    "argument_for",
    "moves_device",
]
