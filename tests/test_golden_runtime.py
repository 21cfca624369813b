"""Every golden ``expected.py`` runs, both ways, and `ddpfix verify` judges it as its options.json says.

For each ``tests/golden/<case>/expected.py`` present at collection time:

1. ``python expected.py ARGS`` exits 0 (a plain single process), and prints what ``python input.py
   ARGS`` prints when the input runs (both in their own temporary working directory, so the files
   they write do not collide); skipped for ``"runs": false`` and ``"single": false``;
2. ``ddpfix verify expected.py --nproc 2 -- ARGS`` gives every check exactly the status declared in
   the case's ``options.json`` under ``"checks"``: a ``pass`` that turned ``n/a`` fails the test as
   surely as a ``fail``. Goldens with ``"runs": false`` keep deliberate defects: they must fail
   exactly the checks their defects break. Scripts that import nothing from torch only need to run.

The format of ``options.json`` is described in ``tests/golden/README.md``; a fast test here holds
every golden to it, so that a new golden without ``"checks"`` is caught before any slow run.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from teardown import run_plain, verify_with_reruns

from ddpfix.verify import verify_script
from ddpfix.verify.checks import NAMES, STATUSES, PlainRun
from ddpfix.verify.launcher import run_plain as run_plain_once

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = sorted(p.parent.name for p in GOLDEN.glob("*/expected.py"))
PLAIN_TIMEOUT = 300
VERIFY_TIMEOUT = 300


def _cases():
    if not CASES:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no golden cases in tests/golden"))]
    return CASES


def _options(case_dir: Path) -> dict:
    p = case_dir / "options.json"
    return json.loads(p.read_text()) if p.exists() else {}


def _args(case_dir: Path) -> list[str]:
    p = case_dir / "args.txt"
    if not p.exists():
        return []
    return [line for line in p.read_text().splitlines() if line.strip()]


def _uses_torch(path: Path) -> bool:
    src = path.read_bytes().decode("utf-8", "replace")
    return re.search(r"^\s*(import\s+torch|from\s+torch[\s.])", src, re.M) is not None


def verified(case_dir: Path, opts: dict) -> bool:
    """Whether `ddpfix verify` runs this golden (and so whether it must declare "checks")."""
    return opts.get("verify", True) is not False and _uses_torch(case_dir / "expected.py")


def declaration_problems(case: str, opts: dict) -> list[str]:
    """What is wrong with a golden's "checks" declaration; [] when it is complete."""
    where = f"tests/golden/{case}/options.json"
    template = json.dumps({n: "pass" for n in NAMES})
    declared = opts.get("checks")
    if declared is None:
        return [
            f'{where}: declare "checks", the status (one of {", ".join(STATUSES)}) `ddpfix verify expected.py '
            f"--nproc 2` must give every check, e.g. {template}; see tests/golden/README.md"
        ]
    if not isinstance(declared, dict):
        return [f'{where}: "checks" must map each check name to a status, e.g. {template}']
    problems = []
    missing = [n for n in NAMES if n not in declared]
    unknown = sorted(set(declared) - set(NAMES))
    bad = sorted(n for n, s in declared.items() if s not in STATUSES)
    if missing:
        problems.append(f'{where}: "checks" lacks {", ".join(missing)} (every check needs a status)')
    if unknown:
        problems.append(f'{where}: "checks" names unknown checks {", ".join(unknown)} (known: {", ".join(NAMES)})')
    if bad:
        problems.append(f'{where}: "checks" has statuses other than {", ".join(STATUSES)} for {", ".join(bad)}')
    fails = [n for n, s in declared.items() if s == "fail"]
    if opts.get("runs", True) is False and not fails:
        problems.append(f'{where}: "runs": false keeps deliberate defects, so some check must be declared "fail"')
    if opts.get("runs", True) is not False and fails:
        problems.append(
            f'{where}: declares {", ".join(fails)} "fail", but a golden that runs must be correct DDP '
            '(set "runs": false for a golden that keeps defects)'
        )
    return problems


def _plain(script: Path, args: list[str], cwd: Path) -> PlainRun:
    """``python script ARGS`` in ``cwd``, through verify's plain run: its probe's end record says whether
    the script reached its end (the only ground for a rerun after a crash at exit, see teardown.py)."""
    cwd.mkdir(parents=True, exist_ok=True)
    return run_plain_once(str(script), args, timeout=PLAIN_TIMEOUT, cwd=str(cwd))


