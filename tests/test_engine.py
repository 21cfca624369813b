"""The file engine: discovery, the worker pool, trimming, atomic writes."""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pytest

from ddpfix import engine
from ddpfix.engine import Options, Task, discover, run_many, run_task, write_atomic
from ddpfix.errors import DdpfixError
from ddpfix.formats import apply_edits

TRAIN = textwrap.dedent(
    """\
    import torch


    def main():
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            opt.step()
            torch.save(model.state_dict(), "x.pt")


    if __name__ == "__main__":
        main()
    """
)


def tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def rel(root: Path, found) -> set[str]:
    return {Path(p).relative_to(root).as_posix() for p in found}


def test_discover_skips_vcs_venvs_and_gitignored(tmp_path):
    tree(
        tmp_path,
        {
            "a.py": "",
            "notes.txt": "",
            "pkg/b.py": "",
            ".git/hooks/c.py": "",
            "venv/pyvenv.cfg": "",
            "venv/lib/d.py": "",
            "env2/conda-meta/history": "",
            "env2/e.py": "",
            "node_modules/f.py": "",
            "__pycache__/g.py": "",
            "build/h.py": "",
            "pkg/gen_i.py": "",
            "pkg/sub/.gitignore": "local_*.py\n",
            "pkg/sub/local_j.py": "",
            "pkg/sub/k.py": "",
            ".gitignore": "build/\ngen_*.py\n",
        },
    )
    assert rel(tmp_path, discover([str(tmp_path)])) == {"a.py", "pkg/b.py", "pkg/sub/k.py"}


def test_discover_skips_virtual_environments_by_name_and_says_why(tmp_path):
    tree(
        tmp_path,
        {
            "train.py": "",
            ".venv/bin/python": "",
            ".venv/lib/python3.11/site-packages/torch/x.py": "",
            "venv/Scripts/python.exe": "",
            "venv/Lib/y.py": "",
            "env/bin/python3": "",
            "env/z.py": "",
            "lib/python3.11/site-packages/pkg/w.py": "",
            "env_data/bin/python": "",  # not a venv name: walked
            "env_data/v.py": "",
            "venv2/u.py": "",  # a venv name needs an interpreter; this is a plain folder
            "tools/env/t.py": "",  # 'env' without an interpreter: a plain folder
        },
    )
    skipped: dict[str, str] = {}
    found = rel(tmp_path, discover([str(tmp_path)], on_skip=lambda p, why: skipped.setdefault(p, why)))
    assert found == {"train.py", "env_data/v.py", "venv2/u.py", "tools/env/t.py"}
    why = {Path(p).relative_to(tmp_path).as_posix(): w for p, w in skipped.items()}
    assert why == {
        ".venv": "virtual environment (bin/python)",
        "venv": "virtual environment (Scripts/python.exe)",
        "env": "virtual environment (bin/python3)",
        "lib/python3.11/site-packages": "installed packages (site-packages)",
    }


def test_discover_named_file_is_taken_as_given_and_missing_path_raises(tmp_path):
    tree(tmp_path, {"script.txt": "x = 1\n"})
    assert list(discover([str(tmp_path / "script.txt"), "-"])) == [str(tmp_path / "script.txt"), "-"]
    with pytest.raises(DdpfixError, match="no such file or directory"):
        list(discover([str(tmp_path / "missing.py")]))


def test_discover_exclude_callback(tmp_path):
    tree(tmp_path, {"a.py": "", "skip/b.py": "", "c_gen.py": ""})
    skipped = []

    def excluded(path: str, is_dir: bool) -> bool:
        return Path(path).name == "skip" or path.endswith("_gen.py")

    found = discover([str(tmp_path), str(tmp_path / "c_gen.py")], excluded, on_skip=lambda p, why: skipped.append(p))
    assert rel(tmp_path, found) == {"a.py"}
    assert {Path(p).name for p in skipped} == {"skip", "c_gen.py"}


def test_pool_and_serial_agree_in_order(tmp_path):
    files = {f"f{i:02d}.py": TRAIN if i % 3 else "import os\n" for i in range(20)}
    files["broken.py"] = "def (:\n"
    tree(tmp_path, files)
    tasks = [Task(str(tmp_path / name), Options(), fix=False, keep="diagnostics") for name in sorted(files)]
    serial = list(run_many(tasks, jobs=1))
    seen = []
    parallel = list(run_many(tasks, jobs=2, on_done=seen.append))
    assert [r.path for r in parallel] == [t.path for t in tasks] == [r.path for r in serial]
    assert len(seen) == len(tasks)
    for a, b in zip(serial, parallel):
        assert a.error == b.error
        assert (a.result and a.result.diagnostics) == (b.result and b.result.diagnostics)
    (err,) = [r for r in parallel if r.error]
    assert "broken.py" in err.error and "syntax error" in err.error


