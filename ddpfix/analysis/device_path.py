"""Device path: what runs on the way into a process group. Whether the code that always runs with
the join commits to CUDA (a `set_device`, a `.cuda()`, an `assert torch.cuda.is_available()`), what
runs between two points of one path (the join and a later `set_device`), and whether any of that
touches a GPU or talks to the other ranks."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import libcst as cst

from ..syntax import assigned_value, calls_in, dotted, kwarg, method_name, positional, string_value, walk
from .index import TreeIndex
from .names import Names
from .ranks import Ranks

# torch.cuda calls that neither create a CUDA context nor run work on the current device.
QUIET_CUDA = {
    "torch.cuda.is_available",
    "torch.cuda.device_count",
    "torch.cuda.set_device",
    "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all",
    "torch.cuda.seed",
    "torch.cuda.seed_all",
    "torch.cuda.is_bf16_supported",
}
DDP = "DistributedDataParallel"
# Code inside these runs only sometimes (or later, or never) when what holds it runs.
CONDITIONAL = (cst.Lambda, cst.CompFor, cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp, cst.MatchCase)
_CONDITIONAL = frozenset(CONDITIONAL)
CALL_DEPTH = 3


class DevicePath:
    """The code on the way into a process group, and what it does with the GPU."""

    def __init__(self, index: TreeIndex, names: Names, ranks: Ranks) -> None:
        self.index = index
        self.names = names
        self.ranks = ranks
        self._cuda_only: dict[cst.Call, cst.CSTNode | None] = {}

    # ------------------------------------------------------------------ branches
    def branches(self, node: cst.CSTNode, scope: cst.CSTNode) -> list[cst.CSTNode]:
        """The parts of conditional code (an `if`'s body or `else`, a loop's body, an `except`, the
        right of `and`/`or`, a comprehension, a lambda) that hold `node` inside `scope`: `node` runs
        whenever `scope` does only when there are none."""
        out = []
        child = node
        for anc in self.index.ancestors(node):
            if anc is scope:
                break
            kind = type(anc)  # exact types: LibCST's node classes are ABCs, and isinstance on them is slow
            if kind is cst.If or kind is cst.IfExp or kind is cst.While:
                if child is not anc.test:  # type: ignore[attr-defined]
                    out.append(child)
            elif kind is cst.For:
                if child is not anc.iter and child is not anc.target:  # type: ignore[attr-defined]
                    out.append(child)
            elif kind is cst.Try:
                if child is not anc.body and child is not anc.finalbody:  # type: ignore[attr-defined]
                    out.append(child)
            elif kind is cst.BooleanOperation:
                if child is anc.right:  # type: ignore[attr-defined]
                    out.append(child)
            elif kind in _CONDITIONAL:
                out.append(child)
            child = anc
        return out

    def runs_with(self, node: cst.CSTNode, anchor: cst.CSTNode) -> bool:
        """Does `node` run whenever `anchor` does (same scope, no branch of its own)?"""
        scope = self.index.scope_of(anchor)
        if self.index.scope_of(node) is not scope:
            return False
        shared = set(map(id, self.branches(anchor, scope)))
        return all(id(b) in shared for b in self.branches(node, scope))

    # ------------------------------------------------------------------ CUDA-only paths
    def cuda_only(self, join: cst.Call) -> cst.CSTNode | None:
        """What makes the path that joins the process group at `join` need CUDA whatever happens: a
        `torch.cuda.set_device(...)`, a `.cuda()`, a `.to(device)` of a CUDA device, or an `assert
        torch.cuda.is_available()` that runs whenever `join` does (in its function, in the functions
        that call that one, or at the top of a function of this file either calls). None when the
        path could run without a GPU."""
        if join not in self._cuda_only:
            self._cuda_only[join] = next(self._commitments(join, 0), None)
        return self._cuda_only[join]

    def _commitments(self, anchor: cst.CSTNode, depth: int) -> Iterator[cst.CSTNode]:
        scope = self.index.scope_of(anchor)
        for node in self._nodes_in(scope):
            # the cheap test first: most calls on the way cannot commit to a GPU at all
            if self._may_commit(node) and self.runs_with(node, anchor) and self._commits(node, depth):
                yield node
        if isinstance(scope, cst.FunctionDef) and depth < CALL_DEPTH:
            for call in self.index.callers_of(scope):
                yield from self._commitments(call, depth + 1)

    def _nodes_in(self, scope: cst.CSTNode) -> Iterable[cst.CSTNode]:
        body = scope.body if isinstance(scope, cst.FunctionDef) else scope
        for node in walk(body):
            kind = type(node)
            if kind is cst.Call or kind is cst.Assert:
                yield node

    def _may_commit(self, node: cst.CSTNode) -> bool:
        """Could `_commits` say yes to `node`: an assert, a set_device, `.cuda()`/`.to()`, or a call of
        a function of this file?"""
        if isinstance(node, cst.Assert):
            return True
        assert isinstance(node, cst.Call)
        return (
            method_name(node) in ("cuda", "to")
            or self.names.call_qual(node) == "torch.cuda.set_device"
            or self.index.callee_of(node) is not None
        )

    def _commits(self, node: cst.CSTNode, depth: int) -> bool:
        if isinstance(node, cst.Assert):
            return self._asserts_cuda(node.test)
        assert isinstance(node, cst.Call)
        q = self.names.call_qual(node) or ""
        if q == "torch.cuda.set_device" or method_name(node) == "cuda":
            return True
        if method_name(node) == "to":
            arg = positional(node, 0) or kwarg(node, "device")
            return arg is not None and self.cuda_device(arg.value)
        callee = self.index.callee_of(node)
        if callee is not None and depth < CALL_DEPTH:  # a helper of this file that commits at its top level
            return any(
                self.branches(n, callee) == [] and self._commits(n, depth + 1)
                for n in self._nodes_in(callee)
                if self.index.scope_of(n) is callee
            )
        return False

    def _asserts_cuda(self, test: cst.BaseExpression) -> bool:
        if isinstance(test, cst.Call):
            return self.names.call_qual(test) == "torch.cuda.is_available"
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return self._asserts_cuda(test.left) or self._asserts_cuda(test.right)
        return False

    def cuda_device(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Is `expr` a CUDA device whatever happens: `"cuda:0"`, `f"cuda:{rank}"`, `torch.device("cuda",
        i)`, or a name bound to one: by the last assignment that always runs before `expr` in its scope,
        else by every assignment (in its scope, else at module level)?"""
        if _cuda_text(expr):
            return True
        if isinstance(expr, cst.Call) and self.names.call_qual(expr) == "torch.device":
            first = positional(expr, 0) or kwarg(expr, "type")
            return first is not None and _cuda_text(first.value)
        name = dotted(expr)
        if name is None or depth > 2:
            return False
        sites = self.names.assignments(self.index.scope_of(expr), name) or self.names.assignments(
            self.index.module, name
        )
        reaching = [s for s in sites if self.index.before(s.stmt, expr) and self.runs_with(s.stmt, expr)]
        if reaching:  # the last binding that always runs before `expr` is the one it reads
            sites = reaching[-1:]
        values = [assigned_value(s.stmt) for s in sites]
        return bool(values) and all(v is not None and self.cuda_device(v, depth + 1) for v in values)

    # ------------------------------------------------------------------ between two points
    def between(self, first: cst.CSTNode, second: cst.CSTNode, depth: int = 0) -> list[cst.CSTNode] | None:
        """The statements that run after `first` and before `second` when `second` follows `first` on
        one path: in one function, or with `first` in a function that a call before `second` reaches
        (then the rest of that function counts too). None when that cannot be told (other branches,
        unrelated functions) or `second` comes first."""
        scope = self.index.scope_of(first)
        if self.index.scope_of(second) is scope:
            return self._between_in_scope(first, second)
        if not isinstance(scope, cst.FunctionDef) or depth >= CALL_DEPTH:
            return None
        for call in self.index.callers_of(scope):
            rest = self.between(call, second, depth + 1)
            if rest is not None:
                return self._after(first) + rest
        return None

    def _between_in_scope(self, first: cst.CSTNode, second: cst.CSTNode) -> list[cst.CSTNode] | None:
        first_chain, second_chain = self._statements(first), self._statements(second)
        for j, late in enumerate(second_chain):
            block = self.index.parent.get(late)
            for i, early in enumerate(first_chain):
                if self.index.parent.get(early) is not block:
                    continue
                body = list(getattr(block, "body", ()))
                if early is late or body.index(early) > body.index(late):
                    return None  # other branches of one statement, or `second` runs first
                out = [s for inner in first_chain[:i] for s in _siblings(self.index, inner, after=True)]
                out += body[body.index(early) + 1 : body.index(late)]
                out += [s for inner in second_chain[:j] for s in _siblings(self.index, inner, after=False)]
                return out
        return None

    def _after(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """The statements of `node`'s function that run after its statement, up to the function's end."""
        return [s for stmt in self._statements(node) for s in _siblings(self.index, stmt, after=True)]

    def _statements(self, node: cst.CSTNode) -> list[cst.BaseStatement]:
        """`node`'s statement, then the statements holding it, up to its function (or the module)."""
        scope = self.index.scope_of(node)
        out = []
        for anc in [node, *self.index.ancestors(node)]:
            if anc is scope:
                break
            if isinstance(anc, cst.BaseStatement) and isinstance(
                self.index.parent.get(anc), (cst.IndentedBlock, cst.Module)
            ):
                out.append(anc)
        return out

    # ------------------------------------------------------------------ GPU work
    def device_work(self, nodes: Iterable[cst.CSTNode]) -> tuple[cst.Call, str] | None:
        """The first call among `nodes` that runs work on the current GPU or talks to the other ranks
        (CUDA calls and moves, a DDP wrap, a collective; also inside the functions of this file they
        call), with how to name it. None when there is none."""
        for node in nodes:
            for call in calls_in(node):
                what = self._work(call, 0, set())
                if what is not None:
                    return call, what
        return None

    def _work(self, call: cst.Call, depth: int, seen: set[int]) -> str | None:
        q = self.names.call_qual(call) or ""
        name, method = dotted(call.func), method_name(call)
        spelled = f"{name}()" if name else (f".{method}()" if method else "a call")
        if self.ranks.collective_op(call) is not None or (q.startswith("torch.") and q.endswith(DDP)):
            return spelled
        if q.startswith("torch.cuda.") and q not in QUIET_CUDA and not q.startswith("torch.cuda.amp."):
            return spelled
        if method == "cuda" or (
            method == "to" and any(not self._cpu_or_dtype(a.value) for a in call.args if a.keyword is None)
        ):
            return spelled
        device = kwarg(call, "device") or kwarg(call, "map_location")
        if device is not None and not self._cpu_or_dtype(device.value):
            return spelled
        callee = self._callee(call)
        if callee is None or depth >= CALL_DEPTH or id(callee) in seen:
            return None
        seen.add(id(callee))
        for inner in calls_in(callee.body):
            if self._work(inner, depth + 1, seen) is not None:
                return spelled
        return None

    def _callee(self, call: cst.Call) -> cst.FunctionDef | None:
        """The function of this file `call` runs: a function, a method of `self`, or a class's `__init__`."""
        callee = self.index.callee_of(call)
        if callee is not None:
            return callee
        name = dotted(call.func)
        for cls in self.index.classes:
            if cls.name.value == name:
                return self.index.methods_of(cls).get("__init__")
        return None

    def _cpu_or_dtype(self, expr: cst.BaseExpression) -> bool:
        text = string_value(expr)
        if text is not None:
            return text == "cpu"
        q = self.names.qualname(expr) or ""
        return q.startswith("torch.") and q.rsplit(".", 1)[-1] in DTYPES


DTYPES = {
    "float",
    "float16",
    "float32",
    "float64",
    "half",
    "double",
    "bfloat16",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "long",
    "uint8",
    "bool",
}


def _cuda_text(expr: cst.BaseExpression) -> bool:
    """`"cuda"`, `"cuda:1"`, `f"cuda:{rank}"`."""
    text = string_value(expr)
    if text is not None:
        return text == "cuda" or text.startswith("cuda:")
    if isinstance(expr, cst.FormattedString) and expr.parts:
        head = expr.parts[0]
        return isinstance(head, cst.FormattedStringText) and head.value.startswith("cuda:")
    return False


def _siblings(index: TreeIndex, stmt: cst.CSTNode, *, after: bool) -> list[cst.BaseStatement]:
    """The statements of `stmt`'s block after it (or before it)."""
    body = list(getattr(index.parent.get(stmt), "body", ()))
    if stmt not in body:
        return []
    i = body.index(stmt)
    return body[i + 1 :] if after else body[:i]


__all__ = ["DevicePath"]
