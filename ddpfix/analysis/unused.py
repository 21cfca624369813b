"""Submodules that may sit out a forward: created in `__init__` but never used by `forward` (and the
methods it calls), used only under a condition on forward's inputs, or only when the model is built
with some option (`if self.do_bn: x = self.bn(x)`, `self.do_bn` set from an `__init__` argument).
DDP waits for the gradients of every parameter, so such a model stops on its next iteration unless
`find_unused_parameters=True`."""

from __future__ import annotations

import re

import libcst as cst

from ..syntax import assigned_value, dotted, walk
from .index import TreeIndex
from .names import Names

PARAMETERLESS = re.compile(
    r"Pool|ReLU$|ELU$|GELU|SiLU|Dropout|Identity|Flatten|Softmax|Sigmoid|Tanh|Upsample|Softplus|Hardswish|Mish|PixelShuffle|Loss$"
)
DYNAMIC = {"children", "named_children", "modules", "named_modules", "_modules", "__dict__"}

NEVER = "is never used in forward"
ON_INPUT = "is used in forward only under a condition on the input"


def sitting_out(index: TreeIndex, names: Names, cls: cst.ClassDef) -> list[tuple[str, cst.CSTNode, str, bool]] | None:
    """(attribute, its assignment, why, whether some forwards do use it) for each submodule of `cls`
    that a forward may leave out; None when the class cannot be analysed."""
    methods = index.methods_of(cls)
    init, forward = methods.get("__init__"), methods.get("forward")
    if init is None or forward is None:
        return None
    subs: dict[str, cst.CSTNode] = {}
    for node in walk(init):
        if not isinstance(node, cst.SimpleStatementLine):
            continue
        small = node.body[0] if len(node.body) == 1 else None
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            continue
        target = small.targets[0].target
        if (
            isinstance(target, cst.Attribute)
            and dotted(target.value) == "self"
            and _is_module(index, names, assigned_value(node))
        ):
            subs[target.attr.value] = small
    if not subs:
        return None
    reach = [forward]
    todo = [forward]
    while todo:
        m = todo.pop()
        for n in walk(m):
            if type(n) is cst.Call and type(n.func) is cst.Attribute and dotted(n.func.value) == "self":
                callee = methods.get(n.func.attr.value)
                if callee is not None and callee not in reach:
                    reach.append(callee)
                    todo.append(callee)
    params = {p.name.value for p in forward.params.params} - {"self"}
    options = _options(init)
    used: dict[str, str | None] = {}  # attr -> None (used unconditionally somewhere), or the condition
    for m in reach:
        for n in walk(m):
            kind = type(n)  # exact types: LibCST's node classes are ABCs, and isinstance on them is slow
            if kind is cst.Name and n.value in ("getattr", "vars"):
                return None
            if kind is cst.Attribute and dotted(n.value) == "self":
                if n.attr.value in DYNAMIC:
                    return None
                if n.attr.value in subs:
                    why = _conditional(index, n, m, params, options)
                    used[n.attr.value] = None if n.attr.value in used and used[n.attr.value] is None else why
            if kind is cst.For and dotted(n.iter) == "self":
                return None
    frozen_chains = [
        chain
        for n in walk(index.module)
        if type(n) is cst.Attribute and n.attr.value == "requires_grad_" and (chain := dotted(n.value))
    ]
    frozen = {a for a in subs for chain in frozen_chains if chain.endswith(f".{a}")}
    out = []
    for attr, stmt in subs.items():
        if attr in frozen:
            continue
        if attr not in used and _shares_only(names, assigned_value(index.parent[stmt]), used):
            continue  # `nn.Sequential(self.fc1, nn.ReLU())` with fc1 used: no parameter of its own
        if attr not in used:
            out.append((attr, stmt, NEVER, False))
        elif used[attr] is not None:
            out.append((attr, stmt, used[attr], True))  # type: ignore[arg-type]
    return out


