#!/usr/bin/env bash
# GPU leg of `ddpfix verify`, for a machine with one NVIDIA GPU and torch installed.
#
# Run from the repository root:   OUT=/some/dir bash tests/gpu/gpu_leg.sh
# For every tests/golden/*/expected.py (example_unsafe/expected.py is the contract's train_after.py) it runs
#   ddpfix verify SCRIPT --backend nccl --nproc 1
#   ddpfix verify SCRIPT --backend gloo --nproc 2     (gloo with CUDA tensors, one GPU)
# each in a fresh temporary working directory, and writes
#   $OUT/gpu_leg.txt    one line per run (PASS/FAIL, failing checks and their evidence), plus versions
#   $OUT/gpu_leg.json   every report in full
# Needs only torch: the verify package is loaded without the rest of ddpfix (no libcst, typer, rich).
# The runs are independent: GPU_LEG_WORKERS of them at a time (default half the CPU cores, at most 8).
# Environment: PYTHON (default python3), GPU_LEG_TIMEOUT (per run, default 120 s),
# GPU_LEG_BUDGET (default 300 s: runs not started by then are listed as skipped).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$(mktemp -d)}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export GPU_LEG_ROOT="$ROOT" GPU_LEG_OUT="$OUT"
export GPU_LEG_TIMEOUT=${GPU_LEG_TIMEOUT:-120} GPU_LEG_BUDGET=${GPU_LEG_BUDGET:-300}
export GPU_LEG_WORKERS=${GPU_LEG_WORKERS:-}
{
  echo "# ddpfix verify GPU leg, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -n)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4
} > "$OUT/gpu_leg.txt"
"$PY" - <<'EOF' >> "$OUT/gpu_leg.txt" 2>&1
import json, os, sys, tempfile, time, types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

root = Path(os.environ["GPU_LEG_ROOT"])
out = Path(os.environ["GPU_LEG_OUT"])
timeout = float(os.environ["GPU_LEG_TIMEOUT"])
budget = float(os.environ["GPU_LEG_BUDGET"])
workers = int(os.environ.get("GPU_LEG_WORKERS") or max(1, min(8, (os.cpu_count() or 2) // 2)))
pkg = types.ModuleType("ddpfix")  # the verify package without ddpfix/__init__ (and its dependencies)
pkg.__path__ = [str(root / "ddpfix")]
sys.modules["ddpfix"] = pkg
from ddpfix.verify import verify_script  # noqa: E402

import torch  # noqa: E402

print(f"python {sys.version.split()[0]}, torch {torch.__version__}, cuda {torch.version.cuda}, "
      f"available {torch.cuda.is_available()}, devices {torch.cuda.device_count()}, "
      f"{workers} runs at a time on {os.cpu_count()} CPU cores", flush=True)
legs = [("nccl", 1), ("gloo", 2)]
jobs = [(s, b, n) for s in sorted(root.glob("tests/golden/*/expected.py")) for b, n in legs]
start = time.monotonic()

def run(job):
    """(verdict, lines, report dict or None) of one run."""
    script, backend, nproc = job
    case = script.parent
    name = str(script.relative_to(root))
    opts = json.loads((case / "options.json").read_text()) if (case / "options.json").exists() else {}
    src = script.read_bytes().decode("utf-8", "replace")
    args = [a for a in (case / "args.txt").read_text().splitlines() if a.strip()] if (case / "args.txt").exists() else []
    label = f"{name} --backend {backend} --nproc {nproc}"
    if opts.get("runs") is False or opts.get("verify") is False or "torch" not in src:
        why = "no torch in it" if "torch" not in src else "options.json turns the run off"
        return "SKIP", [f"SKIP  {label}: {why}"], None
    if time.monotonic() - start > budget:
        return "SKIP", [f"SKIP  {label}: time budget of {budget:g} s spent before it started"], None
    t0 = time.monotonic()
    try:
        r = verify_script(script, args, nproc=nproc, timeout=timeout, backend=backend, cwd=tempfile.mkdtemp(prefix="gpu-leg-"))
    except Exception as exc:  # an input error, not a verdict
        return "ERROR", [f"ERROR {label}: {type(exc).__name__}: {exc}"], None
    verdict = "PASS" if r.ok else "FAIL"
    na = ",".join(c.name for c in r.checks if c.status == "n/a")
    lines = [f"{verdict:5} {label}: {time.monotonic() - t0:.1f} s, backend used {r.meta.get('backend_used')}, "
             f"n/a: {na or '-'}"]
    lines += [f"        {c.name}: {ev}" for c in r.failed for ev in c.evidence[:3]]
    d = r.to_dict()
    d["label"] = label
    return verdict, lines, d


with ThreadPoolExecutor(max_workers=workers) as pool:
    results = list(pool.map(run, jobs))
counts = {"PASS": 0, "FAIL": 0, "SKIP": 0, "ERROR": 0}
for verdict, lines, _ in results:
    counts[verdict] += 1
    print("\n".join(lines), flush=True)
(out / "gpu_leg.json").write_text(json.dumps([d for _, _, d in results if d], indent=1, default=str))
print("summary: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + f", {time.monotonic() - start:.0f} s", flush=True)
EOF
echo "exit $?" >> "$OUT/gpu_leg.txt"
cat "$OUT/gpu_leg.txt"
