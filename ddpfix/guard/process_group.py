"""Process-group initialisations on the script's paths, before and after a rewrite.

An init point is a call that joins the process group: `init_process_group` itself, a call to a
function or class of this file that (transitively) makes one, or a call that cannot be resolved here
but by its name may do it (`utils.init_distributed_mode(args)`, `setup_ddp()`): that one counts as
an init, since nothing shows it does not, or a call into one of the script's own modules that joins
(`facts.modules`). `INIT_FINDERS` is where kinds of init calls plug in.

Two counts are compared between the input and the output, so that what the script already does is
not held against a rewrite:

- init points that run after another one on some path (a second `init_process_group` raises
  "trying to initialize the default process group twice");
- `DistributedDataParallel(...)` calls and collectives (`dist.broadcast(...)`) that no init point
  precedes on a path that reaches them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import libcst as cst

from ..analysis import ScriptFacts
from ..analysis.imports import Origin
from ..analysis.launch import may_join
from ..analysis.summaries import INIT
from ..syntax import code_of, dotted


def local_module_inits(facts: ScriptFacts) -> list[cst.Call]:
    """Calls into the script's own modules that join the process group there."""
    return [c for c in facts.index.calls if facts.modules.call_does(c, INIT)]


# Ways a script joins the process group besides init_process_group: each finder returns calls of `facts`.
INIT_FINDERS: list[Callable[[ScriptFacts], Iterable[cst.Call]]] = [local_module_inits]


@dataclass
class Point:
    call: cst.Call
    certain: bool  # False: a call that may init, by its name
    via: str = ""  # how: "" (init_process_group itself), "a helper", "a local module"

    @property
    def text(self) -> str:
        return f"`{_call_text(self.call)}`"


@dataclass
class Counts:
    repeated: list[Point]  # init points that run after another one
    unjoined: list[cst.Call]  # DDP wraps and collectives no init precedes


