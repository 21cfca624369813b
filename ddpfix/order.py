"""`Order`: where each kind of inserted statement goes among others inserted at the same place."""

from __future__ import annotations

from enum import IntEnum


class Order(IntEnum):
    """Where a statement goes among others inserted at the same place: the output contract's order."""

    IMPORTS = 0
    ENVIRONMENT = 10  # RANK / LOCAL_RANK / WORLD_SIZE / DISTRIBUTED, after the imports
    SET_EPOCH = 11  # the first statement of the epoch loop
    PROCESS_GROUP = 20  # set_device + init_process_group at the top of the entry point
    NO_SYNC = 21  # the micro-step's sync decision at the top of the accumulation loop
    TASK_BROADCAST = 22  # rank 0's draws of the task, once the process group is joined
    SET_DEVICE = 30  # before CUDA work and before init_process_group
    SYNC_BATCHNORM = 31  # before the wrap
    PARAMETER_SYNC = 32  # after the model is built: rank 0's parameters once its first forward has run
    DOWNLOAD = 35  # the barriers around a download: after set_device, before the wrap's collectives
    SPLIT_GENERATOR = 39  # the generator of a random split, before the split
    SAMPLER = 40  # before the DataLoader that takes it
    WRAP = 41  # after the model is built, moved and loaded
    OPTIMIZER = 50  # after the wrap (moved optimizers keep their order: OPTIMIZER + i)
    HOISTED_COLLECTIVE = 60  # a collective moved out of a rank guard, right after it
    BARRIER = 61  # between a rank-0 save and the load of every rank
    AGREEMENT = 62  # the ranks' shared decision, before the exit it decides
    REDUCED_METRIC = 63  # a total reduced over the ranks, before the statement that shows it
    TEARDOWN = 90  # destroy_process_group at the end of the entry point


__all__ = ["Order"]
