"""`ddpfix lsp`: the language server (pygls 2, stdio).

- Diagnostics on open, save and change (debounced), from the engine behind `ddpfix check`.
- Code actions: a quick-fix per fixable finding, "Ignore DDPxxx on this line", `source.fixAll.ddpfix`
  (safe fixes) and "Convert to DDP (ddpfix)" with and without unsafe fixes.
- "Convert to DDP and verify (ddpfix)": a command (workspace/executeCommand `ddpfix.convertAndVerify`)
  that runs the rewrite under torchrun first and applies it only when it passes
  (`verify_command.py`); the verdict comes in a message. It runs only when the user runs it.
- Settings: the workspace's `[tool.ddpfix]` (select / ignore / per-file-ignores), like the CLI.

The server keeps its own copy of each open document (see `text.py` for why) and one `Analysis` per
document version, shared by diagnostics and code actions; an edited version is parsed reusing the
unchanged top-level statements of the last one (`reparse.py`), and the fixes code actions show are
computed ahead in a worker thread (`precompute.py`). This module registers the handlers; the
server they run on is `language_server.py`, the documents it keeps `documents.py`, the code actions
`code_actions.py`, and the JSON-RPC changes `protocol.py`.
"""

from __future__ import annotations

import logging
import os

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from . import actions as A
from .code_actions import code_actions
from .documents import ClientFeatures, Document, path_of
from .language_server import DdpfixServer, log
from .text import apply_changes
from .verify_command import VERIFY_COMMAND, convert_and_verify


def create_server() -> DdpfixServer:
    ls = DdpfixServer()

    @ls.feature(types.INITIALIZE)
    def initialize(ls: DdpfixServer, params: types.InitializeParams) -> None:
        ls.client = ClientFeatures.read(params.capabilities, ls.workspace.position_encoding)
        opts = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        if isinstance(opts.get("debounceMs"), (int, float)) and opts["debounceMs"] >= 0:
            ls.debounce = opts["debounceMs"] / 1000
        delay = opts.get("precomputeDelayMs")  # a negative number: compute fixes only when asked for
        if isinstance(delay, (int, float)) and not isinstance(delay, bool):
            ls.fix_delay = delay / 1000 if delay >= 0 else None
        if isinstance(opts.get("docsUrl"), str) and opts["docsUrl"]:
            ls.docs_url = opts["docsUrl"]
        folders = params.workspace_folders or []
        root = folders[0].uri if folders else (params.root_uri or None)
        ls.root = path_of(root) if root else (params.root_path or None)

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
        if old is not None:
            if old.timer is not None:
                old.timer.cancel()
            ls.cancel_fixes(old)
        if item.language_id not in ("python", "") and not item.uri.endswith((".py", ".pyi")):
            # an editor configured to send every file: nothing here is Python
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=item.uri, diagnostics=[], version=item.version)
            )
            return
        doc = ls.docs[item.uri] = Document(item.uri, item.text, item.version, path_of(item.uri))
        ls.publish(doc)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: DdpfixServer, params: types.DidChangeTextDocumentParams) -> None:
        doc = ls.docs.get(params.text_document.uri)
        if doc is None:
            return
        ls.cancel_fixes(doc)  # whatever was computed ahead is for the old text
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
        if doc is not None:
            if doc.timer is not None:
                doc.timer.cancel()
            ls.cancel_fixes(doc)
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

    @ls.command(VERIFY_COMMAND)
    async def convert_and_verify_command(ls: DdpfixServer, data: dict) -> dict:
        """Rewrite, run the rewrite under torchrun, apply it only when no check failed; the verdict in a message."""
        return await convert_and_verify(ls, data)

    return ls


def main() -> None:
    """Serve over stdio until the client says exit."""
    logging.basicConfig(level=os.environ.get("DDPFIX_LSP_LOG", "WARNING").upper(), format="%(name)s: %(message)s")
    create_server().start_io()


__all__ = ["create_server", "main", "ClientFeatures", "DdpfixServer", "Document", "code_actions"]
