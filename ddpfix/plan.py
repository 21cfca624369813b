"""The edit plan: rules propose edits against the original tree; one transformer applies them all.

Edits are keyed by original nodes, so rules never see each other's output and compose through the
plan: an expression replacement inside a statement that another rule guards is applied first, then
the guard; statements inserted at the same place are ordered by their `Order` (the fixed order of the
output contract: set_device, SyncBN, then the wrap, then the optimizer). Adjacent statements that need
the same guard share one `if`.

Besides edits, the plan holds what one rule's fix tells a later one (`wraps`, `raw_names`,
`hoisted`); each rule declares which of these it provides and reads (`Rule.provides`, `Rule.reads`).
"""

from __future__ import annotations

import functools
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING

import libcst as cst

from .syntax import dotted, single_small, strip_docstring

if TYPE_CHECKING:
    from .analysis import ScriptFacts

Replacer = Callable[[cst.CSTNode], cst.CSTNode]


class Order(IntEnum):
    """Where a statement goes among others inserted at the same place: the output contract's order."""

    IMPORTS = 0
    ENVIRONMENT = 10  # RANK / LOCAL_RANK / WORLD_SIZE / DISTRIBUTED, after the imports
    SET_EPOCH = 11  # the first statement of the epoch loop
    PROCESS_GROUP = 20  # set_device + init_process_group at the top of the entry point
    NO_SYNC = 21  # the micro-step's sync decision at the top of the accumulation loop
    SET_DEVICE = 30  # before CUDA work and before init_process_group
    SYNC_BATCHNORM = 31  # before the wrap
    DOWNLOAD = 35  # the barriers around a download: after set_device, before the wrap's collectives
    SAMPLER = 40  # before the DataLoader that takes it
    WRAP = 41  # after the model is built, moved and loaded
    OPTIMIZER = 50  # after the wrap (moved optimizers keep their order: OPTIMIZER + i)
    HOISTED_COLLECTIVE = 60  # a collective moved out of a rank guard, right after it
    BARRIER = 61  # between a rank-0 save and the load of every rank
    AGREEMENT = 62  # the ranks' shared decision, before the exit it decides
    TEARDOWN = 90  # destroy_process_group at the end of the entry point


@dataclass
class PlannedWrap:
    """A DDP wrap this plan makes: how code reaches the plain module, and the statement from which on
    the handle is the wrapper (None: the model's wrap point)."""

    raw: str
    stmt: cst.CSTNode | None = None


@dataclass
class _Insert:
    order: int
    seq: int
    stmts: list[cst.BaseStatement] = field(default_factory=list)
    moved: cst.BaseStatement | None = None
    blank_after: bool = False
    rule: str | None = None  # the code of the rule that asked for it (None: shared setup, imports)


@dataclass(frozen=True)
class ImportSpec:
    module: str
    name: str | None = None  # from <module> import <name>
    asname: str | None = None

    def render(self) -> str:
        if self.name is None:
            return f"import {self.module}" + (f" as {self.asname}" if self.asname else "")
        return f"from {self.module} import {self.name}" + (f" as {self.asname}" if self.asname else "")

    @property
    def sort_key(self) -> str:
        return self.module.lower()


def blank() -> cst.EmptyLine:
    return cst.EmptyLine(indent=False)


