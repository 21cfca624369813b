"""Which arguments of a call a function of the script's own code takes samples from, and nothing else:
`for X, Y in data.get_batches(X, Y, batch_size, True)` where `get_batches(self, inputs, targets,
batch_size, shuffle)` reads `inputs` and `targets` only as `len(inputs)`, `inputs.size(0)`,
`inputs.shape[0]` and `inputs[excerpt]`. Cutting those arguments by rank, all to one length, gives
each rank its own samples and as many batches as every other rank, whatever order the function
draws; any other use of such an argument (`inputs.cuda()`, `inputs[:, 0]`), or one the call hands
as an expression, and nothing is cut (None)."""

from __future__ import annotations

import ast

import libcst as cst

from ..syntax import dotted

SCALAR_CALLS = {"range", "min", "max", "int", "float", "bool"}


def sampled_names(tree: ast.Module, owner: str | None, member: str, call: cst.Call) -> list[str] | None:
    """The names the call hands to parameters that `owner.member` (a method; `member` alone where
    `owner` is None) takes samples from, in the call's order; None where that is not shown (the
    function not found, a `*args`, a keyword, a sampled parameter handed anything but a plain name)."""
    func = _function(tree, owner, member)
    if func is None or func.args.vararg is not None or any(a.keyword or a.star for a in call.args):
        return None
    params = [a.arg for a in func.args.posonlyargs + func.args.args][1 if owner is not None else 0 :]
    if len(call.args) > len(params):
        return None
    parents = {child: node for node in ast.walk(func) for child in ast.iter_child_nodes(node)}
    uses = {param: _uses(func, param, parents) for param in params}
    if None in uses.values() or any(uses[p] for p in params[len(call.args) :]) or _indexes_more(func, uses):
        return None  # read some other way, a sampled parameter left to its default, or more data sampled
    names = []
    for arg, param in zip(call.args, params):
        if uses[param]:
            name = dotted(arg.value)
            if name is None or "." in name:
                return None
            names.append(name)
    return names or None


def _indexes_more(func: ast.FunctionDef, uses: dict[str, bool | None]) -> bool:
    """Does the function take samples of anything else with the index it takes the parameters' with
    (`self.labels[excerpt]` beside `inputs[excerpt]`)? That one would not be cut, and its samples
    would no longer pair with theirs."""
    sampled = {p for p, taken in uses.items() if taken}
    subscripts = [n for n in ast.walk(func) if isinstance(n, ast.Subscript)]
    mine = [n for n in subscripts if isinstance(n.value, ast.Name) and n.value.id in sampled]
    index = {n.id for s in mine for n in ast.walk(s.slice) if isinstance(n, ast.Name)}
    return any(
        n not in mine and any(isinstance(m, ast.Name) and m.id in index for m in ast.walk(n.slice)) for n in subscripts
    )


def _function(tree: ast.Module, owner: str | None, member: str) -> ast.FunctionDef | None:
    body = tree.body
    if owner is not None:
        classes = [n for n in body if isinstance(n, ast.ClassDef) and n.name == owner]
        if len(classes) != 1:
            return None
        body = classes[0].body
    found = [n for n in body if isinstance(n, ast.FunctionDef) and n.name == member]
    return found[0] if len(found) == 1 else None


def _uses(func: ast.FunctionDef, param: str, parents: dict) -> bool | None:
    """True: `param` is read only by its length and by taking samples (`param[index]`, at least once);
    False: never subscripted (a size, a flag); None: subscripted and read some other way too, or rebound.
    `parents`: each node of the function's to the node above it."""
    taken = other = False
    for node in ast.walk(func):
        if not (isinstance(node, ast.Name) and node.id == param):
            continue
        if not isinstance(node.ctx, ast.Load):
            return None
        up = parents.get(node)
        if isinstance(up, ast.Subscript) and up.value is node:
            if isinstance(up.slice, ast.Tuple):
                return None  # an index past the first dimension
            taken = True  # samples: `p[excerpt]`, `p[i : i + batch_size]`
        elif _length(node, up, parents):
            continue  # its number of samples
        elif _scalar(node, up):
            other = True
        else:
            return None  # handed on, or read in a way not followed
    if taken and other:
        return None
    return taken


def _length(node: ast.Name, up: ast.AST | None, parents: dict) -> bool:
    """`len(p)`, `p.size(0)`, `p.shape[0]`: the number of samples."""
    if isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id == "len" and up.args == [node]:
        return True
    if isinstance(up, ast.Attribute) and up.value is node:
        above = parents.get(up)
        if up.attr == "size" and isinstance(above, ast.Call) and above.func is up:
            return [_constant(a) for a in above.args] == [0]
        if up.attr == "shape" and isinstance(above, ast.Subscript) and above.value is up:
            return _constant(above.slice) == 0
    return False


def _scalar(node: ast.Name, up: ast.AST | None) -> bool:
    """A number or a flag: `start + batch_size`, `start += batch_size`, `if shuffle:`, `range(0, n,
    batch_size)`."""
    if isinstance(up, (ast.BinOp, ast.Compare, ast.BoolOp, ast.UnaryOp)):
        return True
    if isinstance(up, (ast.If, ast.IfExp, ast.While)) and up.test is node:
        return True
    if isinstance(up, ast.AugAssign) and up.value is node:
        return True  # `start += batch_size`
    return isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id in SCALAR_CALLS


def _constant(node: ast.AST) -> object:
    return node.value if isinstance(node, ast.Constant) else None


__all__ = ["sampled_names"]
