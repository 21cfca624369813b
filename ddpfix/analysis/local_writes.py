"""What the script's calls write on every rank inside its own modules (module_writes.py records it
in the summaries): found at the call, with the module's file and line, for the rules to report
there."""

from __future__ import annotations

import libcst as cst

from ..syntax import assigned_value, dotted
from .index import TreeIndex
from .module_summary import Finding, ModuleSummary
from .module_writes import EVERY_RANK_LOG_FILE, EVERY_RANK_PRINT, EVERY_RANK_SAVE, EVERY_RANK_TRACKER
from .modules import LocalModules
from .names import Names


def writes_through(index: TreeIndex, names: Names, modules: LocalModules, call: cst.Call, kind: str) -> list[Finding]:
    """What `call` writes on every rank (EVERY_RANK_SAVE or EVERY_RANK_TRACKER) through the script's
    own modules: a function of theirs, a class of theirs built (`Trainer(...)`: its `__init__`), or a
    method called on an instance of one (`trainer = Trainer(...)`, then `trainer.fit(loader)`)."""
    found = modules.findings(call, kind)
    if found or type(call.func) is not cst.Attribute:
        return found
    if type(call.func.value) is cst.Call:  # `Trainer(...).fit(2)`: the method of the instance just built
        return _method_findings(modules, call.func.value, call.func.attr.value, kind)
    if type(call.func.value) is not cst.Name:
        return found
    out: list[Finding] = []  # bound in several branches (`model = GAN(args)` / `model = WGAN(args)`): each class's
    for ctor in _constructors(index, names, call.func.value.value, call):
        out += [f for f in _method_findings(modules, ctor, call.func.attr.value, kind) if f not in out]
    return out


def _constructors(index: TreeIndex, names: Names, owner: str, call: cst.Call) -> list[cst.Call]:
    """The calls that bind `owner`, the receiver of `call`: in its scope, then at module level."""
    scope = index.scope_of(call)
    sites = names.assignments(scope, owner) + (
        names.assignments(index.module, owner) if scope is not index.module else []
    )
    return [value for site in sites for value in [assigned_value(site.stmt)] if type(value) is cst.Call]


def method_of_instance(
    index: TreeIndex, names: Names, modules: LocalModules, call: cst.Call
) -> tuple[ModuleSummary, str] | None:
    """`(summary, "Class.method")` for a method called on an instance of a class of the script's own
    modules (`solver = Solver(...)`, then `solver.train()`; or `Solver(...).train()`); None otherwise.
    The first of `methods_of_instance`."""
    found = methods_of_instance(index, names, modules, call)
    return found[0] if found else None


def methods_of_instance(
    index: TreeIndex, names: Names, modules: LocalModules, call: cst.Call
) -> list[tuple[ModuleSummary, str]]:
    """`(summary, "Class.method")` for each class of the script's own modules whose instance the
    receiver of the method call `call` may be: one, or one per branch that binds it (`model =
    GAN(args)` under `if`, `model = WGAN(args)` under `elif`)."""
    if type(call.func) is not cst.Attribute:
        return []
    method = call.func.attr.value
    ctors: list[cst.Call] = []
    if type(call.func.value) is cst.Call:
        ctors.append(call.func.value)
    elif type(call.func.value) is cst.Name:
        ctors = _constructors(index, names, call.func.value.value, call)
    out: list[tuple[ModuleSummary, str]] = []
    for ctor in ctors:
        func = _class_alias(index, names, ctor.func)
        if modules.class_of(func) is None:
            continue
        target = modules.target_of(func)
        if target is not None and target.summary is not None and target.member is not None:
            found = (target.summary, f"{target.member}.{method}")
            if found not in out:
                out.append(found)
    return out


def _class_alias(index: TreeIndex, names: Names, func: cst.BaseExpression) -> cst.BaseExpression:
    """`Exp_Informer` where the class is called through a name bound to it once at module level
    (`Exp = Exp_Informer`, then `exp = Exp(args)`); `func` itself otherwise."""
    if type(func) is not cst.Name:
        return func
    sites = names.assignments(index.module, func.value)
    value = assigned_value(sites[0].stmt) if len(sites) == 1 else None
    return value if isinstance(value, (cst.Name, cst.Attribute)) else func


def _method_findings(modules: LocalModules, ctor: cst.Call, method: str, kind: str) -> list[Finding]:
    """The findings of `method` of the instance `ctor` builds, when it builds one of a local class."""
    if modules.class_of(ctor.func) is None:
        return []
    target = modules.target_of(ctor.func)
    if target is None or target.summary is None or target.member is None:
        return []
    return target.summary.findings(f"{target.member}.{method}", kind)


def instances(index: TreeIndex, modules: LocalModules) -> set[str]:
    """Names the script binds to an instance of a class of its own modules (`trainer = Trainer(...)`)."""
    out: set[str] = set()
    for assign in index.assigns:
        if type(assign.value) is cst.Call and modules.class_of(assign.value.func) is not None:
            out.update(t.target.value for t in assign.targets if type(t.target) is cst.Name)
    return out


def module_calls(index: TreeIndex, modules: LocalModules) -> list[cst.Call]:
    """The script's calls that may run code of its own modules: a name it imports from one
    (`utils.save(...)`, `Trainer(...)`), or a method of an instance of one of their classes."""
    bound = instances(index, modules)
    out = []
    for call in index.calls:
        head = (dotted(call.func) or "").split(".")[0]
        if head in modules.table.imported or (type(call.func) is cst.Attribute and head in bound):
            out.append(call)
        elif type(call.func) is cst.Attribute and type(call.func.value) is cst.Call:
            if modules.class_of(call.func.value.func) is not None:
                out.append(call)  # `Trainer(...).fit(2)`
    return out


def shown(modules: LocalModules, finding: Finding) -> str:
    """`utils.py:12`: the finding's file as the user knows it (relative to the script's folder) and line."""
    folder = modules.folder
    try:
        name = finding.path.resolve().relative_to(folder.resolve()).as_posix() if folder else finding.path.name
    except ValueError:
        name = finding.path.name
    return f"{name}:{finding.line}"


def called(call: cst.Call) -> str:
    """How the script spells what it calls: `Trainer`, `trainer.fit`, `Trainer(...).fit`."""
    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and dotted(func.value.func):
        return f"{dotted(func.value.func)}(...).{func.attr.value}"
    return dotted(func) or "this call"


__all__ = [
    "EVERY_RANK_LOG_FILE",
    "EVERY_RANK_PRINT",
    "EVERY_RANK_SAVE",
    "EVERY_RANK_TRACKER",
    "called",
    "instances",
    "methods_of_instance",
    "module_calls",
    "shown",
    "writes_through",
]
