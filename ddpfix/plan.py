"""The edit plan: rules propose edits against the original tree; one transformer applies them all.

Edits are keyed by original nodes, so rules never see each other's output and compose through the
plan: an expression replacement inside a statement that another rule guards is applied first, then
the guard; statements inserted at the same place are ordered by their `Order` (the fixed order of the
output contract: set_device, SyncBN, then the wrap, then the optimizer). Adjacent statements that need
the same guard share one `if` (applier.py; the imports a plan adds go in place first, added_imports.py).

Besides edits, the plan holds what one rule's fix tells a later one (`wraps`, `raw_names`,
`hoisted`, `cut`); each rule declares which of these it provides and reads (`Rule.provides`, `Rule.reads`).
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from .added_imports import ImportSpec, place_imports
from .applier import Applier, Insert, blank
from .order import Order
from .syntax import dotted, single_small, strip_docstring
from .unread_raws import drop_unread

if TYPE_CHECKING:
    from .analysis import ScriptFacts

Replacer = Callable[[cst.CSTNode], cst.CSTNode]


@dataclass
class PlannedWrap:
    """A DDP wrap this plan makes: how code reaches the plain module, and the statement from which on
    the handle is the wrapper (None: the model's wrap point)."""

    raw: str
    stmt: cst.CSTNode | None = None
    level: str = "safe"  # the fix level its finding offers: what is routed through it is fixed at no better one


class Plan:
    """Edits proposed by rules, applied in one pass by `apply()`."""

    def __init__(self, facts: ScriptFacts) -> None:
        self.facts = facts
        self.module: cst.Module = facts.module
        self.replacements: dict[cst.CSTNode, list[Replacer]] = {}
        self.before: dict[cst.CSTNode, list[Insert]] = {}
        self.after: dict[cst.CSTNode, list[Insert]] = {}
        self.prepends: dict[cst.CSTNode, list[Insert]] = {}
        self.guards: dict[cst.CSTNode, str] = {}
        self.guard_rules: dict[cst.CSTNode, str | None] = {}  # guarded statement -> the rule that guarded it
        # code that runs only in a plain process once the plan is applied (the branch of a DataParallel line
        # that torchrun's ranks no longer take): no rank guard goes inside it
        self.plain_only: set[cst.CSTNode] = set()
        self.unmade_guards: set[cst.CSTNode] = set()  # a check's findings: what a fix run would guard
        self.moved: set[cst.CSTNode] = set()
        self.splits: dict[cst.CSTNode, list[cst.CSTNode]] = {}  # an `if` -> statements of its body that leave it
        self.imports: list[ImportSpec] = []
        self.introduced: set[str] = set()
        self.bound: dict[str, str] = {}  # qualified name -> local spelling chosen by this plan
        self.loop_names: dict[cst.CSTNode, str] = {}  # `for _ in ...` -> the name its variable gets
        self.rule: str | None = None  # the rule now proposing edits (set by the pass that runs the rules)
        self.edited: set[str] = set()  # the rules that proposed at least one edit
        self._seq = 0
        self._handed: set[int] = set()  # template statements this plan inserts (each once)
        # what one rule's fix tells a later one
        self.wraps: dict[str, PlannedWrap] = {}  # model handle -> the wrap planned for it (fixed or not)
        self.counted: set[tuple[int, str]] = set()  # (function, loader) whose passes set the epoch (drawn_epochs)
        self.raw_names: dict[str, str] = {}  # model handle -> the name chosen for its plain module
        self.hoisted: list[cst.Call] = []  # collectives moved out of a rank guard
        self.cut: dict[cst.CSTNode, set[str]] = {}  # training loop cut by rank -> the whole run's counts it spans
        self.shared: dict[object, object] = {}  # helpers several rules' fixes share (metric_reduce.reducer_of)
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
            spec = self._import_again(existing.split(".")[0])
            if spec is not None:  # `import os` only in the `__main__` block or a function
                self._touch()
                self.imports.append(spec)
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

    def _import_again(self, name: str) -> ImportSpec | None:
        """The same import at the top of the file for `name`, where the script imports it only inside a
        block (its `__main__` block, a function): the setup and constants this plan puts at the top
        read it before that block runs. None where an import at the top level (or in a top-level
        `try:`) binds it, or where the import is relative or already added."""
        found = None
        for node in self.facts.index.imports:
            if isinstance(node.names, cst.ImportStar):
                continue
            for alias in node.names:
                if _bound_name(alias) != name:
                    continue
                parent = self.facts.index.parent
                block = parent.get(parent.get(node))
                owner = parent.get(block)
                if block is self.module or (isinstance(owner, cst.Try) and parent.get(owner) is self.module):
                    return None
                found = found or (node, alias)
        if found is None or (isinstance(found[0], cst.ImportFrom) and (found[0].relative or found[0].module is None)):
            return None
        node, alias = found
        asname = alias.asname.name.value if alias.asname is not None else None  # type: ignore[union-attr]
        if isinstance(node, cst.ImportFrom):
            spec = ImportSpec(dotted(node.module) or "", dotted(alias.name), asname)
        else:
            spec = ImportSpec(dotted(alias.name) or "", asname=asname)
        return None if spec in self.imports else spec

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
        table.setdefault(key, []).append(Insert(order, self._seq, rule=self.rule, **kw))

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
        place_imports(self)
        applier = Applier(self)
        module = self.module.visit(applier)
        if drop_unread(self, applier.replaced):  # `raw_model = model` that no edit reads: applied again without
            module = self.module.visit(Applier(self))
        return module

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


__all__ = ["ImportSpec", "Order", "Plan", "PlannedWrap", "Replacer", "blank"]


def _bound_name(alias: cst.ImportAlias) -> str:
    """The name an import alias binds: `dist` for `torch.distributed as dist`, `os.path` binds `os`."""
    if alias.asname is not None:
        return alias.asname.name.value  # type: ignore[union-attr]
    return (dotted(alias.name) or "").split(".")[0]
