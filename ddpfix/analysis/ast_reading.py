"""What the summaries read off Python's `ast` of a local module: dotted names, string constants, the
`__main__` test, a returned rank test, a `cuda:` f-string, and the names its imports bind."""

from __future__ import annotations

import ast
import weakref

from .imports import Imported

_RANK_CALLS = ("get_rank", "get_local_rank", "is_main_process", "is_master", "is_primary")


# Nodes whose walks are listed once: the summaries read each function's nodes about ten times. The
# cached values never hold their key (a value that does keeps its key alive, and the entry with it:
# every tree analysed would stay in memory for the life of the process).
_LISTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)
_NODES: weakref.WeakKeyDictionary[ast.AST, list[ast.AST]] = weakref.WeakKeyDictionary()  # tree -> nodes under it
_PARENTS: weakref.WeakKeyDictionary[ast.AST, dict[ast.AST, ast.AST]] = weakref.WeakKeyDictionary()


def nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of `tree` in `ast.walk`'s order, `tree` first; the nodes under a function, a class or
    a module are listed once while it lives."""
    return [tree, *_under(tree)]


def _under(tree: ast.AST) -> list[ast.AST]:
    """The nodes under `tree`, in `ast.walk`'s order (listed once for a function, a class or a module:
    do not change the list)."""
    if not isinstance(tree, _LISTED):
        return list(ast.walk(tree))[1:]
    under = _NODES.get(tree)
    if under is None:
        walked = ast.walk(tree)
        next(walked)  # `tree` itself
        under = _NODES[tree] = list(walked)
    return under


def calls(tree: ast.AST) -> list[ast.Call]:
    """The calls in `tree`, in `ast.walk`'s order."""
    return [n for n in (tree, *_under(tree)) if isinstance(n, ast.Call)]


def parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """node -> its parent, for the nodes under `tree` whose parent is under `tree` too (listed once, like
    `nodes`): `tree`'s own children map to nothing, as `tree` does (`.get(child)` is None)."""
    found = _PARENTS.get(tree) if isinstance(tree, _LISTED) else None
    if found is None:
        found = {child: node for node in _under(tree) for child in ast.iter_child_nodes(node)}
        if isinstance(tree, _LISTED):
            _PARENTS[tree] = found
    return found


def imported_names(tree: ast.Module) -> Imported:
    out: Imported = {}
    for node in nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(import_origins(node))
    return out


def star_imports(tree: ast.Module) -> list[tuple[str, int]]:
    """(module, relative level) of each `from module import *` at the top of the module, in order."""
    return [
        (node.module or "", node.level)
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
    ]


def import_origins(node: ast.Import | ast.ImportFrom) -> list[tuple[str, tuple[str, str | None, int]]]:
    """(local name, (module, member, level)) for each name an import binds (a star import binds none
    it names)."""
    if isinstance(node, ast.Import):
        return [
            (a.asname, (a.name, None, 0)) if a.asname else (head, (head, None, 0))
            for a in node.names
            for head in [a.name.split(".")[0]]
        ]
    return [(a.asname or a.name, (node.module or "", a.name, node.level)) for a in node.names if a.name != "*"]


def ast_dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def kept_params(init: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
    """`self.<attr>` -> the parameter of `__init__` it is assigned (`self.model = model`)."""
    positional = [a.arg for a in [*init.args.posonlyargs, *init.args.args]][1:]  # without `self`
    params = {*positional, *(a.arg for a in init.args.kwonlyargs)}
    return {
        f"self.{t.attr}": n.value.id
        for n in nodes(init)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in params
        for t in n.targets
        if isinstance(t, ast.Attribute) and ast_dotted(t.value) == "self"
    }


def ast_aliases(func: ast.FunctionDef | ast.AsyncFunctionDef, attrs: set[str]) -> dict[str, str]:
    """Local name -> one of `attrs` it stands for in `func`: `model = self.model`, or `model, config =
    self.model, self.config`, the only binding of that name in the function."""
    values: dict[str, list[ast.AST]] = {}
    paired: set[int] = set()
    for node in nodes(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                pairs = [(target, node.value)]
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    if len(target.elts) == len(node.value.elts):
                        pairs = list(zip(target.elts, node.value.elts))
                for t, v in pairs:
                    if isinstance(t, ast.Name):
                        values.setdefault(t.id, []).append(v)
                        paired.add(id(t))
    for node in nodes(func):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in paired:
            values.setdefault(node.id, []).append(node)  # bound some other way (or in a tuple): no alias
    out = {}
    for name, found in values.items():
        attr = ast_dotted(found[0]) if len(found) == 1 else None
        if attr in attrs:
            out[name] = attr
    return out


def is_main_test(test: ast.AST) -> bool:
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and {ast_dotted(test.left), string_constant(test.comparators[0])} >= {"__name__", "__main__"}
        or isinstance(test, ast.Compare)
        and {string_constant(test.left), ast_dotted(test.comparators[0])} >= {"__name__", "__main__"}
    )


def string_constant(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def cuda_fstring_of(node: ast.AST, pred) -> bool:
    """`f"cuda:{x}"` with `pred(x)`."""
    if not isinstance(node, ast.JoinedStr) or not node.values:
        return False
    head = node.values[0]
    if not (isinstance(head, ast.Constant) and str(head.value).startswith("cuda:")):
        return False
    return any(isinstance(v, ast.FormattedValue) and pred(v.value) for v in node.values[1:])


def is_rank_test(expr: ast.AST) -> bool:
    """A returned expression that tests the rank: `get_rank() == 0`, `args.rank % ngpus == 0`."""
    for n in ast.walk(expr):
        if isinstance(n, ast.Call) and (ast_dotted(n.func) or "").split(".")[-1] in _RANK_CALLS:
            return isinstance(expr, (ast.Compare, ast.Call, ast.UnaryOp, ast.BoolOp))
        if isinstance(n, (ast.Name, ast.Attribute)) and (ast_dotted(n) or "").split(".")[-1].lower() in (
            "rank",
            "local_rank",
        ):
            return isinstance(expr, (ast.Compare, ast.UnaryOp, ast.BoolOp))
    return False


__all__ = [
    "ast_aliases",
    "ast_dotted",
    "calls",
    "cuda_fstring_of",
    "import_origins",
    "imported_names",
    "is_main_test",
    "is_rank_test",
    "nodes",
    "parents",
    "string_constant",
]
