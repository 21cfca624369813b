#!/usr/bin/env python
"""Run ddpfix on real training scripts from public repositories and judge what it does.

    python bench/realworld/run.py --mirrors DIR [--python PY] [--jobs N] [--only ID ...] [--markdown docs/realworld.md]
    python bench/realworld/run.py --render results/results.json --markdown docs/realworld.md

The scripts are not part of this repository: ``manifest.toml`` names each one (repository, commit,
path, companion files) and the runner copies them out of a local folder of git mirrors (``--mirrors``,
one ``OWNER+NAME/repo`` git directory per repository) into a run folder, applies the entry's listed
patches, and builds its data with the offline recipes of ``recipes.py``.

For a single-GPU script (``kind = "single"``): run the original as a plain process; ``ddpfix apply``
(safe fixes); the rewrite must parse, a second apply must change nothing; run the rewrite as a plain
process (same output modulo numbers, same files); ``ddpfix verify --nproc 2`` (gloo, CPU) on the
rewrite, each check's status compared with the one the entry declares (``checks``). For an
already-distributed script (``kind = "ddp"``): ``ddpfix check`` (every finding not in the entry's
``true_findings`` is false, every true one it does not report is missed) and ``ddpfix apply`` (every
line it changes, in any file, must be one that the fixes of true findings edit); the original's plain
run is recorded too. The verdicts are bench/realworld/verdicts.py's.

Each entry gets a verdict (``pass`` or its failure classes). Results go to ``results/results.json``
beside this file (and the run folders to ``results/runs/``); ``--markdown`` renders the report.
"""

from __future__ import annotations

import argparse
import datetime
import difflib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT))
import recipes  # noqa: E402
from verdicts import (  # noqa: E402,F401 - the runner's verdicts, also for its callers
    CHECK_STATUSES,
    CLASSES,
    VERIFY_CHECKS,
    changed_lines,
    changes_beyond,
    check_mismatches,
    classify,
    finding_key,
    fix_lines,
    judge_findings,
    missed_findings,
    summarise,
)

from ddpfix.verify.checks.completes import crashed_only_at_exit  # noqa: E402

MANIFEST = HERE / "manifest.toml"
RESULTS = HERE / "results"
KINDS = ("single", "ddp")
ENTRY_KEYS = {
    "id": str,
    "repo": str,
    "commit": str,
    "path": str,
    "kind": str,
    "shape": str,
    "companions": list,
    "args": list,
    "env": dict,
    "cwd": str,
    "data": list,
    "patches": list,
    "timeout": int,
    "runs_on_cpu": bool,
    "verify": bool,
    "true_findings": list,
    "review": str,
    "notes": str,
    # "unconverted": the script has nothing to distribute; it stays unconverted (never a pass) and is
    # left out of the figures, which say how many such scripts apply left alone
    "expect": str,
    # the status a correct conversion gets from each verify check, judged from the code: {check = status}
    "checks": dict,
    # why a check is declared other than "pass" ({check = reason}): every such check needs one
    "check_reasons": dict,
    # the date on which the entry's verdicts (checks, true_findings) were committed, before ddpfix ever
    # ran on the script: the entry belongs to the blind subset, reported separately
    "blind": str,
}
REQUIRED = ("id", "repo", "commit", "path", "kind", "shape")
DEFAULT_TIMEOUT = 300

# ---------------------------------------------------------------- manifest


class ManifestError(ValueError):
    pass


