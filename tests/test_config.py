"""`[tool.ddpfix]`: discovery of the nearest pyproject.toml, validation, and CLI precedence."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ddpfix.cli import app
from ddpfix.config import Config, Overrides, Resolver, effective, from_table, is_excluded, load
from ddpfix.errors import DdpfixError

TRAIN = textwrap.dedent(
    """\
    import torch


    def main():
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            opt.step()
            print(epoch)
            torch.save(model.state_dict(), "x.pt")


    if __name__ == "__main__":
        main()
    """
)


def project(tmp_path: Path, table: str, files=("train.py",)) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.ddpfix]\n" + textwrap.dedent(table))
    for f in files:
        p = tmp_path / f
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(TRAIN)
    return tmp_path


def check(*args, cwd: Path, monkeypatch):
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(app, ["check", *args])


def found(result) -> set[str]:
    return {line.split()[1] for line in result.stdout.splitlines() if ": DDP" in line}


def test_load_all_keys(tmp_path):
    project(
        tmp_path,
        """
        select = ["DDP4", "DDP001"]
        ignore = ["ddp406"]
        unsafe-fixes = true
        exclude = ["legacy/"]
        per-file-ignores = { "tests/*" = ["DDP401"] }
        """,
    )
    cfg = load(tmp_path / "pyproject.toml")
    assert cfg.select == ["DDP4", "DDP001"] and cfg.ignore == ["DDP406"] and cfg.unsafe_fixes is True
    assert cfg.excluded(str(tmp_path / "legacy" / "a.py"))
    assert cfg.ignores_for(str(tmp_path / "tests" / "t.py")) == ["DDP401"]
    assert cfg.ignores_for(str(tmp_path / "train.py")) == []


@pytest.mark.parametrize(
    "table,message",
    [
        ({"selct": ["DDP4"]}, "unknown key 'selct' (did you mean 'select'?)"),
        ({"unsafe_fixes": True}, "unknown key 'unsafe_fixes' (did you mean 'unsafe-fixes'?)"),
        ({"colour": True}, "unknown key 'colour' (known: select, ignore"),
        ({"select": ["DDP999"]}, "select: unknown rule code or prefix: DDP999"),
        ({"ignore": ["DDP40l"]}, "unknown rule code or prefix: DDP40L"),
        ({"select": "DDP4"}, None),  # a single string is accepted
        ({"select": [4]}, "expected a list of strings"),
        ({"unsafe-fixes": "yes"}, "unsafe-fixes: expected true or false"),
        ({"per-file-ignores": {"tests/*": ["NOPE"]}}, "per-file-ignores 'tests/*': unknown rule code or prefix: NOPE"),
        ({"per-file-ignores": ["x"]}, "per-file-ignores: expected a table"),
    ],
)
def test_validation(table, message):
    if message is None:
        assert from_table(table).select == ["DDP4"]
        return
    with pytest.raises(DdpfixError) as exc:
        from_table(table)
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_unknown_key_is_a_one_line_error_exit_2(tmp_path, monkeypatch):
    project(tmp_path, 'selcet = ["DDP4"]\n')
    result = check("train.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "unknown key 'selcet'" in result.stderr and "pyproject.toml" in result.stderr


def test_unknown_rule_code_in_config_exit_2(tmp_path, monkeypatch):
    project(tmp_path, 'ignore = ["DDP999"]\n')
    result = check("train.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert result.exit_code == 2 and "unknown rule code or prefix: DDP999" in result.stderr


def test_invalid_toml(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.ddpfix]\nselect = [\n")
    (tmp_path / "train.py").write_text(TRAIN)
    result = check("train.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert result.exit_code == 2 and "invalid TOML" in result.stderr


def test_config_select_and_ignore_apply(tmp_path, monkeypatch):
    project(tmp_path, 'select = ["DDP4"]\nignore = ["DDP406"]\n')
    result = check("train.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert found(result) == {"DDP401"}


def test_cli_flags_override_config(tmp_path, monkeypatch):
    project(tmp_path, 'select = ["DDP4"]\nignore = ["DDP406"]\n')
    # --select replaces the config's select; the config's ignore still applies
    result = check("train.py", "--select", "DDP001,DDP406", cwd=tmp_path, monkeypatch=monkeypatch)
    assert found(result) == {"DDP001"}
    # --ignore replaces the config's ignore
    result = check("train.py", "--ignore", "DDP401", cwd=tmp_path, monkeypatch=monkeypatch)
    assert found(result) == {"DDP406"}
    # --isolated ignores the file entirely
    result = check("train.py", "--isolated", cwd=tmp_path, monkeypatch=monkeypatch)
    assert {"DDP001", "DDP301", "DDP401", "DDP406"} <= found(result)


def test_unsafe_fixes_from_config_and_cli_override(tmp_path, monkeypatch):
    src = TRAIN.replace("torch.nn.Linear(2, 2)", "torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))")
    project(tmp_path, "unsafe-fixes = true\n")
    (tmp_path / "train.py").write_text(src)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["diff", "train.py"])
    assert result.exit_code == 1 and "SyncBatchNorm" in result.stdout
    result = CliRunner().invoke(app, ["diff", "--no-unsafe-fixes", "train.py"])
    assert result.exit_code == 1 and "SyncBatchNorm" not in result.stdout


def test_per_file_ignores(tmp_path, monkeypatch):
    project(
        tmp_path,
        'per-file-ignores = { "scripts/*" = ["DDP4"], "legacy_*.py" = ["DDP001"] }\n',
        files=("train.py", "scripts/a.py", "legacy_b.py"),
    )
    result = check(".", cwd=tmp_path, monkeypatch=monkeypatch)
    by_file: dict[str, set[str]] = {}
    for line in result.stdout.splitlines():
        path, _, _, code = line.split(":", 3)
        by_file.setdefault(Path(path).name, set()).add(code.split()[0])
    assert "DDP401" in by_file["train.py"] and "DDP001" in by_file["train.py"]
    assert not by_file["a.py"] & {"DDP401", "DDP406"}
    assert "DDP001" not in by_file["legacy_b.py"]
    # the CLI --ignore replaces `ignore`, but per-file-ignores still add to it
    result = check("scripts/a.py", "--ignore", "DDP301", cwd=tmp_path, monkeypatch=monkeypatch)
    assert not found(result) & {"DDP401", "DDP406", "DDP301"}


def test_exclude_applies_to_walked_and_named_files(tmp_path, monkeypatch):
    project(
        tmp_path, 'exclude = ["legacy/", "gen_*.py"]\n', files=("train.py", "legacy/old.py", "gen_x.py", "sub/gen_y.py")
    )
    result = check(".", cwd=tmp_path, monkeypatch=monkeypatch)
    paths = {line.split(":")[0] for line in result.stdout.splitlines()}
    assert paths == {"train.py"} or paths == {"./train.py"}
    result = check("legacy/old.py", "gen_x.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert result.exit_code == 0 and result.stdout == ""
    result = check("legacy/old.py", "-v", cwd=tmp_path, monkeypatch=monkeypatch)
    assert "skipped: legacy/old.py (excluded by the config or --exclude)" in result.stderr
    # --exclude replaces the config's patterns
    result = check(".", "--exclude", "train.py", cwd=tmp_path, monkeypatch=monkeypatch)
    paths = {Path(line.split(":")[0]).as_posix().lstrip("./") for line in result.stdout.splitlines()}
    assert paths == {"legacy/old.py", "gen_x.py", "sub/gen_y.py"}


def test_nearest_pyproject_with_a_ddpfix_table_wins(tmp_path):
    project(tmp_path, 'select = ["DDP4"]\n')
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[project]\nname = 'inner'\n")  # no [tool.ddpfix]: skipped
    deeper = sub / "deep"
    deeper.mkdir()
    (deeper / "pyproject.toml").write_text('[tool.ddpfix]\nselect = ["DDP001"]\n')
    r = Resolver()
    assert r.for_path(str(sub / "a.py")).select == ["DDP4"]
    assert r.for_path(str(deeper / "b.py")).select == ["DDP001"]
    assert r.for_path(str(tmp_path / "c.py")).path == tmp_path / "pyproject.toml"
    assert Resolver(isolated=True).for_path(str(deeper / "b.py")).select is None
    assert Resolver(explicit=str(tmp_path / "pyproject.toml")).for_path(str(deeper / "b.py")).select == ["DDP4"]


def test_explicit_config_flag(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "ddpfix.toml").write_text('select = ["DDP406"]\n')
    result = check("--config", "ddpfix.toml", "train.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert found(result) == {"DDP406"}
    result = check("--config", "missing.toml", "train.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert result.exit_code == 2 and "cannot read config" in result.stderr


def test_effective_options():
    cfg = Config(select=["DDP4"], ignore=["DDP406"], unsafe_fixes=True, per_file_ignores={"t_*.py": ["DDP401"]})
    opts = effective(cfg, Overrides(), "t_a.py")
    assert opts.select == ["DDP4"] and opts.ignore == ["DDP406", "DDP401"] and opts.unsafe_fixes
    opts = effective(cfg, Overrides(select=["DDP0"], ignore=[], unsafe_fixes=False), "b.py")
    assert opts.select == ["DDP0"] and opts.ignore is None and not opts.unsafe_fixes
    assert is_excluded(Config(exclude=["x/"]), Overrides(), "x/a.py")
    assert not is_excluded(Config(exclude=["x/"]), Overrides(exclude=[]), "x/a.py")


def test_stdin_uses_the_config_of_the_working_directory(tmp_path, monkeypatch):
    project(tmp_path, 'select = ["DDP406"]\nper-file-ignores = { "quiet.py" = ["DDP406"] }\n', files=())
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["check", "-"], input=TRAIN)
    assert found(result) == {"DDP406"}
    result = CliRunner().invoke(app, ["check", "-", "--stdin-filename", "quiet.py"], input=TRAIN)
    assert result.exit_code == 0 and found(result) == set()
