"""The DDP contract: what a converted script must do under torchrun, and the rules that judge each part.

After `apply`, the script trains one model in sync on disjoint data, each file is written once, and it
prints the numbers `python train.py` prints. Each invariant is judged by the rules whose findings mean
it does not hold: the contract and `ddpfix check` are one analysis, so `check` on an output that breaks
an invariant reports the same finding.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Invariant:
    number: int
    key: str  # a short name for JSON and tests
    label: str  # what is wrong when it does not hold, as the summary line says it
    title: str  # what holds when the invariant does


INVARIANTS = (
    Invariant(
        1, "model-wrapped", "model not wrapped", "every trained model is DDP-wrapped on every path to the training loop"
    ),
    Invariant(2, "wrapper-api", "wrapper API", "what is read through the wrapper exists on DistributedDataParallel"),
    Invariant(
        3, "data-sharded", "data not sharded", "every training data stream is sharded by rank, reshuffled each epoch"
    ),
    Invariant(4, "optimizer-after-wrap", "optimizer before wrap", "the optimizer is built after the wrap"),
    Invariant(
        5,
        "process-group",
        "process group",
        "one process group per process, set up before its first use, on its own device",
    ),
    Invariant(
        6,
        "writers-and-collectives",
        "writers and collectives",
        "each file is written by one rank, and every rank reaches every collective",
    ),
    Invariant(7, "same-task", "task differs by rank", "whatever defines the task is the same on every rank"),
    Invariant(
        8,
        "metrics-reduced",
        "metric not reduced",
        "a metric over the whole dataset is reduced over the ranks before it is shown",
    ),
)

BY_NUMBER = {inv.number: inv for inv in INVARIANTS}

# rule code -> the invariant its finding breaks (a rule not listed judges style, speed or portability:
# SyncBatchNorm, no_sync, duplicated prints, a hard-coded backend, the global batch size)
JUDGES = {
    "DDP301": 1,
    "DDP302": 1,
    "DDP304": 1,
    "DDP309": 1,
    "DDP310": 1,
    "DDP312": 1,
    "DDP308": 2,
    "DDP402": 2,
    "DDP403": 2,
    "DDP201": 3,
    "DDP202": 3,
    "DDP203": 3,
    "DDP204": 3,
    "DDP205": 3,
    "DDP209": 3,
    "DDP211": 3,
    "DDP305": 4,
    "DDP001": 5,
    "DDP003": 5,
    "DDP004": 5,
    "DDP005": 5,
    "DDP006": 5,
    "DDP007": 5,
    "DDP009": 5,
    "DDP303": 5,
    "DDP101": 6,
    "DDP102": 6,
    "DDP103": 6,
    "DDP104": 6,
    "DDP105": 6,
    "DDP208": 6,
    "DDP401": 6,
    "DDP405": 6,
    "DDP407": 6,
    "DDP410": 6,
    "DDP420": 6,
    "DDP421": 6,
    "DDP210": 7,
    "DDP213": 7,
    "DDP311": 7,
    "DDP206": 8,
    "DDP212": 8,
    "DDP409": 8,
    "DDP313": 8,
}


def judged(code: str) -> Invariant | None:
    """The invariant a finding of rule `code` breaks (None: the finding is not about the contract)."""
    number = JUDGES.get(code)
    return None if number is None else BY_NUMBER[number]


__all__ = ["BY_NUMBER", "INVARIANTS", "JUDGES", "Invariant", "judged"]
