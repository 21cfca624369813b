"""The fixes code actions show, computed ahead in the server's worker thread (`ddpfix/lsp/precompute.py`),
driven in-process: listing computes no fix, a newer version discards what was computed for the old
one, and an edit is the same whether its fix was computed ahead or when the action was picked."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from lsprotocol import types

import ddpfix
import ddpfix.lsp.analysis as lsp_analysis
from ddpfix.lsp.code_actions import code_actions
from ddpfix.lsp.documents import ClientFeatures, Document
from ddpfix.lsp.language_server import DdpfixServer
from ddpfix.lsp.text import apply_text_edits

pytestmark = pytest.mark.asyncio

SMALL = (Path(__file__).parent / "lsp_data" / "train_small.py").read_text(encoding="utf-8")
WRITES_METRICS = (Path(__file__).parent / "lsp_data" / "writes_metrics.py").read_text(encoding="utf-8")


class Spy:
    """Every engine run of the server: which thread, parse or fix, and the rules a fix selected."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, str, object]] = []
        self.hold: threading.Event | None = None  # set: the worker's fixes wait for it
        self.started = threading.Event()
        fix, parse, again = lsp_analysis.fix_parsed, lsp_analysis.parse_source, lsp_analysis.reparse

        def fix_parsed(parsed, **kw):
            self.calls.append((threading.current_thread().name, "fix" if kw.get("fix", True) else "check", kw))
            if kw.get("fix", True) and threading.current_thread() is not threading.main_thread():
                self.started.set()
                if self.hold is not None:
                    assert self.hold.wait(30)
            return fix(parsed, **kw)

        def parse_source(*args, **kw):
            self.calls.append((threading.current_thread().name, "parse", None))
            return parse(*args, **kw)

        def reparse(*args, **kw):
            self.calls.append((threading.current_thread().name, "parse", None))
            return again(*args, **kw)

        monkeypatch.setattr(lsp_analysis, "fix_parsed", fix_parsed)
        monkeypatch.setattr(lsp_analysis, "parse_source", parse_source)
        monkeypatch.setattr(lsp_analysis, "reparse", reparse)

    def on_loop(self, since: int = 0) -> list:
        main = threading.main_thread().name
        return [c for c in self.calls[since:] if c[0] == main]

    def fixes(self, since: int = 0) -> list:
        return [c for c in self.calls[since:] if c[1] == "fix"]


def make_server(fix_delay: float | None) -> DdpfixServer:
    ls = DdpfixServer()
    ls.fix_delay = fix_delay
    ls.client = ClientFeatures(resolve_edit=True, disabled=True)  # as VS Code
    ls.published = []
    ls.text_document_publish_diagnostics = ls.published.append  # no client: keep what would be sent
    return ls


def open_doc(ls: DdpfixServer, tmp_path: Path, text: str) -> Document:
    path = tmp_path / "train.py"
    doc = ls.docs[path.as_uri()] = Document(path.as_uri(), text, 1, str(path))
    ls.publish(doc)
    return doc


def params(ls: DdpfixServer, doc: Document, code: str, invoked: bool = True) -> types.CodeActionParams:
    d = next(d for d in ls.lsp_diagnostics(doc, doc.analysis) if d.code == code)
    kind = types.CodeActionTriggerKind.Invoked if invoked else types.CodeActionTriggerKind.Automatic
    return types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri),
        range=types.Range(start=d.range.start, end=d.range.start),  # the cursor on the finding
        context=types.CodeActionContext(diagnostics=[], trigger_kind=kind),
    )


async def finished(job) -> None:
    assert await asyncio.to_thread(job.finished.wait, 120)
    await asyncio.sleep(0)  # the worker's callbacks on the loop (republishing) run
    await asyncio.sleep(0)


