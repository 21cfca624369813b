"""What a rule is, and the context it runs in (facts to read, a plan to edit, a place to report)."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from .analysis import ScriptFacts
from .analysis.flow import binds, reads
from .diagnostic import NONE, SAFE, UNSAFE, Diagnostic
from .placement import Placement
from .plan import Order, Plan
from .syntax import assign_targets

ENV_DEFAULTS = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"}
# What needs the process group to exist, by qualified name: code using them goes after the setup.
PROCESS_GROUP_USERS = (
    "torch.distributed",
    "torch.nn.parallel.DistributedDataParallel",
    "torch.utils.data.distributed.DistributedSampler",
)
# Where the script joins its process group on its own terms, these are read at run time.
# (A spawned process's LOCAL_RANK is the device mp.spawn's index picked: set_device ran before init.)
RUNTIME = {
    "DISTRIBUTED": "{dist}.is_initialized()",
    "RANK": "({dist}.get_rank() if {dist}.is_initialized() else 0)",
    "LOCAL_RANK": "{torch}.cuda.current_device()",
}
SELF_STARTED = ("mp.spawn", "multiprocessing.Process")  # launch paths whose processes the script starts
ENV_FALLBACK_NAMES = {
    "RANK": "GLOBAL_RANK",
    "LOCAL_RANK": "NODE_LOCAL_RANK",
    "WORLD_SIZE": "NUM_PROCESSES",
    "DISTRIBUTED": "IS_DISTRIBUTED",
}


class Rule:
    """One rule: a stable code, a one-line message, docs, a fix level and `run()`.

    `docs` is Markdown with the sections What / Why / Example / Fix safety; `ddpfix rules` and
    docs/rules.md are generated from it, so the text cannot drift from the code.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    fix: ClassVar[str] = SAFE
    requires: ClassVar[tuple[str, ...]] = ()  # rules whose fixes this rule's fix needs (DDP201 needs DDP001)
    provides: ClassVar[frozenset[str]] = frozenset()  # plan state this rule fills: "wraps", "hoisted", "joins"
    # plan state this rule reads: its providers run first (what only `after_plan` reads, any of them)
    reads: ClassVar[frozenset[str]] = frozenset()
    docs: ClassVar[str] = ""
    info: ClassVar[bool] = False  # its lines inform (no problem to fix): `check` does not fail on them
    # its fix means something only in a script that runs distributed (a rank-0 guard, a per-rank
    # device): no fix where DDP001 finds a script to set up but cannot make it distributed here
    distributed_only: ClassVar[bool] = False

    @property
    def needs_distributed(self) -> bool:
        """Is its fix made at no better level than the script becomes distributed at: it means something
        only in a distributed script, or it needs DDP001's process group (a DDP wrap, a sampler)?"""
        return self.distributed_only or "DDP001" in self.requires

    def run(self, ctx: "Context") -> None:  # pragma: no cover - every rule overrides
        raise NotImplementedError

    def after_plan(self, ctx: "Context") -> None:
        """A second look, once every rule has proposed its edits: for what only the whole plan shows
        (the statements other rules guard to rank 0). Most rules have none."""


# fix levels from the most to the least available
_WEAKER = {SAFE: 0, UNSAFE: 1, NONE: 2}


