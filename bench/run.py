#!/usr/bin/env python
"""Benchmark ddpfix against the floor (bare LibCST parse + render) and against TorchFix, on the same
files in the same run.

    python bench/run.py                                # every 40th torch file + golden inputs, 3 runs
    python bench/run.py --every 1 --no-torchfix        # all of the installed torch package
    python bench/run.py --torchfix /tmp/tf/bin/torchfix --json out.json

Each run times every tool once, in the same order; the tables show the median over the runs. CPU
time (user + system, children included) is the headline figure because it hardly moves when other
processes share the machine; wall time is shown beside it. The corpus is the installed torch
package's sources (sampled with --every) plus tests/golden/*/input.py; nothing is downloaded.

TorchFix pins an older LibCST, so install it in a virtual environment of its own and point
--torchfix (or DDPFIX_BENCH_TORCHFIX) at its `torchfix` script; a `torchfix` on PATH or next to this
interpreter is found too.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ROOT, golden_inputs, line_count, torch_dir, torch_files  # noqa: E402

sys.path.insert(0, str(ROOT))
import libcst  # noqa: E402
import targets  # noqa: E402  (bench/targets.py)

from ddpfix.api import fix_source  # noqa: E402
from ddpfix.errors import DdpfixError  # noqa: E402

FLOOR = "parse+render"


@dataclass
class Timing:
    name: str
    lines: int
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    note: str = ""

    @property
    def cpu_s(self) -> float:
        return statistics.median(self.cpu)

    @property
    def wall_s(self) -> float:
        return statistics.median(self.wall)


# ------------------------------------------------------------------------------------------ timing
def time_call(fn: Callable[[], None]) -> tuple[float, float]:
    gc.collect()
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def time_command(argv: list[str]) -> tuple[float, float, int, str]:
    """Wall and CPU seconds of a command (its worker processes included), exit code, stderr tail."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        rc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL, cwd=ROOT).returncode
        wall = time.perf_counter() - start
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, rc, stderr


# ------------------------------------------------------------------------------------------ tools
def parse_render(items: list[tuple[str, bytes]], paused: bool = False) -> None:
    """The floor; `paused`: with the cyclic garbage collector paused per file, as ddpfix's API runs."""
    for _, data in items:
        if paused:
            gc.disable()
        try:
            _ = libcst.parse_module(data).code
        finally:
            gc.enable()


def ddpfix_api(items: list[tuple[str, bytes]], *, fix: bool) -> None:
    """What `check` (fix=False) and `diff` (fix=True: the new code and its unified diff) compute."""
    for path, data in items:
        try:
            fix_source(data, path=path, fix=fix)
        except DdpfixError:
            pass


def cli_flags(sub: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-m", "ddpfix", sub, "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    ).stdout
    return set(re.findall(r"(--[a-z][a-z-]+)", out))