async def test_listing_computes_no_fix_and_starts_the_fixes_it_is_about(monkeypatch, tmp_path):
    spy = Spy(monkeypatch)
    ls = make_server(fix_delay=None)  # nothing is computed ahead unless a listing asks
    doc = open_doc(ls, tmp_path, SMALL)
    assert [c[1] for c in spy.calls] == ["parse", "check"]  # the diagnostics: one analysis

    # the requests editors send on every cursor move compute nothing and start nothing
    n = len(spy.calls)
    auto = code_actions(ls, doc, params(ls, doc, "DDP401", invoked=False))
    assert spy.calls[n:] == [] and doc.job is None
    assert "DDP401: save on rank 0 only" in [a.title for a in auto]

    # an explicit request: answered from what is known (no parse, no fix on the loop) ...
    spy.hold = threading.Event()
    n = len(spy.calls)
    actions = code_actions(ls, doc, params(ls, doc, "DDP401"))
    assert spy.on_loop(n) == []
    fix = next(a for a in actions if a.title.startswith("DDP401"))
    assert fix.title == "DDP401: save on rank 0 only" and fix.edit is None and fix.data["code"] == "DDP401"
    assert any(a.title == "Convert to DDP (ddpfix)" for a in actions)  # its result not known yet: no notes
    # ... and the fixes it is about start in the worker, DDP401's first
    job = doc.job
    assert job is not None and spy.started.wait(30)
    assert spy.fixes(n)[0][2]["select"] == ["DDP401"]
    spy.hold.set()
    await finished(job)
    assert job.computed[0] == (("DDP401",), False)
    findings = ddpfix.check_source(SMALL, path=doc.path, cross_file=True)
    quick = {((d.code,), d.fix == "unsafe") for d in findings if d.fix in ("safe", "unsafe")}
    assert len(quick) == 8 and (("DDP306",), True) in quick  # one unsafe fix among them
    assert len(job.computed) == len(set(job.computed)) and set(job.computed) == quick | {(None, False), (None, True)}
    assert {c[0] for c in spy.fixes(n)} == {"ddpfix-fixes"}  # every fix ran in the worker

    # listed again: the titles know the results, still without a fix or parse on the loop
    n = len(spy.calls)
    titles = [a.title for a in code_actions(ls, doc, params(ls, doc, "DDP306"))]
    assert spy.calls[n:] == []
    assert "Convert to DDP, including unsafe fixes (ddpfix)" in titles  # (it leaves nothing incomplete)


async def test_a_newer_version_discards_the_fixes_of_the_old_one(monkeypatch, tmp_path):
    spy = Spy(monkeypatch)
    ls = make_server(fix_delay=None)
    spy.hold = threading.Event()
    doc = open_doc(ls, tmp_path, WRITES_METRICS)  # DDP405's fix is withheld by the output guard
    old = doc.analysis
    job = ls.fixes_now(doc, [(("DDP405",), False)])  # as an explicit listing at DDP405 starts them
    assert await asyncio.to_thread(spy.started.wait, 30)  # DDP405's fix is under way
    assert spy.fixes()[0][2]["select"] == ["DDP405"]
    assert job is doc.job and job.analysis is old and len(job.keys) >= 1  # more to come

    # a keystroke (what did_change does) while that fix runs
    ls.cancel_fixes(doc)
    doc.text, doc.version = WRITES_METRICS.replace("range(2)", "range(3)"), 2
    spy.hold.set()
    await finished(job)
    assert len(job.computed) == 1 and len(spy.fixes()) == 1 and list(old.fixes) == job.computed
    assert "DDP405" in old.withheld  # learnt for the old text ...
    assert [p.version for p in ls.published] == [1]  # ... and not published: the text has changed

    spy.hold = None
    ls.fix_delay = 0  # from now on the fixes are computed as soon as the diagnostics are out
    ls.publish(doc)  # the debounced analysis of version 2: nothing of version 1 is reused
    assert doc.analysis is not old and doc.analysis.fixes == {} and doc.job is None
    await asyncio.sleep(0.05)
    await finished(doc.job)
    assert doc.job.analysis is doc.analysis
    # DDP405's fix was computed for version 2 and withheld: version 2's diagnostics are published again
    assert [p.version for p in ls.published] == [1, 2, 2]
    d405 = next(d for d in ls.published[-1].diagnostics if d.code == "DDP405")
    assert "(not fixed: binds `stats` under `if RANK == 0:` only" in d405.message
    (fix,) = [a for a in code_actions(ls, doc, params(ls, doc, "DDP405")) if a.title.startswith("DDP405")]
    assert fix.disabled is not None and fix.data is None


async def test_an_edit_is_the_same_computed_ahead_or_when_picked(monkeypatch, tmp_path):
    spy = Spy(monkeypatch)
    ahead = make_server(fix_delay=0)
    doc = open_doc(ahead, tmp_path, SMALL)
    await asyncio.sleep(0.05)
    await finished(doc.job)
    asked = make_server(fix_delay=None)
    other = open_doc(asked, tmp_path, SMALL)
    for code in ("DDP201", "DDP406", None):
        data = {"uri": doc.uri, "version": 1, "action": "fix" if code else "fixAll", "code": code, "unsafe": False}
        n = len(spy.calls)
        edit = ahead.action_edit(doc, data)
        assert spy.calls[n:] == []  # known: nothing computed when picked
        picked = asked.action_edit(other, data)
        assert [c[1] for c in spy.on_loop(n)] == ["fix"]  # computed when picked, on the loop
        assert edit == picked
        want = ddpfix.fix_source(SMALL, select=[code] if code else None).code
        assert apply_text_edits(SMALL, edit.changes[doc.uri], "utf-16") == want
