"""The model's class: which class of this file (or which constructor call) a handle holds, its
members (also of its in-file bases) and the methods that run a forward."""

from __future__ import annotations

import libcst as cst

from ..syntax import assigned_value, calls_in, dotted, walk
from .index import TreeIndex
from .model_params import close_over
from .names import Names

DDP_NAMES = {
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.DistributedDataParallel",
}
DP_NAMES = {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"}
# Methods that return the module they are called on (`model = model.to(device)` keeps the same module).
SELF_RETURNING = {
    "to",
    "cuda",
    "cpu",
    "train",
    "eval",
    "float",
    "half",
    "double",
    "bfloat16",
    "requires_grad_",
    "apply",
    "share_memory",
    "to_empty",
}


def module_under(value: cst.BaseExpression) -> cst.BaseExpression:
    """`value` without the calls of `SELF_RETURNING` methods on it: `model` for `model.float()` or
    `model.cpu().eval()`, `value` itself otherwise."""
    while (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in SELF_RETURNING
    ):
        value = value.func.value
    return value


class Classes:
    """Classes of the models."""

    def __init__(self, index: TreeIndex, names: Names) -> None:
        self.index = index
        self.names = names

    def model_class(self, name: str, at: cst.CSTNode) -> cst.ClassDef | None:
        """The class of this file that `name` holds at `at`: `model = Net(...).to(device)` -> Net."""
        call = self.constructor(name, at)
        by_name = {c.name.value: c for c in self.index.classes}
        if call is not None and isinstance(call.func, cst.Name):
            return by_name.get(call.func.value)
        return None

    def constructor(self, name: str, at: cst.CSTNode, _depth: int = 0) -> cst.Call | None:
        """The call that builds the module `name` holds at `at`: `Net(...)` for `model = Net(...).to(device)`,
        `models.Net(...)`, `build_model(cfg)`; through `ddp_model = DDP(model)` to the model's own."""
        index, names = self.index, self.names
        scope = index.scope_of(at)
        defs = [s for s in names.assignments(scope, name) if not index.before(at, s.stmt)] or names.assignments(
            index.module, name
        )
        if name.startswith("self.") and isinstance(index.enclosing(at, cst.ClassDef), cst.ClassDef):
            defs = names.assignments(index.enclosing(at, cst.ClassDef), name)  # type: ignore[arg-type]
        for site in reversed(defs):
            value = assigned_value(site.stmt)
            while isinstance(value, cst.Call):
                if names.call_qual(value) in DDP_NAMES | DP_NAMES and value.args:
                    value = value.args[0].value  # ddp_model = DDP(model)
                    continue
                if isinstance(value.func, cst.Attribute) and value.func.attr.value in SELF_RETURNING:
                    value = value.func.value  # Net().to(device).train()
                    continue
                return value
            if value is not None and dotted(value) is not None and dotted(value) != name and _depth < 3:
                return self.constructor(dotted(value), site.stmt, _depth + 1)  # type: ignore[arg-type]
        return None

    def class_members(self, cls: cst.ClassDef) -> tuple[set[str], set[str]]:
        """(methods, attributes set on `self`) of a class of this file and its in-file bases."""
        methods: set[str] = set()
        attrs: set[str] = set()
        by_name = {c.name.value: c for c in self.index.classes}
        todo, seen = [cls], set()
        while todo:
            c = todo.pop()
            if id(c) in seen:
                continue
            seen.add(id(c))
            methods |= set(self.index.methods_of(c))
            for n in walk(c):
                if (
                    isinstance(n, cst.AssignTarget)
                    and isinstance(n.target, cst.Attribute)
                    and dotted(n.target.value) == "self"
                ):
                    attrs.add(n.target.attr.value)
            todo += [by_name[b] for b in (dotted(a.value) for a in c.bases) if b in by_name]
        return methods, attrs

    def forward_like(self, cls: cst.ClassDef) -> set[str]:
        """Methods of a class of this file (and its in-file bases) that run a forward: they call
        `self(...)`, `self.forward(...)`, a submodule (`self.encoder(x)`), or another such method."""
        by_name = {c.name.value: c for c in self.index.classes}
        methods: dict[str, cst.FunctionDef] = {}
        todo, seen = [cls], set()
        while todo:
            c = todo.pop()
            if id(c) in seen:
                continue
            seen.add(id(c))
            for name, method in self.index.methods_of(c).items():
                methods.setdefault(name, method)
            todo += [by_name[b] for b in (dotted(a.value) for a in c.bases) if b in by_name]
        found: set[str] = set()
        calls: dict[str, set[str]] = {}
        for name, method in methods.items():
            calls[name] = set()
            for call in calls_in(method):
                callee = dotted(call.func) or ""
                if callee == "self":
                    found.add(name)
                elif callee.startswith("self.") and callee.count(".") == 1:
                    attr = callee[len("self.") :]
                    if attr == "forward" or attr not in methods:
                        found.add(name)
                    else:
                        calls[name].add(attr)
        return close_over(found, calls)


__all__ = ["DDP_NAMES", "DP_NAMES", "SELF_RETURNING", "Classes", "module_under"]
