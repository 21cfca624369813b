"""Run-time checks of ``ddpfix verify``: judge what the probe recorded in every rank.

Each check returns a :class:`CheckResult` with status ``pass``, ``fail`` or ``n/a`` and evidence lines
a person can act on ("indices {3, 7, 12} on ranks 0 and 1 in epoch 0", "checkpoint.pt written by ranks
[0, 1]", "rank 0 waits in `dist.barrier()` at train.py:31"). Standard library only.
"""

from __future__ import annotations

import linecache
import os
import re
import sysconfig
from collections import Counter
from dataclasses import asdict, dataclass, field

PASS = "pass"
FAIL = "fail"
NA = "n/a"


@dataclass
class PlainRun:
    """The plain ``python script.py ARGS`` run of ``--single``."""

    command: str
    returncode: int | None
    timed_out: bool
    duration: float
    stdout: str = ""
    stderr: str = ""


@dataclass
class RunData:
    """Everything one verification run produced: the probe traces, stack dumps and launcher facts."""

    script: str
    args: list = field(default_factory=list)
    cwd: str = ""
    nproc: int = 2
    nnodes: int = 1
    world_size: int = 2
    timeout: float = 300.0
    backend: str = "auto"
    pg_timeout: float | None = None
    returncode: int | None = 0
    timed_out: bool = False
    duration: float = 0.0
    traces: dict = field(default_factory=dict)  # rank -> [event]
    stacks: dict = field(default_factory=dict)  # rank -> [thread] dumped at the time limit
    term_stacks: dict = field(default_factory=dict)  # rank -> [thread] dumped when torchrun stopped it
    crashes: dict = field(default_factory=dict)  # rank -> fatal-error text
    output: str = ""
    commands: list = field(default_factory=list)
    run_dir: str | None = None
    plain: PlainRun | None = None
    single: bool = False


@dataclass
class CheckResult:
    name: str
    title: str
    status: str
    evidence: list = field(default_factory=list)
    data: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def failed(self) -> bool:
        return self.status == FAIL

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "title": self.title,
            "status": self.status,
            "evidence": list(self.evidence),
            "data": self.data,
        }


@dataclass
class VerifyReport:
    checks: list
    meta: dict = field(default_factory=dict)
    ranks: list = field(default_factory=list)
    output: str = ""
    plain: PlainRun | None = None

    @property
    def ok(self) -> bool:
        return not any(c.failed for c in self.checks)

    @property
    def failed(self) -> list:
        return [c for c in self.checks if c.failed]

    def get(self, name: str) -> CheckResult:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def __getitem__(self, name: str) -> CheckResult:
        return self.get(name)

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "checks": [c.to_dict() for c in self.checks],
            "meta": self.meta,
            "ranks": self.ranks,
            "output": self.output,
            "single": asdict(self.plain) if self.plain else None,
        }


TITLES = {
    "completes": "Completes on all ranks",
    "ddp": "Model trained through DDP",
    "shards": "Shards disjoint and covering",
    "epoch_order": "Order changes between epochs",
    "params": "Parameters equal on all ranks",
    "files": "Each file written by one rank",
    "collectives": "Same collectives on all ranks",
    "single": "Plain single-process run",
}


def _result(name: str, status: str, evidence, **data) -> CheckResult:
    if isinstance(evidence, str):
        evidence = [evidence]
    return CheckResult(name, TITLES.get(name, name), status, list(evidence), data)


# ------------------------------------------------------------------------ helpers over traces
def events(run: RunData, rank: int, ev: str) -> list:
    return [e for e in run.traces.get(rank, ()) if e.get("ev") == ev]


def first(run: RunData, rank: int, ev: str):
    for e in run.traces.get(rank, ()):
        if e.get("ev") == ev:
            return e
    return None


def all_ranks(run: RunData) -> list:
    return sorted(set(range(run.world_size)) | set(run.traces))


def _lib_prefixes() -> tuple:
    out = set()
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            out.add(os.path.abspath(p) + os.sep)
    return tuple(out)