class _Paths:
    def __init__(self, facts: ScriptFacts) -> None:
        self.facts = facts
        self.classes = {c.name.value: c for c in facts.index.classes if facts.index.parent.get(c) is facts.module}
        self.callers: dict[cst.FunctionDef, list[cst.Call]] = {}
        self._callee: dict[cst.Call, cst.FunctionDef | None] = {}
        for call in facts.index.calls:
            f = self._resolve(call)
            self._callee[call] = f
            if f is not None:
                self.callers.setdefault(f, []).append(call)
        self.roots = set(self._spawn_targets())
        entry = facts.launch.entry
        if isinstance(entry, cst.FunctionDef):
            self.roots.add(entry)
        self.points = self._points()
        self.by_scope: dict[cst.FunctionDef | None, list[Point]] = {}
        for p in self.points:
            self.by_scope.setdefault(self._scope(p.call), []).append(p)

    # ------------------------------------------------------------------ calls
    def _resolve(self, call: cst.Call) -> cst.FunctionDef | None:
        func = call.func
        facts = self.facts
        if isinstance(func, cst.Name):
            f = facts.index.func_by_name.get(func.value)
            if f is not None:
                return f
            cls = self.classes.get(func.value)
            return facts.index.methods_of(cls).get("__init__") if cls is not None else None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            cls = facts.index.enclosing(call, cst.ClassDef)
            if isinstance(cls, cst.ClassDef):
                return facts.index.methods_of(cls).get(func.attr.value)
        return None

    def _spawn_targets(self) -> Iterable[cst.FunctionDef]:
        for call in self.facts.launch.spawn_calls:
            if call.args and isinstance(call.args[0].value, cst.Name):
                f = self.facts.index.func_by_name.get(call.args[0].value.value)
                if f is not None:
                    yield f

    def _scope(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return self.facts.index.enclosing(node, cst.FunctionDef)  # type: ignore[return-value]

    # ------------------------------------------------------------------ init points
    def _points(self) -> list[Point]:
        facts = self.facts
        direct = {c: "" for c in facts.launch.init_calls}
        for finder in INIT_FINDERS:
            for c in finder(facts):
                direct.setdefault(c, "a local module")
        initing: dict[cst.FunctionDef, bool] = {}
        by_func: dict[cst.FunctionDef | None, list[cst.Call]] = {}
        for c in facts.index.calls:
            by_func.setdefault(self._scope(c), []).append(c)

        def inits(f: cst.FunctionDef, seen: frozenset) -> bool:
            if f in initing:
                return initing[f]
            if f in seen:
                return False
            found = any(
                c in direct or self._may_init(c) or (self._callee[c] is not None and inits(self._callee[c], seen | {f}))
                for c in by_func.get(f, ())
            )
            initing[f] = found
            return found

        out = []
        for c in facts.index.calls:
            callee = self._callee[c]
            if c in direct:
                out.append(Point(c, True, direct[c]))
            elif callee is not None and inits(callee, frozenset()):
                out.append(Point(c, True, "a helper"))
            elif self._may_init(c):
                out.append(Point(c, False))
        return out

    def _may_init(self, call: cst.Call) -> bool:
        if self._callee.get(call) is not None:
            return False  # a function of this file: its body says
        name = dotted(call.func)
        if name is None:
            return False
        qual = self.facts.names.call_qual(call) or name
        target = self.facts.modules.target_of(call.func)
        if target is not None and target.origin is not Origin.UNKNOWN:
            return False  # a local module's summary or a known library says what it does
        return not qual.startswith("torch.") and may_join(call)

    # ------------------------------------------------------------------ paths
    def preceded(self, node: cst.CSTNode, seen: frozenset = frozenset()) -> bool:
        """Does another init point run before `node` on some path to it?"""
        scope = self._scope(node)
        for p in self.by_scope.get(scope, ()):
            if (
                p.call is not node
                and self.facts.index.before(p.call, node)
                and not _exclusive(self.facts, p.call, node)
            ):
                return True
        if scope is None or scope in seen:
            return False
        return any(self.preceded(c, seen | {scope}) for c in self.callers.get(scope, ()))

    def joined(self, node: cst.CSTNode, seen: frozenset = frozenset()) -> str:
        """Is the process group joined before `node` on every path to it: "yes", "no" or "unknown"."""
        if _gated(self.facts, node):
            return "yes"  # `if dist.is_initialized(): model = DDP(model)` runs only once someone joined
        scope = self._scope(node)
        if any(self.facts.index.before(p.call, node) for p in self.by_scope.get(scope, ())):
            return "yes"
        if scope is None:
            return "no"
        if scope in seen:
            return "unknown"  # a recursive call: the first entry decides
        callers = self.callers.get(scope, ())
        if not callers:
            if scope not in self.roots:
                return "unknown"
            # an entry point nothing in the file calls runs after the module's own code has run
            return "yes" if self.by_scope.get(None) else "no"
        answers = {self.joined(c, seen | {scope}) for c in callers}
        return "no" if "no" in answers else ("unknown" if "unknown" in answers else "yes")


def _gated(facts: ScriptFacts, node: cst.CSTNode) -> bool:
    """Is `node` in the true branch of a test of `torch.distributed.is_initialized()`?"""
    child = node
    for anc in facts.index.ancestors(node):
        if isinstance(anc, (cst.If, cst.IfExp)) and child is anc.body and isinstance(anc.test, cst.Call):
            if facts.names.call_qual(anc.test) == "torch.distributed.is_initialized":
                return True
        child = anc
    return False


def _exclusive(facts: ScriptFacts, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """Are `a` and `b` in different branches of one `if` (or one a `try` body, the other a handler)?"""

    def branches(node: cst.CSTNode) -> dict[int, int]:
        out: dict[int, int] = {}
        child = node
        for anc in facts.index.ancestors(node):
            if isinstance(anc, cst.If):
                out[id(anc)] = 0 if child is anc.body else 1
            elif isinstance(anc, cst.Try):
                out[id(anc)] = 1 if isinstance(child, cst.ExceptHandler) else (0 if child is anc.body else 2)
            child = anc
        return out

    ba, bb = branches(a), branches(b)
    return any(k in bb and bb[k] != v and {v, bb[k]} != {0, 2} for k, v in ba.items())


def _call_text(call: cst.Call) -> str:
    name = dotted(call.func)
    return f"{name}()" if name else code_of(call)


def counts(facts: ScriptFacts) -> Counts:
    if not (facts.launch.init_calls or facts.models.ddp_calls or _named_inits(facts) or _found_inits(facts)):
        return Counts([], [])
    paths = _Paths(facts)
    repeated = [p for p in paths.points if paths.preceded(p.call)]
    collectives = [c for c in facts.index.calls if facts.ranks.torch_collective(c)]
    unjoined = [w for w in facts.models.ddp_calls + collectives if paths.joined(w) == "no"]
    return Counts(repeated, unjoined)


def _found_inits(facts: ScriptFacts) -> bool:
    return any(any(True for _ in finder(facts)) for finder in INIT_FINDERS)


def _named_inits(facts: ScriptFacts) -> bool:
    return any(may_join(c) for c in facts.index.calls)


def first_point(facts: ScriptFacts) -> Point | None:
    """The script's own first init point (for a message)."""
    if not (facts.launch.init_calls or _named_inits(facts) or _found_inits(facts)):
        return None
    points = _Paths(facts).points
    return points[0] if points else None


__all__ = ["INIT_FINDERS", "Point", "Counts", "counts", "first_point"]
