"""The code actions offered for a range: a quick-fix per fixable finding (disabled, with the reason,
when the output guard withholds it), "Ignore DDPxxx on this line", fix-all and "Convert to DDP"."""

from __future__ import annotations

from lsprotocol import types

from ..diagnostic import SAFE, UNSAFE
from . import actions as A
from .documents import Document
from .language_server import DdpfixServer
from .text import text_edits


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


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


__all__ = ["code_actions"]
