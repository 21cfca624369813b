"""A model a class of the script's own modules is handed, keeps (`self.model = model` in `__init__`),
builds its optimizer over (`torch.optim.SGD(model.parameters(), ...)`, or over
`self.model.parameters()`) and trains in its methods, read with Python's `ast`: the class trains the
caller's model. What it does with it is recorded as what `Cls.__init__` does with that parameter
(model_params.py's uses, with TRAINS), so the script, which builds the model, wraps it in DDP before
handing it over: the optimizer the class builds is then over the wrapper's parameters."""

from __future__ import annotations

import ast
import copy

from .ast_reading import ast_aliases, ast_dotted, kept_params, nodes
from .class_models import OPTIMIZER_WORDS
from .loader_params import AttributesAsNames, stored_loader_uses
from .model_params import CUSTOM, FORWARD, INSPECTS, MOVES, PARAMETERS, TRAINS, ast_trains, ast_uses


def ast_kept_model_uses(cls: ast.ClassDef) -> dict[str, set[str]]:
    """`__init__` parameter -> its uses (FORWARD, STATE_DICT, ..., PARAMETERS and TRAINS) for each model
    the class is handed, keeps on `self` and builds an optimizer over, and for a model it keeps whose
    optimizer the caller builds, what only the plain model has (CUSTOM, INSPECTS; with FORWARD and
    TRAINS where the class runs its forward); {} when the class trains none (no backward or step in its
    methods) or wraps a model in DDP itself."""
    methods = [f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    init = next((f for f in methods if f.name == "__init__"), None)
    if init is None or not any(ast_trains(m) for m in methods):
        return {}
    kept = kept_params(init)  # `self.model` -> `model`
    # a local name a method reads the kept model through (`model = self.model`)
    aliases = {id(m): ast_aliases(m, set(kept)) for m in methods}
    optimized: set[str] = set()
    for method in methods:
        for node in nodes(method):
            name = ast_dotted(node.func) if isinstance(node, ast.Call) else None
            if name is None:
                continue
            if name.split(".")[-1] in ("DistributedDataParallel", "DDP"):
                return {}
            if not any(word in name for word in OPTIMIZER_WORDS) or not node.args:
                continue
            for inner in ast.walk(node.args[0]):
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
                    param = _kept_param(inner.func.value, aliases[id(method)], kept)
                    if inner.func.attr in ("parameters", "named_parameters") and param is not None:
                        optimized.add(param)
    optimized |= _optimizer_of_the_model(cls, methods, kept, aliases)
    out: dict[str, set[str]] = {p: {PARAMETERS, TRAINS} for p in optimized}
    held: dict[str, set[str]] = {}  # a kept model the caller builds the optimizer for
    for method in methods if kept else []:
        # `self.model(x)` (or `model(x)` after `model = self.model`) read as a name
        named = AttributesAsNames(set(kept), aliases[id(method)]).visit(copy.deepcopy(method))
        uses, _ = ast_uses(named, list(kept))
        for attr, found in uses.items():
            (out[kept[attr]] if kept[attr] in out else held.setdefault(kept[attr], set())).update(found)
    for param in _moved(methods, kept, aliases):
        if param in out:
            out[param].add(MOVES)
    for param, found in held.items():
        # only what the wrapper lacks (`self.G.sample_latent(64)`), and that the class trains through
        # the model where it runs its forward: the caller wraps it, the class must keep the wrapper
        if found & {CUSTOM, INSPECTS}:
            out[param] = (found & {CUSTOM, INSPECTS, FORWARD}) | ({TRAINS} if FORWARD in found else set())
    return out


def _moved(methods: list, kept: dict[str, str], aliases: dict) -> set[str]:
    """The kept models a method moves to a device (`self.model.to(self.device)`, `model.cuda()`)."""
    out = set()
    for method in methods:
        for node in nodes(method):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda"):
                param = _kept_param(node.func.value, aliases[id(method)], kept)
                out |= {param} if param is not None else set()
    return out


def _optimizer_of_the_model(cls: ast.ClassDef, methods: list, kept: dict[str, str], aliases: dict) -> set[str]:
    """The kept models whose own method builds the optimizer the class steps (`self.optimizer =
    model.configure_optimizers(config)`, then `self.optimizer.step()`): the class trains them."""
    stepped = {
        ast_dotted(n.func.value)
        for n in nodes(cls)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step"
    }
    out = set()
    for method in methods:
        for node in nodes(method):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call)):
                continue
            func = node.value.func
            if not isinstance(func, ast.Attribute) or ast_dotted(node.targets[0]) not in stepped:
                continue
            param = _kept_param(func.value, aliases[id(method)], kept)
            out |= {param} if param is not None else set()
    return out


def _kept_param(expr: ast.AST, aliases: dict[str, str], kept: dict[str, str]) -> str | None:
    """The parameter of `__init__` a kept model `expr` names: `self.model`, a local name for it in the
    method (`aliases`: `model = self.model`), or that parameter itself; None for anything else."""
    owner = ast_dotted(expr) or ""
    owner = aliases.get(owner, owner)
    param = kept.get(owner, owner)
    return param if param in kept.values() else None


def kept_uses(uses: dict[str, dict[str, set[str]]], cls: ast.ClassDef) -> None:
    """Add to the uses of `Cls.__init__`'s parameters what the class does with a loader it keeps and
    trains on (loader_params.py), and with a model it keeps and trains."""
    stored_loader_uses(uses, cls)
    for param, found in ast_kept_model_uses(cls).items():
        uses.setdefault(f"{cls.name}.__init__", {}).setdefault(param, set()).update(found)


__all__ = ["ast_kept_model_uses", "kept_uses"]
