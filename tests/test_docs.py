"""docs/rules.md is generated from the rules' own docs, and every rule documents what, why, example and fix safety."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ddpfix.cli import app
from ddpfix.docs import DEFAULT, SECTIONS, main, missing_sections, render
from ddpfix.formats import all_rules


def test_committed_rules_page_is_up_to_date():
    assert DEFAULT.read_text(encoding="utf-8") == render(), "docs/rules.md is stale: run `python -m ddpfix.docs`"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rule_has_every_section(rule):
    assert not missing_sections(rule), f"{rule.code} docs lack: {missing_sections(rule)}"
    assert rule.name and rule.message and rule.fix in ("safe", "unsafe", "none")
    assert "```python" in rule.docs  # an example


def test_page_lists_every_rule_once():
    page = render()
    for rule in all_rules():
        assert page.count(f"\n## {rule.code} {rule.name}\n") == 1
        assert f"| [{rule.code}](#" in page
    for section in SECTIONS:
        assert f"### {section}" in page


def test_check_mode(tmp_path):
    stale = tmp_path / "rules.md"
    stale.write_text("old\n")
    assert main(["--check", str(stale)]) == 1
    assert main([str(stale)]) == 0 and main(["--check", str(stale)]) == 0


def test_cli_rules_page_matches_the_docs():
    rule = all_rules()[1]
    out = CliRunner().invoke(app, ["rules", rule.code, "--long"]).stdout
    assert rule.docs.strip() in out
