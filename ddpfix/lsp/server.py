"""`ddpfix lsp`: the language server (pygls 2, stdio).

- Diagnostics on open, save and change (debounced), from the engine behind `ddpfix check`.
- Code actions: a quick-fix per fixable finding, "Ignore DDPxxx on this line", `source.fixAll.ddpfix`
  (safe fixes) and "Convert to DDP (ddpfix)" with and without unsafe fixes.
- Settings: the workspace's `[tool.ddpfix]` (select / ignore / per-file-ignores), like the CLI.

The server keeps its own copy of each open document (see `text.py` for why) and one `Analysis` per
document version, shared by diagnostics and code actions.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcException, JsonRpcInvalidParams, JsonRpcParseError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from .. import __version__
from ..diagnostic import SAFE, UNSAFE, Diagnostic
from . import actions as A
from .analysis import Analysis
from .settings import RuleOptions, Settings
from .text import UTF16, Text, apply_changes, text_edits

log = logging.getLogger("ddpfix.lsp")

DEBOUNCE_S = 0.05  # after the last keystroke; open and save analyse at once
_ANSWERED = object()  # a request already answered with an error while decoding it


class DdpfixProtocol(LanguageServerProtocol):
    """pygls' protocol, with two changes.

    - A request whose params do not decode gets a JSON-RPC error answer (InvalidParams) instead of
      no answer at all, so the client does not wait forever; the server goes on serving.
    - Open documents are kept by the server (`DdpfixServer.docs`), not by pygls' workspace, whose
      line splitting (`str.splitlines`) disagrees with LSP's on form feeds and Unicode separators.
    """

    def structure_message(self, data: Any):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                cause = exc.__cause__
                detail = str(cause).splitlines()[0] if cause is not None else exc.message
                err = JsonRpcInvalidParams(f"invalid params for {data.get('method')}: {detail}")
                self._send_response(data["id"], None, err.to_response_error())
                return _ANSWERED
            raise

    def handle_message(self, message):
        if message is _ANSWERED:
            return
        super().handle_message(message)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


@dataclass
class Document:
    uri: str
    text: str
    version: int | None
    path: str | None  # file system path (None for untitled: and other non-file URIs)
    analysis: Analysis | None = None
    timer: asyncio.TimerHandle | None = None


@dataclass
class ClientFeatures:
    """What this client can do, read once from its capabilities."""

    encoding: str = UTF16
    code_description: bool = False
    resolve_edit: bool = False
    document_changes: bool = False
    literals: bool = True
    watch_files: bool = False
    disabled: bool = False  # shows a code action that cannot run, with the reason

    @classmethod
    def read(cls, caps: types.ClientCapabilities | None, encoding: str | None) -> "ClientFeatures":
        f = cls(encoding=str(getattr(encoding, "value", encoding) or UTF16))  # pygls' default is an enum member
        td = caps.text_document if caps else None
        pd = td.publish_diagnostics if td else None
        f.code_description = bool(pd and pd.code_description_support)
        ca = td.code_action if td else None
        if ca is not None:
            f.literals = ca.code_action_literal_support is not None
            props = ca.resolve_support.properties if ca.resolve_support else []
            f.resolve_edit = "edit" in props and bool(ca.data_support)
            f.disabled = bool(ca.disabled_support)
        else:
            f.literals = False
        ws = caps.workspace if caps else None
        f.document_changes = bool(ws and ws.workspace_edit and ws.workspace_edit.document_changes)
        dcw = ws.did_change_watched_files if ws else None
        f.watch_files = bool(dcw and dcw.dynamic_registration)
        return f


class DdpfixServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "ddpfix",
            __version__,
            protocol_cls=DdpfixProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.docs: dict[str, Document] = {}
        self.client = ClientFeatures()
        self.settings = Settings()
        self.debounce = DEBOUNCE_S
        self.docs_url: str | None = default_docs_url()
        self.root: str | None = None
        self._shown_errors: set[str] = set()

    # ------------------------------------------------------------------ reporting
    def report_server_error(self, error, source):
        if isinstance(error, json.JSONDecodeError):  # a body that is not JSON: JSON-RPC's parse error, id null
            # a plain dict, so that "id": null is written (the typed message would drop a None id)
            err = {"code": JsonRpcParseError.CODE, "message": f"invalid JSON: {error}"}
            self.protocol._send_data({"jsonrpc": "2.0", "id": None, "error": err})
            return
        log.error("%s: %s", getattr(source, "__name__", source), error)
        if source is not FeatureRequestError:  # a failed request already carries its error to the client
            self._log(f"ddpfix: {error}", types.MessageType.Error)

    def _log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))
        except Exception:  # pragma: no cover - the client is gone
            pass

    def _show_once(self, message: str) -> None:
        if message in self._shown_errors:
            return
        self._shown_errors.add(message)
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))

    # ------------------------------------------------------------------ analysis
    def options_for(self, doc: Document) -> RuleOptions:
        opts = self.settings.for_path(doc.path, self.root)
        if opts.error:
            self._show_once(f"ddpfix: {opts.error}; using the default rules")
        return opts

    def analysis(self, doc: Document) -> Analysis:
        """The analysis of the document's current text (cached per version, text and options)."""
        opts = self.options_for(doc)
        a = doc.analysis
        if a is None or not a.matches(doc.text, doc.version, opts):
            a = doc.analysis = Analysis.run(doc.text, doc.version, opts, path=doc.path or doc.uri)
            if a.error:
                self._log(f"ddpfix: no diagnostics for {doc.uri}: {a.error}")
        return a

    def lsp_diagnostics(self, doc: Document, a: Analysis) -> list[types.Diagnostic]:
        snap = Text(a.text, self.client.encoding)
        out = []
        for d in a.diagnostics:
            reason = a.withheld.get(d.code) if d.fixable else None
            out.append(
                types.Diagnostic(
                    range=snap.range(d.line, d.col, d.end_line, d.end_col),
                    message=d.message if reason is None else f"{d.message} (not fixed: {reason})",
                    severity=types.DiagnosticSeverity.Warning,
                    code=d.code,
                    code_description=self._code_description(d.code),
                    source="ddpfix",
                )
            )
        return out

    def _code_description(self, code: str) -> types.CodeDescription | None:
        if not (self.client.code_description and self.docs_url):
            return None
        name = A.rule_name(code)
        anchor = f"{code.lower()}-{name}" if name else code.lower()
        return types.CodeDescription(href=f"{self.docs_url}#{anchor}")

    def publish(self, doc: Document) -> None:
        if doc.timer is not None:
            doc.timer.cancel()
            doc.timer = None
        a = self.analysis(doc)
        diags = self.lsp_diagnostics(doc, a)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=diags, version=doc.version)
        )

    def publish_later(self, doc: Document) -> None:
        if doc.timer is not None:
            doc.timer.cancel()
        loop = asyncio.get_running_loop()

        def fire() -> None:
            doc.timer = None
            if self.docs.get(doc.uri) is doc:
                try:
                    self.publish(doc)
                except Exception as exc:  # never let a timer callback kill the loop
                    log.exception("publishing diagnostics")
                    self._log(f"ddpfix: internal error: {exc}", types.MessageType.Error)

        doc.timer = loop.call_later(self.debounce, fire)

    def republish_all(self) -> None:
        self.settings.clear()
        for doc in list(self.docs.values()):
            self.publish(doc)

    # ------------------------------------------------------------------ edits
    def workspace_edit(self, doc: Document, new_text: str) -> types.WorkspaceEdit:
        edits = text_edits(doc.text, new_text, self.client.encoding)
        if self.client.document_changes:
            ident = types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version)
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=ident, edits=edits)])
        return types.WorkspaceEdit(changes={doc.uri: edits})

    def action_edit(self, doc: Document, data: dict) -> types.WorkspaceEdit | None:
        """Compute the edit of an action described by `data` against the document's current text."""
        a = self.analysis(doc)
        if a.error:
            return None
        kind = data.get("action")
        if kind == "ignore":
            if data.get("version") != doc.version:
                return None  # picked on an older text: its line number may point elsewhere now
            diag = Diagnostic(
                code=str(data["code"]), message="", line=int(data["line"]), col=1, end_line=int(data["line"]), end_col=1
            )
            spot = A.suppression_edit(doc.text, diag)
            if spot is None:
                return None
            line, start, end, new = spot
            lines = Text(doc.text, "utf-32")
            s = lines.starts[line - 1]
            return self.workspace_edit(doc, doc.text[: s + start] + new + doc.text[s + end :])
        unsafe = bool(data.get("unsafe"))
        codes = (str(data["code"]),) if kind == "fix" else None
        res = self.fixed(doc, a, codes, unsafe)
        if res is None or not res.changed or (codes is not None and codes[0] in res.withheld):
            return None  # nothing to change, or the output guard withheld the fix asked for
        return self.workspace_edit(doc, res.code)

    def fixed(self, doc: Document, a: Analysis, codes: tuple[str, ...] | None, unsafe: bool):
        """`a.fixed(...)`; when the output guard withholds a fix not known to be withheld before, the
        diagnostics are published again, saying why."""
        known = len(a.withheld)
        res = a.fixed(codes, unsafe)
        if len(a.withheld) > known and doc.analysis is a:
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(
                    uri=doc.uri, diagnostics=self.lsp_diagnostics(doc, a), version=doc.version
                )
            )
        return res


