"""`ddpfix rules`: a rule by code, name or prefix; the short form and the whole page."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ddpfix.cli import app
from ddpfix.docs import rule_page
from ddpfix.formats import rule_by_code


def invoke(*args):
    return CliRunner().invoke(app, list(args))


def test_a_code_or_a_name_prints_the_short_form():
    rule = rule_by_code()["DDP201"]
    for query in ("DDP201", "ddp201", "missing-distributed-sampler"):
        result = invoke("rules", query)
        assert result.exit_code == 0, result.output
        out = result.stdout
        assert out.startswith(f"DDP201 missing-distributed-sampler: {rule.message}\n")
        assert "Fix: safe (`ddpfix apply`)." in out
        assert "```python\ntrain_loader = DataLoader(" in out and "\nbecomes\n```python\n" in out
        assert out.rstrip().endswith("ddpfix rules DDP201 --long")
        assert "## Why" not in out and len(out) < len(rule_page(rule)) / 2


def test_long_prints_the_whole_page():
    for code in ("DDP201", "DDP306", "DDP409"):
        out = invoke("rules", code, "--long").stdout
        assert out == rule_page(rule_by_code()[code]) + "\n"


def test_fix_safety_is_in_the_short_form():
    assert "Fix: unsafe (`ddpfix apply --unsafe-fixes`)." in invoke("rules", "DDP306").stdout
    assert "Fix: none (fix by hand)." in invoke("rules", "DDP104").stdout
    assert "Fix: safe (`ddpfix apply`)." in invoke("rules", "DDP210").stdout


def test_a_prefix_lists_its_rules():
    result = invoke("rules", "DDP2")
    assert result.exit_code == 0
    codes = [line.split()[0] for line in result.stdout.splitlines()]
    assert codes == sorted(c for c in rule_by_code() if c.startswith("DDP2")) and len(codes) > 3
    assert [line.split()[0] for line in invoke("rules", "ddp42").stdout.splitlines()] == ["DDP420", "DDP421"]


def test_unknown_rule_is_one_line_and_exit_2():
    for query in ("DDP999", "DDP7", "no-such-rule", "sampler"):
        result = invoke("rules", query)
        assert result.exit_code == 2, query
        assert result.stdout == "" and result.stderr.count("\n") == 1
        assert result.stderr.startswith(f"ddpfix: error: unknown rule: {query} ")


def test_json_format():
    listed = json.loads(invoke("rules", "--format", "json").stdout)
    assert {r["code"] for r in listed} == set(rule_by_code())
    assert set(listed[0]) == {"code", "name", "fix", "message"}
    one = json.loads(invoke("rules", "missing-distributed-sampler", "--format", "json").stdout)
    assert one["code"] == "DDP201" and one["fix"] == "safe" and "## What" in one["docs"]
