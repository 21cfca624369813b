"""The rule registry: one rule per module, run in the fixed order of the output contract."""

from __future__ import annotations

from collections.abc import Iterable

from ..rule import Rule
from .ddp001_missing_process_group import MissingProcessGroup
from .ddp002_hardcoded_backend import HardcodedBackend
from .ddp003_init_args_mismatch import InitArgsMismatch
from .ddp004_spawn_without_rank import SpawnWithoutRank
from .ddp005_local_vs_global_rank import LocalVsGlobalRank
from .ddp006_set_device_missing_or_late import SetDeviceMissingOrLate
from .ddp007_hardcoded_cuda_device import HardcodedCudaDevice
from .ddp008_handled_by_framework import HandledByFramework
from .ddp009_own_launch_path import OwnLaunchPath
from .ddp101_collective_under_rank_guard import CollectiveUnderRankGuard
from .ddp102_rank_divergent_exit import RankDivergentExit
from .ddp103_rank0_forward_through_ddp import Rank0ForwardThroughDdp
from .ddp104_uneven_inputs import UnevenInputs
from .ddp105_optimizer_step_in_rank_guard import StepInRankGuard
from .ddp201_missing_distributed_sampler import MissingDistributedSampler
from .ddp202_sampler_not_passed import SamplerNotPassed
from .ddp203_sampler_with_shuffle import SamplerWithShuffle
from .ddp204_missing_set_epoch import MissingSetEpoch
from .ddp205_sampler_seed_per_rank import SamplerSeedPerRank
from .ddp206_padded_eval_metrics import PaddedEvalMetrics
from .ddp207_batch_size_semantics import BatchSizeSemantics
from .ddp208_download_on_every_rank import DownloadOnEveryRank
from .ddp209_unsharded_manual_batches import UnshardedManualBatches
from .ddp210_task_drawn_per_rank import TaskDrawnPerRank
from .ddp211_same_data_every_rank import SameDataEveryRank
from .ddp212_summed_on_every_rank import SummedOnEveryRank
from .ddp213_split_drawn_per_rank import SplitDrawnPerRank
from .ddp301_missing_ddp_wrap import MissingDdpWrap
from .ddp302_dataparallel import DataParallelToDdp
from .ddp303_device_ids_mismatch import DeviceIdsMismatch
from .ddp304_wrapped_container import WrappedContainer
from .ddp305_optimizer_before_wrap import OptimizerBeforeWrap
from .ddp306_missing_syncbn import MissingSyncBatchNorm
from .ddp307_grad_accum_without_no_sync import GradAccumWithoutNoSync
from .ddp308_wrapper_attribute_access import WrapperAttributeAccess
from .ddp309_forward_bypasses_ddp import ForwardBypassesDdp
from .ddp310_unused_parameters import UnusedParameters
from .ddp311_parameters_from_input import ParametersFromInput
from .ddp312_requires_grad_after_wrap import RequiresGradAfterWrap
from .ddp313_plateau_metric_per_rank import PlateauMetricPerRank
from .ddp401_unguarded_save import UnguardedSave
from .ddp402_wrapped_state_dict import WrappedStateDict
from .ddp403_load_into_wrapper import LoadIntoWrapper
from .ddp404_load_without_map_location import LoadWithoutMapLocation
from .ddp405_unguarded_log_file import UnguardedLogFile
from .ddp406_unguarded_print import UnguardedPrint
from .ddp407_unguarded_tracker import UnguardedTracker
from .ddp408_unguarded_progress_bar import UnguardedProgressBar
from .ddp409_metrics_not_reduced import MetricsNotReduced
from .ddp410_save_load_race import SaveLoadRace
from .ddp411_unguarded_console_log import UnguardedConsoleLog
from .ddp420_makedirs_race import MakedirsRace
from .ddp421_cache_build_race import CacheBuildRace

# Rules run in this order. Where inserted statements go is each edit's own `Order`; the run order matters
# where one rule reads plan state another provides (`Rule.reads` / `Rule.provides`: a wrap must be
# planned before the rules that send saves and custom methods to the plain module), and for which rule
# names a new thing first.
RULES: list[Rule] = [
    MissingProcessGroup(),
    HardcodedBackend(),
    InitArgsMismatch(),
    SpawnWithoutRank(),
    LocalVsGlobalRank(),
    SetDeviceMissingOrLate(),
    HardcodedCudaDevice(),
    HandledByFramework(),
    OwnLaunchPath(),
    CollectiveUnderRankGuard(),
    RankDivergentExit(),
    StepInRankGuard(),
    UnevenInputs(),
    MissingDistributedSampler(),
    SamplerNotPassed(),
    SamplerWithShuffle(),
    MissingSetEpoch(),
    SamplerSeedPerRank(),
    PaddedEvalMetrics(),
    BatchSizeSemantics(),
    DownloadOnEveryRank(),
    UnshardedManualBatches(),
    TaskDrawnPerRank(),
    SameDataEveryRank(),
    SummedOnEveryRank(),
    SplitDrawnPerRank(),
    MissingSyncBatchNorm(),
    DataParallelToDdp(),
    MissingDdpWrap(),
    DeviceIdsMismatch(),
    WrappedContainer(),
    OptimizerBeforeWrap(),
    GradAccumWithoutNoSync(),
    WrapperAttributeAccess(),
    ForwardBypassesDdp(),
    UnusedParameters(),
    ParametersFromInput(),
    RequiresGradAfterWrap(),
    UnguardedSave(),
    WrappedStateDict(),
    LoadIntoWrapper(),
    Rank0ForwardThroughDdp(),
    LoadWithoutMapLocation(),
    UnguardedLogFile(),
    UnguardedPrint(),
    UnguardedTracker(),
    UnguardedProgressBar(),
    UnguardedConsoleLog(),
    MetricsNotReduced(),
    PlateauMetricPerRank(),
    SaveLoadRace(),
    MakedirsRace(),
    CacheBuildRace(),
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
