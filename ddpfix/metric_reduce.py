"""DDP409's fix on a script ddpfix converts: a shown total reduced over the ranks just before it is shown.

`print(f"loss {running_loss / i:.4f}")` over a sharded loader becomes

    avg_running_loss = reduce_over_ranks(running_loss, average=True)
    if RANK == 0:
        print(f"loss {avg_running_loss / i:.4f}")

with one module-level helper that is the identity in a single process, so `python train.py` prints
what it printed. Which reduction a total needs follows from how it is shown (or from how the script
divided it in place before: `total = total / len(loader.sampler)`): divided by a count that is itself
per rank (the batch index, `len(loader)`, `len(loader.sampler)`, another total, a constant number of steps) it is
averaged over the ranks (a ratio of two averages is the ratio of the two sums); shown as it is, or
divided by the size of a dataset (the same on every rank) or by the whole run's count of batches that
a loop cut by rank ranges over (`range(RANK, num_batches, WORLD_SIZE)`), it is summed. A total used both ways, or a
statement that not every rank reaches alike (inside a `while`, or under a condition that reads
anything the loops change other than their step counters), is left as a report.
"""

from __future__ import annotations

import libcst as cst

from .analysis.flow import binds, read_names
from .module_functions import add_module_function
from .order import Order
from .reduction_ops import AVG, SUM, dict_of_totals, ratio_partners, reduction, with_ratios
from .syntax import code_of, dotted, walk

MEAN = "mean"  # a mean of a list of this rank's values, averaged over the ranks as a whole
LIST_UPDATES = ("append", "extend", "clear", "insert", "pop")  # what changes a list between two statements
HELPER = '''
def {fn}(value, average=False):
    """`value` summed over every rank (averaged with `average=True`); `value` itself in a single process."""
    if not {distributed}:
        return value
    total = {torch}.as_tensor(value, dtype={torch}.float64).detach().cpu().clone()
    {dist}.all_reduce(total)
    if average:
        total /= {world}
    if isinstance(value, {torch}.Tensor):  # the same kind of value back: `.item()` still works on it
        return total.to(value.device, value.dtype if value.is_floating_point() else total.dtype)
    if type(value).__module__ == "numpy":
        return total.numpy()
    if isinstance(value, int) and not average:  # a count summed stays a whole number
        return int(total.item())
    return total.item() if total.dim() == 0 else total.tolist()
'''


