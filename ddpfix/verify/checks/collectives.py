"""`collectives`: every rank issued the same sequence of collectives on each process group."""

from __future__ import annotations

from collections import Counter

from .evidence import all_ranks, events, first, fmt_site, plural
from .model import FAIL, NA, PASS, CheckResult, RunData, result


def _sig(e: dict) -> tuple:
    shape = tuple(e["shape"]) if "shape" in e else e.get("len")
    return (e.get("op"), shape, e.get("dtype"), e.get("reduce_op"))


def _fmt_coll(e: dict, run: RunData) -> str:
    desc = e.get("op", "?")
    if "shape" in e:
        shape = e["shape"]
        if e.get("op") == "ddp.allreduce":
            desc += f" ({shape[0]:,} {e.get('dtype')})"
        else:
            desc += f" ({'x'.join(map(str, shape)) or 'scalar'} {e.get('dtype')})"
    elif "len" in e:
        desc += f" ({e['len']} items)"
    if e.get("site"):
        desc += f" at {fmt_site(e['site'], run)}"
    return desc


def _members(group: str, ranks: list) -> list:
    if group == "world":
        return ranks
    return [int(x) for x in group[len("ranks") :].split(",") if x.isdigit() and int(x) in ranks]


def _first_difference(seqs: dict, gname: str, run: RunData):
    """(positions compared, failure text or None) for the sequences of one group."""
    longest = max(len(s) for s in seqs.values())
    for i in range(longest):
        here = {r: (s[i] if i < len(s) else None) for r, s in seqs.items()}
        if len({(_sig(e) if e else None) for e in here.values()}) > 1:
            parts = []
            for r, e in here.items():
                if e is None:
                    parts.append(f"rank {r} issued none (it issued {len(seqs[r])} in all)")
                else:
                    parts.append(f"rank {r} issued {_fmt_coll(e, run)}")
            return i + 1, f"collective #{i + 1} on {gname} differs: " + "; ".join(parts)
    return longest, None


def _builtin_hook(run: RunData, ranks: list) -> bool:
    for r in ranks:
        end = first(run, r, "end") or {}
        if "builtin" in (end.get("ddp_hooks") or {}).values():
            return True
    return False


def check_collectives(run: RunData) -> CheckResult:
    if run.world_size < 2:
        return result("collectives", NA, "one process")
    ranks = all_ranks(run)
    colls = {r: [e for e in events(run, r, "coll") if not e.get("p2p")] for r in ranks}
    if not any(colls.values()):
        return result("collectives", NA, "no collective was issued")
    groups = sorted({e.get("group", "world") for v in colls.values() for e in v})
    failures, summary, compared = [], Counter(), 0
    for g in groups:
        members = _members(g, ranks)
        if len(members) < 2:
            continue
        seqs = {r: [e for e in colls[r] if e.get("group", "world") == g] for r in members}
        n, failure = _first_difference(seqs, "the default group" if g == "world" else f"group {g}", run)
        compared += n
        if failure:
            failures.append(failure)
        summary.update(e.get("op") for e in seqs[members[0]])
    note = ["DDP's gradient all-reduce was not observed (built-in comm hook)"] if _builtin_hook(run, ranks) else []
    counts = {"ranks": len(ranks), "collectives": compared}
    if failures:
        return result("collectives", FAIL, failures + note, counts)
    if not compared:
        return result("collectives", NA, ["no collective on a group of two or more ranks"] + note, counts)
    parts = ", ".join(f"{n} {op}" for op, n in summary.most_common())
    total = sum(summary.values())
    return result(
        "collectives",
        PASS,
        [f"{len(ranks)} ranks issued the same {plural(total, 'collective')}: {parts}"] + note,
        counts,
    )
