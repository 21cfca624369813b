"""`ddpfix lsp` driven by pytest-lsp with the capabilities VS Code, Neovim 0.11 and Emacs 29 send.

One server per client kind (module scope); every test uses its own document URI.
The flow each editor goes through: open -> diagnostics -> code action -> apply edit -> diagnostics.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

import ddpfix
from ddpfix.transforms import RULES

DATA = Path(__file__).parent / "lsp_data"
BEFORE = (DATA / "train_before.py").read_text(encoding="utf-8")
UNICODE = (DATA / "train_unicode.py").read_text(encoding="utf-8")
SMALL = (DATA / "train_small.py").read_text(encoding="utf-8")
INCOMPLETE = (DATA / "train_random_target.py").read_text(encoding="utf-8")
DOCS = "https://docs.test/ddpfix/rules.md"
CLIENTS = ["visual-studio-code", "neovim@v0.11.0", "emacs"]
TIMEOUT = 30
SAFE_CODES = {r.code for r in RULES if r.fix == "safe"}

pytestmark = pytest.mark.asyncio(loop_scope="module")


@functools.cache
def _check(text: str) -> tuple:
    return tuple(ddpfix.check_source(text))


@functools.cache
def _fix(text: str, select: tuple | None, ignore: tuple | None, unsafe: bool) -> str:
    return ddpfix.fix_source(text, select=select, ignore=ignore, unsafe_fixes=unsafe).code


def check_source(text: str) -> list:
    """The engine's own answer (what `ddpfix check` says), computed once per text."""
    return list(_check(text))


def fix_source(text: str, *, select=None, ignore=None, unsafe_fixes=False):
    """The engine's own fix of `text` (what `ddpfix apply` writes), computed once per input."""
    return _Fixed(_fix(text, tuple(select) if select else None, tuple(ignore) if ignore else None, unsafe_fixes))


class _Fixed:
    def __init__(self, code: str) -> None:
        self.code = code


# ------------------------------------------------------------------ the client side
def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def lsp_lines(text: str) -> list[str]:
    out, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\r" and text[i + 1 : i + 2] == "\n":
            out.append("".join(cur) + "\r\n")
            cur, i = [], i + 2
            continue
        cur.append(ch)
        if ch in "\r\n":
            out.append("".join(cur))
            cur = []
        i += 1
    out.append("".join(cur))
    return out


def offset(text: str, pos: types.Position, encoding: str) -> int:
    """What a client does: find the line, then count code units along it."""
    lines = lsp_lines(text)
    assert pos.line < len(lines), f"position past the end: {pos}"
    start = sum(len(l) for l in lines[: pos.line])
    body = lines[pos.line].rstrip("\r\n")
    n = 0
    for i, ch in enumerate(body):
        if n == pos.character:
            return start + i
        n += units(ch, encoding)
    assert n == pos.character, f"character {pos.character} is past the line end or inside a character ({body!r})"
    return start + len(body)


def apply_edits(text: str, edits, encoding: str) -> str:
    spans = sorted(
        (offset(text, e.range.start, encoding), offset(text, e.range.end, encoding), e.new_text) for e in edits
    )
    for (_, e1, _), (s2, _, _) in zip(spans, spans[1:]):
        assert e1 <= s2, "overlapping edits"
    for start, end, new in reversed(spans):
        text = text[:start] + new + text[end:]
    return text


def _uri_of(edit: types.WorkspaceEdit) -> str:
    if edit.document_changes:
        (change,) = edit.document_changes
        return change.text_document.uri
    (uri,) = edit.changes
    return uri


def edits_of(edit: types.WorkspaceEdit, uri: str) -> list[types.TextEdit]:
    if edit.document_changes:
        (change,) = edit.document_changes
        assert change.text_document.uri == uri
        return list(change.edits)
    assert edit.changes is not None and set(edit.changes) == {uri}
    return list(edit.changes[uri])


