"""`nn.DataParallel` wraps and how each model's can become one DDP wrap: where the wrap goes (after
the outermost `if` around the DataParallel line, so that it runs whatever that test was: a GPU count,
a flag that is off by default, `if False:`), what of the old lines goes, and why a shape cannot be
converted. DDP302 converts; DDP201 shards the data only where the conversion is possible."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from ..syntax import (
    assign_targets,
    assigned_value,
    calls_in,
    code_of,
    dotted,
    is_main_guard,
    kwarg,
    mentions,
    positional,
    walk,
)
from .call_params import arg_named, param_for
from .eval_paths import evaluation_branch
from .flow import binds
from .holders import passes, runs_with_grad
from .index import TreeIndex
from .launch import Launch
from .models import DP_NAMES, Models
from .names import Names
from .wrap_points import moves_device


@dataclass(eq=False)
class DpLine:
    """One `model = nn.DataParallel(model)` line."""

    call: cst.Call
    stmt: cst.BaseStatement
    top: cst.BaseStatement  # the outermost `if` around it (or the line itself): the wrap goes after it
    unwrapped: str  # what the line assigns without DataParallel: `model`, `model.to(device)`
    whole: bool  # `top` held nothing but this line: it goes entirely
    delete: cst.BaseStatement | None = None  # otherwise: the line, or the `if` / `elif` it alone filled


@dataclass(eq=False)
class DpConversion:
    """Every DataParallel line of one model, and where the DDP wrap that replaces them goes."""

    handle: str | None
    lines: list[DpLine] = field(default_factory=list)
    blocker: str | None = None  # why it is not converted automatically (None: it is)
    later: cst.BaseStatement | None = None  # a device move after the last line: the wrap follows it
    evaluation: bool = False  # the line is on a path that only evaluates and leaves (`eval_paths`)
    both: bool = False  # two lines, each alone in one branch of an if/else: `if cuda: DP(m).cuda() else: DP(m)`

    @property
    def target(self) -> cst.BaseStatement:
        """The statement the wrap follows."""
        return self.later or self.lines[-1].top


def dataparallel_conversions(index: TreeIndex, names: Names, models: Models) -> list[DpConversion]:
    """One conversion per model handle wrapped in DataParallel (calls of other shapes: one each)."""
    by_handle: dict[str, DpConversion] = {}
    out: list[DpConversion] = []
    for call in names.calls_matching(lambda q: q in DP_NAMES):
        stmt = index.site(call).stmt
        targets = assign_targets(stmt)
        value = assigned_value(stmt)
        module = positional(call, 0) or kwarg(call, "module")
        if len(targets) != 1 or value is None or module is None or not _chain_holds(value, call):
            out.append(DpConversion(None, [DpLine(call, stmt, stmt, "", False)], "shape"))
            continue
        handle = targets[0]
        branch = evaluation_branch(index, names, models.training, call)
        if branch is None and _runs_without_grad(index, models, handle, stmt):
            branch = index.scope_of(stmt)  # a sampler or an EMA copy: never run with gradients on, never trained
        if branch is not None:  # its own conversion: the line kept for a plain run, no DDP wrap
            out.append(_evaluation(index, call, stmt, handle, code_of(value.deep_replace(call, module.value)), branch))
            continue
        conv = by_handle.get(handle)
        if conv is None:
            conv = by_handle[handle] = DpConversion(handle)
            out.append(conv)
        unwrapped = code_of(value.deep_replace(call, module.value))  # type: ignore[arg-type]
        line, blocker = _line(index, models, call, stmt, handle, unwrapped)
        conv.lines.append(line)
        conv.blocker = conv.blocker or blocker
    for conv in by_handle.values():
        conv.lines.sort(key=lambda line: index.order(line.stmt))
        if part_of(conv, models) is not None:  # the wrap of the whole model is the user's edit
            conv.blocker = conv.blocker or PART
        if conv.blocker in (None, ALONE) and _fills_both_branches(index, conv):
            conv.both, conv.blocker = True, None
        if conv.blocker is None and len({id(index.parent.get(line.top)) for line in conv.lines}) > 1:
            conv.blocker = "the model is wrapped in DataParallel in several places: convert it by hand"
        if conv.blocker is None:
            last = conv.lines[-1]
            if last.unwrapped == conv.handle or last.top is last.stmt:  # `model = DataParallel(Net())` too
                conv.later = later_device_move(index, models, last.top, conv.handle)  # type: ignore[arg-type]
    return out


ALONE = "the wrap fills a branch of an if/else alone: convert it by hand"
PART = "DataParallel around a part of a model that trains as a whole: convert it by hand"


def part_of(conv: DpConversion, models: Models) -> str | None:
    """The trained model `conv` wraps a part of (`model.features = DataParallel(model.features)` while
    `model` trains as a whole), or None."""
    owner = (conv.handle or "").rpartition(".")[0]
    if owner and owner != "self" and any(m.handle == owner for m in models.trained):
        return owner
    return None


def _fills_both_branches(index: TreeIndex, conv: DpConversion) -> bool:
    """Two lines of one model, each the only statement of one branch of the same `if`/`else` (no
    `elif`), the `if` the top of both: `if torch.cuda.is_available(): m = DP(m).cuda()` / `else: m = DP(m)`."""
    if len(conv.lines) != 2 or conv.lines[0].top is not conv.lines[1].top:
        return False
    top = conv.lines[0].top
    if not isinstance(top, cst.If) or not isinstance(top.orelse, cst.Else):
        return False
    body, other = top.body.body, top.orelse.body.body  # type: ignore[union-attr]
    return list(body) == [conv.lines[0].stmt] and list(other) == [conv.lines[1].stmt]


def _evaluation(
    index: TreeIndex, call: cst.Call, stmt: cst.BaseStatement, handle: str, unwrapped: str, branch: cst.IndentedBlock
) -> DpConversion:
    """A DataParallel line on a path that only evaluates and leaves: under torchrun it need not run
    (each process evaluates with its plain model), so it is kept for the plain run only, where it
    wraps the handle itself and nothing on that path reads `handle.module`."""
    conv = DpConversion(handle, [DpLine(call, stmt, stmt, unwrapped, False)], evaluation=True)
    if unwrapped != handle or index.in_one_line_suite(stmt):
        conv.blocker = "shape"
    elif mentions(branch, f"{handle}.module"):
        conv.blocker = f"the evaluation after it reads {handle}.module, which the plain model lacks: convert it by hand"
    return conv


def _runs_without_grad(index: TreeIndex, models: Models, handle: str, stmt: cst.BaseStatement) -> bool:
    """Is the module `handle` binds (in DataParallel) one the script trains nothing with: no trained model
    is (or is held by) it, and it runs only under `torch.no_grad()`, where it is bound and in the
    functions of this file it is handed to (`evaluate(net_sampler, net_model)`)? Under torchrun each
    process runs it plainly; its DataParallel line is kept for the plain run, as on an evaluation path."""
    if not models.trained or "." in handle or any(m.handle == handle for m in models.trained):
        return False
    scope = index.scope_of(stmt)
    calls = [c for c in index.calls if index.scope_of(c) is scope and index.before(stmt, c)]
    if not any(dotted(c.func) == handle for c in calls) and not any(passes(c, handle) for c in calls):
        return False  # never run: nothing says what it is for
    for call in calls:
        if runs_with_grad(index, call, handle):
            return False
        arg = arg_named(call, handle)
        func = index.callee_of(call) if arg is not None else None
        if func is None:
            continue
        param = param_for(func, call, arg)  # type: ignore[arg-type]
        if param is None or any(runs_with_grad(index, c, param) for c in calls_in(func)):
            return False
    return True


def _line(
    index: TreeIndex, models: Models, call: cst.Call, stmt: cst.BaseStatement, handle: str, unwrapped: str
) -> tuple[DpLine, str | None]:
    if index.in_one_line_suite(stmt):
        return DpLine(call, stmt, stmt, unwrapped, False), "shape"
    x: cst.CSTNode = stmt
    whole = True
    while True:
        parent = index.parent.get(x)
        owner = index.parent.get(parent) if isinstance(parent, cst.IndentedBlock) else None
        if isinstance(parent, cst.IndentedBlock) and isinstance(owner, (cst.If, cst.Else)):
            if_node = owner if isinstance(owner, cst.If) else index.parent.get(owner)
            if is_main_guard(if_node):
                break  # the program's own block: the wrap goes inside it
            later = _after(parent, x)
            if any(
                mentions(s, f"{handle}.module") or (mentions(s, handle) and models.use_of(s, handle) == "use")
                for s in later
            ):
                return DpLine(call, stmt, stmt, unwrapped, False), (
                    "code after it in its if block uses the DataParallel model: convert it by hand"
                )
            whole = whole and len(parent.body) == 1 and isinstance(owner, cst.If) and owner.orelse is None
            x = if_node  # type: ignore[assignment]
            continue
        if isinstance(parent, cst.If) and parent.orelse is x:  # elif
            whole = False
            x = parent
            continue
        if isinstance(owner, (cst.For, cst.While)) or isinstance(parent, (cst.For, cst.While)):
            return DpLine(call, stmt, stmt, unwrapped, False), "inside a loop: convert it by hand"
        break
    top = x
    # `if n > 1: model = DataParallel(model).cuda()` keeps its `model = model.cuda()` under the test
    line = DpLine(call, stmt, top, unwrapped, whole and (top is stmt or unwrapped == handle))  # type: ignore[arg-type]
    if line.whole or unwrapped != handle:
        return line, None
    # other code stays in the if: only the line goes, or the if it alone filled
    gone: cst.CSTNode = stmt
    while True:
        block = index.parent.get(gone)
        if isinstance(block, cst.If):
            break  # an `elif` it alone filled: the elif goes
        owner = index.parent.get(block)
        if isinstance(block, cst.IndentedBlock) and len(block.body) > 1:
            break
        if not (isinstance(owner, cst.If) and owner.orelse is None and owner.body is block):
            return line, ALONE
        gone = owner
    line.delete = gone  # type: ignore[assignment]
    return line, None


def _after(block: cst.IndentedBlock, stmt: cst.CSTNode) -> list[cst.BaseStatement]:
    body = list(block.body)
    idx = next((i for i, s in enumerate(body) if s is stmt), len(body))
    return body[idx + 1 :]


def later_device_move(index: TreeIndex, models: Models, target: cst.CSTNode, handle: str) -> cst.BaseStatement | None:
    """The last statement after `target` in its block that moves `handle` to a device, before the
    model is first used (`model = model.to(device)`, `model.cuda()`)."""
    block = index.parent.get(target)
    body = list(getattr(block, "body", []))
    idx = next((i for i, s in enumerate(body) if s is target), None)
    if idx is None:
        return None
    found = None
    for stmt in body[idx + 1 :]:
        if isinstance(stmt, (cst.For, cst.While)):
            break
        if not mentions(stmt, handle):
            continue
        kind = models.use_of(stmt, handle)
        if kind == "use":
            break
        if kind == "prep" and moves_device(stmt, handle):
            found = stmt
    return found


def _chain_holds(value: cst.BaseExpression, call: cst.Call) -> bool:
    """`DataParallel(m)`, `DataParallel(m).to(device)`, `DataParallel(m).cuda()`: the wrap and device moves only."""
    while value is not call:
        if not (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in ("to", "cuda")
        ):
            return False
        value = value.func.value
    return True


def dataparallel_trains(models: Models) -> bool:
    """Is a trained model in nn.DataParallel (a DataParallel call not beside the script's own DDP): one
    the call wraps (`nn.DataParallel(model)`, also a part of it, `model.encoder = nn.DataParallel(model.
    encoder)`) or gives its value (`model = nn.DataParallel(net)`, `wrapper = nn.DataParallel(model)`;
    `Models.dataparallel`), or, where the analysis sees no trained model (built and returned by a helper,
    its optimizer made in another module), any? A process group or sampler beside it would train one
    unsynchronised copy per rank."""
    if not any(not models.beside_ddp(c) for c in models.dp_training_calls):
        return False
    return not models.trained or any(models.dataparallel(m) is not None for m in models.trained)


CHOICE = "choice"  # `if DISTRIBUTED: model = DDP(...)` / `else:` the line (or `elif` the test around it)
GUARD = "guard"  # the line runs `if not DISTRIBUTED`, and the wrap follows the device moves after it
EVALUATION = "evaluation"  # a line on a path that only evaluates: `if not DISTRIBUTED`, and no wrap


def plain_path(conv: DpConversion, models: Models, launch: Launch) -> str | None:
    """How this conversion can leave `python train.py` exactly as it was, the DataParallel line kept for
    the plain run and the DDP wrap made in its stead under torchrun; None where it cannot.

    Either way: one line wrapping a trained model itself, whole (not `model.encoder`), in the scope
    that binds it (`nn.DataParallel(model).cuda()` too; a module built in the call only on a line
    of its own, `built_inside`). `CHOICE` when
    nothing moves the model after the line and the `if` around it (if any) has no `else` and no other
    statement that binds a name or touches the model (under torchrun that branch no longer runs);
    `GUARD` otherwise (`if torch.cuda.is_available(): ... model = model.cuda(); criterion = ...`)."""
    if conv.evaluation and conv.blocker is None:
        return EVALUATION
    if conv.both:
        return _both_branches_path(conv, models, launch)
    if conv.blocker is not None or conv.handle is None or len(conv.lines) != 1 or launch.own_path is not None:
        return None  # (a script that may join its group on its own terms: nothing says the DDP branch runs)
    line, handle = conv.lines[0], conv.handle
    model = next((m for m in models.trained if m.handle == handle), None)
    if model is None or models.dataparallel(model) is not line.call or model.built_by is not None:
        return None
    if models.index.scope_of(line.call) is not models.index.scope_of(model.definition.stmt) and not _returned_by(
        models, line, model, handle
    ):
        return None  # (a helper that builds it, `return model`: its raw module is not this scope's)
    if not isinstance(line.stmt, cst.SimpleStatementLine):
        return None
    top = line.top
    if top is not line.stmt and ("cuda" in line.unwrapped[len(handle) :] or built_inside(line, handle) is not None):
        return (
            None  # `if n > 1: model = nn.DataParallel(model).cuda()`: torchrun's ranks would not know when to move it
        )
    if conv.later is not None:
        return GUARD
    if top is line.stmt:
        return CHOICE
    if not isinstance(top, cst.If) or top.orelse is not None:
        return GUARD
    others = [n for n in walk(top) if isinstance(n, cst.SimpleStatementLine) and n is not line.stmt]
    return GUARD if any(binds(n) or mentions(n, handle) for n in others) else CHOICE


def _both_branches_path(conv: DpConversion, models: Models, launch: Launch) -> str | None:
    """CHOICE for two lines filling an `if`/`else` (the DDP branch goes first, the `if` becomes its
    `elif`) when they wrap the trained model itself, in the scope that binds it, each maybe followed by a
    move that the script has made already before the `if` (`m = m.cuda()` under a CUDA test): the DDP
    branch then wraps the model as it is. None otherwise."""
    handle = conv.handle
    model = next((m for m in models.trained if m.handle == handle), None)
    if conv.blocker is not None or launch.own_path is not None or model is None or model.built_by is not None:
        return None
    index = models.index
    top = conv.lines[0].top
    if index.scope_of(top) is not index.scope_of(model.definition.stmt):
        return None
    moved = [line.unwrapped != handle for line in conv.lines]
    if any(
        m and not re.fullmatch(rf"{re.escape(handle)}\.(cuda|to)\(.*\)", line.unwrapped)
        for m, line in zip(moved, conv.lines)
    ):
        return None
    if any(moved):
        block = list(index.parent.get(top).body)  # type: ignore[union-attr]
        if not any(moves_device(s, handle) for s in block[: block.index(top)]):
            return None  # the line's own move may be the only one: torchrun's ranks would not know when
    return CHOICE


def _returned_by(models: Models, line: DpLine, model, handle: str) -> bool:
    """Is the line in the function of this file whose one call binds the trained model (`model, criterion
    = set_model(opt)`), and does that function return what the line binds? The DDP wrap then goes in the
    function too, and it hands the wrapper back as it handed the DataParallel one (called elsewhere too,
    it would hand a wrapper to code that may run on one rank only)."""
    value = assigned_value(model.definition.stmt)
    func = models.index.callee_of(value) if isinstance(value, cst.Call) else None
    if func is None or models.index.scope_of(line.call) is not func or models.helpers is None:
        return False
    if models.index.callers_of(func) != [value]:
        return False
    return models.helpers.returned_slot(func, {handle}) is not None


def built_inside(line: DpLine, handle: str) -> cst.BaseExpression | None:
    """The module a DataParallel line builds or names in its call when that is not the handle it binds
    (`model = nn.DataParallel(Net())`, `model = nn.DataParallel(model_single)`): kept for the plain run,
    the line first binds it to the handle (`model = Net()`), then wraps that. None otherwise."""
    arg = positional(line.call, 0) or kwarg(line.call, "module")
    return arg.value if arg is not None and code_of(arg.value) != handle else None


def converts_keeping_plain_path(index: TreeIndex, names: Names, models: Models, launch: Launch) -> bool:
    """Does every DataParallel line convert keeping the plain run as it was (`plain_path`)? Then the
    conversion, the process group and the sampler are safe fixes."""
    conversions = dataparallel_conversions(index, names, models)
    return bool(conversions) and all(plain_path(c, models, launch) is not None for c in conversions)


def conversion_blocked(index: TreeIndex, names: Names, models: Models) -> bool:
    """Some DataParallel line cannot be converted to DDP automatically (DDP302 leaves it as it is)."""
    return any(c.blocker is not None for c in dataparallel_conversions(index, names, models))


__all__ = [
    "DpConversion",
    "DpLine",
    "conversion_blocked",
    "part_of",
    "converts_keeping_plain_path",
    "dataparallel_conversions",
    "dataparallel_trains",
    "CHOICE",
    "EVALUATION",
    "GUARD",
    "built_inside",
    "plain_path",
    "later_device_move",
]
