"""`epoch_order`: a shuffling training loader gives every rank a new order in each epoch.

Consecutive passes of a loader are compared rank by rank on their first k indices, k the length of
the shorter pass, so passes cut short (a ``break``, a step limit) count too. A pair shorter than
MIN_PREFIX indices is not judged (a short prefix repeats by chance), unless both passes are complete.
A pair of epochs fails when every rank that compared it read the same prefix.
"""

from __future__ import annotations

from .evidence import fmt_ranks, plural
from .loaders import loader_name, loaders, passes, training_passes, unobserved
from .model import FAIL, NA, PASS, CheckResult, RunData, result

MIN_PREFIX = 4


def _compare(ea: dict, eb: dict):
    """(k, same) for one rank's two passes; k = 0 when the pair is too short to judge."""
    ia, ib = ea.get("indices") or [], eb.get("indices") or []
    k = min(len(ia), len(ib))
    whole = ea.get("complete") and eb.get("complete") and len(ia) == len(ib)
    if k < MIN_PREFIX and not (whole and k >= 2):
        return 0, False
    return k, ia[:k] == ib[:k]


def _hint(info: dict, epochs: set) -> str:
    if info.get("dist_sampler") and len(epochs) == 1:
        (ep,) = epochs
        return (
            f" (DistributedSampler.epoch was {ep} both times: call sampler.set_epoch(epoch) at the start of each epoch)"
        )
    return ""


def _judge_loader(name: str, info: dict, per_pass: dict, counts: dict):
    """(failure, fine, note) texts, each maybe None, for one training loader with two or more passes."""
    ns = sorted(per_pass)
    same, pairs, partial, used = [], 0, False, set()
    for a, b in zip(ns, ns[1:]):
        verdicts = {}
        for r in sorted(set(per_pass[a]) & set(per_pass[b])):
            ea, eb = per_pass[a][r], per_pass[b][r]
            k, repeated = _compare(ea, eb)
            if k:
                verdicts[r] = (k, repeated, (ea.get("epoch"), eb.get("epoch")))
                used.update({(r, a), (r, b)})
                counts["indices"] += k  # positions compared
                partial |= not (ea.get("complete") and eb.get("complete"))
        if not verdicts:
            continue
        pairs += 1
        if all(v[1] for v in verdicts.values()):
            same.append((a, b, verdicts))
    counts["passes"] += len(used)  # each rank's pass of each epoch that took part
    if not pairs:
        return None, None, f"{name}: passes too short to compare (fewer than {MIN_PREFIX} indices)"
    if same:
        a, b, verdicts = same[0]
        k = min(v[0] for v in verdicts.values())
        what = "order" if not partial else f"first {k} indices"
        epochs = {e for v in verdicts.values() for e in v[2]}
        text = f"{name}: {fmt_ranks(verdicts)} read the same {what} in epochs {a} and {b}"
        if info.get("shuffle"):
            return text + _hint(info, epochs), None, None
        return (
            None,
            None,
            f"{text} with {info.get('sampler') or 'an unknown sampler'} (cannot tell whether it should shuffle)",
        )
    cut = " (first indices of passes cut short)" if partial else ""
    return None, f"{name}: order differs in each of {plural(pairs + 1, 'epoch')} on every rank{cut}", None


def check_epoch_order(run: RunData) -> CheckResult:
    training = training_passes(run)
    by_loader: dict = {}
    for (key, n), evs in passes(run).items():
        if (key, n) in training:
            by_loader.setdefault(key, {})[n] = evs
    blind = unobserved(run)
    if not by_loader:
        return result("epoch_order", NA, blind or "no DataLoader pass fed an optimizer step")
    multi = {k: v for k, v in by_loader.items() if len(v) >= 2}
    if not multi:
        return result("epoch_order", NA, "each training DataLoader was iterated once (run at least 2 epochs to check)")
    info = loaders(run)
    failures, fine, notes = [], [], []
    counts = {"passes": 0, "indices": 0}
    for key, per_pass in sorted(multi.items()):
        name, desc = loader_name(key, run), info.get(key, {})
        if desc.get("iterable"):
            notes.append(f"{name}: IterableDataset, order not observable")
            continue
        if desc.get("shuffle") is False:
            notes.append(f"{name}: {desc.get('sampler') or 'sampler'} does not shuffle")
            continue
        failure, ok, note = _judge_loader(name, desc, per_pass, counts)
        for text, out in ((failure, failures), (ok, fine), (note, notes)):
            if text:
                out.append(text)
    if blind:
        notes.append(blind)
    if failures:
        return result("epoch_order", FAIL, failures + notes[:1], counts)
    if fine:
        return result("epoch_order", PASS, fine + notes[:2], counts)
    return result("epoch_order", NA, notes or ["nothing to judge"], counts)
