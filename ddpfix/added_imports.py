"""The imports a plan adds (`Plan.ref`) and where each goes: in the file's import region, beside the
imports of its own section, in sorted order."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from .order import Order
from .syntax import dotted, single_small, strip_docstring

if TYPE_CHECKING:
    from .plan import Plan


@dataclass(frozen=True)
class ImportSpec:
    module: str
    name: str | None = None  # from <module> import <name>
    asname: str | None = None

    def render(self) -> str:
        if self.name is None:
            return f"import {self.module}" + (f" as {self.asname}" if self.asname else "")
        return f"from {self.module} import {self.name}" + (f" as {self.asname}" if self.asname else "")

    @property
    def local(self) -> str:
        """The name the import binds: `dist`, `DistributedSampler`, `os` (`torch` for `import torch.nn`)."""
        return self.asname or self.name or self.module.split(".")[0]

    @property
    def sort_key(self) -> str:
        return self.module.lower()


def place_imports(plan: Plan) -> None:
    """Inserts each import the plan adds in the file's import region, among the imports of its own
    section (standard library or third party; torch beside torch), in sorted order."""
    body = plan.module.body
    region = []
    for stmt in body[strip_docstring(body) :]:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) or stmt is plan.import_limit:
            break
        if isinstance(single_small(stmt), (cst.Import, cst.ImportFrom)):
            region.append(stmt)
    for spec in sorted(set(plan.imports), key=lambda s: (s.sort_key, s.name or "")):
        stmts = plan.statements(spec.render())
        section = _section(spec.module)
        same = [s for s in region if _section(_stmt_module(s)) == section]
        if section == "third" and spec.module.startswith("torch"):
            same = [s for s in same if _stmt_module(s).startswith("torch")] or same
        later = [s for s in same if _stmt_module(s).lower() > spec.sort_key]
        if later:
            plan.insert_before(later[0], stmts, order=Order.IMPORTS)
        elif same:
            plan.insert_after(same[-1], stmts, order=Order.IMPORTS)
        elif region and section == "stdlib":
            plan.insert_before(region[0], stmts, order=Order.IMPORTS, blank_after=True)
        elif region:
            plan.insert_after(region[-1], stmts, order=Order.IMPORTS)
        else:
            first = body[strip_docstring(body)] if strip_docstring(body) < len(body) else None
            if first is not None:
                plan.insert_before(first, stmts, order=Order.IMPORTS, blank_after=True)
            else:
                plan.prepend(plan.module, stmts, order=Order.IMPORTS)


def _stmt_module(stmt: cst.BaseStatement) -> str:
    small = single_small(stmt)
    if isinstance(small, cst.Import):
        return dotted(small.names[0].name) or ""
    if isinstance(small, cst.ImportFrom) and small.module is not None:
        return dotted(small.module) or ""
    return ""


def _section(module: str) -> str:
    top = module.split(".")[0]
    return "stdlib" if top in sys.stdlib_module_names or top == "__future__" else "third"


__all__ = ["ImportSpec", "place_imports"]