def _shares_only(names: Names, value: cst.BaseExpression | None, used: dict[str, str | None]) -> bool:
    """Is `value` a container (`nn.Sequential(...)`, `nn.ModuleList([...])`) whose every element is a
    layer without parameters or a submodule forward uses anyway: it holds no parameter of its own, so
    leaving it out of forward leaves no gradient for DDP to wait for."""
    if type(value) is not cst.Call or (names.call_qual(value) or "") not in CONTAINERS:
        return False
    elements = [a.value for a in value.args]
    if len(elements) == 1 and type(elements[0]) in (cst.List, cst.Tuple):
        elements = [e.value for e in elements[0].elements]  # type: ignore[attr-defined]
    for el in elements:
        if type(el) is cst.Attribute and dotted(el.value) == "self" and used.get(el.attr.value, "") is None:
            continue
        last = (names.call_qual(el) or "").split(".")[-1] if type(el) is cst.Call else ""
        if last and PARAMETERLESS.search(last):
            continue
        return False
    return bool(elements)


CONTAINERS = {"torch.nn.Sequential", "torch.nn.ModuleList"}


def _is_module(index: TreeIndex, names: Names, value: cst.BaseExpression | None) -> bool:
    if not isinstance(value, cst.Call):
        return False
    q = names.call_qual(value) or ""
    last = q.split(".")[-1]
    if q.startswith("torch.nn.") and last[:1].isupper() and not PARAMETERLESS.search(last):
        return True
    return isinstance(value.func, cst.Name) and any(c.name.value == value.func.value for c in index.classes)


def _options(init: cst.FunctionDef) -> set[str]:
    """`self.<name>` attributes `__init__` sets from its own arguments: how the model was built."""
    args = {p.name.value for p in init.params.params} - {"self"}
    out = set()
    for node in walk(init.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if (
                isinstance(target, cst.Attribute)
                and dotted(target.value) == "self"
                and any(isinstance(n, cst.Name) and n.value in args for n in walk(node.value))
            ):
                out.add(target.attr.value)
    return out


def _conditional(
    index: TreeIndex, node: cst.CSTNode, method: cst.FunctionDef, params: set[str], options: set[str]
) -> str | None:
    """Why `node` may not run in a forward: under an `if` (or conditional expression) whose test
    reads one of forward's inputs, or an option the model was built with; None when it always runs."""
    for anc in index.ancestors(node):
        if anc is method:
            return None
        if isinstance(anc, (cst.If, cst.IfExp)) and not any(node is x for x in walk(anc.test)):
            if any(isinstance(n, cst.Name) and n.value in params for n in walk(anc.test)):
                return ON_INPUT
            option = next(
                (
                    n.attr.value
                    for n in walk(anc.test)
                    if isinstance(n, cst.Attribute) and dotted(n.value) == "self" and n.attr.value in options
                ),
                None,
            )
            if option is not None:
                return f"is used in forward only when the model is built with self.{option}"
        if isinstance(anc, (cst.For, cst.While)) and any(node is x for x in walk(anc.body)):
            head = anc.iter if isinstance(anc, cst.For) else anc.test
            if _counted_from_values(head, params):
                return ON_INPUT  # `for _ in range(int(x.sum().item()) % 3):` may run no time at all
    return None


def _counted_from_values(head: cst.CSTNode, params: set[str]) -> bool:
    """Does a loop's head take its count from the values of forward's inputs (`.item()`, `int(...)`),
    not from their sizes (`range(x.size(1))`, which a batch does not make zero)?"""
    reads_input = any(isinstance(n, cst.Name) and n.value in params for n in walk(head))
    from_values = any(
        isinstance(n, cst.Call)
        and (
            (isinstance(n.func, cst.Attribute) and n.func.attr.value == "item")
            or (isinstance(n.func, cst.Name) and n.func.value in ("int", "round", "bool"))
        )
        for n in walk(head)
    )
    return reads_input and from_values


def sits_out(facts, model) -> bool:
    """Does the model's class use a submodule in forward only on some inputs or only when built with
    some option (`if self.do_bn: x = self.bn(x)`)? Which parameters get gradients is then known only
    at run time: DDP finds out with `find_unused_parameters=True` (DDP310 says which ones)."""
    return any(
        conditional
        for cls in facts.models.classes_of(model)
        for _, _, _, conditional in sitting_out(facts.index, facts.names, cls) or ()
    )


__all__ = ["DYNAMIC", "NEVER", "ON_INPUT", "PARAMETERLESS", "sits_out", "sitting_out"]
