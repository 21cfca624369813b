"""Models: which models the script trains, where each reaches its final handle, where the DDP wrap
goes (wrap_points.py), existing DDP/DataParallel wrappers, a model's class, and the device variable."""

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
    method_name,
    positional,
    walk,
)
from .call_params import argument_for
from .classes import DDP_NAMES, DP_NAMES, SELF_RETURNING, Classes
from .eval_paths import evaluation_branch
from .flags import negated, under_flag
from .handed_models import handed_to_trainers
from .holders import to_holders
from .index import Site, TreeIndex
from .names import Names
from .trained import element_of, manual_updates, receiver_of
from .training import Training
from .wrap_points import WrapPoint, WrapPoints

if TYPE_CHECKING:
    from .helpers import Helpers

BATCHNORM = re.compile(r"^torch\.nn\.(modules\.batchnorm\.)?BatchNorm[123]d$|^torch\.nn\.BatchNorm$")


@dataclass(eq=False)
class Model:
    """A model the script trains: the handle it is trained through and where it is defined."""

    handle: str  # "model", "self.model", "netG"
    definition: Site  # the assignment that gives the handle its final (pre-training) value
    optimizers: list[Site]  # the optimizers over its parameters, or the loops that update them by hand
    built_by: cst.Call | None = None  # `build(cfg)` in `model, opt = build(cfg)`: a helper built it
    each: str | None = None  # `net` when the handle is a list of models trained side by side (`for net in nets`)


