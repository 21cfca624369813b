"""A gradient penalty back-propagated on its own through a model the fix would wrap: WGAN-GP's critic
step, `prob = self.D(interpolated)`, `gradients = autograd.grad(outputs=prob, inputs=interpolated,
create_graph=True)[0]`, a penalty computed from the gradients, then `penalty.backward()` by itself.

That backward runs through the double-backward graph, which leaves some of the critic's parameters
without a gradient (the last layer's bias: the gradient with respect to the input does not depend on
it). DDP then never finishes that reduction, and the next forward raises "Expected to have finished
reduction in the prior iteration"; neither `find_unused_parameters=True` (the bias is in the forward's
graph) nor `static_graph=True` accepts it. The same penalty added to the critic's loss and
back-propagated once with the rest (`(d_fake - d_real + penalty).backward()`) is accepted: every
parameter gets its gradient in that one backward. The fix does not restructure the step; it names the
line instead.
"""

from __future__ import annotations

import libcst as cst

from .syntax import dotted, kwarg, positional, walk


def lone_penalty(owner: cst.ClassDef | cst.Module, name: str) -> cst.Call | None:
    """The `autograd.grad(..., create_graph=True)` over a forward of `name` (`self.D` in a class, `D` in
    a script) whose penalty a method of the class (a function of the script, or its top level)
    back-propagates on its own, not added to a loss made of other forwards of `name`; None if none."""
    if isinstance(owner, cst.ClassDef):
        methods: list = [m for m in owner.body.body if isinstance(m, cst.FunctionDef)]
        prefix = "self."
    else:
        methods = [owner, *(f for f in owner.body if isinstance(f, cst.FunctionDef))]
        prefix = ""
    penalty_methods: dict[str, cst.Call] = {}
    for method in methods:
        found = _penalty(method, name, {})
        if found is not None and found[2] and isinstance(method, cst.FunctionDef):  # it returns the penalty
            penalty_methods[f"{prefix}{method.name.value}"] = found[0]
    for method in methods:
        found = _penalty(method, name, penalty_methods)
        if found is None:
            continue
        grad, pure, _ = found
        for call in walk(method.body if isinstance(method, cst.FunctionDef) else method):
            if (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "backward"
            ):
                if dotted(call.func.value) in pure:
                    return grad
    return None


def penalty_words(name: str, at: str) -> str:
    """Why the model `name` is not wrapped, with the `autograd.grad` call's place `at` ("line 18",
    "models/wgan.py:318")."""
    return (
        f"the gradient penalty over {name}'s output (torch.autograd.grad at {at}) is back-propagated on its "
        f"own, a double backward that can leave parameters of {name} (a last bias) without a gradient, whose "
        "reduction DDP never finishes; add the penalty to the loss back-propagated with the other terms, then convert"
    )


def _penalty(
    func: cst.FunctionDef | cst.Module, name: str, penalty_methods: dict[str, cst.Call]
) -> tuple[cst.Call, set[str], bool] | None:
    """(the autograd.grad call, the names holding only the penalty made from it, whether `func` returns
    one) for the penalty `func` computes or receives from `penalty_methods`; None if none."""
    forwards: set[str] = set()  # names holding what a forward of `name` returns (and what is made of it)
    pure: set[str] = set()  # names holding the penalty alone
    grad = None
    body = func.body if isinstance(func, cst.FunctionDef) else func
    for node in walk(body):
        if not isinstance(node, cst.Assign):
            continue
        targets = {t for target in node.targets for t in _names(target.target)}
        value = node.value
        made = _grad_call(value, forwards)
        if made is not None:  # `gradients = autograd.grad(outputs=prob, ...)[0]`
            grad = grad or made
            pure |= targets
            continue
        inner = next((c for c in walk(value) if isinstance(c, cst.Call) and dotted(c.func) in penalty_methods), None)
        read = _read(value)
        if any(isinstance(c, cst.Call) and dotted(c.func) == name for c in walk(value)) or read & forwards:
            forwards |= targets  # a forward's output, with the penalty added or not: back-propagated together
            pure -= targets
        elif inner is not None or read & pure:
            grad = grad or (penalty_methods[dotted(inner.func)] if inner is not None else None)  # type: ignore[index,union-attr]
            pure |= targets
        else:
            pure -= targets
    if grad is None:
        return None
    returns = any(
        isinstance(n, cst.Return) and n.value is not None and _read(n.value) & pure and not _read(n.value) & forwards
        for n in walk(body)
    )

    return grad, pure - forwards, returns


def _grad_call(value: cst.BaseExpression, forwards: set[str]) -> cst.Call | None:
    """`autograd.grad(outputs=prob, ..., create_graph=True)` in `value`, over a forward's output."""
    for call in walk(value):
        if not isinstance(call, cst.Call) or not (dotted(call.func) or "").endswith("autograd.grad"):
            continue
        graph = kwarg(call, "create_graph")
        outputs = kwarg(call, "outputs") or positional(call, 0)
        if graph is not None and dotted(graph.value) == "True" and outputs is not None:
            if dotted(outputs.value) in forwards:
                return call
    return None


def _read(value: cst.CSTNode) -> set[str]:
    return {d for n in walk(value) if isinstance(n, (cst.Name, cst.Attribute)) for d in [dotted(n)] if d}


def _names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements for n in _names(e.value)}
    found = dotted(target)
    return {found} if found else set()


__all__ = ["lone_penalty", "penalty_words"]
