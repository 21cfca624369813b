"""Training: whether the script trains, its optimizers and schedulers, and which code reaches a
training step (`backward()` or an optimizer's `step()`, directly or through functions of this file)."""

from __future__ import annotations

import re
from functools import cached_property
from typing import TYPE_CHECKING

import libcst as cst

from ..syntax import (
    assign_targets,
    assigned_value,
    calls_in,
    dotted,
    kwarg,
    loop_variable,
    method_name,
    positional,
    receiver,
)
from .call_params import param_for, param_name, param_names
from .index import Site, TreeIndex
from .local_writes import methods_of_instance
from .model_params import PARAMETERS, TRAINS
from .names import Names

if TYPE_CHECKING:
    from .module_summary import ModuleSummary
    from .modules import LocalModules

OPTIMIZER_NAMES = re.compile(r"opt", re.IGNORECASE)
SCHEDULER_NAMES = re.compile(r"sched", re.IGNORECASE)
OPTIMIZER_CLASSES = re.compile(r"(Adam|SGD|Lion|LAMB|Adafactor|RMSprop|Adagrad|Optimizer)")
HELPER_DEPTH = 3  # how many calls deep a training step is looked for through this file's functions


class Training:
    """Optimizers, schedulers and training steps."""

    def __init__(self, index: TreeIndex, names: Names, modules: LocalModules | None = None) -> None:
        self.index = index
        self.names = names
        self.modules = modules  # the script's own modules: a trainer there trains the script's model

    @cached_property
    def backward_calls(self) -> list[cst.Call]:
        return self.names.method_calls("backward")

    @cached_property
    def optimizer_sites(self) -> list[Site]:
        """`opt = SGD(model.parameters(), ...)`-shaped statements (also one optimizer per model of a
        list: `opts = [SGD(net.parameters()) for net in nets]`)."""
        out = []
        for call in self.index.calls:  # the cheap tests first: the receivers' may look back for a name
            site = self.index.site(call)
            value = assigned_value(site.stmt)
            if value is not call and not (isinstance(value, (cst.ListComp, cst.GeneratorExp)) and value.elt is call):
                continue  # `opts = [SGD(net.parameters()) for net in nets]`: one optimizer per model
            q = self.names.call_qual(call) or ""
            if not (
                q.startswith("torch.optim.")
                or any(OPTIMIZER_NAMES.search(t.split(".")[-1]) for t in assign_targets(site.stmt))
                or OPTIMIZER_CLASSES.search(q)
            ):
                continue
            if self.parameter_receivers(call):
                out.append(site)
        return out

    def parameter_receivers(self, call: cst.Call) -> list[str]:
        """`model` for `SGD(model.parameters(), ...)`: whose parameters a call's arguments hand over,
        also through a name bound just before (`params = [p for p in model.parameters() if
        p.requires_grad]` then `SGD(params, ...)`)."""
        out = _receivers(arg.value for arg in call.args)
        if out:
            return out
        out = self._handed_to_builder(call)
        if out:
            return out
        for arg in call.args:  # `SGD(trainable(model), ...)`: a function that hands over its parameters
            if type(arg.value) is cst.Call:
                out += self._handed_to_builder(arg.value)
        if out:
            return out
        names = [dotted(arg.value) for arg in call.args if isinstance(arg.value, cst.Name)]
        if not names:
            return out
        scope = self.index.scope_of(call)
        for name in names:
            bound = self.names.assignments_before(scope, name, call)
            value = assigned_value(bound[-1].stmt) if bound else None
            if value is not None and name in assign_targets(bound[-1].stmt):
                out += _receivers([value]) or (self._handed_to_builder(value) if type(value) is cst.Call else [])
                if type(value) is cst.List and not value.elements:
                    out += self._appended(scope, name, bound[-1].stmt, call)
        return out

    def _appended(self, scope, name: str, bound: cst.CSTNode, call: cst.Call) -> list[str]:
        """`model` for a list filled between its binding `bound` and `call`: `params.append(p)` in a loop
        `for p in filter(lambda p: p.requires_grad, model.parameters()):`, or `params.extend(...)` of them."""
        index, out = self.index, []
        for grow in self.names.method_calls("append", "extend"):
            if dotted(receiver(grow)) != name or index.scope_of(grow) is not scope or not grow.args:
                continue
            if not (index.before(bound, grow) and index.before(grow, call)):
                continue
            value = grow.args[0].value
            found = _receivers([value])
            loop = index.enclosing(grow, cst.For)
            if not found and method_name(grow) == "append" and loop is not None and type(value) is cst.Name:
                if value.value == loop_variable(loop):
                    found = _receivers([loop.iter])
            out += found
        return out

    def _handed_to_builder(self, call: cst.Call) -> list[str]:
        """`model` for `optimizer = set_optimizer(opt, model)`, where the function called (of this file,
        or of the script's own modules as their summaries record it) reads `.parameters()` of the
        parameter that `model` binds; for a function of this file, also the module-level model whose
        `.parameters()` it reads itself (`optimizer = make_optimizer(lr)`)."""
        func = self.index.callee_of(call)
        target = self.modules.target_of(call.func) if func is None and self.modules is not None else None
        summary = target.summary if target is not None and target.member is not None else None
        if func is None and summary is None:
            return []
        read = _receivers([func.body]) if func is not None else []  # whose `.parameters()` the function reads
        out = self._globals_in(func, read) if func is not None else []
        for arg in call.args:
            if type(arg.value) is not cst.Name or arg.star:
                continue
            if func is not None:
                param = param_for(func, call, arg)
                reads = param is not None and param in read
            else:
                param = param_name(summary, target.member, call, arg)  # type: ignore[union-attr]
                reads = param is not None and PARAMETERS in summary.param_uses.get(target.member, {}).get(param, ())  # type: ignore[union-attr]
            if reads:
                out.append(arg.value.value)
        return out

    def _globals_in(self, func: cst.FunctionDef, read: list[str]) -> list[str]:
        """Of the names whose `.parameters()` `func` reads, the module-level ones it binds nowhere itself."""
        params = param_names(func)
        out: list[str] = []
        for name in read:
            if "." in name or name in params or name in out or self.names.assignments(func, name):
                continue
            if self.names.assignments(self.index.module, name):
                out.append(name)
        return out

    @cached_property
    def optimizer_targets(self) -> set[str]:
        return {t for s in self.optimizer_sites for t in assign_targets(s.stmt)}

    @cached_property
    def scheduler_sites(self) -> list[Site]:
        out = []
        for call in self.index.calls:
            site = self.index.site(call)
            if assigned_value(site.stmt) is not call:
                continue
            q = self.names.call_qual(call) or ""
            first = positional(call, 0) or kwarg(call, "optimizer")
            if first is None or dotted(first.value) not in self.optimizer_targets:
                continue
            if "lr_scheduler" in q or any(SCHEDULER_NAMES.search(t) for t in assign_targets(site.stmt)):
                out.append(site)
        return out

    @cached_property
    def trains(self) -> bool:
        """Does the script train: it builds an optimizer, calls `backward()`, or calls a function of
        its own modules that trains (`fit(model, loader)` from a local package)?"""
        if self.optimizer_sites or self.backward_calls:
            return True
        return bool(self.module_training_calls)

    @cached_property
    def module_training_calls(self) -> list[cst.Call]:
        """The script's calls that train through its own modules: a function of theirs that trains
        (`fit(model, loader)`), or a method that trains on an instance of one of their classes."""
        if self.modules is None:
            return []
        methods = {id(c) for c, _, _ in self.trained_in_modules}
        return [c for c in self.index.calls if id(c) in methods or self.modules.call_does(c, TRAINS) is True]

    @cached_property
    def trained_in_modules(self) -> list[tuple[cst.Call, ModuleSummary, str]]:
        """The script's calls of a method that trains, on an instance of a class of its own modules
        (`solver = Solver(loader, config)`, then `solver.train()`): (call, the module's summary,
        "Class.method")."""
        out: list[tuple[cst.Call, ModuleSummary, str]] = []
        if self.modules is None:
            return out
        for call in self.index.calls:  # (one entry per class the receiver may be an instance of)
            for summary, method in methods_of_instance(self.index, self.names, self.modules, call):
                if summary.does(method, TRAINS):
                    out.append((call, summary, method))
        return out

    @cached_property
    def models_built_in_modules(self) -> list[tuple[cst.Call, ModuleSummary, object]]:
        """Of `trained_in_modules`, the calls whose class builds the models it trains itself (`self.G =
        Generator(...)` in `Solver.__init__`, or `model = Net()` a local of the method called, beside its
        optimizer): (call, the module's summary, the class's summary); and the calls of a module-level
        function that builds and trains its own local model (`fit(epochs)`: its owner record, a
        ClassSummary with `function` set)."""
        out = []
        for call, summary, method in self.trained_in_modules:
            cls = summary.classes.get(method.split(".")[0])
            if cls is not None and (cls.trained or any(m == method.split(".")[-1] for m, _, _ in cls.local_models)):
                out.append((call, summary, cls))
        methods = {id(c) for c, _, _ in self.trained_in_modules}
        for call in self.module_training_calls:  # `fit(epochs)`, whose function builds the model it trains
            target = self.modules.target_of(call.func) if id(call) not in methods else None  # type: ignore[union-attr]
            owner = target.summary.builders.get(target.member or "") if target and target.summary else None
            if owner is not None:
                out.append((call, target.summary, owner))  # type: ignore[union-attr]
        return out

    def trains_in(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """Does `node` run a training step, itself or through functions of this file it calls?"""
        for c in calls_in(node):
            if method_name(c) == "backward":
                return True
            if method_name(c) == "step" and dotted(receiver(c)) in self.optimizer_targets:  # type: ignore[arg-type]
                return True
            if depth < HELPER_DEPTH:
                callee = self.index.callee_of(c)
                if callee is not None and callee is not node and self.trains_in(callee, depth + 1):
                    return True
        return False

    def reaches_training(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """Does `node` build an optimizer or train, itself, through functions of this file, or through a
        class of this file it constructs (`Trainer(...).train()`)?"""
        if not isinstance(node, cst.Module) and any(
            self.index.enclosing(o.stmt, type(node)) is node or o.stmt is node for o in self.optimizer_sites
        ):
            return True
        if self.trains_in(node):
            return True
        if depth < HELPER_DEPTH:
            for c in calls_in(node):
                callee = self.index.callee_of(c)
                if callee is not None and callee is not node and self.reaches_training(callee, depth + 1):
                    return True
            for c in calls_in(node):
                name = dotted(c.func)
                for cls in self.index.classes:
                    if name == cls.name.value and self.trains_in(cls):
                        return True
        return False


def _receivers(values) -> list[str]:
    out = []
    for value in values:
        for inner in calls_in(value):
            if method_name(inner) in ("parameters", "named_parameters") and receiver(inner) is not None:
                d = dotted(receiver(inner))  # type: ignore[arg-type]
                if d:
                    out.append(d)
    return out


__all__ = ["OPTIMIZER_NAMES", "SCHEDULER_NAMES", "Training"]
