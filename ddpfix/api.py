"""The Python API every entry point shells over: `fix_source()`, `fix_project()` and `check_source()`."""

from __future__ import annotations

import ast
import functools
import gc
import os
from collections.abc import Iterable
from dataclasses import dataclass

import libcst as cst

from . import parsing
from .analysis import ScriptFacts
from .contract import Incomplete, breaches
from .diagnostic import Diagnostic, FileChange, Result
from .diff import unified_diff
from .errors import DdpfixError
from .guard import guarded_fix
from .parsing import MAX_CHAIN, Source, imports_training, libcst_parse, might_need_ddp, parse, python_tree
from .passes import plan_pass, reaches_rules, with_requirements
from .suppress import might_have, scan, selected
from .transforms import BY_CODE, expand

FRAMEWORK_RULE = "DDP008"


PAUSE_GC_FROM = 20_000  # characters of source


def gc_paused(fn):
    """Run `fn` on a long source with Python's cyclic garbage collector paused. A parsed module is
    hundreds of thousands of objects that live through the call; each full collection walks all of
    them, so on a long script the collector cost as much as the analysis (10,000 lines: 1.2 s of
    3.3 s). Cycles made meanwhile wait for the next collection after the call, which on short scripts
    cost more than the pause saved (the training-script goldens: 10% slower), hence the threshold."""

    @functools.wraps(fn)
    def paused(source, *args, **kwargs):
        text = source.text if isinstance(source, Parsed) else source
        if len(text) < PAUSE_GC_FROM or not gc.isenabled():  # short, nested, or the caller paused it
            return fn(source, *args, **kwargs)
        gc.disable()
        try:
            return fn(source, *args, **kwargs)
        finally:
            gc.enable()

    return paused


def frozen_heap(fn):
    """Run `fn` with the objects alive at the call (the parsed tree above all) frozen out of the cyclic
    garbage collector (`gc.freeze`), given back to it after. The analysis of a short script makes many
    short-lived objects; each collection of the oldest generation walked the whole parsed tree again,
    which on the training-script goldens cost about a tenth of `diff`. Objects made during the call are
    collected as usual. Skipped where the collector is paused or the process froze objects itself."""

    @functools.wraps(fn)
    def frozen(*args, **kwargs):
        if not gc.isenabled() or gc.get_freeze_count():
            return fn(*args, **kwargs)
        gc.freeze()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.unfreeze()

    return frozen


def run_rules(
    module: cst.Module,
    *,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    fix: bool = True,
    unsafe_fixes: bool = False,
    source: Source | None = None,
    tree: ast.Module | None = None,
    path: str | None = None,
) -> tuple[cst.Module, list[Diagnostic]]:
    """One analysis, every selected rule, one edit pass (checked by the output guard). `source` (what
    `module` was parsed from) and `tree` (Python's parse of it) are optional: they let a source without
    `# ddpfix: ignore` comments skip looking for them and make positions cheaper to find. `path`, the
    file's name, lets the analysis read the script's own modules next to it."""
    new, _, diagnostics, _, _ = _run(
        module, select=select, ignore=ignore, fix=fix, unsafe_fixes=unsafe_fixes, source=source, tree=tree, path=path
    )
    return new, diagnostics


# Why a file that runs no training as a program gets no fixes: a process group set up at its import
# would be created and destroyed under the importing script, and its data would be sharded twice.
NOT_A_PROGRAM = (
    "this file runs no training as a program (no `__main__` block, no module-level training seen): "
    "the script that runs it is the one to fix"
)


