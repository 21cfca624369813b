"""What became of each rank (finished, raised, waiting at the time limit, stopped, crashed at exit...),
where a dumped rank waits, and the per-rank table and run facts of the report."""

from __future__ import annotations

import re

from .evidence import PROBE_DIR, all_ranks, events, first, fmt_site, is_user_file, short_message
from .model import RunData

_GENERIC_FUNCS = {"wrapper", "inner", "_fn", "decorate_context", "wrapped", "__call__", "fn", "f"}
_SIGNAL_RE = re.compile(r"Signal (\d+) \((SIG\w+)\) received by PID (\d+)")


def wait_point(threads: list, run: RunData):
    """(user site, called function) where a dumped rank waits; None when no user frame is on the stack."""
    if not threads:
        return None
    main = None
    for t in threads:
        if any(f["func"] == "main" and f["file"].endswith(("probe.py",)) for f in t["frames"]) or any(
            f["file"].endswith("runpy.py") for f in t["frames"]
        ):
            main = t
            break
    if main is None:
        main = next((t for t in threads if t.get("current")), threads[0])
    frames = main["frames"]
    for i, f in enumerate(frames):
        if is_user_file(f["file"]):
            callee = None
            for g in reversed(frames[:i]):
                if g["file"].startswith(PROBE_DIR) or g["func"] in _GENERIC_FUNCS or g["func"].startswith("<"):
                    continue
                callee = g["func"]
                break
            return f"{f['file']}:{f['line']}", callee
    return None


def signalled(run: RunData) -> dict:
    """rank -> the signal that ended its process, from torchrun's failure summary (pids from the probe's start)."""
    ranks = {}
    for r in all_ranks(run):
        s = first(run, r, "start")
        if s and isinstance(s.get("pid"), int):
            ranks[s["pid"]] = r
    return {ranks[int(m.group(3))]: m.group(2) for m in _SIGNAL_RE.finditer(run.output) if int(m.group(3)) in ranks}


def _crash_cause(run: RunData, r: int, signal: str | None) -> str:
    """The fatal error of a rank, and the C++ runtime's own word for it when the output has one."""
    lines = run.crashes.get(r, "").strip().splitlines()
    cause = lines[0].strip() if lines else signal or "a signal"
    native = re.search(r"^.*?(terminate called [^\n]*)$", run.output, re.M)
    if native:
        cause += f"; {native.group(1).strip()}"
    return cause


def _ended(run: RunData, r: int, end: dict, signal: str | None) -> dict:
    """The state of a rank whose script ended (an ``end`` record)."""
    st = end.get("status")
    if st == "ok":
        # a dump with a clean exit came from a forked child (a DataLoader worker), not from the rank
        crashed = r in run.crashes and run.returncode not in (0, None)
        if not crashed and signal in ("SIGTERM", "SIGKILL"):
            return {
                "state": "exit_stopped",
                "text": f"rank {r} finished the script; torchrun stopped its process while it was exiting",
            }
        if crashed or signal:
            return {
                "state": "exit_crash",
                "text": f"rank {r} finished the script, then its process crashed while "
                f"exiting ({_crash_cause(run, r, signal)}): a crash in shutdown code (the interpreter's or a library's), "
                "after the script's last line",
            }
        return {"state": "finished", "text": f"rank {r} finished"}
    if st == "exit":
        return {"state": "exit", "text": f"rank {r} exited with code {end.get('code')}"}
    err = end.get("error") or "error"
    where = f" at {fmt_site(end.get('site'), run)}" if end.get("site") else ""
    return {
        "state": "error",
        "site": end.get("site"),
        "text": f"rank {r} raised {err}{where}: {short_message(end.get('message'))}",
    }


def _dumped(run: RunData, r: int, threads: list, verb: str, fallback: str) -> dict:
    wp = wait_point(threads, run)
    if not wp:
        return {"text": f"rank {r} {fallback}"}
    site, callee = wp
    inner = f" (in {callee}())" if callee else ""
    return {"site": site, "text": f"rank {r} {verb} {fmt_site(site, run)}{inner}"}


def rank_state(run: RunData, r: int) -> dict:
    """What became of one rank: finished, exited, failed, waiting at the limit, stopped, never started."""
    end = first(run, r, "end")
    signal = signalled(run).get(r)  # from torchrun's summary: what ended the process
    if end is not None:
        return _ended(run, r, end, signal)
    if run.timed_out and r in run.stacks:
        return {
            "state": "waiting",
            **_dumped(run, r, run.stacks[r], "waits in", "was still running outside the script's code"),
        }
    if r in run.term_stacks:
        return {
            "state": "stopped",
            **_dumped(run, r, run.term_stacks[r], "was stopped by torchrun in", "was stopped by torchrun"),
        }
    if r in run.crashes:
        first_line = run.crashes[r].strip().splitlines()[0]
        return {"state": "crashed", "text": f"rank {r} crashed: {first_line}"}
    if first(run, r, "start") is None:
        return {"state": "missing", "text": f"rank {r} never started the script"}
    if run.timed_out:
        return {"state": "waiting", "text": f"rank {r} was still running (no stack dump)"}
    if signal:
        return {"state": "killed", "text": f"rank {r} was ended by {signal} before the end of the script"}
    return {"state": "killed", "text": f"rank {r} ended without a report (killed?)"}


def output_hint(run: RunData) -> str | None:
    lines = [ln.strip() for ln in run.output.splitlines() if ln.strip() and not ln.startswith("---")]
    for ln in reversed(lines):
        if (
            re.search(r"(Error|Exception)\b", ln)
            and not ln.startswith(("E", "W", "I"))
            or ln.startswith(("ModuleNotFoundError", "torch.distributed.elastic", "RuntimeError", "ValueError"))
        ):
            return ln[:200]
    return lines[-1][:200] if lines else None


def rank_table(run: RunData) -> list:
    rows = []
    for r in all_ranks(run):
        s = first(run, r, "start") or {}
        pg = first(run, r, "init_pg") or {}
        end = first(run, r, "end") or {}
        rows.append(
            {
                "rank": r,
                "local_rank": s.get("local_rank"),
                "group_rank": s.get("group_rank"),
                "pid": s.get("pid"),
                "backend": pg.get("backend"),
                "state": rank_state(run, r)["state"],
                "steps": end.get("steps", len(events(run, r, "step"))),
            }
        )
    return rows


def run_meta(run: RunData) -> dict:
    backends = set()
    injected = None
    cuda = None
    for r in all_ranks(run):
        pg = first(run, r, "init_pg")
        if pg:
            backends.add(pg.get("backend"))
            if pg.get("timeout_injected"):
                injected = pg.get("timeout_s")
        end = first(run, r, "end")
        if end and end.get("cuda_available") is not None:
            cuda = end["cuda_available"]
    used = ",".join(sorted(b for b in backends if b)) or None
    expected = None
    if run.backend == "auto" and cuda is not None:
        expected = "cpu:gloo,cuda:nccl" if cuda else "gloo"  # what ddpfix emits
    return {
        "script": run.script,
        "args": run.args,
        "cwd": run.cwd,
        "nproc": run.nproc,
        "nnodes": run.nnodes,
        "world_size": run.world_size,
        "backend_option": run.backend,
        "backend_expected": expected if run.backend == "auto" else run.backend,
        "backend_used": used,
        "cuda_available": cuda,
        "pg_timeout_injected": injected,
        "timeout": run.timeout,
        "timed_out": run.timed_out,
        "returncode": run.returncode,
        "duration": round(run.duration, 2),
        "commands": run.commands,
        "run_dir": run.run_dir,
    }
