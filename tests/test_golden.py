"""Golden cases: tests/golden/<case>/input.py -> expected.py + diagnostics.txt, with the invariants
every rewrite must keep (re-parses, idempotent, checks clean, comments/encoding/line endings kept)."""

from __future__ import annotations

import ast
import difflib
import functools
import io
import json
import shutil
import tokenize
from pathlib import Path

import libcst as cst
import pytest

from ddpfix import check_source, fix_source
from ddpfix.contract import judged as judged_by_contract

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "input.py").exists())


FIX_OPTIONS = ("unsafe_fixes", "select", "ignore")  # options.json may also hold runtime flags ("runs", "single")


def _options(case: str) -> dict:
    opts = GOLDEN / case / "options.json"
    data = json.loads(opts.read_text()) if opts.exists() else {}
    return {k: v for k, v in data.items() if k in FIX_OPTIONS}


def _diag_lines(diags) -> list[str]:
    return [f"{d.line}:{d.col} {d.code} {d.fix}{' applied' if d.applied else ''}" for d in diags]


def _comments(data: bytes) -> list[str]:
    return [t.string for t in tokenize.tokenize(io.BytesIO(data).readline) if t.type == tokenize.COMMENT]


def test_enough_cases():
    assert len(CASES) >= 15


@pytest.fixture(params=CASES)
def case(request):
    d = GOLDEN / request.param
    return request.param, (d / "input.py").read_bytes(), (d / "expected.py").read_bytes(), _options(request.param)


@functools.cache
def _fixed(name: str, src: bytes):
    """One run per case, shared by the tests that look at it (the case's folder holds any local modules
    the script imports)."""
    return fix_source(src, path=str(GOLDEN / name / "input.py"), cross_file=True, **_options(name))


def _modules_expected(name: str) -> dict[str, bytes]:
    """The script's own modules as the fix must leave them: `expected/<path>` beside expected.py, by
    their path relative to the case's folder (none: the fix edits no other file)."""
    folder = GOLDEN / name / "expected"
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.py"))}


@pytest.fixture
def output_path(case, tmp_path) -> str:
    """Where the output is analysed as the fix leaves the project: expected.py in the case's folder,
    or, for a case whose fix edits modules, in a copy of the folder holding the modules it expects."""
    name = case[0]
    if not (GOLDEN / name / "expected").is_dir():
        return str(GOLDEN / name / "expected.py")
    tree = tmp_path / name
    shutil.copytree(GOLDEN / name, tree, ignore=shutil.ignore_patterns("expected", "__pycache__"))
    for rel, data in _modules_expected(name).items():
        (tree / rel).write_bytes(data)
    return str(tree / "expected.py")


def test_output_matches_expected(case):
    name, src, expected, opts = case
    result = _fixed(name, src)
    assert result.data == expected, f"{name}: output differs from expected.py\n{result.diff}"


def test_modules_match_expected(case):
    """The modules the fix edits are exactly those under expected/, byte for byte; the others stay."""
    name, src, _, _ = case
    got = {Path(p).relative_to(GOLDEN / name).as_posix(): c.data for p, c in _fixed(name, src).others.items()}
    assert got == _modules_expected(name)


def test_diagnostics_match(case):
    name, src, _, opts = case
    result = _fixed(name, src)
    want = (GOLDEN / name / "diagnostics.txt").read_text().splitlines()
    assert _diag_lines(result.diagnostics) == want


def test_incomplete_matches(case):
    """How the output breaks the DDP contract: `incomplete.txt` (`line CODE invariant`, lines of the
    input; absent when the output keeps the contract)."""
    name, src, _, _ = case
    listed = GOLDEN / name / "incomplete.txt"
    want = listed.read_text().splitlines() if listed.exists() else []
    assert [f"{b.line} {b.code} {b.invariant.number}" for b in _fixed(name, src).incomplete] == want


