"""The JSON-RPC side of the language server: pygls' protocol, with two changes (see `DdpfixProtocol`)."""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

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


__all__ = ["DdpfixProtocol"]
