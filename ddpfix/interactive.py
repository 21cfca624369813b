"""`ddpfix apply -i`: the hunk model. A fix's diff is split into hunks (one FilePlan per file: the
script, then each of its own modules the fix edits), each labelled with the rules behind it.

Hunks can depend on each other: a guard needs the `RANK` constant another hunk defines, a sampler
needs the import of `DistributedSampler` and the process group (a rule's `requires`). The prompt says
so up front, and when the chosen hunks need one that was declined, it is included anyway and the user
is told; the result is then checked to parse before anything is written. The needs between files, and
the prompt itself, are in interactive_files.py.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import io
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field

from unidiff import PatchSet
from unidiff.patch import Hunk as UHunk

from .api import fix_source
from .diagnostic import FileChange, Result
from .diff import NO_EOL
from .diff import split_lines as _lines  # noqa: I001
from .transforms import BY_CODE

BUILTINS = set(dir(builtins))


# ---------------------------------------------------------------------------------------- the hunk model
def _norm(lines: list[str]) -> list[str]:
    """Lines for display and diffing: the line break normalised to \\n (kept absent on a last line without one)."""
    return [l.rstrip("\r\n") + "\n" if l.endswith(("\n", "\r")) else l for l in lines]


CONTEXT = 1  # lines of context per hunk: finer hunks to choose from than the 3 of `ddpfix diff`


def hunk_diff(old: str, new: str, path: str, context: int = CONTEXT) -> str:
    a, b = _norm(_lines(old)), _norm(_lines(new))
    out = []
    for line in difflib.unified_diff(a, b, fromfile=f"a/{path.lstrip('/')}", tofile=f"b/{path.lstrip('/')}", n=context):
        out.append(line if line.endswith("\n") else line + "\n" + NO_EOL)
    return "".join(out)


def _span(h: UHunk) -> tuple[int, int]:
    """0-based half-open range of old lines the hunk covers (a pure insertion is an empty range)."""
    start = h.source_start - 1 if h.source_length else h.source_start
    return start, start + h.source_length


def apply_hunks(old: str, new: str, hunks: list[UHunk], keep: Iterable[int]) -> str:
    """The old text with only the hunks in `keep` applied. Lines are taken from the two texts by number,
    so line breaks (CRLF, CR, a missing last one) come through exactly."""
    keep = set(keep)
    a, b = _lines(old), _lines(new)
    out: list[str] = []
    pos = 0
    for i, h in enumerate(hunks):
        start, end = _span(h)
        out += a[pos:start]
        for l in h:
            if l.is_context:
                out.append(a[l.source_line_no - 1])
            elif l.is_removed and i not in keep:
                out.append(a[l.source_line_no - 1])
            elif l.is_added and i in keep:
                out.append(b[l.target_line_no - 1])
        pos = end
    out += a[pos:]
    return "".join(out)


@dataclass
class HunkInfo:
    index: int
    hunk: UHunk
    labels: list[str] = field(default_factory=list)  # rule codes behind this hunk
    defines: set[str] = field(default_factory=set)  # names bound on its added lines
    uses: set[str] = field(default_factory=set)  # names read on its added lines
    unbinds: set[str] = field(default_factory=set)  # names bound on its removed lines (a statement moved away)
    needs: dict[int, str] = field(default_factory=dict)  # hunk index -> why
    elsewhere: dict[tuple[str, int], str] = field(default_factory=dict)  # (another file, its hunk) -> why


class FilePlan:
    """One file's fixed result split into hunks, with labels and dependencies. `result` is a script's
    Result or, for a module the script's fix edits, its FileChange; `solos` is the file's text as each
    rule's fix alone leaves it (computed here from `original` when not given); `script` is the script
    whose fix this file belongs to (its files are written all or none)."""

    def __init__(
        self,
        path: str,
        original: bytes | str,
        result: Result | FileChange,
        *,
        select=None,
        ignore=None,
        unsafe_fixes=False,
        solos: dict[str, str] | None = None,
        script: str | None = None,
    ) -> None:
        self.path = path
        self.script = script or path
        self.original = original
        self.old, self.new = result.source, result.code
        self.data_all: bytes | None = result.data  # the bytes with every hunk (None: `text`, encoded)
        self.diff = hunk_diff(self.old, self.new, path)
        self.known: set[str] = set()  # names bound in the original or the fixed text
        self.added_at: dict[int, int] = {}  # line of the fixed text -> the hunk that adds it
        patch = PatchSet(self.diff)
        self.hunks: list[HunkInfo] = [HunkInfo(i, h) for i, h in enumerate(patch[0])] if len(patch) else []
        if solos is None:
            solos = {}
            for code in result.applied_codes if isinstance(result, Result) else result.codes:
                try:
                    solos[code] = fix_source(original, path=path, select=[code], unsafe_fixes=unsafe_fixes).code
                except Exception:
                    continue
        self._label(solos)
        self._names()
        self._depend()

    # -- labels: which rules' own edits touch each hunk
    def _label(self, solos: dict[str, str]) -> None:
        old_lines = _lines(self.old)
        changes: dict[str, list[tuple[int, int]]] = {}
        for code, solo in solos.items():
            sm = difflib.SequenceMatcher(None, old_lines, _lines(solo), autojunk=False)
            changes[code] = [(i1, i2) for tag, i1, i2, _, _ in sm.get_opcodes() if tag != "equal"]
        for code, spans in changes.items():
            required = _closure(code) - {code}
            inherited = {s for r in required for s in changes.get(r, [])}
            own = [s for s in spans if s not in inherited] or spans
            for info in self.hunks:
                start, end = _span(info.hunk)
                if any(i1 <= end and i2 >= start for i1, i2 in own):
                    info.labels.append(code)
        for info in self.hunks:
            info.labels.sort()

    def label_unlabelled(self, without: dict[str, str]) -> None:
        """Label the hunks no rule's fix alone explains by what the whole fix makes without each rule
        (`without`: code -> this file's text fixed with every other rule): a rule whose fix is made
        only together with another's (the script's process group, made only where a module's class
        wraps its models) owns the lines that vanish without it. Needs are then worked out again."""
        todo = [info for info in self.hunks if not info.labels]
        if not todo:
            return
        new_lines = _lines(self.new)
        for code, text in without.items():
            sm = difflib.SequenceMatcher(None, _lines(text), new_lines, autojunk=False)
            spans = [(j1, j2) for tag, _, _, j1, j2 in sm.get_opcodes() if tag != "equal"]
            for info in todo:
                start = info.hunk.target_start - 1 if info.hunk.target_length else info.hunk.target_start
                end = start + info.hunk.target_length
                if any(j1 <= end and j2 >= start for j1, j2 in spans):
                    info.labels.append(code)
        for info in todo:
            info.labels.sort()
        self._depend()

    # -- names each hunk binds and reads (on its added lines)
    def _names(self) -> None:
        try:
            new_tree = ast.parse(self.new)
        except SyntaxError:
            return
        try:
            old_tree = ast.parse(self.old)
        except SyntaxError:
            return
        old_bound = _bound_anywhere(old_tree)
        self.known = old_bound | _bound_anywhere(new_tree)
        added_at = self.added_at
        removed_at: dict[int, int] = {}
        for info in self.hunks:
            for l in info.hunk:
                if l.is_added:
                    added_at[l.target_line_no] = info.index
                elif l.is_removed:
                    removed_at[l.source_line_no] = info.index
        for node in ast.walk(old_tree):
            line = getattr(node, "lineno", None)
            if line in removed_at:
                self.hunks[removed_at[line]].unbinds.update(n for n, binds in _names_of(node) if binds)
        for node in ast.walk(new_tree):
            line = getattr(node, "lineno", None)
            if line not in added_at:
                continue
            info = self.hunks[added_at[line]]
            for name, binds in _names_of(node):
                if binds:
                    info.defines.add(name)
                elif name not in old_bound:
                    info.uses.add(name)
        for info in self.hunks:
            info.uses -= info.defines | BUILTINS
            info.unbinds -= info.defines

    def _depend(self) -> None:
        for info in self.hunks:
            for other in self.hunks:
                if other is info:
                    continue
                names = sorted(info.uses & other.defines)
                if names:
                    info.needs[other.index] = "defines " + ", ".join(names)
                moved = sorted(info.unbinds & other.defines)
                if moved:  # a statement moved from one hunk to the other: both halves or neither
                    info.needs[other.index] = other.needs[info.index] = "moves " + ", ".join(moved)
            own = set(info.labels)
            for code in info.labels:
                for req in _closure(code) - {code}:
                    if req in own:
                        continue
                    allowed = _closure(req)
                    for other in self.hunks:  # the hunks that are that fix alone (mixed ones are judged by names)
                        if (
                            other is not info
                            and req in other.labels
                            and set(other.labels) <= allowed
                            and other.index not in info.needs
                        ):
                            info.needs[other.index] = f"{code} needs {req}'s fix"

    # -- selection
    def close(self, keep: set[int]) -> tuple[set[int], list[str]]:
        """Add the hunks the chosen ones need; returns (hunks, one message per hunk added)."""
        keep = set(keep)
        notes = []
        todo = sorted(keep)
        while todo:
            i = todo.pop(0)
            for j, why in sorted(self.hunks[i].needs.items()):
                if j not in keep:
                    keep.add(j)
                    todo.append(j)
                    notes.append(f"hunk {i + 1} needs hunk {j + 1} ({why}): including hunk {j + 1}")
        return keep, notes

    def text(self, keep: Iterable[int]) -> str:
        return apply_hunks(self.old, self.new, [h.hunk for h in self.hunks], keep)

    def select(self, chosen: set[int]) -> tuple[str | None, set[int], list[str]]:
        """The text for the chosen hunks, valid Python with every needed hunk included.
        Returns (text or None when no valid selection exists, final hunks, notes for the user)."""
        if not chosen:
            return self.old, set(), []
        keep, notes = self.close(chosen)
        text = self.text(keep)
        problem = _problem(text, keep, self.hunks, self.known)
        if problem:
            # fall back to whole rules: every hunk of a rule one of the chosen hunks belongs to
            codes = {c for i in keep for c in self.hunks[i].labels}
            wider = keep | {h.index for h in self.hunks if codes & set(h.labels)}
            wider, more = self.close(wider)
            if wider != keep:
                text2 = self.text(wider)
                if not _problem(text2, wider, self.hunks, self.known):
                    added = ", ".join(str(i + 1) for i in sorted(wider - keep))
                    return (
                        text2,
                        wider,
                        notes + more + [f"{problem}; including the rest of the same rules (hunks {added})"],
                    )
            return None, keep, notes + [f"{problem}; nothing written for {self.path}"]
        return text, keep, notes

    def encode(self, text: str) -> bytes:
        """`text` in the file's own encoding (PEP 263 cookie or BOM kept)."""
        if isinstance(self.original, str):
            return text.encode("utf-8")
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(self.original).readline)
        except SyntaxError:
            encoding = "utf-8"
        return text.encode(encoding)


