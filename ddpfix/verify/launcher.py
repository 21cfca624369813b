"""Build and run the torchrun command(s) for ``ddpfix verify``, and the plain single-process run.

One node: ``python -m torch.distributed.run --standalone --nproc-per-node=N .../ddpfix/verify/probe.py
-- SCRIPT ARGS`` (after ``--`` torchrun takes none of the script's options for its own). torchrun
starts the probe file by path (not ``-m ddpfix.verify.probe``), so neither the
``ddpfix`` package nor a ``PYTHONPATH`` entry reaches the user's processes. Several nodes on one
host: one torchrun agent per node (``--nnodes=K --node-rank=i``, static rendezvous on 127.0.0.1) so
that ``RANK`` differs from ``LOCAL_RANK``.

Every agent starts in its own session. At the time limit the launcher asks every rank for its Python
stack (``SIGUSR1``, which the probe routes to :mod:`faulthandler`), then kills the agents, the ranks
(torchrun starts each worker in a session of its own) and their children. Nothing outlives the limit
by more than a few seconds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .checks.model import PlainRun, RunData
from .processes import alive, descendants, kill
from .run_files import OUTPUT_TAIL, parse_stack_dump, read_crashes, read_stacks, read_trace_files, read_traces, tail

__all__ = [
    "LaunchError",
    "PROBE_FILE",
    "launch",
    "parse_stack_dump",
    "read_trace_files",
    "read_traces",
    "run_plain",
    "torch_available",
    "torchrun_commands",
]

PROBE_FILE = str(Path(__file__).resolve().with_name("probe.py"))
PROBE_ENV = "DDPFIX_VERIFY_PROBE"
DUMP_WAIT_S = 3.0
_TORCHRUN_VARS = (
    "RANK",
    "LOCAL_RANK",
    "GROUP_RANK",
    "ROLE_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "ROLE_WORLD_SIZE",
    "GROUP_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_MAX_RESTARTS",
    "TORCHELASTIC_USE_AGENT_STORE",
    "TORCHELASTIC_ERROR_FILE",
)


class LaunchError(Exception):
    """The run could not be started (an input or environment problem, not a verdict)."""


def torch_available(python: str) -> bool:
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return importlib.util.find_spec("torch") is not None
    try:
        r = subprocess.run(
            [python, "-c", "import importlib.util,sys; sys.exit(importlib.util.find_spec('torch') is None)"],
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_commands(
    script: str, args, *, nproc: int, nnodes: int, python: str, log_dir: str | None = None, port: int | None = None
) -> list[list[str]]:
    """The agent command lines: one for a single node, one per simulated node otherwise."""
    # `--`: the script's own options are never read as torchrun's (`--s` would abbreviate `--standalone`)
    tail = [PROBE_FILE, "--", script, *args]
    base = [python, "-m", "torch.distributed.run"]
    if nnodes == 1:
        cmd = [*base, "--standalone", f"--nproc-per-node={nproc}"]
        if log_dir:
            cmd.append(f"--log-dir={log_dir}/node0")
        return [cmd + tail]
    port = port or free_port()
    cmds = []
    for node in range(nnodes):
        cmd = [
            *base,
            f"--nnodes={nnodes}",
            f"--node-rank={node}",
            f"--nproc-per-node={nproc}",
            "--master-addr=127.0.0.1",
            f"--master-port={port}",
        ]
        if log_dir:
            cmd.append(f"--log-dir={log_dir}/node{node}")
        cmds.append(cmd + tail)
    return cmds


def _probe_env(base: dict, run_dir: str, backend: str, pg_timeout: float | None) -> dict:
    env = dict(base)
    cfg = {"run_dir": run_dir, "backend": backend if backend in ("gloo", "nccl") else None, "pg_timeout": pg_timeout}
    env[PROBE_ENV] = json.dumps(cfg)
    return env


def _wait_for_dumps(run_dir: str, ranks: list[int]) -> None:
    end = time.monotonic() + DUMP_WAIT_S
    while time.monotonic() < end:
        done = 0
        for r in ranks:
            p = Path(run_dir) / f"stack{r}.txt"
            try:
                text = p.read_text(errors="replace")
            except OSError:
                text = ""
            # a dump is complete once the main thread's frames (ending in the probe's main) are in
            if "in main" in text or "in <module>" in text:
                done += 1
        if done >= len(ranks):
            time.sleep(0.1)
            return
        time.sleep(0.05)


def launch(
    script: str,
    args=(),
    *,
    nproc: int = 2,
    nnodes: int = 1,
    timeout: float = 300.0,
    backend: str = "auto",
    python: str | None = None,
    cwd: str | None = None,
    env: dict | None = None,
    pg_timeout: float | None = None,
    keep_run_dir: bool = False,
) -> RunData:
    """Run SCRIPT under torchrun with the probe in every rank and collect what the ranks recorded."""
    python = python or sys.executable
    cwd = os.path.abspath(cwd or os.getcwd())
    base_env = dict(os.environ if env is None else env)
    for k in _TORCHRUN_VARS:
        base_env.pop(k, None)
    if pg_timeout is None:
        pg_timeout = max(2.0, round(timeout * 0.5, 1))
    run_dir = tempfile.mkdtemp(prefix="ddpfix-verify-")
    world = nproc * nnodes
    cmds = torchrun_commands(
        script, list(args), nproc=nproc, nnodes=nnodes, python=python, log_dir=os.path.join(run_dir, "torchrun")
    )
    penv = _probe_env(base_env, run_dir, backend, pg_timeout)
    procs: list[subprocess.Popen] = []
    outs = []
    start = time.monotonic()
    timed_out = False
    try:
        for i, cmd in enumerate(cmds):
            out = open(os.path.join(run_dir, f"agent{i}.out"), "wb")
            err = open(os.path.join(run_dir, f"agent{i}.err"), "wb")
            outs += [out, err]
            procs.append(
                subprocess.Popen(
                    cmd, cwd=cwd, env=penv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
                )
            )
        deadline = start + timeout
        while True:
            if all(p.poll() is not None for p in procs):
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
            time.sleep(0.05)
    except BaseException:
        _stop(procs, run_dir, dump=False)
        raise
    finally:
        for f in outs:
            f.close()
    if timed_out:
        _stop(procs, run_dir, dump=True)
    duration = time.monotonic() - start
    rcs = [p.returncode for p in procs]
    returncode = next((rc for rc in rcs if rc not in (0, None)), 0 if all(rc == 0 for rc in rcs) else None)
    output = []
    for i in range(len(cmds)):
        for kind in ("out", "err"):
            t = tail(Path(run_dir) / f"agent{i}.{kind}")
            if t.strip():
                label = f"node {i} " if len(cmds) > 1 else ""
                output.append(f"--- {label}std{kind} ---\n{t}")
    traces, unreadable = read_trace_files(run_dir)
    data = RunData(
        script=os.path.abspath(os.path.join(cwd, script)),
        args=list(args),
        cwd=cwd,
        nproc=nproc,
        nnodes=nnodes,
        world_size=world,
        timeout=timeout,
        backend=backend,
        pg_timeout=pg_timeout,
        returncode=None if timed_out else returncode,
        timed_out=timed_out,
        duration=duration,
        traces=traces,
        unreadable=unreadable,
        stacks=read_stacks(run_dir, "stack"),
        term_stacks=read_stacks(run_dir, "term"),
        crashes=read_crashes(run_dir),
        output="\n".join(output),
        commands=[" ".join(_quote(c) for c in cmd) for cmd in cmds],
        run_dir=run_dir if keep_run_dir else None,
    )
    if not keep_run_dir:
        shutil.rmtree(run_dir, ignore_errors=True)
    return data


def _stop(procs, run_dir: str, dump: bool) -> None:
    """Ask every rank for its stack (when dump), then kill agents, ranks and their children."""
    agents = [p.pid for p in procs if p.poll() is None]
    tree = descendants([p.pid for p in procs])
    ranks = {}
    for r, events in read_traces(run_dir).items():
        for e in events:
            if e.get("ev") == "start" and isinstance(e.get("pid"), int):
                ranks[r] = e["pid"]
                break
    if dump:
        asked = []
        for r, pid in ranks.items():
            if pid in tree and alive(pid):
                try:
                    os.kill(pid, signal.SIGUSR1)
                    asked.append(r)
                except ProcessLookupError:
                    pass
        if asked:
            _wait_for_dumps(run_dir, asked)
        tree = descendants([p.pid for p in procs])  # children may have changed meanwhile
    kill([*agents, *ranks.values(), *tree])
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not wait
            pass
    # ranks are session leaders of their own; make sure nothing of theirs survived
    kill([pid for pid in [*ranks.values(), *tree] if alive(pid)])


def _quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


def run_plain(
    script: str,
    args=(),
    *,
    timeout: float = 300.0,
    python: str | None = None,
    cwd: str | None = None,
    env: dict | None = None,
) -> PlainRun:
    """``python SCRIPT ARGS`` as a plain single process (no torchrun variables). The probe runs the script,
    as under torchrun, so that its end record says whether the script reached its end: a process that
    exits non-zero after that crashed while exiting, which only that record can tell."""
    python = python or sys.executable
    cwd = os.path.abspath(cwd or os.getcwd())
    base_env = dict(os.environ if env is None else env)
    for k in _TORCHRUN_VARS:
        base_env.pop(k, None)
    run_dir = tempfile.mkdtemp(prefix="ddpfix-plain-")
    penv = _probe_env(base_env, run_dir, "auto", None)
    cmd = [python, PROBE_FILE, script, *args]
    start = time.monotonic()
    try:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            p = subprocess.Popen(
                cmd, cwd=cwd, env=penv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
            )
            timed_out = False
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            except BaseException:
                kill([p.pid, *descendants([p.pid])])
                raise
            if timed_out:
                kill([p.pid, *descendants([p.pid])])
                p.wait()
            duration = time.monotonic() - start
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode("utf-8", "replace")
            stderr = err.read().decode("utf-8", "replace")
        traces, _ = read_trace_files(run_dir)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    end = next((e for e in traces.get(0, ()) if e.get("ev") == "end"), None)
    shown = ["python" if python == sys.executable else python, script, *args]
    return PlainRun(
        command=" ".join(_quote(c) for c in shown),
        returncode=None if timed_out else p.returncode,
        timed_out=timed_out,
        duration=duration,
        stdout=stdout[-OUTPUT_TAIL:],
        stderr=stderr[-OUTPUT_TAIL:],
        end_status=None if end is None else str(end.get("status")),
    )