class Editor:
    """The editor state a test needs: document texts, versions and every diagnostics notification."""

    def __init__(self, client: LanguageClient, kind: str, encoding: str) -> None:
        self.client, self.kind, self.encoding = client, kind, encoding
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.published: list[types.PublishDiagnosticsParams] = []
        self.applied: list[types.WorkspaceEdit] = []
        self.last_edits: list[types.TextEdit] = []
        self.registrations: list[types.Registration] = []
        self.event = asyncio.Event()
        original = client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

        def on_publish(params: types.PublishDiagnosticsParams):
            original(params)
            self.published.append(params)
            self.event.set()

        client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_publish

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def on_apply(params: types.ApplyWorkspaceEditParams):
            self.applied.append(params.edit)
            uri = _uri_of(params.edit)
            self.last_edits = edits_of(params.edit, uri)
            self._set(uri, apply_edits(self.texts[uri], self.last_edits, self.encoding))
            return types.ApplyWorkspaceEditResult(applied=True)

    async def diagnostics(
        self, uri: str, version: int | None | str = "current", since: int = 0
    ) -> list[types.Diagnostic]:
        """Wait for the diagnostics of `uri` at `version` (default: its current version), published
        as notification number `since` or later."""
        version = self.versions.get(uri) if version == "current" else version

        async def wait():
            while True:
                for p in reversed(self.published[since:]):
                    if p.uri == uri and p.version == version:
                        return list(p.diagnostics)
                self.event.clear()
                await self.event.wait()

        return await asyncio.wait_for(wait(), TIMEOUT)

    def open(self, uri: str, text: str, language_id: str = "python") -> None:
        self.texts[uri], self.versions[uri] = text, 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)
            )
        )

    def _set(self, uri: str, text: str, changes=None) -> None:
        self.texts[uri] = text
        self.versions[uri] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=changes or [types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def replace_all(self, uri: str, text: str) -> None:
        self._set(uri, text)

    def type_at(self, uri: str, pos: types.Position, new: str, end: types.Position | None = None) -> None:
        """An incremental change, as editors send while typing."""
        old = self.texts[uri]
        end = end or pos
        text = old[: offset(old, pos, self.encoding)] + new + old[offset(old, end, self.encoding) :]
        change = types.TextDocumentContentChangePartial(range=types.Range(start=pos, end=end), text=new)
        self._set(uri, text, [change])

    async def actions(self, uri: str, rng: types.Range, diags, only=None) -> list[types.CodeAction]:
        res = await asyncio.wait_for(
            self.client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    range=rng,
                    context=types.CodeActionContext(diagnostics=list(diags), only=only),
                )
            ),
            TIMEOUT,
        )
        return list(res or [])

    async def settled_actions(self, uri: str, rng: types.Range, diags, ready, only=None) -> list[types.CodeAction]:
        """The actions, asked for again until `ready(actions)`: what a title says about a fix's result
        (the modules it also edits, what it leaves incomplete, a withheld fix) is known once the
        server has computed that fix, in idle time after the diagnostics."""

        async def poll():
            while True:
                actions = await self.actions(uri, rng, diags, only=only)
                if ready(actions):
                    return actions
                await asyncio.sleep(0.05)

        return await asyncio.wait_for(poll(), TIMEOUT)

    async def apply(self, uri: str, action: types.CodeAction) -> str:
        """Apply an action the way this client would: its edit, else resolve it, else run its command."""
        edit = action.edit
        if edit is None and action.data is not None:
            resolved = await asyncio.wait_for(self.client.code_action_resolve_async(action), TIMEOUT)
            edit = resolved.edit
        if edit is not None:
            self.last_edits = edits_of(edit, uri)
            self._set(uri, apply_edits(self.texts[uri], self.last_edits, self.encoding))
        else:
            assert action.command is not None, f"action has neither edit nor command: {action.title}"
            before = len(self.applied)
            await asyncio.wait_for(
                self.client.workspace_execute_command_async(
                    types.ExecuteCommandParams(command=action.command.command, arguments=action.command.arguments)
                ),
                TIMEOUT,
            )
            assert len(self.applied) == before + 1  # the server asked us to apply exactly one edit
        return self.texts[uri]


SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "ddpfix.lsp"])


async def start(lsp_client: LanguageClient, kind: str) -> None:
    registrations: list[types.Registration] = []

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def on_register(params: types.RegistrationParams):  # VS Code lets servers watch files
        registrations.extend(params.registrations)

    result = await lsp_client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities(kind), initialization_options={"docsUrl": DOCS})
    )
    encoding = str(
        getattr(result.capabilities.position_encoding, "value", result.capabilities.position_encoding) or "utf-16"
    )
    lsp_client.editor = Editor(lsp_client, kind, encoding)
    lsp_client.editor.registrations = registrations


@pytest_lsp.fixture(config=SERVER, params=CLIENTS, scope="module")
async def client(request, lsp_client: LanguageClient):
    await start(lsp_client, request.param)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def editor(client: LanguageClient) -> "Editor":
    """The same test in VS Code, Neovim 0.11 and Emacs 29 (utf-16, utf-8, utf-32)."""
    return client.editor


@pytest.fixture(scope="module")
def vscode(client: LanguageClient) -> "Editor":
    """Behaviour that does not depend on the client: VS Code's server only (see `vscode_only`)."""
    return client.editor


vscode_only = pytest.mark.parametrize("client", ["visual-studio-code"], indirect=True)


def uri_for(tmp_path: Path, name: str = "train.py") -> str:
    return (tmp_path / name).as_uri()


def expected_range(text: str, d, encoding: str) -> tuple[tuple[int, int], tuple[int, int]]:
    lines = text.splitlines()  # the test texts have no form feeds

    def pos(line: int, col: int) -> tuple[int, int]:
        return (line - 1, units(lines[line - 1][: col - 1], encoding))

    return pos(d.line, d.col), pos(d.end_line, d.end_col)