class MetricReducer:
    """Plans the reductions of one script; the helper function is added once, before the first use."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.helper: str | None = None
        self.names: dict[tuple[str, str], str] = {}  # (total, reduction) -> the name it is shown by
        self.before: set[tuple[cst.CSTNode, str, str]] = set()  # (statement, total, reduction) planned
        self.meters_first: dict[tuple[cst.CSTNode, str], cst.CSTNode] = {}  # (binding, meter) -> where it is reduced
        self.meters_why: dict[tuple[cst.CSTNode, str], str | None] = {}  # why a meter is not reduced (None: it is)
        self.meters_planned: set[tuple[cst.CSTNode, str]] = set()
        self.meters_copied: set[tuple[cst.CSTNode, tuple[cst.CSTNode, str]]] = (
            set()
        )  # (statement, meter) shown by a copy
        self.derived: set[cst.CSTNode] = set()  # derivations (or returns) of a shown value whose totals are reduced
        self.problem: str | None = None  # why the last `reductions` found none

    def reductions(
        self,
        call: cst.CSTNode,
        sharded: set[str],
        loaders: set[str],
        at: cst.CSTNode | None = None,
        bounds: frozenset[str] = frozenset(),
    ) -> dict[str, str] | None:
        """The reduction each total shown by `call` needs, reduced before the statement `at` (default:
        the one that holds `call`); None when reducing them there is not safe (`problem` says why). `bounds`: counts of the
        whole run's batches that loops cut by rank range over (`num_batches` of `range(RANK,
        num_batches, WORLD_SIZE)`): a total divided by one is summed, as over a dataset's size."""
        index = self.ctx.facts.index
        stmt = at if at is not None else index.site(call).stmt
        self.problem = None
        if index.in_one_line_suite(stmt):
            self.problem = "the statement shares its line with another"
            return None
        if not reached_alike(self.ctx.facts, stmt):
            self.problem = "not every rank reaches it alike"
            return None
        ops: dict[str, str | None] = {}  # in the order they are shown (None: only in ratios so far)
        ratios: list[tuple[str, set[str]]] = []  # a total and those it is in a ratio with
        for name in _shown(index, call, sharded):
            if dict_of_totals(index, name.value, stmt):
                self.problem = f"{name.value} is a dict of totals: all-reduce each of its values"
                return None
            partners = ratio_partners(index, call, name, sharded)
            if partners:
                ratios.append((name.value, partners))
                ops.setdefault(name.value, None)
                continue
            op = reduction(index, call, name, loaders, bounds)
            if ops.setdefault(name.value, op) not in (None, op):
                self.problem = f"{name.value} is shown both as a sum and as an average over the ranks"
                return None
            ops[name.value] = op
        out = with_ratios(ops, ratios)
        if out is None:
            self.problem = "the two sides of a ratio need different reductions"
        return out or None

    def plan(self, call: cst.CSTNode, ops: dict[str, str], at: cst.CSTNode | None = None) -> None:
        """Reduce the totals just before the statement that shows them (or `at`, the rank-0 guard around
        it), and show the reduced values."""
        plan = self.ctx.plan
        stmt = at if at is not None else self.ctx.facts.index.site(call).stmt
        fn = self.helper_at(stmt)
        reduced = {}
        for v, op in ops.items():
            if (v, op) not in self.names:  # one name for one reduction, assigned before each statement that shows it
                self.names[v, op] = plan.fresh(f"{'avg' if op == AVG else 'global'}_{v}")
            reduced[v] = self.names[v, op]
        lines = [
            f"{reduced[v]} = {fn}({v}, average=True)" if op == AVG else f"{reduced[v]} = {fn}({v})"
            for v, op in ops.items()
            if not self._reduced_just_before(stmt, v, op)  # two prints in a row: reduced once before the first
        ]
        self.before |= {(stmt, v, op) for v, op in ops.items()}
        if lines:
            plan.insert_before(stmt, plan.statements("\n".join(lines)), Order.REDUCED_METRIC)
        for name in _shown(self.ctx.facts.index, call, set(ops)):
            plan.replace(name, lambda n, new=reduced[name.value]: n.with_changes(value=new))

    def plan_derived(self, derived, ops: dict[str, str]) -> None:
        """Reduce the totals a shown value is derived from (derived_metrics.Derived) just before the statement
        that derives it, which then reads the reduced totals; once, whichever rules show the value."""
        if derived.node not in self.derived:
            self.derived.add(derived.node)
            self.plan(derived.node, ops, derived.stmt)

    def mean_problem(self, at: cst.CSTNode) -> str | None:
        """Why a list's mean cannot be averaged just before the statement `at` (None: it can)."""
        index = self.ctx.facts.index
        if index.in_one_line_suite(at) or not reached_alike(self.ctx.facts, at):
            return "not every rank reaches the statement alike"
        return None

    def plan_mean(self, mean: cst.BaseExpression, name: str, at: cst.CSTNode) -> None:
        """Average the mean `mean` of this rank's list `name` (`np.mean(losses)`) over the ranks just before
        the statement `at`, once for consecutive statements that read it with no change of the list
        between them; the statement reads the averaged value (`avg_losses`)."""
        plan = self.ctx.plan
        fn = self.helper_at(at)
        if (name, MEAN) not in self.names:
            self.names[name, MEAN] = plan.fresh(f"avg_{name}")
        new = self.names[name, MEAN]
        if not self._reduced_just_before(at, name, MEAN, LIST_UPDATES):
            line = f"{new} = {fn}({code_of(mean)}, average=True)"
            plan.insert_before(at, plan.statements(line), Order.REDUCED_METRIC)
        self.before.add((at, name, MEAN))
        plan.replace(mean, lambda n: cst.Name(new))

    def meter_problem(self, shown: list, at: cst.CSTNode) -> str | None:
        """Why the meters `shown` (analysis.meters.Shown) cannot have their totals reduced just before the
        statement `at`; None when they can. A meter that keeps accumulating over a loop around `at` (a
        running average printed every few steps) is shown through a copy with the totals reduced, so
        that the meter itself goes on counting this rank's shard. Any other is reduced in place once,
        before the first statement that shows it; a later one is fixed by that reduction where it
        follows it in the same block."""
        facts = self.ctx.facts
        index = facts.index
        if index.in_one_line_suite(at) or not reached_alike(facts, at):
            return "not every rank reaches the statement alike"
        for s in shown:
            key = (s.origin, s.name)
            why = _class_problem(s.meter)
            if why is not None:
                return why
            if self._accumulates(s, at):
                self.meters_copied.add((at, key))
                continue
            first = self.meters_first.setdefault(key, at)
            if key not in self.meters_why:
                self.meters_why[key] = self._updated_after(s, at)
            if self.meters_why[key] is not None:
                return self.meters_why[key]
            if first is not at and not (index.parent.get(first) is index.parent.get(at) and index.before(first, at)):
                return f"{s.name} is shown in more than one block"
        return None

    def _accumulates(self, s, at: cst.CSTNode) -> bool:
        """Does the meter of `s` go on accumulating over a loop around `at` (made before that loop)?"""
        index = self.ctx.facts.index
        loops = (a for a in _within(index, at, index.scope_of(at)) if isinstance(a, (cst.For, cst.While)))
        return any(not index.contains(a, s.origin) for a in loops)

    def _updated_after(self, s, at: cst.CSTNode) -> str | None:
        """Why the meter of `s` cannot be reduced in place before `at`: it is updated again after it."""
        index = self.ctx.facts.index
        scope = index.scope_of(at)
        for call in index.calls:
            func = call.func
            if (
                index.scope_of(call) is scope
                and index.before(at, call)
                and isinstance(func, cst.Attribute)
                and dotted(func.value) == s.name
                and func.attr.value in s.meter.updates
            ):
                return f"{s.name} is updated again after it is shown"
        return None

    def plan_meters(self, shown: list, at: cst.CSTNode, call: cst.Call | None = None) -> None:
        """Reduce the totals of each meter of `shown` just before `at` and put them back in the meter, once
        per meter: what the class computes from them (`average = sum / count`) is then the global value.
        A meter that keeps accumulating is copied (`copy.copy`) and the copy, reduced, is what `call`
        shows."""
        lines, shown_as = [], {}
        for s in shown:
            key = (s.origin, s.name)
            fn = self.helper_at(at)
            if (at, key) in self.meters_copied:
                if (s.name, "meter") not in self.names:  # (fresh() reserves the name it gives)
                    self.names[s.name, "meter"] = self.ctx.plan.fresh(f"global_{s.name}")
                new = self.names[s.name, "meter"]
                shown_as[s.name] = new
                done = self._reduced_just_before(at, s.name, "meter", s.meter.updates)
                self.before.add((at, s.name, "meter"))
                if done:  # two prints in a row: one copy before the first
                    continue
                lines.append(f"{new} = {self.ctx.plan.ref('copy', 'copy', style='import')}.copy({s.name})")
                lines += [f"{new}.{a} = {fn}({s.name}.{a})" for a in s.meter.summed]
                lines += [f"{new}.{a} = {_on(new, value)}" for a, value in s.meter.derived]
                continue
            if key in self.meters_planned:
                continue
            self.meters_planned.add(key)
            lines += [f"{s.name}.{a} = {fn}({s.name}.{a})" for a in s.meter.summed]
            lines += [f"{s.name}.{a} = {_on(s.name, value)}" for a, value in s.meter.derived]
        if lines:
            self.ctx.plan.insert_before(at, self.ctx.plan.statements("\n".join(lines)), Order.REDUCED_METRIC)
        if call is not None:
            for name in _shown(self.ctx.facts.index, call, set(shown_as)):
                self.ctx.plan.replace(name, lambda n, new=shown_as[name.value]: n.with_changes(value=new))

    def _reduced_just_before(self, stmt: cst.CSTNode, v: str, op: str, updates=()) -> bool:
        """Is `v` reduced (`op`) before `stmt` already, or before a statement of the same block above it
        with nothing in between that changes `v` (binds it, or calls one of its `updates` methods)?"""
        if (stmt, v, op) in self.before:
            return True
        block = self.ctx.facts.index.parent.get(stmt)
        body = list(getattr(block, "body", ()))
        if stmt not in body:
            return False
        for prev in reversed(body[: body.index(stmt)]):
            if (prev, v, op) in self.before:
                return True
            if v in binds(prev) or any(
                isinstance(c, cst.Call) and dotted(c.func) in {f"{v}.{u}" for u in updates} for c in walk(prev)
            ):
                return False
        return False

    def helper_at(self, stmt: cst.CSTNode) -> str:
        if self.helper is None:
            ctx = self.ctx
            plan = ctx.plan
            self.helper = plan.fresh("reduce_over_ranks")
            code = HELPER.format(
                fn=self.helper,
                distributed=ctx.env("DISTRIBUTED"),
                world=ctx.env("WORLD_SIZE"),
                torch=plan.ref("torch", "torch", style="import"),
                dist=plan.ref("torch.distributed", "dist", style="import"),
            )
            add_module_function(ctx, stmt, code, Order.REDUCED_METRIC)
        return self.helper


def reducer_of(ctx) -> MetricReducer:
    """The pass's one reducer: the rules that reduce a metric (DDP409, DDP313) share its helper function and
    the names it gives reduced values."""
    reducer = ctx.plan.shared.get(MetricReducer)
    if reducer is None:
        reducer = ctx.plan.shared[MetricReducer] = MetricReducer(ctx)
    return reducer


def _shown(index, call: cst.CSTNode, totals: set[str]) -> list[cst.Name]:
    """The reads of `totals` in `call`: not an attribute's name (`stats.total`) nor a keyword (`total=`)."""
    out = []
    for n in walk(call):
        if not (isinstance(n, cst.Name) and n.value in totals):
            continue
        parent = index.parent.get(n)
        if (isinstance(parent, cst.Attribute) and parent.attr is n) or (
            isinstance(parent, cst.Arg) and parent.keyword is n
        ):
            continue
        out.append(n)
    return out


def _class_problem(meter) -> str | None:
    """Why no meter of this class can have its totals reduced: it keeps other state as it updates, or its
    totals do not start as numbers."""
    if meter.stored:
        stored = ", ".join(f"self.{a}" for a in meter.stored)
        return f"{meter.name} also stores {stored} as it updates, which reducing its totals would leave as this rank's"
    if not meter.numeric:
        return f"{meter.name}'s totals do not all start as numbers in __init__"
    return None


def _within(index, node: cst.CSTNode, scope: cst.CSTNode) -> list[cst.CSTNode]:
    """The ancestors of `node` inside `scope`."""
    out = []
    for anc in index.ancestors(node):
        if anc is scope:
            break
        out.append(anc)
    return out


def reached_alike(facts, stmt: cst.CSTNode) -> bool:
    """Does every rank reach `stmt` as often as every other: no `while` around it, no loop over something
    that depends on the rank, and no condition that reads what the loops change, other than their
    step counters (`if i % 100 == 0:`)?"""
    index = facts.index
    scope = index.scope_of(stmt)
    changed: set[str] = set()
    counters: set[str] = set()
    for loop in index.loops:
        if index.scope_of(loop) is scope:
            changed |= binds(loop)
    for anc in index.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            break
        if isinstance(anc, cst.While):
            return False
        if isinstance(anc, cst.For):
            if facts.ranks.depends_on_rank(anc.iter):
                return False
            counters |= _counters(index, anc)
    for anc in index.ancestors(stmt):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            break
        if isinstance(anc, cst.If) and read_names(anc.test) & (changed - counters):
            return False
    return True


def _counters(index, loop: cst.For) -> set[str]:
    """The step counter a loop binds: `i` of `for i in range(n)` and of `for i, batch in enumerate(...)`, also
    through a progress bar (`tqdm(enumerate(loader))`, or a name bound to one in the loop's function)."""
    it = _progress_bar_of(index, loop, loop.iter)
    if isinstance(it, cst.Call) and dotted(it.func) == "range" and isinstance(loop.target, cst.Name):
        return {loop.target.value}
    if isinstance(it, cst.Call) and dotted(it.func) == "enumerate" and isinstance(loop.target, cst.Tuple):
        first = loop.target.elements[0].value
        return {first.value} if isinstance(first, cst.Name) else set()
    return set()


def _progress_bar_of(index, loop: cst.For, it: cst.BaseExpression) -> cst.BaseExpression:
    """What a progress bar the loop runs over wraps (`enumerate(loader)` of `tqdm(enumerate(loader), ...)`, or
    of `bar` bound to one once in the loop's function); `it` itself otherwise."""
    if type(it) is cst.Name:
        scope = index.scope_of(loop)
        bound = [
            a.value
            for a in index.assigns
            if index.scope_of(a) is scope and [dotted(t.target) for t in a.targets] == [it.value]
        ]
        it = bound[0] if len(bound) == 1 else it
    if (
        type(it) is cst.Call
        and (dotted(it.func) or "").rsplit(".", 1)[-1] == "tqdm"
        and it.args
        and not it.args[0].keyword
    ):
        return it.args[0].value
    return it


def _on(name: str, formula: cst.BaseExpression) -> str:
    """A meter's formula over its totals (`self.sum / self.count`) as the script reads it (`losses.sum /
    losses.count`)."""

    class Receiver(cst.CSTTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
            return updated.with_changes(value=name) if updated.value == "self" else updated

    return code_of(formula.visit(Receiver()))


__all__ = ["AVG", "SUM", "MetricReducer", "reached_alike", "reducer_of", "reduction"]
