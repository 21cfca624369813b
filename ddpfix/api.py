"""The Python API every entry point shells over: `fix_source()`, `fix_project()` and `check_source()`."""

from __future__ import annotations

import ast
import functools
import gc
import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from .analysis import ScriptFacts
from .contract import Incomplete, breaches
from .diagnostic import Diagnostic, FileChange, Result
from .diff import unified_diff
from .errors import DdpfixError
from .guard import guarded_fix
from .passes import plan_pass, reaches_rules, with_requirements
from .suppress import might_have, scan, selected
from .transforms import BY_CODE, expand

# The names of the frameworks DDP008 recognises (ddpfix.analysis.names.FRAMEWORKS, TRAINER_LIBRARIES).
FRAMEWORK_WORDS = (
    r"accelerate|lightning|deepspeed|horovod|torch_xla|colossalai|fairscale|mmengine|mmcv|Trainer|fsdp|elastic|launcher"
)
_FRAMEWORK = re.compile(FRAMEWORK_WORDS)
FRAMEWORK_RULE = "DDP008"

Source = str | bytes


_BOOL_WORDS = (re.compile(r"\b(?:and|or)\b"), re.compile(rb"\b(?:and|or)\b"))
# A training script, a process group or a DDP wrap (ScriptFacts.is_training_script) cannot
# be written without one of these words; a script a framework distributes names the framework.
_MIGHT_TRAIN = re.compile(r"parameters|backward|init_process_group|DistributedDataParallel|" + FRAMEWORK_WORDS)
_MIGHT_TRAIN_BYTES = re.compile(FRAMEWORK_WORDS.encode())
_IMPORTED = re.compile(r"^[ \t]*(?:from[ \t]+\.*([\w.]+)[ \t]+import|import[ \t]+([\w.]+))", re.M)
MAX_CHAIN = 300  # and/or terms LibCST can parse and render without exhausting its stack


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


def parse(source: Source, path: str = "<string>") -> cst.Module:
    """Parse with LibCST; a syntax error or an undecodable file becomes a one-line DdpfixError.

    Python's own parser looks first: it refuses nesting deeper than CPython allows (which LibCST's
    native parser can crash on, taking the process with it) at a fraction of LibCST's cost. Its
    other complaints are left to LibCST, which may know newer syntax than the running Python.
    """
    return _parse(source, path)[0]


def _parse(source: Source, path: str) -> tuple[cst.Module, ast.Module | None]:
    """`parse`, also returning Python's tree of the source when Python could parse it."""
    tree = None
    try:
        tree = ast.parse(source)
        words = _BOOL_WORDS[isinstance(source, bytes)]
        longest = 0
        if len(words.findall(source)) > MAX_CHAIN:  # a long chain needs that many `and`/`or` words
            longest = max((len(n.values) for n in ast.walk(tree) if isinstance(n, ast.BoolOp)), default=0)
        if longest > MAX_CHAIN:  # flat for Python, one nesting level a term for LibCST
            raise DdpfixError(f"{path}: too deeply nested to analyse (an and/or chain of {longest} terms)")
    except SyntaxError as exc:
        if "too many nested" in exc.msg or "too many levels" in exc.msg:
            raise DdpfixError(f"{path}:{exc.lineno or 1}:{exc.offset or 1}: syntax error: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise DdpfixError(f"{path}: too deeply nested to analyse") from None
    except (ValueError, UnicodeDecodeError, LookupError):
        pass  # LibCST reports decoding problems in its own words below
    try:
        return cst.parse_module(source), tree
    except cst.ParserSyntaxError as exc:
        _check_syntax_only(source, path)  # Python's own message is clearer when it also fails
        raise DdpfixError(
            f"{path}:{exc.raw_line}:{exc.raw_column + 1}: syntax error: {exc.message.splitlines()[0]}"
        ) from None
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        raise DdpfixError(f"{path}: cannot decode: {exc}") from None


def might_need_ddp(source: Source) -> bool:
    """Cheap pre-filter: a file that never mentions torch (nor a framework that distributes it, whose
    scripts get DDP008's information line) is skipped without parsing."""
    if isinstance(source, bytes):
        return b"torch" in source or _MIGHT_TRAIN_BYTES.search(source) is not None
    return "torch" in source or _FRAMEWORK.search(source) is not None


def _imports_training(text: str, path: str | None) -> bool:
    """Does the script import a module of its own folder that names one of `_MIGHT_TRAIN`'s words? A
    script that trains only through its modules (`Solver(loader, config).train()`, the networks and
    optimizers built in solver.py) need not name any of them itself."""
    if "torch" not in text or path is None or path.startswith("<"):
        return False
    folder = Path(path).parent
    for match in _IMPORTED.finditer(text):
        base = folder.joinpath(*(match.group(1) or match.group(2)).split("."))
        for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
            try:
                if candidate.is_file() and _MIGHT_TRAIN.search(candidate.read_text(errors="replace")):
                    return True
            except OSError:
                continue
    return False


def _check_syntax_only(source: Source, path: str) -> str:
    """For files the pre-filter skips: still refuse undecodable or syntactically broken input (fast, C parser)."""
    try:
        text = source if isinstance(source, str) else _decode(source)
        ast.parse(source)
    except SyntaxError as exc:
        if "encoding" in exc.msg:
            raise DdpfixError(f"{path}: cannot decode: {exc.msg}") from None
        raise DdpfixError(f"{path}:{exc.lineno or 1}:{(exc.offset or 0) or 1}: syntax error: {exc.msg}") from None
    except (UnicodeDecodeError, LookupError, ValueError) as exc:
        raise DdpfixError(f"{path}: cannot decode: {exc}") from None
    return text


def _decode(data: bytes) -> str:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


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
    if text is not None and not _MIGHT_TRAIN.search(text) and not _imports_training(text, path):
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
    module: cst.Module | None  # None: the text never mentions torch, so no rule has anything to say
    tree: ast.Module | None = None


@gc_paused
def parse_source(source: Source, path: str = "<string>") -> Parsed:
    """Parse `source` for `fix_parsed`. Raises `DdpfixError` on a syntax error or undecodable input."""
    if not might_need_ddp(source):
        return Parsed(source, path, _check_syntax_only(source, path), None)
    module, tree = _parse(source, path)
    # LibCST round-trips exactly, so the original text is the source itself: no re-render.
    text = source.decode(module.encoding) if isinstance(source, bytes) else source
    return Parsed(source, path, text, module, tree)


@gc_paused
def fix_source(
    source: Source,
    *,
    path: str = "<string>",
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
    path: str,
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
        return Result(source=old_text, code=old_text, data=source if isinstance(source, bytes) else None)
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
    path: str = "<string>",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    cross_file: bool = False,
) -> list[Diagnostic]:
    """Diagnostics only; nothing is rewritten. `cross_file`: the fix levels are those of a fix that may
    edit the script's own modules (as `fix_project` and the command line make)."""
    return fix_source(source, path=path, select=select, ignore=ignore, fix=False, cross_file=cross_file).diagnostics