def find_torchfix(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    if os.environ.get("DDPFIX_BENCH_TORCHFIX"):
        return os.environ["DDPFIX_BENCH_TORCHFIX"]
    return shutil.which(
        "torchfix", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )


# ------------------------------------------------------------------------------------------ report
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
    except OSError:
        return "?"


def table(title: str, timings: list[Timing], floor: Timing | None) -> str:
    rows = [f"\n{title}", f"{'':<34}{'CPU s':>9}{'wall s':>9}{'lines/s':>10}{'x floor':>9}  {'(runs)'}"]
    for t in timings:
        ratio = f"{t.cpu_s / floor.cpu_s:8.2f}x" if floor is not None and floor.cpu_s > 0 else f"{'':>9}"
        rate = f"{t.lines / t.cpu_s:10.0f}" if t.lines and t.cpu_s > 0 else f"{'-':>10}"
        rows.append(
            f"{t.name:<34}{t.cpu_s:9.2f}{t.wall_s:9.2f}{rate}{ratio}  ({len(t.cpu)}){'  ' + t.note if t.note else ''}"
        )
    return "\n".join(rows)


def verdict(label: str, value: float | None, target: str, ok: bool | str) -> str:
    if value is None:  # not measured: `ok` says why
        return f"  {label:<52}{'n/a':>8}   target {target:<8} {ok}"
    unit = " ms  " if target.endswith("ms") else "x   "
    shown = f"{value:7.0f}" if target.endswith("ms") else f"{value:7.2f}"
    return f"  {label:<52}{shown}{unit}target {target:<8} {'OK' if ok else 'MISSED'}"


# ------------------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--every", type=int, default=40, help="keep every N-th torch file (1 = all of them; default 40)")
    ap.add_argument("--runs", type=int, default=3, help="runs per tool; the median is reported (default 3)")
    ap.add_argument("--torchfix", help="path of a `torchfix` script (default: DDPFIX_BENCH_TORCHFIX, then PATH)")
    ap.add_argument("--no-torchfix", action="store_true", help="skip TorchFix")
    ap.add_argument(
        "--no-cli", action="store_true", help="time the Python API only (TorchFix then on the library files alone)"
    )
    ap.add_argument(
        "--jobs", type=int, default=cores(), help="workers for the parallel CLI runs (default: the number of CPUs)"
    )
    ap.add_argument("--json", help="also write the figures to this JSON file")
    ap.add_argument("--no-extra", action="store_true", help="skip the library, growth and language-server figures")
    ap.add_argument("--no-lsp", action="store_true", help="skip the language server's latency (bench/lsp_latency.py)")
    args = ap.parse_args(argv)

    if torch_dir() is None:
        print("torch is not installed in this interpreter: no corpus", file=sys.stderr)
        return 2
    parts = {name: files for name, files in (("torch", torch_files(args.every)), ("golden", golden_inputs())) if files}
    items = {name: [(str(p), p.read_bytes()) for p in files] for name, files in parts.items()}
    lines = {name: sum(line_count(d) for _, d in its) for name, its in items.items()}
    corpus_files = [p for files in parts.values() for p in files]
    total_lines = sum(lines.values())
    repeat = {"torch": 1, "golden": 10}  # the golden inputs are small: several passes per run

    torchfix = None if args.no_torchfix else find_torchfix(args.torchfix)
    if torchfix is not None and not Path(torchfix).exists() and shutil.which(torchfix) is None:
        print(f"TorchFix not found at {torchfix}; skipping it", file=sys.stderr)
        torchfix = None

    started = datetime.datetime.now().astimezone()
    print(f"ddpfix benchmark  {started:%Y-%m-%d %H:%M %Z}  commit {git_commit()}")
    print(
        f"machine: {cpu_model()}, {cores()} cores, {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}, libcst {version('libcst')}"
    )
    print(
        f"corpus: every {args.every}. .py file of {torch_dir()} and tests/golden/*/input.py: "
        + "; ".join(f"{p} {len(f)} files, {lines[p]} lines" for p, f in parts.items())
    )
    print(
        f"runs: {args.runs} (median){'' if torchfix else '; TorchFix: not installed (see bench/run.py --help)'}",
        flush=True,
    )

    # in-process tools, per part
    api: dict[str, list[Timing]] = {}
    fns: dict[str, list[Callable[[], None]]] = {}
    for part, its in items.items():
        r = repeat[part]
        api[part] = [
            Timing(f"{FLOOR} (libcst)", lines[part] * r),
            Timing("ddpfix check (API)", lines[part] * r),
            Timing("ddpfix diff (API)", lines[part] * r),
            Timing(f"{FLOOR}, collector paused", lines[part] * r),
        ]
        fns[part] = [
            lambda its=its, r=r: [parse_render(its) for _ in range(r)],
            lambda its=its, r=r: [ddpfix_api(its, fix=False) for _ in range(r)],
            lambda its=its, r=r: [ddpfix_api(its, fix=True) for _ in range(r)],
            lambda its=its, r=r: [parse_render(its, paused=True) for _ in range(r)],
        ]
        for t in api[part] if r > 1 else []:
            t.note = f"{r} passes per run"

    # command-line tools, whole corpus
    paths = [str(p) for p in corpus_files]
    commands: list[tuple[Timing, list[str]]] = []
    if not args.no_cli:
        base = [sys.executable, "-m", "ddpfix"]
        extra = []
        flags = cli_flags("check")
        if "--isolated" in flags:
            extra.append("--isolated")  # no pyproject.toml of the repo around the corpus
        if "--quiet" in flags:
            extra.append("--quiet")
        jobs = "--jobs" in flags
        one = ["--jobs", "1"] if jobs else []
        commands += [
            (Timing("ddpfix --version (startup)", 0), base + ["--version"]),
            (Timing("ddpfix check (CLI, 1 process)", total_lines), base + ["check", *extra, *one, *paths]),
            (Timing("ddpfix diff (CLI, 1 process)", total_lines), base + ["diff", *extra, *one, *paths]),
        ]
        if jobs and args.jobs > 1:
            many = ["--jobs", str(args.jobs)]
            commands += [
                (
                    Timing(f"ddpfix check (CLI, --jobs {args.jobs})", total_lines),
                    base + ["check", *extra, *many, *paths],
                ),
                (Timing(f"ddpfix diff (CLI, --jobs {args.jobs})", total_lines), base + ["diff", *extra, *many, *paths]),
            ]
    if torchfix is not None and not args.no_cli:  # (the library figures compare TorchFix without --no-cli too)
        commands += [
            (Timing("TorchFix --version (startup)", 0), [torchfix, "--version"]),
            (Timing("TorchFix (CLI, -j 1)", total_lines), [torchfix, "-j", "1", *paths]),
        ]

    internal_errors: set[str] = set()
    for run in range(1, args.runs + 1):
        print(f"run {run}/{args.runs} ...", file=sys.stderr, flush=True)
        for part in items:
            for t, fn in zip(api[part], fns[part]):
                wall, cpu = time_call(fn)
                t.wall.append(wall)
                t.cpu.append(cpu)
        for t, cmd in commands:
            wall, cpu, rc, stderr = time_command(cmd)
            t.wall.append(wall)
            t.cpu.append(cpu)
            internal_errors.update(l for l in stderr.splitlines() if "internal error" in l)
            if cmd[-len(paths) :] == paths and rc not in (0, 1):
                t.note = f"exit {rc}: {stderr.strip().splitlines()[-1] if stderr.strip() else ''}"[:120]

    by_name = {t.name: t for t, _ in commands}
    report = []
    for part in items:
        title = f"{part}: {len(items[part])} files, {lines[part]} lines (in-process, Python API)"
        report.append(table(title, api[part], api[part][0]))
    if commands:
        floor = Timing(f"{FLOOR} (libcst, in-process)", total_lines)  # one pass over every part, per run
        for i in range(args.runs):
            floor.cpu.append(sum(api[p][0].cpu[i] / repeat[p] for p in items))
            floor.wall.append(sum(api[p][0].wall[i] / repeat[p] for p in items))
        report.append(
            table(
                f"whole corpus: {len(corpus_files)} files, {total_lines} lines (command line, startup included)",
                [floor] + [t for t, _ in commands],
                floor,
            )
        )

    print("\n".join(report))
    checks: list[tuple] = []
    if not args.no_extra:  # bench/targets.py: the library, growth with length and modules, the language server
        extra, checks = targets.report(args.runs, torchfix, with_lsp=not args.no_lsp)
        print("\n".join(extra))
    print("\ntargets")
    limits = {("golden", "check"): 1.5, ("golden", "diff"): 2.0}  # training scripts; the torch sample: 2x
    first = []
    for part in items:
        part_floor = api[part][0]
        for what, t in (("check", api[part][1]), ("diff", api[part][2])):  # diff: the fixes, checked by the guard
            ratio, limit = t.cpu_s / part_floor.cpu_s, limits.get((part, what), 2.0)
            first.append((f"ddpfix {what} / parse+render (API, {part})", ratio, f"<= {limit:g}x", ratio <= limit))
    checks[:0] = first
    cli_check = by_name.get("ddpfix check (CLI, 1 process)")
    for what in ("check", "diff"):
        cli = by_name.get(f"ddpfix {what} (CLI, 1 process)")
        if cli is not None:
            checks.append(
                (
                    f"ddpfix {what} CLI / parse+render (startup included)",
                    cli.cpu_s / floor.cpu_s,
                    "<= 2x",
                    cli.cpu_s <= 2 * floor.cpu_s,
                )
            )
    tf = by_name.get("TorchFix (CLI, -j 1)")
    if tf is not None and cli_check is not None:
        checks.append(
            (
                "TorchFix / ddpfix check (CLI, 1 process each)",
                tf.cpu_s / cli_check.cpu_s,
                ">= 10x",
                tf.cpu_s >= 10 * cli_check.cpu_s,
            )
        )
        checks.append(("TorchFix / parse+render", tf.cpu_s / floor.cpu_s, "", True))
    par = next((t for t in by_name.values() if t.name.startswith("ddpfix check (CLI, --jobs")), None)
    for line in (verdict(*c) for c in checks):
        print(line)
    if par is not None and cli_check is not None:
        print(
            f"  {'--jobs ' + str(args.jobs) + ' speed-up of ddpfix check (wall)':<52}{cli_check.wall_s / par.wall_s:7.2f}x"
        )
    if internal_errors:
        print(f"\n{len(internal_errors)} internal error(s):")
        print("\n".join(sorted(internal_errors)[:20]))

    if args.json:
        out = {
            "date": started.isoformat(timespec="minutes"),
            "commit": git_commit(),
            "machine": {
                "cpu": cpu_model(),
                "cores": cores(),
                "os": f"{platform.system()} {platform.release()}",
                "python": platform.python_version(),
            },
            "corpus": {"every": args.every, "files": {p: len(f) for p, f in parts.items()}, "lines": lines},
            "runs": args.runs,
            "timings": {
                **{
                    f"{part}: {t.name}": {"cpu": t.cpu, "wall": t.wall, "lines": t.lines}
                    for part in items
                    for t in api[part]
                },
                **{t.name: {"cpu": t.cpu, "wall": t.wall, "lines": t.lines} for t, _ in commands},
            },
            "targets": {
                c[0]: {"value": None if c[1] is None else round(c[1], 3), "target": c[2], "ok": c[3]} for c in checks
            },
            "internal_errors": sorted(internal_errors),
        }
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 1 if internal_errors else 0


if __name__ == "__main__":
    sys.exit(main())