def validate_entry(entry: dict) -> list[str]:
    """Problems with one manifest entry (empty when it is well formed)."""
    errors = []
    eid = entry.get("id", "?")
    for key in REQUIRED:
        if key not in entry:
            errors.append(f"{eid}: missing {key!r}")
    for key, value in entry.items():
        if key not in ENTRY_KEYS:
            errors.append(f"{eid}: unknown key {key!r}")
        elif not isinstance(value, ENTRY_KEYS[key]):
            errors.append(f"{eid}: {key!r} must be {ENTRY_KEYS[key].__name__}")
    if entry.get("kind") not in KINDS:
        errors.append(f"{eid}: kind must be one of {KINDS}")
    if "commit" in entry and not re.fullmatch(r"[0-9a-f]{40}", str(entry["commit"])):
        errors.append(f"{eid}: commit must be 40 hex digits")
    if "/" not in str(entry.get("repo", "/")):
        errors.append(f"{eid}: repo must be OWNER/NAME")
    for arg in entry.get("args", []):
        if not isinstance(arg, str):
            errors.append(f"{eid}: args must be strings")
    for step in entry.get("data", []):
        errors.extend(f"{eid}: {e}" for e in recipes.validate_step(step))
    for p in entry.get("patches", []):
        if (
            not isinstance(p, dict)
            or set(p) - {"file", "old", "new", "reason"}
            or not {"old", "new", "reason"} <= set(p)
        ):
            errors.append(f"{eid}: a patch is a table with old, new, reason (and file)")
    for f in entry.get("true_findings", []):
        if not isinstance(f, dict) or set(f) != {"code", "line", "reason"}:
            errors.append(f"{eid}: a true finding is a table with code, line, reason")
    errors.extend(validate_checks(entry))
    if "blind" in entry and not re.fullmatch(r"\d{4}-\d\d-\d\d", entry["blind"]):
        errors.append(f"{eid}: blind must be a date (YYYY-MM-DD)")
    if entry.get("true_findings") and entry.get("kind") != "ddp":
        errors.append(f"{eid}: true_findings only for kind = 'ddp'")
    return errors


def needs_checks(entry: dict) -> bool:
    """A single-GPU entry that runs on CPU, is verified and should be converted declares its checks."""
    return (
        entry.get("kind") == "single"
        and entry.get("runs_on_cpu", True)
        and entry.get("verify", True)
        and entry.get("expect") != "unconverted"
    )


def validate_checks(entry: dict) -> list[str]:
    """The entry's declared verify statuses: known checks and statuses, a reason for each status other
    than "pass", and `shards` never "fail" (a correct conversion never trains every rank on the same
    data) and "n/a" only with a reason (the script trains on no data stream)."""
    eid, errors = entry.get("id", "?"), []
    checks, reasons = entry.get("checks", {}), entry.get("check_reasons", {})
    if "checks" not in entry and needs_checks(entry):
        errors.append(f"{eid}: a runnable, verified single-GPU entry declares its checks (checks = {{...}})")
    if (checks or reasons) and entry.get("kind") != "single":
        errors.append(f"{eid}: checks and check_reasons only for kind = 'single'")
    for name, status in checks.items():
        if name not in VERIFY_CHECKS:
            errors.append(f"{eid}: checks: unknown check {name!r} (one of {', '.join(VERIFY_CHECKS)})")
        elif status not in CHECK_STATUSES:
            errors.append(f"{eid}: checks: {name} must be one of {CHECK_STATUSES}")
        elif status != "pass" and not str(reasons.get(name, "")).strip():
            errors.append(f"{eid}: checks: {name} = {status!r} needs its reason (check_reasons = {{ {name} = ... }})")
    if checks.get("shards") == "fail":
        errors.append(f"{eid}: checks: shards cannot be expected to fail (n/a, with a reason, where no data stream)")
    for name in reasons:
        if checks.get(name, "pass") == "pass":
            errors.append(f"{eid}: check_reasons: {name!r} is not declared other than 'pass'")
    return errors


def load_manifest(path: Path = MANIFEST, text: str | None = None) -> list[dict]:
    data = tomllib.loads(text if text is not None else Path(path).read_text(encoding="utf-8"))
    entries = data.get("script", [])
    errors = []
    seen = set()
    for e in entries:
        errors.extend(validate_entry(e))
        if e.get("id") in seen:
            errors.append(f"{e.get('id')}: duplicate id")
        seen.add(e.get("id"))
    if errors:
        raise ManifestError("\n".join(errors))
    return entries


# ---------------------------------------------------------------- normalising and comparing

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_HEX = re.compile(r"\b(?:0x)?[0-9a-f]{8,}\b")
_TIME_WORDS = re.compile(r"\b(?:\d+:)?\d+:\d\d(?:\.\d+)?\b")  # 0:00:03, 00:03.2
_SKIP_LINE = re.compile(
    r"(?:^\s*$|it/s\]|s/it\]|\d+%\|)"  # blank, tqdm bars
    r"|warn(?:ing)?s?\b"  # library warnings differ with import order and filters
    r"|^\s*(?:warnings\.warn|super\(\)\._|return _?[A-Za-z_.]+\(|_?C\._)",  # the source line a warning echoes
    re.IGNORECASE,
)


