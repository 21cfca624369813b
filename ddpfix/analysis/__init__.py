"""One read-only analysis of a training script, shared by every rule.

`ScriptFacts` is the front door: it parses nothing and computes nothing up front except the tree
index; each part of the analysis is built the first time a rule asks for it, and only once.

    facts.index      tree navigation: parents, sites, scopes, callees and callers   (index.py)
    facts.names      import aliases, qualified names, assignments, string literals    (names.py)
    facts.training   optimizers, schedulers, training steps                           (training.py)
    facts.models     trained models, wrap points, existing wrappers, devices (models.py, wrap_points.py)
    facts.data       loaders, samplers, batch and epoch loops                          (data.py)
    facts.launch     entry point, process-group calls, torchrun's environment         (launch.py)
    facts.ranks      the rank detector and collectives            (ranks.py, rankvalues.py, spawned.py)
    facts.wraps      how the script reaches a wrapped model's plain module             (wraps.py)
    facts.helpers    what the helpers a model is handed to do with it        (helpers.py, model_params.py)
    facts.modules    the script's own modules, summarised  (modules.py, imports.py, summaries.py, module_summary.py,
                     module_writes.py; local_writes.py finds their writes at the script's calls)
    facts.flow       names bound and read, when module-level execution reaches a node  (flow.py)
    facts.device_path  what runs on the way into a process group, and what it does with the GPU (device_path.py)
"""

from __future__ import annotations

import ast
from functools import cached_property

import libcst as cst

from ..syntax import dotted
from .config_factory import FactoryCall, factory_calls
from .data import Data, Loader
from .device_path import DevicePath
from .flow import Flow
from .helpers import Helpers
from .index import Block, Scope, Site, TreeIndex
from .launch import Launch
from .local_writes import module_calls
from .models import Model, Models, WrapPoint
from .modules import LocalModules
from .names import Names
from .ranks import Ranks
from .training import Training
from .wraps import Wraps


class ScriptFacts:
    """What a script is, computed lazily, once, and shared by every rule."""

    def __init__(
        self,
        module: cst.Module,
        text: str | None = None,
        tree: ast.Module | None = None,
        path: str | None = None,
        *,
        placed: bool = True,
        cross_file: bool = False,
    ) -> None:
        """`text` and `tree` (Python's parse) make positions cheaper; `path`, the script's file, lets
        the analysis read the script's own modules; without `placed`, findings get no real positions
        (for a pass whose findings nobody reads); with `cross_file`, a fix may also edit the script's
        own modules (ddpfix/module_edits.py)."""
        self.module = module
        self.path = path
        self.cross_file = cross_file
        self.index = TreeIndex(module, text, tree, placed=placed)

    @cached_property
    def modules(self) -> LocalModules:
        return LocalModules(self.index.imports, self.path, self.index.module)

    @cached_property
    def module_calls(self) -> list[cst.Call]:
        """The script's calls that may run code of its own modules (local_writes.py; several rules
        ask, each pass)."""
        return module_calls(self.index, self.modules)

    @cached_property
    def factory_calls(self) -> list[FactoryCall]:
        """The script's calls of a local factory that builds the class a config names (several rules
        ask, each pass)."""
        return factory_calls(self)

    @cached_property
    def flow(self) -> Flow:
        return Flow(self.index)

    @cached_property
    def names(self) -> Names:
        if not self.path:
            return Names(self.index)
        heads = {d.split(".")[0] for c in self.index.calls if "." in (d := dotted(c.func) or "")}
        return Names(self.index, self.modules.library_names(heads))

    @cached_property
    def training(self) -> Training:
        return Training(self.index, self.names, self.modules)

    @cached_property
    def models(self) -> Models:
        return Models(self.index, self.names, self.training, self.helpers)

    @cached_property
    def data(self) -> Data:
        return Data(self.index, self.names, self.training, self.modules)

    @cached_property
    def launch(self) -> Launch:
        return Launch(self.index, self.names, self.training, self.modules)

    @cached_property
    def ranks(self) -> Ranks:
        return Ranks(self.index, self.names, self.launch)

    @cached_property
    def device_path(self) -> DevicePath:
        return DevicePath(self.index, self.names, self.ranks)

    @cached_property
    def wraps(self) -> Wraps:
        return Wraps(self.index, self.names, self.models)

    @cached_property
    def helpers(self) -> Helpers:
        return Helpers(self.index, self.names, self.training, self.modules)

    def is_training_script(self) -> bool:
        """Is this a script whose DDP form the rules are about: it uses torch (or trains through its own
        modules alone), no other library distributes it, and it trains, joins a process group or wraps
        a model."""
        if self.names.other_launcher:
            return False
        if not self.names.uses_torch:
            return bool(self.training.module_training_calls)
        return bool(self.training.trains or self.launch.init_calls or self.models.ddp_calls)


__all__ = [
    "Block",
    "Loader",
    "Model",
    "Scope",
    "ScriptFacts",
    "Site",
    "WrapPoint",
]
