"""Every rule's own `EXAMPLES` (at the end of its module) hold: what it fixes, reports and leaves alone."""

from __future__ import annotations

import libcst as cst
import pytest
from typer.testing import CliRunner

from ddpfix import fix_source
from ddpfix.analysis import ScriptFacts
from ddpfix.cli import app
from ddpfix.diagnostic import NONE, UNSAFE
from ddpfix.docs import render_rule
from ddpfix.examples import CLEAN, FIXES, REPORTS, diff_lines, examples_of, required_kinds
from ddpfix.examples import render as render_examples
from ddpfix.rule import Rule
from ddpfix.transforms import RULES

CASES = [
    pytest.param(rule, ex, id=f"{rule.code}-{i}-{ex.kind}") for rule in RULES for i, ex in enumerate(examples_of(rule))
]


def run(rule, source: str):
    """The rule alone, fixing what it may (unsafe fixes too for an unsafe rule): new code and its findings."""
    result = fix_source(source, select=[rule.code], unsafe_fixes=rule.fix == UNSAFE)
    return result.code, [d for d in result.diagnostics if d.code == rule.code]


@pytest.mark.parametrize("rule, ex", CASES)
def test_example(rule, ex):
    code, found = run(rule, ex.source)
    if ex.kind == FIXES:
        assert ex.after != ex.source, "a fix example must change the script"
        assert any(d.applied for d in found), f"{rule.code} fixed nothing: {found}"
        assert code == ex.after
        again, left = run(rule, ex.after)
        # nothing of its own is left, fixable or not: a rule never reports what its own fix wrote (the
        # contract would call such an output incomplete)
        assert left == [], f"the fixed script still has findings of {rule.code}: {[d.message for d in left]}"
        assert again == ex.after, "fixing the fixed script changed it again"
    elif ex.kind == REPORTS:
        assert found, f"{rule.code} reported nothing"
        if ex.message is not None:
            assert ex.message in [d.message for d in found]
        assert not any(d.applied for d in found), f"a fix was applied: {found}"
        assert code == ex.source, "reported without a fix, yet the script changed"
    else:
        assert ex.kind == CLEAN
        assert found == []
        assert code == ex.source


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_every_rule_carries_its_examples(rule):
    kinds = {ex.kind for ex in examples_of(rule)}
    missing = required_kinds(rule) - kinds
    assert not missing, f"{rule.code} ({rule.fix} fix) has no {' / '.join(sorted(missing))} example"
    for ex in examples_of(rule):  # the caption docs/rules.md shows above the example
        assert ex.note and "\n" not in ex.note, f"{rule.code}: every example needs a one-line note"


def test_examples_are_whole_training_scripts():
    """A rule only runs on a script that imports torch and trains: a fragment would be vacuously clean."""
    for rule in RULES:
        for ex in examples_of(rule):
            assert "import torch" in ex.source and ex.source.endswith("\n"), (rule.code, ex.source[:60])
            facts = ScriptFacts(cst.parse_module(ex.source), ex.source)
            # a script a framework distributes is not one ddpfix converts; DDP008 is about exactly those
            framework = rule.code == "DDP008" and facts.names.other_launcher is not None
            assert facts.is_training_script() or framework, (rule.code, ex.source[:60])


def test_a_rule_without_examples_fails_the_check():
    class Bare(Rule):
        code = "DDP999"
        name = "bare"
        message = "nothing"
        fix = NONE

    assert examples_of(Bare()) == ()
    assert required_kinds(Bare()) - {ex.kind for ex in examples_of(Bare())} == {REPORTS, CLEAN}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_docs_and_rule_page_show_the_examples(rule):
    section = render_rule(rule)
    assert "\n### Examples (tested)\n" in section
    for ex in examples_of(rule):
        assert ex.note in section
        shown = "\n".join(diff_lines(ex.source, ex.after)) if ex.kind == FIXES else ex.source.rstrip()
        assert shown in section
    page = CliRunner().invoke(app, ["rules", rule.code, "--long"]).stdout
    assert "\n## Examples (tested)\n" in page and render_examples(rule) in page
