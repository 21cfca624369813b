"""Launch: how the script starts and joins a process group — its entry point, the process-group and
device calls it already makes, `mp.spawn`, and the module-level names bound to torchrun's environment."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cached_property

import libcst as cst

from ..syntax import assign_targets, assigned_value, code_of, dotted, expr_call, is_main_guard, kwarg, mentions, walk
from .flow import reads
from .index import TreeIndex
from .modules import LocalModules
from .names import ENV_LOOKUP, Names
from .options import Options
from .summaries import DESTROY, INIT
from .training import Training

# A helper that by its name may join the process group (`init_distributed_mode`, `setup_ddp`, `dist_init`,
# a bare `setup(rank, world_size)`), when the module it comes from cannot be read; `setup_logger` is not one.
MAY_JOIN = re.compile(
    r"^(setup|init|initiali[sz]e|launch)$"
    r"|(init|setup|start|launch)[a-z0-9_]*(dist|ddp|process_group|parallel|multiprocess)"
    r"|(dist|ddp|distributed)[a-z0-9_]*(init|setup)",
    re.IGNORECASE,
)
# Helpers whose names say they set the device up: only these are read for it (reading a module costs).
DEVICE_NAME = re.compile(r"device|gpu|cuda|setup|init|dist|launch|rank", re.IGNORECASE)
CLEANUP_NAME = re.compile(r"clean|destroy|teardown|tear_down|finali[sz]e|shutdown|dist", re.IGNORECASE)
# `int(os.environ.get("RANK", -1)) != -1`, `int(os.environ.get("WORLD_SIZE", 1)) > 1` (or `>= 2`, `!= 1`),
# `"WORLD_SIZE" in os.environ`: "this run is distributed"
DISTRIBUTED_FLAG = re.compile(
    r"(RANK['\"]\s*,\s*-1\s*\)\s*\)\s*(!=\s*-1|>=\s*0)|WORLD_SIZE['\"].*\)\s*(>\s*1|>=\s*2|!=\s*1))$"
)
IN_ENVIRONMENT = re.compile(r"^['\"](WORLD_SIZE|RANK|LOCAL_RANK)['\"]\s+in\s+(os\.)?environ$")


def may_join(call: cst.Call) -> bool:
    """Does `call`, by the name of what it calls, look like it joins the process group?"""
    return bool(MAY_JOIN.search((dotted(call.func) or "").rsplit(".", 1)[-1]))


class Launch:
    """Entry point, process-group calls and torchrun's environment."""

    def __init__(self, index: TreeIndex, names: Names, training: Training, modules: LocalModules) -> None:
        self.index = index
        self.names = names
        self.training = training
        self.modules = modules
        self.options = Options(index)

    @cached_property
    def init_calls(self) -> list[cst.Call]:
        return self.names.torch_calls_ending("init_process_group")

    @cached_property
    def joins_elsewhere(self) -> bool | None:
        """Does the script join a process group through its own modules (`utils.init_distributed_mode(args)`)?
        True; None when it calls a setup-looking function of a module that could not be read; else False."""
        unknown = False
        for call in self.index.calls:
            joins = self.modules.call_does(call, INIT)
            if joins:
                return True
            if joins is None and may_join(call):
                unknown = True
        return None if unknown else False

    @cached_property
    def set_device_calls(self) -> list[cst.Call]:
        return self.names.calls_to("torch.cuda.set_device")

    @cached_property
    def destroy_calls(self) -> list[cst.Call]:
        return self.names.torch_calls_ending("destroy_process_group")

    @cached_property
    def helper_joins(self) -> list[cst.Call]:
        """Calls of helpers of the script's own modules that join the process group (none looked for
        where the script calls init_process_group itself)."""
        if self.init_calls or not self.is_program or not self.joins_elsewhere:
            return []  # (a module others import is not read for a process group of its own)
        return [c for c in self.index.calls if self.modules.call_does(c, INIT)]

    @cached_property
    def joins_only_on_cuda(self) -> bool:
        """Does the script join its process group only through helpers of its own modules that join
        only after committing to a GPU (`utils.init_distributed_mode(args)` calling
        `torch.cuda.set_device(args.gpu)` first), with no unread module's setup-looking call that could
        join too? Then a DDP wrap, which needs that group, runs only where CUDA is."""
        helpers = self.helper_joins
        if not helpers or any(self.modules.call_does(c, INIT) is None and may_join(c) for c in self.index.calls):
            return False
        return all(self.modules.joins_on_cuda(c) for c in helpers)

    def helper_does(self, call: cst.Call, effect: str) -> bool:
        """Does `call`, a call of a device-looking helper of the script's own modules, do `effect`?"""
        return bool(DEVICE_NAME.search(dotted(call.func) or "")) and bool(self.modules.call_does(call, effect))

    @cached_property
    def tears_down(self) -> bool | None:
        """Does the script destroy its process group itself, in this file or through a helper of its
        own modules? None when it calls a cleanup-looking function of a module that could not be read."""
        if self.destroy_calls:
            return True
        unknown = False
        for call in self.index.calls:
            does = self.modules.call_does(call, DESTROY)
            if does:
                return True
            if does is None and CLEANUP_NAME.search(dotted(call.func) or ""):
                unknown = True
        return None if unknown else False

    @cached_property
    def spawn_calls(self) -> list[cst.Call]:
        return self.names.calls_to("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes")

    @cached_property
    def process_starts(self) -> list[cst.Call]:
        """`Process(target=main_fun, args=(rank, world_size, opt))` in a loop: the script starts its
        workers itself, one `multiprocessing.Process` each (run with python, not torchrun)."""
        return [
            c
            for c in self.names.calls_to("multiprocessing.Process", "torch.multiprocessing.Process")
            if kwarg(c, "target") is not None
        ]

    @cached_property
    def env_names(self) -> dict[str, str]:
        """Module-level names already bound to torchrun's environment: {"RANK": "RANK", ...}.

        Recognises `X = int(os.environ[...]("RANK"...))` and `DISTRIBUTED = WORLD_SIZE > 1` shapes.
        """
        found: dict[str, str] = {}
        for stmt in self.index.module.body:
            targets = assign_targets(stmt)
            value = assigned_value(stmt)
            if (
                len(targets) != 1
                or value is None
                or not (self.names.reads_environment(stmt) or isinstance(value, cst.Comparison))
            ):
                continue
            text = code_of(value)
            m = ENV_LOOKUP.search(text)
            if isinstance(value, cst.Comparison) and (m or IN_ENVIRONMENT.match(text)):
                # a flag, not the rank: `ddp = ... != -1`, `"WORLD_SIZE" in os.environ`
                if DISTRIBUTED_FLAG.search(text) or IN_ENVIRONMENT.match(text):
                    found.setdefault("DISTRIBUTED", targets[0])
                continue
            if m:
                found.setdefault(m.group(1), targets[0])
            elif "WORLD_SIZE" in found and re.fullmatch(rf"{re.escape(found['WORLD_SIZE'])}\s*>\s*1", text):
                found.setdefault("DISTRIBUTED", targets[0])
        return found

    # ----------------------------------------------------------------- the script's own launch path
    @cached_property
    def own_path(self) -> str | None:
        """How the script joins its process group on its own terms, when torchrun's environment does
        not decide it: "mp.spawn" or "multiprocessing.Process", an option of its own (`--local_rank`), a flag of its own around
        init_process_group (`args.distributed`), or a helper of its own modules (which may also not
        join: then nothing that needs the group may run). None for scripts driven by torchrun's
        environment."""
        if self.spawn_calls:
            return "mp.spawn"
        if self.process_starts:
            return "multiprocessing.Process"
        if not self.init_calls:
            if not self.is_program or self.joins_elsewhere is False:
                return None
            return "a helper of its own modules"
        for call in self.init_calls:
            for test in self.tests_around(call):
                if not self._env_driven(test):
                    return f"`{code_of(test)}`"
        if self.options.launch:
            return self.options.launch[0].flags[0]
        return None

    def tests_around(self, node: cst.CSTNode) -> list[cst.BaseExpression]:
        """The conditions of the `if`s (and `x if c else y`) whose true branch holds `node`."""
        out = []
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, (cst.If, cst.IfExp)) and child is anc.body:
                out.append(anc.test)
            child = anc
        return out

    def _env_driven(self, test: cst.BaseExpression, depth: int = 0) -> bool:
        """Is `test` decided by torchrun's environment (`DISTRIBUTED`, `world_size > 1` with
        `world_size = int(os.environ["WORLD_SIZE"])`, `"RANK" in os.environ`, `dist.is_available()`)?"""
        text = code_of(test)
        if ENV_LOOKUP.search(text) or "environ" in text or "is_torchelastic_launched" in text:
            return True
        env = set(self.env_names.values())
        scope = self.index.scope_of(test)
        for n in _names_read(test):
            if n in env or n.split(".")[0] in self.names.aliases:
                continue  # torchrun's constants, or torch's own tests (`dist.is_initialized()`)
            sites = self.names.assignments(scope, n) + self.names.assignments(self.index.module, n)
            values = [v for s in sites if (v := assigned_value(s.stmt)) is not None]
            if depth >= 3 or not values or not all(self._env_driven(v, depth + 1) for v in values):
                return False
        return True

    # ----------------------------------------------------------------- entry point
    @cached_property
    def main_guard(self) -> cst.If | None:
        for stmt in self.index.module.body:
            if is_main_guard(stmt):
                return stmt
        return None

    @cached_property
    def is_program(self) -> bool:
        """Does this file run as a program (a `__main__` block, or module-level code that trains)? A
        module other files import gets no process group of its own: setting one up at import time would
        create and destroy it under the importing script."""
        if self.main_guard is not None:
            return True
        index, training = self.index, self.training
        main = index.func_by_name.get("main")
        if main is not None and training.reaches_training(main):
            return True  # `def main()` by convention runs as the program (a console entry point, `fire`)
        trainers = {name for name, f in index.func_by_name.items() if training.reaches_training(f)}
        through = training.module_training_calls  # `Trainer(model, loader).fit(2)`: a class of its modules trains
        for stmt in index.module.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            if training.reaches_training(stmt) or any(mentions(stmt, name) for name in trainers):
                return True  # module-level training, or `fire.Fire(train)` / `typer.run(train)`
            if through and {id(c) for c in through} & {id(c) for c in walk(stmt) if isinstance(c, cst.Call)}:
                return True
        return False

    @cached_property
    def entry(self) -> cst.FunctionDef | cst.If | cst.Module:
        """Where the process group is set up and torn down: the function `__main__` calls (or hands to
        a command-line library: `fire.Fire(main)`, `typer.run(train)`), or the `__main__` block
        itself, or a `def main()` a console entry point calls, or the module for module-level scripts."""
        guard = self.main_guard
        index = self.index
        stmts: Iterable[cst.BaseStatement] = guard.body.body if guard is not None else index.module.body  # type: ignore[union-attr]
        guard_trains = guard is not None and self.training.reaches_training(guard)
        for stmt in stmts:
            call = expr_call(stmt)
            if call is None:
                value = assigned_value(stmt)
                call = value if isinstance(value, cst.Call) else None
                if call is not None and guard_trains:
                    # `model = train(loaders)`, then `test(model, ...)`: what it hands back is used after
                    # it returns, so the group must outlive it: set up in the `__main__` block
                    continue
            if call is None:
                continue
            named = [call.func] if isinstance(call.func, cst.Name) else [a.value for a in call.args]
            for name in named:
                func = index.func_by_name.get(name.value) if isinstance(name, cst.Name) else None
                if func is not None and self.training.reaches_training(func):
                    return func
        if guard_trains:
            return guard
        main = index.func_by_name.get("main")
        if guard is None and main is not None and self.training.reaches_training(main):
            code = [s for s in index.module.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
            if not any(self.training.reaches_training(s) for s in code):
                return main  # a console entry point: nothing at module level trains
        return index.module


def _names_read(expr: cst.BaseExpression) -> set[str]:
    """The longest names and attribute chains a condition reads (`args.distributed`, `world_size`)."""
    found = reads(expr)
    return {n for n in found if not any(p.startswith(n + ".") for p in found)} - {"True", "False", "None"}


__all__ = ["Launch"]
