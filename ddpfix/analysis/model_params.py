"""What a function does with a model it receives, read with Python's `ast` for the script's local
modules (helpers.py reads the script's own functions the same way with LibCST): whether it runs the
model's forward, saves or loads its `state_dict`, reaches `.module` itself, reads attributes only the
model has, hands it back, or trains; and which returned value is a model it builds an optimizer for
(`return model, optimizer`)."""

from __future__ import annotations

import ast
import re

from .ast_reading import ast_dotted, nodes
from .ast_reading import parents as parents_of
from .effects import PICKLERS
from .torch_api import WRAPPER_API

# What a function does with a model parameter.
FORWARD = "forward"  # model(x)
STATE_DICT = "state_dict"  # model.state_dict()
LOAD_STATE = "load_state_dict"  # model.load_state_dict(...)
UNWRAPS = "unwraps"  # model.module, getattr(model, "module", model), isinstance(model, DDP): handles a wrapper itself
CUSTOM = "custom"  # model.generate(...), model.config: what only the model has
RETURNS = "returns"  # return model (unwrap_model, to_device): hands it back
TRAINS = "trains"  # the function calls backward() or an optimizer's step()
PARAMETERS = "parameters"  # model.parameters(): an optimizer over them, gradient clipping...
PICKLES = "pickles"  # torch.save(model, path): the module pickled whole
INSPECTS = "inspects"  # traces, exports or summarises it: writer.add_graph(model, x), torch.jit.trace(model, x)
MOVES = "moves"  # a class moves the model it is handed to a device: self.model = self.model.to(self.device)

# Library functions that trace, export or summarise the module handed to them first: the DDP wrapper
# cannot be traced (its forward calls into the process group), and a summary of it is the wrapper's.
INSPECTORS = {
    "torch.jit.trace",
    "torch.jit.trace_module",
    "torch.jit.script",
    "torch.onnx.export",
    "torch.onnx.dynamo_export",
    "torch.export.export",
    "torch.fx.symbolic_trace",
    "torchsummary.summary",
    "torchinfo.summary",
    "thop.profile",
    "ptflops.get_model_complexity_info",
    "fvcore.nn.FlopCountAnalysis",
}
INSPECTOR_METHODS = {"add_graph"}  # SummaryWriter.add_graph(model, input_to_model)
INSPECTED_KEYWORDS = {"model", "module", "mod", "func"}


def inspects(qualname: str | None, name: str | None, slot: Slot | None) -> bool:
    """Does a call of `qualname` (the import-resolved name; `name` as written) trace, export or
    summarise what it gets at `slot`?"""
    if slot != 0 and slot not in INSPECTED_KEYWORDS:
        return False
    written = name or ""
    return (
        qualname in INSPECTORS
        or written in INSPECTORS
        or written.rsplit(".", 1)[-1] in INSPECTOR_METHODS
        or any(written.endswith("." + q.split(".", 1)[1]) for q in INSPECTORS if q.startswith("torch."))
    )


OPTIMIZER_NAMES = re.compile(r"opt", re.IGNORECASE)

Slot = int | str  # a positional index or a keyword


def reaches_model(attr: str, members: set[str] | None = None) -> bool:
    """Is `x.<attr>` something the wrapper lacks: not nn.Module's or DDP's API, not a dunder, and a
    private name only where the model's class (`members`, when known) defines it."""
    if attr.startswith("__") or attr in WRAPPER_API:
        return False
    if attr.startswith("_"):
        return members is not None and attr in members
    return True


# --------------------------------------------------------------------------- ast
def ast_params(func: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    names = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    return names[1:] if method and names else names


def ast_uses(
    func: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str], owner: str | None = None
) -> tuple[dict[str, set[str]], dict[str, list[tuple[str, Slot]]]]:
    """(parameter -> uses, parameter -> the calls it is handed to: (callee, slot)) for `params`. In a
    method of class `owner`, a call to another method of it (`self.train_epoch(loader)`) names that
    method as the summaries know it (`Learner.train_epoch`)."""
    uses: dict[str, set[str]] = {p: set() for p in params}
    passes: dict[str, list[tuple[str, Slot]]] = {p: [] for p in params}
    parents = parents_of(func)
    for node in nodes(func):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in uses:
            p, attr = node.value.id, node.attr
            parent = parents.get(node)
            if attr == "module":
                uses[p].add(UNWRAPS)
            elif attr == "state_dict" and isinstance(parent, ast.Call) and parent.func is node:
                uses[p].add(STATE_DICT)
            elif attr == "load_state_dict" and isinstance(parent, ast.Call) and parent.func is node:
                uses[p].add(LOAD_STATE)
            elif attr in ("parameters", "named_parameters") and isinstance(parent, ast.Call) and parent.func is node:
                uses[p].add(PARAMETERS)
            elif isinstance(node.ctx, ast.Load) and reaches_model(attr):
                uses[p].add(CUSTOM)
        elif isinstance(node, ast.Call):
            callee = ast_dotted(node.func)
            if owner is not None and callee is not None and callee.count(".") == 1 and callee.startswith("self."):
                callee = f"{owner}.{callee[5:]}"
            if callee in uses:
                uses[callee].add(FORWARD)
                continue
            for slot, value in _ast_slots(node):
                if isinstance(value, ast.Name) and value.id in uses:
                    if callee in ("getattr", "hasattr", "isinstance"):
                        uses[value.id].add(UNWRAPS)
                    elif inspects(None, callee, slot):
                        uses[value.id].add(INSPECTS)
                    elif slot == 0 and callee in PICKLERS:  # `torch.save(model, path)`: pickled whole
                        uses[value.id].add(PICKLES)
                    elif callee is not None:
                        passes[value.id].append((callee, slot))
        elif isinstance(node, ast.Return) and node.value is not None:
            for name in _returned_names(node.value):
                if name in uses:
                    uses[name].add(RETURNS)
    return uses, passes


