"""``ddpfix verify``: run a script on several processes and check, at run time, that it is correct DDP.

Python API::

    from ddpfix.verify import verify_script
    report = verify_script("train.py", ["--epochs", "2"], nproc=2)
    report.ok            # True when every applicable check passed
    report.checks        # [CheckResult(name, title, status, evidence, data), ...]
    report.to_dict()     # JSON-ready

This package imports only the standard library at import time: the probe
(:mod:`ddpfix.verify.probe`) is imported inside the user's training processes.
"""

from __future__ import annotations

import os
import sys

__all__ = ["verify_script", "VerifyReport", "CheckResult", "VerifyUsageError", "BACKENDS", "DEFAULT_TIMEOUT"]

BACKENDS = ("auto", "gloo", "nccl")
DEFAULT_TIMEOUT = 300.0


class VerifyUsageError(ValueError):
    """Bad input to verify (missing script, bad option, no torch): reported in one line, exit code 2."""


def verify_script(
    path,
    args=(),
    nproc: int | None = None,
    nnodes: int = 1,
    timeout: float = DEFAULT_TIMEOUT,
    backend: str = "auto",
    single: bool = False,
    *,
    cwd=None,
    python: str | None = None,
    env: dict | None = None,
    keep_run_dir: bool = False,
):
    """Run ``path`` under torchrun with the probe in every rank and judge it. Returns a VerifyReport.

    ``nproc`` is the number of processes per node (torchrun's ``--nproc-per-node``; default 2, or 1
    with ``nnodes > 1``); with ``nnodes > 1`` one torchrun agent per node runs on this host. ``timeout`` bounds each run (the
    torchrun run and, with ``single``, the plain ``python path ARGS`` run). ``cwd`` is the working
    directory of the runs (default: the current one); relative ``path`` is taken relative to it.
    """
    from . import checks, launcher

    if nproc is None:
        nproc = 2 if nnodes == 1 else 1
    if backend not in BACKENDS:
        raise VerifyUsageError(f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})")
    if int(nproc) < 1 or int(nnodes) < 1:
        raise VerifyUsageError("--nproc and --nnodes must be at least 1")
    if not timeout or float(timeout) <= 0:
        raise VerifyUsageError("--timeout must be a positive number of seconds")
    run_cwd = os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()
    if not os.path.isdir(run_cwd):
        raise VerifyUsageError(f"working directory not found: {run_cwd}")
    script = os.fspath(path)
    full = script if os.path.isabs(script) else os.path.join(run_cwd, script)
    if not os.path.exists(full):
        raise VerifyUsageError(f"script not found: {script}")
    if not os.path.isfile(full):
        raise VerifyUsageError(f"not a file: {script}")
    python = python or sys.executable
    if not launcher.torch_available(python):
        raise VerifyUsageError(f"torch is not installed for {python}; ddpfix verify needs torch to run torchrun")
    args = [str(a) for a in args]
    run = launcher.launch(
        script,
        args,
        nproc=int(nproc),
        nnodes=int(nnodes),
        timeout=float(timeout),
        backend=backend,
        python=python,
        cwd=run_cwd,
        env=env,
        keep_run_dir=keep_run_dir,
    )
    if single:
        run.single = True
        run.plain = launcher.run_plain(script, args, timeout=float(timeout), python=python, cwd=run_cwd, env=env)
    return checks.evaluate(run)


def __getattr__(name):
    if name in ("VerifyReport", "CheckResult"):
        from . import checks

        return getattr(checks, name)
    raise AttributeError(name)
