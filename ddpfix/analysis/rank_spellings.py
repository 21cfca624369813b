"""What the rank evaluator (rankvalues.py) reads by spelling: names that mean the rank or a rank-0 test,
the calls and environment variables that give the rank, and the calls that build text from values."""

from __future__ import annotations

import re

import libcst as cst

# Spellings that mean "the rank" or "a rank-0 test" when no assignment of the script says otherwise.
RANK_SPELLING = re.compile(
    r"^(?!(num|n|max|min|total)_)\w*(^|_)rank$|^(gpu|gpu_id|local_gpu|process_index|local_process_index)$",
    re.IGNORECASE,
)
TEST_SPELLING = re.compile(
    r"^is_(local_|global_)?(main|master|primary|chief)(_process|_proc|_rank)?$|^(local_|global_)?(main|master)_(process|proc)$"
    r"|^(is_)?(global_|rank_?)zero$|^is_rank_?0$|^master$",
    re.IGNORECASE,
)
# The rank of the machine: every process of node 0 has node rank 0 (`args.nr`, `args.node_rank`).
NODE_SPELLING = re.compile(r"^(node_rank|node_id|node_idx|machine_rank)$", re.IGNORECASE)
NODE_ATTRIBUTE = re.compile(r"^\w+\.nr$")  # only as an option: `args.nr`
RANK_CALLS = re.compile(r"(^|_)get_(local_|global_|node_local_)?rank$|^get_ordinal$")
RANK_ENV = {
    "RANK",
    "LOCAL_RANK",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMI_RANK",
}
TRUE_WHEN_DISTRIBUTED = {"torch.distributed.is_initialized", "torch.distributed.is_available"}
TEXT_CALLS = {"str", "int", "float", "format", "repr", "Path", "os.fspath", "os.getcwd"}
TEXT_METHODS = {"format", "join", "replace", "joinpath", "with_name", "with_suffix", "zfill"}


def builds_text(qual: str, func: cst.BaseExpression) -> bool:
    """Calls that build a name or a number from their arguments: paths and strings."""
    if qual.startswith(("os.path.", "pathlib.", "posixpath.")) or qual in TEXT_CALLS:
        return True
    return isinstance(func, cst.Attribute) and func.attr.value in TEXT_METHODS


__all__ = [
    "NODE_ATTRIBUTE",
    "NODE_SPELLING",
    "RANK_CALLS",
    "RANK_ENV",
    "RANK_SPELLING",
    "TEST_SPELLING",
    "TEXT_CALLS",
    "TEXT_METHODS",
    "TRUE_WHEN_DISTRIBUTED",
    "builds_text",
]