class Plan:
    """Edits proposed by rules, applied in one pass by `apply()`."""

    def __init__(self, facts: ScriptFacts) -> None:
        self.facts = facts
        self.module: cst.Module = facts.module
        self.replacements: dict[cst.CSTNode, list[Replacer]] = {}
        self.before: dict[cst.CSTNode, list[_Insert]] = {}
        self.after: dict[cst.CSTNode, list[_Insert]] = {}
        self.prepends: dict[cst.CSTNode, list[_Insert]] = {}
        self.guards: dict[cst.CSTNode, str] = {}
        self.guard_rules: dict[cst.CSTNode, str | None] = {}  # guarded statement -> the rule that guarded it
        self.moved: set[cst.CSTNode] = set()
        self.splits: dict[cst.CSTNode, list[cst.CSTNode]] = {}  # an `if` -> statements of its body that leave it
        self.imports: list[ImportSpec] = []
        self.introduced: set[str] = set()
        self.bound: dict[str, str] = {}  # qualified name -> local spelling chosen by this plan
        self.rule: str | None = None  # the rule now proposing edits (set by the pass that runs the rules)
        self.edited: set[str] = set()  # the rules that proposed at least one edit
        self._seq = 0
        self._handed: set[int] = set()  # template statements this plan inserts (each once)
        # what one rule's fix tells a later one
        self.wraps: dict[str, PlannedWrap] = {}  # model handle -> the wrap planned for it (fixed or not)
        self.raw_names: dict[str, str] = {}  # model handle -> the name chosen for its plain module
        self.hoisted: list[cst.Call] = []  # collectives moved out of a rank guard
        # New imports go above this top-level statement (the first that needs them), set by placement.py.
        self.import_limit: cst.BaseStatement | None = None

    # ------------------------------------------------------------------ naming
    # When the preferred name is taken, a descriptive variant reads better than a number.
    VARIANTS = {
        "dist": "torch_dist",
        "DDP": "TorchDDP",
        "sampler": "dist_sampler",
        "raw_model": "unwrapped_model",
        "dataset": "base_dataset",
        "os": "_os",
        "DistributedSampler": "TorchDistributedSampler",
    }

    def fresh(self, preferred: str) -> str:
        """A name not used by the script nor by anything this plan introduced."""
        taken = self.facts.index.identifiers | self.introduced
        candidates = [preferred, self._variant(preferred)]
        name = next((c for c in candidates if c and c not in taken), None)
        i = 2
        while name is None or name in taken:
            name = f"{preferred}_{i}"
            i += 1
        self.introduced.add(name)
        return name

    def _variant(self, preferred: str) -> str | None:
        if preferred in self.VARIANTS:
            return self.VARIANTS[preferred]
        if preferred.endswith("sampler"):
            return f"dist_{preferred}"  # train_sampler -> dist_train_sampler
        if preferred.startswith("raw_"):
            return f"unwrapped_{preferred[4:]}"
        return None

    def ref(self, qualified: str, preferred: str, *, style: str = "from", via_parent: bool = False) -> str:
        """Local spelling for a module/object, importing it once if the script does not have it.

        `style` is "import" (`import torch.distributed as dist`) or "from"
        (`from torch.nn.parallel import DistributedDataParallel as DDP`).
        """
        if qualified in self.bound:
            return self.bound[qualified]
        existing = self.facts.names.alias_for(qualified, via_parent=via_parent)
        if existing is not None:
            self.bound[qualified] = existing
            return existing
        taken = self.facts.index.identifiers
        name = preferred if preferred not in taken and preferred not in self.introduced else self.fresh(preferred)
        self.introduced.add(name)
        mod, _, obj = qualified.rpartition(".")
        if style == "import":
            if name == qualified:
                spec = ImportSpec(qualified)
            else:
                spec = ImportSpec(qualified, asname=name)
        else:
            spec = ImportSpec(mod, obj, None if name == obj else name)
        self._touch()
        self.imports.append(spec)
        self.bound[qualified] = name
        return name

    # ------------------------------------------------------------------ parsing templates
    def statements(self, template: str, **names: str) -> list[cst.BaseStatement]:
        """Parse a dedented template (formatted with `names`) into statements in the file's style."""
        lead = len(template) - len(template.lstrip("\n")) - 1 if template.startswith("\n") else 0
        text = textwrap.dedent(template).strip("\n").format(**names) + "\n"
        indent = self.module.default_indent
        if indent != "    ":
            text = "\n".join(_reindent(line, indent) for line in text.split("\n"))
        # The output tree is analysed again (the second pass), and an analysis keyed on node identity
        # must not see one statement in two places: a parse already used in this plan, or already in
        # the tree being edited, is copied.
        parsed = []
        for stmt in _parse_template(text):
            if id(stmt) in self._handed or self.facts.index.indexed(stmt):
                stmt = stmt.deep_clone()
            self._handed.add(id(stmt))
            parsed.append(stmt)
        if lead and parsed:
            parsed[0] = parsed[0].with_changes(leading_lines=[blank()] * lead)
        return parsed

    def expression(self, template: str, **names: str) -> cst.BaseExpression:
        return cst.parse_expression(template.format(**names))

    # ------------------------------------------------------------------ edits
    def _touch(self) -> None:
        if self.rule is not None:
            self.edited.add(self.rule)

    def _insert(self, table: dict, key: cst.CSTNode, order: int, **kw) -> None:
        self._seq += 1
        self._touch()
        table.setdefault(key, []).append(_Insert(order, self._seq, rule=self.rule, **kw))

    def replace(self, node: cst.CSTNode, fn: Replacer) -> None:
        self._touch()
        self.replacements.setdefault(node, []).append(fn)

    def insert_before(
        self, anchor: cst.CSTNode, stmts: Sequence[cst.BaseStatement], order: int, *, blank_after: bool = False
    ) -> None:
        self._insert(self.before, anchor, order, stmts=list(stmts), blank_after=blank_after)

    def insert_after(self, anchor: cst.CSTNode, stmts: Sequence[cst.BaseStatement], order: int) -> None:
        self._insert(self.after, anchor, order, stmts=list(stmts))

    def prepend(self, block: cst.CSTNode, stmts: Sequence[cst.BaseStatement], order: int) -> None:
        self._insert(self.prepends, block, order, stmts=list(stmts))

    def move_after(self, stmt: cst.CSTNode, anchor: cst.CSTNode, order: int) -> None:
        self.moved.add(stmt)
        self._insert(self.after, anchor, order, moved=stmt)

    def move_before(self, stmt: cst.CSTNode, anchor: cst.CSTNode, order: int) -> None:
        self.moved.add(stmt)
        self._insert(self.before, anchor, order, moved=stmt)

    def guard(self, stmt: cst.CSTNode, condition: str) -> None:
        self._touch()
        self.guards.setdefault(stmt, condition)
        self.guard_rules.setdefault(stmt, self.rule)

    def split(self, branch: cst.If, leaving: cst.CSTNode) -> None:
        """`if c: a; x; b` becomes `if c: a` / `x` / `if c: b`: `leaving`, a statement of the branch's
        own body, runs outside the condition, in its place; the statements around it keep the condition."""
        self.splits.setdefault(branch, []).append(leaving)

    def is_empty(self) -> bool:
        return not (
            self.replacements
            or self.before
            or self.after
            or self.prepends
            or self.guards
            or self.imports
            or self.splits
        )

    # ------------------------------------------------------------------ apply
    def apply(self) -> cst.Module:
        if self.is_empty():
            return self.module
        self._place_imports()
        return self.module.visit(_Applier(self))

    def _place_imports(self) -> None:
        body = self.module.body
        region = []
        for stmt in body[strip_docstring(body) :]:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) or stmt is self.import_limit:
                break
            if isinstance(single_small(stmt), (cst.Import, cst.ImportFrom)):
                region.append(stmt)
        for spec in sorted(set(self.imports), key=lambda s: (s.sort_key, s.name or "")):
            stmts = self.statements(spec.render())
            section = _section(spec.module)
            same = [s for s in region if _section(_stmt_module(s)) == section]
            if section == "third" and spec.module.startswith("torch"):
                same = [s for s in same if _stmt_module(s).startswith("torch")] or same
            later = [s for s in same if _stmt_module(s).lower() > spec.sort_key]
            if later:
                self.insert_before(later[0], stmts, order=Order.IMPORTS)
            elif same:
                self.insert_after(same[-1], stmts, order=Order.IMPORTS)
            elif region and section == "stdlib":
                self.insert_before(region[0], stmts, order=Order.IMPORTS, blank_after=True)
            elif region:
                self.insert_after(region[-1], stmts, order=Order.IMPORTS)
            else:
                first = body[strip_docstring(body)] if strip_docstring(body) < len(body) else None
                if first is not None:
                    self.insert_before(first, stmts, order=Order.IMPORTS, blank_after=True)
                else:
                    self.prepend(self.module, stmts, order=Order.IMPORTS)

    def import_anchor(self) -> cst.BaseStatement | None:
        """The last top-level import statement of the file's import region (where setup code follows)."""
        body = self.module.body
        last = None
        for stmt in body[strip_docstring(body) :]:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                break
            if isinstance(single_small(stmt), (cst.Import, cst.ImportFrom)):
                last = stmt
        return last


