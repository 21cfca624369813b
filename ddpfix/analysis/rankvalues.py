"""What an expression is worth on rank 0 and on the other ranks of a distributed run.

The rank detector reads every condition and every value through one small evaluator. In a
distributed run rank 0 has rank 0 and every other rank some k >= 1; `dist.is_initialized()` is true.
An expression is then one of

    RANK     the integer rank: `rank`, `args.local_rank`, `dist.get_rank()`, `int(os.environ["RANK"])`,
             `args.rank % ngpus_per_node` (0 on rank 0, k >= 1 elsewhere, on one node)
    BOOL     a truth value, told apart for rank 0 (`zero`) and the others (`other`), each True, False
             or None (unknown): `rank == 0` is (True, False), `not rank` too, `rank in (-1, 0)` too,
             `is_main_process()` too; `int(os.environ.get("RANK", -1)) != -1` is (True, True), a
             flag that every rank shares, not a rank test
    CONST    a literal, the same everywhere
    SAME     unknown, but the same on every rank (`args.epochs`, `len(loader)`)
    VARIES   unknown, and it may differ between ranks (`f"log_{rank}.txt"`, `data[rank]`, `seed + rank`)

Names are read through their assignments anywhere in the file (`is_master = utils.is_main_process()`,
`master_process = ddp_rank == 0`), calls through the functions of this file they reach (a helper
that returns a rank test is one, transitively) and through the script's own modules (RANK_TEST);
a name no assignment explains is read by its spelling (`args.local_rank`, `accelerator.is_main_process`,
`trainer.is_global_zero`).

The values and how they combine: rank_value.py; what is read by spelling: rank_spellings.py.
"""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from ..syntax import child_nodes, dotted
from .index import TreeIndex
from .modules import LocalModules
from .names import Names
from .rank_spellings import (
    NODE_ATTRIBUTE,
    NODE_SPELLING,
    RANK_CALLS,
    RANK_ENV,
    RANK_SPELLING,
    TEST_SPELLING,
    TRUE_WHEN_DISTRIBUTED,
    builds_text,
)
from .rank_value import (
    BOOL,
    COMPARISONS,
    CONST,
    NODE,
    NODE_VALUE,
    OTHER_RANKS,
    RANK,
    RANK0_TEST,
    RANK_VALUE,
    SAME,
    SAME_VALUE,
    VARIES,
    VARIES_VALUE,
    Value,
    and_,
    apply_op,
    boolean,
    or_,
    sampled,
)
from .summaries import RANK_TEST


