"""Training inputs as the probe digested them, for `shards`: the tensors handed to the outermost forward
of a module in training mode with gradients enabled (a DDP wrapper, or a module with trainable
parameters), wherever the batches came from (a DataLoader or slices cut by hand). Ranks that all fed
the same inputs train on the same data, however the batches were made."""

from __future__ import annotations

from dataclasses import dataclass, field

from .evidence import all_ranks, events, fmt_ranks, fmt_site, plural
from .model import FAIL, NA, PASS, RunData


@dataclass
class InputVerdict:
    status: str
    evidence: list = field(default_factory=list)
    inputs: int = 0  # digests compared


def digests(run: RunData) -> dict:
    """rank -> the digests of its training inputs, in order."""
    return {r: [e for e in events(run, r, "input") if e.get("sha1")] for r in all_ranks(run)}


def _where(e: dict, run: RunData) -> str:
    site = f" ({fmt_site(e['site'], run, False)})" if e.get("site") else ""
    return f"{e.get('module') or 'the model'}'s forward{site}"


def judge_inputs(run: RunData) -> InputVerdict | None:
    """The verdict on the training inputs; None when fewer than two ranks ran a training forward."""
    per_rank = digests(run)
    fed = sorted(r for r, evs in per_rank.items() if evs)
    if len(fed) < 2:
        return None
    sets = {r: {e["sha1"] for e in per_rank[r]} for r in fed}
    total = sum(len(per_rank[r]) for r in fed)
    union = set().union(*sets.values())
    first = per_rank[fed[0]][0]
    if all(sets[r] == sets[fed[0]] for r in fed):
        if len(union) == 1 and all(len(per_rank[r]) > 1 for r in fed):
            return InputVerdict(
                NA,
                [
                    f"every training forward on {fmt_ranks(fed)} got the same input ({_where(first, run)}): "
                    "constant data cannot tell shards apart"
                ],
                total,
            )
        counts = "/".join(str(len(per_rank[r])) for r in fed)
        return InputVerdict(
            FAIL,
            [
                f"{fmt_ranks(fed)} fed the same {plural(len(union), 'training input')} to {_where(first, run)} "
                f"({counts} forwards digested): every rank trains on the same batches (no DistributedSampler, "
                "or batches not cut by rank)"
            ],
            total,
        )
    common = set.intersection(*sets.values())
    per = "/".join(str(len(per_rank[r])) for r in fed)
    shared = f", {len(common)} on every rank" if common else ", none on two ranks" if _disjoint(sets) else ""
    return InputVerdict(
        PASS,
        [f"training inputs of {_where(first, run)}: {fmt_ranks(fed)} x {per} digested, {len(union)} distinct{shared}"],
        total,
    )


def _disjoint(sets: dict) -> bool:
    seen: set = set()
    for s in sets.values():
        if seen & s:
            return False
        seen |= s
    return True
