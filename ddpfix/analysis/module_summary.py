"""What the summary of one of the script's own modules records (summaries.py reads it): the effects a
function may have, the findings a rule carries from a helper to its call site, and the classes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .model_params import Slot
from .returns import Shape

# What a function may do, as the summary records it.
INIT = "init"  # joins a process group (init_process_group)
DESTROY = "destroy"  # destroy_process_group
RANK_TEST = "rank_test"  # returns a rank test (`return get_rank() == 0`)
SILENCES_PRINT = "silences_print"  # replaces builtins.print (`setup_for_distributed(is_master)`)
SAMPLER = "sampler"  # builds a DistributedSampler
LOADER = "loader"  # builds a DataLoader
WRAP = "wrap"  # wraps a model in DistributedDataParallel
SAVE = "save"  # torch.save
LOAD = "load"  # torch.load
COLLECTIVE = "collective"  # a torch.distributed collective
SET_DEVICE = "set_device"  # torch.cuda.set_device


@dataclass(frozen=True)
class Finding:
    """Something a rule reports about a helper, carried to the script's call site with its place:
    `kind` is HARDCODED_BACKEND (detail: the backend), INIT_ARGS (detail: the literal arguments) or
    GLOBAL_RANK_DEVICE (detail: the expression that picks the GPU)."""

    kind: str
    path: Path
    line: int
    detail: str


HARDCODED_BACKEND = "hardcoded_backend"  # init_process_group("nccl")
INIT_ARGS = "init_args"  # init_process_group(..., rank=0, world_size=2, init_method="tcp://...")
GLOBAL_RANK_DEVICE = "global_rank_device"  # torch.device(f"cuda:{dist.get_rank()}")


@dataclass(frozen=True)
class InputWrite:
    """A parameter a class's forward sets from its input (input_parameters.py)."""

    cls: str  # the class whose method writes it
    param: str
    path: str
    line: int
    once: bool  # under a test (`if self.initialized.item() == 0:`): an initialisation on the first batch


@dataclass
class ClassSummary:
    name: str
    bases: list[str]
    methods: set[str] = field(default_factory=set)
    attributes: set[str] = field(default_factory=set)  # set on self in any method
    forward_like: set[str] = field(default_factory=set)  # methods that run a forward (model_params.py)
    trained: list[tuple[str, int]] = field(default_factory=list)  # models it trains itself (class_models.py)
    # models a method builds and trains as its own locals: (method, name, line of the build)
    local_models: list[tuple[str, str, int]] = field(default_factory=list)
    wraps: bool = False  # wraps a model in DistributedDataParallel itself (class_models.py)
    builds: set[str] = field(default_factory=set)  # the names it calls: the classes it may build
    # each parameter its forward sets from its input, or that of a class it builds or derives from
    input_parameters: list[InputWrite] = field(default_factory=list)
    is_module: bool = False  # an nn.Module (through its bases; input_parameters.py)
    # a module-level function that builds and trains its own local models (`def fit(epochs): model =
    # Net(); opt = SGD(model.parameters())`), read as a class whose one method is itself (module_wraps.py)
    function: bool = False

    def member(self, method: str) -> str:
        """How `module_epochs.function_of` names `method` of this owner: `Trainer.train`, or `fit`."""
        return method if self.function else f"{self.name}.{method}"

    @property
    def shown(self) -> str:
        """The owner as a message names it: `Trainer`, or `fit()`."""
        return f"{self.name}()" if self.function else self.name


@dataclass
class ModuleSummary:
    """What one local module defines, by function name."""

    path: Path
    # function -> INIT, DESTROY, ... and the Findings its calls carry (transitive)
    effects: dict[str, set] = field(default_factory=dict)
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    runs_as_program: bool = False  # has an `if __name__ == "__main__":` block
    at_import: set[str] = field(default_factory=set)  # effects of its module-level code
    # function -> its owner record (ClassSummary.function) where it builds and trains its own local models
    builders: dict[str, ClassSummary] = field(default_factory=dict)
    returns: dict[str, Shape] = field(default_factory=dict)  # function -> the loaders / samplers it returns
    params: dict[str, list[str]] = field(default_factory=dict)  # function -> parameter names (no self)
    param_uses: dict[str, dict[str, set[str]]] = field(
        default_factory=dict
    )  # function -> parameter -> model_params uses
    model_returns: dict[str, Slot] = field(default_factory=dict)  # function -> where it returns the model it trains
    # function -> the line of the GPU commitment (set_device, nccl) all its joins follow (ast_cuda_join.py)
    joins_on_cuda: dict[str, int] = field(default_factory=dict)
    # function -> "save"/"load" -> the files its torch.save/torch.load name, in its parameters (path_templates.py)
    file_paths: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    library: dict[str, str] = field(default_factory=dict)  # a library its imports bind: `dist` -> torch.distributed
    # function -> parameter it divides by the world size -> (the flag parameter it does so under, or None
    # for always; that flag's default): a helper that averages what it all-reduces (reduced_sums.py)
    averages: dict[str, dict[str, tuple]] = field(default_factory=dict)
    # the names it imports (local name -> (module, member, relative level)): what a package re-exports
    imported: dict[str, tuple[str, str | None, int]] = field(default_factory=dict)
    stars: list[tuple[str, int]] = field(default_factory=list)  # its `from module import *`: (module, level)

    def defines(self, name: str) -> bool:
        """Does the module define `name` (a function or class) itself?"""
        return name in self.params or name in self.classes or name in self.effects

    def does(self, func: str, effect: str) -> bool:
        return effect in self.effects.get(func, ())

    def findings(self, func: str, kind: str) -> list[Finding]:
        """The findings of `kind` in `func` and the functions it calls, in file and line order."""
        found = [f for f in self.effects.get(func, ()) if isinstance(f, Finding) and f.kind == kind]
        return sorted(found, key=lambda f: (str(f.path), f.line))


__all__ = [
    "COLLECTIVE",
    "DESTROY",
    "GLOBAL_RANK_DEVICE",
    "HARDCODED_BACKEND",
    "INIT",
    "INIT_ARGS",
    "LOAD",
    "LOADER",
    "RANK_TEST",
    "SAMPLER",
    "SAVE",
    "SET_DEVICE",
    "SILENCES_PRINT",
    "WRAP",
    "ClassSummary",
    "Finding",
    "InputWrite",
    "ModuleSummary",
]
