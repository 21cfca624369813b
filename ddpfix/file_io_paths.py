"""The files a call saves or loads, as texts to compare (DDP410, DDP421): the path argument of
`torch.save(obj, path)`, `torch.load(path)` and the other common writers and readers of files, or
the paths a helper of this file or of the script's modules names."""

from __future__ import annotations

import re

import libcst as cst

from .analysis.effects import WRITERS
from .analysis.file_paths import READERS, path_shapes, path_text
from .analysis.summaries import LOAD, SAVE
from .helper_paths import helper_paths
from .syntax import calls_in, dotted, kwarg, positional


def file_paths(facts, call: cst.Call, effect: str) -> set[str]:
    """The texts naming the file `call` saves (effect SAVE) or loads (LOAD): the path argument of
    `torch.save(obj, path)`, `torch.load(path)` and the other common writers and readers of files
    (`plt.savefig`, `imageio.imread`, `np.load`, ...), or every argument of a helper that does one,
    in this file (`save_checkpoint(state, path)`, `show_result(..., path=p)`) or in one of the
    script's modules (`utils.save_on_master`). Paths built around a loop's number compare by their
    literal parts (analysis/file_paths.py)."""
    table = WRITERS if effect == SAVE else READERS
    q = facts.names.call_qual(call)
    if q in table:
        index, keyword = table[q]
        path = positional(call, index) or kwarg(call, keyword)
        return path_shapes(facts, path.value) if path is not None else set()
    if q in WRITERS or q in READERS:
        return set()
    callee = facts.index.callee_of(call)
    if callee is not None:
        # a function of this file that saves through a helper of the script's modules
        # (`train()` calling `utils.save_checkpoint(model, ..., args)`): that helper's file
        inner = {
            p for c in calls_in(callee.body) if facts.index.callee_of(c) is None for p in helper_paths(facts, c, effect)
        }
        if not any(facts.names.call_qual(c) in table for c in calls_in(callee.body)):
            return inner
        return _arg_paths(facts, call) | _literal_paths(facts, callee, effect) | inner
    if not facts.modules.call_does(call, effect):
        return set()
    return _arg_paths(facts, call) | helper_paths(facts, call, effect)


WRITES = {"shutil.copyfile": 1, "shutil.copy": 1, "shutil.copy2": 1, "shutil.move": 1, "os.replace": 1, "os.rename": 1}


def _arg_paths(facts, call: cst.Call) -> set[str]:
    """The texts of the arguments of a save or load helper that name its file."""
    return {t for a in call.args if _names_a_file(a) for t in path_shapes(facts, a.value)}


def _literal_paths(facts, func: cst.FunctionDef, effect: str) -> set[str]:
    """The files a helper of this file names itself: `torch.save(state, "last.pt")`,
    `shutil.copyfile(filename, "best.pt")`, or a parameter's default (`filename="last.pt"`)."""
    defaults = {p.name.value: p.default for p in func.params.params if isinstance(p.default, cst.SimpleString)}
    out: set[str] = set()
    for call in calls_in(func.body):
        q = facts.names.call_qual(call) or ""
        if effect == SAVE and q == "torch.save":
            arg = positional(call, 1) or kwarg(call, "f")
        elif effect == SAVE and q in WRITES:
            arg = positional(call, WRITES[q])
        elif effect == LOAD and q == "torch.load":
            arg = positional(call, 0) or kwarg(call, "f")
        else:
            continue
        if arg is None:
            continue
        value = arg.value
        if isinstance(value, cst.Name) and value.value in defaults:
            value = defaults[value.value]
        if isinstance(value, cst.SimpleString):
            out.add(path_text(value))
    return out


PATHLIKE = re.compile(r"path|file|dir|ckpt|checkpoint|fname|out|resume|weights|save|best|last", re.IGNORECASE)


def _names_a_file(arg: cst.Arg) -> bool:
    """An argument of a save or load helper that names its file: a string, a path built with
    `os.path.join` / `Path`, a name spelled like one (`ckpt_path`, `args.resume`), or anything passed
    for a parameter spelled like one (`path=fixed_p`)."""
    if arg.keyword is not None and PATHLIKE.search(arg.keyword.value):
        return True
    expr = arg.value
    if isinstance(expr, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return True
    if isinstance(expr, cst.Call):
        return bool(re.search(r"(^|\.)(join|Path)$", dotted(expr.func) or ""))
    name = dotted(expr)
    return name is not None and bool(PATHLIKE.search(name.split(".")[-1]))
