"""The file a helper of the script's modules saves to or loads from, written in terms of its
parameters, so that a save and a load through two helpers can be matched at their call sites.

`def save_checkpoint(model, optimizer, epoch, miou, args): ... model_path = os.path.join(args.save_dir,
args.name); torch.save(checkpoint, model_path)` saves to `os.path.join(args.save_dir, args.name)`
(`args` its parameter), and `def load_checkpoint(model, optimizer, folder_dir, filename):
model_path = os.path.join(folder_dir, filename); torch.load(model_path)` loads from
`os.path.join(folder_dir, filename)`. With the arguments of `save_checkpoint(model, opt, e, m, args)`
and `load_checkpoint(model, opt, args.save_dir, args.name)` put in, both name
`os.path.join(args.save_dir, args.name)`: the same file. Read with Python's `ast`; a template is the
path expression with the function's local names replaced by what they were last assigned before the
call (one level of names deep each time, at most `DEPTH` times), parameters left as names."""

from __future__ import annotations

import ast
import copy

from .ast_reading import ast_dotted

SAVES = {"torch.save": (1, "f")}
LOADS = {"torch.load": (0, "f")}
DEPTH = 4


def path_templates(func: ast.FunctionDef | ast.AsyncFunctionDef, qual) -> dict[str, list[str]]:
    """{"save": [...], "load": [...]}: the path expressions of the `torch.save` / `torch.load` calls
    in `func` (`qual(name)` gives a called name's qualified name)."""
    out: dict[str, list[str]] = {}
    assigned: dict | None = None  # read only for a function that saves or loads
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        name = ast_dotted(node.func)
        q = qual(name) if name else None
        for kind, table in (("save", SAVES), ("load", LOADS)):
            if q in table:
                index, keyword = table[q]
                arg = _argument(node, index, keyword)
                if arg is not None:
                    assigned = _assignments(func) if assigned is None else assigned
                    out.setdefault(kind, []).append(ast.unparse(_expand(arg, assigned, node.lineno)))
    return out


def at_call(template: str, params: list[str], args: dict[str, str]) -> str | None:
    """`template` with each parameter replaced by the text of the argument a call passes for it
    (`args`: parameter -> source text); None where a parameter it reads gets no argument."""
    try:
        tree = ast.parse(template, mode="eval").body
        values = {p: ast.parse(text, mode="eval").body for p, text in args.items()}
    except SyntaxError:
        return None
    missing = [False]

    class Put(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in values:
                return copy.deepcopy(values[node.id])
            if node.id in params:
                missing[0] = True
            return node

    out = Put().visit(tree)
    return None if missing[0] else ast.unparse(out)


def _assignments(func) -> dict[str, list[tuple[int, ast.expr]]]:
    out: dict[str, list[tuple[int, ast.expr]]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out.setdefault(node.targets[0].id, []).append((node.lineno, node.value))
    return out


def _expand(expr: ast.expr, assigned: dict, line: int, depth: int = 0) -> ast.expr:
    """`expr` with each local name replaced by the last value assigned to it before `line`."""

    class Expand(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            before = [(n, v) for n, v in assigned.get(node.id, []) if n < line]
            if not before or depth >= DEPTH:
                return node
            at, value = before[-1]
            return _expand(value, assigned, at, depth + 1)  # (which copies it)

    return Expand().visit(copy.deepcopy(expr))


def _argument(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    return positional[index] if index < len(positional) else None


__all__ = ["at_call", "path_templates"]