def _run(
    module: cst.Module,
    *,
    select: Iterable[str] | None,
    ignore: Iterable[str] | None,
    fix: bool,
    unsafe_fixes: bool,
    source: Source | None,
    tree: ast.Module | None,
    path: str | None = None,
    cross_file: bool = False,
) -> tuple[cst.Module, str | None, list[Diagnostic], list[Incomplete], dict[str, FileChange]]:
    """`run_rules`, also returning the new text when there is one (None: unchanged), how the output
    breaks the DDP contract (fixing a program only: docs/contract.md), and, with `cross_file`, the
    script's own modules the fix edits too."""
    suppressions = scan(module.code) if might_have(source) else None
    text = source.decode(module.encoding) if isinstance(source, bytes) else source
    if text is not None and not parsing.MIGHT_TRAIN.search(text) and not imports_training(text, path):
        # what the test below needs is not even in the text, nor in a module of its folder it imports
        return module, None, _unused(suppressions, [], select, ignore), [], {}
    facts = ScriptFacts(module, text, tree, path, cross_file=cross_file)
    if facts.names.other_launcher is not None:  # a framework distributes it: one information line, no edits
        active = [c for c in expand(select, ignore) if c == FRAMEWORK_RULE]
        ctx = plan_pass(facts, active, set(), unsafe_fixes, suppressions)
        diagnostics = sorted(ctx.diagnostics + _unused(suppressions, active, select, ignore), key=_order)
        return module, None, diagnostics, [], {}
    if not reaches_rules(facts):
        return module, None, _unused(suppressions, [], select, ignore), [], {}  # not a training script
    active = expand(select, ignore)
    incomplete: list[Incomplete] = []
    others: dict[str, FileChange] = {}
    if not fix or not facts.launch.is_program:  # a module other files import gets findings, no fixes
        unfixed = None if facts.launch.is_program else NOT_A_PROGRAM
        ctx = plan_pass(facts, active, set(), unsafe_fixes, suppressions, unfixed=unfixed)
        new, new_text, diagnostics = module, None, ctx.diagnostics
    else:
        outcome = guarded_fix(
            facts,
            module.code if text is None else text,
            tree,
            active,
            _fixing(facts, active, unsafe_fixes, suppressions),
            unsafe_fixes,
            suppressions,
            judges=expand(None, ignore),  # the contract holds whichever fixes were selected
        )
        new, diagnostics, others = outcome.module, outcome.diagnostics(), outcome.others
        new_text = None if new is module else outcome.text
        before = module.code if text is None else text
        incomplete = breaches(outcome.after, before, before if new_text is None else new_text)
    diagnostics = diagnostics + _unused(suppressions, active, select, ignore)
    return new, new_text, sorted(diagnostics, key=_order), incomplete, others


def _fixing(facts: ScriptFacts, active: list[str], unsafe_fixes: bool, suppressions) -> set[str]:
    """The selected rules, and the fixes they need (DDP201's sampler needs DDP001's process group) —
    only for the rules that fix something here: a selection whose findings have no fix brings nothing."""
    fixing = with_requirements(active)
    if fixing == set(active):
        return fixing
    trial = plan_pass(facts, active, fixing, unsafe_fixes, suppressions, edits_only=True)
    return set(active) | with_requirements(trial.plan.edited & set(active))


def _order(d: Diagnostic) -> tuple:
    return (d.line, d.col, d.code)


def _unused(suppressions, active: list[str], select, ignore) -> list[Diagnostic]:
    """DDP000 for suppression comments that silenced nothing (when DDP000 is selected)."""
    if suppressions is None or not selected(select, ignore):
        return []
    return suppressions.unused(active, BY_CODE)


@dataclass(frozen=True)
class Parsed:
    """A source parsed once, for several rule runs (the language server's diagnostics, then the fixes
    its code actions ask for). LibCST trees are immutable, so runs cannot disturb one another."""

    source: Source
    path: str
    text: str
    # None: no rule has anything to say (the text never mentions torch, or it is no training script)
    module: cst.Module | None
    tree: ast.Module | None = None
    # the file is no training script (`cannot_train`): left unparsed by LibCST, it gets only DDP000
    # for its suppression comments, as a parsed one would
    not_training: bool = False


@gc_paused
def parse_source(source: Source, path: str | os.PathLike[str] = "<string>") -> Parsed:
    """Parse `source` for `fix_parsed`. Raises `DdpfixError` on a syntax error or undecodable input.
    `path` may be a `str` or any path-like object (`pathlib.Path`)."""
    path = os.fspath(path) if path is not None else path
    if not might_need_ddp(source, path):
        return Parsed(source, path, parsing.check_syntax_only(source, path), None)
    tree = python_tree(source, path)
    if tree is not None and parsing.GATE:
        try:
            text = source.decode(parsing.encoding_of(source)) if isinstance(source, bytes) else source
        except (UnicodeDecodeError, LookupError, SyntaxError):
            text = None  # LibCST words the complaint
        if text is not None and parsing.not_training(text, tree, path):
            return Parsed(source, path, text, None, tree, not_training=True)
    module = libcst_parse(source, path)
    # LibCST round-trips exactly, so the original text is the source itself: no re-render.
    text = source.decode(module.encoding) if isinstance(source, bytes) else source
    return Parsed(source, path, text, module, tree)


