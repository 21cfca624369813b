"""`shards`: in every training pass the ranks read disjoint index sets that together cover the dataset
(of one dataset: a `Subset` holds the same samples on every rank),
and the ranks did not all feed the same training inputs to the model (:mod:`.inputs`: this also judges
batches cut by hand, which no DataLoader draws)."""

from __future__ import annotations

from .evidence import all_ranks, events, finished, fmt_ranks, fmt_set, plural
from .inputs import judge_inputs
from .loaders import epoch_label, loader_name, loaders, passes, training_passes, unobserved
from .model import FAIL, NA, PASS, CheckResult, RunData, result


def _overlap(sets: dict):
    """(rank a, rank b, indices both read) for the first two ranks that share indices."""
    ranks = sorted(sets)
    for i, a in enumerate(ranks):
        for b in ranks[i + 1 :]:
            common = sets[a] & sets[b]
            if common:
                return a, b, common
    return None


def _padding(info: dict) -> int:
    """Indices DistributedSampler repeats to give every rank the same number (overlap it allows)."""
    ds, n_ds = info.get("dist_sampler") or {}, info.get("dataset_len")
    if ds and not ds.get("drop_last") and isinstance(n_ds, int):
        return max(0, int(ds.get("total_size", n_ds)) - n_ds)
    return 0


def _unread_allowed(info: dict, world: int) -> int:
    """Indices a complete pass may leave unread: DistributedSampler's and DataLoader's drop_last."""
    ds, n_ds = info.get("dist_sampler") or {}, info["dataset_len"]
    allowed = 0
    if ds and ds.get("drop_last"):
        allowed += max(0, n_ds - int(ds.get("total_size", n_ds)))
    if info.get("drop_last") and info.get("batch_size"):
        allowed += world * (int(info["batch_size"]) - 1)
    return allowed


def _judge_streams(name: str, label: str, evs: dict, summary: dict):
    """A sampler that draws with replacement: samples repeat within a rank and across ranks by chance,
    so the ranks' index sets are not disjoint even when every rank draws its own stream. What must not
    happen is every rank drawing the same stream (one seed everywhere)."""
    streams = {r: list(e.get("indices") or ()) for r, e in evs.items()}
    read = sorted(r for r, s in streams.items() if s)
    if len(read) < 2:
        return None, None, 0
    for i, a in enumerate(read):
        for b in read[i + 1 :]:
            n = min(len(streams[a]), len(streams[b]))
            if streams[a][:n] == streams[b][:n]:
                return (
                    f"{name}, {label}: ranks {a} and {b} drew the same {n} indices in the same order from a "
                    "sampler that draws with replacement: seed each rank's draws apart",
                    None,
                    n,
                )
    summary["epochs"] += 1
    summary["streams"] = True
    summary["per_rank"].update(len(streams[r]) for r in read)
    summary["union"].append(len(set().union(*(set(streams[r]) for r in read))))
    return None, None, sum(len(streams[r]) for r in read)


def _judge(run: RunData, name: str, label: str, evs: dict, info: dict, summary: dict):
    """(failure or None, note or None, indices compared) for one training pass of one loader."""
    if info.get("replacement"):
        return _judge_streams(name, label, evs, summary)
    sets = {r: set(e.get("indices") or ()) for r, e in evs.items()}
    read = sorted(r for r, s in sets.items() if s)
    if not read:
        return None, f"{name}, {label}: no rank read an index", 0
    idle = [r for r in range(run.world_size) if r not in read]
    idle_done = [r for r in idle if finished(run, r)]
    if idle_done:
        counts = "/".join(str(len(sets[r])) for r in read)
        return (
            f"{name}, {label}: {fmt_ranks(idle_done)} read nothing while {fmt_ranks(read)} read {counts} indices",
            None,
            0,
        )
    note = f"{name}, {label}: {fmt_ranks(idle)} did not iterate it (did not finish the script)" if idle else None
    if len(read) < 2:
        return None, note, 0
    union = set().union(*sets.values())
    total = sum(len(s) for s in sets.values())
    dup, pad = total - len(union), _padding(info)
    summary["epochs"] += 1
    summary["per_rank"].update(len(sets[r]) for r in read)
    summary["union"].append(len(union))
    summary["dup"] = max(summary["dup"], dup)
    if dup > pad:
        a, b, common = _overlap(sets)
        allowance = f" (DistributedSampler padding allows {pad})" if pad else ""
        return (
            f"{name}, {label}: indices {fmt_set(common)} on {fmt_ranks([a, b])}; "
            f"the ranks read {total} samples but only {len(union)} distinct ones{allowance}",
            note,
            total,
        )
    n_ds = info.get("dataset_len")
    complete = all(e.get("complete") for e in evs.values()) and not idle
    if complete and all(isinstance(i, int) for i in union) and isinstance(n_ds, int) and info.get("full_coverage"):
        missing = set(range(n_ds)) - union
        if len(missing) > _unread_allowed(info, run.world_size):
            return (
                f"{name}, {label}: the ranks together read {len(union & set(range(n_ds)))} of {n_ds} "
                f"samples; never read: {fmt_set(missing)}",
                note,
                total,
            )
    return None, note, total