def rng(r: types.Range) -> tuple[tuple[int, int], tuple[int, int]]:
    return (r.start.line, r.start.character), (r.end.line, r.end.character)


def find(diags, code: str) -> types.Diagnostic:
    hits = [d for d in diags if d.code == code]
    assert hits, f"no {code} in {[d.code for d in diags]}"
    return hits[0]


# ------------------------------------------------------------------ every client
ZERO = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))


async def test_negotiated_encoding(editor: Editor):
    assert (
        editor.encoding == {"visual-studio-code": "utf-16", "neovim@v0.11.0": "utf-8", "emacs": "utf-32"}[editor.kind]
    )


async def test_diagnostics_on_open_match_check(editor: Editor, tmp_path: Path):
    uri = uri_for(tmp_path)
    editor.open(uri, BEFORE)
    diags = await editor.diagnostics(uri)
    want = check_source(BEFORE)
    assert [d.code for d in diags] == [d.code for d in want]
    for got, exp in zip(diags, want):
        assert rng(got.range) == expected_range(BEFORE, exp, editor.encoding)
        assert got.source == "ddpfix" and got.severity == types.DiagnosticSeverity.Warning
        assert got.message == exp.message
    d201 = find(diags, "DDP201")
    if editor.kind == "visual-studio-code":  # the only one of the three that declares codeDescriptionSupport
        assert d201.code_description.href == f"{DOCS}#ddp201-missing-distributed-sampler"
    else:
        assert d201.code_description is None


async def test_quickfix_multi_place_edit_then_clear(editor: Editor, tmp_path: Path):
    """DDP201's sampler needs DDP001's process group: imports, constants, setup and the loader change
    arrive in one WorkspaceEdit that applies cleanly; both findings are gone afterwards."""
    uri = uri_for(tmp_path)
    editor.open(uri, BEFORE)
    diags = await editor.diagnostics(uri)
    d = find(diags, "DDP201")
    actions = await editor.actions(uri, d.range, [d], only=[types.CodeActionKind.QuickFix])
    assert all(a.kind == types.CodeActionKind.QuickFix for a in actions)  # `only` is honoured
    assert any(a.title == "Ignore DDP201 on this line" for a in actions)
    (fix,) = [a for a in actions if a.title.startswith("DDP201:")]
    assert fix.title == "DDP201: give the DataLoader a DistributedSampler"
    assert fix.is_preferred is True
    assert [x.code for x in fix.diagnostics] == ["DDP201"]

    text = await editor.apply(uri, fix)
    assert len(editor.last_edits) >= 3  # several places, one edit
    assert text == fix_source(BEFORE, select=["DDP201"]).code
    codes = [x.code for x in await editor.diagnostics(uri)]
    assert "DDP201" not in codes and "DDP001" not in codes
    assert "DDP301" in codes  # not part of this fix


async def test_fix_all_then_unsafe_convert(editor: Editor, tmp_path: Path):
    uri = uri_for(tmp_path)
    editor.open(uri, SMALL)
    await editor.diagnostics(uri)
    actions = await editor.actions(uri, ZERO, [], only=[types.CodeActionKind.SourceFixAll])
    assert [(a.title, a.kind) for a in actions] == [
        ("Fix all safely fixable DDP problems (ddpfix)", "source.fixAll.ddpfix")
    ]
    if editor.kind == "emacs":  # no resolve support: the action carries its edit
        assert actions[0].edit is not None and actions[0].data is None
    else:  # resolved when picked
        assert actions[0].edit is None and actions[0].data is not None
    text = await editor.apply(uri, actions[0])
    assert text == fix_source(SMALL).code
    assert "SyncBatchNorm" not in text  # unsafe fixes are never part of fix-all
    after = await editor.diagnostics(uri)
    # left: the unsafe SyncBatchNorm fix (the random data drawn with no seed is sent from rank 0: DDP210's fix)
    assert [x.code for x in after] == [x.code for x in check_source(text)] == ["DDP306"]

    unsafe = after[0]
    plain = "Convert to DDP, including unsafe fixes (ddpfix)"
    first = await editor.actions(uri, unsafe.range, [unsafe])  # its fix not known yet, or known already
    assert any(a.title.startswith(plain[:-1]) for a in first)
    # once the conversion is computed (in idle time), its title would say what it leaves incomplete: nothing here
    actions = await editor.settled_actions(
        uri, unsafe.range, [unsafe], lambda acts: any(a.title.startswith("DDP306:") for a in acts)
    )
    titles = [a.title for a in actions]
    quick = next(a for a in actions if a.title.startswith("DDP306:"))
    assert quick.title == "DDP306: convert BatchNorm to SyncBatchNorm (unsafe fix)" and not quick.is_preferred
    assert "Fix all safely fixable DDP problems (ddpfix)" not in titles  # nothing safe is left
    assert "Convert to DDP (ddpfix)" not in titles
    convert = next(a for a in actions if a.title.startswith("Convert to DDP, including unsafe fixes (ddpfix"))
    assert convert.title == "Convert to DDP, including unsafe fixes (ddpfix)"
    assert convert.kind == "source.convertToDdp.ddpfix"
    text = await editor.apply(uri, convert)
    assert "SyncBatchNorm" in text and text == fix_source(fix_source(SMALL).code, unsafe_fixes=True).code
    assert [x.code for x in await editor.diagnostics(uri)] == []


