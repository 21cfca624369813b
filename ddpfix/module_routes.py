"""DDP301 across files: the uses of a model, after the class of the script's modules that builds it
wraps it there (module_wraps.py), that the DDP wrapper does not answer as the model would, routed to
the plain module at run time:

    getattr(self.model, "module", self.model).load_state_dict(ckpt["model_state"])
    h = torch.zeros(x.size(0), getattr(self.model, "module", self.model).hidden_size)

`getattr(self.model, "module", self.model)` is the module the wrapper holds under DDP and the model
itself in a plain run (or under an entry point that imports the class without a process group), so
each use does what it did before, however the class is run. Routed: `load_state_dict(...)` (the
state saved by the class is the plain module's, see module_unwrap.py) and what only the model has
(`self.model.hidden_size`, `self.model.init_hidden(n)`: any name outside the public API of nn.Module
and DistributedDataParallel, `torch_api.WRAPPER_API`, the names DDP308 reads the same way), and the
model shown as text (`print(self.model)`, `logger.info("%s", self.model)`: wrapper_prints.py), which
then prints as a plain run prints it.

Not routed, and the wrap then withheld with the reason: a method of the model that runs a forward
(or one of a class the analysis cannot read) called in the training step, whose gradients the plain
module would keep from DDP's averaging; another method of the two APIs that the wrapper serves
otherwise (`to()` after the wrap, `apply()`, `.module`); the model handed on (`load_weights(self.G,
path)`): what the callee needs is not read here.
"""

from __future__ import annotations

import libcst as cst

from .analysis.model_params import reaches_model
from .handles import in_training_step
from .syntax import dotted, walk
from .wrapper_prints import shows

UNWRAP = 'getattr({name}, "module", {name})'
LOAD = "load_state_dict"
# nn.Module methods a DDP wrapper answers as the plain model does (state_dict: with 'module.' keys, DDP402)
SERVED = frozenset(
    {
        "parameters",
        "named_parameters",
        "buffers",
        "named_buffers",
        "modules",
        "named_modules",
        "children",
        "named_children",
        "train",
        "eval",
        "zero_grad",
        "requires_grad_",
        "state_dict",
    }
)


def routes(ctx, cls: cst.ClassDef, name: str, before: list, where: str, model=None) -> list[cst.Attribute] | str:
    """The uses of `name` (`self.G`) in `cls` after its wrap (`before`: the statements from its build to
    the wrap) to route to the plain module, each the attribute read through it (`self.G.load_state_dict`);
    or why one cannot be served by the wrapper nor routed. `model`: (members, those that run a forward)
    of the model's class, where the caller knows them (else read from the build, `before[0]`)."""
    index = ctx.facts.index
    early = {id(n) for s in before for n in walk(s)}
    members, forward_like = model if model is not None else _model_class(ctx, before[0])
    out: list[cst.Attribute] = []
    for node in walk(cls):
        if id(node) in early or not isinstance(node, (cst.Attribute, cst.Name)) or dotted(node) != name:
            continue
        parent = index.parent.get(node)
        line = f"{where}:{index.position(node).start.line}"
        if isinstance(parent, cst.Call) and parent.func is node:
            continue  # the forward
        if isinstance(parent, cst.Attribute) and parent.value is node:
            attr = parent.attr.value
            outer = index.parent.get(parent)
            called = isinstance(outer, cst.Call) and outer.func is parent
            if called and attr in SERVED:
                continue
            if isinstance(outer, cst.Del):
                return f"{name}.{attr} ({line}) is deleted through the DDP wrapper"
            if (called and attr == LOAD) or reaches_model(attr, members):
                if called and attr != LOAD and in_training_step(ctx.facts, parent):
                    if forward_like is None or attr in forward_like:
                        return (
                            f"{name}.{attr}(...) ({line}) runs in the training step: on the plain module a forward "
                            f"DDP does not see (its gradients would not be averaged); compute it in forward()"
                        )
                out.append(parent)
                continue
            return f"{name}.{attr} ({line}) is not served by the DDP wrapper as by the model"
        if isinstance(parent, cst.Arg) and _is_getattr_unwrap(index, parent, name):
            continue  # `getattr(self.G, "module", self.G)`: the plain module already
        if isinstance(parent, cst.Arg) and _shown_by(index, parent):
            out.append(node)  # `print(self.G)`: shown as the plain run shows it
            continue
        return (
            f"{name} is handed on at {line}: whether what receives it needs the model or its DDP wrapper is not "
            f"read there"
        )
    return out


def route(ctx, uses: list[cst.Attribute], name: str) -> None:
    """Read each of `uses` (`self.G.<attr>`, or `self.G` itself where it is shown) through the plain module."""
    spelled = UNWRAP.format(name=name)
    for use in uses:
        if dotted(use) == name:
            ctx.plan.replace(use, lambda n, s=spelled: cst.parse_expression(s))
        else:
            ctx.plan.replace(use, lambda n, s=spelled: n.with_changes(value=cst.parse_expression(s)))


