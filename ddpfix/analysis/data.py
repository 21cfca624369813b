"""Data: the DataLoaders and samplers, which loop iterates a loader and trains, the epoch loop around
it, and how code elsewhere names a loader (a parameter, a class attribute)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from ..syntax import assign_targets, assigned_value, dotted, mentions, walk
from .dicts import Contents, Dicts
from .index import Site, TreeIndex
from .names import Names
from .training import HELPER_DEPTH, Training

LOADER_NAMES = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
SAMPLER_NAMES = {"torch.utils.data.distributed.DistributedSampler", "torch.utils.data.DistributedSampler"}


@dataclass(eq=False)
class Loader:
    site: Site  # the DataLoader(...) call
    target: str | None  # "train_loader", "self.train_loader"
    binding: cst.CSTNode | None = None  # the statement binding `target` (a factory's call site, or the loader's own)


class Data:
    """Loaders, samplers and the loops over them."""

    def __init__(self, index: TreeIndex, names: Names, training: Training) -> None:
        self.index = index
        self.names = names
        self.training = training

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
    def loaders(self) -> list[Loader]:
        out = []
        for call in self.loader_calls:
            site = self.index.site(call)
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
        for call in self.index.callers_of(func):
            stmt = self.index.site(call).stmt
            targets = assign_targets(stmt)
            if len(targets) == 1 and assigned_value(stmt) is call:
                return targets[0], stmt
        return None, None

    @cached_property
    def training_loaders(self) -> list[tuple[Loader, cst.For]]:
        out = []
        for loader in self.loaders:
            loop = self.training_loop_of(loader)
            if loop is not None:
                out.append((loader, loop))
        return out

    def training_loop_of(self, loader: Loader) -> cst.For | None:
        """The batch loop that iterates `loader` and trains (calls backward/step inside, maybe via helpers)."""
        if loader.target is None:
            return None
        for loop in self.index.loops:
            if isinstance(loop, cst.For) and self.iterates(loop, loader) and self.training.trains_in(loop):
                return loop
        return None

    def iterates(self, loop: cst.For, loader: Loader) -> bool:
        """Does `loop` iterate `loader`: by its name, through a wrapper bound to it (`tqdm(loader)`),
        a parameter some call passes it to, or the class attribute that holds it?"""
        index = self.index
        names = {dotted(n) for n in walk(loop.iter) if isinstance(n, (cst.Name, cst.Attribute))}
        target = loader.target or ""
        if target in names:
            return True
        for name in names:  # `pbar = tqdm(train_loader)` ... `for batch in pbar:`
            if name and any(
                mentions(assigned_value(s.stmt) or cst.Name("_"), target)
                for s in self.names.assignments(index.scope_of(loop), name)
                if index.before(s.stmt, loop)
            ):
                return True
        # reached through a parameter: f(model, train_loader) -> def f(model, loader): for b in loader
        func = index.enclosing(loop, cst.FunctionDef)
        if isinstance(func, cst.FunctionDef):
            for pname in self.params_bound_to(func, target):
                if pname in names:
                    return True
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
            bound += [params[i] for i, a in enumerate(pos) if i < len(params) and dotted(a.value) == value]
            bound += [a.keyword.value for a in call.args if a.keyword is not None and dotted(a.value) == value]
        for stmt in walk(init):
            if isinstance(stmt, cst.SimpleStatementLine) and dotted(assigned_value(stmt) or cst.Name("_")) in bound:
                targets = assign_targets(stmt)
                if len(targets) == 1 and targets[0].startswith("self."):
                    return targets[0]
        return None

    def params_bound_to(self, func: cst.FunctionDef, value: str) -> list[str]:
        """Parameters of `func` that some call in the file passes `value` to."""
        params = [p.name.value for p in func.params.params]
        params_pos = params[1:] if params and params[0] in ("self", "cls") else params
        out = []
        for call in self.index.calls_by_name(func.name.value):
            pos = [a for a in call.args if a.keyword is None]
            for i, arg in enumerate(pos):
                if dotted(arg.value) == value and i < len(params_pos):
                    out.append(params_pos[i])
            for arg in call.args:
                if arg.keyword is not None and dotted(arg.value) == value:
                    out.append(arg.keyword.value)
        return out

    def epoch_loop_for(self, batch_loop: cst.For) -> cst.For | None:
        """The loop around the batch loop: directly enclosing it, or calling the function that holds it."""
        for anc in self.index.ancestors(batch_loop):
            if isinstance(anc, cst.For):
                return anc
            if isinstance(anc, cst.FunctionDef):
                return self._loop_calling(anc, depth=0)
        return None

    def _loop_calling(self, func: cst.FunctionDef, depth: int) -> cst.For | None:
        if depth > HELPER_DEPTH:
            return None
        for call in self.index.callers_of(func):
            for anc in self.index.ancestors(call):
                if isinstance(anc, cst.For):
                    return anc
                if isinstance(anc, cst.FunctionDef):
                    found = self._loop_calling(anc, depth + 1)
                    if found is not None:
                        return found
                    break
        return None

    def loader_reach(self, loader: Loader, loop: cst.CSTNode) -> str | None:
        """How code at `loop` names the loader: its variable in the same scope, or the attribute
        a class stores it in (`Trainer(model, train_loader)` -> `self.train_data`)."""
        if loader.target is None or loader.binding is None:
            return None
        index = self.index
        if index.scope_of(loop) is index.scope_of(loader.binding):
            return loader.target
        cls = index.enclosing(loop, cst.ClassDef)
        if isinstance(cls, cst.ClassDef):
            if loader.target.startswith("self.") and loader.site.cls is cls:
                return loader.target
            return self.attribute_holding(cls, loader.target)
        return None


__all__ = ["LOADER_NAMES", "SAMPLER_NAMES", "Data", "Loader"]
