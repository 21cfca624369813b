"""Run-time checks of ``ddpfix verify``: judge what the probe recorded in every rank.

Each check returns a :class:`CheckResult` with status ``pass``, ``fail`` or ``n/a``, the counts of
what it compared (``compared``: ranks, passes, steps, checksums, files...) and evidence lines a person
can act on ("indices {3, 7, 12} on ranks 0 and 1 in epoch 0", "checkpoint.pt written by ranks [0, 1]",
"rank 0 waits in `dist.barrier()` at train.py:31"). A check that compared nothing says ``n/a`` and
why; it never passes. Standard library only.

Modules: :mod:`.model` (the data), :mod:`.evidence` (reading traces, writing evidence), :mod:`.ranks`
(what became of each rank), :mod:`.loaders` (DataLoader passes), and one module per check.
"""

from __future__ import annotations

from .collectives import check_collectives
from .completes import check_completes
from .ddp import check_ddp
from .epoch_order import check_epoch_order
from .evidence import (
    all_ranks,
    events,
    first,
    fmt_ranks,
    fmt_set,
    fmt_site,
    is_user_file,
    plural,
    short_message,
    short_path,
    split_site,
    strip_comment,
)
from .files import check_files
from .model import (
    FAIL,
    NA,
    PASS,
    STATUSES,
    TITLES,
    CheckResult,
    NothingCompared,
    PlainRun,
    RunData,
    VerifyReport,
    fmt_compared,
    result,
)
from .params import check_params
from .probe_health import check_probe
from .ranks import rank_state, rank_table, run_meta, wait_point
from .shards import check_shards
from .single import check_single

CHECKS = (
    check_completes,
    check_ddp,
    check_shards,
    check_epoch_order,
    check_params,
    check_files,
    check_collectives,
    check_probe,
    check_single,
)
NAMES = tuple(fn.__name__.removeprefix("check_") for fn in CHECKS)


def evaluate(run: RunData) -> VerifyReport:
    """Every check over one run; a check that raises is reported as failed, the others still run."""
    results = []
    for fn in CHECKS:
        name = fn.__name__.removeprefix("check_")
        try:
            results.append(fn(run))
        except Exception as exc:  # a bug in a check must not hide the others
            results.append(result(name, FAIL, f"the check itself failed: {type(exc).__name__}: {exc}"))
    return VerifyReport(checks=results, meta=run_meta(run), ranks=rank_table(run), output=run.output, plain=run.plain)


__all__ = [
    "CHECKS",
    "FAIL",
    "NA",
    "NAMES",
    "PASS",
    "STATUSES",
    "TITLES",
    "CheckResult",
    "NothingCompared",
    "PlainRun",
    "RunData",
    "VerifyReport",
    "all_ranks",
    "evaluate",
    "events",
    "first",
    "fmt_compared",
    "fmt_ranks",
    "fmt_set",
    "fmt_site",
    "is_user_file",
    "plural",
    "rank_state",
    "rank_table",
    "result",
    "run_meta",
    "short_message",
    "short_path",
    "split_site",
    "strip_comment",
    "wait_point",
    "check_collectives",
    "check_completes",
    "check_ddp",
    "check_epoch_order",
    "check_files",
    "check_params",
    "check_probe",
    "check_shards",
    "check_single",
]
