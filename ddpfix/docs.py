"""Generate docs/rules.md from the rules' own `docs` text: `python -m ddpfix.docs [--check] [PATH]`."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from .examples import render as render_examples
from .formats import all_rules
from .rule import Rule

DEFAULT = Path(__file__).resolve().parent.parent / "docs" / "rules.md"
SECTIONS = ("What", "Why", "Example", "Fix safety")
FIX_TEXT = {
    "safe": "safe (`ddpfix apply`)",
    "unsafe": "unsafe (`ddpfix apply --unsafe-fixes`)",
    "none": "none (fix by hand)",
}


def anchor(rule: Rule) -> str:
    return f"{rule.code.lower()}-{rule.name}"


def missing_sections(rule: Rule) -> list[str]:
    found = set(re.findall(r"^## (.+?)\s*$", rule.docs, flags=re.M))
    return [s for s in SECTIONS if s not in found]


def render_rule(rule: Rule) -> str:
    body = re.sub(r"^## ", "### ", rule.docs.strip(), flags=re.M)
    return f"## {rule.code} {rule.name}\n\n{rule.message}\n\nFix: {FIX_TEXT.get(rule.fix, rule.fix)}.\n\n{body}\n{examples(rule, '###')}"


def rule_page(rule: Rule) -> str:
    """One rule's page for the terminal (`ddpfix rules CODE`, `ddpfix explain CODE`): its docs and examples."""
    return f"# {rule.code} {rule.name}\n\n{rule.message}\n\nFix: {rule.fix}\n{rule.docs}{examples(rule)}"


def examples(rule: Rule, level: str = "##") -> str:
    """The rule's tested examples (from its module's `EXAMPLES`) as a section at heading `level`; "" if none."""
    text = render_examples(rule)
    return f"\n{level} Examples (tested)\n\n{text}\n" if text else ""


def render() -> str:
    rules = all_rules()
    out = [
        "# ddpfix rules\n",
        "<!-- Generated from each rule's `docs` by `python -m ddpfix.docs`; edit the rule, not this file. -->\n",
        "Every rule has a stable code. `ddpfix rules` lists them; `ddpfix rules CODE` prints one page.",
        "Select them with `--select`/`--ignore` or `[tool.ddpfix]` (prefixes work: `DDP4`), and silence one",
        "line with `# ddpfix: ignore[CODE]`.\n",
        "| Code | Name | Fix | What goes wrong |",
        "|---|---|---|---|",
    ]
    for r in rules:
        message = r.message.replace("|", "\\|")
        out.append(f"| [{r.code}](#{anchor(r)}) | {r.name} | {r.fix} | {message} |")
    out.append("")
    for r in rules:
        out.append(render_rule(r))
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    path = Path(args[0]) if args else DEFAULT
    text = render()
    if check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is out of date: run `python -m ddpfix.docs`", file=sys.stderr)
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
