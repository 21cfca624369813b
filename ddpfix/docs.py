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


def section(rule: Rule, name: str) -> str:
    """The text of one `## name` section of the rule's docs ("" when it has none)."""
    m = re.search(rf"^## {re.escape(name)}\s*\n(.*?)(?=^## |\Z)", rule.docs, flags=re.S | re.M)
    return m.group(1).strip() if m else ""


def _first_example(text: str) -> str:
    """The first code block of an Example section, with its counterpart when one short line leads to it
    (`becomes`, `should be`)."""
    blocks = re.findall(r"^```.*?^```[ \t]*$", text, flags=re.S | re.M)
    if not blocks:
        return ""
    first = blocks[0]
    rest = text[text.index(first) + len(first) :]
    if len(blocks) > 1:
        between = rest[: rest.index(blocks[1])].strip()
        if between and "\n" not in between and len(between) <= 80:
            return f"{first}\n{between}\n{blocks[1]}"
    return first


def rule_summary(rule: Rule) -> str:
    """One rule in short, for `ddpfix rules CODE`: what it finds, how safe its fix is, one example."""
    what = re.split(r"\n\s*\n|\n- ", section(rule, "What"))[0].strip()
    if what.endswith(":"):  # the lead-in of a list left out: keep the sentences before it
        ends = [m.end() for m in re.finditer(r"\.(?=\s)", what)]
        what = what[: ends[-1]] if ends else what
    safety = re.split(r"(?<=\.)\s", section(rule, "Fix safety"), maxsplit=1)[0].strip()
    parts = [f"{rule.code} {rule.name}: {rule.message}", f"Fix: {FIX_TEXT.get(rule.fix, rule.fix)}. {safety}".rstrip()]
    if what:
        parts.append(what)
    example = _first_example(section(rule, "Example"))
    if example:
        parts.append(example)
    parts.append(f"The whole page: ddpfix rules {rule.code} --long")
    return "\n\n".join(parts) + "\n"


RANGE = re.compile(r"^DDP\d{0,2}$", re.IGNORECASE)


def lookup(query: str) -> list[Rule]:
    """The rules `query` names: a code (`DDP201`), a name (`missing-distributed-sampler`) or a prefix
    of codes (`DDP2`, every rule in it); [] when it names none."""
    q = query.strip()
    rules = all_rules()
    exact = [r for r in rules if r.code == q.upper() or r.name == q.lower()]
    if exact:
        return exact
    if RANGE.match(q):
        return [r for r in rules if r.code.startswith(q.upper())]
    return []


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
