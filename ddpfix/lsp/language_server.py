"""`DdpfixServer`: the documents, client features and settings the server keeps, and what its handlers
ask of it: one analysis per document version, diagnostics published (at once or debounced), the fixes
its code actions show computed ahead (`precompute.py`), and the workspace edit of a code action."""

from __future__ import annotations

import asyncio
import json
import logging
import os

from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcParseError
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path

from .. import __version__
from ..diagnostic import Diagnostic, FileChange
from . import actions as A
from .analysis import Analysis, FixKey
from .documents import ClientFeatures, Document
from .precompute import Job, Worker, keys_for
from .protocol import DdpfixProtocol
from .settings import RuleOptions, Settings
from .text import Text, text_edits

log = logging.getLogger("ddpfix.lsp")

DEBOUNCE_S = 0.05  # after the last keystroke; open and save analyse at once
FIX_DELAY_S = 0.3  # after the diagnostics of a version, with no newer one: compute its fixes ahead


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
        self.fix_delay: float | None = FIX_DELAY_S  # None: fixes are computed only when asked for
        self.worker = Worker()
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
            previous = a.statements if a is not None else None  # the same document, an earlier text
            a = doc.analysis = Analysis.run(doc.text, doc.version, opts, path=doc.path or doc.uri, previous=previous)
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
                    severity=types.DiagnosticSeverity.Information if d.info else types.DiagnosticSeverity.Warning,
                    code=d.code,
                    code_description=self._code_description(d.code),
                    source="ddpfix",
                )
            )
        return out

    @staticmethod
    def statement_starts(a: Analysis) -> list[int] | None:
        """The first lines of the analysed text's top-level statements (computed once per analysis)."""
        if "starts" not in a.memo:
            a.memo["starts"] = A.statement_starts(a.parsed.tree if a.parsed is not None else None)
        return a.memo["starts"]

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
        if doc.job is not None and doc.job.analysis is not a:
            self.cancel_fixes(doc)
        a.shown = len(a.withheld)
        diags = self.lsp_diagnostics(doc, a)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=diags, version=doc.version)
        )
        self.fixes_later(doc)

    def publish_withheld(self, doc: Document, a: Analysis) -> None:
        """Publish the diagnostics again when a fix computed since says why the guard withholds it
        (not once the document has changed: the next analysis publishes its own)."""
        if doc.analysis is not a or a.version != doc.version or a.text != doc.text:
            return
        if len(a.withheld) <= a.shown or self.docs.get(doc.uri) is not doc:
            return
        a.shown = len(a.withheld)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=self.lsp_diagnostics(doc, a), version=a.version)
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

    # ------------------------------------------------------------------ fixes computed ahead
    def fixes_later(self, doc: Document) -> None:
        """Compute the fixes of the analysis just published once `fix_delay` passes with no newer
        version (typing goes on: nothing is computed)."""
        if doc.fix_timer is not None:
            doc.fix_timer.cancel()
            doc.fix_timer = None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called outside the server's loop (a test, a script): only on request
            return
        if self.fix_delay is None:
            return

        def fire() -> None:
            doc.fix_timer = None
            if self.docs.get(doc.uri) is doc:
                self.fixes_now(doc)

        doc.fix_timer = loop.call_later(self.fix_delay, fire)

    def fixes_now(self, doc: Document, first: list[FixKey] | tuple = ()) -> Job | None:
        """Start computing the fixes of the document's current analysis (`first` first), or move
        `first` ahead in the job under way. None when there is nothing to compute."""
        a = doc.analysis
        if a is None or a.error or a.version != doc.version or a.text != doc.text:
            return None  # not analysed yet: the analysis publishes, then schedules its fixes
        job = doc.job
        if job is not None and job.analysis is a and job.active:
            job.prefer(first)
            return job
        keys = keys_for(a)
        keys = [k for k in first if k in keys] + [k for k in keys if k not in first]
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called outside the server's loop (a test, a script): only on request
            return None
        if not keys:
            return None
        if job is not None:
            job.cancel()
        doc.job = Job(a, keys, owner=doc)

        def notify(job: Job, key: FixKey | None) -> None:  # from the worker thread
            if key is not None:
                try:
                    loop.call_soon_threadsafe(self.publish_withheld, doc, job.analysis)
                except RuntimeError:  # pragma: no cover - the loop is closed: the server is exiting
                    pass

        self.worker.submit(doc.job, notify)
        return doc.job

    def cancel_fixes(self, doc: Document) -> None:
        """A newer version (or a closed document): no fix of the old one is computed any more."""
        if doc.fix_timer is not None:
            doc.fix_timer.cancel()
            doc.fix_timer = None
        if doc.job is not None:
            doc.job.cancel()
            doc.job = None

    def republish_all(self) -> None:
        self.settings.clear()
        for doc in list(self.docs.values()):
            self.publish(doc)

    # ------------------------------------------------------------------ edits
    def workspace_edit(
        self, doc: Document, new_text: str, others: dict[str, FileChange] | None = None
    ) -> types.WorkspaceEdit | None:
        """The edit of the document, and of the script's own modules a cross-file fix changes (each
        against its text on disk; an open one with its version, one not open with version null). None
        when a module is open with unsaved changes the fix did not see."""
        files = [(doc.uri, doc.version, text_edits(doc.text, new_text, self.client.encoding))]
        for change in (others or {}).values():
            uri = from_fs_path(os.path.abspath(change.path)) or change.path
            open_doc = self.docs.get(uri)
            if open_doc is not None and open_doc.text != change.source:
                return None
            version = open_doc.version if open_doc is not None else None
            files.append((uri, version, text_edits(change.source, change.code, self.client.encoding)))
        if self.client.document_changes:
            return types.WorkspaceEdit(
                document_changes=[
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                        edits=edits,
                    )
                    for uri, version, edits in files
                ]
            )
        return types.WorkspaceEdit(changes={uri: edits for uri, _, edits in files})

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
            spot = A.suppression_edit(doc.text, diag, self.statement_starts(a))
            if spot is None:
                return None
            line, start, end, new = spot
            lines = Text(doc.text, "utf-32")
            s = lines.starts[line - 1]
            return self.workspace_edit(doc, doc.text[: s + start] + new + doc.text[s + end :])
        unsafe = bool(data.get("unsafe"))
        codes = (str(data["code"]),) if kind == "fix" else None
        res = self.fixed(doc, a, codes, unsafe)
        if res is None or not res.changed_files or (codes is not None and codes[0] in res.withheld):
            return None  # nothing to change, or the output guard withheld the fix asked for
        if res.incomplete and codes is None:  # a whole conversion that does not yet keep the DDP contract
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=incomplete_message(res))
            )
        return self.workspace_edit(doc, res.code, res.others)

    def fixed(self, doc: Document, a: Analysis, codes: tuple[str, ...] | None, unsafe: bool):
        """`a.fixed(...)`; when the output guard withholds a fix not known to be withheld before, the
        diagnostics are published again, saying why."""
        res = a.fixed(codes, unsafe)
        self.publish_withheld(doc, a)
        return res


def incomplete_message(res) -> str:
    """What a conversion leaves undone, for the editor's message line: the contract's incomplete lines."""
    shown = [f"line {b.line}: {b.format()}" for b in res.incomplete[:3]]
    more = len(res.incomplete) - len(shown)
    return (
        "ddpfix: the converted script is incomplete; " + "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")
    )


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


__all__ = ["DEBOUNCE_S", "FIX_DELAY_S", "DdpfixServer", "default_docs_url", "log"]
