"""Helpers that receive a model: what `evaluate(model)`, `save_checkpoint(model, path)` or
`load_checkpoint(model, path)` do with it, whether the helper is a function of this file (read here
with LibCST) or of the script's own modules (their summaries), and which value a model builder
returns (`model, optimizer = build(cfg)`)."""

from __future__ import annotations

import libcst as cst

from ..syntax import dotted, walk
from .call_params import param_for, param_name, slot_of_arg
from .effects import PICKLERS
from .index import TreeIndex
from .model_params import (
    CUSTOM,
    FORWARD,
    INSPECTS,
    LOAD_STATE,
    PICKLES,
    RETURNS,
    STATE_DICT,
    TRAINS,
    UNWRAPS,
    Slot,
    inspects,
    reaches_model,
)
from .modules import LocalModules
from .names import Names
from .training import OPTIMIZER_NAMES, Training

DEPTH = 3  # how far a model handed on from helper to helper is followed


class Helpers:
    """What the functions a model is handed to do with it."""

    def __init__(self, index: TreeIndex, names: Names, training: Training, modules: LocalModules) -> None:
        self.index = index
        self.names = names
        self.training = training
        self.modules = modules

    def uses(self, call: cst.Call, arg: cst.Arg) -> set[str] | None:
        """What the function `call` invokes does with the value passed as `arg` (model_params uses,
        plus TRAINS when the function trains); None when the callee is not one the analysis can read
        (a library, an unknown import, a method of an object), except INSPECTS for a library function
        that traces, exports or summarises it."""
        func = self.index.callee_of(call) or self._method_of_instance(call)
        if func is None and inspects(self.names.call_qual(call), dotted(call.func), slot_of_arg(call, arg)):
            return {INSPECTS}  # writer.add_graph(model, x), torch.jit.trace(model, x)
        if func is not None:
            param = param_for(func, call, arg)
            if param is None:
                return None
            out = self._func_uses(func, param, 0)
            if self.training.trains_in(func):
                out.add(TRAINS)
            return out
        target = self.modules.target_of(call.func)
        if target is None or target.summary is None or target.member is None:
            return self._instance_method_uses(call, arg)
        return self._module_uses(target.summary, target.member, call, arg)

    def _instance_method_uses(self, call: cst.Call, arg: cst.Arg) -> set[str] | None:
        """`obj.method(..., model, ...)` with `obj = Cls(...)` and `Cls` a class of the script's own
        modules: what that method does with the argument, as its summary records it."""
        made, method = self._receiver_made_by(call)
        target = self.modules.target_of(made.func) if made is not None else None
        if target is None or target.summary is None or target.member not in target.summary.classes:
            return None
        return self._module_uses(target.summary, f"{target.member}.{method}", call, arg)

    def _receiver_made_by(self, call: cst.Call) -> tuple[cst.Call | None, str]:
        """(`Cls(...)`, `method`) for `obj.method(...)` where `obj = Cls(...)` comes before the call in its
        scope; (None, "") otherwise."""
        func = call.func
        if type(func) is not cst.Attribute or type(func.value) is not cst.Name:
            return None, ""
        made = self.names.value_before(self.index.scope_of(call), func.value.value, call)
        return (made, func.attr.value) if isinstance(made, cst.Call) else (None, "")

    def constructor_uses(self, call: cst.Call, arg: cst.Arg) -> set[str] | None:
        """What a class of the script's own modules does with the value `arg` hands its constructor
        (`Trainer(model, loader)`), as `Trainer.__init__`'s parameter uses record it, with what its
        methods do with it once kept (`self.model = model`: kept_models.py); None when `call`
        constructs no such class."""
        target = self.modules.target_of(call.func)
        if target is None or target.summary is None or target.member not in target.summary.classes:
            return None
        return self._module_uses(target.summary, f"{target.member}.__init__", call, arg)

    def constructor_param(self, call: cst.Call, arg: cst.Arg) -> tuple[object, str, str] | None:
        """(the module's summary, the class, the parameter of its `__init__`) that `arg` of `call` binds,
        where `call` constructs a class of the script's own modules (`Trainer(model, opt)`)."""
        target = self.modules.target_of(call.func)
        if target is None or target.summary is None or target.member not in target.summary.classes:
            return None
        name = param_name(target.summary, f"{target.member}.__init__", call, arg)
        return None if name is None else (target.summary, target.member, name)

    def _module_uses(self, summary, member: str, call: cst.Call, arg: cst.Arg) -> set[str] | None:
        name = param_name(summary, member, call, arg)
        if name is None:
            return None
        out = set(summary.param_uses.get(member, {}).get(name, set()))
        if summary.does(member, TRAINS):
            out.add(TRAINS)
        return out

    def _method_of_instance(self, call: cst.Call) -> cst.FunctionDef | None:
        """The method `obj.method(...)` runs, where `obj = Cls(...)` in the call's scope and `Cls` is a
        class at the top level of this file (`early_stopper.is_continuable(model, auc)`)."""
        made, method = self._receiver_made_by(call)
        name = dotted(made.func) if made is not None else None
        cls = next((c for c in self.index.classes if c.name.value == name and c in self.index.module.body), None)
        return self.index.methods_of(cls).get(method) if cls is not None else None

    def _func_uses(self, func: cst.FunctionDef, param: str, depth: int) -> set[str]:
        out: set[str] = set()
        index = self.index
        for node in walk(func.body):
            if type(node) is cst.Attribute and dotted(node.value) == param:
                parent = index.parent.get(node)
                attr = node.attr.value
                called = type(parent) is cst.Call and parent.func is node
                if attr == "module":
                    out.add(UNWRAPS)
                elif attr == "state_dict" and called:
                    out.add(STATE_DICT)
                elif attr == "load_state_dict" and called:
                    out.add(LOAD_STATE)
                elif type(parent) not in (cst.AssignTarget, cst.AugAssign) and reaches_model(attr):
                    out.add(CUSTOM)
            elif type(node) is cst.Call:
                if dotted(node.func) == param:
                    out.add(FORWARD)
                    continue
                for a in node.args:
                    if dotted(a.value) != param or a.star:
                        continue
                    if a is node.args[0] and a.keyword is None and self.names.call_qual(node) in PICKLERS:
                        out.add(PICKLES)  # torch.save(model, path): pickled whole
                        continue
                    if dotted(node.func) in ("getattr", "hasattr", "isinstance"):
                        out.add(UNWRAPS)
                        continue
                    callee = index.callee_of(node)
                    if callee is not None and callee is not func and depth < DEPTH:
                        inner = param_for(callee, node, a)
                        if inner is not None:
                            out |= self._func_uses(callee, inner, depth + 1)
                    elif callee is None:
                        more = self.uses(node, a) if depth < DEPTH else None
                        out |= (more or set()) - {TRAINS}
            elif type(node) is cst.Return and node.value is not None and param in _returned(node.value):
                out.add(RETURNS)
        return out

    # ----------------------------------------------------------------- builders
    def model_return(self, call: cst.Call) -> Slot | None:
        """Where the model that the function `call` invokes builds an optimizer for sits in what it
        returns: "" (the value itself), a tuple position or a dict key; None when it returns none."""
        func = self.index.callee_of(call)
        if func is not None:
            return self._model_return(func)
        target = self.modules.target_of(call.func)
        if target is None or target.summary is None or target.member is None:
            return None
        return target.summary.model_returns.get(target.member)

    def _model_return(self, func: cst.FunctionDef) -> Slot | None:
        models = set()
        for site in self.training.optimizer_sites:
            if self.index.enclosing(site.stmt, cst.FunctionDef) is func:
                models.update(self.training.parameter_receivers(site.node))  # type: ignore[arg-type]
        for call in (n for n in walk(func.body) if isinstance(n, cst.Call)):
            if self.training.parameter_receivers(call) and _optimizer_call(self.names, call):
                models.update(self.training.parameter_receivers(call))
        return self.returned_slot(func, models) if models else None

    def returned_slot(self, func: cst.FunctionDef, names: set[str]) -> Slot | None:
        """Where `func` returns one of `names`: "" (the value itself), a tuple position or a dict key."""
        for node in walk(func.body):
            if (
                type(node) is cst.Return
                and node.value is not None
                and self.index.enclosing(node, cst.FunctionDef) is func
            ):
                slot = _slot_of(node.value, names)
                if slot is not None:
                    return slot
        return None

    def builder_calls(self) -> list[tuple[cst.Call, Slot]]:
        """Calls of functions (of this file or of the script's own modules) that build a model and its
        optimizer and return the model (`model, optimizer = build(cfg)`, `{"model": net, "opt": ...}`),
        with where the model is in what they return."""
        out = []
        by_func: dict[object, Slot | None] = {}
        for call in self.index.calls:
            value = self.index.parent.get(call)
            if type(value) is cst.Subscript:
                value = self.index.parent.get(value)
            if type(value) is not cst.Assign:
                continue  # what a builder returns is bound to a name
            func = self.index.callee_of(call)
            key: object = func if func is not None else dotted(call.func)
            if key is None:
                continue
            if key not in by_func:
                by_func[key] = self._builds(func) if func is not None else self._module_builds(call)
            slot = by_func[key]
            if slot is not None:
                out.append((call, slot))
        return out

    def _builds(self, func: cst.FunctionDef) -> Slot | None:
        if any(self.index.contains(func, site.stmt) for site in self.training.optimizer_sites):
            return None  # `opt = SGD(model.parameters())` in it: found from the optimizer (Models.trained)
        return self._model_return(func)

    def _module_builds(self, call: cst.Call) -> Slot | None:
        target = self.modules.target_of(call.func)
        if target is None or target.summary is None or target.member is None:
            return None
        return target.summary.model_returns.get(target.member)


def _optimizer_call(names: Names, call: cst.Call) -> bool:
    q = names.call_qual(call) or ""
    return q.startswith("torch.optim.") or bool(OPTIMIZER_NAMES.search(q.split(".")[-1]))


def _slot_of(value: cst.BaseExpression, models: set[str]) -> Slot | None:
    if dotted(value) in models:
        return ""
    if isinstance(value, cst.Tuple):
        for i, el in enumerate(value.elements):
            if dotted(el.value) in models:
                return i
    if isinstance(value, cst.Dict):
        for el in value.elements:
            if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString) and dotted(el.value) in models:
                key = el.key.evaluated_value
                if isinstance(key, str):
                    return key
    return None


def _returned(value: cst.BaseExpression) -> list[str]:
    if isinstance(value, cst.IfExp):
        return _returned(value.body) + _returned(value.orelse)
    if isinstance(value, cst.BooleanOperation):
        return _returned(value.left) + _returned(value.right)
    if isinstance(value, (cst.Tuple, cst.List)):
        return [n for el in value.elements for n in _returned(el.value)]
    d = dotted(value)
    return [d] if d and "." not in d else []


__all__ = ["DEPTH", "Helpers", "param_for"]
