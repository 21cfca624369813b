"""The wrapper's API that DDP308 leaves on the wrapper is the installed torch's, name for name."""

from __future__ import annotations

import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

from ddpfix.analysis.torch_api import DDP_API, MODULE_API, WRAPPER_API


def _public(names) -> set[str]:
    return {n for n in names if not n.startswith("_")}


def test_module_api_is_the_installed_torch_one():
    installed = _public(dir(nn.Module)) | _public(vars(nn.Module()))
    assert sorted(installed - MODULE_API) == [], "nn.Module names missing from MODULE_API"
    assert sorted(MODULE_API - installed) == [], "MODULE_API names the installed nn.Module does not have"


def test_ddp_api_is_the_installed_torch_one():
    if dist.is_initialized():  # pragma: no cover - the suite never leaves a group behind
        raise AssertionError("a process group is already initialised")
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        wrapper = DistributedDataParallel(nn.Linear(2, 2))
        module_names = _public(dir(nn.Module)) | _public(vars(nn.Module()))
        installed = (
            _public(dir(DistributedDataParallel)) | _public(vars(wrapper)) | set(wrapper._modules)
        ) - module_names
    finally:
        dist.destroy_process_group()
    assert sorted(installed - DDP_API) == [], "DistributedDataParallel names missing from DDP_API"
    assert sorted(DDP_API - installed) == [], "DDP_API names the installed DistributedDataParallel does not have"


def test_the_wrapper_answers_module_but_not_model_attributes():
    assert {"module", "no_sync", "state_dict", "parameters", "training"} <= WRAPPER_API
    assert not {"generate", "save_pretrained", "config", "init_hidden", "n_classes"} & WRAPPER_API
