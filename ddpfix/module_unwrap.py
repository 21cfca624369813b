"""DDP402 across files: the DDP wrapper handed to a class of the script's own modules that keeps it
(`self.model = model` in `Trainer.__init__`, trainer.py) and saves its `state_dict()` in a method
(`torch.save(self.model.state_dict(), path)`).

The class needs the wrapper to train (its forward must go through DDP), so handing it the plain
module instead is no fix. The fix edits the class: each `self.model.state_dict()` becomes

    getattr(self.model, "module", self.model).state_dict()

the plain module's keys under DDP (`module.` stripped, as a plain run saves them) and the same object
in a plain run, whoever constructs the class: an entry point that wraps the model and one that does
not both get the keys a plain run writes. (A model of the user's own with an attribute named `module`
would be unwrapped one level too far: the spelling assumes none.)

Reported at the script's argument that hands the wrapper on, naming the module's file and line. The
module is edited where `ModuleEdits` allows it; classes that reach `self.model.module` or load a
state into the wrapper themselves are left alone. With cross-file edits off nothing is reported
(the module is not read as a tree then).
"""

from __future__ import annotations

import ast

import libcst as cst

from .analysis.ast_reading import ast_aliases
from .handles import handoffs, wrap_level, wrappers
from .module_epochs import function_of, owner_of
from .module_routes import unmoved
from .module_wraps import targets, wrapped_here
from .plain_spelling import unwrap_code
from .rule import Context, Rule
from .syntax import arg_slots, dotted, method_name, walk


def unwrap_in_classes(ctx: Context, rule: Rule) -> None:
    """Report (and fix, where allowed) each wrapper the script hands to a local class that saves its
    state_dict()."""
    facts, others = ctx.facts, ctx.others
    if others is None:
        return
    handed = {id(h.arg) for h in handoffs(ctx)}  # what DDP402 and its kin report at the call already
    for handle, (_raw, wrap_stmt) in wrappers(ctx).items():
        for call in facts.index.calls:
            if facts.modules.class_of(call.func) is None:
                continue
            target = facts.modules.target_of(call.func)
            if target is None or target.summary is None or target.member is None:
                continue
            for slot, arg in arg_slots(call):
                if id(arg) in handed or dotted(arg.value) != handle:
                    continue
                if not facts.wraps.after_wrap(call, handle, wrap_stmt):
                    continue
                path, cls = target.summary.path, target.member
                if others.why_not(path) is not None:
                    continue
                level, why = wrap_level(ctx, handle)  # the wrap this plan cannot make leaves nothing to unwrap
                words = f"{cls}() saves the state_dict() of {handle}, the DDP wrapper ('module.' keys)"
                _unwrap_there(
                    ctx,
                    rule,
                    arg.value,
                    path,
                    cls,
                    lambda lines, c=cls, s=slot: unwrap_planner(c, s, lines),
                    words,
                    why,
                    level,
                )


def unwrap_built_models(ctx: Context, rule: Rule) -> None:
    """Report (and fix, where allowed) the `self.G.state_dict()` saves of a class of the script's modules
    that builds the models it trains, where the fix wraps them in DDP there (module_wraps.py)."""
    facts, others = ctx.facts, ctx.others
    if others is None:
        return
    for call, summary, cls in facts.training.models_built_in_modules:
        if not wrapped_here(ctx, rule, summary, cls):
            continue  # nothing is wrapped there: DDP301 reports why
        attrs = {name for _method, name in targets(cls)}
        words = f"{cls.shown} saves the state_dict() of {', '.join(sorted(attrs))}, which the fix wraps in DDP ('module.' keys)"
        scopes = {method for method, _name in targets(cls)}
        planner = lambda lines, c=cls, a=attrs, m=scopes: _planner(c.name, lambda _c: a, lines, True, m, c.function)  # noqa: E731
        _unwrap_there(ctx, rule, call, summary.path, cls.name, planner, words)