_LIB = _lib_prefixes()
_PROBE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def is_user_file(path: str) -> bool:
    if not path or path.startswith("<"):
        return False
    if "/site-packages/" in path or "/dist-packages/" in path or path.startswith(_PROBE_DIR):
        return False
    return not path.startswith(_LIB)


def split_site(site: str | None):
    if not site:
        return None, None
    path, _, line = site.rpartition(":")
    try:
        return path, int(line)
    except ValueError:
        return site, None


def short_path(path: str, run: RunData) -> str:
    if not path:
        return "?"
    if path.startswith("<"):
        return path
    base = run.cwd or os.getcwd()
    try:
        rel = os.path.relpath(path, base)
    except ValueError:
        return path
    if rel.startswith(".." + os.sep):
        sdir = os.path.dirname(run.script)
        rel2 = os.path.relpath(path, sdir) if sdir else rel
        return rel2 if not rel2.startswith("..") else path
    return rel


def fmt_site(site: str | None, run: RunData, code: bool = True) -> str:
    """ "train.py:31" or, with the source line, "`dist.barrier()` at train.py:31"."""
    path, line = split_site(site)
    if path is None:
        return "an unknown place"
    where = f"{short_path(path, run)}:{line}" if line else short_path(path, run)
    if code and line:
        src = strip_comment(linecache.getline(path, line).strip())
        if src:
            if len(src) > 60:
                src = src[:57] + "..."
            return f"`{src}` at {where}"
    return where


def strip_comment(src: str) -> str:
    """Drop a trailing ``# comment`` when the ``#`` is clearly outside string literals."""
    if "#" not in src:
        return src
    code, _, _ = src.partition("#")
    if code.count('"') % 2 == 0 and code.count("'") % 2 == 0 and code.strip():
        return code.rstrip()
    return src


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def fmt_set(values, limit: int = 3) -> str:
    vals = sorted(values, key=lambda v: (not isinstance(v, int), v if isinstance(v, int) else str(v)))
    shown = ", ".join(str(v) for v in vals[:limit])
    more = f" and {len(vals) - limit} more" if len(vals) > limit else ""
    return "{" + shown + "}" + more


def fmt_ranks(ranks) -> str:
    ranks = sorted(ranks)
    if len(ranks) == 2:
        return f"ranks {ranks[0]} and {ranks[1]}"
    return f"ranks {ranks}"


_GENERIC_FUNCS = {"wrapper", "inner", "_fn", "decorate_context", "wrapped", "__call__", "fn", "f"}


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
                if g["file"].startswith(_PROBE_DIR) or g["func"] in _GENERIC_FUNCS or g["func"].startswith("<"):
                    continue
                callee = g["func"]
                break
            return f"{f['file']}:{f['line']}", callee
    return None


def _short_message(msg: str | None, limit: int = 200) -> str:
    if not msg:
        return ""
    line = msg.strip().splitlines()[0] if msg.strip() else ""
    line = re.sub(r"\[[^\]\s]*\.(?:cc|cpp|h|hpp|cu):\d+\]\s*", "", line)  # gloo's "[/path/pair.cc:553] "
    return line if len(line) <= limit else line[: limit - 3] + "..."


_SIGNAL_RE = re.compile(r"Signal (\d+) \((SIG\w+)\) received by PID (\d+)")


def _signalled(run: RunData) -> dict:
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


