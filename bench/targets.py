"""The figures behind the performance targets that `bench/run.py` prints after its tables.

- the library: `check` on torch's own `nn/modules`, `optim` and `utils/data` (nothing there trains)
  against the floor, and TorchFix against `ddpfix check` on the same files (command line, one process
  each);
- growth: `check` and `diff` on one generated training script of 100, 1,000 and 10,000 lines, and
  `check` on a script that imports 0, 10 and 50 modules of its own (read from disk, never cached
  between runs: each run writes them afresh);
- the language server: `bench/lsp_latency.py`'s median latency after a one-line edit of a 1,000-line
  script, and the time to list and resolve a quick-fix.

Every figure is CPU time (user + system), the median over the runs, timed side by side with its floor
in the same run: on a shared machine wall time moves by tens of percent between runs, CPU time by a few.
"""

from __future__ import annotations

import gc
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import libcst
from corpus import ROOT, torch_dir

import ddpfix
from ddpfix.api import fix_source
from ddpfix.errors import DdpfixError

LIBRARY_PARTS = ("nn/modules", "optim", "utils/data")
# the commands run the ddpfix this process imported, wherever they are started from
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(Path(ddpfix.__file__).parent.parent), os.environ.get("PYTHONPATH", "")]),
}
LENGTHS = (100, 1000, 10000)
MODULE_COUNTS = (0, 10, 50)


def library_files() -> list[Path]:
    root = torch_dir()
    if root is None:
        return []
    return sorted(p for part in LIBRARY_PARTS for p in (root / part).rglob("*.py"))