@functools.lru_cache(maxsize=512)
def _parse_template(text: str) -> tuple[cst.BaseStatement, ...]:
    """Templates repeat from file to file: each text is parsed once per process (and copied per use)."""
    return tuple(_clean_blank_lines(s) for s in cst.parse_module(text).body)


def _reindent(line: str, indent: str) -> str:
    stripped = line.lstrip(" ")
    levels = (len(line) - len(stripped)) // 4
    return indent * levels + stripped


def _clean_blank_lines(stmt: cst.BaseStatement) -> cst.BaseStatement:
    lines = [blank() if (l.comment is None) else l for l in stmt.leading_lines]
    return stmt.with_changes(leading_lines=lines)


def _stmt_module(stmt: cst.BaseStatement) -> str:
    small = single_small(stmt)
    if isinstance(small, cst.Import):
        return dotted(small.names[0].name) or ""
    if isinstance(small, cst.ImportFrom) and small.module is not None:
        return dotted(small.module) or ""
    return ""


def _section(module: str) -> str:
    top = module.split(".")[0]
    return "stdlib" if top in sys.stdlib_module_names or top == "__future__" else "third"


class _Applier(cst.CSTTransformer):
    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan
        # Only subtrees that hold an edit are visited; the rest is kept as it is.
        self.touched: set[cst.CSTNode] = set()
        leaving = [s for stmts in plan.splits.values() for s in stmts]
        for key in (
            *plan.replacements,
            *plan.before,
            *plan.after,
            *plan.prepends,
            *plan.guards,
            *plan.moved,
            *plan.splits,
            *leaving,
        ):
            self.touched.add(key)
            self.touched.update(plan.facts.index.ancestors(key))
        self.leaving = set(leaving)
        self.final: dict[cst.CSTNode, cst.CSTNode] = {}  # a leaving statement -> its rewritten form

    def on_visit(self, node) -> bool:
        return node in self.touched

    def on_leave(self, original_node, updated_node):
        fns = self.plan.replacements.get(original_node)
        if fns:
            for fn in fns:
                updated_node = fn(updated_node)
        if isinstance(original_node, cst.IndentedBlock):
            return updated_node.with_changes(body=self._rebuild(original_node, original_node.body, updated_node.body))
        if isinstance(original_node, cst.Module):
            return updated_node.with_changes(body=self._rebuild(original_node, original_node.body, updated_node.body))
        return updated_node

    def _rebuild(self, block, originals, updated) -> list[cst.BaseStatement]:
        plan = self.plan
        mapping = {id(o): u for o, u in zip(originals, updated)}
        items: list[tuple[cst.BaseStatement, str | None]] = []

        def emit(inserts: list[_Insert]) -> list[cst.BaseStatement]:
            out: list[cst.BaseStatement] = []
            for ins in sorted(inserts, key=lambda i: (i.order, i.seq)):
                if ins.moved is not None:
                    moved = mapping.get(id(ins.moved))
                    if moved is not None:
                        out.append(moved)
                else:
                    out.extend(ins.stmts)
            return out

        for stmt in emit(plan.prepends.get(block, [])):
            items.append((stmt, None))
        for orig, upd in zip(originals, updated):
            if orig in plan.moved:
                continue
            new_before: list[cst.BaseStatement] = []
            owed = None  # the order of an insert that wants a blank line after it, until one is placed
            for ins in sorted(plan.before.get(orig, []), key=lambda i: (i.order, i.seq)):
                stmts = emit([ins])
                if stmts and owed is not None and owed != ins.order:  # `setup`, blank line, then the next kind
                    stmts[0] = stmts[0].with_changes(leading_lines=[blank(), *stmts[0].leading_lines])
                    owed = None
                new_before += stmts
                owed = ins.order if ins.blank_after else owed
            if new_before:
                new_before[0] = new_before[0].with_changes(
                    leading_lines=[*upd.leading_lines, *new_before[0].leading_lines]
                )
                lines = [blank()] if owed is not None and not upd.leading_lines else []
                upd = upd.with_changes(leading_lines=lines)
                items.extend((s, None) for s in new_before)
            if orig in self.leaving:
                self.final[orig] = upd
            pieces = self._split(orig, upd) if orig in plan.splits else [upd]
            items.extend((p, plan.guards.get(orig)) for p in pieces)
            items.extend((s, None) for s in emit(plan.after.get(orig, [])))
        return _group_guards(items)

    def _split(self, orig: cst.CSTNode, upd: cst.If) -> list[cst.BaseStatement]:
        """The pieces of a split `if`: the first keeps the original header, comments and blank lines."""
        leaving = [self.final[s] for s in self.plan.splits[orig] if s in self.final]
        pieces: list[cst.BaseStatement] = []
        current: list[cst.BaseStatement] = []

        def close() -> None:
            if not current:
                return
            if not pieces:
                pieces.append(upd.with_changes(body=upd.body.with_changes(body=list(current))))
            else:  # a new `if`: the blank lines and comments above its first statement go above it
                first = current[0]
                body = [first.with_changes(leading_lines=[]), *current[1:]]
                pieces.append(
                    cst.If(test=upd.test, body=cst.IndentedBlock(body=body), leading_lines=first.leading_lines)
                )
            current.clear()

        for stmt in upd.body.body:
            if any(stmt is s for s in leaving):
                close()
                if not pieces:
                    stmt = stmt.with_changes(leading_lines=[*upd.leading_lines, *stmt.leading_lines])
                pieces.append(stmt)
            else:
                current.append(stmt)
        close()
        return pieces


def _group_guards(items: list[tuple[cst.BaseStatement, str | None]]) -> list[cst.BaseStatement]:
    out: list[cst.BaseStatement] = []
    i = 0
    while i < len(items):
        stmt, cond = items[i]
        if cond is None:
            out.append(stmt)
            i += 1
            continue
        group = [stmt]
        j = i + 1
        while j < len(items) and items[j][1] == cond and not _has_blank_gap(items[j][0]):
            group.append(items[j][0])
            j += 1
        lead = group[0].leading_lines
        inner = [group[0].with_changes(leading_lines=[]), *group[1:]]
        out.append(cst.If(test=cst.parse_expression(cond), body=cst.IndentedBlock(body=inner), leading_lines=lead))
        i = j
    return out


def _has_blank_gap(stmt: cst.BaseStatement) -> bool:
    """A statement separated from the previous one by a blank line starts a new guard group."""
    return any(l.comment is None for l in stmt.leading_lines)