class Models:
    """The trained models and their wrappers."""

    def __init__(self, index: TreeIndex, names: Names, training: Training, helpers: Helpers | None = None) -> None:
        self.index = index
        self.names = names
        self.training = training
        self.helpers = helpers
        self.classes = Classes(index, names)
        self.wrap_points = WrapPoints(names, training, helpers)

    # ----------------------------------------------------------------- catalogues
    @cached_property
    def ddp_calls(self) -> list[cst.Call]:
        return self.names.calls_matching(lambda q: q in DDP_NAMES)

    @cached_property
    def dp_calls(self) -> list[cst.Call]:
        return self.names.calls_matching(lambda q: q in DP_NAMES)

    @cached_property
    def dp_training_calls(self) -> list[cst.Call]:  # not on a path that only evaluates and leaves
        return [c for c in self.dp_calls if evaluation_branch(self.index, self.names, self.training, c) is None]

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
        an optimizer updates, and those a loop of the script updates by hand (`p -= lr * p.grad`); one
        reached only through a module that holds it is that module (holders.py)."""
        by_handle: dict[str, Model] = {}
        steps = [(opt, self.training.parameter_receivers(opt.node)) for opt in self.training.optimizer_sites]
        steps += [(loop, [recv]) for loop, recv in self.manual_updates]
        for opt, receivers in steps:
            for recv in receivers:  # type: ignore[arg-type]
                if recv.endswith(".module"):
                    recv = recv[: -len(".module")]
                each = element_of(self.index, opt.node, recv) if isinstance(opt.node, cst.Call) else None
                if each is not None:
                    recv, each = each, recv  # `[SGD(net.parameters()) for net in nets]`: the list `nets`
                definition = self._definition_for(recv, opt)
                while definition is None and "." in recv and not recv.startswith("self."):
                    # `model.head.parameters()` in a parameter group: the model that owns the submodule
                    recv = recv.rsplit(".", 1)[0]
                    definition = self._definition_for(recv, opt)
                if definition is None:
                    continue
                recv, definition = self._wrapped_alias(recv, definition)
                found = assign_targets(definition.stmt)[0] if len(assign_targets(definition.stmt)) == 1 else recv
                for handle, site, built_by in (
                    self._lifted(found, definition) if each is None else [(recv, definition, None)]
                ):
                    if handle in by_handle:
                        by_handle[handle].optimizers.append(opt)
                    else:
                        by_handle[handle] = Model(handle, site, [opt], built_by, each)
        by_handle = to_holders(self.index, self.names, self.helpers, by_handle)
        for call, handle, site in self._handed_to_trainers():
            if handle not in by_handle:
                by_handle[handle] = Model(handle, site, [self.index.site(call)])
        for call, slot in self.helpers.builder_calls() if self.helpers is not None else ():
            found = receiver_of(self.index, call, slot)
            if found is not None and found[0] not in by_handle and self._trains_after(call):
                by_handle[found[0]] = Model(found[0], found[1], [self.index.site(call)], call)
        return list(by_handle.values())

    def _wrapped_alias(self, name: str, definition: Site) -> tuple[str, Site]:
        """`model_without_ddp = model` (and `= model.module` once wrapped): an optimizer built over the
        alias trains `model`, which the script wraps itself. Other aliases stay what they are (the
        script may run the alias)."""
        seen = {name}
        found, where = name, definition
        for _ in range(3):
            value = assigned_value(where.stmt)
            target = dotted(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
            if target is not None and target.endswith(".module"):
                target = target[: -len(".module")]
            if target is None or target in seen:
                break
            seen.add(target)
            earlier = self._local_definition(target, where.stmt, where.func, depth=0)
            if earlier is None:
                break
            found, where = target, earlier
            if self.wrapped(Model(found, where, [])) is not None:
                return found, where
        return name, definition

    def _handed_to_trainers(self) -> list[tuple[cst.Call, str, Site]]:
        """Models handed to code of the script's own modules that trains them (handed_models.py)."""
        if self.helpers is None:
            return []
        local = lambda name, call: self._local_definition(name, call, self.index.enclosing(call, cst.FunctionDef), 0)  # noqa: E731
        return handed_to_trainers(self.index, self.helpers, local)

    def _lifted(self, handle: str, definition: Site) -> list[tuple[str, Site, cst.Call | None]]:
        """A model a function of this file builds and returns (`return model, optimizer`) is wrapped
        where it is called (`model, optimizer = build(cfg)`), in each caller that goes on to train. A
        function that also trains it before returning it (`def train(loader): model = Net(); ...;
        trainer.run_epoch(); return model`) is where it is wrapped: wrapped in the caller, it would be
        wrapped only once trained."""
        func = definition.func
        same = [(handle, definition, None)]
        if func is None or self.helpers is None or "." in handle or self._trains_within(func):
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

    def _trains_within(self, func: cst.FunctionDef) -> bool:
        """Does `func` run training itself: a step in it (or in a function of this file it calls), or a
        call of it that trains through the script's own modules (`trainer.run_epoch()`)?"""
        training = self.training
        if training.trains_in(func):
            return True
        return any(self.index.contains(func, c) for c in training.module_training_calls)

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
        before = self.names.assignments_before(scope, name, at)
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
        """`model = DDP(model)` (or DataParallel), `nets = [DDP(net) for net in nets]`, or a wrap in
        one arm of a conditional expression (`model = DDP(net) if distributed else net`)."""
        return self._wrap_in(assigned_value(stmt), DDP_NAMES | DP_NAMES) is not None

    def _wrap_in(self, value: cst.BaseExpression | None, names: set[str]) -> cst.Call | None:
        if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
            value = value.elt
        if isinstance(value, cst.IfExp):
            return self._wrap_in(value.body, names) or self._wrap_in(value.orelse, names)
        if isinstance(value, cst.Call) and self.names.call_qual(value) in names:
            return value
        return None

    # ----------------------------------------------------------------- wrappers
    def wrap_point(self, model: Model) -> WrapPoint:
        """Where this model gets wrapped (wrap_points.py), computed once per model."""
        return self.wrap_points.wrap_point(model)

    def wrapped(self, model: Model) -> cst.Call | None:
        """An existing `DDP(<model>...)` call for this model, if the script has one."""
        found = self._wrap_in(assigned_value(model.definition.stmt), DDP_NAMES)
        if found is not None:
            return found  # `model = DDP(Net())`: built inside the wrap; `DDP(net) if distributed else net`
        return self._wrapper_call(model, self.ddp_calls)

    def dataparallel(self, model: Model) -> cst.Call | None:
        """An `nn.DataParallel(<model>)` call for this model, if the script has one (also one the model is
        built inside: `model = nn.DataParallel(Net())`)."""
        calls = self.dp_training_calls
        found = self._wrap_in(assigned_value(model.definition.stmt), DP_NAMES) or self._wrapper_call(model, calls)
        if found is not None:
            return found
        # `model = nn.DataParallel(net)`, then `model = model.to(device)`: the handle bound from one
        return next((c for c in calls if model.handle in assign_targets(self.index.site(c).stmt)), None)

    def _wrapper_call(self, model: Model, calls: list[cst.Call]) -> cst.Call | None:
        bases = {model.handle.split(".")[-1], model.each}
        for call in calls:
            arg = positional(call, 0) or kwarg(call, "module")
            if arg is not None and any(
                (dotted(n) or "").split(".")[-1] in bases
                for n in walk(arg.value)
                if isinstance(n, (cst.Name, cst.Attribute))
            ):
                return call
        return None

    def beside_ddp(self, call: cst.Call) -> bool:
        """Is this `nn.DataParallel(...)` call in one branch of an `if` whose other branch wraps in
        DDP? The script offers both on purpose, and a flag picks (`if args.dataparallel: ... else:
        model = DDP(model, ...)`)."""
        index = self.index
        for anc in index.ancestors(call):
            if not isinstance(anc, cst.If):
                continue
            branches = [anc.body, anc.orelse] if anc.orelse is not None else [anc.body]
            mine = next((b for b in branches if index.contains(b, call)), None)
            if mine is None:
                continue
            if any(index.contains(b, d) for b in branches if b is not mine for d in self.ddp_calls):
                return True
            if mine is anc.body and under_flag(index, self.ddp_calls, negated(anc.test)):
                return (
                    True  # `if not DISTRIBUTED: model = nn.DataParallel(model)` ... `if DISTRIBUTED: model = DDP(...)`
                )
        return False

    def moved_with(self, model: Model, anchor: cst.CSTNode, device: str) -> bool:
        """Is the model moved with `device` up to `anchor` (wrap_points.py)?"""
        return self.wrap_points.moved_with(model, anchor, device)

    def use_of(self, stmt: cst.BaseStatement, handle: str) -> str:
        """ "prep", "use" or "benign": what `stmt` does with the model `handle` (wrap_points.py)."""
        return self.wrap_points.use_of(stmt, handle)

    # ----------------------------------------------------------------- classes
    def model_class(self, name: str, at: cst.CSTNode) -> cst.ClassDef | None:
        """The class of this file that `name` holds at `at` (classes.py)."""
        return self.classes.model_class(name, at)

    def constructor(self, name: str, at: cst.CSTNode) -> cst.Call | None:
        """The call that builds the module `name` holds at `at` (classes.py)."""
        return self.classes.constructor(name, at)

    def classes_of(self, model: Model) -> list[cst.ClassDef]:
        """The classes of this file the model is built from: its own, or for a list of models those of
        its elements (`[Net(False), Net(True)]`, `[Net() for _ in range(k)]`)."""
        if model.each is None:
            cls = self.model_class(model.handle, model.definition.stmt)
            return [cls] if cls is not None else []
        value = assigned_value(model.definition.stmt)
        calls = [value.elt] if isinstance(value, (cst.ListComp, cst.GeneratorExp)) else []
        if isinstance(value, (cst.List, cst.Tuple)):
            calls = [el.value for el in value.elements]
        by_name = {c.name.value: c for c in self.index.classes}
        out: list[cst.ClassDef] = []
        for call in calls:
            cls = (
                by_name.get(call.func.value) if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) else None
            )
            if cls is not None and cls not in out:
                out.append(cls)
        return out

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


__all__ = [
    "BATCHNORM",
    "DDP_NAMES",
    "DP_NAMES",
    "SELF_RETURNING",
    "Model",
    "Models",
    "WrapPoint",
]