def test_contract_is_what_check_says_on_the_output(case, output_path):
    """The contract and `check` are one analysis: every finding of `check` on expected.py that breaks an
    invariant is an incomplete line of the rewrite, at the same place, and nothing else is."""
    name, src, expected, _ = case
    left = check_source(expected, path=output_path, cross_file=True)
    judged = sorted((d.code, d.line) for d in left if judged_by_contract(d.code) is not None)
    assert sorted((b.code, b.output_line) for b in _fixed(name, src).incomplete) == judged


def test_output_reparses(case):
    _, _, expected, _ = case
    cst.parse_module(expected)
    ast.parse(expected)


def test_idempotent(case, output_path):
    name, _, expected, opts = case
    again = fix_source(expected, path=output_path, cross_file=True, **opts)  # beside the case's modules, as fixed
    assert again.data == expected, again.diff
    assert again.others == {}, again.full_diff


def test_output_checks_clean(case, output_path):
    """Nothing fixable remains: only findings without a fix, or unsafe ones not asked for."""
    name, _, expected, opts = case
    left = check_source(expected, path=output_path, cross_file=True)
    fixable = [d for d in left if d.fix == "safe" or (d.fix == "unsafe" and opts.get("unsafe_fixes"))]
    assert fixable == [], [d.format() for d in fixable]


def test_comments_survive(case):
    _, src, expected, _ = case
    out_comments = _comments(expected)
    for comment in _comments(src):
        assert comment in out_comments


def test_original_lines_survive(case):
    """Every input line that the fix did not rewrite is still there, byte for byte, in order."""
    _, src, expected, _ = case
    old_lines, out_lines = src.splitlines(keepends=True), expected.splitlines(keepends=True)
    # the longest run of lines in order (a greedy scan loses everything after a line that moved down)
    matcher = difflib.SequenceMatcher(None, old_lines, out_lines, autojunk=False)
    kept = sum(block.size for block in matcher.get_matching_blocks())
    assert kept >= len(old_lines) * 0.7


def test_crlf_kept():
    expected = (GOLDEN / "crlf" / "expected.py").read_bytes()
    lines = expected.split(b"\n")[:-1]
    assert lines and all(line.endswith(b"\r") for line in lines)
    assert b'RANK = int(os.environ.get("RANK", 0))\r\n' in expected


def test_latin1_kept():
    src = (GOLDEN / "latin1" / "input.py").read_bytes()
    expected = (GOLDEN / "latin1" / "expected.py").read_bytes()
    assert expected.startswith(b"# -*- coding: latin-1 -*-\n")
    assert "r\xe9sultat".encode("latin-1") in expected
    assert b"\xc3" not in expected  # nothing re-encoded as UTF-8
    for line in src.splitlines(keepends=True):
        if b"\xe9" in line and b"print" not in line:
            assert line in expected


def test_unchanged_cases_have_no_findings():
    for name in ("already_ddp", "no_torch"):
        src = (GOLDEN / name / "input.py").read_bytes()
        result = fix_source(src)
        assert not result.changed and result.diagnostics == [], name


def test_shared_example_matches_contract():
    """With --unsafe-fixes the design example comes out as the contract's train_after.py."""
    src = (GOLDEN / "example" / "input.py").read_bytes()
    contract = Path(__file__).parents[2] / "shared" / "design" / "examples" / "train_after.py"
    if not contract.exists():
        pytest.skip("shared design examples not present")
    assert fix_source(src, unsafe_fixes=True).data == contract.read_bytes()


def test_check_reports_what_fix_reports(case):
    """`check` (no edits planned) and `diff`/`apply` agree on every finding and its fix level."""
    name, src, _, opts = case
    fixed = _fixed(name, src)
    path = str(GOLDEN / name / "input.py")  # a case may bring the script's own modules beside it
    checked = check_source(
        src, path=path, cross_file=True, **{k: v for k, v in opts.items() if k in ("select", "ignore")}
    )
    assert [(d.code, d.line, d.col, d.fix) for d in checked] == [
        (d.code, d.line, d.col, d.fix) for d in fixed.diagnostics
    ]
