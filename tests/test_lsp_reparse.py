"""`ddpfix.lsp.reparse`: a document parsed again after an edit, reusing its unchanged top-level
statements, must be the module a whole parse gives, node for node, with the same settings."""

from __future__ import annotations

import re
import sys
import tokenize
from pathlib import Path

import libcst as cst
import pytest

from ddpfix import parsing
from ddpfix.api import parse_source
from ddpfix.errors import DdpfixError
from ddpfix.lsp.reparse import reparse, statements_of

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "bench"))
from lsp_latency import training_script  # noqa: E402

AWKWARD = '''\
#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""Docstring."""
import torch  # trailing


# a comment before a decorator
@torch.no_grad()
@staticmethod
def f(x):
    return x
    # indented comment after the body, owned by the block

# column-0 comment, owned by the next statement
class A:  # c
    def g(self):
        if True: pass
        else:
            return 1
a = 1; b = 2
if __name__ == "__main__":
    f(1)
    \x0c
x = (1,
     2) \\
    + (3,)
# footer comment

'''


def read(path: Path) -> str:
    with tokenize.open(path) as f:  # as an editor decodes it (a coding cookie is honoured)
        return f.read()


def corpus() -> list[tuple[str, str]]:
    texts = [(p.parent.name, read(p)) for p in sorted((HERE / "golden").glob("*/input.py"))]
    texts += [(p.name, p.read_text(encoding="utf-8")) for p in sorted((HERE / "lsp_data").glob("*.py"))]
    texts += [
        ("awkward", AWKWARD),
        ("awkward-crlf", AWKWARD.replace("\n", "\r\n")),
        ("awkward-no-final-newline", AWKWARD.rstrip("\n")),
        ("generated", training_script(300)),
    ]
    clean = AWKWARD.replace("    # indented comment after the body, owned by the block\n", "").replace("    \x0c\n", "")
    texts += [
        ("awkward-cut", clean),
        ("awkward-cut-crlf", clean.replace("\n", "\r\n")),
        ("awkward-cut-no-final-newline", clean.rstrip("\n")),
    ]
    return texts