def unwrap_handed_wraps(ctx: Context, rule: Rule) -> None:
    """Report (and fix, where allowed) the saves of the state_dict() of a model the script hands to a
    class of its modules that moves it, where the fix wraps it in DDP there (handed_wraps.py)."""
    from .handed_wraps import class_wrap, hand_over  # (it builds on this module's neighbours)

    others = ctx.others
    if others is None:
        return
    for model in ctx.facts.models.trained:
        found = hand_over(ctx, model.handle)
        wrap = class_wrap(ctx, rule, model) if found is not None else None
        if found is None or wrap is None or wrap[0] is not None:
            continue  # not wrapped there: DDP301 reports why
        call, summary, cls_name, param = found
        words = f"{cls_name} saves the state_dict() of the {model.handle} it is handed, which the fix wraps in DDP there ('module.' keys)"
        planner = lambda lines, c=cls_name, p=param: _planner(c, _handed(p), lines, built=True)  # noqa: E731
        _unwrap_there(ctx, rule, call, summary.path, cls_name, planner, words)


def _unwrap_there(
    ctx: Context, rule: Rule, at, path, cls_name: str, planner_of, words: str, why="", level=None
) -> None:
    """Try the unwrap `planner_of(lines)` makes in the module at `path`; where it edits something, report
    it at `at` (`words`, then where) and keep it, once per class."""
    others = ctx.others
    assert others is not None
    lines: list[int] = []
    if others.trial(path, rule, planner_of(lines)) is not None or not lines:
        return
    where = ", ".join(f"{others.shown(path)}:{n}" for n in lines[:3])
    message = (
        f'{words}, at {where}: the fix saves getattr(..., "module", ...).state_dict() there, the plain module\'s keys'
    )
    key = (rule.code, path, cls_name)
    if ctx.report(at, message + why, fix=level) and key not in others.planned:
        others.planned.add(key)
        others.keep(path, rule, planner_of([]))


def _handed(slot: int | str):
    """The attributes `__init__` keeps its parameter `slot` as (`self.model = model`)."""
    return lambda cls: _kept_as(cls, slot)


def unwrap_planner(cls_name: str, slot: int | str, lines: list[int]):
    """Unwrap `self.<attr>.state_dict()` in the methods of `cls_name`, where `__init__` keeps its
    parameter `slot` as `self.<attr>`; `lines` gets the lines edited. None (nothing to do) is no error."""
    return _planner(cls_name, _handed(slot), lines)


def _planner(cls_name: str, attrs_of, lines: list[int], built: bool = False, scopes=frozenset({None}), function=False):
    """Unwrap `self.<attr>.state_dict()` in the methods of `cls_name`, for the attributes `attrs_of(cls)`
    (the model handed to `__init__`, or, `built`, each model the class builds and the fix wraps, whose
    loads the wrap routes to the plain module too: module_routes.py); `lines` gets the lines edited.
    `scopes`: the methods to look in (None: all; a model a method keeps as its local is saved there).
    `function`: `cls_name` is a module-level function, its own one method (ClassSummary.function).
    None (nothing to do) is no error."""

    def plan(ctx: Context) -> str | None:
        facts = ctx.facts
        cls = owner_of(facts.module, cls_name, function)
        if cls is None:
            return f"{cls_name} is not defined at the top level of the module"
        attrs = attrs_of(cls)
        if not attrs or _unwraps_itself(cls, attrs, loads=not built):
            return None
        aliases: dict[int, str] | None = None  # read only for `model.state_dict()` on a local name
        found = [function_of(facts.module, m if function else f"{cls_name}.{m}") for m in scopes if m is not None]
        searched = [cls] if None in scopes else [m for m in found if m is not None]
        for node in (n for scope in searched for n in walk(scope)):
            if not isinstance(node, cst.Call) or method_name(node) != "state_dict":
                continue
            assert isinstance(node.func, cst.Attribute)
            attr = dotted(node.func.value)
            if attr not in attrs:
                if type(node.func.value) is not cst.Name:
                    continue
                aliases = _aliased(ctx, cls, attrs) if aliases is None else aliases
                if id(node.func.value) not in aliases:
                    continue
            if not built and inside_load(facts, node):
                continue
            lines.append(facts.index.position(node).start.line)
            spelled = cst.parse_expression(unwrap_code(facts.index, node, attr))  # type: ignore[arg-type]
            ctx.plan.replace(node.func.value, lambda _n, s=spelled: s)
        return None

    return plan


