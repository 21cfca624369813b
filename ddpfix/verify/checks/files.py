"""`files`: no path is written by more than one rank."""

from __future__ import annotations

from .evidence import all_ranks, events, first, fmt_site, short_path
from .model import FAIL, NA, PASS, CheckResult, RunData, result


def check_files(run: RunData) -> CheckResult:
    ranks = all_ranks(run)
    by_path: dict = {}
    for r in ranks:
        for e in events(run, r, "write"):
            by_path.setdefault(e["path"], {})[r] = e
    if not by_path:
        return result("files", NA, "no file was written")
    files = {p: sorted(w) for p, w in by_path.items()}
    if run.world_size < 2:
        return result("files", NA, f"one process: no other rank to write the same file ({len(by_path)} written)")
    compared = {"files": len(by_path), "ranks": len(ranks)}
    starts = {r: first(run, r, "start") or {} for r in ranks}
    failures, ok = [], []
    for path, writers in sorted(by_path.items()):
        shown = short_path(path, run)
        if len(writers) == 1:
            (r,) = writers
            ok.append(f"{shown} (rank {r})")
            continue
        hint = ""
        if {starts[r].get("local_rank") for r in writers} == {0} and run.nnodes > 1:
            hint = " (each is LOCAL_RANK 0 on its node: guard on the global rank, not LOCAL_RANK)"
        failures.append(f"{shown} written by ranks {sorted(writers)} ({_how(writers, run)}){hint}")
    if failures:
        more = [f"(and {len(failures) - 5} more)"] if len(failures) > 5 else []
        return result("files", FAIL, failures[:5] + more, compared, files=files)
    text = ", ".join(ok[:6]) + (f" and {len(ok) - 6} more" if len(ok) > 6 else "")
    return result("files", PASS, f"{len(ok)} file(s), each written by one rank: {text}", compared, files=files)


def _how(writers: dict, run: RunData) -> str:
    """How the ranks wrote a path: the first rank's call, or, where the ranks differ (rank 0 saves a
    file another rank deletes), each distinct call with the ranks that made it."""
    calls: dict[tuple, list[int]] = {}
    for r in sorted(writers):
        e = writers[r]
        calls.setdefault((e.get("api"), fmt_site(e.get("site"), run, False)), []).append(r)
    if len(calls) == 1:
        ((api, site),) = calls
        return f"{api} at {site}"
    return "; ".join(
        f"{api} at {site} on rank{'s' if len(rs) > 1 else ''} {', '.join(map(str, rs))}"
        for (api, site), rs in calls.items()
    )