def trains_call(node: ast.Call) -> bool:
    """`loss.backward()`, `optimizer.step()`: what makes a summarised function TRAINS (the gate's
    search for such calls in the script's modules asks the same, reach.py)."""
    func = node.func
    if not isinstance(func, ast.Attribute):
        return False
    return func.attr == "backward" or (
        func.attr == "step" and bool(OPTIMIZER_NAMES.search(ast_dotted(func.value) or ""))
    )


def ast_trains(func: ast.AST) -> bool:
    return any(isinstance(node, ast.Call) and trains_call(node) for node in nodes(func))


def ast_model_return(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Slot | None:
    """Where the model this function builds an optimizer for sits in what it returns: "" (the
    value itself), a tuple position, or a dict key; None when it returns no such model."""
    models = set()
    for node in nodes(func):
        if isinstance(node, ast.Call) and _is_optimizer(node):
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Attribute)
                    and inner.func.attr in ("parameters", "named_parameters")
                ):
                    name = ast_dotted(inner.func.value)
                    if name:
                        models.add(name)
    for node in nodes(func):
        if isinstance(node, ast.Return) and node.value is not None:
            slot = _slot_of(node.value, models)
            if slot is not None:
                return slot
    return None


def ast_forward_methods(cls: ast.ClassDef) -> set[str]:
    """Methods of `cls` that run a forward: they call `self(...)`, `self.forward(...)`, a submodule
    (`self.encoder(x)`: an attribute that is not a method), or another such method."""
    methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    calls: dict[str, set[str]] = {}
    out = set()
    for name, method in methods.items():
        calls[name] = set()
        for node in nodes(method):
            if not isinstance(node, ast.Call):
                continue
            callee = ast_dotted(node.func) or ""
            if callee == "self":
                out.add(name)
            elif callee.startswith("self.") and callee.count(".") == 1:
                attr = callee[len("self.") :]
                if attr == "forward" or attr not in methods:
                    out.add(name)
                else:
                    calls[name].add(attr)
    return close_over(out, calls)


def close_over(found: set[str], calls: dict[str, set[str]]) -> set[str]:
    """`found` and every method that calls one of them, directly or not."""
    out = set(found)
    changed = True
    while changed:
        changed = False
        for name, callees in calls.items():
            if name not in out and callees & out:
                out.add(name)
                changed = True
    return out


def resolve_passes(
    uses: dict[str, dict[str, set[str]]],
    passes: dict[str, dict[str, list[tuple[str, Slot]]]],
    params: dict[str, list[str]],
    rounds: int = 4,
) -> None:
    """Merge into each function's parameter uses those of the functions of the same module it hands
    the parameter to (`save(model)` -> `_write(model.state_dict())`)."""
    for _ in range(rounds):
        changed = False
        for func, by_param in passes.items():
            for param, handed in by_param.items():
                for callee, slot in handed:
                    names = params.get(callee)
                    if names is None:
                        continue
                    target = slot if isinstance(slot, str) else (names[slot] if slot < len(names) else None)
                    new = uses.get(callee, {}).get(target or "", set()) - uses[func][param]
                    if new:
                        uses[func][param] |= new
                        changed = True
        if not changed:
            return


def _is_optimizer(call: ast.Call) -> bool:
    name = ast_dotted(call.func) or ""
    return name.split(".")[-1] in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad") or "optim" in name


def _slot_of(value: ast.AST, models: set[str]) -> Slot | None:
    if ast_dotted(value) in models:
        return ""
    if isinstance(value, ast.Tuple):
        for i, el in enumerate(value.elts):
            if ast_dotted(el) in models:
                return i
    if isinstance(value, ast.Dict):
        for key, el in zip(value.keys, value.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and ast_dotted(el) in models:
                return key.value
    return None


def _ast_slots(call: ast.Call):
    for i, arg in enumerate(call.args):
        if not isinstance(arg, ast.Starred):
            yield i, arg
    for kw in call.keywords:
        if kw.arg is not None:
            yield kw.arg, kw.value


def _returned_names(value: ast.AST) -> list[str]:
    """`m`, `m if c else m.module`, `(m, opt)`, `a or m`: the names a return hands back as they are."""
    if isinstance(value, ast.Name):
        return [value.id]
    if isinstance(value, ast.IfExp):
        return _returned_names(value.body) + _returned_names(value.orelse)
    if isinstance(value, ast.BoolOp):
        return [n for v in value.values for n in _returned_names(v)]
    if isinstance(value, (ast.Tuple, ast.List)):
        return [n for v in value.elts for n in _returned_names(v)]
    return []


__all__ = [
    "CUSTOM",
    "FORWARD",
    "INSPECTORS",
    "INSPECTS",
    "LOAD_STATE",
    "MOVES",
    "PARAMETERS",
    "RETURNS",
    "STATE_DICT",
    "PICKLES",
    "TRAINS",
    "UNWRAPS",
    "Slot",
    "close_over",
    "inspects",
    "ast_forward_methods",
    "ast_model_return",
    "ast_params",
    "ast_trains",
    "ast_uses",
    "reaches_model",
    "resolve_passes",
]