class RankValues:
    """Evaluates expressions of one file for rank 0 and the other ranks (memoised per node)."""

    def __init__(self, index: TreeIndex, names: Names, modules: LocalModules) -> None:
        self.index = index
        self.names = names
        self.modules = modules
        self._memo: dict[cst.CSTNode, Value] = {}
        self._by_name: dict[str, Value] = {}
        self._returns: dict[cst.FunctionDef, Value] = {}
        self._active: set = set()
        self._bindings: dict[str, list[tuple[cst.BaseExpression, bool]]] | None = None

    # ------------------------------------------------------------------ entry point
    def of(self, node: cst.CSTNode) -> Value:
        value = self._memo.get(node)
        if value is None:
            if node in self._active or len(self._active) > 150:
                return SAME_VALUE  # a name defined through itself
            self._active.add(node)
            try:
                value = self._eval(node)
            finally:
                self._active.discard(node)
            self._memo[node] = value
        return value

    def truth(self, node: cst.CSTNode) -> tuple[bool | None, bool | None, bool]:
        return self.of(node).truth()

    # ------------------------------------------------------------------ evaluation
    def _eval(self, node: cst.CSTNode) -> Value:
        if type(node) in (cst.Name, cst.Attribute) and dotted(node) is not None:
            return self.name(dotted(node) or "")
        if type(node) is cst.Attribute:  # `f().x`: what it is read from
            return VARIES_VALUE if self.of(node.value).varies else SAME_VALUE
        if type(node) is cst.Integer:
            return Value(CONST, node.evaluated_value)
        if type(node) is cst.SimpleString:
            return Value(CONST, node.evaluated_value)
        if type(node) is cst.UnaryOperation:
            inner = self.of(node.expression)
            if type(node.operator) is cst.Not:
                z, o, v = inner.truth()
                return boolean(None if z is None else not z, None if o is None else not o, v)
            if type(node.operator) is cst.Minus and inner.kind == CONST and isinstance(inner.zero, int):
                return Value(CONST, -inner.zero)
            return VARIES_VALUE if inner.varies else SAME_VALUE
        if type(node) is cst.BooleanOperation:
            return self._boolean_op(node)
        if type(node) is cst.Comparison:
            return self._comparison(node)
        if type(node) is cst.BinaryOperation:
            left = self.of(node.left)
            if left.kind == RANK and type(node.operator) is cst.Modulo:
                return RANK_VALUE  # `args.rank % ngpus_per_node`: the rank on its node
            return VARIES_VALUE if left.varies or self.of(node.right).varies else SAME_VALUE
        if type(node) in (cst.Tuple, cst.List, cst.Set):
            values = [self.of(e.value) for e in node.elements if type(e) is not cst.StarredElement]
            if len(values) == len(node.elements) and all(v.kind == CONST for v in values):
                return Value(CONST, tuple(v.zero for v in values))
            return VARIES_VALUE if any(v.varies for v in values) else SAME_VALUE
        if type(node) is cst.Call:
            return self._call(node)
        if type(node) is cst.Subscript:
            return self._subscript(node)
        return self._generic(node)

    def _generic(self, node: cst.CSTNode) -> Value:
        for child in child_nodes(node):
            if isinstance(child, cst.BaseExpression) or not isinstance(child, cst.BaseStatement):
                if self.of(child).varies:
                    return VARIES_VALUE
        return SAME_VALUE

    def _boolean_op(self, node: cst.BooleanOperation) -> Value:
        lz, lo, lv = self.truth(node.left)
        rz, ro, rv = self.truth(node.right)
        if isinstance(node.operator, cst.And):
            combine = and_
        else:
            combine = or_
        z, o = combine(lz, rz), combine(lo, ro)
        if z is not None and z == o:
            return Value(BOOL, z, o)
        return boolean(z, o, lv or rv)

    def _comparison(self, node: cst.Comparison) -> Value:
        if len(node.comparisons) != 1:
            return VARIES_VALUE if self._generic(node).varies else SAME_VALUE
        comp = node.comparisons[0]
        op = COMPARISONS.get(type(comp.operator))
        left, right = self.of(node.left), self.of(comp.comparator)
        if op is None:
            return VARIES_VALUE if left.varies or right.varies else SAME_VALUE
        if left.kind == RANK and right.kind == CONST:
            return sampled(lambda k: op(k, right.zero))
        if right.kind == RANK and left.kind == CONST:
            return sampled(lambda k: op(left.zero, k))
        if NODE in (left.kind, right.kind) and CONST in (left.kind, right.kind):  # the others may share node 0
            if left.kind == NODE:
                return sampled(lambda k: op(k, right.zero), (0, *OTHER_RANKS))
            return sampled(lambda k: op(left.zero, k), (0, *OTHER_RANKS))
        if left.kind in (BOOL, CONST) and right.kind == CONST and not (left.kind == BOOL and left.varies):
            z = left.truth()[0] if left.kind == BOOL else left.zero
            try:
                result = bool(op(z, right.zero))
            except Exception:
                return SAME_VALUE
            return Value(BOOL, result, result)
        if left.kind == BOOL and right.kind == CONST:
            return boolean(apply_op(op, left.zero, right.zero), apply_op(op, left.other, right.zero), True)
        if left.varies or right.varies:
            return VARIES_VALUE
        return SAME_VALUE

    def _call(self, call: cst.Call) -> Value:
        func = call.func
        name = dotted(func) or ""
        last = name.rsplit(".", 1)[-1]
        qual = self.names.call_qual(call) or name
        args = [a.value for a in call.args]
        if name in ("int", "float", "str") and len(args) == 1:
            return self.of(args[0])
        if name == "bool" and len(args) == 1:
            return boolean(*self.truth(args[0]))
        if qual in ("os.environ.get", "os.getenv") and args:
            first = self.of(args[0])
            return RANK_VALUE if first.kind == CONST and first.zero in RANK_ENV else SAME_VALUE
        if qual in TRUE_WHEN_DISTRIBUTED:
            return Value(CONST, True)
        if RANK_CALLS.search(last):
            return RANK_VALUE
        if last and TEST_SPELLING.search(last):
            return RANK0_TEST
        callee = self.index.callee_of(call)
        if callee is not None:
            returned = self.returns(callee)
            if returned.kind in (RANK, BOOL):
                return returned
        elif self.modules.call_does(call, RANK_TEST):
            return RANK0_TEST
        if builds_text(qual, func) and (
            any(self.of(a).varies for a in args) or (isinstance(func, cst.Attribute) and self.of(func.value).varies)
        ):
            return VARIES_VALUE  # os.path.join(out, f"train_{rank}.log"), "log_{}.txt".format(rank)
        if any(self.of(a).kind == RANK for a in args):
            return VARIES_VALUE  # hash(rank), torch.device("cuda", local_rank)
        return SAME_VALUE  # what calls make of values computed per rank (`x.to(device)`) is not a rank

    def _subscript(self, node: cst.Subscript) -> Value:
        if self.names.qualname(node.value) == "os.environ" and len(node.slice) == 1:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and self.of(index.value).kind == CONST:
                return RANK_VALUE if self.of(index.value).zero in RANK_ENV else SAME_VALUE
        return self._generic(node)

    # ------------------------------------------------------------------ names and helpers
    @property
    def bindings(self) -> dict[str, list[tuple[cst.BaseExpression, bool]]]:
        """Every assigned name (`x`, `self.x`, `args.rank`) -> the values assigned to it, each with
        whether it is what a tuple was unpacked from (`rank, world = get_dist_info()`)."""
        if self._bindings is None:
            out: dict[str, list[tuple[cst.BaseExpression, bool]]] = {}
            for assign in self.index.assigns:
                for target in assign.targets:
                    _bind(out, target.target, assign.value)
            self._bindings = out
        return self._bindings

    def name(self, spelled: str) -> Value:
        if spelled in ("True", "False", "None"):
            return Value(CONST, {"True": True, "False": False, "None": None}[spelled])
        cached = self._by_name.get(spelled)
        if cached is not None:
            return cached
        if spelled in self._active:
            return SAME_VALUE
        self._active.add(spelled)
        try:
            value = self._name(spelled)
        finally:
            self._active.discard(spelled)
        self._by_name[spelled] = value
        return value

    def _name(self, spelled: str) -> Value:
        last = spelled.rsplit(".", 1)[-1]
        by_spelling = (
            NODE_VALUE
            if NODE_SPELLING.search(last) or NODE_ATTRIBUTE.search(spelled)
            else RANK_VALUE
            if RANK_SPELLING.search(last)
            else RANK0_TEST
            if TEST_SPELLING.search(last)
            else None
        )
        assigned = self.bindings.get(spelled, [])
        values = [self._element(self.of(v)) if whole else self.of(v) for v, whole in assigned]
        for kind in (RANK, BOOL, NODE):
            found = [v for v in values if v.kind == kind and v.varies]
            if found:
                return found[0]
        if any(v.kind == VARIES for v in values):
            return by_spelling or VARIES_VALUE
        flags = [v for v in values if v.kind == BOOL]
        if flags and any(
            isinstance(e, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)) for e, _ in assigned
        ):
            return flags[0] if all(f == flags[0] for f in flags) else SAME_VALUE  # `ddp = ... != -1`: a flag
        if by_spelling is not None:
            return by_spelling
        if len(values) == 1 and values[0].kind == CONST and not (self._rebinds_globals and "." not in spelled):
            return values[0]
        return SAME_VALUE

    @cached_property
    def _rebinds_globals(self) -> bool:
        """Does the script rebind its module-level names at run time (`exec(open("configurator.py").read())`,
        `globals().update(config)`)? A constant there is only a default."""
        for call in self.index.calls:
            func = call.func
            if dotted(func) == "exec" or (
                isinstance(func, cst.Attribute)
                and func.attr.value == "update"
                and isinstance(func.value, cst.Call)
                and dotted(func.value.func) == "globals"
            ):
                return True
        return False

    @staticmethod
    def _element(whole: Value) -> Value:
        """One element of a tuple unpacked from `whole`."""
        return VARIES_VALUE if whole.varies else SAME_VALUE

    def returns(self, func: cst.FunctionDef) -> Value:
        """What `func` returns, joined over its return statements (a rank or a rank test wins)."""
        cached = self._returns.get(func)
        if cached is not None:
            return cached
        if func in self._active:
            return SAME_VALUE
        self._active.add(func)
        try:
            values = []
            for node in _returns(func.body):
                if node.value is not None:
                    values.append(self.of(node.value))
        finally:
            self._active.discard(func)
        value = SAME_VALUE
        for kind in (RANK, BOOL):
            found = [v for v in values if v.kind == kind and v.varies]
            if found:
                value = found[0]
                break
        else:
            if any(v.varies for v in values):
                value = VARIES_VALUE
        self._returns[func] = value
        return value


def _bind(out: dict, target: cst.BaseExpression, value: cst.BaseExpression, whole: bool = False) -> None:
    """`whole`: `value` is what a tuple was unpacked from, not this target's own value."""
    if isinstance(target, (cst.Tuple, cst.List)):
        elements = [e.value for e in target.elements]
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements) and not whole:
            for t, e in zip(elements, value.elements):
                _bind(out, t, e.value)
        else:
            for t in elements:
                _bind(out, t, value, whole=True)
        return
    name = dotted(target)
    if name is not None:
        out.setdefault(name, []).append((value, whole))


def _returns(node: cst.CSTNode):
    """Return statements of a function body, not of functions nested in it."""
    for child in child_nodes(node):
        if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(child, cst.Return):
            yield child
        else:
            yield from _returns(child)


__all__ = ["BOOL", "CONST", "RANK", "SAME", "VARIES", "RankValues", "Value", "TEST_SPELLING", "RANK_SPELLING"]