@gc_paused
def fix_source(
    source: Source,
    *,
    path: str | os.PathLike[str] = "<string>",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe_fixes: bool = False,
    fix: bool = True,
    cross_file: bool = False,
) -> Result:
    """Rewrite `source` into DDP form. Returns the new code, the diagnostics and a unified diff.

    `source` may be `str` or `bytes` (bytes keep their PEP 263 encoding; `Result.data` holds the new
    bytes). Raises `DdpfixError` on a syntax error or undecodable input. With `cross_file` (and a
    `path` on disk), a fix may also edit the script's own modules: `Result.others` (see `fix_project`).
    """
    parsed = parse_source(source, path)
    return fix_parsed(parsed, select=select, ignore=ignore, unsafe_fixes=unsafe_fixes, fix=fix, cross_file=cross_file)


def fix_project(
    path: str | os.PathLike[str],
    *,
    source: Source | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe_fixes: bool = False,
    fix: bool = True,
    cross_file: bool = True,
) -> Result:
    """Rewrite the script at `path` and, where its fixes need it, the script's own modules (the files
    beside it and its packages, read from disk; never installed packages): `Result.code` is the
    script's new text, `Result.others` maps each edited module's path to its `FileChange`, and
    `Result.full_diff` is one diff over all of them. `source` is the script's text when it is not
    the file's (an editor's unsaved buffer). Nothing is written. Raises `DdpfixError` on a file that
    cannot be read or parsed."""
    path = os.fspath(path) if path is not None else path
    if source is None:
        try:
            with open(path, "rb") as f:
                source = f.read()
        except OSError as exc:
            raise DdpfixError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return fix_source(
        source, path=path, select=select, ignore=ignore, unsafe_fixes=unsafe_fixes, fix=fix, cross_file=cross_file
    )


@gc_paused
@frozen_heap
def fix_parsed(
    parsed: Parsed,
    *,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe_fixes: bool = False,
    fix: bool = True,
    cross_file: bool = False,
) -> Result:
    """`fix_source` on a source already parsed by `parse_source`."""
    source, module, old_text = parsed.source, parsed.module, parsed.text
    if module is None:
        diagnostics = []
        if parsed.not_training:  # what `_run` returns for a file that is no training script
            diagnostics = _unused(scan(old_text) if might_have(old_text) else None, [], select, ignore)
        data = source if isinstance(source, bytes) else None
        return Result(source=old_text, code=old_text, diagnostics=diagnostics, data=data)
    new, new_text, diagnostics, incomplete, others = _run(
        module,
        select=select,
        ignore=ignore,
        fix=fix,
        unsafe_fixes=unsafe_fixes,
        source=old_text,
        tree=parsed.tree,
        path=None if parsed.path in ("<string>", "-") else parsed.path,
        cross_file=cross_file,
    )
    if new_text is None:
        new, new_text = module, old_text
    result = Result(source=old_text, code=new_text, diagnostics=diagnostics, incomplete=incomplete, others=others)
    if isinstance(source, bytes):
        result.data = source if new is module else new_text.encode(new.encoding)  # `new.bytes` would render again
    result.diff = unified_diff(old_text, new_text, parsed.path) if new_text != old_text else ""
    return result


def check_source(
    source: Source,
    *,
    path: str | os.PathLike[str] = "<string>",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    cross_file: bool = False,
) -> list[Diagnostic]:
    """Diagnostics only; nothing is rewritten. `cross_file`: the fix levels are those of a fix that may
    edit the script's own modules (as `fix_project` and the command line make)."""
    return fix_source(source, path=path, select=select, ignore=ignore, fix=False, cross_file=cross_file).diagnostics


__all__ = [
    "MAX_CHAIN",
    "PAUSE_GC_FROM",
    "Parsed",
    "Source",
    "check_source",
    "fix_parsed",
    "fix_project",
    "fix_source",
    "gc_paused",
    "might_need_ddp",
    "parse",
    "parse_source",
    "run_rules",
]