def test_trim_sends_back_only_what_is_needed(tmp_path):
    tree(tmp_path, {"t.py": TRAIN})
    path = str(tmp_path / "t.py")
    full = run_task(Task(path, Options(), keep="all"))
    assert full.result.code != full.result.source and full.original is not None
    diff_only = run_task(Task(path, Options(), keep="diff"))
    assert diff_only.result.diff == full.result.diff and diff_only.result.code == "" and diff_only.original is None
    diags = run_task(Task(path, Options(), fix=False, keep="diagnostics"))
    assert diags.result.diff == "" and [d.code for d in diags.result.diagnostics]


def test_fix_edits_reproduce_each_rule_fix(tmp_path):
    tree(tmp_path, {"t.py": TRAIN})
    res = run_task(Task(str(tmp_path / "t.py"), Options(), fix=False, keep="all", fixes=True))
    assert set(res.fixes) == {d.code for d in res.result.diagnostics if d.fixable}
    from ddpfix import fix_source

    for code, edits in res.fixes.items():
        assert edits, code
        assert apply_edits(TRAIN, edits) == fix_source(TRAIN, select=[code], unsafe_fixes=True).code


def test_default_jobs_is_the_cpu_count():
    assert engine.default_jobs() == len(os.sched_getaffinity(0))


def test_internal_error_is_reported_per_file_and_the_run_goes_on(tmp_path, monkeypatch):
    tree(tmp_path, {"a.py": TRAIN, "b.py": TRAIN})

    def boom(*a, **k):
        raise KeyError("oops")

    monkeypatch.setattr(engine, "fix_source", boom)
    out = list(run_many([Task(str(tmp_path / n), Options()) for n in ("a.py", "b.py")], jobs=1))
    assert all("internal error (KeyError: 'oops'); please report it" in r.error for r in out)


# ------------------------------------------------------------------------------------ writing
def test_write_atomic_keeps_permissions(tmp_path):
    p = tmp_path / "t.py"
    p.write_text("x = 1\n")
    os.chmod(p, 0o754)
    write_atomic(str(p), b"x = 2\n", expected=b"x = 1\n")
    assert p.read_bytes() == b"x = 2\n"
    assert stat.S_IMODE(p.stat().st_mode) == 0o754
    assert not [q for q in tmp_path.iterdir() if q.name.startswith(".ddpfix-")]


def test_write_atomic_refuses_read_only_and_changed_files(tmp_path):
    p = tmp_path / "t.py"
    p.write_text("x = 1\n")
    with pytest.raises(DdpfixError, match="changed on disk since it was read"):
        write_atomic(str(p), b"x = 2\n", expected=b"x = 0\n")
    assert p.read_text() == "x = 1\n"
    os.chmod(p, 0o444)
    with pytest.raises(DdpfixError, match="read-only"):
        write_atomic(str(p), b"x = 2\n")
    assert p.read_text() == "x = 1\n"


def test_write_atomic_through_a_symlink_rewrites_the_target(tmp_path):
    target = tmp_path / "real.py"
    target.write_text("x = 1\n")
    link = tmp_path / "link.py"
    link.symlink_to(target)
    write_atomic(str(link), b"x = 2\n")
    assert link.is_symlink() and target.read_text() == "x = 2\n"


def test_a_worker_crash_is_one_file_error_not_a_hang(tmp_path, monkeypatch):
    """A crash in native code (the parser on pathological input) kills a worker: that file is an
    error, every other file still gets its result, and the run ends."""
    import signal

    names = [f"f{i:02d}.py" for i in range(16)]
    tree(tmp_path, {n: TRAIN for n in names})
    real = engine.fix_source

    def crashing(data, *, path, **kw):
        if path.endswith("f07.py"):
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(data, path=path, **kw)

    monkeypatch.setattr(engine, "fix_source", crashing)
    tasks = [Task(str(tmp_path / n), Options(), fix=False, keep="diagnostics") for n in names]
    out = list(run_many(tasks, jobs=2))
    assert [Path(r.path).name for r in out] == names
    bad = [r for r in out if r.error]
    assert [Path(r.path).name for r in bad] == ["f07.py"]
    assert "the analysis crashed: signal 11" in bad[0].error
    assert all(r.result and r.result.diagnostics for r in out if not r.error)


@pytest.mark.parametrize(
    "source", [TRAIN, TRAIN.encode("utf-8"), "x = 1\n", b"# -*- coding: latin-1 -*-\ns = '\xe9'\n"]
)
def test_one_parse_serves_several_runs(source):
    from ddpfix.api import fix_parsed, fix_source, parse_source

    parsed = parse_source(source, "t.py")
    for kw in ({}, {"fix": False}, {"select": ["DDP001"]}, {"unsafe_fixes": True}):
        again, fresh = fix_parsed(parsed, **kw), fix_source(source, path="t.py", **kw)
        assert (again.code, again.data, again.diff, again.diagnostics) == (
            fresh.code,
            fresh.data,
            fresh.diff,
            fresh.diagnostics,
        )