def rank_state(run: RunData, r: int) -> dict:
    """What became of one rank: finished, exited, failed, waiting at the limit, stopped, never started."""
    start = first(run, r, "start")
    end = first(run, r, "end")
    signal = _signalled(run).get(r)  # from torchrun's summary: what ended the process
    if end is not None:
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
            "text": f"rank {r} raised {err}{where}: {_short_message(end.get('message'))}",
        }
    if run.timed_out and r in run.stacks:
        wp = wait_point(run.stacks[r], run)
        if wp:
            site, callee = wp
            inner = f" (in {callee}())" if callee else ""
            return {"state": "waiting", "site": site, "text": f"rank {r} waits in {fmt_site(site, run)}{inner}"}
        return {"state": "waiting", "text": f"rank {r} was still running outside the script's code"}
    if r in run.term_stacks:
        wp = wait_point(run.term_stacks[r], run)
        if wp:
            site, callee = wp
            inner = f" (in {callee}())" if callee else ""
            return {
                "state": "stopped",
                "site": site,
                "text": f"rank {r} was stopped by torchrun in {fmt_site(site, run)}{inner}",
            }
        return {"state": "stopped", "text": f"rank {r} was stopped by torchrun"}
    if r in run.crashes:
        first_line = run.crashes[r].strip().splitlines()[0]
        return {"state": "crashed", "text": f"rank {r} crashed: {first_line}"}
    if start is None:
        return {"state": "missing", "text": f"rank {r} never started the script"}
    if run.timed_out:
        return {"state": "waiting", "text": f"rank {r} was still running (no stack dump)"}
    if signal:
        return {"state": "killed", "text": f"rank {r} was ended by {signal} before the end of the script"}
    return {"state": "killed", "text": f"rank {r} ended without a report (killed?)"}


def _output_hint(run: RunData) -> str | None:
    lines = [ln.strip() for ln in run.output.splitlines() if ln.strip() and not ln.startswith("---")]
    for ln in reversed(lines):
        if (
            re.search(r"(Error|Exception)\b", ln)
            and not ln.startswith(("E", "W", "I"))
            or ln.startswith(("ModuleNotFoundError", "torch.distributed.elastic", "RuntimeError", "ValueError"))
        ):
            return ln[:200]
    return lines[-1][:200] if lines else None


# ------------------------------------------------------------------------ the checks
def check_completes(run: RunData) -> CheckResult:
    states = {r: rank_state(run, r) for r in all_ranks(run)}
    ok = not run.timed_out and run.returncode == 0 and all(s["state"] == "finished" for s in states.values())
    if ok:
        return _result(
            "completes",
            PASS,
            f"{len(states)} ranks finished in {run.duration:.1f} s",
            ranks={r: s["state"] for r, s in states.items()},
        )
    evidence = []
    if run.timed_out:
        if all(first(run, r, "end") for r in states):
            evidence.append(
                f"every rank ended the script, but the processes had not exited after {run.timeout:g} s; "
                "they were stopped"
            )
        else:
            evidence.append(f"no result within the {run.timeout:g} s limit; every rank was stopped")
    elif not any(first(run, r, "start") for r in states):
        hint = _output_hint(run)
        evidence.append(
            f"torchrun exited with code {run.returncode} before any rank ran the script" + (f": {hint}" if hint else "")
        )
    order = {
        "waiting": 0,
        "error": 1,
        "crashed": 2,
        "stopped": 3,
        "exit": 4,
        "killed": 5,
        "missing": 6,
        "exit_crash": 7,
        "exit_stopped": 8,
        "finished": 9,
    }
    evidence += [states[r]["text"] for r in sorted(states, key=lambda r: (order.get(states[r]["state"], 9), r))]
    if not run.timed_out and run.returncode not in (0, None) and all(s["state"] == "finished" for s in states.values()):
        evidence.append(f"torchrun exited with code {run.returncode}")
    return _result(
        "completes",
        FAIL,
        evidence,
        ranks={r: s["state"] for r, s in states.items()},
        sites={r: s.get("site") for r, s in states.items() if s.get("site")},
    )


def _step_counts(run: RunData) -> dict:
    out = {}
    for r in all_ranks(run):
        end = first(run, r, "end")
        steps = events(run, r, "step")
        out[r] = max(len(steps), end.get("steps", 0) if end else 0)
    return out


