"""`single`: with ``--single``, ``python SCRIPT ARGS`` as a plain process exits 0 within the time limit."""

from __future__ import annotations

from .model import FAIL, NA, PASS, CheckResult, RunData, result


def check_single(run: RunData) -> CheckResult:
    if not run.single or run.plain is None:
        return result("single", NA, "not requested (--single)")
    p = run.plain
    compared = {"runs": 1}
    if p.timed_out:
        return result("single", FAIL, f"`{p.command}` did not finish within {run.timeout:g} s", compared)
    if p.returncode != 0 and p.reached_end:
        return result(
            "single",
            FAIL,
            f"`{p.command}` ran the script to its end, then its process exited with code {p.returncode} while "
            "exiting: a crash in shutdown code (the interpreter's or a library's), after the script's last line",
            compared,
        )
    if p.returncode != 0:
        lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
        last = lines[-1].strip()[:200] if lines else ""
        return result(
            "single", FAIL, f"`{p.command}` exited with code {p.returncode}" + (f": {last}" if last else ""), compared
        )
    return result("single", PASS, f"`{p.command}` exited 0 in {p.duration:.1f} s", compared)