async def test_positions_after_non_ascii_text(editor: Editor, tmp_path: Path):
    """`étiquette, device = "modèle 😀", torch.device("cuda:0" ...)`: the finding starts after an
    emoji, so its column differs in UTF-8, UTF-16 and UTF-32; the fix, applied in the client's units,
    must give the engine's text."""
    uri = uri_for(tmp_path)
    editor.open(uri, UNICODE)
    diags = await editor.diagnostics(uri)
    d = find(diags, "DDP007")
    line = UNICODE.splitlines()[d.range.start.line]
    assert d.range.start.character == units(line[: line.index('"cuda:0"')], editor.encoding)
    assert d.range.start.character == {"utf-8": 54, "utf-16": 50, "utf-32": 49}[editor.encoding]

    cursor = types.Range(start=d.range.start, end=d.range.start)  # Neovim sends the cursor position
    (fix,) = [a for a in await editor.actions(uri, cursor, []) if a.title.startswith("DDP007")]
    text = await editor.apply(uri, fix)
    assert text == fix_source(UNICODE, select=["DDP007"]).code

    # type inside a string after "é" (an incremental change in client units), then fix DDP401 there
    d401 = find(await editor.diagnostics(uri), "DDP401")
    row = d401.range.start.line
    line = text.splitlines()[row]
    at = types.Position(line=row, character=units(line[: line.index('"ckpt.pt"') + 1], editor.encoding))
    editor.type_at(uri, at, "é😀_")
    typed = editor.texts[uri]
    assert '"é😀_ckpt.pt"' in typed
    d401 = find(await editor.diagnostics(uri), "DDP401")
    (fix,) = [a for a in await editor.actions(uri, d401.range, [d401]) if a.title.startswith("DDP401")]
    assert await editor.apply(uri, fix) == fix_source(typed, select=["DDP401"]).code


async def test_form_feed_and_unicode_line_separator(editor: Editor, tmp_path: Path):
    """A form feed and U+2028 are not LSP line breaks (Python's str.splitlines thinks they are)."""
    src = SMALL.replace("\n\ndef main():", '\n\x0c\nNOTE = "a\u2028b"  # \u2029 😀\n\n\ndef main():', 1)
    uri = uri_for(tmp_path)
    editor.open(uri, src)
    diags = await editor.diagnostics(uri)
    want = check_source(src)
    assert [d.code for d in diags] == [d.code for d in want]
    d = find(diags, "DDP406")
    assert d.range.start.line == next(x.line for x in want if x.code == "DDP406") - 1
    # type on the line: the server must apply the change where the client does
    editor.type_at(uri, types.Position(line=d.range.start.line, character=8), "if True: ")
    text = editor.texts[uri]
    d = find(await editor.diagnostics(uri), "DDP406")
    (fix,) = [a for a in await editor.actions(uri, d.range, [d]) if a.title.startswith("DDP406")]
    assert await editor.apply(uri, fix) == fix_source(text, select=["DDP406"]).code


async def test_ignore_on_this_line(editor: Editor, tmp_path: Path):
    uri = uri_for(tmp_path)
    src = SMALL.replace('print(f"epoch {epoch}")', 'print(f"époque 😀 {epoch}")')
    editor.open(uri, src)
    diags = await editor.diagnostics(uri)
    d = find(diags, "DDP406")
    (ignore,) = [a for a in await editor.actions(uri, d.range, [d]) if a.title == "Ignore DDP406 on this line"]
    assert not ignore.is_preferred
    text = await editor.apply(uri, ignore)
    assert '        print(f"époque 😀 {epoch}")  # ddpfix: ignore[DDP406]\n' in text
    after = await editor.diagnostics(uri)
    assert [x.code for x in after] == [x.code for x in diags if x.code != "DDP406"]


