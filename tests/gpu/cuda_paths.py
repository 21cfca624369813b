"""GPU check of the CUDA branches ddpfix writes, for a machine with one NVIDIA GPU and torch.

Run from the repository root:  OUT=/some/dir python tests/gpu/cuda_paths.py [CASE ...]
(CASE: golden folder names, to run only those)

With one GPU, two ranks cannot each own a device (NCCL refuses "Duplicate GPU detected"), and the
rewritten scripts create no process group at world size 1. So, for every golden expected.py (the
contract's train_after.py is example_unsafe/expected.py):

1. `python expected.py` on the GPU: the single-process path (`cuda:{LOCAL_RANK}` devices,
   `map_location=device`, `device.type == "cuda"` tests) must run as before;
2. a copy with `DISTRIBUTED = WORLD_SIZE >= 1` under `ddpfix verify --backend nccl --nproc 1`: the
   distributed path on CUDA (set_device, NCCL process group, `DDP(device_ids=[LOCAL_RANK])`,
   SyncBatchNorm conversion where the script has it, DistributedSampler, barrier, destroy) must run
   and fail no runtime check.

The goldens are independent: they run in parallel, CUDA_PATHS_WORKERS at a time (default: half the
CPU cores, at most 8; each run is a torchrun agent and a rank, most of it torch's start-up). Nothing
new starts after CUDA_PATHS_BUDGET seconds (default 330), so the whole script ends within about
BUDGET + TIMEOUT. Writes $OUT/cuda_paths.txt (one line per run, in golden order) and prints each
line as its run ends. Needs only torch: the verify package is loaded without the rest of ddpfix.
CUDA_PATHS_BACKEND=gloo dry-runs the script on a machine without a GPU.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(os.environ["OUT"]) if os.environ.get("OUT") else None  # None: a new temporary folder
BUDGET = float(os.environ.get("CUDA_PATHS_BUDGET", "330"))
TIMEOUT = float(os.environ.get("CUDA_PATHS_TIMEOUT", "90"))
BACKEND = os.environ.get("CUDA_PATHS_BACKEND", "nccl")  # "gloo" to dry-run this script on a CPU machine
WORKERS = int(os.environ.get("CUDA_PATHS_WORKERS") or max(1, min(8, (os.cpu_count() or 2) // 2)))


def _verify_package() -> None:
    """Make ddpfix.verify importable without ddpfix/__init__ (libcst, typer, rich) when ddpfix is not loaded."""
    if "ddpfix" not in sys.modules:
        pkg = types.ModuleType("ddpfix")
        pkg.__path__ = [str(ROOT / "ddpfix")]
        sys.modules["ddpfix"] = pkg


FLAG = re.compile(r"^(\w+) = (\w+) > 1$", re.MULTILINE)
_print_lock = threading.Lock()


def scripts(cases=()) -> list[Path]:
    # example_unsafe/expected.py is the contract's train_after.py
    found = sorted(ROOT.glob("tests/golden/*/expected.py"))
    return [s for s in found if not cases or s.parent.name in cases]


def _say(line: str) -> None:
    with _print_lock:
        print(line, flush=True)


def _single(name: str, work: Path, args: list[str]) -> tuple[str, str]:
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "expected.py", *args], cwd=work, capture_output=True, text=True, timeout=TIMEOUT
        )
        ok, tail = proc.returncode == 0, (proc.stderr.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired:
        ok, tail = False, f"timed out after {TIMEOUT:g} s"
    text = f"{name} single process on the GPU: {time.monotonic() - t0:.1f} s{'' if ok else ' | ' + tail}"
    return ("PASS" if ok else "FAIL"), text


def force_distributed(src: str) -> str:
    """The script with its distributed path taken at world size 1: the flag, and every other test of
    the same variable (`if WORLD_SIZE > 1:`), so that the guards agree."""
    m = FLAG.search(src)
    forced = FLAG.sub(lambda m: f"{m.group(1)} = {m.group(2)} >= 1  # forced for the one-GPU check", src, count=1)
    return re.sub(rf"\b{re.escape(m.group(2))} > 1\b", f"{m.group(2)} >= 1", forced)


def _distributed(name: str, work: Path, src: str, args: list[str]) -> tuple[str, str]:
    from ddpfix.verify import verify_script

    forced = force_distributed(src)
    (work / "forced.py").write_text(forced, encoding="utf-8")
    t0 = time.monotonic()
    try:
        report = verify_script(work / "forced.py", args, nproc=1, timeout=TIMEOUT, backend=BACKEND, cwd=work)
    except Exception as exc:  # an input error, not a verdict
        return "FAIL", f"{name} {BACKEND} world size 1: {type(exc).__name__}: {exc}"
    failed = "; ".join(f"{c.name}: {(c.evidence or [''])[0]}" for c in report.failed)
    judged = ",".join(c.name for c in report.checks if c.status == "pass")
    return (
        "PASS" if report.ok else "FAIL",
        f"{name} {BACKEND} world size 1 (process group, DDP, sampler on CUDA): {time.monotonic() - t0:.1f} s, "
        f"backend used {report.meta.get('backend_used')}, passed: {judged or '-'}{'' if report.ok else ' | ' + failed}",
    )


def run_golden(script: Path, start: float) -> list[tuple[str, str]]:
    """The runs of one golden: (verdict, text) for each, SKIP when there is nothing to run."""
    case = script.parent
    name = str(script.relative_to(ROOT))
    opts = json.loads((case / "options.json").read_text()) if (case / "options.json").exists() else {}
    src = script.read_text(encoding="utf-8", errors="replace")
    args = (
        [a for a in (case / "args.txt").read_text().splitlines() if a.strip()] if (case / "args.txt").exists() else []
    )
    if opts.get("runs") is False or "torch" not in src:
        return [("SKIP", f"{name}: {'no torch' if 'torch' not in src else 'not meant to run'}")]
    if time.monotonic() - start > BUDGET:
        return [("SKIP", f"{name}: time budget of {BUDGET:g} s spent before it started")]
    work = Path(tempfile.mkdtemp(prefix="cuda-paths-"))
    shutil.copy(script, work / "expected.py")
    out = []
    try:
        if opts.get("single") is not False:
            out.append(_single(name, work, args))
            _say(f"{out[-1][0]:4} {out[-1][1]}")
        if FLAG.search(src) is None:
            out.append(("SKIP", f"{name}: no `DISTRIBUTED = WORLD_SIZE > 1` flag to force"))
        else:
            out.append(_distributed(name, work, src, args))
        _say(f"{out[-1][0]:4} {out[-1][1]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> int:
    import torch

    _verify_package()
    out = OUT or Path(tempfile.mkdtemp(prefix="cuda-paths-out-"))
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# CUDA paths of ddpfix outputs, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
        f"python {sys.version.split()[0]}, torch {torch.__version__}, cuda {torch.version.cuda}, "
        f"available {torch.cuda.is_available()}, devices {torch.cuda.device_count()}, "
        f"{torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU'}, "
        f"backend {BACKEND}, {WORKERS} goldens at a time on {os.cpu_count()} CPU cores",
    ]
    print("\n".join(lines), flush=True)
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        results = list(pool.map(lambda s: run_golden(s, start), scripts(sys.argv[1:])))  # in golden order
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for verdict, text in (r for runs in results for r in runs):
        counts[verdict] += 1
        lines.append(f"{verdict:4} {text}")
    lines.append("summary: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + f", {time.monotonic() - start:.0f} s")
    print(lines[-1], flush=True)
    (out / "cuda_paths.txt").write_text("\n".join(lines) + "\n")
    return 0 if counts["FAIL"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
