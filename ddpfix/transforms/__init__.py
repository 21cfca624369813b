"""The rule registry: one rule per module, run in the fixed order of the output contract."""
from __future__ import annotations

from typing import Iterable

from ..rule import Rule
from .ddp001_process_group import MissingProcessGroup
from .ddp006_set_device import SetDeviceMissingOrLate
from .ddp007_hardcoded_cuda import HardcodedCudaDevice
from .ddp201_distributed_sampler import MissingDistributedSampler
from .ddp203_sampler_with_shuffle import SamplerWithShuffle
from .ddp204_set_epoch import MissingSetEpoch
from .ddp301_ddp_wrap import MissingDdpWrap
from .ddp305_optimizer_order import OptimizerBeforeWrap
from .ddp306_syncbn import MissingSyncBatchNorm
from .ddp401_unguarded_save import UnguardedSave
from .ddp402_wrapped_state_dict import WrappedStateDict
from .ddp404_map_location import LoadWithoutMapLocation
from .ddp405_log_files import UnguardedLogFile
from .ddp406_unguarded_print import UnguardedPrint
from .ddp407_unguarded_tracker import UnguardedTracker

# Order matters only where two rules name new things; placement follows each edit's own order key.
RULES: list[Rule] = [
    MissingProcessGroup(),
    SetDeviceMissingOrLate(),
    HardcodedCudaDevice(),
    MissingDistributedSampler(),
    SamplerWithShuffle(),
    MissingSetEpoch(),
    MissingSyncBatchNorm(),
    MissingDdpWrap(),
    OptimizerBeforeWrap(),
    UnguardedSave(),
    WrappedStateDict(),
    LoadWithoutMapLocation(),
    UnguardedLogFile(),
    UnguardedPrint(),
    UnguardedTracker(),
]

BY_CODE = {r.code: r for r in RULES}


def expand(select: Iterable[str] | None, ignore: Iterable[str] | None) -> list[str]:
    """Codes selected by prefixes (`DDP4` selects every DDP4xx rule; `ALL` selects all)."""

    def matches(code: str, prefixes: Iterable[str]) -> bool:
        return any(p.upper() == "ALL" or code.startswith(p.upper()) for p in prefixes)

    codes = [r.code for r in RULES]
    if select:
        select = list(select)
        codes = [c for c in codes if matches(c, select)]
    if ignore:
        ignore = list(ignore)
        codes = [c for c in codes if not matches(c, ignore)]
    return codes