# ------------------------------------------------------------------ one client is enough
@vscode_only
async def test_set_epoch_title_and_moved_optimizer(vscode: Editor, tmp_path: Path):
    uri = uri_for(tmp_path)
    vscode.open(uri, UNICODE)
    diags = await vscode.diagnostics(uri)
    d204 = find(diags, "DDP204")
    (fix,) = [a for a in await vscode.actions(uri, d204.range, [d204]) if a.title.startswith("DDP204")]
    assert fix.title in ("DDP204: call sampler.set_epoch(epoch) each epoch", "DDP204: call sampler.set_epoch(epoch)")
    # once the fix is known, the title names the sampler and the epoch variable it uses
    actions = await vscode.settled_actions(
        uri, d204.range, [d204], lambda acts: any(a.title == "DDP204: call sampler.set_epoch(epoch)" for a in acts)
    )
    assert [a.title for a in actions if a.title.startswith("DDP204")] == ["DDP204: call sampler.set_epoch(epoch)"]
    d305 = find(diags, "DDP305")
    (move,) = [a for a in await vscode.actions(uri, d305.range, [d305]) if a.title.startswith("DDP305")]
    text = await vscode.apply(uri, move)
    assert text == fix_source(UNICODE, select=["DDP305"]).code
    assert "DDP305" not in [x.code for x in await vscode.diagnostics(uri)]


@vscode_only
async def test_convert_whole_file(vscode: Editor, tmp_path: Path):
    uri = uri_for(tmp_path)
    vscode.open(uri, UNICODE)
    await vscode.diagnostics(uri)
    here = types.Range(start=types.Position(line=3, character=0), end=types.Position(line=3, character=0))
    actions = await vscode.actions(uri, here, [], only=["source"])
    assert {a.kind for a in actions} == {"source.fixAll.ddpfix", "source.convertToDdp.ddpfix"}
    (convert,) = [a for a in actions if a.title.startswith("Convert to DDP (ddpfix")]
    text = await vscode.apply(uri, convert)
    assert text == fix_source(UNICODE).code
    left = await vscode.diagnostics(uri)
    # nothing is left: the synthetic data drawn with no seed is sent from rank 0 (DDP210's fix)
    assert [x.code for x in left] == [x.code for x in check_source(text)] == []


@vscode_only
async def test_an_incomplete_conversion_says_so(vscode: Editor, tmp_path: Path):
    """Converting a script whose result still breaks the DDP contract (a target drawn at random with no
    seed: a different task on every rank) applies the edit, and the editor shows what is incomplete, with the line to change; once
    the result is known, the action's title says it too."""
    uri = uri_for(tmp_path)
    src = INCOMPLETE
    vscode.open(uri, src)
    await vscode.diagnostics(uri)
    here = types.Range(start=types.Position(line=3, character=0), end=types.Position(line=3, character=0))
    (convert,) = [a for a in await vscode.actions(uri, here, [], only=["source"]) if a.title.startswith("Convert")]
    text = await vscode.apply(uri, convert)
    assert text == fix_source(src).code
    expected = ddpfix.fix_source(src).incomplete
    assert [b.code for b in expected] == ["DDP210"]
    warning = f"line {expected[0].line}: {expected[0].format()}"
    assert any(warning in m.message for m in vscode.client.messages)
    vscode.replace_all(uri, src)
    await vscode.diagnostics(uri)
    done = "Convert to DDP (ddpfix; incomplete: task differs by rank)"
    actions = await vscode.settled_actions(uri, here, [], lambda acts: any(a.title == done for a in acts), ["source"])
    assert "Convert to DDP (ddpfix)" not in [a.title for a in actions]


@vscode_only
async def test_suppression_comment_merges_into_an_existing_one(vscode: Editor, tmp_path: Path):
    uri = uri_for(tmp_path)
    src = SMALL.replace(
        '    torch.save(model.state_dict(), "model.pt")',
        '    torch.save(model.state_dict(), "model.pt"); print("saved")  # ddpfix: ignore[DDP401]',
    )
    vscode.open(uri, src)
    d = find(await vscode.diagnostics(uri), "DDP406")
    d = [x for x in await vscode.diagnostics(uri) if x.code == "DDP406"][-1]
    (ignore,) = [a for a in await vscode.actions(uri, d.range, [d]) if a.title == "Ignore DDP406 on this line"]
    text = await vscode.apply(uri, ignore)
    assert '"model.pt"); print("saved")  # ddpfix: ignore[DDP401, DDP406]\n' in text
    assert [x.line for x in check_source(text) if x.code in ("DDP401", "DDP406")] == [16]


@vscode_only
async def test_syntax_error_clears_and_recovers(vscode: Editor, tmp_path: Path):
    uri = uri_for(tmp_path)
    vscode.open(uri, SMALL)
    assert len(await vscode.diagnostics(uri)) > 0
    vscode.replace_all(uri, SMALL.replace("def main():", "def main(:", 1))
    assert len(await vscode.diagnostics(uri)) == 0  # no stale findings on a file that does not parse
    here = types.Range(start=types.Position(line=8, character=4), end=types.Position(line=8, character=4))
    assert await vscode.actions(uri, here, []) == []
    assert any("syntax error" in m.message for m in vscode.client.log_messages)
    vscode.replace_all(uri, SMALL)
    assert len(await vscode.diagnostics(uri)) == len(check_source(SMALL))


