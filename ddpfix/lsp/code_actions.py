"""The code actions offered for a range: a quick-fix per fixable finding (disabled, with the reason,
when the output guard withholds it), "Ignore DDPxxx on this line", fix-all and "Convert to DDP".

Listing computes no fix: what a title or a disabled quick-fix needs from one is read from the fixes
known for this version (computed ahead in idle time, `precompute.py`, or for an action picked
before). Until a fix is known its action is offered with the plain title, and the edit is computed
when the action is picked (resolve), where the output guard still has the last word. An explicit
request (not the ones editors send on every cursor move) starts the fixes of its findings at once."""

from __future__ import annotations

import os

from lsprotocol import types

from ..diagnostic import SAFE, UNSAFE
from . import actions as A
from .documents import Document
from .language_server import DdpfixServer
from .precompute import convert_keys, quick_fix_key
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
    eager = ls.client.literals and not lazy  # the listing carries the edits: their fixes are computed now

    def known(key):
        """The fix's result when known (or, for a listing that carries the edits, computed now)."""
        return ls.fixed(doc, a, *key) if eager else a.fixes.get(key)

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
    if asked:  # the fixes this listing would show, first in line (no-op when all are known)
        wanted = [quick_fix_key(a.diagnostics[i]) for i in hits] if A.kind_wanted(A.QUICKFIX, only) else []
        if A.kind_wanted(A.CONVERT, only) or A.kind_wanted(A.FIX_ALL, only):
            wanted += convert_keys(a)
        wanted = [k for k in dict.fromkeys(wanted) if k is not None and k not in a.fixes]
        if wanted:
            ls.fixes_now(doc, wanted)

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
            # the reason); the diagnostics were published again saying why when the fix was computed.
            # Until then (the fix is computed ahead, see above) it is offered, and resolving it says.
            res = known(quick_fix_key(d))
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
                added = a.memo.get("DDP204")
                if added is None:
                    added = a.memo["DDP204"] = [
                        line for e in text_edits(a.text, res.code, "utf-32") for line in e.new_text.splitlines()
                    ]
            title = A.fix_title(d.code, d.fix, len(same), added)
            if res is not None and res.others:  # the fix edits the script's own modules too
                title += " (also edits " + ", ".join(sorted(os.path.basename(p) for p in res.others)) + ")"
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
            if A.suppression_edit(doc.text, d, ls.statement_starts(a)) is None:
                continue
            make(
                f"Ignore {d.code} on this line",
                A.QUICKFIX,
                {"action": "ignore", "code": d.code, "line": d.line},
                [lsp_diags[i]],
                preferred=False,
            )

    def convert_title(title: str, unsafe: bool) -> str:
        """The title, saying which other files the conversion edits and what it leaves incomplete, when
        its result is known."""
        res = known((None, unsafe))
        if res is None or not (res.incomplete or res.others):
            return title
        notes = []
        if res.others:
            notes.append("also edits " + ", ".join(sorted(os.path.basename(p) for p in res.others)))
        if res.incomplete:
            notes.append("incomplete: " + ", ".join(sorted({b.invariant.label for b in res.incomplete})))
        return f"{title[: -len(' (ddpfix)')]} (ddpfix; {'; '.join(notes)})"

    if any(d.fix == SAFE for d in a.diagnostics):
        if A.kind_wanted(A.FIX_ALL, only):
            make("Fix all safely fixable DDP problems (ddpfix)", A.FIX_ALL, {"action": "fixAll", "unsafe": False})
        if A.kind_wanted(A.CONVERT, only):
            make(convert_title("Convert to DDP (ddpfix)", False), A.CONVERT, {"action": "convert", "unsafe": False})
    if any(d.fix == UNSAFE for d in a.diagnostics) and A.kind_wanted(A.CONVERT, only):
        title = convert_title("Convert to DDP, including unsafe fixes (ddpfix)", True)
        make(title, A.CONVERT, {"action": "convert", "unsafe": True})
    return out


__all__ = ["code_actions"]
