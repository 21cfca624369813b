"""Meters: objects of the script's own classes that keep running totals (`self.sum += value * n`), filled
in a loop over a sharded loader and shown afterwards (`print(f"{losses.average:.4f}")`, `print(meter)`).

A *meter class* is a class of this file (or of a module of the script's own it imports:
imported_meters.py) with a method that accumulates into `self.<attr>` with `+=`
(its *update* method). A meter is *filled* where a loop calls an update method of a name bound to an
instance of one (`train_loss = Average()`, then `train_loss.update(loss.item(), len(x))`), and *shown*
where a print or log call reads that name after it is bound: in the same function, or in a caller of
the function that returns it (`return train_loss, train_acc`, then `train_loss, train_acc =
self.train()` and `print(train_loss)`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import libcst as cst

from ..syntax import code_of, dotted, walk
from .flow import reads
from .index import TreeIndex


@dataclass(eq=False)
class MeterClass:
    cls: cst.ClassDef
    summed: list[str]  # the attributes its methods accumulate into with `+=`, in source order
    updates: set[str]  # the methods that accumulate
    stored: list[str]  # other attributes those methods assign from the meter's own state
    numeric: bool  # every summed attribute starts as a number (`self.sum = 0`) in `__init__` (or what it calls)
    reduces: bool  # a method issues a collective: the class reduces its own totals
    # what the update methods compute from the totals alone (`self.avg = self.sum / self.count`), in order:
    # recomputed from the reduced totals; an attribute set from the update's arguments alone (`self.val =
    # val`, the last value given) is no total and is left as it is
    derived: list[tuple[str, cst.BaseExpression]] = dataclasses.field(default_factory=list)

    @property
    def name(self) -> str:
        return self.cls.name.value


@dataclass(eq=False)
class Shown:
    """One meter read by one print or log call."""

    call: cst.Call
    name: str  # the meter's name where it is shown
    meter: MeterClass
    origin: cst.CSTNode  # the statement binding that name in the showing scope (the instance or a call's result)


def meter_classes(index: TreeIndex, collectives) -> dict[str, MeterClass]:
    """The classes of this file that accumulate into their own attributes, by name. `collectives(node)`
    lists the collective calls inside a node."""
    out: dict[str, MeterClass] = {}
    for cls in index.classes:
        meter = meter_class(cls, index.methods_of(cls), bool(collectives(cls)))
        if meter is not None:
            out[cls.name.value] = meter
    return out


def meter_class(cls: cst.ClassDef, methods: dict[str, cst.FunctionDef], reduces: bool) -> MeterClass | None:
    """`cls` as a meter (its `methods` by name; `reduces`: a method issues a collective), or None when no
    method accumulates a value into its attributes."""
    summed: list[str] = []
    updates: set[str] = set()
    assigned: list[tuple[str, cst.BaseExpression | None]] = []
    for name, method in methods.items():
        augs = [(a, n) for n in walk(method.body) if isinstance(n, cst.AugAssign) and (a := _self_attr(n.target))]
        if not any(reads(n.value) for _, n in augs):
            continue  # nothing but `self.steps += 1`: a count of calls, the same on every rank
        own = [a for a, _ in augs]
        updates.add(name)
        summed += [a for a in own if a not in summed]
        assigned += _after_totals(method)
    if not summed:
        return None
    starts = dict(_starts(methods))
    numeric = all(isinstance(starts.get(a), (cst.Integer, cst.Float)) for a in summed)
    derived, stored = _derived(summed, assigned)
    return MeterClass(cls, summed, updates, stored, numeric, reduces, derived)


def _after_totals(method: cst.FunctionDef) -> list[tuple[str, cst.BaseExpression | None]]:
    """`(attr, value)` for each `self.attr = value` of an update method; the value is None for one set
    before the method's last `self.x += ...` (a formula computed before the totals move is no formula
    over the totals it shows)."""
    nodes = list(walk(method.body))
    last = max((i for i, n in enumerate(nodes) if isinstance(n, cst.AugAssign) and _self_attr(n.target)), default=-1)
    out: list[tuple[str, cst.BaseExpression | None]] = []
    for i, n in enumerate(nodes):
        if isinstance(n, cst.Assign):
            keeps = i > last or not _reads_self(n.value)  # `self.val = val` anywhere: the last value given
            out += [(a, n.value if keeps else None) for t in n.targets if (a := _self_attr(t.target))]
    return out


def _reads_self(value: cst.BaseExpression) -> bool:
    return any(n == "self" or n.startswith("self.") for n in reads(value))


def _starts(methods: dict) -> list[tuple[str, cst.BaseExpression]]:
    """`(attr, value)` set by `__init__`, and by the methods it calls on `self` first (`self.reset()`)."""
    init = methods.get("__init__")
    if init is None:
        return []
    out = []
    for n in walk(init.body):
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and _self_attr(n.func) in methods:
            out += _assigned_values(methods[_self_attr(n.func)])
    return out + _assigned_values(init)


FORMULA_CALLS = {"max", "min", "float", "int", "abs", "round"}  # what a formula over the totals may call


def _derived(summed: list[str], assigned: list[tuple[str, cst.BaseExpression | None]]):
    """Split what the update methods assign into formulas over the totals (recomputed after the
    reduction) and the attributes that keep other state of the meter (`stored`: no fix). An attribute set
    from the update's own arguments (`self.val = val`) is neither."""
    totals = {f"self.{a}" for a in summed}
    derived: dict[str, cst.BaseExpression] = {}
    stored: list[str] = []
    for attr, value in assigned:
        if attr in summed or value is None:
            stored.append(attr)  # a total also set outright, or a value computed before the totals move
            continue
        names = reads(value) - {"self"}
        if not _reads_self(value):
            continue  # the last value given: no total
        formula = names & totals and names <= totals | FORMULA_CALLS
        if formula and code_of(derived.setdefault(attr, value)) == code_of(value):
            continue
        stored.append(attr)
    stored = list(dict.fromkeys(stored))
    return [(a, v) for a, v in derived.items() if a not in stored], stored


