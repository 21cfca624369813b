"""`ddpfix apply -i` over every file a script's fix changes: the script, then each of its own modules.

The hunks of all of them are walked in one prompt (y/n/a/d/q, like `git add -p`) and what was chosen
is written all files or none, per script. A module's edits are dual-mode (a plain `python train.py`
runs as before with them), so a module's hunks are safe without the script's. The script's are not
always safe without the module's: a call that passes the new parameter (`build_loaders(...,
distributed=DISTRIBUTED)`) needs the hunk that adds it to the function (`distributed=False`). Such a
hunk says so (`needs hunk 2 of data_utils.py (adds the parameter distributed to build_loaders)`) and,
when chosen, brings that hunk along, with a note. Before anything is written the chosen texts are
checked together: every keyword the script passes to a function of an edited module, and every name
it imports from one, must be there in the module as chosen; if not, nothing of that script is written.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .api import fix_source
from .diagnostic import Result
from .interactive import FilePlan
from .transforms import BY_CODE

HELP = """y - apply this hunk
n - do not apply this hunk
a - apply this hunk and all later hunks in the file
d - do not apply this hunk or any later hunk in the file
q - quit; do not apply this hunk or any remaining one (hunks chosen so far are applied)
? - print help"""


# ---------------------------------------------------------------------------------------- the plans
def project_plans(
    path: str,
    original: bytes | str,
    result: Result,
    *,
    select=None,
    ignore=None,
    unsafe_fixes: bool = False,
    cross_file: bool = True,
) -> list[FilePlan]:
    """One plan per file the fix of the script at `path` changes: the script first, then its modules
    (`result.others`), with the needs of the script's hunks on the modules' hunks. `select`, `ignore`
    and `unsafe_fixes` are those the fix was made with."""
    solos: dict[str, dict[str, str]] = {path: {}, **{p: {} for p in result.others}}
    for code in result.applied_codes:
        try:
            solo = fix_source(original, path=path, select=[code], unsafe_fixes=unsafe_fixes, cross_file=cross_file)
        except Exception:
            continue
        solos[path][code] = solo.code
        for p, change in result.others.items():
            if code in change.codes:
                solos[p][code] = solo.others[p].code if p in solo.others else change.source
    entry = FilePlan(path, original, result, solos=solos[path], script=path)
    modules = [
        FilePlan(change.path, change.original, change, solos=solos[p], script=path)
        for p, change in result.others.items()
    ]
    plans = [entry, *modules]
    if any(not h.labels for p in plans for h in p.hunks):
        without: dict[str, dict[str, str]] = {p.path: {} for p in plans}
        for code in result.applied_codes:
            try:
                w = fix_source(
                    original,
                    path=path,
                    select=select,
                    ignore=[*(ignore or []), code],
                    unsafe_fixes=unsafe_fixes,
                    cross_file=cross_file,
                )
            except Exception:
                continue
            without[path][code] = w.code
            for p, change in result.others.items():
                if code in change.codes:
                    without[p][code] = w.others[p].code if p in w.others else change.source
        for plan in plans:
            plan.label_unlabelled(without[plan.path])
    link(entry, modules)
    return plans


@dataclass
class _Signature:
    params: dict[str, int]  # parameter -> its line
    any_keyword: bool  # takes **kwargs


def _signature(tree: ast.Module | None, name: str) -> _Signature | None:
    """The parameters of the top-level function `name` of a module, or of its class's __init__."""
    for node in tree.body if tree is not None else []:
        if isinstance(node, ast.ClassDef) and node.name == name:
            init = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
            node = init[0] if init else None
        elif not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name):
            continue
        if node is None:
            return None
        a = node.args
        params = {p.arg: p.lineno for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
        return _Signature(params, a.kwarg is not None)
    return None


def _top_names(tree: ast.Module | None) -> set[str]:
    out: set[str] = set()
    for node in tree.body if tree is not None else []:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            out.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return out


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _file(base: Path, parts: list[str]) -> str | None:
    target = base.joinpath(*parts)
    for candidate in (target.with_name(target.name + ".py"), target / "__init__.py"):
        if parts and candidate.is_file():
            return os.path.realpath(candidate)
    return None


def _imported(tree: ast.Module, script: str, modules: dict[str, FilePlan]) -> dict[str, tuple[FilePlan, str | None]]:
    """Names of the script bound to an edited module (name -> (module, None)) or to one of its
    top-level names (name -> (module, that name)). `modules`: real path -> plan."""
    folder = Path(os.path.realpath(script)).parent
    out: dict[str, tuple[FilePlan, str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = folder.parents[node.level - 2] if node.level > 1 else folder
            parts = node.module.split(".") if node.module else []
            whole = _file(base, parts)
            for a in node.names:
                if whole in modules:
                    out[a.asname or a.name] = (modules[whole], a.name)
                elif _file(base, [*parts, a.name]) in modules:
                    out[a.asname or a.name] = (modules[_file(base, [*parts, a.name])], None)
        elif isinstance(node, ast.Import):
            for a in node.names:
                target = _file(folder, a.name.split("."))
                if target in modules and (a.asname or "." not in a.name):
                    out[a.asname or a.name] = (modules[target], None)
    return out


def _calls(tree: ast.Module, names: dict[str, tuple[FilePlan, str | None]], lines: set[int] | None = None):
    """(line, module, function, keyword) for each keyword passed to a function of an edited module."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in names and names[f.id][1] is not None:
            plan, func = names[f.id]
        elif (
            isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and names.get(f.value.id, (0, 0))[1] is None
        ):
            plan, func = names[f.value.id][0], f.attr
        else:
            continue
        for k in node.keywords:  # by the keyword's own line: a call may span lines
            if k.arg is not None and (lines is None or k.lineno in lines):
                yield k.lineno, plan, func, k.arg


def link(entry: FilePlan, modules: list[FilePlan]) -> None:
    """Record on the script's hunks which hunks of its modules they need (HunkInfo.elsewhere)."""
    tree = _parse(entry.new)
    real = {os.path.realpath(m.path): m for m in modules}
    if tree is None or not real:
        return
    names = _imported(tree, entry.path, real)
    for line, plan, func, keyword in _calls(tree, names, set(entry.added_at)):
        old, new = _signature(_parse(plan.old), func), _signature(_parse(plan.new), func)
        if new is None or keyword not in new.params or (old is not None and (keyword in old.params or old.any_keyword)):
            continue
        hunk = plan.added_at.get(new.params[keyword])
        if hunk is not None:
            _need(
                entry.hunks[entry.added_at[line]].elsewhere,
                (plan.path, hunk),
                f"adds the parameter {keyword} to {func}",
            )
    old_names = {m.path: _top_names(_parse(m.old)) for m in modules}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.lineno in entry.added_at:
            for a in node.names:
                plan, name = names.get(a.asname or a.name, (None, None))
                if plan is None or name is None or name in old_names[plan.path]:
                    continue
                for h in plan.hunks:
                    if name in h.defines:
                        _need(
                            entry.hunks[entry.added_at[node.lineno]].elsewhere, (plan.path, h.index), f"defines {name}"
                        )


def _need(needs: dict[tuple[str, int], str], key: tuple[str, int], why: str) -> None:
    if why not in needs.get(key, "").split(", "):
        needs[key] = f"{needs[key]}, {why}" if key in needs else why


def cross_problem(entry: FilePlan, text: str, modules: dict[str, tuple[FilePlan, str]]) -> str | None:
    """Why the script's chosen `text` does not work with its modules as chosen (`modules`: path ->
    (plan, chosen text)): it passes a keyword the fix adds to a module's function that the module's
    chosen text lacks, or imports a name from a module that the chosen text does not define."""
    tree = _parse(text)
    real = {os.path.realpath(p): plan for p, (plan, _) in modules.items()}
    if tree is None or not real:
        return None
    names = _imported(tree, entry.path, real)
    chosen = {p: _parse(t) for p, (_, t) in modules.items()}
    for _, plan, func, keyword in _calls(tree, names):
        full, now = _signature(_parse(plan.new), func), _signature(chosen[plan.path], func)
        if full is not None and now is not None and keyword in full.params:
            if keyword not in now.params and not now.any_keyword:
                return f"{entry.path} passes {keyword}= to {func}, which {plan.path} as chosen does not take"
    for plan, attr in names.values():
        if attr is not None and attr in _top_names(_parse(plan.new)) and attr not in _top_names(chosen[plan.path]):
            return f"{entry.path} imports {attr} from {plan.path}, which {plan.path} as chosen does not define"
    return None


# ---------------------------------------------------------------------------------------- the prompt
@dataclass
class Outcome:
    path: str
    text: str | None  # None: write nothing
    data: bytes | None
    chosen: set[int]
    total: int
    script: str = ""  # the script whose fix this file belongs to
    original: bytes | None = None  # the bytes read (a file changed on disk since is not written)


def walk(
    plans: list[FilePlan],
    ask: Callable[[str], str | None],
    say: Callable[[str], None],
    show: Callable[[str], None],
) -> list[Outcome]:
    """Ask about every hunk of every file; returns what to write per file. `ask` returns None at end of input."""
    chosen: list[set[int]] = [set() for _ in plans]
    quit_all = False
    for k, plan in enumerate(plans):
        if not plan.hunks or quit_all:
            continue
        say(
            f"--- {plan.path}: {len(plan.hunks)} hunk(s)"
            + (f", edited for {plan.script}" if plan.script != plan.path else "")
        )
        rest: str | None = None  # "a" or "d" for the remaining hunks of this file
        for info in plan.hunks:
            if rest is not None:
                if rest == "a":
                    chosen[k].add(info.index)
                continue
            labels = ", ".join(f"{c} {BY_CODE[c].name}" if c in BY_CODE else c for c in info.labels) or "unlabelled"
            say(f"[{info.index + 1}/{len(plan.hunks)}] {plan.path}: {labels}")
            needs = [f"hunk {j + 1} ({why})" for j, why in sorted(info.needs.items())]
            needs += [f"hunk {j + 1} of {p} ({why})" for (p, j), why in sorted(info.elsewhere.items())]
            if needs:
                say("  needs " + "; ".join(needs))
            show(str(info.hunk))
            answer = _ask(ask, say, "Apply this hunk [y,n,a,d,q,?]? ")
            if answer in ("y", "a"):
                chosen[k].add(info.index)
            if answer in ("a", "d"):
                rest = answer
            elif answer == "q":
                quit_all = True
                break
    return settle(plans, chosen, say)


def settle(plans: list[FilePlan], chosen: list[set[int]], say: Callable[[str], None]) -> list[Outcome]:
    """What to write for the chosen hunks: each file's needs added (across files too), each file valid,
    and each script's files together consistent; else nothing of that script."""
    out = []
    for script in dict.fromkeys(p.script for p in plans):
        group = [k for k, p in enumerate(plans) if p.script == script]
        by_path = {plans[k].path: k for k in group}
        picks = {k: set(chosen[k]) for k in group}
        cross_notes: list[str] = []
        while True:
            texts = {k: plans[k].select(picks[k]) for k in group}
            more = False
            for k in group:
                for i in sorted(texts[k][1]):
                    for (path, j), why in sorted(plans[k].hunks[i].elsewhere.items()):
                        if path in by_path and j not in picks[by_path[path]]:
                            picks[by_path[path]].add(j)
                            more = True
                            cross_notes.append(
                                f"{plans[k].path}: hunk {i + 1} needs hunk {j + 1} of {path} ({why}): including it"
                            )
            if not more:
                break
        for k in group:
            for note in texts[k][2]:
                say(f"{plans[k].path}: {note}")
        for note in cross_notes:
            say(note)
        refused = [plans[k].path for k in group if picks[k] and texts[k][0] is None]
        if not refused and picks[group[0]]:
            modules = {plans[k].path: (plans[k], texts[k][0] or plans[k].old) for k in group[1:]}
            problem = cross_problem(plans[group[0]], texts[group[0]][0] or "", modules)
            if problem:
                say(f"{script}: {problem}; nothing written for {script} and its modules")
                refused = [script]
        elif refused and len(group) > 1:
            say(f"{script}: nothing written for {script} and its modules (its files are written all or none)")
        for k in group:
            plan, (text, final, _) = plans[k], texts[k]
            if refused or not picks[k]:
                text = None
            data = None
            if text is not None:
                data = plan.data_all if final == set(range(len(plan.hunks))) and plan.data_all else plan.encode(text)
            original = plan.original if isinstance(plan.original, bytes) else None
            out.append(Outcome(plan.path, text, data, final if picks[k] else set(), len(plan.hunks), script, original))
    return out


def _ask(ask: Callable[[str], str | None], say: Callable[[str], None], prompt: str) -> str:
    while True:
        raw = ask(prompt)
        if raw is None:  # end of input: stop asking
            return "q"
        answer = raw.strip().lower()[:1]
        if answer in ("y", "n", "a", "d", "q"):
            return answer
        say(HELP)


__all__ = ["HELP", "Outcome", "cross_problem", "link", "project_plans", "settle", "walk"]