class Context:
    """Handed to each rule: `facts` to read, `plan` to edit, `report()` to record a finding."""

    def __init__(self, facts: ScriptFacts, fixing: set[str], unsafe_fixes: bool) -> None:
        self.facts = facts
        self.plan = Plan(facts)
        self.fixing = fixing
        self.unsafe_fixes = unsafe_fixes
        self.diagnostics: list[Diagnostic] = []
        self.rule: Rule | None = None
        self.suppressions = None  # suppress.Suppressions: `# ddpfix: ignore[...]` comments of this source
        self._env: dict[str, str] = {}
        self._env_missing: list[str] = []
        self._setup: tuple[list[cst.BaseStatement], int] | None = None
        # where DDP001's setup joins the process group: the module (a setup at module level, placed by
        # `finish`) or the entry function (at the top of its body); None: it sets up none
        self.joins_at: cst.Module | cst.FunctionDef | None = None
        self._requested: set[str] = set()
        self.blocked: set[str] = set()  # rules whose fix others require but that could not fix here
        # how the script becomes distributed: SAFE (it is, or DDP001's safe fix makes it so), UNSAFE
        # (only through DDP001's unsafe fix), NONE (DDP001 cannot make it so here)
        self.distributed_fix = SAFE
        self._elsewhere: str | None = None
        self.others = None  # module_edits.ModuleEdits: the script's own modules this pass edits (None: off)
        self.unfixed: str | None = None  # why no fix is made in this file at all (a module other files import)

    # ------------------------------------------------------------------ reporting
    def report(
        self, node: cst.CSTNode, message: str | None = None, *, fix: str | None = None, info: bool | None = None
    ) -> bool:
        """Record a finding at `node`; return True when the rule should also make its edits."""
        rule = self.rule
        assert rule is not None
        level = rule.fix if fix is None else fix
        pos = self.facts.index.position(node)
        if self.suppressions is not None and self.suppressions.silences(rule.code, pos.start.line):
            return False  # silenced: no finding, and no edits
        blocked = [code for code in rule.requires if code in self.blocked]
        if self.unfixed is not None and level != NONE:  # `check` promises no fix `apply` does not make
            level = NONE
            message = f"{message or rule.message} (no fix: {self.unfixed})"
        elif blocked and level != NONE:  # what this fix needs cannot be made: a finding without a fix
            level = NONE
            message = f"{message or rule.message} (no fix: it needs the fix of {blocked[0]}, which is not made here)"
        elif rule.needs_distributed and _WEAKER[self.distributed_fix] > _WEAKER[level]:
            level = self.distributed_fix
            why = "made only with --unsafe-fixes" if level == UNSAFE else "no fix"
            message = f"{message or rule.message} ({why}: the script becomes distributed only so, see DDP001)"
        applied = level != NONE and rule.code in self.fixing and (level == SAFE or self.unsafe_fixes)
        self.diagnostics.append(
            Diagnostic(
                code=rule.code,
                message=message or rule.message,
                line=pos.start.line,
                col=pos.start.column + 1,
                end_line=pos.end.line,
                end_col=pos.end.column + 1,
                fix=level,
                applied=applied,
                info=rule.info if info is None else info,
            )
        )
        return applied

    # ------------------------------------------------------------------ shared resources
    def env(self, key: str) -> str:
        """Spelling of RANK / LOCAL_RANK / WORLD_SIZE / DISTRIBUTED; added at module level once if missing.

        A script that joins its process group on its own terms (`mp.spawn`, `--local_rank`, `if
        args.distributed:`) is not told by torchrun's environment whether it is distributed: there
        DISTRIBUTED is `dist.is_initialized()` and RANK the process group's rank, decided at run time."""
        self._requested.add(key)
        if key in self._env:
            return self._env[key]
        env_names = self.facts.launch.env_names
        existing = env_names.get(key)
        if existing is not None:
            self._env[key] = existing
            return existing
        if self._runtime(key):
            template = RUNTIME[key]  # only what the spelling names is imported
            dist = self.plan.ref("torch.distributed", "dist", style="import") if "{dist}" in template else ""
            torch = self.plan.ref("torch", "torch", style="import") if "{torch}" in template else ""
            self._env[key] = template.format(dist=dist, torch=torch)
            return self._env[key]
        if not self._env_missing:
            for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "DISTRIBUTED"):
                if k not in env_names and not self._runtime(k):
                    self._env_missing.append(k)
            for k in self._env_missing:
                taken = self.facts.index.identifiers | self.plan.introduced
                self._env[k] = k if k not in taken else self.plan.fresh(ENV_FALLBACK_NAMES[k])
                self.plan.introduced.add(self._env[k])
            for k, v in env_names.items():
                self._env.setdefault(k, v)
        return self._env[key]

    def _runtime(self, key: str) -> bool:
        """Is `key` read at run time here (a script with its own launch path; LOCAL_RANK in processes the
        script starts itself, which no launcher gives a LOCAL_RANK)?"""
        own = self.own_path
        return own is not None and key in RUNTIME and (key != "LOCAL_RANK" or own in SELF_STARTED)

    @property
    def own_path(self) -> str | None:
        """The script's own launch path (`facts.launch.own_path`), or "elsewhere" where the author
        silenced DDP001: the process group, if any, is set up where ddpfix does not see it."""
        return self.facts.launch.own_path or self._elsewhere

    def joins_elsewhere(self) -> None:
        """The process group is the author's business (DDP001 silenced): what needs it is decided at run time."""
        self._elsewhere = "elsewhere"

    def rank0(self, at: cst.CSTNode | None = None) -> str:
        """The rank-0 test: the script's own global-rank variable where `at` sees one, else RANK. A
        variable a plain run sets to -1 (`int(os.environ.get("RANK", -1))`) is tested with
        `in (-1, 0)`, so the plain run keeps its output; a script with its own launch path asks the
        process group at run time."""
        name = self.rank_name(at)
        if self._rank_at_run_time(name):
            dist = self.plan.ref("torch.distributed", "dist", style="import")
            return f"not {dist}.is_initialized() or {dist}.get_rank() == 0"
        default = self._plain_default(name)
        return f"{name} in ({default}, 0)" if default is not None else f"{name} == 0"

    def not_rank0(self, at: cst.CSTNode | None = None) -> str:
        """The negation of `rank0(at)`: `RANK != 0`."""
        name = self.rank_name(at)
        if self._rank_at_run_time(name):
            dist = self.plan.ref("torch.distributed", "dist", style="import")
            return f"{dist}.is_initialized() and {dist}.get_rank() != 0"
        default = self._plain_default(name)
        return f"{name} not in ({default}, 0)" if default is not None else f"{name} != 0"

    def _rank_at_run_time(self, name: str) -> bool:
        return name == self._env.get("RANK") and self.own_path is not None and "RANK" not in self.facts.launch.env_names

    def _plain_default(self, name: str) -> int | None:
        """A plain run's value of the script's own module-level rank variable, when it is not 0."""
        if name not in self.facts.launch.env_names.values():
            return None
        value = self.facts.ranks.plain_value(name)
        return value if value is not None and value != 0 else None

    def rank_name(self, at: cst.CSTNode | None = None) -> str:
        if at is not None:
            var = self.facts.ranks.global_rank_var(at)
            if var is not None:
                return var
        return self.env("RANK")

    def offers(self, d: Diagnostic) -> bool:
        """Is the fix of `d`, a finding of this pass, made here, or (in a check) one a fix run makes?"""
        return d.applied or (not self.fixing and d.fixable)

    def silenced(self, node: cst.CSTNode) -> bool:
        """Does a `# ddpfix: ignore[...]` comment silence the running rule at `node`?"""
        assert self.rule is not None
        if self.suppressions is None:  # no such comment in the file: no position to find
            return False
        line = self.facts.index.position(node).start.line
        return self.suppressions.silences(self.rule.code, line)

    def block(self) -> None:
        """The running rule cannot make the fix other rules require of it (DDP001 cannot set up the
        process group): their findings come without a fix."""
        assert self.rule is not None
        self.blocked.add(self.rule.code)

    def distributes_at(self, level: str) -> None:
        """DDP001 makes the script distributed only at fix level `level` (UNSAFE or NONE): the fixes
        that mean something only in a distributed script (`Rule.distributed_only`) are made at that
        level too."""
        self.distributed_fix = level

    def setup_at_module_level(self, stmts: list[cst.BaseStatement], before: int) -> None:
        """Process-group setup for a script whose distributed work starts at module level: `finish`
        puts it after the imports and before top-level statement `before` and before whatever
        planned code needs the process group."""
        self._setup = (stmts, before)

    def finish(self) -> None:
        """Place what must run at module level before the code that needs it: the process-group setup
        a rule asked for, the environment constants, and the imports the plan adds."""
        place = Placement(self.facts, self.plan)
        setup_gap = None
        if self._setup is not None:
            stmts, before = self._setup
            pg = {self._env.get("DISTRIBUTED", "DISTRIBUTED")} | {
                self.plan.bound[q] for q in PROCESS_GROUP_USERS if q in self.plan.bound
            }
            upper = min(before, place.needed_by(pg))
            ours = set(self._env.values()) | set(place.new_import_names())
            needs = _read_names(stmts) - ours
            late = place.late_imports(needs, upper)
            lower = place.bound_after(needs - _bound_by(late))
            setup_gap = place.choose(lower, upper)
            place.hoist(late, setup_gap)
            stmts = list(stmts)
            stmts[0] = stmts[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
            place.insert(setup_gap, stmts, Order.PROCESS_GROUP)
        env_gap = None
        if self._env_missing:
            env_gap = self._place_environment(place, setup_gap)
        place.limit_imports([g for g in (setup_gap, env_gap) if g is not None])

    def _place_environment(self, place: Placement, setup_gap: int | None) -> int | None:
        # only the constants the fixes use (DISTRIBUTED is computed from WORLD_SIZE)
        used = set(self._requested)
        if "DISTRIBUTED" in used and "DISTRIBUTED" in self._env_missing:
            used.add("WORLD_SIZE")
        emit = [k for k in self._env_missing if k in used]
        if not emit:
            return None
        os_name = self.plan.ref("os", "os", style="import")
        lines = []
        for k in emit:
            if k == "DISTRIBUTED":
                lines.append(f"{self._env[k]} = {self._env['WORLD_SIZE']} > 1")
            else:
                lines.append(f'{self._env[k]} = int({os_name}.environ.get("{k}", {ENV_DEFAULTS[k]}))')
        stmts = self.plan.statements("\n".join(lines))
        ours = {self._env[k] for k in emit}
        upper = min(place.needed_by(ours), setup_gap if setup_gap is not None else len(place.body))
        needs = _read_names(stmts) - ours - set(place.new_import_names())
        late = place.late_imports(needs, upper)  # `import os` below the first line that needs the constants
        lower = place.bound_after(needs - _bound_by(late))
        body = place.body
        script_env = set(self.facts.launch.env_names.values())
        existing = [i for i, st in enumerate(body) if set(assign_targets(st)) & script_env]
        anchor = self.plan.import_anchor()
        prefer = None  # after the script's own RANK/WORLD_SIZE, which ours may use: one block with them
        if existing and (anchor is None or existing[-1] > body.index(anchor)):
            prefer = existing[-1]
        gap = place.choose(lower, upper, prefer_after=prefer)
        if prefer is not None and gap == prefer + 1:
            blanks = 0
        else:
            nxt = place.next_statement(gap)
            blanks = max(1, sum(1 for l in nxt.leading_lines if l.comment is None)) if nxt is not None else 1
        stmts[0] = stmts[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)] * blanks)
        place.hoist(late, gap)
        place.insert(gap, stmts, Order.ENVIRONMENT)
        return gap


def _bound_by(stmts: list[cst.BaseStatement]) -> set[str]:
    return set().union(*(binds(s) for s in stmts)) if stmts else set()


def _read_names(stmts: list[cst.BaseStatement]) -> set[str]:
    return {name.split(".")[0] for s in stmts for name in reads(s)}


__all__ = ["Context", "NONE", "Order", "Rule", "SAFE", "UNSAFE"]
