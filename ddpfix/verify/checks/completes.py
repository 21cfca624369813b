"""`completes`: every rank ran the script to its end and torchrun exited 0 within the time limit."""

from __future__ import annotations

from .evidence import all_ranks, first
from .model import FAIL, PASS, CheckResult, RunData, result
from .ranks import output_hint, rank_state

# the order in which the ranks' fates are told: the likely cause first
_ORDER = {
    "waiting": 0,
    "error": 1,
    "crashed": 2,
    "stopped": 3,
    "exit": 4,
    "killed": 5,
    "missing": 6,
    "exit_crash": 7,
    "exit_stopped": 8,
    "finished": 9,
}


# the states of ranks that all ran the script to its end
ENDED = {"finished", "exit_crash", "exit_stopped"}


def crashed_only_at_exit(rank_states: dict) -> bool:
    """`completes`' per-rank states: every rank finished the script, and one crashed afterwards
    (while its process exited: shutdown code, not the script)."""
    states = set(rank_states.values())
    return "exit_crash" in states and states <= ENDED


def check_completes(run: RunData) -> CheckResult:
    states = {r: rank_state(run, r) for r in all_ranks(run)}
    compared = {"ranks": len(states)}
    ranks = {r: s["state"] for r, s in states.items()}
    everyone_finished = all(s["state"] == "finished" for s in states.values())
    if not run.timed_out and run.returncode == 0 and everyone_finished:
        return result("completes", PASS, f"{len(states)} ranks finished in {run.duration:.1f} s", compared, ranks=ranks)
    evidence = []
    if run.timed_out:
        if all(first(run, r, "end") for r in states):
            evidence.append(
                f"every rank ended the script, but the processes had not exited after {run.timeout:g} s; "
                "they were stopped"
            )
        else:
            evidence.append(f"no result within the {run.timeout:g} s limit; every rank was stopped")
    elif not any(first(run, r, "start") for r in states):
        hint = output_hint(run)
        evidence.append(
            f"torchrun exited with code {run.returncode} before any rank ran the script" + (f": {hint}" if hint else "")
        )
    evidence += [states[r]["text"] for r in sorted(states, key=lambda r: (_ORDER.get(states[r]["state"], 9), r))]
    if not run.timed_out and run.returncode not in (0, None) and everyone_finished:
        evidence.append(f"torchrun exited with code {run.returncode}")
    return result(
        "completes",
        FAIL,
        evidence,
        compared,
        ranks=ranks,
        sites={r: s.get("site") for r, s in states.items() if s.get("site")},
    )