def check_ddp(run: RunData) -> CheckResult:
    if run.world_size < 2:
        return _result("ddp", NA, "one process: nothing to synchronise")
    steps = _step_counts(run)
    ddps = {r: events(run, r, "ddp") for r in all_ranks(run)}
    stepping = [r for r, n in steps.items() if n]
    if not stepping:
        if any(ddps.values()):
            names = sorted({e.get("module") for v in ddps.values() for e in v})
            return _result(
                "ddp", NA, f"{', '.join(names)} wrapped in DistributedDataParallel, but no optimizer step ran"
            )
        return _result("ddp", NA, "no optimizer step ran")
    without = [r for r in stepping if not ddps[r]]
    if len(without) == len(stepping):
        return _result(
            "ddp",
            FAIL,
            [
                f"{fmt_ranks(stepping) if len(stepping) > 1 else f'rank {stepping[0]}'} ran optimizer steps "
                f"({', '.join(f'{steps[r]}' for r in stepping)}) but no DistributedDataParallel was constructed: "
                "every rank trains its own copy of the model"
            ],
        )
    evidence = []
    status = PASS
    if without:
        status = FAIL
        evidence.append(
            f"{fmt_ranks(without) if len(without) > 1 else f'rank {without[0]}'} ran optimizer steps "
            "without constructing DistributedDataParallel"
        )
    unused: dict = {}
    for r in stepping:
        end = first(run, r, "end")
        fwd = (end or {}).get("ddp_forwards") or {}
        for e in ddps[r]:
            if end is not None and int(fwd.get(str(e["id"]), 0)) == 0:
                unused.setdefault(e["id"], (e, []))[1].append(r)
    for e, rs in unused.values():
        status = FAIL
        who = fmt_ranks(rs) if len(rs) > 1 else f"rank {rs[0]}"
        evidence.append(
            f"the DistributedDataParallel wrapper of {e.get('module')} ({fmt_site(e.get('site'), run, False)}) never ran "
            f"forward on {who}, which took {plural(max(steps[r] for r in rs), 'optimizer step')}: gradients were not "
            "synchronised (forward through `.module`?)"
        )
    if status == PASS:
        e0 = ddps[stepping[0]][0]
        evidence.append(
            f"{e0.get('module')} wrapped at {fmt_site(e0.get('site'), run, False)} on "
            f"{len(stepping)} ranks; forward ran through the wrapper"
        )
    return _result("ddp", status, evidence)


def _loaders(run: RunData) -> dict:
    out = {}
    for r in all_ranks(run):
        for e in events(run, r, "loader"):
            out.setdefault(e["key"], e)
    return out


def _passes(run: RunData) -> dict:
    """(loader key, pass number) -> {rank: pass event}"""
    out: dict = {}
    for r in all_ranks(run):
        for e in events(run, r, "pass"):
            out.setdefault((e["loader"], e["n"]), {})[r] = e
    return out


def _training_passes(run: RunData) -> set:
    keys = set()
    for r in all_ranks(run):
        for e in events(run, r, "step"):
            if e.get("loader") is not None:
                keys.add((e["loader"], e.get("pass")))
        for e in events(run, r, "pass"):
            if e.get("steps"):
                keys.add((e["loader"], e["n"]))
    return keys


def loader_name(key: str, run: RunData) -> str:
    site, _, nth = key.partition("#")
    return f"loader at {fmt_site(site, run, False)}" + (f" (#{int(nth) + 1})" if nth else "")


def _epoch_label(n: int, evs: dict) -> str:
    epochs = {e.get("epoch") for e in evs.values()}
    label = f"epoch {n}"
    if len(epochs) == 1:
        (ep,) = epochs
        if ep is not None and ep != n:
            label += f" (sampler epoch {ep})"
    return label