def normalise_output(text: str) -> list[str]:
    """Output lines with what legitimately differs between two runs of the same program masked: every
    number (timings, losses of unseeded runs, counts in progress bars) becomes ``#``, hex digests and
    clock times too; progress-bar redraws keep only their last state; blank lines and warnings go."""
    out = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = _ANSI.sub("", raw.split("\r")[-1]).rstrip()
        if _SKIP_LINE.search(line):
            continue
        line = _TIME_WORDS.sub("#", line)
        line = _HEX.sub("#", line)
        line = _NUMBER.sub("#", line)
        line = re.sub(r"#(?:[ ,]*#)+", "#", line)
        out.append(line)
    return out


def normalise_path(path: str) -> str:
    """A written file's path with run-specific parts (dates, times, host names, pids, numbers) masked."""
    p = re.sub(r"\d+", "#", path)
    p = re.sub(r"events\.out\.tfevents\.[^/]*", "events.out.tfevents.*", p)
    return p


def compare_runs(orig: dict, new: dict) -> list[str]:
    """Why two plain runs of a script and its rewrite do not behave the same (empty when they do)."""
    reasons = []
    if orig["rc"] != new["rc"]:
        reasons.append(f"exit code {orig['rc']} -> {new['rc']}")
    a, b = normalise_output(orig["stdout"]), normalise_output(new["stdout"])
    if a != b:
        diff = [d for d in difflib.unified_diff(a, b, "original", "rewrite", n=0, lineterm="") if d[:1] in "+-"]
        reasons.append("stdout differs: " + " | ".join(diff[2:8]))
    fa = sorted({normalise_path(p) for p in orig["files"]})
    fb = sorted({normalise_path(p) for p in new["files"]})
    if fa != fb:
        only_a = sorted(set(fa) - set(fb))
        only_b = sorted(set(fb) - set(fa))
        reasons.append(f"files differ: only original {only_a[:5]}, only rewrite {only_b[:5]}")
    return reasons


def without_own_randomness(original: dict, differences: list[str], rerun) -> tuple[list[str], list[str]]:
    """A script that prints what its unseeded randomness gives differs from itself too: where the
    rewrite's plain run printed something else, run the original again (`rerun()`, up to
    ORIGINAL_RERUNS times); if one of those runs differs from the first, the original's output is no
    yardstick and the stdout difference is dropped. One rerun was too few: wrn-meliketoy's "Saving
    Best model" lines follow its unseeded accuracies, and two original runs printed as many by chance.
    Returns the differences kept and how the original differed from itself (empty: it did not)."""
    if not any(r.startswith("stdout differs") for r in differences):
        return differences, []
    for _ in range(ORIGINAL_RERUNS):
        again = rerun()
        own = compare_runs(original, again) if again["rc"] == original["rc"] else []
        if own:
            return [r for r in differences if not r.startswith("stdout")], own
    return differences, []


# ---------------------------------------------------------------- running


@dataclass
class Proc:
    rc: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False


def run_proc(cmd: list[str], cwd: Path, env: dict, timeout: float) -> Proc:
    """Run CMD in its own session; at the limit kill the whole process group. Never hangs."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
        timed_out = False
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the group: children a script left behind go too
            except ProcessLookupError:
                pass
            p.wait()
        out.seek(0)
        err.seek(0)
        o = out.read().decode("utf-8", "replace")
        e = err.read().decode("utf-8", "replace")
    rc = 124 if timed_out else p.returncode
    return Proc(rc, o, e, round(time.monotonic() - t0, 2), timed_out)


def git_dir(mirrors: Path, repo: str) -> Path:
    owner, name = repo.split("/", 1)
    for cand in (
        mirrors / f"{owner}+{name}" / "repo" / ".git",
        mirrors / f"{owner}+{name}" / "repo",
        mirrors / owner / name,
    ):
        if (cand / "HEAD").exists() or (cand / ".git").exists():
            return cand
    raise FileNotFoundError(f"no mirror of {repo} under {mirrors}")


def export_files(gdir: Path, commit: str, paths: list[str], dest: Path) -> None:
    """Copy PATHS (files or folders) of COMMIT into DEST, keeping their repository-relative paths."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as tar:
        subprocess.run(
            ["git", "--git-dir", str(gdir), "archive", "--format=tar", commit, "--", *paths], stdout=tar, check=True
        )
        tar.seek(0)
        with tarfile.open(fileobj=tar) as tf:
            tf.extractall(dest, filter="data")