@vscode_only
async def test_close_clears(vscode: Editor, tmp_path: Path):
    uri = uri_for(tmp_path)
    vscode.open(uri, SMALL)
    assert len(await vscode.diagnostics(uri)) > 0
    vscode.client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert len(await vscode.diagnostics(uri, version=None)) == 0


@vscode_only
async def test_fast_typing_is_debounced(vscode: Editor, tmp_path: Path):
    uri = uri_for(tmp_path)
    vscode.open(uri, SMALL)
    await vscode.diagnostics(uri)
    first = len(vscode.published)
    row = SMALL.splitlines().index('        print(f"epoch {epoch}")')
    for i in range(5):
        vscode.type_at(uri, types.Position(line=row, character=8 + i), "x")
    diags = await vscode.diagnostics(uri)  # version 6
    assert [d.code for d in diags] == [d.code for d in check_source(vscode.texts[uri])]
    assert len([p for p in vscode.published[first:] if p.uri == uri]) < 5  # not one analysis per keystroke


@vscode_only
async def test_settings_from_workspace_pyproject(vscode: Editor, tmp_path: Path):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n\n[tool.ddpfix]\nignore = ["DDP406", "DDP401"]\n', encoding="utf-8")
    uri = (project / "src" / "train.py").as_uri()
    vscode.open(uri, SMALL)
    codes = [d.code for d in await vscode.diagnostics(uri)]
    assert codes == [d.code for d in check_source(SMALL) if d.code not in ("DDP406", "DDP401")]

    (fix_all,) = await vscode.actions(uri, ZERO, [], only=[types.CodeActionKind.SourceFixAll])
    assert await vscode.apply(uri, fix_all) == fix_source(SMALL, ignore=["DDP406", "DDP401"]).code  # same settings
    await vscode.diagnostics(uri)

    # a changed pyproject.toml applies on the next analysis (no file watcher needed)
    pyproject.write_text('[tool.ddpfix]\nselect = ["DDP4"]\n', encoding="utf-8")
    vscode.replace_all(uri, SMALL)
    assert [d.code for d in await vscode.diagnostics(uri)] == ["DDP406", "DDP401"]

    # a broken config: a warning, and the default rules
    pyproject.write_text('[tool.ddpfix]\nselect = ["NOPE9"]\n', encoding="utf-8")
    vscode.replace_all(uri, SMALL + "\n")
    assert [d.code for d in await vscode.diagnostics(uri)] == [d.code for d in check_source(SMALL)]
    assert any("NOPE9" in m.message for m in vscode.client.messages)

    # the server asked VS Code to watch pyproject.toml files
    assert [r.method for r in vscode.registrations] == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]


async def send_raw(editor: Editor, payload: bytes, msg_id) -> Exception | object:
    """Write one framed message straight to the server and wait for the answer to `msg_id`."""
    proto = editor.client.protocol
    fut: concurrent.futures.Future = concurrent.futures.Future()
    proto._request_futures[msg_id] = fut
    res = proto.writer.write(b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
    if asyncio.iscoroutine(res) or isinstance(res, asyncio.Future):
        await res
    try:
        return await asyncio.wait_for(asyncio.wrap_future(fut), TIMEOUT)
    except Exception as exc:  # an error answer
        return exc


@vscode_only
async def test_malformed_requests_get_errors_and_the_server_keeps_serving(vscode: Editor, tmp_path: Path):
    # params that do not decode as CodeActionParams
    bad = json.dumps(
        {"jsonrpc": "2.0", "id": "bad-1", "method": "textDocument/codeAction", "params": {"textDocument": 42}}
    )
    err = await send_raw(vscode, bad.encode(), "bad-1")
    assert getattr(err, "code", None) == -32602, err  # InvalidParams
    # a method nobody implements
    unknown = json.dumps({"jsonrpc": "2.0", "id": "bad-2", "method": "ddpfix/noSuchMethod", "params": {}})
    err = await send_raw(vscode, unknown.encode(), "bad-2")
    assert getattr(err, "code", None) == -32601, err  # MethodNotFound
    # a body that is not JSON: answered with a parse error (id null)
    err = await send_raw(vscode, b'{"jsonrpc": "2.0", "id": "bad-3", "method": ', None)
    assert getattr(err, "code", None) == -32700, err  # ParseError
    # a command with a wrong argument
    with pytest.raises(Exception) as wrong:
        await asyncio.wait_for(
            vscode.client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="ddpfix.applyAction", arguments=[{"uri": "file:///nope.py"}])
            ),
            TIMEOUT,
        )
    assert getattr(wrong.value, "code", None) == -32602, wrong.value

    # still serving: diagnostics and code actions work
    uri = uri_for(tmp_path)
    vscode.open(uri, SMALL)
    diags = await vscode.diagnostics(uri)
    assert len(diags) == len(check_source(SMALL))
    assert await vscode.actions(uri, diags[0].range, diags[:1])
    # a code action for a document that was never opened: an empty answer, not an error
    assert await vscode.actions(uri_for(tmp_path, "never_opened.py"), ZERO, []) == []


