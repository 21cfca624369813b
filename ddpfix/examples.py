"""Examples a rule carries at the end of its own module, as `EXAMPLES = (...)`.

Each example is a whole small training script (the rules only run on scripts that import torch and
train), written as an indented triple-quoted string and dedented here:

- `fixes(before, after)`: the rule reports `before`, and fixing it (with `--unsafe-fixes` for an
  unsafe rule, with only this rule selected) gives exactly `after`, which it then leaves alone;
- `reports(source, message=None)`: the rule reports `source` (with `message`, when given) and
  applies no fix of it;
- `clean(source)`: the rule has nothing to say about `source`.

tests/test_rule_examples.py runs every example of every rule, and `python -m ddpfix.docs` renders
them into docs/rules.md, so the examples a reader sees are the ones the rule passes.
"""

from __future__ import annotations

import difflib
import sys
import textwrap
from dataclasses import dataclass

from .diagnostic import NONE
from .rule import Rule

FIXES = "fixes"
REPORTS = "reports"
CLEAN = "clean"


@dataclass(frozen=True)
class Example:
    kind: str  # FIXES | REPORTS | CLEAN
    source: str
    after: str | None = None  # FIXES: the fixed script
    message: str | None = None  # REPORTS: the finding's exact message, when the example pins it
    note: str = ""  # one line for the docs: what the example shows


def _script(text: str) -> str:
    """An indented triple-quoted script as the file it stands for: dedented, no leading blank line."""
    return textwrap.dedent(text).lstrip("\n")


def fixes(before: str, after: str, note: str = "") -> Example:
    """The rule reports `before`, and its fix turns it into exactly `after`."""
    return Example(FIXES, _script(before), after=_script(after), note=note)


def reports(source: str, message: str | None = None, note: str = "") -> Example:
    """The rule reports `source` (with exactly `message`, when given) and changes nothing of it."""
    return Example(REPORTS, _script(source), message=message, note=note)


def clean(source: str, note: str = "") -> Example:
    """The rule has no finding in `source`."""
    return Example(CLEAN, _script(source), note=note)


def examples_of(rule: Rule) -> tuple[Example, ...]:
    """The `EXAMPLES` of the module that defines `rule` (empty when it has none)."""
    module = sys.modules.get(type(rule).__module__)
    return tuple(getattr(module, "EXAMPLES", ()))


def required_kinds(rule: Rule) -> set[str]:
    """What every rule must show: its fix (or, for a rule without one, a report) and a near miss."""
    return {REPORTS if rule.fix == NONE else FIXES, CLEAN}


def diff_lines(before: str, after: str) -> list[str]:
    """The whole script as one diff: every line, prefixed with ' ', '-' or '+'."""
    old, new = before.splitlines(), after.splitlines()
    lines = difflib.unified_diff(old, new, n=max(len(old), len(new)), lineterm="")
    return [line for line in lines if not line.startswith(("---", "+++", "@@"))]


def render(rule: Rule) -> str:
    """The rule's examples as Markdown ("" when it has none): a caption, then a diff or the script."""
    out = []
    for ex in examples_of(rule):
        if ex.kind == FIXES:
            text = f"{ex.note or 'Fixed:'}\n\n```diff\n" + "\n".join(diff_lines(ex.source, ex.after or "")) + "\n```"
        else:
            default = "Reported, not fixed:" if ex.kind == REPORTS else "Left alone:"
            text = f"{ex.note or default}\n\n```python\n{ex.source.rstrip()}\n```"
            if ex.message:
                text += f"\n\nReported as: {ex.message}"
        out.append(text)
    return "\n\n".join(out)


__all__ = ["CLEAN", "FIXES", "REPORTS", "Example", "clean", "examples_of", "fixes", "render", "reports"]
