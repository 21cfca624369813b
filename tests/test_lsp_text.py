"""The language server's pure parts: positions in each encoding, changes, edits, suppression comments."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from lsprotocol import types

from ddpfix.diagnostic import Diagnostic
from ddpfix.lsp import actions as A
from ddpfix.lsp.text import UTF8, UTF16, UTF32, Text, apply_changes, apply_text_edits, split_lines, text_edits, units

ENCODINGS = [UTF8, UTF16, UTF32]


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


@pytest.mark.parametrize("encoding,expected", [(UTF8, 8), (UTF16, 6), (UTF32, 5)])
def test_units(encoding, expected):
    assert units('x="😋"', encoding) == expected  # the LSP spec's own example
    assert units("é", encoding) == (2 if encoding == UTF8 else 1)


def test_lines_split_only_at_lsp_line_breaks():
    text = "a\x0cb\u2028c\r\nd\re\nf"
    assert split_lines(text) == ["a\x0cb\u2028c\r\n", "d\r", "e\n", "f"]
    snap = Text(text, UTF16)
    assert snap.line(0) == "a\x0cb\u2028c" and snap.line(1) == "d" and snap.line(3) == "f"
    assert snap.position(len(text)) == pos(3, 1)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_point_and_offset_round_trip(encoding):
    text = 'x = "é😀"; model = DDP(model)\n\tü = 1\n'
    snap = Text(text, encoding)
    col = text.index("model =")  # 10 code points in
    assert snap.point(1, col + 1) == pos(0, {UTF8: 14, UTF16: 11, UTF32: 10}[encoding])
    assert snap.point(2, 2) == pos(1, 1)
    for off in range(len(text) + 1):
        if 0 < off < len(text) and text[off - 1] == "\r":
            continue
        assert snap.offset(snap.position(off)) == off


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_offset_clamps(encoding):
    snap = Text("ab😀\ncd", encoding)
    assert snap.offset(pos(0, 99)) == 3  # past the line end: the end of the line (before its EOL)
    assert snap.offset(pos(9, 0)) == len("ab😀\ncd")  # past the last line: the end of the document
    if encoding != UTF32:  # inside the emoji's code units: rounds down to its start
        assert snap.offset(pos(0, 3)) == 2


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_incremental_changes(encoding):
    text = "é😀 = 1\x0c\nb = 2\n"
    first = units("é😀 = ", encoding)
    changes = [
        types.TextDocumentContentChangePartial(
            range=types.Range(start=pos(0, first), end=pos(0, first + 1)), text="42"
        ),
        types.TextDocumentContentChangePartial(range=types.Range(start=pos(1, 0), end=pos(1, 0)), text="#"),
        types.TextDocumentContentChangePartial(range=types.Range(start=pos(2, 0), end=pos(2, 0)), text="c = 3"),
    ]
    assert apply_changes(text, changes, encoding) == "é😀 = 42\x0c\n#b = 2\nc = 3"
    whole = types.TextDocumentContentChangeWholeDocument(text="new")
    assert apply_changes(text, [changes[0], whole], encoding) == "new"


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_text_edits_round_trip(encoding):
    rnd = random.Random(5)
    pool = ["import os\n", "x = 'é😀'\n", "\n", "if a:\n", "    b()\r\n", "c\x0cd\n", "end"]
    for _ in range(200):
        old = "".join(rnd.choice(pool) for _ in range(rnd.randint(0, 8)))
        new = "".join(rnd.choice(pool) for _ in range(rnd.randint(0, 8)))
        edits = text_edits(old, new, encoding)
        assert apply_text_edits(old, edits, encoding) == new
        if old == new:
            assert edits == []


def test_text_edits_are_minimal():
    old = "a\nb\nc\nd\ne\n"
    new = "a\nB\nc\nd\ne\nf\n"
    edits = text_edits(old, new, UTF16)
    assert [(e.range.start.line, e.range.end.line, e.new_text) for e in edits] == [(1, 2, "B\n"), (5, 5, "f\n")]


def test_text_edits_without_final_newline():
    edits = text_edits("a\nb", "a\nb\nc\n", UTF16)
    assert apply_text_edits("a\nb", edits, UTF16) == "a\nb\nc\n"
    assert edits[0].range.start == pos(1, 0) and edits[0].range.end == pos(1, 1)


# ------------------------------------------------------------------ suppression comments
def diag(code: str, line: int) -> Diagnostic:
    return Diagnostic(code=code, message="", line=line, col=1, end_line=line, end_col=1, fix="safe")


def apply_spot(text: str, spot) -> str:
    line, start, end, new = spot
    lines = text.splitlines(keepends=True)
    lines[line - 1] = lines[line - 1][:start] + new + lines[line - 1][end:]
    return "".join(lines)


def test_suppression_trailing_comment():
    text = "import torch\nprint(x)   \ny = 1\n"
    assert (
        apply_spot(text, A.suppression_edit(text, diag("DDP406", 2)))
        == "import torch\nprint(x)  # ddpfix: ignore[DDP406]\ny = 1\n"
    )


def test_suppression_merges_codes_and_respects_bare_ignore():
    text = "torch.save(s, p); print(1)  # noqa: E702  # ddpfix: ignore[DDP401]\n"
    spot = A.suppression_edit(text, diag("DDP406", 1))
    assert apply_spot(text, spot) == "torch.save(s, p); print(1)  # noqa: E702  # ddpfix: ignore[DDP401, DDP406]\n"
    assert A.suppression_edit(text, diag("DDP401", 1)) is None  # already silenced
    assert A.suppression_edit("print(1)  # ddpfix: ignore\n", diag("DDP406", 1)) is None


def test_suppression_in_a_string_is_not_a_comment():
    text = 'print("# ddpfix: ignore[DDP401]")\n'
    assert (
        apply_spot(text, A.suppression_edit(text, diag("DDP406", 1)))
        == 'print("# ddpfix: ignore[DDP401]")  # ddpfix: ignore[DDP406]\n'
    )


def test_suppression_above_a_line_that_cannot_end_in_a_comment():
    text = 'def f():\n    print("""a\n    b""")\n'
    spot = A.suppression_edit(text, diag("DDP406", 2))  # line 2 ends inside the string
    assert apply_spot(text, spot) == 'def f():\n    # ddpfix: ignore[DDP406]\n    print("""a\n    b""")\n'
    text = "y = 0\nx = print(1) + \\\n    2\n"  # line 2 ends in a backslash
    assert (
        apply_spot(text, A.suppression_edit(text, diag("DDP406", 2)))
        == "y = 0\n# ddpfix: ignore[DDP406]\nx = print(1) + \\\n    2\n"
    )
    text = "x = 1 + \\\n    print(2) + \\\n    3\n"
    assert A.suppression_edit(text, diag("DDP406", 2)) is None  # the line above continues into it
    assert A.suppression_edit(text, diag("DDP406", 9)) is None


def test_titles():
    assert A.fix_title("DDP401", "safe", 1) == "DDP401: save on rank 0 only"
    assert A.fix_title("DDP406", "safe", 3) == "DDP406: print on rank 0 only (3 places)"
    assert A.fix_title("DDP306", "unsafe", 1) == "DDP306: convert BatchNorm to SyncBatchNorm (unsafe fix)"
    assert (
        A.fix_title("DDP204", "safe", 1, ["    for epoch in range(n):", "        train_sampler.set_epoch(epoch)"])
        == "DDP204: call train_sampler.set_epoch(epoch)"
    )
    assert A.fix_title("DDP999", "safe", 1) == "DDP999: fix DDP999"
    assert A.fix_title("DDP000", "safe", 1) == "DDP000: fix unused suppression"  # a rule without a title of its own


def test_kind_filter():
    assert A.kind_wanted("source.fixAll.ddpfix", ["source"])
    assert A.kind_wanted("source.fixAll.ddpfix", ["source.fixAll"])
    assert not A.kind_wanted("source.fixAll.ddpfix", ["quickfix"])
    assert not A.kind_wanted("source.fixAllx", ["source.fixAll"])
    assert A.kind_wanted("quickfix", None) and A.kind_wanted("quickfix", [""])


def test_server_announces_code_actions_and_resolve():
    from ddpfix.lsp.server import create_server

    ls = create_server()
    opts = ls.protocol.fm.feature_options[types.TEXT_DOCUMENT_CODE_ACTION]
    assert opts.resolve_provider is True
    assert set(opts.code_action_kinds) == {"quickfix", "source.fixAll.ddpfix", "source.convertToDdp.ddpfix"}


def test_automatic_code_action_requests_do_not_analyse_a_changed_text(tmp_path):
    """VS Code asks for code actions on every keystroke (triggerKind Automatic): only an explicit
    request may run the engine on a text the debounced analysis has not seen yet."""
    from ddpfix.lsp.server import ClientFeatures, Document, code_actions, create_server

    ls = create_server()
    ls.client = ClientFeatures(resolve_edit=True)
    text = (__import__("pathlib").Path(__file__).parent / "lsp_data" / "train_small.py").read_text()
    doc = Document(uri=(tmp_path / "t.py").as_uri(), text=text, version=1, path=str(tmp_path / "t.py"))
    here = types.Range(start=pos(15, 8), end=pos(15, 8))

    def ask(kind):
        ctx = types.CodeActionContext(diagnostics=[], trigger_kind=kind)
        return code_actions(
            ls,
            doc,
            types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=doc.uri), range=here, context=ctx),
        )

    assert ask(types.CodeActionTriggerKind.Automatic) == [] and doc.analysis is None
    titles = [a.title for a in ask(types.CodeActionTriggerKind.Invoked)]
    assert "DDP406: print on rank 0 only" in titles and doc.analysis is not None
    assert [a.title for a in ask(types.CodeActionTriggerKind.Automatic)] == titles  # analysed: answered


def test_code_action_fixes_reuse_the_diagnostics_parse(monkeypatch):
    """Diagnostics parse the document once; every fix a code action asks for runs on that parse."""
    from ddpfix import api
    from ddpfix.lsp.analysis import Analysis
    from ddpfix.lsp.settings import RuleOptions

    text = (__import__("pathlib").Path(__file__).parent / "lsp_data" / "train_small.py").read_text()
    analysis = Analysis.run(text, 1, RuleOptions())
    assert analysis.diagnostics and analysis.parsed is not None
    expected = api.fix_source(text).code

    def no_parse(*args, **kwargs):
        raise AssertionError("parsed again")

    monkeypatch.setattr(api, "python_tree", no_parse)
    monkeypatch.setattr(api, "libcst_parse", no_parse)
    every = analysis.fixed(None, False)
    one = analysis.fixed(("DDP406",), False)
    assert every is not None and one is not None
    assert every.code == expected
    assert one.diagnostics and all(d.code == "DDP406" for d in one.diagnostics)
    assert one.code != text and one.code != every.code


def test_suppression_edits_read_only_the_statements_around_the_line():
    """With the top-level statements' first lines, the "Ignore" edit tokenizes the statements around
    the line only, and must place the comment exactly where tokenizing the whole text does."""
    import ast
    import tokenize

    from ddpfix.lsp.actions import _window

    paths = sorted((Path(__file__).parent / "golden").glob("*/input.py"))[::3]
    paths += sorted((Path(__file__).parent / "lsp_data").glob("*.py"))
    awkward = 'import torch\n\n@dec\ndef f():\n    x = """a\nb"""  # c\n    return x\n# c0\ny = (1,\n     2)\\\n    + 3\nz = 1; w = 2  # ddpfix: ignore[DDP401]\n'
    texts = [tokenize.open(p).read() for p in paths] + [awkward, awkward.replace("\n", "\r\n")]
    checked = windowed = 0
    for text in texts:
        starts = A.statement_starts(ast.parse(text))
        for line in range(1, text.count("\n") + 2):
            for code in ("DDP406", "DDP401"):
                d = diag(code, line)
                assert A.suppression_edit(text, d, starts) == A.suppression_edit(text, d), (line, text[:60])
                checked += 1
            windowed += _window(text, line, starts)[1] > 0
    assert checked > 1000 and windowed > checked / 4  # most lines were answered from a window