def handed_planner(cls_name: str, param: str, where: str, model, routed: list[tuple[int, str]]):
    """A planner (module_edits.py) for the module of class `cls_name`, which keeps the DDP wrapper its
    constructor is handed as `self.<attr> = <param>`: each use of the model's own attributes in the
    class (`self.G.sample_latent(64)`) goes through the plain module. `model`: (members, those that run
    a forward) of the model's class, as the script knows it; `routed` gets (line, use) of each use."""

    def plan(ctx) -> str | None:
        cls = next((s for s in ctx.facts.module.body if isinstance(s, cst.ClassDef) and s.name.value == cls_name), None)
        init = ctx.facts.index.methods_of(cls).get("__init__") if cls is not None else None
        kept = _kept_as(init, param) if init is not None else None
        if cls is None or kept is None:
            return f"{cls_name} does not keep {param} as one attribute of its own in __init__ ({where})"
        attr, stmt = kept
        uses = routes(ctx, cls, f"self.{attr}", [stmt], where, model=model)
        if isinstance(uses, str):
            return uses
        route(ctx, uses, f"self.{attr}")
        routed.extend((ctx.facts.index.position(use).start.line, dotted(use)) for use in uses)
        return None

    return plan


def _kept_as(init: cst.FunctionDef, param: str) -> tuple[str, cst.CSTNode] | None:
    """(attr, the statement) where `__init__` keeps its parameter `param` as `self.<attr> = <param>`, the
    only attribute it is kept as; None otherwise. Stricter than the summaries' `kept_params` (any
    assignment in `__init__`): the routing needs the one statement after which the wrapper is held."""
    found = []
    for stmt in init.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and dotted(small.value) == param:
                for target in small.targets:
                    name = dotted(target.target)
                    if name is not None and name.startswith("self.") and name.count(".") == 1:
                        found.append((name[len("self.") :], stmt))
    return found[0] if len(found) == 1 else None


def mixed_keys(ctx, cls: cst.ClassDef, name: str, uses: list[cst.Attribute], where: str) -> str | None:
    """Why the loads among `uses` cannot reach the plain module where the class's saves of `name`'s
    state_dict() stay the wrapper's (DDP402 not fixed): they would read 'module.' keys."""
    loads = [u for u in uses if u.attr.value == LOAD]
    saves = any(
        isinstance(n, cst.Call)
        and isinstance(n.func, cst.Attribute)
        and n.func.attr.value == "state_dict"
        and dotted(n.func.value) == name
        for n in walk(cls)
    )
    if not loads or not saves:
        return None
    line = ctx.facts.index.position(loads[0]).start.line
    return (
        f"{name}.{LOAD} ({where}:{line}) would read the 'module.' keys of what the class saves through the "
        f"wrapper: DDP402 is not fixed"
    )


def _model_class(ctx, build: cst.CSTNode) -> tuple[set[str] | None, set[str] | None]:
    """(methods and attributes, those that run a forward when called) of the model's class, where the
    statement `build` constructs one of this module or of the script's own modules; (None, None) for
    a class the analysis cannot read (a library's)."""
    facts = ctx.facts
    value = next((s.value for s in getattr(build, "body", ()) if isinstance(s, cst.Assign)), None)
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in MOVES:
        value = value.func.value
    if not isinstance(value, cst.Call):
        return None, None
    name = dotted(value.func)
    local = next((c for c in facts.module.body if isinstance(c, cst.ClassDef) and c.name.value == name), None)
    if local is not None:
        methods, attrs = facts.models.class_members(local)
        return methods | attrs, facts.models.forward_like(local) | (attrs - methods)
    summary = facts.modules.class_of(value.func) if facts.modules is not None else None
    if summary is not None:
        return summary.methods | summary.attributes, summary.forward_like | (summary.attributes - summary.methods)
    return None, None


MOVES = ("to", "cuda", "cpu")


def _shown_by(index, arg: cst.Arg) -> bool:
    """Is `arg` a positional argument of what shows it as text (`print(...)`, a logger's methods)?"""
    call = index.parent.get(arg)
    return isinstance(call, cst.Call) and arg.keyword is None and not arg.star and shows(call.func)


def _is_getattr_unwrap(index, arg: cst.Arg, name: str) -> bool:
    call = index.parent.get(arg)
    return (
        isinstance(call, cst.Call)
        and dotted(call.func) == "getattr"
        and len(call.args) == 3
        and dotted(call.args[0].value) == name
        and isinstance(call.args[1].value, cst.SimpleString)
        and call.args[1].value.evaluated_value == "module"
    )


__all__ = ["SERVED", "UNWRAP", "handed_planner", "mixed_keys", "route", "routes"]