def _closure(code: str) -> set[str]:
    seen, todo = set(), [code]
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        rule = BY_CODE.get(c)
        if rule is not None:
            todo.extend(rule.requires)
    return seen


def _names_of(node: ast.AST) -> list[tuple[str, bool]]:
    """(name, binds) for a node that binds or reads a plain name."""
    if isinstance(node, ast.Name):
        return [(node.id, not isinstance(node.ctx, ast.Load))]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [((a.asname or a.name).split(".")[0], True) for a in node.names if a.name != "*"]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(node.name, True)]
    if isinstance(node, ast.arg):
        return [(node.arg, True)]
    return []


def _bound_anywhere(tree: ast.AST) -> set[str]:
    return {name for node in ast.walk(tree) for name, binds in _names_of(node) if binds}


def _problem(text: str, keep: set[int], hunks: list[HunkInfo], known: set[str]) -> str | None:
    """Why this selection is not valid: it does not parse, or it reads a name that the original or the
    fully fixed file binds but that nothing binds any more (a chosen hunk needs it, or a move was split)."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return f"the chosen hunks do not form valid Python (line {exc.lineno}: {exc.msg})"
    bound = _bound_anywhere(tree) | set(dir(builtins))
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    missing = sorted(({n for i in keep for n in hunks[i].uses} | (read & known)) - bound)
    if missing:
        return f"the chosen hunks use {', '.join(missing)}, which nothing defines"
    return None


__all__ = ["FilePlan", "HunkInfo", "apply_hunks", "hunk_diff"]