def cpu(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.process_time()
    fn()
    return time.process_time() - start


def side_by_side(fns: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Median CPU seconds of each function, the functions interleaved run by run."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            times[name].append(cpu(fn))
    return {name: statistics.median(t) for name, t in times.items()}


def _floor(items: list[tuple[str, bytes | str]]) -> None:
    for _, data in items:
        _ = libcst.parse_module(data).code


def _ddpfix(items: list[tuple[str, bytes | str]], fix: bool) -> None:
    for path, data in items:
        try:
            fix_source(data, path=path, fix=fix)
        except DdpfixError:
            pass


# ------------------------------------------------------------------------------------------ library
def library(runs: int) -> dict:
    files = library_files()
    items = [(str(p), p.read_bytes()) for p in files]
    _ddpfix(items, False)  # the summaries of torch's own modules, once, as a long-running process has them
    t = side_by_side({"floor": lambda: _floor(items), "check": lambda: _ddpfix(items, False)}, runs)
    t["files"] = len(files)
    t["lines"] = sum(d.count(b"\n") for _, d in items)
    return t


def torchfix_vs_check(torchfix: str | None, runs: int) -> dict:
    """TorchFix and `ddpfix check` over the library files, command line, one process each."""
    files = [str(p) for p in library_files()]
    check = [sys.executable, "-m", "ddpfix", "check", "--isolated", "--quiet", "--jobs", "1", *files]
    if torchfix is None:
        return {"reason": "TorchFix is not installed (see bench/run.py --help: --torchfix)"}
    out: dict[str, list[float]] = {"torchfix": [], "check": []}
    for _ in range(runs):
        out["check"].append(_command_cpu(check))
        out["torchfix"].append(_command_cpu([torchfix, "-j", "1", *files]))
    return {name: statistics.median(v) for name, v in out.items()}


def _command_cpu(argv: list[str]) -> float:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# ------------------------------------------------------------------------------------------ growth
def by_length(runs: int) -> list[dict]:
    from lsp_latency import training_script

    rows = []
    for lines in LENGTHS:
        items = [("train.py", training_script(lines))]
        t = side_by_side(
            {
                "floor": lambda items=items: _floor(items),
                "check": lambda items=items: _ddpfix(items, False),
                "diff": lambda items=items: _ddpfix(items, True),
            },
            runs if lines < 10000 else max(1, runs // 2),
        )
        rows.append({"lines": lines, **t})
    return rows


MODULE = '''"""Helpers {k} of the benchmark script."""
import os

import torch


def prepare_{k}(model, scale=1.0):
    for p in model.parameters():
        p.data.mul_(scale)
    return model


def log_{k}(step, loss):
    if step % 100 == 0:
        print(f"helper {k}: step {{step}} loss {{loss:.4f}}")


def save_{k}(model, path):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    torch.save(model.state_dict(), path)


class Meter{k}:
    def __init__(self):
        self.total, self.count = 0.0, 0

    def update(self, value):
        self.total += value
        self.count += 1
'''


def _modular_script(base: str, count: int) -> str:
    imports = "".join(f"import helpers_{k}\n" for k in range(count))
    calls = "".join(f"    helpers_{k}.prepare_{k}(model)\n    helpers_{k}.log_{k}(0, 0.0)\n" for k in range(count))
    marker = "    model = "
    head, sep, tail = base.partition(marker)
    line, nl, rest = tail.partition("\n")
    first, _, head = head.partition("\n")  # after the docstring
    return first + "\n" + imports + head + sep + line + nl + calls + rest


def by_modules(runs: int) -> list[dict]:
    """`check` of a 200-line script that imports `count` modules of its own, read from disk each run."""
    from lsp_latency import training_script

    base = training_script(200)
    rows = []
    for count in MODULE_COUNTS:
        script = _modular_script(base, count)
        times = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as tmp:  # new files: nothing summarised before
                for k in range(count):
                    Path(tmp, f"helpers_{k}.py").write_text(MODULE.format(k=k))
                path = str(Path(tmp, "train.py"))
                Path(path).write_text(script)
                times.append(cpu(lambda path=path, script=script: fix_source(script, path=path, fix=False)))
        floor = side_by_side({"floor": lambda script=script: _floor([("train.py", script)])}, runs)["floor"]
        rows.append({"modules": count, "check": statistics.median(times), "floor": floor})
    return rows


# ------------------------------------------------------------------------------------------ language server
def lsp(runs: int) -> dict:
    """`bench/lsp_latency.py`'s medians (a server process of its own)."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "lsp_latency.py"), "--runs", str(runs)],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=Path(ddpfix.__file__).parent.parent,
    ).stdout
    m = re.search(r"median didChange -> publishDiagnostics over \d+ runs: (\d+) ms wall .*?, (\d+) ms server CPU", out)
    a = re.search(r"code actions at a finding: (\d+) ms to list, (\S+) ms to resolve", out)
    if m is None or a is None:
        return {"reason": "bench/lsp_latency.py gave no figures: " + (out.strip().splitlines() or ["no output"])[-1]}
    return {"wall": int(m[1]), "cpu": int(m[2]), "list": int(a[1]), "resolve": float(a[2])}


# ------------------------------------------------------------------------------------------ report
def report(runs: int, torchfix: str | None, with_lsp: bool = True) -> tuple[list[str], list[tuple]]:
    """The lines to print and the target checks: (label, value, target, ok) with value None for n/a."""
    lines, checks = [], []
    lib = library(runs)
    ratio = lib["check"] / lib["floor"]
    lines.append(
        f"\nlibrary: torch's {', '.join(LIBRARY_PARTS)}: {lib['files']} files, {lib['lines']} lines (API, CPU s)\n"
        f"  parse+render {lib['floor']:.2f}   check {lib['check']:.2f}   ({ratio:.2f}x)"
    )
    checks.append(("ddpfix check / parse+render (API, library)", ratio, "<= 1.2x", ratio <= 1.2))
    tf = torchfix_vs_check(torchfix, max(1, min(runs, 3)))
    if "reason" in tf:
        lines.append(f"  TorchFix: n/a, {tf['reason']}")
        checks.append(("TorchFix / ddpfix check (CLI, library)", None, ">= 15x", tf["reason"]))
    else:
        r = tf["torchfix"] / tf["check"]
        lines.append(f"  command line, one process: ddpfix check {tf['check']:.2f}   TorchFix {tf['torchfix']:.2f}")
        checks.append(("TorchFix / ddpfix check (CLI, library)", r, ">= 15x", r >= 15))

    lines.append("\ngrowth with script length (one generated training script, API, CPU ms)")
    lines.append(f"  {'lines':>6}{'floor':>9}{'check':>9}{'diff':>9}{'check/floor':>13}{'diff/floor':>12}")
    for row in by_length(runs):
        f = row["floor"]
        lines.append(
            f"  {row['lines']:>6}{f * 1e3:9.0f}{row['check'] * 1e3:9.0f}{row['diff'] * 1e3:9.0f}"
            f"{row['check'] / f:12.2f}x{row['diff'] / f:11.2f}x"
        )
    lines.append("\ngrowth with the script's own modules (200-line script, modules read from disk, API, CPU ms)")
    lines.append(f"  {'modules':>7}{'floor':>9}{'check':>9}{'check/floor':>13}")
    for row in by_modules(runs):
        lines.append(
            f"  {row['modules']:>7}{row['floor'] * 1e3:9.0f}{row['check'] * 1e3:9.0f}{row['check'] / row['floor']:12.2f}x"
        )

    if with_lsp:
        s = lsp(7)
        if "reason" in s:
            lines.append(f"\nlanguage server: n/a, {s['reason']}")
            checks.append(("LSP diagnostics after a one-line edit (median)", None, "< 200 ms", s["reason"]))
        else:
            lines.append(
                f"\nlanguage server (bench/lsp_latency.py, 1,000 lines, 7 edits): didChange -> diagnostics median "
                f"{s['wall']} ms wall, {s['cpu']} ms server CPU; code actions {s['list']} ms to list, "
                f"{s['resolve']:.0f} ms to resolve"
            )
            checks.append(("LSP diagnostics after a one-line edit, server CPU", s["cpu"], "< 200 ms", s["cpu"] < 200))
            checks.append(("LSP code actions at a finding, listed", s["list"], "< 150 ms", s["list"] < 150))
    return lines, checks


__all__ = ["LIBRARY_PARTS", "library_files", "report"]
