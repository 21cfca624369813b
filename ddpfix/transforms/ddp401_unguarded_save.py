"""DDP401: torch.save on every rank."""

from __future__ import annotations

import libcst as cst

from ..analysis.effects import IN_MEMORY_FILES, WRITERS
from ..analysis.local_writes import EVERY_RANK_SAVE
from ..edits import guard, guard_site
from ..examples import clean, fixes
from ..factory_reports import report_factory_writes
from ..module_guards import guard_module_writes, guard_statements, is_save
from ..rule import Context, Rule
from ..syntax import assigned_value, calls_in, code_of, dotted, kwarg, method_name, positional, walk
from .ddp420_makedirs_race import clears_a_fresh_folder


class UnguardedSave(Rule):
    code = "DDP401"
    distributed_only = True
    name = "unguarded-save"
    provides = frozenset({"hoisted"})  # its guards take training and collectives out first (guard_site)
    message = "torch.save runs on every rank: all processes write the same file"
    requires = ()
    docs = """
## What
`torch.save(...)` (and `np.save`, `save_image`, `savefig`, `imageio.mimsave`/`imwrite`,
`cv2.imwrite`, `torchaudio.save`, `joblib.dump`, `save_pretrained`, a pandas frame's `to_csv(path)` / `to_json` /
`to_pickle` / `to_parquet` / `to_excel`, a figure's `fig.savefig(path)`, a matplotlib animation's
`anim.save(path)`) on every rank, and a `shutil.copyfile` /
`shutil.copy` / `shutil.move` / `os.replace` / `os.rename` of a file such a save writes. A deletion
is a write too: `os.remove` / `os.unlink` / `os.rmdir` / `shutil.rmtree` / `Path(p).unlink()` of a
path shared by the ranks (the old checkpoints a `glob` lists, a log folder emptied before
`os.makedirs`), not of one made per rank or per process (`tempfile.mkstemp()`, `os.getpid()`). Code only
rank 0 runs is left alone: inside `if rank == 0:` (or any rank-0 test the rank detector knows),
after `if rank != 0: return`, in `save_on_master`-style helpers, or in a function only called from
such places. A file named per rank (`f"ckpt_rank{rank}.pt"`) is not shared.

## Why
Every process writes the same path at the same time: the checkpoint is clobbered or torn, and N
processes do the I/O of one. Every process deleting the same path fails on all ranks but the first with
`FileNotFoundError`, or deletes what another rank has just written there. A copy of the checkpoint on every rank reads a file rank 0 may still be
writing, and every rank writes the copy.

## Example
```python
def save_checkpoint(state, is_best, filename="checkpoint.pt"):
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, "model_best.pt")
```
becomes
```python
def save_checkpoint(state, is_best, filename="checkpoint.pt"):
    if RANK == 0:
        torch.save(state, filename)
        if is_best:
            shutil.copyfile(filename, "model_best.pt")
```
Adjacent statements that need the same guard (a print, a log line, the copy) share the one `if`. A
`with open(path, "wb") as f: torch.save(..., f)` is guarded as a whole, since the `open` truncates.

A save inside one of the script's own modules with no rank test around it there (`trainer.fit()`
of a `Trainer` class in `trainer.py` that ends in `torch.save`, or in any writer of the list above
but the methods: `imageio.mimsave`, `np.save`, ...) is reported at the script's call,
with the module's file and line, and the fix guards it in the module, with a test decided at run
time that holds in a plain run and on rank 0 however the ranks were launched, so that every entry
point importing the module stays correct:
```python
    def save(self, path):
        if not dist.is_initialized() or dist.get_rank() == 0:
            torch.save(self.model.state_dict(), path)
```
A copy of the saved file there (`if is_best: shutil.copyfile(filename, "model_best.pth.tar")` after
the save in a `save_checkpoint` helper) is guarded with it, as in the script.
Where the module may not be edited (outside the script's folder, installed, read-only, run as a
program of its own, `--no-cross-file`) or the save shares its line with other code, the finding
comes without a fix and says why.

A save into memory (`buf = io.BytesIO(); torch.save(state, buf)`, to copy a state) writes no file
and is left alone, in the script and in its modules.

Objects a config names by class (`init_obj(module_trainer, config["trainer"], model, ...)`, a factory
of the script's own modules that returns `getattr(module, cfg["type"])(...)`) are built from a class
chosen at run time: a trainer built that way and handed the trained model, whose
methods (or its base classes') save on every rank, is reported at the factory call with the save's
file and line. The fix guards the saves of every class the module offers, as above, whichever the
config names (DDP402 and DDP406 fix its `state_dict()` of the wrapper and its prints the same way);
where one cannot be guarded, none is, and the finding says why.

## Fix safety
Safe. Uses the global `RANK` (one writer per job, not per node). A statement around the copy
(`if is_best:`) joins the save's guard only when it binds no name and runs no collective or training
step; otherwise the copy gets its own guard.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        ranks = facts.ranks
        saved: dict[cst.CSTNode, set[str]] = {}  # scope -> the paths its saves write (rank 0 only, now or once fixed)
        for call in facts.index.statement_calls(lambda c: _writes_file(facts, c)):
            path = _path_of(facts, call)
            if path is not None and ranks.depends_on_rank(path.value):
                continue  # one file per rank: f"ckpt_rank{rank}.pt"
            if path is not None:
                saved.setdefault(facts.index.scope_of(call), set()).add(code_of(path.value))
            name = "torch.save" if facts.names.call_qual(call) == "torch.save" else (dotted(call.func) or "this call")
            guard_site(
                ctx,
                call,
                None if name == "torch.save" else f"{name} runs on every rank: all processes write the same file",
            )
        _guard_copies(ctx, saved)
        _guard_removals(ctx)
        harm = "all processes write the same file"
        guard_module_writes(ctx, self, EVERY_RANK_SAVE, None, harm, is_save, None, _module_planner)
        report_factory_writes(ctx, EVERY_RANK_SAVE, "torch.save", harm, is_save, _module_planner)


def _guard_copies(ctx: Context, saved: dict[cst.CSTNode, set[str]]) -> None:
    """Guard the copies and moves of a file a save of the same scope writes (`saved`: scope -> paths):
    with the save when they share its block (`if is_best: shutil.copyfile(filename, ...)`)."""
    facts = ctx.facts
    for call in facts.index.statement_calls(lambda c: facts.names.call_qual(c) in FILE_MOVES):
        paths = saved.get(facts.index.scope_of(call), set())
        if not any(code_of(a.value) in paths for a in call.args[:2]) or facts.ranks.rank_guarded(call):
            continue
        name = dotted(call.func) or "this call"
        message = f"{name} of a file rank 0 saves runs on every rank: every process copies a file still being written"
        stmt = _together_with(facts, call, ctx.plan.guards)
        if stmt is None:
            guard_site(ctx, call, message)
        elif ctx.report(call, message):
            guard(ctx, stmt, ctx.rank0(call))


def _guard_removals(ctx: Context) -> None:
    """Guard the deletions of a shared path (`os.remove(name)` of the files a `glob` lists,
    `shutil.rmtree(log_dir)` before `os.makedirs(log_dir)`): on every rank, all but one rank fail on a
    file already gone, and a rank can delete what another has just written there. A path made per
    rank or per process (`tempfile.mkstemp()`, `f"tmp_{os.getpid()}"`) is left alone."""
    facts = ctx.facts
    for call in facts.index.statement_calls(lambda c: _removes(facts, c)):
        arg = positional(call, 0) or kwarg(call, "path")
        value = call.func.value if arg is None and isinstance(call.func, cst.Attribute) else arg and arg.value
        if value is None or facts.ranks.depends_on_rank(value) or _every_value(facts, value, _per_process(facts)):
            continue
        if clears_a_fresh_folder(facts, call):
            continue  # DDP420's: rank 0 makes the folder afresh, and the others wait for it
        name = dotted(call.func) or "this call"
        guard_site(
            ctx,
            call,
            f"{name} runs on every rank: every process deletes the same path, and a rank can delete what another has just written there",
        )


def _removes(facts, call: cst.Call) -> bool:
    """`os.remove(p)` and the other deletions of a path, `Path(p).unlink()` / `.rmdir()` too."""
    if facts.names.call_qual(call) in REMOVERS:
        return True
    return isinstance(call.func, cst.Attribute) and method_name(call) in ("unlink", "rmdir") and not call.args[1:]


def _module_planner(lines: list[int], what: str, match, where: str, guarded: list[int]):
    """In one of the script's own modules: the saves at `lines` guarded to rank 0 (module_guards.py),
    and the copies of the files they write with them (`save_checkpoint(state, is_best, filename)`
    ending in `if is_best: shutil.copyfile(filename, "model_best.pth.tar")`)."""
    saves = guard_statements(lines, what, match, where, guarded)

    def plan(ctx: Context) -> str | None:
        why = saves(ctx)
        if why is not None:
            return why
        facts = ctx.facts
        saved: dict[cst.CSTNode, set[str]] = {}
        for call in facts.index.statement_calls(lambda c: is_save(facts, c)):
            path = _path_of(facts, call)
            if path is not None and facts.index.position(call).start.line in lines:
                saved.setdefault(facts.index.scope_of(call), set()).add(code_of(path.value))
        _guard_copies(ctx, saved)
        return None

    return plan


REMOVERS = {"os.remove", "os.unlink", "os.rmdir", "os.removedirs", "shutil.rmtree"}
PER_PROCESS = {"tempfile.mkstemp", "tempfile.mkdtemp", "tempfile.mktemp", "tempfile.gettempdir", "os.getpid"}
FILE_MOVES = {"shutil.copyfile", "shutil.copy", "shutil.copy2", "shutil.move", "os.replace", "os.rename"}


# methods that write the file they are given: a model's save_pretrained, a pandas frame's to_csv and
# the like (which return text without a path), a matplotlib figure's savefig
METHOD_WRITERS = {
    "save_pretrained": (0, "save_directory"),
    "to_csv": (0, "path_or_buf"),
    "to_json": (0, "path_or_buf"),
    "to_pickle": (0, "path"),
    "to_parquet": (0, "path"),
    "to_excel": (0, "excel_writer"),
    "savefig": (0, "fname"),
}


def _writes_file(facts, call) -> bool:
    """torch.save and the other common writers of checkpoints and artefacts (`save_pretrained`,
    `df.to_csv(path)`, `fig.savefig(path)` too), not into an in-memory buffer (`buf = io.BytesIO();
    torch.save(state, buf)`)."""
    if facts.names.call_qual(call) in WRITERS:
        path = _path_of(facts, call)
        return path is None or not _in_memory(facts, path.value)
    method = method_name(call)
    if method == "save" and isinstance(call.func, cst.Attribute) and _animation(facts, call.func.value):
        return True  # `anim.save("celeba.gif", writer="imagemagick")`
    if method not in METHOD_WRITERS or not isinstance(call.func, cst.Attribute):
        return False
    path = _path_of(facts, call)
    return method == "save_pretrained" or (path is not None and not _in_memory(facts, path.value))


def _animation(facts, value: cst.BaseExpression) -> bool:
    """A matplotlib animation (`animation.ArtistAnimation(...)`, `FuncAnimation(...)`), or a name every
    assignment of which in its scope is one: its `save(path)` writes the file."""
    return _every_value(
        facts,
        value,
        lambda v: isinstance(v, cst.Call) and (facts.names.call_qual(v) or "").startswith("matplotlib.animation."),
    )


def _in_memory(facts, value: cst.BaseExpression) -> bool:
    """`io.BytesIO()`, or a name every assignment of which in its scope is one."""
    return _every_value(facts, value, lambda v: isinstance(v, cst.Call) and facts.names.call_qual(v) in IN_MEMORY_FILES)


def _per_process(facts):
    """A test of a path made for this process alone (by `tempfile`, or naming `os.getpid()`)."""
    return lambda v: v is not None and any(facts.names.call_qual(c) in PER_PROCESS for c in calls_in(v))


def _every_value(facts, value: cst.BaseExpression, test) -> bool:
    """Does `test` hold for `value`, or, for a name, for the value of every assignment of it in its
    scope (at least one)?"""
    if test(value):
        return True
    name = dotted(value)
    if name is None or isinstance(value, cst.Call):
        return False
    sites = facts.names.assignments(facts.index.scope_of(value), name)
    values = [assigned_value(site.stmt) for site in sites]
    return bool(values) and all(test(v) for v in values)


def _path_of(facts, call: cst.Call) -> cst.Arg | None:
    spec = WRITERS.get(facts.names.call_qual(call) or "") or METHOD_WRITERS.get(method_name(call) or "")
    index, keyword = spec or (0, "save_directory")
    return positional(call, index) or kwarg(call, keyword)


def _together_with(facts, call: cst.Call, guarded) -> cst.CSTNode | None:
    """The statement that holds `call` in the block of a save this rule guards, when guarding it
    whole is harmless (`if is_best: shutil.copyfile(filename, "model_best.pth")` after the save):
    it then shares the save's guard. None: guard the call's own statement."""
    stmt = facts.index.site(call).stmt
    for anc in [stmt, *facts.index.ancestors(stmt)]:
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return None
        block = facts.index.parent.get(anc)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            continue
        if any(s in guarded for s in block.body):
            if anc is stmt or _binds_names(anc) or facts.ranks.collectives_in(anc) or _trains(anc):
                return None
            return anc
    return None


def _trains(stmt: cst.CSTNode) -> bool:
    return any(method_name(c) in ("backward", "step") for c in calls_in(stmt))


def _binds_names(stmt: cst.CSTNode) -> bool:
    return any(
        isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.AsName, cst.For))
        for n in walk(stmt)
    )


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            torch.save(model.module.state_dict(), f"epoch{epoch}.pt")
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            if RANK == 0:
                torch.save(model.module.state_dict(), f"epoch{epoch}.pt")
        """,
        note="One writer per job: the global rank 0:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            if dist.get_rank() == 0:
                torch.save(model.module.state_dict(), f"epoch{epoch}.pt")
        """,
        note="Saved on rank 0 only:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def save(model, path):
            torch.save(model.module.state_dict(), path)


        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            save(model, "model.pt")
        """,
        note="A helper that saves, called on rank 0 only:",
    ),
)
