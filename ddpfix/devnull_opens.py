"""A file every rank opens for writing and keeps open, whose uses no guard can follow one by one
(`log = open(path, "w")` handed on or printed to, `self.file = open("scores.txt", "w")` in a method of
the script's modules, written by the class's other methods): rank 0 opens the file, the other ranks
os.devnull with the same mode, so every use runs unchanged on every rank and the file is written once:

    self.file = open("scores.txt", "w") if not dist.is_initialized() or dist.get_rank() == 0 else open(os.devnull, "w")

Not for a file that is read as well (`"r+"`, `"a+"`) or read back elsewhere in the same file (the
other ranks could read it before rank 0 has written it): those are left to the user.
"""

from __future__ import annotations

import libcst as cst

from .analysis.file_paths import READERS, path_shapes
from .edits import opens_for_writing
from .module_guards import guard_statements
from .rule import Context
from .syntax import assign_targets, assigned_value, dotted, kwarg, positional, string_value


def devnull_open(ctx: Context, call: cst.Call) -> None:
    """Plan `call`, an open for writing, to open os.devnull on the ranks other than 0."""
    os_module = ctx.plan.ref("os", "os", style="import")
    nowhere = call.with_changes(
        args=[call.args[0].with_changes(value=cst.parse_expression(f"{os_module}.devnull")), *call.args[1:]]
    )
    test = cst.parse_expression(ctx.rank0(call))
    # `with (open(...) if RANK == 0 else open(os.devnull, "a")) as log:` reads as one item
    parens = {"lpar": [cst.LeftParen()], "rpar": [cst.RightParen()]}
    wrap = parens if type(ctx.facts.index.parent.get(call)) is cst.WithItem else {}
    ctx.plan.replace(call, lambda n, t=test, o=nowhere: cst.IfExp(test=t, body=n, orelse=o, **wrap))


def devnull_or_guard(lines: list[int], what: str, match, where: str, guarded: list[int]):
    """`module_guards.guard_statements`, except for an open for writing whose file is bound to a name
    (`self.file = open(...)`), which opens os.devnull on the other ranks instead (module planner)."""

    def plan(ctx: Context) -> str | None:
        facts = ctx.facts
        rest = []
        bound = _bound_opens(facts)
        for line in lines:
            call = next((c for c in bound if facts.index.position(c).start.line == line), None)
            if call is None:
                rest.append(line)
                continue
            read = read_back(facts, call)
            if read is not None or reads_too(call):
                why = f"read back at {where}:{read}" if read is not None else "read as well as written"
                return f"the file opened for writing at {where}:{line} is {why}: open and use it on rank 0 only"
            ctx.joins_elsewhere()
            devnull_open(ctx, call)
            guarded.append(line)
        return guard_statements(rest, what, match, where, guarded)(ctx) if rest else None

    return plan


def _bound_opens(facts) -> list[cst.Call]:
    """`name = open(path, "w")` / `self.file = open(path, "w")`: an open for writing, the whole value of
    an assignment to one target."""
    out = []
    for call in facts.index.calls:
        if dotted(call.func) != "open" or not opens_for_writing(call):
            continue
        stmt = facts.index.site(call).stmt
        if assigned_value(stmt) is call and len(assign_targets(stmt)) == 1:
            out.append(call)
    return out


def read_back(facts, call: cst.Call) -> int | None:
    """The line of a read of the file `call` opens for writing: an `open` not for writing
    (`pickle.load(open(path, "rb"))`) or a common reader (`np.load(path)`, file_paths.READERS), its
    path compared as DDP410 compares them (`path_shapes`); None if there is none."""
    written = _path_shapes_of(facts, call, (0, "file"))
    for other in facts.index.calls:
        if other is call:
            continue
        if dotted(other.func) == "open":
            if opens_for_writing(other):
                continue
            slot = (0, "file")
        else:
            slot = READERS.get(facts.names.call_qual(other) or "")
            if slot is None:
                continue
        if written & _path_shapes_of(facts, other, slot):
            return facts.index.position(other).start.line
    return None


def reads_too(call: cst.Call) -> bool:
    """`open(path, "r+")`, `open(path, "a+")`: a file read as well as written (or one whose path is
    not the first argument)."""
    mode = positional(call, 1) or kwarg(call, "mode")
    text = string_value(mode.value) if mode is not None else "r"
    return not call.args or call.args[0].keyword is not None or text is None or "+" in text


def _path_shapes_of(facts, call: cst.Call, slot: tuple[int, str]) -> set[str]:
    path = positional(call, slot[0]) or kwarg(call, slot[1])
    return path_shapes(facts, path.value) if path is not None else set()


__all__ = ["devnull_open", "devnull_or_guard", "read_back", "reads_too"]