def default_docs_url() -> str | None:
    """Where rule documentation lives: the package's Documentation URL, else docs/rules.md beside a
    source checkout; None (no codeDescription) when neither exists."""
    try:
        from importlib.metadata import metadata

        for entry in metadata("ddpfix").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() in ("documentation", "docs"):
                return url.strip().rstrip("/") + "/rules.md" if not url.strip().endswith(".md") else url.strip()
    except Exception:
        pass
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    local = os.path.join(here, "docs", "rules.md")
    if os.path.isfile(local):
        from pygls.uris import from_fs_path

        return from_fs_path(local)
    return None


def _path_of(uri: str) -> str | None:
    if not uri.startswith("file:"):
        return None
    try:
        return to_fs_path(uri) or unquote(urlparse(uri).path)
    except Exception:
        return None


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def create_server() -> DdpfixServer:
    ls = DdpfixServer()

    @ls.feature(types.INITIALIZE)
    def initialize(ls: DdpfixServer, params: types.InitializeParams) -> None:
        ls.client = ClientFeatures.read(params.capabilities, ls.workspace.position_encoding)
        opts = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        if isinstance(opts.get("debounceMs"), (int, float)) and opts["debounceMs"] >= 0:
            ls.debounce = opts["debounceMs"] / 1000
        if isinstance(opts.get("docsUrl"), str) and opts["docsUrl"]:
            ls.docs_url = opts["docsUrl"]
        folders = params.workspace_folders or []
        root = folders[0].uri if folders else (params.root_uri or None)
        ls.root = _path_of(root) if root else (params.root_path or None)

    @ls.feature(types.INITIALIZED)
    async def initialized(ls: DdpfixServer, params: types.InitializedParams) -> None:
        if not ls.client.watch_files:
            return
        watch = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]
        )
        reg = types.Registration(
            id="ddpfix-pyproject", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=watch
        )
        try:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[reg]))
        except Exception as exc:  # the client said no: pyproject changes are still seen on the next edit
            log.info("file watching not registered: %s", exc)

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: DdpfixServer, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        old = ls.docs.pop(item.uri, None)
        if old is not None and old.timer is not None:
            old.timer.cancel()
        if item.language_id not in ("python", "") and not item.uri.endswith((".py", ".pyi")):
            # an editor configured to send every file: nothing here is Python
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=item.uri, diagnostics=[], version=item.version)
            )
            return
        doc = ls.docs[item.uri] = Document(item.uri, item.text, item.version, _path_of(item.uri))
        ls.publish(doc)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: DdpfixServer, params: types.DidChangeTextDocumentParams) -> None:
        doc = ls.docs.get(params.text_document.uri)
        if doc is None:
            return
        doc.text = apply_changes(doc.text, params.content_changes, ls.client.encoding)
        doc.version = params.text_document.version
        ls.publish_later(doc)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: DdpfixServer, params: types.DidSaveTextDocumentParams) -> None:
        doc = ls.docs.get(params.text_document.uri)
        if doc is not None:
            if params.text is not None:
                doc.text = params.text
            ls.publish(doc)
        if params.text_document.uri.endswith("pyproject.toml"):
            ls.republish_all()

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DdpfixServer, params: types.DidCloseTextDocumentParams) -> None:
        doc = ls.docs.pop(params.text_document.uri, None)
        if doc is not None and doc.timer is not None:
            doc.timer.cancel()
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
        )

    @ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: DdpfixServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(c.uri.endswith("pyproject.toml") for c in params.changes):
            ls.republish_all()

    @ls.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=A.KINDS, resolve_provider=True),
    )
    def code_action(ls: DdpfixServer, params: types.CodeActionParams):
        doc = ls.docs.get(params.text_document.uri)
        if doc is None:
            return []
        return code_actions(ls, doc, params)

    @ls.feature(types.CODE_ACTION_RESOLVE)
    def code_action_resolve(ls: DdpfixServer, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        doc = ls.docs.get(str(data.get("uri", "")))
        if doc is None or action.edit is not None:
            return action
        action.edit = ls.action_edit(doc, data) or types.WorkspaceEdit(changes={})
        return action

    @ls.command(A.COMMAND)
    async def apply_action(ls: DdpfixServer, data: dict) -> None:
        """For clients without code-action resolve: compute the edit now and ask the client to apply it."""
        if not isinstance(data, dict):
            raise JsonRpcInvalidParams(f"{A.COMMAND} takes one object argument")
        doc = ls.docs.get(str(data.get("uri", "")))
        if doc is None:
            raise JsonRpcInvalidParams(f"{A.COMMAND}: document not open: {data.get('uri')}")
        edit = ls.action_edit(doc, data)
        if edit is None:
            return None
        await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=edit, label=str(data.get("title", "ddpfix")))
        )
        return None

    return ls