def check_shards(run: RunData) -> CheckResult:
    if run.world_size < 2:
        return result("shards", NA, "one process: nothing to shard")
    by_loader = _check_loaders(run)
    inputs = judge_inputs(run)
    if inputs is None:
        if by_loader.status == NA and by_loader.evidence:
            by_loader.evidence.append("no training forward ran on two ranks (forward of a module in training mode)")
        return by_loader
    compared = dict(by_loader.compared)
    compared["inputs"] = inputs.inputs
    if by_loader.status == FAIL or inputs.status == FAIL:
        evidence = (by_loader.evidence if by_loader.status == FAIL else []) + (
            inputs.evidence if inputs.status == FAIL else []
        )
        return result("shards", FAIL, evidence, compared)
    if by_loader.status == NA and unobserved(run):
        # a partial trace proves no pass: the inputs differ, but the DataLoader passes went unseen
        return result("shards", NA, by_loader.evidence + inputs.evidence, compared)
    if by_loader.status == PASS or inputs.status == PASS:
        evidence = (by_loader.evidence if by_loader.status == PASS else []) + inputs.evidence
        if by_loader.status == NA:
            evidence += by_loader.evidence[:1]
        return result("shards", PASS, evidence, compared)
    return result("shards", NA, by_loader.evidence + inputs.evidence, compared)


def _split_apart(run: RunData, keys: set) -> list[str]:
    """Training loaders over a `Subset` that holds different samples on different ranks (an unseeded
    `random_split`): the positions the ranks draw are disjoint, the samples behind them are not, and
    one rank trains on what another holds out."""
    out = []
    for key in sorted(keys):
        digests = {r: e.get("subset") for r in all_ranks(run) for e in events(run, r, "loader") if e["key"] == key}
        held = {r: d for r, d in digests.items() if d}
        if len(set(held.values())) > 1:
            a, b = next((a, b) for a in sorted(held) for b in sorted(held) if a < b and held[a] != held[b])
            out.append(
                f"{loader_name(key, run)}: its dataset is a Subset of different samples on {fmt_ranks([a, b])} "
                "(a random_split with no shared seed?): the ranks' shards overlap in the underlying dataset"
            )
    return out


def _check_loaders(run: RunData) -> CheckResult:
    """The verdict on the DataLoader passes alone."""
    blind = unobserved(run)
    every = passes(run)
    if not every:
        return result("shards", NA, blind or "no DataLoader was iterated")
    training = training_passes(run)
    judged = {k: v for k, v in every.items() if k in training}
    if not judged:
        return result(
            "shards",
            NA,
            [f"no DataLoader pass fed an optimizer step ({len(every)} evaluation passes not judged)"]
            + ([blind] if blind else []),
        )
    info = loaders(run)
    split = _split_apart(run, {key for key, _ in judged})
    failures, notes, summaries = [], [], {}
    n_passes = n_indices = 0
    for (key, n), evs in sorted(judged.items()):
        name = loader_name(key, run)
        if info.get(key, {}).get("iterable"):
            notes.append(f"{name}: IterableDataset, sharding is not observable from the sampler")
            continue
        summary = summaries.setdefault(key, {"epochs": 0, "per_rank": set(), "union": [], "dup": 0})
        failure, note, compared = _judge(run, name, epoch_label(n, evs), evs, info.get(key, {}), summary)
        n_passes += 1 if compared else 0
        n_indices += compared
        failures.extend(t for t in (failure,) if t)
        notes.extend(t for t in (note,) if t)
    if blind:
        notes.append(blind)
    compared = {"passes": n_passes, "indices": n_indices}
    if split or failures:
        extra = [f"(the same in {plural(len(failures) - 1, 'more epoch')})"] if len(failures) > 1 else []
        return result("shards", FAIL, split + failures[:1] + extra + notes[:2], compared)
    if not n_passes:
        return result("shards", NA, notes or ["no training pass was read by two ranks"], compared)
    evidence = []
    for key, s in summaries.items():
        if not s["epochs"]:
            continue
        per = "/".join(str(x) for x in sorted(s["per_rank"]))
        pad_txt = f", {s['dup']} repeated by DistributedSampler padding" if s["dup"] else ""
        n_ds = info.get(key, {}).get("dataset_len")
        cover = f"union {min(s['union'])}/{n_ds}" if isinstance(n_ds, int) else f"union {min(s['union'])}"
        kind = "drawn with replacement, a different stream on each rank" if s.get("streams") else "disjoint"
        evidence.append(
            f"{loader_name(key, run)}: {plural(s['epochs'], 'epoch')}, {run.world_size} ranks x {per} indices, "
            f"{kind}{pad_txt}, {cover}"
        )
    return result("shards", PASS, evidence + notes[:2], compared)
