"""Run a script as ``__main__``, then, under torchrun, leave without the interpreter's teardown.

``python exit_without_teardown.py SCRIPT [ARGS...]`` runs SCRIPT as ``python SCRIPT ARGS...`` would (its
folder first on ``sys.path``). Once the script has ended in a process of a group (WORLD_SIZE above 1)
it does what the probe does with DDPFIX_PROBE_SKIP_TEARDOWN=1 (see teardown.py): run the exit
handlers, flush every open file, and leave with ``os._exit(0)``, so that torch's gloo threads cannot
race the teardown ("terminate called without an active exception") after the script's last line. A
script that raises still fails as it would: its traceback and exit code are Python's own.
"""

from __future__ import annotations

import os
import runpy
import sys

from ddpfix.verify.probe import exit_without_teardown


def leave() -> None:
    """After a distributed script's end: exit handlers, flushed files, then an exit without teardown."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        exit_without_teardown()


TORCHRUN_VARS = ("RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def outside_env() -> dict[str, str]:
    """This process's environment without a launcher's variables: a run as if from a plain shell."""
    return {k: v for k, v in os.environ.items() if k not in TORCHRUN_VARS}


def torchrun(nproc: int, *args: str) -> list[str]:
    """The command that runs ``python ARGS...`` on ``nproc`` local ranks through this runner."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
    return [*cmd, os.path.abspath(__file__), *args]


def main() -> None:
    script = os.path.abspath(sys.argv[1])
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(script)
    runpy.run_path(script, run_name="__main__")
    leave()


if __name__ == "__main__":
    main()
