"""Where a model's DDP wrap goes: after the last statement that prepares the model (moves, loads or
converts it) and before the first that runs it or hands it on; the optimizers in between move after
the wrap."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from ..syntax import assign_targets, calls_in, dotted, is_main_guard, mentions, method_name, receiver
from .effects import LOGGER_METHODS
from .index import Block
from .model_params import FORWARD, LOAD_STATE, TRAINS
from .names import Names
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
BENIGN_CALLS = {"print", "len", "sum", "str", "repr", "format", "type", "isinstance", "hasattr", "getattr", "id"}


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
        for stmt in body[start + 1 :]:
            if id(stmt) in opt_stmts or (moved_names and any(mentions(stmt, n) for n in moved_names)):
                # the optimizer and what uses it (a scheduler over it, `opt.load_state_dict(...)`) move
                # together, in their order
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
        return WrapPoint(anchor, block, moves, blocked)

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


def moves_device(stmt: cst.BaseStatement, handle: str) -> bool:
    """Does `stmt` move `handle` to a device (`handle.to(...)`, `handle.cuda()`)?"""
    return any(
        method_name(c) in ("to", "cuda") and (dotted(receiver(c)) if receiver(c) is not None else None) == handle
        for c in calls_in(stmt)
    )


__all__ = ["BENIGN_CALLS", "PREP_METHODS", "WrapPoint", "WrapPoints", "moves_device"]
