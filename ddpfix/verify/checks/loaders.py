"""DataLoader passes as the probe recorded them, for `shards` and `epoch_order`: which loaders, which
passes fed optimizer steps (training) and how a loader and an epoch are named in evidence."""

from __future__ import annotations

from .evidence import all_ranks, events, fmt_ranks, fmt_site
from .model import RunData

# probe_error records after which DataLoader passes may be missing from the trace
_LOADER_ERRORS = ("patch DataLoader", "start pass")


def loaders(run: RunData) -> dict:
    """loader key -> its description (the first rank's)."""
    out = {}
    for r in all_ranks(run):
        for e in events(run, r, "loader"):
            out.setdefault(e["key"], e)
    return out


def passes(run: RunData) -> dict:
    """(loader key, pass number) -> {rank: pass event}"""
    out: dict = {}
    for r in all_ranks(run):
        for e in events(run, r, "pass"):
            out.setdefault((e["loader"], e["n"]), {})[r] = e
    return out


def training_passes(run: RunData) -> set:
    """The (loader key, pass number) pairs during which an optimizer step ran on some rank."""
    keys = set()
    for r in all_ranks(run):
        for e in events(run, r, "step"):
            if e.get("loader") is not None:
                keys.add((e["loader"], e.get("pass")))
        for e in events(run, r, "pass"):
            if e.get("steps"):
                keys.add((e["loader"], e["n"]))
    return keys


def loader_name(key: str, run: RunData) -> str:
    site, _, nth = key.partition("#")
    return f"loader at {fmt_site(site, run, False)}" + (f" (#{int(nth) + 1})" if nth else "")


def epoch_label(n: int, evs: dict) -> str:
    epochs = {e.get("epoch") for e in evs.values()}
    label = f"epoch {n}"
    if len(epochs) == 1:
        (ep,) = epochs
        if ep is not None and ep != n:
            label += f" (sampler epoch {ep})"
    return label


def unobserved(run: RunData) -> str | None:
    """Why DataLoader passes may be missing from the traces (the probe could not watch them), or None."""
    ranks = [r for r in all_ranks(run) if any(e.get("what") in _LOADER_ERRORS for e in events(run, r, "probe_error"))]
    if not ranks:
        return None
    return f"the probe could not observe DataLoader passes on {fmt_ranks(ranks)} (see the probe check)"
