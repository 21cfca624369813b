"""What a function of one of the script's own modules returns, when that is a DataLoader or a
DistributedSampler it builds: alone, in a tuple or in a dict (`return train_loader, val_loader`,
`return {"train": ..., "val": ...}`), read with Python's `ast` for the module summaries."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from .ast_reading import nodes

LOADER = "loader"
SAMPLER = "sampler"


@dataclass(frozen=True)
class Built:
    """A DataLoader or DistributedSampler a function builds at `line` and returns."""

    kind: str  # LOADER | SAMPLER
    line: int
    sampled: bool = False  # a loader given sampler= or batch_sampler=
    dataset: str | None = None  # a sampler over this parameter of the function
    dataset_pos: int | None = None  # ... which is its positional parameter number dataset_pos
    maybe_none: bool = False  # a sampler the function may return None instead of
    # a loader that gets its sampler only when this parameter of the function is true (`sampler=
    # DistributedSampler(ds) if distributed else None`); a sampler built so: that parameter
    gate: str | None = None


Shape = Built | tuple | dict  # a tuple or dict of Built | None


def returned(func: ast.FunctionDef | ast.AsyncFunctionDef, kind_of: Callable[[ast.Call], str | None]) -> Shape | None:
    """The shape of what `func` returns, when it returns loaders or samplers it builds. `kind_of(call)`
    says whether a call builds a LOADER or a SAMPLER (None: neither)."""
    if not any(isinstance(n, ast.Return) and n.value is not None for n in nodes(func)):
        return None
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)]  # positional first
    local: dict[str, Built] = {}
    returns: list[ast.expr | None] = []
    for node in sorted(_own_nodes(func), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            built = _built(node.value, kind_of, params, local)
            if built is None and isinstance(node.value, ast.Name):
                built = local.get(node.value.id)  # `data_loader = train_loader`
            if built is not None:
                local[node.targets[0].id] = built
        elif isinstance(node, ast.Return):
            returns.append(node.value)
    shape = None
    nones = False
    for value in returns:
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            nones = True
            continue
        found = _shape(value, local, kind_of, params)
        if found is not None:
            shape = found
    if isinstance(shape, Built) and shape.kind == SAMPLER and nones:
        shape = dataclasses.replace(shape, maybe_none=True)
    return shape


def _own_nodes(func: ast.AST):
    """The nodes of `func`, not of functions or classes defined inside it."""
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _built(value: ast.expr, kind_of, params: list[str], local: dict[str, Built] | None = None) -> Built | None:
    maybe_none = False
    gate = None
    if isinstance(value, ast.IfExp):  # DistributedSampler(ds) if dist.is_initialized() else None
        if isinstance(value.test, ast.Name) and value.test.id in params and _is_none(value.orelse):
            gate = value.test.id  # ... if distributed else None: only when the caller asks
        if _is_none(value.orelse):
            value, maybe_none = value.body, True
        elif _is_none(value.body):
            value, maybe_none = value.orelse, True
        else:
            value = value.body
    if not isinstance(value, ast.Call):
        return None
    kind = kind_of(value)
    if kind == LOADER:
        given = [k.value for k in value.keywords if k.arg in ("sampler", "batch_sampler") and not _is_none(k.value)]
        gates = [_gate(v, kind_of, params, local or {}) for v in given]
        return Built(LOADER, value.lineno, sampled=bool(given), gate=gates[0] if len(gates) == 1 else None)
    if kind == SAMPLER:
        first = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "dataset"), None)
        dataset = first.id if isinstance(first, ast.Name) and first.id in params else None
        pos = params.index(dataset) if dataset is not None else None
        return Built(SAMPLER, value.lineno, dataset=dataset, dataset_pos=pos, maybe_none=maybe_none, gate=gate)
    return None


def _gate(value: ast.expr, kind_of, params: list[str], local: dict[str, Built]) -> str | None:
    """The parameter a loader's `sampler=` argument depends on: a sampler built `... if distributed
    else None`, inline or bound to a name before the loader."""
    sampler = local.get(value.id) if isinstance(value, ast.Name) else _built(value, kind_of, params)
    return sampler.gate if sampler is not None and sampler.kind == SAMPLER else None


def _shape(value: ast.expr, local: dict[str, Built], kind_of, params: list[str]) -> Shape | None:
    if isinstance(value, ast.Name):
        return local.get(value.id)
    if isinstance(value, (ast.Tuple, ast.List)):
        parts = tuple(_shape(e, local, kind_of, params) for e in value.elts)
        return parts if any(p is not None for p in parts) else None
    if isinstance(value, ast.Dict):
        items = {
            k.value: _shape(v, local, kind_of, params)
            for k, v in zip(value.keys, value.values)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)
        }
        return items if any(v is not None for v in items.values()) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
        items = {k.arg: _shape(k.value, local, kind_of, params) for k in value.keywords if k.arg}
        return items if any(v is not None for v in items.values()) else None
    return _built(value, kind_of, params, local)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def at(shape: Shape | None, path: tuple) -> Shape | None:
    """The part of `shape` at `path` (tuple indices and dict keys)."""
    for key in path:
        if isinstance(shape, tuple) and isinstance(key, int) and key < len(shape):
            shape = shape[key]
        elif isinstance(shape, dict) and isinstance(key, str):
            shape = shape.get(key)
        else:
            return None
    return shape


def leaves(shape: Shape | None, path: tuple = ()) -> list[tuple[tuple, Built]]:
    """Every Built in `shape`, with its path."""
    if isinstance(shape, Built):
        return [(path, shape)]
    if isinstance(shape, tuple):
        return [leaf for i, part in enumerate(shape) for leaf in leaves(part, (*path, i))]
    if isinstance(shape, dict):
        return [leaf for k, part in shape.items() for leaf in leaves(part, (*path, k))]
    return []


__all__ = ["LOADER", "SAMPLER", "Built", "Shape", "at", "leaves", "returned"]
