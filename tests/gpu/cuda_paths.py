"""GPU check of the CUDA branches ddpfix writes, for a machine with one NVIDIA GPU and torch.

Run from the repository root:  OUT=/some/dir python tests/gpu/cuda_paths.py

With one GPU, two ranks cannot each own a device (NCCL refuses "Duplicate GPU detected"), and the
rewritten scripts create no process group at world size 1. So, for every golden expected.py (the
contract's train_after.py is example_unsafe/expected.py):

1. `python expected.py` on the GPU: the single-process path (`cuda:{LOCAL_RANK}` devices,
   `map_location=device`, `device.type == "cuda"` tests) must run as before;
2. a copy with `DISTRIBUTED = WORLD_SIZE >= 1` under `ddpfix verify --backend nccl --nproc 1`: the
   distributed path on CUDA (set_device, NCCL process group, `DDP(device_ids=[LOCAL_RANK])`,
   SyncBatchNorm conversion where the script has it, DistributedSampler, barrier, destroy) must run
   and pass every applicable runtime check.

Writes $OUT/cuda_paths.txt (one line per run) and prints it. Needs only torch: the verify package is
loaded without the rest of ddpfix.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("OUT") or tempfile.mkdtemp())
BUDGET = float(os.environ.get("CUDA_PATHS_BUDGET", "480"))
TIMEOUT = float(os.environ.get("CUDA_PATHS_TIMEOUT", "90"))
BACKEND = os.environ.get("CUDA_PATHS_BACKEND", "nccl")  # "gloo" to dry-run this script on a CPU machine

pkg = types.ModuleType("ddpfix")  # ddpfix.verify without ddpfix/__init__ (libcst, typer, rich)
pkg.__path__ = [str(ROOT / "ddpfix")]
sys.modules["ddpfix"] = pkg
from ddpfix.verify import verify_script  # noqa: E402

FLAG = re.compile(r"^(\w+) = (\w+) > 1$", re.MULTILINE)


def scripts() -> list[Path]:
    return sorted(
        ROOT.glob("tests/golden/*/expected.py")
    )  # example_unsafe/expected.py is the contract's train_after.py


def main() -> int:
    import torch

    OUT.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# CUDA paths of ddpfix outputs, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
        f"python {sys.version.split()[0]}, torch {torch.__version__}, cuda {torch.version.cuda}, "
        f"available {torch.cuda.is_available()}, devices {torch.cuda.device_count()}, "
        f"{torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU'}",
    ]
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    start = time.monotonic()

    def note(verdict: str, text: str) -> None:
        counts[verdict] += 1
        lines.append(f"{verdict:4} {text}")
        print(lines[-1], flush=True)

    for script in scripts():
        case = script.parent
        name = str(script.relative_to(ROOT))
        opts = json.loads((case / "options.json").read_text()) if (case / "options.json").exists() else {}
        src = script.read_text(encoding="utf-8", errors="replace")
        args = (
            [a for a in (case / "args.txt").read_text().splitlines() if a.strip()]
            if (case / "args.txt").exists()
            else []
        )
        if opts.get("runs") is False or "torch" not in src:
            note("SKIP", f"{name}: {'no torch' if 'torch' not in src else 'not meant to run'}")
            continue
        if time.monotonic() - start > BUDGET:
            note("SKIP", f"{name}: time budget spent")
            continue
        work = Path(tempfile.mkdtemp(prefix="cuda-paths-"))
        shutil.copy(script, work / "expected.py")
        if opts.get("single") is not False:
            t0 = time.monotonic()
            try:
                proc = subprocess.run(
                    [sys.executable, "expected.py", *args], cwd=work, capture_output=True, text=True, timeout=TIMEOUT
                )
                ok, tail = proc.returncode == 0, (proc.stderr.strip().splitlines() or [""])[-1]
            except subprocess.TimeoutExpired:
                ok, tail = False, f"timed out after {TIMEOUT:g} s"
            note(
                "PASS" if ok else "FAIL",
                f"{name} single process on the GPU: {time.monotonic() - t0:.1f} s{'' if ok else ' | ' + tail}",
            )
        flag = FLAG.search(src)
        if flag is None:
            note("SKIP", f"{name}: no `DISTRIBUTED = WORLD_SIZE > 1` flag to force")
            continue
        forced = FLAG.sub(lambda m: f"{m.group(1)} = {m.group(2)} >= 1  # forced for the one-GPU check", src, count=1)
        (work / "forced.py").write_text(forced, encoding="utf-8")
        t0 = time.monotonic()
        try:
            report = verify_script(work / "forced.py", args, nproc=1, timeout=TIMEOUT, backend=BACKEND, cwd=work)
        except Exception as exc:  # an input error, not a verdict
            note("FAIL", f"{name} {BACKEND} world size 1: {type(exc).__name__}: {exc}")
            continue
        failed = "; ".join(f"{c.name}: {(c.evidence or [''])[0]}" for c in report.failed)
        note(
            "PASS" if report.ok else "FAIL",
            f"{name} {BACKEND} world size 1 (process group, DDP, sampler on CUDA): {time.monotonic() - t0:.1f} s, "
            f"backend used {report.meta.get('backend_used')}{'' if report.ok else ' | ' + failed}",
        )
        shutil.rmtree(work, ignore_errors=True)
    lines.append("summary: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + f", {time.monotonic() - start:.0f} s")
    print(lines[-1], flush=True)
    (OUT / "cuda_paths.txt").write_text("\n".join(lines) + "\n")
    return 0 if counts["FAIL"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