@vscode_only
async def test_not_a_training_script(vscode: Editor, tmp_path: Path):
    uri = uri_for(tmp_path, "util.py")
    vscode.open(uri, "import json\n\nprint(json.dumps({}))\n")
    assert len(await vscode.diagnostics(uri)) == 0
    notes = uri_for(tmp_path, "NOTES.md")  # not Python at all, whatever it says
    vscode.open(notes, SMALL, language_id="markdown")
    assert len(await vscode.diagnostics(notes)) == 0


@vscode_only
async def test_crlf_document(vscode: Editor, tmp_path: Path):
    src = SMALL.replace("\n", "\r\n")
    uri = uri_for(tmp_path)
    vscode.open(uri, src)
    d = find(await vscode.diagnostics(uri), "DDP401")
    (fix,) = [a for a in await vscode.actions(uri, d.range, [d]) if a.title.startswith("DDP401")]
    text = await vscode.apply(uri, fix)
    assert text == fix_source(src, select=["DDP401"]).code
    assert "\n" not in text.replace("\r\n", "")


@vscode_only
async def test_apply_action_command(vscode: Editor, tmp_path: Path):
    """For clients that only take bare Commands: the server computes the edit and sends workspace/applyEdit."""
    uri = uri_for(tmp_path)
    vscode.open(uri, SMALL)
    await vscode.diagnostics(uri)
    data = {
        "uri": uri,
        "version": 1,
        "action": "fix",
        "code": "DDP401",
        "unsafe": False,
        "title": "DDP401: save on rank 0 only",
    }
    before = len(vscode.applied)
    await asyncio.wait_for(
        vscode.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="ddpfix.applyAction", arguments=[data])
        ),
        TIMEOUT,
    )
    assert len(vscode.applied) == before + 1
    assert vscode.texts[uri] == fix_source(SMALL, select=["DDP401"]).code
    assert "DDP401" not in [d.code for d in await vscode.diagnostics(uri)]


@vscode_only
async def test_stale_ignore_action_does_nothing_and_save_republishes(vscode: Editor, tmp_path: Path):
    uri = uri_for(tmp_path)
    vscode.open(uri, SMALL)
    d = find(await vscode.diagnostics(uri), "DDP406")
    (ignore,) = [a for a in await vscode.actions(uri, d.range, [d]) if a.title == "Ignore DDP406 on this line"]
    vscode.type_at(uri, ZERO.start, "# a new first line\n")  # every line moves down by one
    await vscode.diagnostics(uri)
    resolved = await asyncio.wait_for(vscode.client.code_action_resolve_async(ignore), TIMEOUT)
    assert not resolved.edit.changes and not resolved.edit.document_changes  # not applied to the wrong line

    before = len(vscode.published)
    vscode.client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert [d.code for d in await vscode.diagnostics(uri, since=before)] == [
        d.code for d in check_source(vscode.texts[uri])
    ]


WRITES_METRICS = (DATA / "writes_metrics.py").read_text(encoding="utf-8")  # writes a file it reads back


@vscode_only
async def test_a_fix_the_guard_withholds_is_not_offered_and_the_diagnostics_say_why(vscode: Editor, tmp_path: Path):
    """DDP405 would guard the `with open(...)` to rank 0, leaving `stats` unbound on the other ranks."""
    uri = uri_for(tmp_path)
    vscode.open(uri, WRITES_METRICS)
    d = find(await vscode.diagnostics(uri), "DDP405")
    assert "not fixed" not in d.message  # diagnostics come from `check`, which computes no fix
    # the fix, computed in idle time, is withheld: the diagnostics are published again, saying why
    (first,) = [i for i, p in enumerate(vscode.published) if p.uri == uri]
    again = find(await vscode.diagnostics(uri, since=first + 1), "DDP405")
    (fix,) = [a for a in await vscode.actions(uri, d.range, [d]) if a.title.startswith("DDP405")]
    assert fix.edit is None and fix.data is None and fix.command is None
    assert fix.disabled.reason.startswith("not fixed: binds `stats` under `if RANK == 0:` only")
    assert again.message == f"{d.message} ({fix.disabled.reason})"


