"""Methods a class of a local module takes from its bases, in the module's summary; the main block."""

from __future__ import annotations

import ast

from .ast_reading import is_main_test
from .module_summary import ModuleSummary


def is_main_block(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":`"""
    return isinstance(stmt, ast.If) and is_main_test(stmt.test)


def inherit_methods(summary: ModuleSummary, tree: ast.Module) -> None:
    """A class of this module takes the methods of its bases that it does not define, as the summary
    knows them (a base of this module, or one it imports: `class GMFEngine(Engine)` with
    `train_an_epoch` in engine.py), so that `engine.train_an_epoch(...)` trains where it is called."""
    effects = summary.effects
    for name in (n.name for n in tree.body if isinstance(n, ast.ClassDef)):
        cls = summary.classes[name]
        for base in cls.bases:
            if base not in summary.classes or base == name:
                continue
            for key in [k for k in effects if k.startswith(f"{base}.")]:
                method = key[len(base) + 1 :]
                if "." not in method and method not in cls.methods:
                    effects[f"{name}.{method}"] = set(effects[key])
                    cls.methods.add(method)


__all__ = ["inherit_methods", "is_main_block"]
