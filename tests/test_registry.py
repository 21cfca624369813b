"""The rule registry: every rule that reads plan state runs after the rules that provide it, and each
rule's declared `provides` / `reads` match what its code does with the plan."""

import inspect
import re
from pathlib import Path

import pytest

from ddpfix.transforms import RULES

# What touching each kind of plan state looks like in a rule's source.
WRITES = {
    "wraps": r"plan\.wraps\[",
    "hoisted": r"plan\.hoisted\.append\(|\bguard_site\(",  # (edits.guard_site takes calls out of its guards)
    "cut": r"plan\.cut\[",
    "joins": r"ctx\.joins_at = ",
}
READS = {
    "wraps": r"\b(wrappers|raw_handles)\(",
    "hoisted": r"plan\.hoisted\b(?!\.append)",
    "cut": r"plan\.cut\b(?!\[)|\bshard_view\(",  # sharded_totals.shard_view reads the loops DDP209 cuts
    "joins": r"ctx\.joins_at\b(?! = )",
}


def _source(rule) -> str:
    return inspect.getsource(inspect.getmodule(type(rule)))


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_declarations_match_the_code(rule):
    source = _source(rule)
    written = {kind for kind, pat in WRITES.items() if re.search(pat, source)}
    read = {kind for kind, pat in READS.items() if re.search(pat, source)}
    assert set(rule.provides) == written, f"{rule.code} writes {written} but declares provides={set(rule.provides)}"
    assert set(rule.reads) == read, f"{rule.code} reads {read} but declares reads={set(rule.reads)}"


def _after_plan_only(rule) -> set[str]:
    """Plan state `rule` reads only in `after_plan`, which runs once every rule's `run` has planned:
    its providers may come later in the order."""
    method = type(rule).__dict__.get("after_plan")
    if method is None:
        return set()
    inner = inspect.getsource(method)
    outer = _source(rule).replace(inner, "")
    return {kind for kind, pat in READS.items() if re.search(pat, inner) and not re.search(pat, outer)}


def order_violations(rules) -> list[str]:
    """Every rule reading plan state that no earlier rule in `rules` provides."""
    position = {r.code: i for i, r in enumerate(rules)}
    out = []
    for reader in rules:
        for kind in set(reader.reads) - _after_plan_only(reader):
            providers = [r for r in rules if kind in r.provides]
            if not providers:
                out.append(f"{reader.code} reads {kind!r}, which no rule provides")
            late = [p.code for p in providers if position[p.code] > position[reader.code]]
            if late:
                out.append(f"{reader.code} reads {kind!r} before {late} provide it")
    return out


def test_providers_run_before_readers():
    assert order_violations(RULES) == []


def test_a_reader_moved_before_its_provider_is_caught():
    reader = next(r for r in RULES if "wraps" in r.reads)
    reordered = [reader, *[r for r in RULES if r is not reader]]
    assert any(v.startswith(reader.code) for v in order_violations(reordered))


def test_rule_files_are_named_after_their_rule():
    for rule in RULES:
        name = Path(inspect.getfile(type(rule))).name
        assert name == f"{rule.code.lower()}_{rule.name.replace('-', '_')}.py", name


def test_a_read_in_after_plan_needs_no_earlier_provider():
    reader = next(r for r in RULES if r.code == "DDP103")
    assert "hoisted" in _after_plan_only(reader)  # DDP406, later in the order, takes calls out of its guards
    assert "wraps" not in _after_plan_only(reader)  # read in run() too: DDP301 must come first
