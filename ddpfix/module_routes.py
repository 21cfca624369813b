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
path)`): what the callee needs is not read here. Handed to a function of the same module
(`evaluate(model, test_loader, device)`), the wrapper is followed there, two calls deep: the uses of
the parameter that receives it are read the same way and routed in that function, its `state_dict()`
too (saved there, it would keep the wrapper's keys); a plain model any other caller hands it passes
through `getattr(model, "module", model)` unchanged. A function that binds that parameter again is not
followed.
"""

from __future__ import annotations

import libcst as cst

from .analysis.call_params import param_for
from .analysis.model_params import reaches_model
from .handles import in_training_step
from .plain_spelling import unwrap_code
from .syntax import dotted, walk
from .wrapper_prints import shows

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
    early = {id(n) for s in [*before, *_run_before(cls, before)] for n in walk(s)}
    members = model if model is not None else _model_class(ctx, before[0])
    out: list[cst.CSTNode] = []
    for node in walk(cls):
        if id(node) in early or not isinstance(node, (cst.Attribute, cst.Name)) or dotted(node) != name:
            continue
        alias = _alias(index, node)
        if alias is None:
            found = _use(ctx, node, name, members, where)
        else:  # `model, config = self.model, self.config`: the uses of `model` in that function
            found = _alias_uses(ctx, alias, name, members, where)
        if isinstance(found, str):
            return found
        out += found
    return out


def _run_before(cls: cst.CSTNode, before: list) -> list[cst.FunctionDef]:
    """The methods of `cls` that only the statements before the wrap call (`self.check_cuda(args.cuda)`,
    moving the models to the GPU in `__init__`): they run before it too."""
    if not isinstance(cls, cst.ClassDef):
        return []
    early = {id(n) for s in before for n in walk(s)}
    calls: dict[str, list[cst.Call]] = {}  # `self.check_cuda` -> its calls in the class
    for node in walk(cls):
        if isinstance(node, cst.Call):
            calls.setdefault(dotted(node.func) or "", []).append(node)
    return [
        method
        for method in cls.body.body
        if isinstance(method, cst.FunctionDef)
        for found in [calls.get(f"self.{method.name.value}", [])]
        if found and all(id(c) in early for c in found)
    ]


def _use(ctx, node: cst.CSTNode, name: str, members, where: str, depth: int = 0) -> list[cst.CSTNode] | str:
    """What of the use `node` of the wrapper (spelled `name`) to route to the plain module ([] where the
    wrapper serves it), or why it can be neither."""
    index = ctx.facts.index
    members, forward_like = members
    parent = index.parent.get(node)
    line = f"{where}:{index.position(node).start.line}"
    if isinstance(parent, cst.Call) and parent.func is node:
        return []  # the forward
    if isinstance(parent, cst.Attribute) and parent.value is node:
        attr = parent.attr.value
        outer = index.parent.get(parent)
        called = isinstance(outer, cst.Call) and outer.func is parent
        if called and attr in SERVED:
            return []
        if isinstance(outer, cst.Del):
            return f"{name}.{attr} ({line}) is deleted through the DDP wrapper"
        if (called and attr == LOAD) or reaches_model(attr, members):
            if called and attr != LOAD and in_training_step(ctx.facts, parent):
                if forward_like is None or attr in forward_like:
                    return (
                        f"{name}.{attr}(...) ({line}) runs in the training step: on the plain module a forward "
                        f"DDP does not see (its gradients would not be averaged); compute it in forward()"
                    )
            return [parent]
        return f"{name}.{attr} ({line}) is not served by the DDP wrapper as by the model"
    if isinstance(parent, cst.Arg) and _is_getattr_unwrap(index, parent, name):
        return []  # `getattr(self.G, "module", self.G)`: the plain module already
    if isinstance(parent, cst.Arg) and _shown_by(index, parent):
        return [node]  # `print(self.G)`: shown as the plain run shows it
    callee = _callee(ctx, parent) if isinstance(parent, cst.Arg) and depth < CALLEE_DEPTH else None
    if callee is not None:  # `evaluate(model, loader)` of this module: what it does with it, routed there
        return _callee_uses(ctx, *callee, (members, forward_like), where, depth + 1)
    return (
        f"{name} is handed on at {line}: whether what receives it needs the model or its DDP wrapper is not read there"
    )


CALLEE_DEPTH = 2  # how far the wrapper is followed into the module's functions it is handed to


def _callee(ctx, arg: cst.Arg) -> tuple[cst.FunctionDef, str] | None:
    """The function of this module a call hands the wrapper to as `arg`, with the parameter that
    receives it; None for anything else (a library's function, a method, `**kwargs`)."""
    call = ctx.facts.index.parent.get(arg)
    func = ctx.facts.index.callee_of(call) if isinstance(call, cst.Call) else None
    if func is None or ctx.facts.index.enclosing(func, cst.ClassDef) is not None:
        return None
    param = param_for(func, call, arg)
    return None if param is None else (func, param)


def _callee_uses(ctx, func: cst.FunctionDef, param: str, members, where: str, depth: int) -> list | str:
    """What of the uses of the parameter `param` of `func`, handed the wrapper, to route to the plain
    module, as `_use` reads them, and its `state_dict()` too (saved there, it would keep the wrapper's
    'module.' keys); or why one can be neither. The routes hold for every caller: the plain module of a
    model is the model itself."""
    index = ctx.facts.index
    out: list[cst.CSTNode] = []
    for node in walk(func.body):
        if type(node) is not cst.Name or node.value != param:
            continue
        parent = index.parent.get(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue
        if _binds(index, node):
            line = index.position(node).start.line
            return f"{param} is bound again in {func.name.value}() at {where}:{line}, which is handed the DDP wrapper"
        if isinstance(parent, cst.Attribute) and parent.attr.value == "state_dict":
            out.append(parent)
            continue
        found = _use(ctx, node, param, members, where, depth)
        if isinstance(found, str):
            return found
        out += found
    return out


def _alias(index, node: cst.CSTNode) -> cst.Name | None:
    """The local name `node` is bound to as a whole, in a function (`model = self.model`, or `model, config
    = self.model, self.config`); None for any other use."""
    parent = index.parent.get(node)
    element = None
    if isinstance(parent, cst.Element) and parent.value is node:
        element, parent = parent, index.parent.get(parent)
        if not isinstance(parent, cst.Tuple):
            return None
        value, parent = parent, index.parent.get(parent)
    else:
        value = node
    if not (isinstance(parent, cst.Assign) and parent.value is value and len(parent.targets) == 1):
        return None
    target = parent.targets[0].target
    if element is not None:
        if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(value.elements):
            return None
        target = target.elements[value.elements.index(element)].value
    if type(target) is not cst.Name or index.enclosing(parent, cst.FunctionDef) is None:
        return None
    return target


def _alias_uses(ctx, alias: cst.Name, name: str, members, where: str) -> list[cst.CSTNode] | str:
    """The uses of `alias`, a local name for the wrapper `name`, in the function that binds it once,
    classified as `_use` does; or why the name cannot be followed (bound again there)."""
    index = ctx.facts.index
    func = index.enclosing(alias, cst.FunctionDef)
    out: list[cst.CSTNode] = []
    for node in walk(func):
        if type(node) is not cst.Name or node.value != alias.value or node is alias:
            continue
        parent = index.parent.get(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue  # `self.model`'s attribute name
        if _binds(index, node):
            line = index.position(node).start.line
            return f"{alias.value}, which holds {name}, is bound again at {where}:{line}"
        found = _use(ctx, node, alias.value, members, where)
        if isinstance(found, str):
            return found
        out += found
    return out


def _binds(index, node: cst.Name) -> bool:
    """Is `node` a name being bound (an assignment's or a loop's target, a parameter, `as` name)?"""
    child, parent = node, index.parent.get(node)
    while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
        child, parent = parent, index.parent.get(parent)
    if isinstance(parent, (cst.AssignTarget, cst.Param, cst.AsName, cst.Global, cst.Nonlocal)):
        return True
    if isinstance(parent, (cst.For, cst.CompFor, cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
        return parent.target is child
    return False


def route(ctx, uses: list[cst.CSTNode], name: str) -> None:
    """Read each of `uses` (`self.G.<attr>`, or `self.G` itself where it is shown; also through a local
    name for it, `model.init_hidden`, `print(model)`) through the plain module."""
    for use in uses:
        if type(use) is cst.Name or dotted(use) == name:
            spelled = unwrap_code(ctx.facts.index, use, dotted(use))
            ctx.plan.replace(use, lambda n, s=spelled: cst.parse_expression(s))
        else:
            spelled = unwrap_code(ctx.facts.index, use, dotted(use.value))  # type: ignore[attr-defined]
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
    value = unmoved(value)
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


MOVES = ("to", "cuda", "cpu")  # a module moved to a device is the same module


def unmoved(value):
    """`model` of `model.to(device)`, `model.cuda()` (any chain of moves): the module moved, the same object."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in MOVES:
        value = value.func.value
    return value


def model_members(facts, raw: str, handle: str, wrap_stmt: cst.CSTNode) -> tuple[set[str] | None, set[str] | None]:
    """(methods and attributes, the methods that run a forward) of the model's class, when it is a
    class of this file or of the script's own modules; (None, None) for a class the analysis cannot
    read (a library's)."""
    base = raw[: -len(".module")] if raw.endswith(".module") else raw
    cls = facts.models.model_class(base, wrap_stmt) or facts.models.model_class(handle, wrap_stmt)
    if cls is not None:
        methods, attrs = facts.models.class_members(cls)
        return methods | attrs, facts.models.forward_like(cls) | (attrs - methods)
    call = facts.models.constructor(base, wrap_stmt) or facts.models.constructor(handle, wrap_stmt)
    summary = facts.modules.class_of(call.func) if call is not None else None
    if summary is not None:
        return summary.methods | summary.attributes, summary.forward_like | (summary.attributes - summary.methods)
    return None, None


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


__all__ = ["MOVES", "SERVED", "handed_planner", "mixed_keys", "model_members", "route", "routes", "unmoved"]
