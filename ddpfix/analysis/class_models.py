"""The models a class of the script's own modules builds and trains itself, read with Python's `ast`:
attributes set on `self` whose `parameters()` an optimizer of the class is built over
(`self.g_optimizer = torch.optim.Adam(self.G.parameters(), ...)`), with the line that builds each.
The script hands such a class its data and calls a method that trains (`Solver(loader, config).train()`):
the models, and so their DDP wrap, live in that module."""

from __future__ import annotations

import ast

from .ast_reading import ast_dotted, nodes

OPTIMIZER_WORDS = ("optim", "Adam", "SGD", "RMSprop", "Adagrad", "LBFGS", "Lion")


def ast_trained_attributes(cls: ast.ClassDef) -> list[tuple[str, int]]:
    """(attribute, line where the class builds it) for each model attribute an optimizer of the class
    is built over, in that order: not one it is handed (`self.model = model`; a `self.model = None`
    slot hands nothing), and [] when the class wraps a model in DDP itself."""
    trained: list[str] = []
    for node in nodes(cls):
        name = ast_dotted(node.func) if isinstance(node, ast.Call) else None
        if name is None:
            continue
        if name.split(".")[-1] in ("DistributedDataParallel", "DDP"):
            return []
        for owner in _parameter_owners(node, name, first_only=True):
            if owner.startswith("self.") and owner.count(".") == 1 and owner[5:] not in trained:
                trained.append(owner[5:])
    lines: dict[str, int] = {}
    handed: set[str] = set()  # `self.model = model`: a model the caller built (and wraps)
    for node in nodes(cls):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Attribute) and ast_dotted(t.value) == "self" and t.attr in trained:
                    if isinstance(node.value, ast.Constant) and node.value.value is None:
                        continue  # `self.unet = None` in __init__: a slot for the model a method builds
                    if isinstance(node.value, ast.Call):
                        lines.setdefault(t.attr, node.lineno)
                    else:
                        handed.add(t.attr)
    return [(attr, lines[attr]) for attr in trained if attr in lines and attr not in handed]


def ast_local_models(cls: ast.ClassDef) -> list[tuple[str, str, int]]:
    """(method, name, line of the build) for each local of a method an optimizer of that method is built
    over (`model = Net(); model = model.to(device); opt = Adam(model.parameters())` in `train()`): built
    there by a call, not a parameter of the method, and [] when the class wraps a model in DDP itself."""
    if ast_wraps(cls):
        return []
    methods = (m for m in cls.body if isinstance(m, ast.FunctionDef))
    return [(method.name, name, line) for method in methods for name, line in _locals(method)]


def ast_function_locals(func: ast.FunctionDef) -> list[tuple[str, int]]:
    """(name, line of the build) for each local of `func` an optimizer of `func` is built over, built
    there by a call and not a parameter of `func` (ast_local_models; and for a module-level function
    that builds and trains its own model: `def fit(epochs): model = Net(); opt = SGD(model.parameters())`),
    [] when `func` wraps a model in DDP itself."""
    return [] if ast_wraps(func) else _locals(func)


def _locals(func: ast.FunctionDef) -> list[tuple[str, int]]:
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    built: dict[str, int] = {}
    optimized: list[str] = []
    for node in nodes(func):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(t, ast.Name) and t.id not in built:
                    built[t.id] = node.lineno
        name = ast_dotted(node.func) if isinstance(node, ast.Call) else None
        for owner in _parameter_owners(node, name, first_only=False):
            if "." not in owner and owner not in optimized:
                optimized.append(owner)
    return [(n, built[n]) for n in optimized if n in built and n not in params]


def _parameter_owners(call, name: str | None, first_only: bool) -> list[str]:
    """For an optimizer call (`name` holds one of OPTIMIZER_WORDS), the spelled receivers of the
    `X.parameters()` / `X.named_parameters()` in its first argument (`first_only`) or in any; [] for
    any other call."""
    if name is None or not any(word in name for word in OPTIMIZER_WORDS) or not call.args:
        return []
    out = []
    for inner in (n for arg in (call.args[:1] if first_only else call.args) for n in ast.walk(arg)):
        if (
            isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Attribute)
            and inner.func.attr in ("parameters", "named_parameters")
        ):
            out.append(ast_dotted(inner.func.value) or "")
    return [o for o in out if o]


def ast_wraps(cls: ast.ClassDef | ast.FunctionDef) -> bool:
    """Does the class (or function) wrap a model in DDP itself (`self.G = DDP(self.G)`, under any test)?"""
    return any(
        isinstance(node, ast.Call)
        and (ast_dotted(node.func) or "").split(".")[-1] in ("DistributedDataParallel", "DDP")
        for node in nodes(cls)
    )


__all__ = ["ast_function_locals", "ast_local_models", "ast_trained_attributes", "ast_wraps"]
