"""Edits a fix makes to the script's own modules: the files beside the script and its packages.

A rule whose fix needs another file changed (DDP201: the training loader is built by a factory in
data_utils.py) asks the pass's `ModuleEdits` (`ctx.others`, None when cross-file edits are off):

- `why_not(path)`: whether that module may be edited at all: it lies inside the project root (the
  script's folder), not in installed packages or a virtual environment, and can be written;
- `trial(path, code, planner)`: the edit planned on a plan of the module's own (its own LibCST tree
  and analysis, with every edit kept for it so far), rendered and checked at once: the output parses
  and pyflakes finds no name undefined or read before assignment that the module did not have
  (guard/names.py). None when it holds, else why not;
- `keep(path, code, planner)`: the edit becomes part of this pass's fix (after `ctx.report` said to fix).

`changes()` renders what was kept. The script's output guard then judges the project as the fix leaves
it: its fixpoint passes and the contract read those modules as edited (`stamps.overlaid`), so an edit
that does not settle, or that leaves the script unsharded, shows there like any other.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from .analysis import ScriptFacts
from .analysis.stamps import read_bytes
from .diagnostic import FileChange
from .diff import unified_diff
from .rule import Context, Rule

Planner = Callable[[Context], "str | None"]  # plans one edit on the module's context; why not, or None
INSTALLED = ("site-packages", "dist-packages")


@dataclass
class _Module:
    path: Path
    data: bytes
    text: str
    facts: ScriptFacts
    tree: ast.Module


class ModuleEdits:
    """The edits one pass of the rules makes to the script's own modules."""

    def __init__(self, facts: ScriptFacts, unsafe_fixes: bool) -> None:
        self.folder = facts.modules.folder
        self.unsafe_fixes = unsafe_fixes
        self._modules: dict[Path, _Module | str] = {}
        self._kept: dict[Path, list[tuple[Rule, Planner]]] = {}
        self._out: dict[Path, str] = {}  # the text of each module with its kept edits
        self.planned: set[tuple] = set()  # what the rules kept already: (rule, path, line), not kept twice
        self._tried: dict[tuple, str | None] = {}  # trial outcomes by the caller's key and the edits kept

    # ------------------------------------------------------------------ may it be edited
    def why_not(self, path: Path) -> str | None:
        """Why the module at `path` may not be edited (None: it may)."""
        if self.folder is None:
            return "the script has no folder to find it in"
        root = self.folder.resolve()
        real = path.resolve()
        shown = self.shown(path)
        try:
            rel = real.relative_to(root)
        except ValueError:
            return f"{shown} lies outside the script's folder"
        below = [root.joinpath(*rel.parts[:i]) for i in range(1, len(rel.parts))]
        if any(part in INSTALLED for part in rel.parts) or any((d / "pyvenv.cfg").exists() for d in below):
            return f"{shown} is an installed package"
        if not os.access(real, os.W_OK):
            return f"{shown} is read-only"
        module = self._module(path)
        return module if isinstance(module, str) else None

    def shown(self, path: Path) -> str:
        return shown(self.folder, path)

    def _module(self, path: Path) -> _Module | str:
        if path not in self._modules:
            try:
                data = read_bytes(path)
                module = cst.parse_module(data)
                tree = ast.parse(data)
            except (OSError, SyntaxError, ValueError, RecursionError, cst.ParserSyntaxError) as exc:
                self._modules[path] = f"{self.shown(path)} cannot be read ({type(exc).__name__})"
            else:
                text = module.code
                facts = ScriptFacts(module, text, tree, str(path))
                self._modules[path] = _Module(path, data, text, facts, tree)
        return self._modules[path]

    # ------------------------------------------------------------------ planning
    def trial(self, path: Path, rule: Rule, planner: Planner, key: tuple | None = None) -> str | None:
        """Plan `planner`'s edit with the edits kept for the module so far and check the output. `key`:
        names what the planner does, so that the same trial over the same kept edits is made once."""
        if key is not None:
            memo = (path, rule.code, *key, len(self._kept.get(path, [])))
            if memo not in self._tried:
                self._tried[memo] = self.trial(path, rule, planner)
            return self._tried[memo]
        module = self._module(path)
        if isinstance(module, str):
            return module
        text, why = self._render(module, [*self._kept.get(path, []), (rule, planner)])
        if why is not None:
            return why
        assert text is not None
        return _new_problem(module, text, self.shown(path))

    def keep(self, path: Path, rule: Rule, planner: Planner) -> None:
        module = self._module(path)
        assert not isinstance(module, str)
        self._kept.setdefault(path, []).append((rule, planner))
        text, why = self._render(module, self._kept[path])
        assert why is None and text is not None
        self._out[path] = text

    def _render(self, module: _Module, edits: list[tuple[Rule, Planner]]) -> tuple[str | None, str | None]:
        ctx = Context(module.facts, {rule.code for rule, _ in edits}, self.unsafe_fixes)
        for rule, planner in edits:
            ctx.rule = rule
            ctx.plan.rule = rule.code
            why = planner(ctx)
            if why is not None:
                return None, why
        ctx.plan.rule = None
        ctx.finish()
        return ctx.plan.apply().code, None

    # ------------------------------------------------------------------ the result
    def texts(self) -> dict[Path, bytes]:
        """The new bytes of each edited module (what the script's checks read it as)."""
        return {path: self._encode(path, text) for path, text in self._out.items()}

    def changes(self) -> dict[str, FileChange]:
        out = {}
        for path, text in self._out.items():
            module = self._module(path)
            assert not isinstance(module, str)
            if text == module.text:
                continue
            out[str(path)] = FileChange(
                path=str(path),
                source=module.text,
                code=text,
                data=self._encode(path, text),
                original=module.data,
                codes=sorted({rule.code for rule, _ in self._kept[path]}),
                diff=unified_diff(module.text, text, str(path)),
            )
        return out

    def _encode(self, path: Path, text: str) -> bytes:
        module = self._module(path)
        assert not isinstance(module, str)
        return text.encode(module.facts.module.encoding)


def shown(folder: Path | None, path: Path) -> str:
    """A module's file as the user knows it: relative to the script's folder when it is inside it."""
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix() if folder is not None else str(path)
    except ValueError:
        return str(path)


def _new_problem(module: _Module, text: str, shown: str) -> str | None:
    """What the edited module breaks that the module did not: a parse error, or a name left undefined."""
    from .guard import names  # the guard plans passes with this module: imported when first used

    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return f"the edit of {shown} would not parse: {exc.msg} (line {exc.lineno})"
    added = names.new_findings(names.findings(module.tree), names.findings(tree))
    if added:
        return f"in {shown}, {names.describe(added)}"
    return None


__all__ = ["INSTALLED", "ModuleEdits", "Planner", "shown"]
