"""Launch: how the script starts and joins a process group — its entry point, the process-group and
device calls it already makes, `mp.spawn`, and the module-level names bound to torchrun's environment."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cached_property

import libcst as cst

from ..syntax import assign_targets, assigned_value, code_of, dotted, expr_call, mentions
from .index import TreeIndex
from .modules import LocalModules
from .names import ENV_LOOKUP, Names
from .summaries import INIT
from .training import Training

SETUP_NAME = re.compile(r"dist|ddp|parallel|init|setup|launch|world|comm", re.IGNORECASE)
# `int(os.environ.get("RANK", -1)) != -1`, `int(os.environ.get("WORLD_SIZE", 1)) > 1`: "this run is distributed"
DISTRIBUTED_FLAG = re.compile(r"(RANK['\"]\s*,\s*-1\s*\)\s*\)\s*(!=\s*-1|>=\s*0)|WORLD_SIZE['\"].*\)\s*>\s*1)$")
MAIN_TEST = re.compile(r"__name__\s*==\s*['\"]__main__['\"]|['\"]__main__['\"]\s*==\s*__name__")


class Launch:
    """Entry point, process-group calls and torchrun's environment."""

    def __init__(self, index: TreeIndex, names: Names, training: Training, modules: LocalModules) -> None:
        self.index = index
        self.names = names
        self.training = training
        self.modules = modules

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
            if joins is None and SETUP_NAME.search(dotted(call.func) or ""):
                unknown = True
        return None if unknown else False

    @cached_property
    def set_device_calls(self) -> list[cst.Call]:
        return self.names.calls_to("torch.cuda.set_device")

    @cached_property
    def destroy_calls(self) -> list[cst.Call]:
        return self.names.torch_calls_ending("destroy_process_group")

    @cached_property
    def spawn_calls(self) -> list[cst.Call]:
        return self.names.calls_to("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes")

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
            if m and isinstance(value, cst.Comparison):  # a flag, not the rank: `ddp = ... != -1`
                if DISTRIBUTED_FLAG.search(text):
                    found.setdefault("DISTRIBUTED", targets[0])
                continue
            if m:
                found.setdefault(m.group(1), targets[0])
            elif "WORLD_SIZE" in found and re.fullmatch(rf"{re.escape(found['WORLD_SIZE'])}\s*>\s*1", text):
                found.setdefault("DISTRIBUTED", targets[0])
        return found

    # ----------------------------------------------------------------- entry point
    @cached_property
    def main_guard(self) -> cst.If | None:
        for stmt in self.index.module.body:
            if isinstance(stmt, cst.If) and MAIN_TEST.fullmatch(code_of(stmt.test)):
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
        for stmt in index.module.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            if training.reaches_training(stmt) or any(mentions(stmt, name) for name in trainers):
                return True  # module-level training, or `fire.Fire(train)` / `typer.run(train)`
        return False

    @cached_property
    def entry(self) -> cst.FunctionDef | cst.If | cst.Module:
        """Where the process group is set up and torn down: the function `__main__` calls, or the
        `__main__` block itself, or the module for module-level scripts."""
        guard = self.main_guard
        index = self.index
        stmts: Iterable[cst.BaseStatement] = guard.body.body if guard is not None else index.module.body  # type: ignore[union-attr]
        for stmt in stmts:
            call = expr_call(stmt)
            if call is None:
                value = assigned_value(stmt)
                call = value if isinstance(value, cst.Call) else None
            if call is not None and isinstance(call.func, cst.Name) and call.func.value in index.func_by_name:
                func = index.func_by_name[call.func.value]
                if self.training.reaches_training(func):
                    return func
        if guard is not None and self.training.reaches_training(guard):
            return guard
        return index.module


__all__ = ["Launch"]
