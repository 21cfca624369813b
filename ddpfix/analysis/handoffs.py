"""Training loaders whose batch loop runs in code the script hands them to: a function or method of the
script's own modules that trains over its loader argument (`simclr.train(train_loader)`, with
`SimCLR` from `simclr.py`), or an ignite trainer (`trainer.run(train_loader, max_epochs=n)`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from ..syntax import arg_slots, assign_targets, assigned_value, dotted, kwarg, positional
from .call_params import param_for
from .index import TreeIndex
from .loader_params import EPOCHS, KEPT_AS, SETS_EPOCH, TRAINS_ON
from .local_writes import method_of_instance
from .model_params import TRAINS
from .module_summary import ModuleSummary
from .modules import LocalModules
from .names import Names
from .reduced_sums import REDUCED, REDUCED_EACH_BATCH
from .training import Training
from .values import handle_of

HANDOFF_DEPTH = 2  # functions of this file a loader is followed through to the code that trains over it
# ignite's engines: `run(data, max_epochs=...)` iterates `data` once per epoch.
SUPERVISED_TRAINERS = {"ignite.engine.create_supervised_trainer"}
ENGINES = {"ignite.engine.Engine", "ignite.engine.engine.Engine", "ignite.engine.DeterministicEngine"}


@dataclass(eq=False)
class Handoff:
    """A training loader handed to code that iterates it elsewhere."""

    call: cst.Call  # the call that hands it on
    where: str  # how a message names that code: "SimCLR.train() in simclr.py", "the ignite trainer `trainer`"
    epochs_there: bool  # that code runs the epoch loop too (a set_epoch must go there)
    sets_epoch: bool  # that code calls the loader's sampler.set_epoch itself
    engine: str | None = None  # an ignite engine's name: set_epoch goes into its EPOCH_STARTED handler
    engine_stmt: cst.BaseStatement | None = None  # the statement that binds the engine
    path: Path | None = None  # the module whose function runs the epochs (None: an ignite trainer)
    member: str | None = None  # that function: "train", or "SimCLR.train" for a method
    param: str | None = None  # its parameter that receives the loader
    there: str | None = None  # how that code names the loader, when not as the script does (`self.data_loader`)
    # the same call reaching other classes' methods (an instance bound per branch): each runs its epochs
    also: list[Handoff] = field(default_factory=list)

    def each(self) -> list[Handoff]:
        return [self, *self.also]


class Handoffs:
    """Finds where a loader is handed to code that trains over it."""

    def __init__(self, index: TreeIndex, names: Names, training: Training, modules: LocalModules) -> None:
        self.index = index
        self.names = names
        self.training = training
        self.modules = modules

    def of(self, target: str, binding: cst.CSTNode, depth: int = 0) -> Handoff | None:
        """The first call after `binding`, in its scope, that hands `target` to code training over it,
        also through a function of this file that hands on the parameter it gets it as (`model =
        train(train_loader)`, with `Trainer(model, loader)` in `train`)."""
        for call, slot, arg, scope in self._handing(target, binding):
            found = self._engine(call, slot, scope) or self._module(call, slot, scope)
            if found is None and depth < HANDOFF_DEPTH:
                found = self._through_function(call, arg, depth)
            if found is not None:
                return found
        return None

    def summed_by(self, target: str, binding: cst.CSTNode) -> tuple[Handoff, bool] | None:
        """The first call after `binding`, in its scope, that hands `target` to a function or method of
        the script's own modules which sums over it and reduces the sum over the ranks (reduced_sums.py),
        and whether its loop runs quietly (under no_grad, no collective of its own at each batch)."""
        for call, slot, _, scope in self._handing(target, binding):
            for use in (REDUCED, REDUCED_EACH_BATCH):
                found = self._module(call, slot, scope, use)
                if found is not None:
                    return found, use == REDUCED
        return None

    def _handing(self, target: str, binding: cst.CSTNode):
        """(call, slot, argument, scope) for each argument `target` is handed as, after `binding` in its scope."""
        index = self.index
        scope = index.scope_of(binding)
        for call in index.calls:
            if index.scope_of(call) is not scope or not index.before(binding, call):
                continue
            for slot, arg in arg_slots(call):
                if handle_of(arg.value) == target:
                    yield call, slot, arg, scope

    def _through_function(self, call: cst.Call, arg: cst.Arg, depth: int) -> Handoff | None:
        callee = self.index.callee_of(call)
        if callee is None or not isinstance(callee, cst.FunctionDef):
            return None
        param = param_for(callee, call, arg)
        if param is None or self.names.assignments(callee, param):
            return None  # rebound in the function: not the loader any more
        return self.of(param, callee.params, depth + 1)

    def instance_epoch_loop(self, handoff: Handoff) -> cst.For | cst.While | None:
        """For a loader handed to a class that keeps it and runs one pass of it per call of a method
        (`trainer = Train(model, loader, ...)`, then `for epoch in ...: trainer.run_epoch()`): the loop
        of the script around that call, after the instance is made in the same scope."""
        if handoff.member is None or not handoff.member.endswith(".__init__") or handoff.epochs_there:
            return None
        index, call = self.index, handoff.call
        site = index.site(call)
        targets = assign_targets(site.stmt)
        if assigned_value(site.stmt) is not call or len(targets) != 1 or "." in targets[0]:
            return None
        scope = index.scope_of(call)
        for later in index.calls:
            func = later.func
            if type(func) is not cst.Attribute or dotted(func.value) != targets[0] or not index.before(call, later):
                continue
            loop = index.enclosing(later, (cst.For, cst.While))
            if loop is None or index.scope_of(loop) is not scope:
                continue
            found = method_of_instance(index, self.names, self.modules, later)
            if found is not None and found[0].does(found[1], TRAINS):
                return loop  # type: ignore[return-value]
        return None

    def trained_over(self, call: cst.Call) -> list[tuple[cst.Arg, Handoff]]:
        """The arguments of `call` that a function or method of the script's own modules trains over."""
        scope = self.index.scope_of(call)
        out = []
        for slot, arg in arg_slots(call):
            found = self._module(call, slot, scope)
            if found is not None:
                out.append((arg, found))
        return out

    def _engine(self, call: cst.Call, slot: int | str, scope) -> Handoff | None:
        """`trainer.run(train_loader, max_epochs=n)` with `trainer = create_supervised_trainer(...)`."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "run" and slot in (0, "data")):
            return None
        engine = dotted(func.value)
        if engine is None or "." in engine:
            return None
        sites = self.names.assignments_before(scope, engine, call)
        if not sites:
            return None
        value = assigned_value(sites[-1].stmt)
        if not isinstance(value, cst.Call) or not self._trains_engine(value):
            return None
        return Handoff(call, f"the ignite trainer `{engine}`", True, False, engine, sites[-1].stmt)

    def _trains_engine(self, ctor: cst.Call) -> bool:
        qual = self.names.call_qual(ctor) or ""
        if qual in SUPERVISED_TRAINERS:
            return True
        if qual not in ENGINES:
            return False
        step = positional(ctor, 0) or kwarg(ctor, "process_function")
        name = dotted(step.value) if step is not None else None
        funcs = [f for f in self.index.funcs if f.name.value == name]
        return len(funcs) == 1 and self.training.trains_in(funcs[0])

    def _module(self, call: cst.Call, slot: int | str, scope, use: str = TRAINS_ON) -> Handoff | None:
        """A function or method of one of the script's own modules that trains over the argument (or
        does `use` with it and does not train over it); with the others the call may reach (`also`)."""
        found = [
            h
            for summary, member in self._callees(call, scope)
            for h in [self._one(call, slot, summary, member, use)]
            if h
        ]
        if found:
            found[0].also = found[1:]
        return found[0] if found else None

    def _one(self, call: cst.Call, slot: int | str, summary, member: str, use: str) -> Handoff | None:
        # `Learner(model, opt, train_loader)`: a class that keeps it (`_callee` names its `__init__`)
        built = member.endswith(".__init__") and member.removesuffix(".__init__") in summary.classes
        params = summary.params.get(member)
        if params is None:
            return None
        name = slot if isinstance(slot, str) else (params[slot] if slot < len(params) else None)
        uses = summary.param_uses.get(member, {}).get(name or "", set())
        if use not in uses or (use != TRAINS_ON and TRAINS_ON in uses):
            return None
        where = (
            f"the {member.split('.')[0]} class of {summary.path.name}"
            if built
            else f"{member}() in {summary.path.name}"
        )
        there = next((u.removeprefix(KEPT_AS) for u in sorted(uses) if u.startswith(KEPT_AS)), None)
        return Handoff(
            call, where, EPOCHS in uses, SETS_EPOCH in uses, path=summary.path, member=member, param=name, there=there
        )

    def _callees(self, call: cst.Call, scope) -> list[tuple[ModuleSummary, str]]:
        """(module summary, member) of a local module's function (`train(...)`, `engine.train(...)`) or
        of a method called through an instance of a local module's class (`simclr = SimCLR(...)`, then
        `simclr.train(...)`; one per class where branches bind the instance to different ones)."""
        target = self.modules.target_of(call.func)
        if target is not None and target.summary is not None and target.member is not None:
            if target.member in target.summary.classes:  # `Solver(loader, config)`: what its methods do with it
                return [(target.summary, f"{target.member}.__init__")]
            return [(target.summary, target.member)]
        func = call.func
        if not isinstance(func, cst.Attribute):
            return []
        obj = dotted(func.value)
        if obj is None or "." in obj:
            return []
        out = []
        for site in self.names.assignments_before(scope, obj, call):
            ctor = assigned_value(site.stmt)
            made = self.modules.target_of(ctor.func) if isinstance(ctor, cst.Call) else None
            if made is not None and made.summary is not None and made.member in made.summary.classes:
                found = (made.summary, f"{made.member}.{func.attr.value}")
                if found not in out:
                    out.append(found)
        return out


__all__ = ["Handoff", "Handoffs"]
