"""`render.render` (the fixed module's text, reusing the untouched statements' text) equals LibCST's
whole render, on every golden input and on layouts that move where a statement's text begins."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import libcst as cst
import pytest

import ddpfix.guard
import ddpfix.render
from ddpfix import fix_source
from ddpfix.errors import DdpfixError

GOLDEN = sorted(Path(__file__).parent.glob("golden/*/input.py"))


def _variants(text: str) -> dict[str, str]:
    return {
        "as is": text,
        "crlf": text.replace("\n", "\r\n"),
        "cr": text.replace("\n", "\r"),
        "no last newline": text.rstrip("\n"),
        "comment at the end, no newline": text.rstrip("\n") + "  # end",
        "header and footer comments": "# head\n\n# more\n" + text + "\n# tail\n\n",
        "indented comment at the end": text + "    # indented tail\n",
        "decorators with comments": text.replace("\ndef ", "\n# c1\n@staticmethod\n\n# between\n@property\ndef ", 1),
        "two statements a line": text.replace("\nimport ", "\nimport os; import sys\nimport ", 1),
        "byte order mark": "\ufeff" + text,
    }


def _checked(monkeypatch) -> dict[str, int]:
    seen = {"spliced": 0, "renders": 0}
    real = ddpfix.render.render

    def compare(new, old, text, tree):
        out = real(new, old, text, tree)
        assert out == new.code
        seen["renders"] += 1
        if tree is not None and ddpfix.render._kept_texts(new, old, text, tree):
            seen["spliced"] += 1
        return out

    monkeypatch.setattr(ddpfix.guard, "render", compare)
    monkeypatch.setattr(sys.modules["ddpfix.guard.fixpoint"], "render", compare)
    return seen


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.parent.name)
def test_equals_the_whole_render_on_goldens(path: Path, monkeypatch) -> None:
    seen = _checked(monkeypatch)
    text = path.read_text(encoding="utf-8", errors="replace")
    for variant in _variants(text).values():
        try:
            fix_source(variant, path=str(path), unsafe_fixes=True)
        except DdpfixError:
            continue
    if seen["renders"]:
        assert seen["spliced"] > 0  # the reuse is exercised, not only the whole render


def test_splices_across_the_goldens(monkeypatch) -> None:
    seen = _checked(monkeypatch)
    for path in GOLDEN:
        try:
            fix_source(path.read_bytes(), path=str(path))
        except DdpfixError:
            continue
    assert seen["renders"] > 100
    assert seen["spliced"] >= seen["renders"] * 0.9


SOURCE = "# head\nimport torch\n\n\n@torch.no_grad()\n# between\n@staticmethod\ndef f():\n    pass\n# tail of f\n\nx = 1; y = 2\nz = 3"


@pytest.mark.parametrize("edit", ["first", "middle", "last", "insert", "drop", "footer"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("end", ["", "\n", "\n\n# the end\n", "\n# the end"])
def test_edits_anywhere(edit: str, newline: str, end: str) -> None:
    text = (SOURCE + end).replace("\n", newline)
    old = cst.parse_module(text)
    body = list(old.body)
    changed = cst.parse_statement("w = 4\n")
    if edit == "first":
        body[0] = changed
    elif edit == "middle":
        body[1] = body[1].with_changes(leading_lines=())
    elif edit == "last":
        body[-1] = changed
    elif edit == "insert":
        body.insert(2, changed)
    elif edit == "drop":
        del body[1]
    new = old.with_changes(
        body=body, footer=(cst.EmptyLine(comment=cst.Comment("# new")),) if edit == "footer" else old.footer
    )
    assert ddpfix.render.render(new, old, text, ast.parse(text)) == new.code
    assert ddpfix.render._kept_texts(new, old, text, ast.parse(text))


def test_a_built_tree_with_lines_before_its_first_decorator() -> None:
    """A pass's output is a tree the rules built: lines may sit on the first decorator itself."""
    parsed = cst.parse_module("import torch\n\n\n@torch.no_grad()\ndef f():\n    pass\nx = 1\n")
    f = parsed.body[1]
    lines = (cst.EmptyLine(), cst.EmptyLine(comment=cst.Comment("# on the decorator")))
    f = f.with_changes(decorators=[f.decorators[0].with_changes(leading_lines=lines)])
    old = parsed.with_changes(body=[parsed.body[0], f, parsed.body[2]])
    text = old.code
    new = old.with_changes(body=[cst.parse_statement("import os\n"), *old.body[1:]])
    assert ddpfix.render._kept_texts(new, old, text, ast.parse(text))
    assert ddpfix.render.render(new, old, text, ast.parse(text)) == new.code


def test_whole_render_when_the_parsers_disagree() -> None:
    text = "import torch\nx = 1\n"
    old = cst.parse_module(text)
    new = old.with_changes(body=[*old.body, cst.parse_statement("y = 2\n")])
    other = ast.parse("import torch\n")  # not this text's tree: the statements do not line up
    assert ddpfix.render._kept_texts(new, old, text, other) is None
    assert ddpfix.render.render(new, old, text, other) == new.code
