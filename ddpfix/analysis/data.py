"""Data: the DataLoaders and samplers, which loop iterates a loader and trains, the epoch loop around
it, and how code elsewhere names a loader (a parameter, a class attribute)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import libcst as cst

from ..syntax import assign_targets, assigned_value, dotted, iterated_by, walk
from .dicts import Contents, Dicts
from .epochs import epoch_counter
from .generators import consuming_loops, yielding_function
from .handoffs import Handoff, Handoffs
from .index import Site, TreeIndex
from .iterators import drawing_loops, iterator_calls
from .modules import LocalModules
from .names import Names
from .returns import LOADER, SAMPLER, Built, leaves
from .sampler_bindings import SamplerBinding, sampler_bindings
from .training import HELPER_DEPTH, Training
from .values import Values, handle_of

LOADER_NAMES = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
SAMPLER_NAMES = {"torch.utils.data.distributed.DistributedSampler", "torch.utils.data.DistributedSampler"}


@dataclass(eq=False)
class Foreign:
    """A DataLoader or DistributedSampler one of the script's own modules builds and a helper there
    returns (`train_loader, val_loader = data_utils.build_loaders(args)`), by the name it gets here."""

    call: cst.Call  # the helper's call in this file
    target: str
    binding: cst.BaseStatement
    built: Built  # what the helper returns at that place, and its line there
    path: Path  # the module's file
    func: str  # the helper's name there


@dataclass(eq=False)
class Loader:
    """One name a DataLoader is known by. A loader a helper returns to several callers is one Loader
    per name its callers bind it to, all with the same `site`."""

    site: Site  # the DataLoader(...) call
    target: str | None  # "train_loader", "self.train_loader", 'loaders["train"]'
    binding: cst.CSTNode | None = None  # the statement binding `target` (a factory's call site, or the loader's own)
    local: str | None = None  # the name the loader gets where it is built, if any (`train_loader = DataLoader(...)`)
    factory: cst.FunctionDef | None = None  # the helper of this file that builds and returns it
    via: list[cst.Call] = field(default_factory=list)  # the helper calls it comes out of, innermost first


class Data:
    """Loaders, samplers and the loops over them."""

    def __init__(self, index: TreeIndex, names: Names, training: Training, modules: LocalModules) -> None:
        self.index = index
        self.names = names
        self.training = training
        self.modules = modules

    @cached_property
    def dicts(self) -> Dicts:
        return Dicts(self.index, self.names)

    def kwargs_of(self, call: cst.Call) -> Contents | None:
        """What the `**kwargs` of `call` hold (None when it has none), all of them together."""
        stars = [a for a in call.args if a.star == "**"]
        if not stars:
            return None
        out = Contents()
        for arg in stars:
            out.update(self.dicts.value(arg.value, call))
        return out

    @cached_property
    def sampler_calls(self) -> list[cst.Call]:
        return self.names.calls_matching(lambda q: q in SAMPLER_NAMES)

    @cached_property
    def loader_calls(self) -> list[cst.Call]:
        return self.names.calls_matching(lambda q: q in LOADER_NAMES)

    @cached_property
    def has_set_epoch(self) -> bool:
        """Does the script call `<something>.set_epoch(...)` anywhere?"""
        return any((dotted(c.func) or "").endswith(".set_epoch") for c in self.index.calls)

    @cached_property
    def values(self) -> Values:
        return Values(self.index)

    @cached_property
    def loaders(self) -> list[Loader]:
        out = []
        for call in self.loader_calls:
            site = self.index.site(call)
            targets = assign_targets(site.stmt)
            local = targets[0] if len(targets) == 1 and assigned_value(site.stmt) is call else None
            handles = self.values.handles(call)
            for h in handles:
                out.append(Loader(site, h.target, h.binding, local, h.factory, h.via))
            if not handles:
                out.append(Loader(site, None, None, local))
        return out

    @cached_property
    def foreign(self) -> list[Foreign]:
        """Loaders and samplers the script gets from helpers of its own modules, by the names it binds."""
        out = []
        for call in self.index.calls:
            target = self.modules.target_of(call.func)
            if target is None or target.summary is None or target.member is None:
                continue
            for path, built in leaves(target.summary.returns.get(target.member)):
                for h in self.values.bound(call, path):
                    out.append(Foreign(call, h.target, h.binding, built, target.summary.path, target.member))
        return out

    def foreign_loaders(self) -> list[tuple[Foreign, cst.For]]:
        """Loaders of the script's own modules that a training loop here iterates, with that loop."""
        out = []
        for f in self.foreign:
            if f.built.kind == LOADER:
                loop = self.training_loop_of(Loader(self.index.site(f.call), f.target, f.binding))
                if loop is not None:
                    out.append((f, loop))
        return out

    def foreign_samplers(self) -> list[Foreign]:
        return [f for f in self.foreign if f.built.kind == SAMPLER]

    @cached_property
    def sampler_bindings(self) -> list[SamplerBinding]:
        """Every name a DistributedSampler is bound to where it is built, or where a helper returns it."""
        return list(sampler_bindings(self))

    def loaders_at(self, call: cst.CSTNode) -> list[Loader]:
        """Every name the DataLoader built by `call` is known by."""
        return [loader for loader in self.loaders if loader.site.node is call]

    @cached_property
    def training_loaders(self) -> list[tuple[Loader, cst.For]]:
        """Each DataLoader a training loop iterates, once (by the first of its names that a training
        loop iterates), with that loop."""
        out = []
        seen: set[int] = set()
        for loader in self.loaders:
            if id(loader.site.node) in seen:
                continue
            loop = self.training_loop_of(loader)
            if loop is not None:
                seen.add(id(loader.site.node))
                out.append((loader, loop))
        return out

    def shared_factory(self, loader: Loader) -> Loader | None:
        """Another name, from another call of the helper that builds `loader`, that no training loop
        iterates (`val_loader = make_loader(val_set)` beside `train_loader = make_loader(train_set)`)."""
        if loader.factory is None or not loader.via:
            return None
        for other in self.loaders_at(loader.site.node):
            if other.via and other.via[0] is not loader.via[0] and self.training_loop_of(other) is None:
                return other
        return None

    def training_loop_of(self, loader: Loader) -> cst.CSTNode | None:
        """Where the training batches of `loader` are drawn: the batch loop that iterates it and trains
        (calls backward/step inside, maybe via helpers), a loop that trains on `next(it)` of an iterator
        `it = iter(loader)`, or the call that hands it to code iterating it elsewhere (Handoff)."""
        if loader.target is None:
            return None
        for loop in self.index.loops:
            if isinstance(loop, cst.For) and self.iterates(loop, loader) and self.trains_on(loop):
                return loop
        drawn = self._drawing_loop(loader)
        if drawn is not None:
            return drawn
        if loader.binding is not None:
            handoff = self.handoffs.of(loader.target, loader.binding)
            if handoff is not None:
                self._handed[id(handoff.call)] = handoff
                return handoff.call
        return None

    def trains_on(self, loop: cst.CSTNode) -> bool:
        """Does the model train on what `loop` draws: in the loop, or in a loop that takes what it
        yields (a generator of batches, generators.py)?"""
        if self.training.trains_in(loop):
            return True
        func = yielding_function(self.index, loop)
        return func is not None and any(
            self.training.trains_in(c) for c in consuming_loops(self.index, self.names, func)
        )

    def handoff(self, node: cst.CSTNode) -> Handoff | None:
        """The hand-off behind a node `training_loop_of` returned, if it is one."""
        return self._handed.get(id(node))

    @cached_property
    def handoffs(self) -> Handoffs:
        return Handoffs(self.index, self.names, self.training, self.modules)

    @cached_property
    def _handed(self) -> dict[int, Handoff]:
        return {}

    @cached_property
    def _iterators(self) -> dict[int, cst.Call]:
        """batch loop -> the `iter(loader)` call whose iterator it draws from (see `_drawing_loop`)."""
        return {}

    def iterator_of(self, batch_loop: cst.CSTNode) -> cst.Call | None:
        """The `iter(loader)` call whose iterator `batch_loop` draws its batches from with next()."""
        return self._iterators.get(id(batch_loop))

    def _drawing_loop(self, loader: Loader) -> cst.CSTNode | None:
        """`it = iter(loader)`, then a loop that trains on `next(it)` (iterators.py)."""
        for call, it in iterator_calls(self.index):
            if not self._names(call, loader):
                continue
            for loop in drawing_loops(self.index, self.names, call, it):
                if self.trains_on(loop):
                    self._iterators[id(loop)] = call
                    return loop
        return None

    def _names(self, call: cst.Call, loader: Loader) -> bool:
        """Does the argument of `iter(...)` name `loader` where the call is?"""
        over = iterated_by(call)
        arg = handle_of(over) if over is not None else None
        if arg is None:
            return False
        if arg == loader.target:
            return True
        func = self.index.enclosing(call, cst.FunctionDef)
        return isinstance(func, cst.FunctionDef) and arg in self.params_bound_to(func, loader.target or "")

    def iterates(self, loop: cst.For, loader: Loader) -> bool:
        """Does `loop` iterate `loader`: by its name, through a wrapper bound to it (`tqdm(loader)`),
        a parameter some call passes it to, or the class attribute that holds it?"""
        index = self.index
        names = {handle_of(n) for n in walk(loop.iter) if isinstance(n, (cst.Name, cst.Attribute, cst.Subscript))}
        target = loader.target or ""
        if target in names:
            return True
        # reached through a parameter: f(model, train_loader) -> def f(model, loader): for b in loader
        func = index.enclosing(loop, cst.FunctionDef)
        params = self.params_bound_to(func, target) if isinstance(func, cst.FunctionDef) else []
        if any(p in names for p in params):
            return True
        for name in names:  # `pbar = tqdm(train_loader)` (or of that parameter) ... `for batch in pbar:`
            if name and any(
                _refers(assigned_value(s.stmt) or cst.Name("_"), held)
                for s in self.names.assignments(index.scope_of(loop), name)
                if index.before(s.stmt, loop)
                for held in (target, *params)
            ):
                return True
        if isinstance(func, cst.FunctionDef):
            base = target.split(".")[-1]
            if f"self.{base}" in names and target.startswith("self."):
                return True
        cls = index.enclosing(loop, cst.ClassDef)
        if isinstance(cls, cst.ClassDef):
            attr = self.attribute_holding(cls, target)
            if attr is not None and attr in names:
                return True
        return False

    def attribute_holding(self, cls: cst.ClassDef, value: str) -> str | None:
        """`self.train_data` when `Trainer(model, train_loader)` stores that argument in it."""
        init = self.index.methods_of(cls).get("__init__")
        if init is None:
            return None
        params = [p.name.value for p in init.params.params][1:]
        bound: list[str] = []
        for call in self.index.class_calls(cls):
            pos = [a for a in call.args if a.keyword is None]
            bound += [params[i] for i, a in enumerate(pos) if i < len(params) and handle_of(a.value) == value]
            bound += [a.keyword.value for a in call.args if a.keyword is not None and handle_of(a.value) == value]
        for stmt in walk(init):
            if isinstance(stmt, cst.SimpleStatementLine) and dotted(assigned_value(stmt) or cst.Name("_")) in bound:
                targets = assign_targets(stmt)
                if len(targets) == 1 and targets[0].startswith("self."):
                    return targets[0]
        return None

    def param_holding(self, func: cst.FunctionDef, value: str) -> str | None:
        """The parameter of `func` that every call of it in the file passes `value` to, if there is one
        (`train(model, train_loader, ...)` -> `def train(model, loader, ...)`: "loader")."""
        calls = self.index.calls_by_name(func.name.value)
        found = {p for p in self.params_bound_to(func, value)}
        if len(found) != 1 or not calls:
            return None
        param = found.pop()
        for call in calls:
            if param not in self._params_given(func, call, value):
                return None
        return param

    def _params_given(self, func: cst.FunctionDef, call: cst.Call, value: str) -> list[str]:
        params = [p.name.value for p in func.params.params]
        params_pos = params[1:] if params and params[0] in ("self", "cls") else params
        pos = [a for a in call.args if a.keyword is None]
        out = [params_pos[i] for i, a in enumerate(pos) if i < len(params_pos) and handle_of(a.value) == value]
        return out + [a.keyword.value for a in call.args if a.keyword is not None and handle_of(a.value) == value]

    def params_bound_to(self, func: cst.FunctionDef, value: str) -> list[str]:
        """Parameters of `func` that some call in the file passes `value` to."""
        return [p for call in self.index.calls_by_name(func.name.value) for p in self._params_given(func, call, value)]

    def epoch_loop_for(self, batch_loop: cst.CSTNode) -> cst.For | cst.While | None:
        """The loop around the batch loop (or hand-off call): the innermost loop enclosing it, the loop
        that calls the method of the instance a hand-off call makes, or a loop calling the function
        that holds it. For batches drawn from `it = iter(loader)`, the loop
        around that `iter(...)` call: a new iterator, a new epoch."""
        start = self._iterators.get(id(batch_loop), batch_loop)
        for anc in self.index.ancestors(start):
            if isinstance(anc, (cst.For, cst.While)):
                return anc
            if isinstance(anc, cst.FunctionDef):
                break
        handoff = self.handoff(batch_loop)
        if handoff is not None:  # `trainer = Train(model, loader)`, then `trainer.run_epoch()` once per epoch
            kept = self.handoffs.instance_epoch_loop(handoff)
            if kept is not None:
                return kept
        func = self.index.enclosing(start, cst.FunctionDef)
        return self._loop_calling(func, depth=0) if isinstance(func, cst.FunctionDef) else None

    def epoch_variable(self, loop: cst.For | cst.While) -> str | None:
        """The epoch number an epoch loop names: its loop variable (`for epoch in range(n)`), or the
        counter a `while epoch < n:` loop steps by one each time round."""
        if isinstance(loop, cst.While):
            return epoch_counter(loop)
        return loop.target.value if isinstance(loop.target, cst.Name) else None

    def _loop_calling(self, func: cst.FunctionDef, depth: int) -> cst.For | cst.While | None:
        if depth > HELPER_DEPTH:
            return None
        for call in self.index.callers_of(func):
            for anc in self.index.ancestors(call):
                if isinstance(anc, (cst.For, cst.While)):
                    return anc
                if isinstance(anc, cst.FunctionDef):
                    found = self._loop_calling(anc, depth + 1)
                    if found is not None:
                        return found
                    break
        return None

    def loader_reach(self, loader: Loader, loop: cst.CSTNode) -> str | None:
        """How code at `loop` names the loader: its variable in the same scope, the parameter of the
        function or method every call hands it to (`Trainer().fit(train_loader)` -> `loader`), or the
        attribute a class stores it in (`Trainer(model, train_loader)` -> `self.train_data`)."""
        if loader.target is None or loader.binding is None:
            return None
        index = self.index
        if index.scope_of(loop) is index.scope_of(loader.binding):
            return loader.target
        func = index.enclosing(loop, cst.FunctionDef)
        if isinstance(func, cst.FunctionDef):  # a function, or a method, that every call hands the loader
            param = self.param_holding(func, loader.target)
            if param is not None:
                return param
        cls = index.enclosing(loop, cst.ClassDef)
        if isinstance(cls, cst.ClassDef):
            if loader.target.startswith("self.") and loader.site.cls is cls:
                return loader.target
            return self.attribute_holding(cls, loader.target)
        return None


def _refers(node: cst.CSTNode, handle: str) -> bool:
    """Does `node` contain an expression spelled `handle` (a name, attribute or constant subscript)?"""
    return any(isinstance(n, (cst.Name, cst.Attribute, cst.Subscript)) and handle_of(n) == handle for n in walk(node))


__all__ = ["LOADER_NAMES", "SAMPLER_NAMES", "Data", "Foreign", "Loader", "SamplerBinding"]