def code_actions(ls: DdpfixServer, doc: Document, params: types.CodeActionParams) -> list:
    a = doc.analysis
    fresh = a is not None and a.matches(doc.text, doc.version, ls.options_for(doc))
    if not fresh and params.context.trigger_kind == types.CodeActionTriggerKind.Automatic:
        # VS Code asks on every cursor move and keystroke; analysing a changed text here would run the
        # engine once per keystroke. The debounced analysis publishes soon, and the editor asks again.
        return []
    a = ls.analysis(doc)
    if a.error or not a.diagnostics:
        return []
    lsp_diags = ls.lsp_diagnostics(doc, a)  # the same objects as published for this analysis
    only = list(params.context.only) if params.context.only else None
    lazy = ls.client.resolve_edit
    asked = params.context.trigger_kind != types.CodeActionTriggerKind.Automatic  # (None: an older client)

    # the findings this request is about: overlapping the range, or sent back by the client as context
    context = {
        (d.code, d.range.start.line, d.range.start.character)
        for d in params.context.diagnostics
        if d.source == "ddpfix"
    }
    hits = [
        i
        for i, ld in enumerate(lsp_diags)
        if _overlaps(ld.range, params.range) or (ld.code, ld.range.start.line, ld.range.start.character) in context
    ]
    out: list = []

    def make(
        title: str, kind: str, data: dict, diags: list[types.Diagnostic] | None = None, preferred: bool | None = None
    ):
        data = {"uri": doc.uri, "version": doc.version, **data}
        if not ls.client.literals:  # an LSP 3.0 client: a bare Command, run by the server on request
            out.append(types.Command(title=title, command=A.COMMAND, arguments=[{**data, "title": title}]))
            return
        action = types.CodeAction(title=title, kind=kind, diagnostics=diags or None, is_preferred=preferred)
        if lazy:  # the edit is computed when the client resolves the action it picked
            action.data = data
        else:
            edit = ls.action_edit(doc, data)
            if edit is None:
                return
            action.edit = edit
        out.append(action)

    if A.kind_wanted(A.QUICKFIX, only):
        done: set[str] = set()
        for i in hits:
            d = a.diagnostics[i]
            if d.code in done or d.fix not in (SAFE, UNSAFE):
                continue
            done.add(d.code)
            same = [lsp_diags[j] for j, other in enumerate(a.diagnostics) if other.code == d.code]
            added = None
            # An action whose fix the output guard withholds is offered without an edit (disabled, with
            # the reason) and the diagnostics are published again saying why. That needs the fix: it
            # is computed (once per document version) when the user asks, or for DDP204's title;
            # for the requests editors send on every cursor move, only a fix computed before is used.
            key = ((d.code,), d.fix == UNSAFE)
            res = ls.fixed(doc, a, *key) if asked or key in a.fixes or d.code == "DDP204" else None
            if res is not None and d.code in res.withheld:
                if ls.client.literals and ls.client.disabled:
                    action = types.CodeAction(
                        title=A.fix_title(d.code, d.fix, len(same)),
                        kind=A.QUICKFIX,
                        diagnostics=same,
                        disabled=types.CodeActionDisabled(reason=f"not fixed: {res.withheld[d.code]}"),
                    )
                    out.append(action)
                continue
            if d.code == "DDP204" and res is not None:  # the title names the sampler and the epoch variable
                added = [line for e in text_edits(doc.text, res.code, "utf-32") for line in e.new_text.splitlines()]
            title = A.fix_title(d.code, d.fix, len(same), added)
            make(
                title,
                A.QUICKFIX,
                {"action": "fix", "code": d.code, "unsafe": d.fix == UNSAFE},
                same,
                preferred=d.fix == SAFE,
            )
        seen: set[tuple[str, int]] = set()
        for i in hits:
            d = a.diagnostics[i]
            if (d.code, d.line) in seen or d.code == "DDP000":
                continue
            seen.add((d.code, d.line))
            if A.suppression_edit(doc.text, d) is None:
                continue
            make(
                f"Ignore {d.code} on this line",
                A.QUICKFIX,
                {"action": "ignore", "code": d.code, "line": d.line},
                [lsp_diags[i]],
                preferred=False,
            )

    if any(d.fix == SAFE for d in a.diagnostics):
        if A.kind_wanted(A.FIX_ALL, only):
            make("Fix all safely fixable DDP problems (ddpfix)", A.FIX_ALL, {"action": "fixAll", "unsafe": False})
        if A.kind_wanted(A.CONVERT, only):
            make("Convert to DDP (ddpfix)", A.CONVERT, {"action": "convert", "unsafe": False})
    if any(d.fix == UNSAFE for d in a.diagnostics) and A.kind_wanted(A.CONVERT, only):
        make("Convert to DDP, including unsafe fixes (ddpfix)", A.CONVERT, {"action": "convert", "unsafe": True})
    return out


def main() -> None:
    """Serve over stdio until the client says exit."""
    logging.basicConfig(level=os.environ.get("DDPFIX_LSP_LOG", "WARNING").upper(), format="%(name)s: %(message)s")
    create_server().start_io()


__all__ = ["create_server", "main", "DdpfixServer", "code_actions"]