def check_shards(run: RunData) -> CheckResult:
    if run.world_size < 2:
        return _result("shards", NA, "one process: nothing to shard")
    passes = _passes(run)
    if not passes:
        return _result("shards", NA, "no DataLoader was iterated")
    training = _training_passes(run)
    judged = {k: v for k, v in passes.items() if k in training}
    if not judged:
        return _result(
            "shards", NA, f"no DataLoader pass fed an optimizer step ({len(passes)} evaluation passes not judged)"
        )
    loaders = _loaders(run)
    failures, notes, summaries = [], [], {}
    for (key, n), evs in sorted(judged.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        info = loaders.get(key, {})
        name = loader_name(key, run)
        if info.get("iterable"):
            notes.append(f"{name}: IterableDataset, sharding is not observable from the sampler")
            continue
        sets = {r: set(e.get("indices") or ()) for r, e in evs.items()}
        union = set().union(*sets.values())
        total = sum(len(s) for s in sets.values())
        dup = total - len(union)
        ds = info.get("dist_sampler") or {}
        n_ds = info.get("dataset_len")
        pad = 0
        if ds and not ds.get("drop_last") and isinstance(n_ds, int):
            pad = max(0, int(ds.get("total_size", n_ds)) - n_ds)
        label = _epoch_label(n, evs)
        s = summaries.setdefault(key, {"epochs": 0, "per_rank": set(), "union": [], "dup": 0, "pad": pad})
        s["epochs"] += 1
        s["per_rank"].update(len(x) for x in sets.values())
        s["union"].append(len(union))
        s["dup"] = max(s["dup"], dup)
        missing_ranks = [r for r in range(run.world_size) if r not in evs]
        if dup > pad:
            ranks_sorted = sorted(sets)
            example = None
            for i, a in enumerate(ranks_sorted):
                for b in ranks_sorted[i + 1 :]:
                    common = sets[a] & sets[b]
                    if common:
                        example = (a, b, common)
                        break
                if example:
                    break
            a, b, common = example
            allowance = f" (DistributedSampler padding allows {pad})" if pad else ""
            failures.append(
                f"{name}, {label}: indices {fmt_set(common)} on {fmt_ranks([a, b])}; "
                f"the ranks read {total} samples but only {len(union)} distinct ones{allowance}"
            )
            continue
        if missing_ranks:
            notes.append(
                f"{name}, {label}: {fmt_ranks(missing_ranks) if len(missing_ranks) > 1 else f'rank {missing_ranks[0]}'}"
                " did not iterate it"
            )
        complete = all(e.get("complete") for e in evs.values()) and not missing_ranks
        ints = all(isinstance(i, int) for i in union)
        if complete and ints and isinstance(n_ds, int) and info.get("full_coverage"):
            allowed = 0
            if ds and ds.get("drop_last"):
                allowed += max(0, n_ds - int(ds.get("total_size", n_ds)))
            if info.get("drop_last") and info.get("batch_size"):
                allowed += run.world_size * (int(info["batch_size"]) - 1)
            missing = set(range(n_ds)) - union
            if len(missing) > allowed:
                failures.append(
                    f"{name}, {label}: the ranks together read {len(union & set(range(n_ds)))} of {n_ds} "
                    f"samples; never read: {fmt_set(missing)}"
                )
    if failures:
        extra = [f"(the same in {plural(len(failures) - 1, 'more epoch')})"] if len(failures) > 1 else []
        return _result("shards", FAIL, failures[:1] + extra + notes[:2])
    evidence = []
    for key, s in summaries.items():
        per = "/".join(str(x) for x in sorted(s["per_rank"]))
        pad_txt = f", {s['dup']} repeated by DistributedSampler padding" if s["dup"] else ""
        n_ds = loaders.get(key, {}).get("dataset_len")
        cover = f"union {min(s['union'])}/{n_ds}" if isinstance(n_ds, int) else f"union {min(s['union'])}"
        evidence.append(
            f"{loader_name(key, run)}: {s['epochs']} epoch(s), {run.world_size} ranks x {per} indices, "
            f"disjoint{pad_txt}, {cover}"
        )
    if not summaries:
        return _result("shards", NA, notes or ["no judged DataLoader pass"])
    return _result("shards", PASS, evidence + notes[:2])


def check_epoch_order(run: RunData) -> CheckResult:
    passes = _passes(run)
    training = _training_passes(run)
    loaders = _loaders(run)
    by_loader: dict = {}
    for (key, n), evs in passes.items():
        if (key, n) in training:
            by_loader.setdefault(key, {})[n] = evs
    if not by_loader:
        return _result("epoch_order", NA, "no DataLoader pass fed an optimizer step")
    multi = {k: v for k, v in by_loader.items() if len(v) >= 2}
    if not multi:
        return _result("epoch_order", NA, "each training DataLoader was iterated once (run at least 2 epochs to check)")
    failures, passes_ok, notes = [], [], []
    for key, per_pass in sorted(multi.items()):
        info = loaders.get(key, {})
        name = loader_name(key, run)
        shuffle = info.get("shuffle")
        if info.get("iterable"):
            notes.append(f"{name}: IterableDataset, order not observable")
            continue
        if shuffle is False:
            notes.append(f"{name}: {info.get('sampler') or 'sampler'} does not shuffle")
            continue
        ns = sorted(per_pass)
        same = []
        for a, b in zip(ns, ns[1:]):
            for r in sorted(set(per_pass[a]) & set(per_pass[b])):
                ea, eb = per_pass[a][r], per_pass[b][r]
                if not (ea.get("complete") and eb.get("complete")):
                    continue
                ia, ib = ea.get("indices"), eb.get("indices")
                if ia and ia == ib:
                    same.append((r, a, b, ea.get("epoch"), eb.get("epoch")))
        if same and shuffle:
            r, a, b, ea, eb = same[0]
            hint = ""
            if info.get("dist_sampler") and ea == eb:
                hint = f" (DistributedSampler.epoch was {ea} both times: call sampler.set_epoch(epoch) at the start of each epoch)"
            ranks = sorted({x[0] for x in same})
            who = f"rank {r}" if len(ranks) == 1 else fmt_ranks(ranks)
            failures.append(f"{name}: {who} read the same order in epochs {a} and {b}{hint}")
        elif same:
            notes.append(
                f"{name}: same order every epoch with {info.get('sampler') or 'an unknown sampler'} "
                "(cannot tell whether it should shuffle)"
            )
        else:
            passes_ok.append(f"{name}: order differs in each of {len(ns)} epochs on every rank")
    if failures:
        return _result("epoch_order", FAIL, failures + notes[:1])
    if passes_ok:
        return _result("epoch_order", PASS, passes_ok + notes[:2])
    return _result("epoch_order", NA, notes or ["nothing to judge"])


def check_params(run: RunData) -> CheckResult:
    if run.world_size < 2:
        return _result("params", NA, "one process: nothing to compare")
    ranks = all_ranks(run)
    ddps = {r: events(run, r, "ddp") for r in ranks}
    if not any(ddps.values()):
        return _result("params", NA, "no DistributedDataParallel model was constructed")
    with_ddp = [r for r in ranks if ddps[r]]
    evidence = []
    counts = {r: len(events(run, r, "step")) for r in with_ddp}
    # after construction (DDP broadcasts rank 0's parameters)
    for i in range(max(len(v) for v in ddps.values())):
        digs = {r: ddps[r][i].get("digest") for r in with_ddp if len(ddps[r]) > i and ddps[r][i].get("digest")}
        if len({d["sha1"] for d in digs.values()}) > 1:
            name = ddps[with_ddp[0]][i].get("module")
            return _result(
                "params", FAIL, [f"parameters of {name} differ right after the DDP wrap: " + _sums(digs)], first_step=0
            )
    steps = {r: {e["n"]: e for e in events(run, r, "step") if e.get("digests") is not None} for r in with_ddp}
    common = sorted(set.intersection(*(set(s) for s in steps.values()))) if steps else []
    first_bad = None
    for n in common:
        per = {r: {d["ddp"]: d for d in steps[r][n]["digests"]} for r in with_ddp}
        for ddp_id in sorted(set.intersection(*(set(p) for p in per.values()))):
            digs = {r: per[r][ddp_id] for r in with_ddp}
            if len({d["sha1"] for d in digs.values()}) > 1:
                first_bad = (n, ddp_id, digs)
                break
        if first_bad:
            break
    ends = {r: first(run, r, "end") for r in with_ddp}
    status = PASS
    if len(set(counts.values())) > 1:
        status = FAIL
        evidence.append("optimizer steps differ: " + ", ".join(f"rank {r} took {n}" for r, n in sorted(counts.items())))
    if first_bad:
        n, ddp_id, digs = first_bad
        name = next((e.get("module") for e in ddps[with_ddp[0]] if e.get("id") == ddp_id), "the model")
        total = max(counts.values()) if counts else n
        site = next((e.get("site") for e in events(run, with_ddp[0], "step") if e.get("n") == n), None)
        notes = [fmt_site(site, run)] if site else []
        before = [m for m in common if m < n]
        if (before[-1] if before else 0) != n - 1:  # steps in between were not digested
            notes.append(f"equal after step {before[-1]}" if before else "equal after the wrap")
        at = f" ({', '.join(notes)})" if notes else ""
        evidence.insert(0, f"parameters of {name} first differ after optimizer step {n} of {total}{at}: {_sums(digs)}")
        return _result("params", FAIL, evidence, first_step=n)
    final = {r: {d["ddp"]: d for d in (e.get("digests") or [])} for r, e in ends.items() if e}
    if len(final) == len(with_ddp) and final:
        for ddp_id in sorted(set.intersection(*(set(f) for f in final.values()))):
            digs = {r: final[r][ddp_id] for r in final}
            if len({d["sha1"] for d in digs.values()}) > 1:
                name = next((e.get("module") for e in ddps[with_ddp[0]] if e.get("id") == ddp_id), "the model")
                evidence.insert(0, f"parameters of {name} differ at exit: {_sums(digs)}")
                return _result("params", FAIL, evidence, first_step=None)
    if status == FAIL:
        return _result("params", FAIL, evidence)
    names = sorted({e.get("module") for v in ddps.values() for e in v})
    n_steps = max(counts.values()) if counts else 0
    at_exit = " and at exit" if len(final) == len(with_ddp) and final else ""
    checked = len(common)
    if n_steps == 0:
        return _result(
            "params",
            PASS if final else NA,
            f"{', '.join(names)}: no optimizer step ran; parameters equal after the wrap{at_exit}",
        )
    sampled = "" if checked == n_steps else f" ({checked} of them digested)"
    return _result(
        "params",
        PASS,
        f"{', '.join(names)}: parameters equal on {len(with_ddp)} ranks after each of "
        f"{n_steps} optimizer steps{sampled}{at_exit}",
    )


def _sums(digs: dict) -> str:
    return ", ".join(
        f"rank {r} sum {d.get('sum', 0):.6g} (sha1 {d.get('sha1', '?')[:8]})" for r, d in sorted(digs.items())
    )


def check_files(run: RunData) -> CheckResult:
    ranks = all_ranks(run)
    by_path: dict = {}
    for r in ranks:
        for e in events(run, r, "write"):
            by_path.setdefault(e["path"], {})[r] = e
    if not by_path:
        return _result("files", NA, "no file was written")
    if run.world_size < 2:
        return _result("files", PASS, f"{len(by_path)} file(s) written by the only rank")
    starts = {r: first(run, r, "start") or {} for r in ranks}
    failures, ok = [], []
    for path, writers in sorted(by_path.items()):
        shown = short_path(path, run)
        if len(writers) > 1:
            e0 = writers[min(writers)]
            hint = ""
            lrs = {starts[r].get("local_rank") for r in writers}
            if lrs == {0} and len(writers) > 1 and run.nnodes > 1:
                hint = " (each is LOCAL_RANK 0 on its node: guard on the global rank, not LOCAL_RANK)"
            failures.append(
                f"{shown} written by ranks {sorted(writers)} ({e0.get('api')} at "
                f"{fmt_site(e0.get('site'), run, False)}){hint}"
            )
        else:
            (r,) = writers
            ok.append(f"{shown} (rank {r})")
    if failures:
        return _result(
            "files",
            FAIL,
            failures[:5] + ([f"(and {len(failures) - 5} more)"] if len(failures) > 5 else []),
            files={p: sorted(w) for p, w in by_path.items()},
        )
    text = ", ".join(ok[:6]) + (f" and {len(ok) - 6} more" if len(ok) > 6 else "")
    return _result(
        "files",
        PASS,
        f"{len(ok)} file(s), each written by one rank: {text}",
        files={p: sorted(w) for p, w in by_path.items()},
    )


def _sig(e: dict) -> tuple:
    shape = tuple(e["shape"]) if "shape" in e else e.get("len")
    return (e.get("op"), shape, e.get("dtype"), e.get("reduce_op"))


def _fmt_coll(e: dict, run: RunData) -> str:
    desc = e.get("op", "?")
    if "shape" in e:
        shape = e["shape"]
        if e.get("op") == "ddp.allreduce":
            desc += f" ({shape[0]:,} {e.get('dtype')})"
        else:
            desc += f" ({'x'.join(map(str, shape)) or 'scalar'} {e.get('dtype')})"
    elif "len" in e:
        desc += f" ({e['len']} items)"
    if e.get("site"):
        desc += f" at {fmt_site(e['site'], run)}"
    return desc


def check_collectives(run: RunData) -> CheckResult:
    ranks = all_ranks(run)
    colls = {r: [e for e in events(run, r, "coll") if not e.get("p2p")] for r in ranks}
    if run.world_size < 2:
        return _result("collectives", NA, "one process")
    if not any(colls.values()):
        return _result("collectives", NA, "no collective was issued")
    groups = sorted({e.get("group", "world") for v in colls.values() for e in v})
    failures, summary = [], Counter()
    for g in groups:
        members = ranks if g == "world" else [int(x) for x in g[len("ranks") :].split(",") if x.isdigit()]
        members = [r for r in members if r in colls]
        seqs = {r: [e for e in colls[r] if e.get("group", "world") == g] for r in members}
        gname = "the default group" if g == "world" else f"group {g}"
        longest = max(len(s) for s in seqs.values())
        for i in range(longest):
            here = {r: (s[i] if i < len(s) else None) for r, s in seqs.items()}
            sigs = {r: (_sig(e) if e else None) for r, e in here.items()}
            if len(set(sigs.values())) > 1:
                parts = []
                for r in members:
                    e = here[r]
                    if e is None:
                        parts.append(f"rank {r} issued none (it issued {len(seqs[r])} in all)")
                    else:
                        parts.append(f"rank {r} issued {_fmt_coll(e, run)}")
                failures.append(f"collective #{i + 1} on {gname} differs: " + "; ".join(parts))
                break
        for e in seqs[members[0]] if members else ():
            summary[e.get("op")] += 1
    hooks = set()
    for r in ranks:
        end = first(run, r, "end") or {}
        for v in (end.get("ddp_hooks") or {}).values():
            if v in ("builtin", "failed"):
                hooks.add(v)
    note = ["DDP's gradient all-reduce was not observed (built-in comm hook)"] if "builtin" in hooks else []
    if failures:
        return _result("collectives", FAIL, failures + note)
    total = sum(summary.values())
    parts = ", ".join(f"{n} {op}" for op, n in summary.most_common())
    return _result(
        "collectives", PASS, [f"{len(ranks)} ranks issued the same {plural(total, 'collective')}: {parts}"] + note
    )


def check_single(run: RunData) -> CheckResult:
    if not run.single or run.plain is None:
        return _result("single", NA, "not requested (--single)")
    p = run.plain
    if p.timed_out:
        return _result("single", FAIL, f"`{p.command}` did not finish within {run.timeout:g} s")
    if p.returncode != 0:
        lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
        last = lines[-1].strip()[:200] if lines else ""
        return _result("single", FAIL, f"`{p.command}` exited with code {p.returncode}" + (f": {last}" if last else ""))
    return _result("single", PASS, f"`{p.command}` exited 0 in {p.duration:.1f} s")


CHECKS = (
    check_completes,
    check_ddp,
    check_shards,
    check_epoch_order,
    check_params,
    check_files,
    check_collectives,
    check_single,
)


def evaluate(run: RunData) -> VerifyReport:
    results = []
    for fn in CHECKS:
        name = fn.__name__.removeprefix("check_")
        try:
            results.append(fn(run))
        except Exception as exc:  # a bug in a check must not hide the others
            results.append(_result(name, FAIL, f"the check itself failed: {type(exc).__name__}: {exc}"))
    return VerifyReport(checks=results, meta=run_meta(run), ranks=rank_table(run), output=run.output, plain=run.plain)


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
        expected = "nccl" if cuda else "gloo"
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