def shown_meters(
    index: TreeIndex, loops: list[cst.For], classes: dict[str, MeterClass], shows, reduced: set[str] = frozenset()
) -> dict:
    """The meters filled in `loops` and shown by a call that `shows(call)` accepts: {call: [Shown, ...]}.
    A meter given a value the ranks reduced already (`top1.update(reduced_acc.item(), len(x))` after
    `reduced_acc = reduce_tensor(acc)`) holds the run's value and is left out."""
    out: dict[cst.Call, list[Shown]] = {}
    if not classes:
        return out
    seen: set[tuple[int, str]] = set()
    for loop in loops:
        scope = index.scope_of(loop)
        for call in (n for n in walk(loop.body) if isinstance(n, cst.Call)):
            func = call.func
            if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
                continue
            name = func.value.value
            origin = _instance(index, scope, name, loop, classes)
            if origin is None or (id(origin), name) in seen:
                continue
            meter = classes[dotted(origin.body[0].value.func)]  # type: ignore[attr-defined]
            if func.attr.value not in meter.updates:
                continue
            value = {r for r in reads(call.args[0].value) if "." not in r} if call.args else set()
            if value and value <= reduced:
                continue
            seen.add((id(origin), name))
            for where, handle, binding in [(scope, name, origin), *_returned(index, scope, name)]:
                for shown in index.calls:
                    if index.scope_of(shown) is where and shows(shown) and index.before(binding, shown):
                        if _reads(index, shown, handle):
                            out.setdefault(shown, []).append(Shown(shown, handle, meter, binding))
    return out


def _instance(index: TreeIndex, scope, name: str, loop: cst.CSTNode, classes) -> cst.SimpleStatementLine | None:
    """The statement before `loop`, in its scope, that binds `name` to a new instance of a meter class."""
    found = None
    for assign in index.assigns:
        if index.scope_of(assign) is not scope or not index.before(assign, loop):
            continue
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            continue
        if assign.targets[0].target.value != name:
            continue
        value = assign.value
        ok = isinstance(value, cst.Call) and dotted(value.func) in classes
        stmt = index.parent.get(assign)
        found = stmt if ok and isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    return found


def _returned(index: TreeIndex, func, name: str) -> list[tuple[cst.CSTNode, str, cst.CSTNode]]:
    """Where the callers of `func` get `name` back from it: (their scope, the name they bind it to, the
    statement that binds it), for `return name` and `return a, name` bound by `x = f()` / `a, x = f()`."""
    if not isinstance(func, cst.FunctionDef):
        return []
    slots = set()
    for ret in walk(func.body):
        if not isinstance(ret, cst.Return) or index.scope_of(ret) is not func or ret.value is None:
            continue
        value = ret.value
        if isinstance(value, cst.Name) and value.value == name:
            slots.add(None)
        elif isinstance(value, cst.Tuple):
            slots |= {
                i for i, e in enumerate(value.elements) if isinstance(e.value, cst.Name) and e.value.value == name
            }
    if len(slots) != 1:
        return []  # not returned, or returned in different places
    (slot,) = slots
    out = []
    for call in index.callers_of(func):
        assign = index.parent.get(call)
        if not (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1):
            continue
        target = assign.targets[0].target
        if slot is not None and isinstance(target, (cst.Tuple, cst.List)) and slot < len(target.elements):
            target = target.elements[slot].value
        elif slot is not None:
            continue
        if isinstance(target, cst.Name):
            out.append((index.scope_of(call), target.value, index.parent.get(assign)))
    return out


def _reads(index: TreeIndex, call: cst.Call, name: str) -> bool:
    """Does `call` read `name` (not as an attribute's name nor a keyword)?"""
    for n in walk(call):
        if isinstance(n, cst.Name) and n.value == name:
            parent = index.parent.get(n)
            if not (
                (isinstance(parent, cst.Attribute) and parent.attr is n)
                or (isinstance(parent, cst.Arg) and parent.keyword is n)
            ):
                return True
    return False


def _self_attr(target: cst.BaseExpression) -> str | None:
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        return target.attr.value
    return None


def _assigned_values(method: cst.FunctionDef) -> list[tuple[str, cst.BaseExpression]]:
    """`(attr, value)` for each `self.attr = value` of a method."""
    out = []
    for n in walk(method.body):
        if isinstance(n, cst.Assign):
            out += [(a, n.value) for t in n.targets if (a := _self_attr(t.target))]
    return out


__all__ = ["MeterClass", "Shown", "meter_class", "meter_classes", "shown_meters"]