def mismatches(report, declared: dict) -> list[str]:
    """One line per check whose status differs from the declared one, with its evidence."""
    out = []
    for c in report.checks:
        want = declared.get(c.name)
        if c.status != want:
            out.append(f"{c.name}: declared {want}, got {c.status}: {' / '.join(c.evidence)}")
    return out


def expected_tree(case_dir: Path, tree: Path) -> Path:
    """The folder `expected.py` runs in: the case's own folder, or, for a case whose fix also edits the
    script's modules (`expected/<path>`), a copy of it holding those modules as the fix leaves them."""
    if not (case_dir / "expected").is_dir():
        return case_dir
    shutil.copytree(case_dir, tree, ignore=shutil.ignore_patterns("expected", "__pycache__"))
    for module in (case_dir / "expected").rglob("*.py"):
        (tree / module.relative_to(case_dir / "expected")).write_bytes(module.read_bytes())
    return tree


@pytest.mark.parametrize("case", _cases())
def test_golden_declares_every_check(case):
    """Fast: every golden that verify runs declares the status of every check (see tests/golden/README.md)."""
    case_dir = GOLDEN / case
    opts = _options(case_dir)
    if not verified(case_dir, opts):
        assert "checks" not in opts, f'tests/golden/{case}/options.json: "checks" declared, but verify does not run it'
        return
    problems = declaration_problems(case, opts)
    assert not problems, "\n".join(problems)


def test_declaration_problems_are_explained():
    names = {n: "pass" for n in NAMES}
    assert declaration_problems("x", {"checks": names}) == []
    (missing,) = declaration_problems("x", {})
    assert missing.startswith('tests/golden/x/options.json: declare "checks"') and '"probe": "pass"' in missing
    partial = {k: v for k, v in names.items() if k != "probe"} | {"speed": "pass", "ddp": "ok"}
    assert declaration_problems("x", {"checks": partial}) == [
        'tests/golden/x/options.json: "checks" lacks probe (every check needs a status)',
        'tests/golden/x/options.json: "checks" names unknown checks speed (known: ' + ", ".join(NAMES) + ")",
        'tests/golden/x/options.json: "checks" has statuses other than pass, fail, n/a for ddp',
    ]
    (no_defect,) = declaration_problems("x", {"runs": False, "checks": names})
    assert "some check must be declared" in no_defect
    (hidden,) = declaration_problems("x", {"checks": names | {"files": "fail"}})
    assert "a golden that runs must be correct DDP" in hidden


@pytest.mark.slow
@pytest.mark.timeout(3 * PLAIN_TIMEOUT + 2 * VERIFY_TIMEOUT + 120)
@pytest.mark.parametrize("case", _cases())
def test_golden_expected_runs(case, tmp_path):
    case_dir = GOLDEN / case
    expected = expected_tree(case_dir, tmp_path / "tree") / "expected.py"
    opts = _options(case_dir)
    args = _args(case_dir)

    if opts.get("runs", True) is not False and opts.get("single", True) is not False:
        got = run_plain(lambda cwd: _plain(expected, args, cwd), tmp_path / "expected", f"golden {case}")
        assert got.returncode == 0, got.stderr[-4000:]
        source = case_dir / "input.py"
        if source.exists() and opts.get("compare_stdout", True) is not False:
            ref = run_plain(lambda cwd: _plain(source, args, cwd), tmp_path / "input", f"golden {case} input")
            if ref.returncode == 0:  # an input that cannot run on this machine has nothing to compare
                assert got.stdout == ref.stdout

    if not verified(case_dir, opts):
        return
    problems = declaration_problems(case, opts)
    runs = verify_with_reruns(
        lambda cwd: verify_script(expected, args, nproc=2, timeout=VERIFY_TIMEOUT, cwd=cwd),
        tmp_path / "verify",
        f"golden {case}",
    )
    report = runs.last
    got = json.dumps(report.statuses)
    assert not problems, "\n".join(problems) + f"\nthis run gave: {got}"
    wrong = mismatches(report, opts["checks"])
    assert not wrong, "\n".join(wrong + [f"this run gave: {got}", runs.describe(), report.output[-3000:]])
