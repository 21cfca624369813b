"""Parameters a model sets from its input, read with Python's `ast`: a class whose `forward` (or a method
it calls on `self`) writes one of its own `nn.Parameter`s in place from what forward received, such as
ActNorm's data-dependent initialisation (`self.loc.data.copy_(-mean)` with `mean` taken from the first
batch). Under DDP every rank writes its own values after the wrap's broadcast, and nothing makes them
equal again: the ranks train different models. A class's `builds` (the names it calls) lets a model be
followed down to the layer that does it (Glow -> Block -> Flow -> ActNorm)."""

from __future__ import annotations

import ast

from .ast_reading import ast_dotted, calls, nodes, parents
from .module_summary import ClassSummary, InputWrite

MODULES = {"Module", "Sequential", "ModuleList", "ModuleDict"}
IN_PLACE = {"copy_", "fill_", "add_", "sub_", "mul_", "div_", "clamp_", "normal_", "uniform_", "set_"}


def ast_input_parameters(cls: ast.ClassDef, path: str) -> list[InputWrite]:
    """Each parameter of `cls` (in the file at `path`) that its forward writes from its input, in line
    order: `once` where every way to the write passes a test (an initialisation on the first batch)."""
    methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    forward = methods.get("forward")
    if forward is None:
        return []
    params = {
        t.attr
        for n in nodes(cls)
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Call)
        and (ast_dotted(n.value.func) or "").split(".")[-1] == "Parameter"
        for t in n.targets
        if isinstance(t, ast.Attribute) and ast_dotted(t.value) == "self"
    }
    if not params:
        return []
    reached = _reached(forward, methods)
    flags = _flags(reached) - params
    found: dict[str, InputWrite] = {}
    for method in reached:
        tainted = _tainted(method)
        for n in nodes(method):
            written = _written(n, params, tainted)
            if written is not None and written not in found:
                once = _tested(n, method, flags) or _called_under_test(method, reached, flags, set())
                found[written] = InputWrite(cls.name, written, path, n.lineno, once)
    return sorted(found.values(), key=lambda w: w.line)


def read_input_parameters(summary: ClassSummary, cls: ast.ClassDef, path: str) -> ClassSummary:
    """`summary` of `cls` with what this module reads of it: the names it calls (the classes it may
    build: `Block(...)`, `layers.Flow(...)`) and the parameters its own forward sets from its input."""
    summary.builds = {name for n in calls(cls) if (name := ast_dotted(n.func))}
    summary.input_parameters = ast_input_parameters(cls, path)
    return summary


def built_parameters(classes: dict[str, ClassSummary], own: list[str]) -> None:
    """Add to each class named in `own` the parameters set from the input by the classes it builds or
    derives from (`classes`: the module's classes by the name it knows them under, its imports' too),
    and say which are modules (`nn.Module` among their bases, or a class of theirs that is one)."""
    for _ in range(len(own) + 1):
        changed = False
        for name in own:
            cls = classes[name]
            module = any(b.split(".")[-1] in MODULES or (b in classes and classes[b].is_module) for b in cls.bases)
            if module and not cls.is_module:
                cls.is_module = changed = True
            for other in (classes.get(b) for b in sorted(cls.builds | set(cls.bases))):
                for found in other.input_parameters if other is not None and other is not cls else ():
                    if found not in cls.input_parameters:
                        cls.input_parameters.append(found)
                        changed = True
        if not changed:
            return


def _reached(forward: ast.FunctionDef, methods: dict) -> list:
    """`forward` and the methods it calls on `self`, transitively."""
    reach, todo = [forward], [forward]
    while todo:
        for n in nodes(todo.pop()):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and ast_dotted(n.func.value) == "self":
                callee = methods.get(n.func.attr)
                if callee is not None and callee not in reach:
                    reach.append(callee)
                    todo.append(callee)
    return reach


def _flags(reached: list) -> set[str]:
    """The attributes of `self` the forward's methods write: `self.initialized.fill_(1)`, `self.inited = True`."""
    out = set()
    for n in (n for m in reached for n in nodes(m)):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in IN_PLACE:
            target = n.func.value
        elif isinstance(n, (ast.Assign, ast.AugAssign)):
            target = n.targets[0] if isinstance(n, ast.Assign) else n.target
        else:
            continue
        parts = (ast_dotted(target) or "").split(".")
        if len(parts) >= 2 and parts[0] == "self":
            out.add(parts[1])
    return out


def _tested(node: ast.AST, method, flags: set[str]) -> bool:
    """Is `node` under a test of `method` on a flag the class sets itself (`if self.initialized.item() == 0:`)?
    Not one it does not set, such as `if self.training:` (true on every training step)."""
    above = parents(method)
    up = above.get(node)
    while up is not None:
        if isinstance(up, (ast.If, ast.IfExp)) and any(
            isinstance(x, ast.Attribute) and ast_dotted(x.value) == "self" and x.attr in flags
            for x in ast.walk(up.test)
        ):
            return True
        up = above.get(up)
    return False


def _called_under_test(method, reached: list, flags: set[str], seen: set) -> bool:
    """Does every call of `method` from the others (forward and what it calls) pass such a test?"""
    if method is reached[0] or id(method) in seen:
        return False
    seen.add(id(method))
    sites = [
        (n, caller)
        for caller in reached
        for n in nodes(caller)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == method.name
        and ast_dotted(n.func.value) == "self"
    ]
    return bool(sites) and all(
        _tested(n, caller, flags) or _called_under_test(caller, reached, flags, seen) for n, caller in sites
    )


def _tainted(method) -> set[str]:
    """The names of `method` that hold what it received, or values computed from them."""
    args = method.args
    tainted = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.arg != "self"}
    assigns = [n for n in nodes(method) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value]
    changed = True
    while changed:
        changed = False
        for n in assigns:
            if not _mentions(n.value, tainted):
                continue
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                for name in (x.id for x in ast.walk(t) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)):
                    if name not in tainted:
                        tainted.add(name)
                        changed = True
    return tainted


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(x, ast.Name) and x.id in names for x in ast.walk(node))


def _written(node: ast.AST, params: set[str], tainted: set[str]) -> str | None:
    """The parameter `node` writes from a tainted value: `self.p.data.copy_(v)`, `self.p.copy_(v)`,
    `self.p.data = v`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in IN_PLACE:
        target, values = node.func.value, [*node.args, *(k.value for k in node.keywords)]
    elif isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, values = node.targets[0], [node.value]
    else:
        return None
    chain = ast_dotted(target) or ""
    if chain.endswith(".data"):
        chain = chain[: -len(".data")]
    parts = chain.split(".")
    if len(parts) != 2 or parts[0] != "self" or parts[1] not in params:
        return None
    return parts[1] if any(_mentions(v, tainted) for v in values) else None


__all__ = ["ast_input_parameters", "built_parameters", "read_input_parameters"]
