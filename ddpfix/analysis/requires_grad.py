"""Where a script changes which parameters of a model need a gradient: `for p in
model.backbone.parameters(): p.requires_grad = True`, `model.fc.requires_grad_(False)`, or a function
of the script handed the model (or a part of it) that does so, `set_trainable(model.backbone, True)`.

DDP records the parameters that need a gradient when it is built: the wrap goes after such a change
where the model is prepared (wrap_points.py), and one made after the wrap is what DDP312 reports."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ..syntax import calls_in, code_of, dotted, method_name, receiver, walk

MODULE_ITERATORS = {"modules", "children", "parameters", "named_modules", "named_children", "named_parameters"}


@dataclass(frozen=True)
class Change:
    node: cst.CSTNode  # the loop, the `requires_grad_` call, or the call of the script's function
    value: bool | None  # what requires_grad becomes (None: not a literal)


def reaches(node: cst.BaseExpression, handle: str) -> bool:
    """`model`, `model.fc`, `model[0]`: the model `handle` or a part of it."""
    return dotted(node) == handle or part_of(node, handle)


def part_of(node: cst.BaseExpression, handle: str) -> bool:
    """`model.fc.weight`, `model[0].bias`: a tensor (or a submodule) of the model `handle`."""
    return code_of(node).startswith((handle + ".", handle + "["))


def walks(loop: cst.CSTNode, handle: str) -> bool:
    """`for p in model.backbone.parameters():`, `for m in model.modules():`: a loop over the modules or
    parameters of `handle` or a part of it."""
    if type(loop) is not cst.For or type(loop.iter) is not cst.Call:
        return False
    recv = receiver(loop.iter)
    return recv is not None and method_name(loop.iter) in MODULE_ITERATORS and reaches(recv, handle)


def sets_requires_grad(node: cst.CSTNode) -> bool:
    """`p.requires_grad = False`, `m.requires_grad_(False)` somewhere in `node`."""
    return _setting(node)[0]


def freeze_loop(loop: cst.CSTNode, handle: str) -> bool:
    """`for p in model.backbone.parameters(): p.requires_grad = False` (any iterator of the modules or
    parameters of `handle` or a part of it, whose body sets requires_grad)."""
    return walks(loop, handle) and sets_requires_grad(loop.body)  # type: ignore[attr-defined]


def changes(facts, handles: tuple[str, ...]) -> list[Change]:
    """Every change of requires_grad on the parameters of the models `handles` name, in source order."""
    out: list[Change] = []
    loops: list[cst.For] = []
    for node in walk(facts.module):
        if type(node) is cst.For and any(freeze_loop(node, h) for h in handles):
            loops.append(node)
            out.append(Change(node, _setting(node.body)[1]))
    index = facts.index
    for call in index.calls:
        if any(index.contains(loop, call) for loop in loops):
            continue
        recv = receiver(call)
        if method_name(call) == "requires_grad_" and recv is not None and any(reaches(recv, h) for h in handles):
            out.append(Change(call, _literal(call.args[0].value) if call.args else True))
            continue
        func = index.callee_of(call)
        if func is None or not any(reaches(a.value, h) for a in call.args for h in handles):
            continue
        if any(method_name(c) in ("backward", "step") for c in calls_in(func.body)) or not sets_requires_grad(
            func.body
        ):
            continue
        literals = [v for a in call.args if (v := _literal(a.value)) is not None]
        out.append(Change(call, literals[0] if len(literals) == 1 else None))
    return sorted(out, key=lambda c: (index.position(c.node).start.line, index.position(c.node).start.column))


def _setting(node: cst.CSTNode) -> tuple[bool, bool | None]:
    """(does `node` set requires_grad, to what: True/False for a literal, None for another value)."""
    for n in walk(node):
        if type(n) is cst.Assign and any(
            type(t.target) is cst.Attribute and t.target.attr.value == "requires_grad" for t in n.targets
        ):
            return True, _literal(n.value)
    for call in calls_in(node):
        if method_name(call) == "requires_grad_":
            return True, _literal(call.args[0].value) if call.args else True
    return False, None


def _literal(node: cst.BaseExpression) -> bool | None:
    if type(node) is cst.Name and node.value in ("True", "False"):
        return node.value == "True"
    return None


__all__ = ["MODULE_ITERATORS", "Change", "changes", "freeze_loop", "part_of", "reaches", "sets_requires_grad", "walks"]