def apply_patches(base: Path, entry: dict) -> None:
    for p in entry.get("patches", []):
        target = base / p.get("file", entry["path"])
        text = target.read_text(encoding="utf-8")
        if p["old"] not in text:
            raise RuntimeError(f"patch does not apply to {target.name}: {p['old']!r}")
        target.write_text(text.replace(p["old"], p["new"]), encoding="utf-8")


def snapshot(base: Path) -> dict[str, tuple[int, int]]:
    files = {}
    for p in base.rglob("*"):
        if p.is_file() and "__pycache__" not in p.parts:
            st = p.stat()
            files[str(p.relative_to(base))] = (st.st_size, st.st_mtime_ns)
    return files


def texts(base: Path) -> dict[str, str]:
    """The Python sources under BASE by their path relative to it (what an apply may edit)."""
    out = {}
    for p in base.rglob("*.py"):
        if p.is_file() and "__pycache__" not in p.parts and "_shim" not in p.relative_to(base).parts:
            out[p.relative_to(base).as_posix()] = p.read_text(encoding="utf-8", errors="replace")
    return out


def written(before: dict, after: dict) -> list[str]:
    return sorted(k for k, v in after.items() if before.get(k) != v)


class Runner:
    def __init__(
        self,
        mirrors: Path,
        python: str,
        out: Path,
        verify_timeout: int | None = None,
        original_only: bool = False,
        unsafe_fixes: bool = False,
    ):
        self.apply = ["apply", "--unsafe-fixes"] if unsafe_fixes else ["apply"]  # what each apply runs
        self.mirrors = mirrors
        self.python = python
        self.out = out
        self.verify_timeout = verify_timeout
        self.original_only = original_only

    def env(self, entry: dict, tree: Path) -> dict:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
        }
        shim = tree / "_shim"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(shim) if shim.exists() else "", str(ROOT)) if p)
        env.update({"PYTHONHASHSEED": "0", "MPLBACKEND": "Agg", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1"})
        extra = dict(entry.get("env", {}))
        if "PYTHONPATH" in extra:  # entry paths are relative to the run folder's root, before the runner's
            extra["PYTHONPATH"] = os.pathsep.join([str(tree / extra["PYTHONPATH"]), env["PYTHONPATH"]])
        env.update(extra)
        env["CUDA_VISIBLE_DEVICES"] = ""  # the corpus runs on CPU, also on a machine with GPUs
        return env

    def prepare(self, entry: dict, tree: Path) -> Path:
        gdir = git_dir(self.mirrors, entry["repo"])
        export_files(gdir, entry["commit"], [entry["path"], *entry.get("companions", [])], tree)
        apply_patches(tree, entry)
        cwd = tree / entry.get("cwd", str(Path(entry["path"]).parent))
        cwd.mkdir(parents=True, exist_ok=True)
        recipes.build(cwd, entry.get("data", []))
        shim = cwd / "_shim"
        if shim.exists() and cwd != tree:
            shutil.move(str(shim), str(tree / "_shim"))
        return cwd

    def plain_run(self, entry: dict, tree: Path, cwd: Path) -> dict:
        before = snapshot(tree)
        script = os.path.relpath(tree / entry["path"], cwd)
        p = run_proc(
            [self.python, script, *entry.get("args", [])],
            cwd,
            self.env(entry, tree),
            entry.get("timeout", DEFAULT_TIMEOUT),
        )
        files = [f for f in written(before, snapshot(tree)) if not f.startswith("_shim")]
        return {
            "rc": p.rc,
            "seconds": p.seconds,
            "timed_out": p.timed_out,
            "stdout": p.stdout[-20000:],
            "stderr_tail": p.stderr[-3000:],
            "files": files,
        }

    def ddpfix(self, args: list[str], cwd: Path, env: dict, timeout: float = 600) -> Proc:
        return run_proc([self.python, "-m", "ddpfix", *args], cwd, env, timeout)

    def run_entry(self, entry: dict) -> dict:
        t0 = time.monotonic()
        res = {
            "id": entry["id"],
            "kind": entry["kind"],
            "repo": entry["repo"],
            "path": entry["path"],
            "shape": entry["shape"],
        }
        res["runs_on_cpu"] = entry.get("runs_on_cpu", True)
        for key, to in (("expect", "expect"), ("blind", "blind"), ("checks", "expected_checks")):
            if key in entry:
                res[to] = entry[key]
        if entry["kind"] == "ddp":
            res["declared_true"] = len(entry.get("true_findings", []))
        base = self.out / entry["id"]
        shutil.rmtree(base, ignore_errors=True)
        try:
            orig_tree, new_tree, ver_tree = base / "original", base / "rewrite", base / "verify"
            cwd_o = self.prepare(entry, orig_tree)
            cwd_n = self.prepare(entry, new_tree)
        except Exception as exc:  # noqa: BLE001 - a broken entry is reported, the run goes on
            res["setup_error"] = f"{type(exc).__name__}: {exc}"
            res["classes"] = classify(res)
            return res
        script_n = new_tree / entry["path"]
        env = self.env(entry, new_tree)
        source = script_n.read_text(encoding="utf-8")
        if self.original_only:
            res["original"] = self.plain_run(entry, orig_tree, cwd_o)
            res["classes"] = [] if res["original"]["rc"] == 0 else ["original-fails"]
            res["seconds"] = round(time.monotonic() - t0, 1)
            return res
        if entry["kind"] == "ddp":
            self.run_ddp(entry, res, source, cwd_n, script_n, env)
            if res["runs_on_cpu"]:
                res["original"] = self.plain_run(entry, orig_tree, cwd_o)
        else:
            res["original"] = self.plain_run(entry, orig_tree, cwd_o)
            if res["original"]["rc"] == 0:
                rerun = lambda: self.plain_run(entry, orig_tree, cwd_o)  # noqa: E731
                self.run_single(entry, res, source, new_tree, ver_tree, cwd_n, script_n, env, rerun)
        res["classes"] = classify(res)
        res["seconds"] = round(time.monotonic() - t0, 1)
        return res

    def run_ddp(self, entry, res, source, cwd, script, env):
        tree = script.parents[len(Path(entry["path"]).parts) - 1]
        rel = entry["path"]

        def in_tree(path: str | None) -> str:
            p = Path(path or script)
            p = p if p.is_absolute() else cwd / p
            try:
                return p.resolve().relative_to(tree.resolve()).as_posix()
            except ValueError:
                return str(p)

        p = self.ddpfix(["check", "--format", "json", str(script)], cwd, env)
        if p.rc not in (0, 1):
            res["check_error"] = (p.stderr or p.stdout)[-2000:]
            return
        findings = [
            {
                "code": f["code"],
                "line": f["line"],
                "message": f["message"],
                "fix": (f.get("fix") or {}).get("applicability"),
                "edits": [
                    {"path": in_tree(e.get("path")), **{k: e[k] for k in ("line", "col", "end_line", "end_col")}}
                    for e in (f.get("fix") or {}).get("edits", [])
                ],
            }
            for f in json.loads(p.stdout or "[]")
            if f.get("severity") != "info"  # an information line (a framework's script) is not a finding
        ]
        res["notes"] = [f["code"] for f in json.loads(p.stdout or "[]") if f.get("severity") == "info"]
        true, false = judge_findings(findings, entry.get("true_findings", []))
        res["findings"], res["true_findings"], res["false_findings"] = findings, true, false
        res["missed_true"] = missed_findings(findings, entry.get("true_findings", []))
        before = texts(tree)
        p = self.ddpfix([*self.apply, str(script)], cwd, env)
        if p.rc not in (0, 1):  # 1: a fix the output guard withheld (the rest is applied)
            res["diff_error"] = (p.stderr or p.stdout)[-2000:]
            return
        after = texts(tree)
        res["changed_lines"] = changed_lines(source, after.get(rel, source))
        res["changed_files"] = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        # every line a safe apply changed, in every file, is compared with what the true findings' fixes edit
        res["unexpected_changes"] = changes_beyond(before, after, rel, true, false)
        res["apply_diff"] = "".join(
            "".join(
                difflib.unified_diff(before.get(k, "").splitlines(True), after.get(k, "").splitlines(True), k, k, n=1)
            )
            for k in res["changed_files"]
        )[:6000]

    def run_single(self, entry, res, source, new_tree, ver_tree, cwd, script, env, rerun_original):
        apply_ = res["apply"] = {}
        p = self.ddpfix([*self.apply, str(script)], cwd, env)
        if p.rc not in (0, 1):  # 1: a fix the output guard withheld (the rest is applied)
            apply_["error"] = (p.stderr or p.stdout)[-2000:]
            return
        apply_["withheld"] = [line for line in (p.stderr or "").splitlines() if "withheld" in line]
        apply_["incomplete"] = [line for line in (p.stderr or "").splitlines() if ": incomplete: " in line]
        after = script.read_text(encoding="utf-8")
        apply_["changed"] = after != source
        apply_["diff"] = "".join(difflib.unified_diff(source.splitlines(True), after.splitlines(True), "a", "b", n=1))[
            :12000
        ]
        p2 = self.ddpfix(["check", "--format", "json", str(script)], cwd, env)
        apply_["remaining"] = [
            {
                "code": f["code"],
                "line": f["line"],
                "message": f["message"],
                "fix": (f.get("fix") or {}).get("applicability"),
            }
            for f in (json.loads(p2.stdout or "[]") if p2.rc in (0, 1) else [])
        ]
        if not apply_["changed"]:
            return
        try:
            compile(after, str(script), "exec")
            apply_["parses"] = True
        except SyntaxError as exc:
            apply_["parses"] = False
            apply_["syntax_error"] = str(exc)
            return
        p = self.ddpfix([*self.apply, str(script)], cwd, env)
        again = script.read_text(encoding="utf-8")
        apply_["idempotent"] = p.rc in (0, 1) and again == after
        if again != after:
            apply_["second_diff"] = "".join(
                difflib.unified_diff(after.splitlines(True), again.splitlines(True), "a", "b", n=1)
            )[:4000]
            script.write_text(after, encoding="utf-8")
        shutil.copytree(new_tree, ver_tree, symlinks=True)
        res["rewrite_single"] = self.plain_run(entry, new_tree, cwd)
        res["single_differences"] = compare_runs(res["original"], res["rewrite_single"])
        res["single_differences"], own = without_own_randomness(
            res["original"], res["single_differences"], rerun_original
        )
        if own:
            res["original_nondeterministic"] = own
        if entry.get("verify", True):
            res["verify"] = self.run_verify(entry, ver_tree)

    def run_verify(self, entry, tree):
        """`ddpfix verify` on the rewrite; run again (on a fresh copy of its files, at most
        EXIT_CRASH_RERUNS (one) time) when a rank crashed only while exiting after finishing the script:
        a DDP keeps its gloo group's threads alive past destroy_process_group, and they can race
        the interpreter's teardown (docs/verify.md). The crashes rerun over are kept."""
        pristine = tree.with_name(tree.name + "-pristine")
        shutil.rmtree(pristine, ignore_errors=True)
        shutil.copytree(tree, pristine, symlinks=True)
        crashes: list[list[str]] = []
        while True:
            res = self._verify_once(entry, tree)
            if not res.pop("exit_crash_only", False) or len(crashes) >= EXIT_CRASH_RERUNS:
                break
            crashes.append(res["evidence"].get("completes", []))
            shutil.rmtree(tree)
            shutil.copytree(pristine, tree, symlinks=True)
        if crashes:
            res["exit_crash_reruns"] = crashes
        return res

    def _verify_once(self, entry, tree):
        cwd = tree / entry.get("cwd", str(Path(entry["path"]).parent))
        timeout = self.verify_timeout or entry.get("timeout", DEFAULT_TIMEOUT)
        script = os.path.relpath(tree / entry["path"], cwd)
        cmd = ["verify", script, "--nproc", "2", "--backend", "gloo", "--timeout", str(timeout), "--format", "json"]
        p = self.ddpfix([*cmd, "--", *entry.get("args", [])], cwd, self.env(entry, tree), timeout + 120)
        try:
            rep = json.loads(p.stdout)
        except json.JSONDecodeError:
            return {"error": f"rc {p.rc}: {(p.stderr or p.stdout)[-1500:]}"}
        checks = rep.get("checks", [])
        return {
            "ok": rep.get("ok"),
            "checks": {c["name"]: c["status"] for c in checks},
            "evidence": {c["name"]: c.get("evidence", [])[:4] for c in checks if c["status"] == "fail"},
            "duration": rep.get("meta", {}).get("duration"),
            "output_tail": (rep.get("output") or "")[-2500:] if not rep.get("ok") else "",
            "exit_crash_only": exit_crash_only(checks),
        }


ORIGINAL_RERUNS = 3  # runs of the original more, at most, to tell its own randomness from a rewrite's change
EXIT_CRASH_RERUNS = 1  # at most one rerun after a crash at exit; the crash rerun over is kept and shown


def exit_crash_only(checks: list[dict]) -> bool:
    """Only `completes` failed, and only because a rank crashed while exiting after every rank had
    finished the script."""
    failed = [c for c in checks if c.get("status") == "fail"]
    if [c.get("name") for c in failed] != ["completes"]:
        return False
    return crashed_only_at_exit((failed[0].get("data") or {}).get("ranks", {}))


# ---------------------------------------------------------------- report


def table(results: list[dict]) -> str:
    rows = [f"{'id':34} {'kind':6} {'orig':5} {'verdict':40} {'s':>6}"]
    for r in results:
        orig = r.get("original")
        o = "-" if orig is None else ("ok" if orig["rc"] == 0 else f"rc{orig['rc']}")
        rows.append(f"{r['id']:34} {r['kind']:6} {o:5} {', '.join(r['classes']) or 'pass':40} {r.get('seconds', 0):>6}")
    return "\n".join(rows)


def tree_state(root: Path = ROOT) -> dict:
    """The checkout that runs: its commit and `git status --porcelain` (empty when clean)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return {"ddpfix_commit": "unknown", "tree_clean": False, "dirty": ["not a git checkout"]}
    return {"ddpfix_commit": head + ("+dirty" if status else ""), "tree_clean": not status, "dirty": status[:20]}


def publish_refusal(doc: dict, allow_dirty: bool) -> str | None:
    """Why DOC may not be published (None: it may): a run from a tree with uncommitted changes names a
    commit that is not the code that ran, unless the publisher says so (--allow-dirty)."""
    if doc.get("tree_clean") is True or allow_dirty:
        return None
    if "tree_clean" not in doc:
        return "the results do not record whether the tree was clean; run again, or pass --allow-dirty"
    shown = "; ".join(doc.get("dirty", [])[:5])
    return f"the run was made from a tree with uncommitted changes ({shown}); commit first, or pass --allow-dirty"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mirrors", type=Path, help="folder of git mirrors (OWNER+NAME/repo)")
    ap.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter that runs the scripts and ddpfix (needs torch, torchvision)",
    )
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--only", nargs="*", default=None, help="entry ids")
    ap.add_argument("--kind", choices=KINDS)
    ap.add_argument("--jobs", "-j", type=int, default=1)
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder (results.json, runs/)")
    ap.add_argument("--verify-timeout", type=int, default=None)
    ap.add_argument("--markdown", type=Path, help="also render the report to this Markdown file")
    ap.add_argument(
        "--allow-dirty",
        action="store_true",
        help="publish (--markdown) a run made from a tree with uncommitted changes; the report says so",
    )
    ap.add_argument(
        "--json",
        type=Path,
        help="results file (default: OUT/results.json, or OUT/results-partial.json for a selection)",
    )
    ap.add_argument(
        "--render",
        type=Path,
        nargs="+",
        help="render existing results files instead of running (later files win per id)",
    )
    ap.add_argument("--validate", action="store_true", help="only check the manifest")
    ap.add_argument(
        "--original-only", action="store_true", help="only build each entry and run the original (to tune the manifest)"
    )
    ap.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="apply unsafe fixes too: the figure for a user who opts in (recorded in the results; not for docs/realworld.md)",
    )
    a = ap.parse_args(argv)

    entries = load_manifest(a.manifest)
    if a.validate:
        repos = {e["repo"] for e in entries}
        print(f"manifest ok: {len(entries)} scripts from {len(repos)} repositories")
        return 0
    if a.render:
        docs = [json.loads(p.read_text()) for p in a.render]
        by_id = {}
        for d in docs:
            by_id.update({r["id"]: r for r in d["results"]})
        order = [e["id"] for e in entries]
        doc = dict(docs[-1])
        doc["results"] = sorted(by_id.values(), key=lambda r: order.index(r["id"]) if r["id"] in order else len(order))
        doc["seconds"] = round(sum(d.get("seconds", 0) for d in docs), 1)
        # results merged from several runs are clean only when every run was, and name every commit
        doc["ddpfix_commit"] = " + ".join(dict.fromkeys(d.get("ddpfix_commit", "unknown") for d in docs))
        if all("tree_clean" in d for d in docs):
            doc["tree_clean"] = all(d["tree_clean"] is True for d in docs)
            doc["dirty"] = [line for d in docs for line in d.get("dirty", [])][:20]
        else:
            doc.pop("tree_clean", None)
        doc["summary"] = summarise(doc["results"])
    else:
        if a.mirrors is None:
            ap.error("--mirrors is required to run")
        state = tree_state()
        if a.markdown and (why := publish_refusal(state, a.allow_dirty)):
            print(f"refusing to publish: {why}", file=sys.stderr)
            return 2
        sel = [e for e in entries if (a.only is None or e["id"] in a.only) and (a.kind is None or e["kind"] == a.kind)]
        a.out.mkdir(parents=True, exist_ok=True)
        runner = Runner(
            a.mirrors.resolve(),
            a.python,
            a.out / "runs",
            a.verify_timeout,
            original_only=a.original_only,
            unsafe_fixes=a.unsafe_fixes,
        )
        lock = threading.Lock()
        t0 = time.monotonic()

        def one(e):
            r = runner.run_entry(e)
            with lock:
                print(f"{r['id']:34} {', '.join(r['classes']) or 'pass'}  ({r.get('seconds', 0)} s)", flush=True)
            return r

        with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
            results = list(ex.map(one, sel))
        doc = {
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            **state,
            "python": a.python,
            "torch": subprocess.run(
                [a.python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True
            ).stdout.strip(),
            "jobs": a.jobs,
            "unsafe_fixes": a.unsafe_fixes,
            "seconds": round(time.monotonic() - t0, 1),
            "results": results,
        }
        doc["summary"] = summarise(results)
        out = a.json or a.out / ("results.json" if a.only is None and a.kind is None else "results-partial.json")
        out.write_text(json.dumps(doc, indent=1))
        print(f"\nresults: {out}")
    print(table(doc["results"]))
    s = doc["summary"]
    print(
        f"\n{s['entries']} scripts from {s['repos']} repositories; {s['counted']} counted (original runs on CPU); "
        f"pass {s['pass']}/{s['counted']}; single-GPU {s['single_pass']}/{s['single']}; "
        f"ddp {s['ddp_pass']}/{s['ddp']} ({s['ddp_false']} false of {s['ddp_findings']} findings, "
        f"{s['ddp_missed']} true missed, {s['ddp_changed']} changed beyond true findings)"
    )
    b = s["blind"]
    print(
        f"blind subset: {b['entries']} scripts; pass {b['pass']}/{b['counted']}; single-GPU "
        f"{b['single_pass']}/{b['single']}; ddp {b['ddp_pass']}/{b['ddp']}"
    )
    print("failure classes:", ", ".join(f"{k} {v}" for k, v in s["per_class"].items()) or "none")
    if a.markdown:
        import report

        if doc.get("unsafe_fixes"):
            print(
                "refusing to publish: a run with --unsafe-fixes is not the published (safe apply) figure",
                file=sys.stderr,
            )
            return 2
        if why := publish_refusal(doc, a.allow_dirty):
            print(f"refusing to publish: {why}", file=sys.stderr)
            return 2
        doc["published_dirty"] = not doc.get("tree_clean", False)

        a.markdown.write_text(report.render(doc, load_manifest(a.manifest), path=a.markdown), encoding="utf-8")
        print(f"wrote {a.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