@vscode_only
async def test_convert_also_edits_the_scripts_own_module(vscode: Editor, tmp_path: Path):
    """A conversion whose DDP201 fix also edits the loader factory in data_utils.py is one workspace edit
    over both files (the module, not open, with version null), its title says so, and applying it gives
    the files `ddpfix apply` writes."""
    from typer.testing import CliRunner

    from ddpfix.cli import app

    case = Path(__file__).parent / "golden" / "loader_factory_module"
    for folder in (tmp_path / "editor", tmp_path / "cli"):
        folder.mkdir()
        (folder / "train.py").write_bytes((case / "input.py").read_bytes())
        (folder / "data_utils.py").write_bytes((case / "data_utils.py").read_bytes())
    uri, module_uri = uri_for(tmp_path / "editor"), uri_for(tmp_path / "editor", "data_utils.py")
    src = (case / "input.py").read_text()
    vscode.open(uri, src)
    await vscode.diagnostics(uri)
    here = types.Range(start=types.Position(line=3, character=0), end=types.Position(line=3, character=0))
    title = "Convert to DDP (ddpfix; also edits data_utils.py)"
    actions = await vscode.settled_actions(uri, here, [], lambda acts: any(a.title == title for a in acts), ["source"])
    (convert,) = [a for a in actions if a.title.startswith("Convert")]
    edit = convert.edit or (await asyncio.wait_for(vscode.client.code_action_resolve_async(convert), TIMEOUT)).edit
    assert edit is not None and edit.document_changes is not None
    by_uri = {c.text_document.uri: c for c in edit.document_changes}
    assert list(by_uri) == [uri, module_uri]
    assert (
        by_uri[uri].text_document.version == vscode.versions[uri] and by_uri[module_uri].text_document.version is None
    )
    module = (tmp_path / "editor" / "data_utils.py").read_text()
    got = {
        "train.py": apply_edits(src, by_uri[uri].edits, vscode.encoding),
        "data_utils.py": apply_edits(module, by_uri[module_uri].edits, vscode.encoding),
    }
    result = CliRunner().invoke(app, ["apply", str(tmp_path / "cli" / "train.py")])
    assert result.exit_code == 0, result.output
    assert got == {name: (tmp_path / "cli" / name).read_text() for name in got}
    assert "distributed=False" in got["data_utils.py"]


@vscode_only
async def test_a_quick_fix_that_edits_only_the_module(vscode: Editor, tmp_path: Path):
    """The script is distributed already (trainer_module's expected.py); only the Trainer of trainer.py
    saves on every rank. DDP401's quick-fix on the entry is a workspace edit whose text edits all lie in
    trainer.py (the entry's own entry carries its version and no edit), and applying it gives the files
    `ddpfix apply --select DDP401` writes (which reports the DDP402 it leaves as incomplete); fix-all
    gives those of `ddpfix apply`."""
    from typer.testing import CliRunner

    from ddpfix.cli import app

    case = Path(__file__).parent / "golden" / "trainer_module"
    src = (case / "expected.py").read_text()
    module = (case / "trainer.py").read_text()
    for folder in ("editor", "cli_one", "cli_all"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "train.py").write_text(src)
        (tmp_path / folder / "trainer.py").write_text(module)
    uri, module_uri = uri_for(tmp_path / "editor"), uri_for(tmp_path / "editor", "trainer.py")
    vscode.open(uri, src)
    diags = await vscode.diagnostics(uri)
    assert sorted(d.code for d in diags) == ["DDP401", "DDP402"]

    async def edited(action: types.CodeAction) -> dict[str, str]:
        edit = action.edit or (await asyncio.wait_for(vscode.client.code_action_resolve_async(action), TIMEOUT)).edit
        assert edit is not None and edit.document_changes is not None
        by_uri = {c.text_document.uri: c for c in edit.document_changes}
        assert list(by_uri) == [uri, module_uri]
        assert not by_uri[uri].edits and by_uri[uri].text_document.version == vscode.versions[uri]
        assert by_uri[module_uri].edits and by_uri[module_uri].text_document.version is None
        return {"train.py": src, "trainer.py": apply_edits(module, by_uri[module_uri].edits, vscode.encoding)}

    def cli(folder: str, *args: str, exit_code: int = 0) -> dict[str, str]:
        result = CliRunner().invoke(app, ["apply", *args, str(tmp_path / folder / "train.py")])
        assert result.exit_code == exit_code, result.output
        return {name: (tmp_path / folder / name).read_text() for name in ("train.py", "trainer.py")}

    d401 = find(diags, "DDP401")
    title = "DDP401: save on rank 0 only (also edits trainer.py)"
    actions = await vscode.settled_actions(uri, d401.range, [d401], lambda acts: any(a.title == title for a in acts))
    (fix,) = [a for a in actions if a.title.startswith("DDP401")]
    one = await edited(fix)
    assert one == cli("cli_one", "--select", "DDP401", exit_code=1)  # DDP402 is left: incomplete
    assert "dist.get_rank() == 0" in one["trainer.py"] and "self.model.state_dict()" in one["trainer.py"]

    (fix_all,) = await vscode.actions(uri, d401.range, [], only=["source.fixAll.ddpfix"])
    every = await edited(fix_all)
    assert every == cli("cli_all")
    assert 'getattr(self.model, "module", self.model).state_dict()' in every["trainer.py"]
