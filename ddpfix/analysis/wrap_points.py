"""Where a model's DDP wrap goes: after the last statement that prepares the model (moves, loads,
converts or re-initialises it) and before the first that runs it or hands it on; the optimizers in
between move after the wrap.

A statement that changes the parameters in place (`model.weight_init(0.0, 0.02)`, a method of the
model's class that writes them; `nn.init.normal_(model.fc.weight)`; `for m in model.modules(): ...`
re-initialising layers) must come before the wrap: DDP copies rank 0's parameters to every rank once,
when it is built, and an unseeded initialisation after that leaves each rank its own weights."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import libcst as cst

from ..syntax import (
    assign_targets,
    calls_in,
    dotted,
    is_main_guard,
    mentions,
    method_name,
    receiver,
    single_small,
    walk,
)
from .call_params import param_names
from .classes import Classes
from .effects import LOGGER_METHODS
from .index import Block
from .model_params import FORWARD, LOAD_STATE, TRAINS
from .names import Names
from .requires_grad import part_of, reaches, sets_requires_grad, walks
from .training import Training

if TYPE_CHECKING:
    from .helpers import Helpers
    from .models import Model

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
# The statements whose blocks run at most once where they stand: a definition inside one is lifted
# out to the level the model is trained at.
BRANCHES = (cst.If, cst.Else, cst.Try, cst.TryStar, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally, cst.With)
# A method of a class the analysis cannot read, named as one that (re-)initialises the parameters.
INIT_NAME = re.compile(r"(^|_)(init|initiali[sz]e|reset)(_|$)")
# Calls that change the parameters they reach in place: any `x.foo_(...)` tensor method, and these.
WRITING_METHODS = {"apply", "load_state_dict", "reset_parameters", "copy_"}
BENIGN_CALLS = {"print", "len", "sum", "str", "repr", "format", "type", "isinstance", "hasattr", "getattr", "id"}
# a writer's graph of the model (`writer.add_graph(model, x)`), wandb's gradient hooks (`wandb.watch(model)`):
# they read the plain model before the wrap as well as after it, and prepare nothing DDP must see
INSPECTING_METHODS = {"add_graph", "watch"}


@dataclass(eq=False)
class WrapPoint:
    """Where `model = DDP(model)` goes: after `anchor` (the last preparation of the model in its block)."""

    anchor: cst.BaseStatement
    block: Block
    moves: list[cst.BaseStatement]  # optimizer/scheduler statements between definition and anchor
    blocked: list[cst.BaseStatement]  # optimizer statements that must stay before a later device move


class WrapPoints:
    """The wrap point of each trained model, and how a statement uses a model on the way there."""

    def __init__(self, names: Names, training: Training, helpers: Helpers | None = None) -> None:
        self.names = names
        self.training = training
        self.helpers = helpers
        self._wrap_points: dict[int, WrapPoint] = {}

    def wrap_point(self, model: Model) -> WrapPoint:
        """Where this model gets wrapped (see `_wrap_point`), computed once per model."""
        if id(model) not in self._wrap_points:
            self._wrap_points[id(model)] = self._wrap_point(model)
        return self._wrap_points[id(model)]

    def start(self, model: Model) -> tuple[cst.BaseStatement, Block]:
        """The statement (and its block) the wrap follows at the earliest: the model's definition, or
        the `if`/`try`/`with` statement around it when the optimizer comes after that statement
        (`if use_gpu: model = model.cuda()`, a model picked in an `if/elif/else` chain): the wrap
        goes at the level where the model is trained, whichever branch ran."""
        d = model.definition
        index = self.names.index
        stmt, block = d.stmt, d.block
        while not any(index.contains(block, opt.stmt) for opt in model.optimizers):
            owner = index.parent.get(block)
            if not isinstance(owner, BRANCHES) or is_main_guard(owner):
                return d.stmt, d.block
            outer = index.site(owner)
            stmt, block = outer.stmt, outer.block
        return stmt, block

    def _wrap_point(self, model: Model) -> WrapPoint:
        first, block = self.start(model)
        body = list(block.body)
        start = next(i for i, s in enumerate(body) if s is first)
        handle = model.handle
        training = self.training
        opt_stmts = {id(s.stmt) for s in training.optimizer_sites} | {id(s.stmt) for s in training.scheduler_sites}
        anchor = first
        pending: list[cst.BaseStatement] = []
        blocked: list[cst.BaseStatement] = []
        moved_names: set[str] = set()
        own = {id(o.stmt) for o in model.optimizers}
        early = next((i for i in range(start) if id(body[i]) in own), None)
        if early is not None:  # built before the module wrapped (a holder of the model it trains): moves too
            for stmt in body[early:start]:
                if id(stmt) in opt_stmts or any(mentions(stmt, n) for n in moved_names):
                    pending.append(stmt)
                    moved_names.update(assign_targets(stmt))
        for stmt in body[start + 1 :]:
            if id(stmt) in opt_stmts or (moved_names and any(mentions(stmt, n) for n in moved_names)):
                # the optimizer and what uses it (a scheduler over it, `opt.load_state_dict(...)`) move
                # together, in their order
                if not mentions(stmt, handle) or id(stmt) in opt_stmts:
                    pending.append(stmt)
                    moved_names.update(assign_targets(stmt))
                    continue
            if isinstance(stmt, (cst.For, cst.While)):
                if self.init_loop(stmt, handle):
                    anchor = stmt  # `for m in model.modules(): nn.init...(m.weight)`
                    continue
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
        return WrapPoint(anchor, block, moves, blocked)

    def _loads_into(self, call: cst.Call, handle: str) -> bool:
        """`load_checkpoint(model, path)`: a helper that loads a state_dict into the model and runs nothing."""
        if self.helpers is None:
            return False
        arg = next(a for a in call.args if dotted(a.value) == handle)
        uses = self.helpers.uses(call, arg)
        return bool(uses) and LOAD_STATE in uses and not uses & {FORWARD, TRAINS}  # type: ignore[operator]

    def _freezes(self, call: cst.Call, handle: str) -> bool:
        """`freeze(model.backbone)`: a function of this file, handed the model or a part of it, that
        freezes or re-initialises parameters (`p.requires_grad = False`) and runs none of the model
        (no forward, no backward, no optimizer step)."""
        func = self.names.index.callee_of(call)
        if func is None or not any(reaches(a.value, handle) for a in call.args):
            return False
        if any(method_name(c) in ("backward", "step") for c in calls_in(func.body)):
            return False
        params = param_names(func)
        if any(dotted(c.func) in params for c in calls_in(func.body)):
            return False  # runs the module it is handed
        return sets_requires_grad(func.body) or self.writes_params(func)

    def moved_with(self, model: Model, anchor: cst.CSTNode, device: str) -> bool:
        """Is the model moved with `device` (`.to(device)`) by its definition or a statement after it, up
        to `anchor`? Only then does the device variable tell where the model is."""
        first, block = self.start(model)
        body = list(block.body)
        start = next(i for i, s in enumerate(body) if s is first)
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
            if recv is not None and reaches(recv, handle) and method_name(call) in PREP_METHODS:
                prep = True
                continue
            if self.changes_params(call, handle):
                prep = True
                continue
            if recv is not None and dotted(recv) == handle and method_name(call) in ("parameters", "named_parameters"):
                continue
            if self._freezes(call, handle):
                prep = True
                continue
            if any(dotted(a.value) == handle for a in call.args):
                name = dotted(func) or ""
                q = self.names.call_qual(call) or ""
                if name in BENIGN_CALLS or name.split(".")[-1] in LOGGER_METHODS | INSPECTING_METHODS:
                    continue
                if q.endswith("convert_sync_batchnorm") or self._loads_into(call, handle):
                    prep = True
                    continue
                return "use"
        if not prep and not isinstance(stmt, (cst.For, cst.While)):
            prep = self._holds_init_loops(stmt, handle)
        targets = assign_targets(stmt)
        if handle in targets:
            return "prep" if prep else "use"
        small = single_small(stmt)
        if type(small) is cst.Assign and any(part_of(t.target, handle) for t in small.targets):
            return "prep"  # `model.fc = nn.Linear(512, 10)`: a new layer, whose parameters DDP must see
        if isinstance(stmt, (cst.For, cst.While)):
            return "use"
        return "prep" if prep else "benign"

    def _holds_init_loops(self, stmt: cst.BaseStatement, handle: str) -> bool:
        """`if args.freeze: for name, p in model.named_parameters(): p.requires_grad_(False)`: a statement
        whose loops (the outermost ones) all freeze or re-initialise the model, and that trains nothing.
        Not a `try:` around the epoch loop that also swaps averaged weights in (`for prm in
        model.parameters(): prm.data = ...`): that one runs the training."""
        index = self.names.index
        loops = [n for n in walk(stmt) if type(n) in (cst.For, cst.While)]
        outer = [loop for loop in loops if not any(o is not loop and index.contains(o, loop) for o in loops)]
        return bool(outer) and all(self.init_loop(loop, handle) for loop in outer) and not self.training.trains_in(stmt)

    # ----------------------------------------------------------------- in-place (re-)initialisation
    @cached_property
    def classes(self) -> Classes:
        return Classes(self.names.index, self.names)

    def changes_params(self, call: cst.Call, handle: str) -> bool:
        """Does `call` change the parameters of the model `handle` in place: `model.weight_init(...)`
        (a method of its class that writes parameters, or, for a class not in this file, one named as
        an initialiser), `model.fc.weight.data.normal_(...)`, `nn.init.zeros_(model.fc.bias)`?"""
        q = self.names.call_qual(call) or ""
        if q.startswith("torch.nn.init.") and any(part_of(a.value, handle) for a in call.args):
            return True
        recv, name = receiver(call), method_name(call)
        if recv is None or not name:
            return False
        spelled = dotted(recv) or ""
        if spelled == handle and isinstance(call.func, cst.Attribute):
            cls = self.classes.model_class(handle, call)
            method = self._method(cls, name) if cls is not None else None
            if method is not None:
                return self.writes_params(method)
            return bool(INIT_NAME.search(name)) and name != "__init__"
        if part_of(recv, handle):
            return _in_place(name) or bool(INIT_NAME.search(name))
        return False

    def _method(self, cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
        """The method `name` of `cls` or of one of its bases in this file."""
        by_name = {c.name.value: c for c in self.names.index.classes}
        todo, seen = [cls], set()
        while todo:
            c = todo.pop(0)
            if id(c) in seen:
                continue
            seen.add(id(c))
            if name in (methods := self.names.index.methods_of(c)):
                return methods[name]
            todo += [by_name[b] for b in (dotted(a.value) for a in c.bases) if b in by_name]
        return None

    def writes_params(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """Does `node` (a function, a loop) write parameters in place: an in-place tensor method
        (`m.weight.data.normal_(0, 0.02)`), `nn.init.*`, `.apply(fn)`, `.load_state_dict(...)`, an
        assignment to `.weight`, `.bias` or `.data`, or a call of a function or method of this file that
        does (a few calls deep)?"""
        for n in walk(node):
            if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Attribute):
                if n.target.attr.value in ("weight", "bias", "data"):
                    return True
        for call in calls_in(node):
            name = method_name(call) or ""
            if _in_place(name) or name in WRITING_METHODS:
                return True
            if (self.names.call_qual(call) or "").startswith("torch.nn.init."):
                return True
            callee = self.names.index.callee_of(call)
            if callee is not None and callee is not node and depth < 3 and self.writes_params(callee, depth + 1):
                return True
        return False

    def init_loop(self, loop: cst.For | cst.While, handle: str) -> bool:
        """`for m in model.modules(): ...` that re-initialises what it walks, or `for p in
        model.backbone.parameters(): p.requires_grad = False` that freezes it, and runs nothing else of
        the model's (no forward, no backward, no optimizer). DDP registers the parameters that need a
        gradient when it is built: a freeze after the wrap leaves it waiting for gradients that never
        come ("Expected to have finished reduction in the prior iteration")."""
        if not walks(loop, handle):
            return False
        if any(method_name(c) in ("backward", "step") or dotted(c.func) == handle for c in calls_in(loop.body)):
            return False
        return sets_requires_grad(loop.body) or self.writes_params(loop.body)


def _in_place(name: str) -> bool:
    """`normal_`, `zero_`, `fill_`: an in-place tensor method (not a dunder, not `requires_grad_`)."""
    return name.endswith("_") and not name.startswith("_") and name != "requires_grad_"


def moves_device(stmt: cst.BaseStatement, handle: str) -> bool:
    """Does `stmt` move `handle` to a device (`handle.to(...)`, `handle.cuda()`)?"""
    return any(
        method_name(c) in ("to", "cuda") and (dotted(receiver(c)) if receiver(c) is not None else None) == handle
        for c in calls_in(stmt)
    )


__all__ = ["BENIGN_CALLS", "INIT_NAME", "PREP_METHODS", "WrapPoint", "WrapPoints", "moves_device"]
