"""The data of a verification: what a run produced (:class:`RunData`), what a check concluded
(:class:`CheckResult`) and the report that gathers them (:class:`VerifyReport`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

PASS = "pass"
FAIL = "fail"
NA = "n/a"
STATUSES = (PASS, FAIL, NA)

TITLES = {
    "completes": "Completes on all ranks",
    "ddp": "Model trained through DDP",
    "shards": "Shards disjoint and covering",
    "epoch_order": "Order changes between epochs",
    "params": "Parameters equal on all ranks",
    "files": "Each file written by one rank",
    "collectives": "Same collectives on all ranks",
    "probe": "Probe saw the whole run",
    "single": "Plain single-process run",
}

# how each count a check may report in `compared` reads: key -> (one, many)
_NOUNS = {
    "ranks": ("rank", "ranks"),
    "passes": ("pass", "passes"),
    "indices": ("index", "indices"),
    "steps": ("step", "steps"),
    "backwards": ("backward pass", "backward passes"),
    "inputs": ("training input", "training inputs"),
    "checksums": ("checksum", "checksums"),
    "files": ("file", "files"),
    "collectives": ("collective", "collectives"),
    "runs": ("run", "runs"),
    "lines": ("trace line", "trace lines"),
    "patches": ("patch", "patches"),
}


class NothingCompared(ValueError):
    """A check tried to pass without having compared anything: a bug in the check."""


@dataclass
class PlainRun:
    """The plain ``python script.py ARGS`` run of ``--single``."""

    command: str
    returncode: int | None
    timed_out: bool
    duration: float
    stdout: str = ""
    stderr: str = ""
    end_status: str | None = None  # the probe's end record: "ok" once the script reached its end

    @property
    def reached_end(self) -> bool:
        """The script ran to its end (evidence: the probe's end record), whatever the exit code."""
        return self.end_status == "ok"


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
    unreadable: dict = field(default_factory=dict)  # rank -> trace lines that were not JSON
    stacks: dict = field(default_factory=dict)  # rank -> [thread] dumped at the time limit
    term_stacks: dict = field(default_factory=dict)  # rank -> [thread] dumped when torchrun stopped it
    crashes: dict = field(default_factory=dict)  # rank -> fatal-error text
    output: str = ""
    commands: list = field(default_factory=list)
    run_dir: str | None = None
    plain: PlainRun | None = None
    single: bool = False


def fmt_compared(compared: dict) -> str:
    """{"passes": 4, "indices": 256} -> "4 passes, 256 indices"; nothing compared -> "nothing"."""
    parts = []
    for key, n in compared.items():
        if n:
            one, many = _NOUNS.get(key, (key, key))
            parts.append(f"{n} {one if n == 1 else many}")
    return ", ".join(parts) or "nothing"


@dataclass
class CheckResult:
    """One check's verdict. ``compared`` counts what the verdict rests on (ranks, passes, steps,
    checksums, files...): a check never passes with nothing compared."""

    name: str
    title: str
    status: str
    evidence: list = field(default_factory=list)
    data: dict = field(default_factory=dict)
    compared: dict = field(default_factory=dict)

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
            "compared": dict(self.compared),
            "evidence": list(self.evidence),
            "data": self.data,
        }


def result(name: str, status: str, evidence, compared: dict | None = None, **data) -> CheckResult:
    """Build a CheckResult; refuses a pass that rests on nothing compared."""
    if isinstance(evidence, str):
        evidence = [evidence]
    compared = {k: int(v) for k, v in (compared or {}).items()}
    if status == PASS and not any(compared.values()):
        raise NothingCompared(f"{name}: a pass with nothing compared")
    return CheckResult(name, TITLES.get(name, name), status, list(evidence), data, compared)


@dataclass
class VerifyReport:
    checks: list
    meta: dict = field(default_factory=dict)
    ranks: list = field(default_factory=list)
    output: str = ""
    plain: PlainRun | None = None

    @property
    def ok(self) -> bool:
        """No check failed (``n/a`` checks do not count: see :attr:`statuses` for what was judged)."""
        return not any(c.failed for c in self.checks)

    @property
    def failed(self) -> list:
        return [c for c in self.checks if c.failed]

    @property
    def statuses(self) -> dict:
        return {c.name: c.status for c in self.checks}

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