def edits(text: str) -> list[str]:
    """Versions of `text` an editor session could produce: a changed, inserted, removed, first and
    last statement, a comment line between statements, one line typed into."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)
    nl = "\r\n" if "\r\n" in text else "\n"
    mid = len(lines) // 2
    out = [
        "".join(lines[:mid]) + lines[mid].rstrip("\r\n") + "  # typed" + nl + "".join(lines[mid + 1 :]),
        "".join(lines[:mid]) + "import os" + nl + "".join(lines[mid:]),
        "".join(lines[:mid]) + "# a new comment" + nl + nl + "".join(lines[mid:]),
        "x0 = 0" + nl + text,
        text + nl + "y = 1" + nl,
        text.rstrip("\r\n") + nl + "# trailing comment" + nl,
        "".join(lines[: mid - 1]) + "".join(lines[mid + 1 :]),
        "".join(lines[:mid]) + "  # an odd comment" + nl + "    " + nl + "".join(lines[mid:]),
        "".join(lines[1:]),
    ]
    return out


def same(a: cst.Module, b: cst.Module) -> bool:
    return (
        a.deep_equals(b)
        and (a.default_indent, a.default_newline, a.encoding, a.has_trailing_newline)
        == (b.default_indent, b.default_newline, b.encoding, b.has_trailing_newline)
        and a.code == b.code
    )


@pytest.fixture
def parse_all(monkeypatch):
    """Every text parsed by LibCST, training script or not (the gate in front of it is off)."""
    monkeypatch.setattr(parsing, "GATE", False)


@pytest.mark.parametrize("name,text", corpus(), ids=[n for n, _ in corpus()])
def test_reparse_equals_a_whole_parse(name: str, text: str, parse_all):
    first = parse_source(text, "train.py")
    state = statements_of(first)
    reused = 0
    for new in edits(text):
        try:
            whole = parse_source(new, "train.py")
        except DdpfixError:
            with pytest.raises(DdpfixError):
                reparse(new, "train.py", state)
            continue
        got, after = reparse(new, "train.py", state)
        if whole.module is None:
            assert got.module is None
            continue
        assert same(got.module, whole.module), name
        assert got.text == new and ast_dump(got.tree) == ast_dump(whole.tree)
        if after is not None:
            reused += after.reused
            again, _ = reparse(new, "train.py", after)  # every piece known: nothing parsed
            assert same(again.module, whole.module)
    if name.startswith("awkward-cut"):
        assert state is not None
    if state is not None:
        assert reused > 0  # the pieces an edit leaves alone were reused


def test_a_version_that_is_no_training_script_is_not_parsed_by_libcst(monkeypatch):
    """The gate decides as for a whole parse: an edit that leaves no training in the script."""
    text = training_script(100)
    state = statements_of(parse_source(text, "train.py"))
    assert state is not None
    new = re.sub(r"(?m)^.*(backward|optimizer|\.parameters\(\)).*$", "", text)
    assert parse_source(new, "train.py").module is None
    monkeypatch.setattr(cst, "parse_module", lambda *a, **k: pytest.fail("parsed"))
    got, after = reparse(new, "train.py", state)
    assert got.module is None and got.not_training and after is None


def ast_dump(tree) -> str:
    import ast

    return ast.dump(tree) if tree is not None else ""


def test_what_is_parsed_whole(parse_all):
    two = "import torch\n\ndef f():\n  return 1\n"
    assert statements_of(parse_source(two)) is None  # a 2-space file: no pieces kept
    four = "import torch\n\ndef f():\n    return 1\n"
    state = statements_of(parse_source(four))
    assert state is not None and len(state.pieces) == 2
    # a new piece indented with two spaces is parsed whole, and equals the whole parse
    new = four + "\ndef g():\n  return 2\n"
    got, after = reparse(new, "t.py", state)
    assert same(got.module, parse_source(new).module) and after.reused == 0
    # a syntax error: the engine's own message
    with pytest.raises(DdpfixError, match="syntax error"):
        reparse(four + "def (:\n", "t.py", state)
    # one statement edited: the others are reused
    got, after = reparse(four.replace("return 1", "return 3"), "t.py", state)
    assert after.reused == 1 and got.module.body[0] is state.pieces["import torch\n\n"][0]


def test_the_server_reuses_the_statements_of_the_last_version(tmp_path):
    """Typing in one function, or adding a statement: the next analysis parses that piece only, and
    its diagnostics (positions included) are those of `ddpfix check` on the new text."""
    import ddpfix
    from ddpfix.lsp.documents import Document
    from ddpfix.lsp.language_server import DdpfixServer

    ls = DdpfixServer()
    published: list = []
    ls.text_document_publish_diagnostics = published.append  # no client: keep what would be sent
    text = training_script(400)
    path = tmp_path / "train.py"
    doc = ls.docs[path.as_uri()] = Document(path.as_uri(), text, 1, str(path))
    ls.publish(doc)
    pieces = len(doc.analysis.statements.pieces)
    assert doc.analysis.statements.reused == 0 and pieces > 20
    assert "\n\n\nclass Net(" in text
    versions = [
        text.replace("# progress", "# progress."),
        text.replace("  # progress", ""),
        text.replace("\n\n\nclass Net(", "\n\n\nSEED = 1\n\n\nclass Net("),  # every line below moves down
    ]
    for version, new in enumerate(versions, 2):
        doc.text, doc.version = new, version
        ls.publish(doc)
        assert doc.analysis.statements.reused == pieces - 1  # main() changed (or SEED is new), nothing else
        codes = [(d.code, d.range.start.line + 1) for d in published[-1].diagnostics]
        assert codes == [(d.code, d.line) for d in ddpfix.check_source(new, path=str(path), cross_file=True)]


def test_a_statement_met_twice_is_two_nodes(parse_all):
    """The engine tells nodes apart by identity (positions, edits): two pieces of the same text must
    not become one node twice."""
    from ddpfix.syntax import _walk

    text = 'import torch\n\nprint("---")\nx = 1\nprint("---")\ny = 0\n'
    state = statements_of(parse_source(text))
    new = text.replace("x = 1", "x = 2")
    got, after = reparse(new, "t.py", state)
    assert same(got.module, parse_source(new).module) and after.reused >= 2
    nodes = list(_walk(got.module))
    assert len({id(n) for n in nodes}) == len(nodes)