def _aliased(ctx: Context, cls: cst.ClassDef, attrs: set[str]) -> dict[int, str]:
    """id of each read of a local name that stands for one of `attrs` in a method of `cls` (`model =
    self.model`, or `model, config = self.model, self.config`: ast_reading.ast_aliases) -> that name."""
    tree = ctx.facts.index.ast_tree
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.name.value), None)
    named = {
        m.name: ast_aliases(m, attrs) for m in (node.body if node is not None else []) if isinstance(m, ast.FunctionDef)
    }
    out = {}
    for method in (s for s in cls.body.body if isinstance(s, cst.FunctionDef)):
        aliases = named.get(method.name.value, {})
        out.update({id(n): n.value for n in walk(method.body) if isinstance(n, cst.Name) and n.value in aliases})
    return out


def _kept_as(cls: cst.ClassDef, slot: int | str) -> set[str]:
    """`self.model` where `__init__(self, model, ...)` (parameter `slot`) runs `self.model = model`."""
    init = next(
        (s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"),
        None,
    )
    if init is None:
        return set()
    params = [p.name.value for p in init.params.params][1:]  # without self
    names = {p.name.value for p in [*init.params.params, *init.params.kwonly_params]}
    name = slot if isinstance(slot, str) else (params[slot] if slot < len(params) else None)
    star = init.params.star_kwarg
    kwargs = star.name.value if isinstance(star, cst.Param) else None
    if name is None or (name not in names and (kwargs is None or not isinstance(slot, str))):
        return set()
    out = set()
    for node in walk(init):
        if isinstance(node, cst.Assign) and _the_argument(node.value, name if name in names else None, kwargs, slot):
            out.update(t for t in (dotted(a.target) for a in node.targets) if t and t.startswith("self."))
    return out


def _the_argument(value: cst.BaseExpression, name: str | None, kwargs: str | None, slot: int | str) -> bool:
    """Is `value` the argument itself: its parameter (`model`), its entry of `**kwargs`
    (`kwargs['model']`), either moved to a device (`.to(device)`, `.cuda()`: the same module back)?"""
    value = unmoved(value)
    if isinstance(value, cst.Name):
        return name is not None and value.value == name
    if kwargs is None or not isinstance(slot, str) or not isinstance(value, cst.Subscript):
        return False
    if dotted(value.value) != kwargs or len(value.slice) != 1:
        return False
    index = value.slice[0].slice
    key = index.value if isinstance(index, cst.Index) else None
    return isinstance(key, cst.SimpleString) and key.evaluated_value == slot


def _unwraps_itself(cls: cst.ClassDef, attrs: set[str], loads: bool) -> bool:
    """The class reaches the plain module itself (`self.model.module`) or (`loads`) loads into what it keeps."""
    for node in walk(cls):
        if isinstance(node, cst.Attribute) and dotted(node.value) in attrs and node.attr.value == "module":
            return True
        if loads and isinstance(node, cst.Call) and method_name(node) == "load_state_dict":
            if isinstance(node.func, cst.Attribute) and dotted(node.func.value) in attrs:
                return True
    return False


def inside_load(facts, call: cst.CSTNode) -> bool:
    """Is `call` inside the arguments of a `load_state_dict(...)`?"""
    return any(isinstance(a, cst.Call) and method_name(a) == "load_state_dict" for a in facts.index.ancestors(call))


__all__ = ["unwrap_handed_wraps", "unwrap_built_models", "unwrap_in_classes", "unwrap_planner"]
