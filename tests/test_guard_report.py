"""A fix the output guard withholds is reported everywhere: the API, the summary line and exit code of
`diff` and `apply`, `check --format json/sarif`, and the language server."""

from __future__ import annotations

import json
import textwrap

import pytest
from guard_rules import SecondInit, registered
from lsprotocol import types
from typer.testing import CliRunner

from ddpfix import fix_source
from ddpfix.cli import app
from ddpfix.lsp.server import ClientFeatures, Document, code_actions, create_server

TRAIN = textwrap.dedent(
    """\
    import torch
    import torch.distributed as dist


    def main():
        dist.init_process_group("gloo")
        model = torch.nn.Linear(2, 2).to("cuda" if torch.cuda.is_available() else "cpu")
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()


    if __name__ == "__main__":
        main()
    """
)
REASON = (
    "the script already joins the process group (`dist.init_process_group()` at line 6); it would be initialised twice"
)


@pytest.fixture(autouse=True)
def second_init():
    """DDP901 joins the process group a second time, right before the script's own init."""
    with registered(SecondInit()):
        yield


def invoke(*args, input=None):
    return CliRunner().invoke(app, ["--isolated" if a == "ISOLATED" else a for a in args], input=input)


# ---------------------------------------------------------------------------- API
def test_the_api_reports_the_withheld_fix_and_keeps_the_others():
    result = fix_source(TRAIN)
    assert result.withheld == {"DDP901": REASON}
    [d] = [d for d in result.diagnostics if d.code == "DDP901"]
    assert (d.applied, d.withheld) == (False, REASON)
    assert d.format("t.py") == f"t.py:6:5: DDP901 joins the process group a second time (not fixed: {REASON})"
    assert d.to_dict()["withheld"] == REASON
    assert result.code.count("init_process_group(") == 1  # DDP901's init is not there ...
    assert {"DDP006", "DDP301"} <= set(result.applied_codes)  # ... the other fixes are


# ---------------------------------------------------------------------------- command line
def test_diff_prints_the_other_fixes_and_says_what_was_withheld(work):
    (work / "t.py").write_text(TRAIN)
    res = invoke("diff", "--isolated", "t.py")
    assert res.exit_code == 1
    assert "+        torch.cuda.set_device(LOCAL_RANK)" in res.stdout and 'init_process_group("gloo")\n' in res.stdout
    assert f"; 1 fix withheld as unsafe for this script: DDP901 ({REASON})" in res.stderr
    assert "fixed: DDP002" not in res.stderr and "fixed: DDP006, DDP301" in res.stderr


def test_diff_with_only_a_withheld_fix_has_no_diff_but_a_summary_and_exit_1(work):
    (work / "t.py").write_text(TRAIN)
    res = invoke("diff", "--isolated", "--select", "DDP901", "t.py")
    assert (res.exit_code, res.stdout) == (1, "")
    summary, *incomplete = res.stderr.splitlines()
    assert (
        summary
        == f"t.py: 0 hunk(s), +0 -0; fixed: nothing; 1 fix withheld as unsafe for this script: DDP901 ({REASON})"
    )
    # the fixes not selected are not made, so the script stays incomplete, and says where
    assert [line.split(": DDP")[0] for line in incomplete] == [
        "t.py:6: incomplete: process group (invariant 5)",
        "t.py:7: incomplete: model not wrapped (invariant 1)",
    ]
    assert invoke("diff", "--isolated", "--select", "DDP901", "--exit-zero", "t.py").exit_code == 0


def test_apply_writes_the_other_fixes_and_exits_1(work):
    path = work / "t.py"
    path.write_text(TRAIN)
    res = invoke("apply", "--isolated", "t.py")
    assert res.exit_code == 1
    assert path.read_text() == fix_source(TRAIN).code != TRAIN
    assert res.stderr.startswith("t.py: ") and f"DDP901 ({REASON})" in res.stderr
    again = invoke("apply", "--isolated", "t.py")  # the withheld fix stays withheld: still exit 1, no change
    assert again.exit_code == 1 and path.read_text() == fix_source(TRAIN).code


def test_apply_from_standard_input_says_it_on_standard_error(work):
    res = invoke("apply", "--isolated", "--select", "DDP901", "-", input=TRAIN)
    assert (res.exit_code, res.stdout) == (1, TRAIN)
    assert f"DDP901 ({REASON})" in res.stderr


def test_check_json_and_sarif_show_the_fix_as_withheld(work):
    (work / "t.py").write_text(TRAIN)
    res = invoke("check", "--isolated", "--format", "json", "t.py")
    records = {r["code"]: r for r in json.loads(res.stdout)}
    assert records["DDP901"]["fix"]["withheld"] == REASON and records["DDP901"]["fix"]["edits"] == []
    assert records["DDP006"]["fix"]["withheld"] is None and records["DDP006"]["fix"]["edits"]
    sarif = json.loads(invoke("check", "--isolated", "--format", "sarif", "t.py").stdout)
    results = {r["ruleId"]: r for r in sarif["runs"][0]["results"]}
    assert results["DDP901"]["properties"]["withheld"] == REASON and "fixes" not in results["DDP901"]
    assert "withheld" not in results["DDP006"]["properties"] and results["DDP006"]["fixes"]


# ---------------------------------------------------------------------------- language server
def _server(disabled: bool, lazy: bool = False):
    ls = create_server()
    ls.client = ClientFeatures(literals=True, resolve_edit=lazy, disabled=disabled)
    published: list[types.PublishDiagnosticsParams] = []
    ls.text_document_publish_diagnostics = published.append  # type: ignore[method-assign]
    doc = Document(uri="untitled:t.py", text=TRAIN, version=1, path=None)
    ls.docs[doc.uri] = doc
    return ls, doc, published


def _ask(ls, doc, line: int, trigger=types.CodeActionTriggerKind.Invoked) -> list:
    where = types.Range(start=types.Position(line=line, character=4), end=types.Position(line=line, character=4))
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri),
        range=where,
        context=types.CodeActionContext(diagnostics=[], trigger_kind=trigger),
    )
    return code_actions(ls, doc, params)


def test_the_language_server_offers_no_edit_for_a_withheld_fix_and_says_why():
    ls, doc, published = _server(disabled=True)
    ls.publish(doc)
    [before] = [d for d in published[-1].diagnostics if d.code == "DDP901"]
    assert before.message == "joins the process group a second time"  # not known before a fix is computed
    actions = _ask(ls, doc, 5)  # the line of the script's init, where DDP901 and DDP006 report
    fixes = {a.title.split(":")[0]: a for a in actions if a.kind == "quickfix" and not a.title.startswith("Ignore")}
    assert fixes["DDP901"].edit is None and fixes["DDP901"].disabled.reason == f"not fixed: {REASON}"
    assert fixes["DDP006"].edit is not None and fixes["DDP006"].disabled is None
    [after] = [d for d in published[-1].diagnostics if d.code == "DDP901"]
    assert after.message == f"joins the process group a second time (not fixed: {REASON})"
    assert ls.action_edit(doc, {"action": "fix", "code": "DDP901"}) is None


def test_a_client_that_cannot_show_disabled_actions_gets_none_for_a_withheld_fix():
    ls, doc, _ = _server(disabled=False)
    titles = [a.title for a in _ask(ls, doc, 5)]
    assert not any(t.startswith("DDP901:") for t in titles) and any(t.startswith("DDP006:") for t in titles)
    assert "Ignore DDP901 on this line" in titles


def test_on_cursor_moves_no_fix_is_computed_and_resolving_a_withheld_one_gives_no_edit():
    ls, doc, published = _server(disabled=True, lazy=True)
    ls.publish(doc)
    auto = _ask(ls, doc, 5, types.CodeActionTriggerKind.Automatic)  # VS Code asks on every cursor move
    [action] = [a for a in auto if a.title.startswith("DDP901:")]
    assert action.disabled is None and action.edit is None and action.data["code"] == "DDP901"
    assert ls.docs[doc.uri].analysis.fixes == {}  # nothing computed yet
    assert ls.action_edit(doc, action.data) is None  # resolving it: the guard withholds the fix, no edit ...
    [after] = [d for d in published[-1].diagnostics if d.code == "DDP901"]
    assert after.message.endswith(f"(not fixed: {REASON})")  # ... and the diagnostics say why
    [again] = [a for a in _ask(ls, doc, 5, types.CodeActionTriggerKind.Automatic) if a.title.startswith("DDP901:")]
    assert again.disabled.reason == f"not fixed: {REASON}"  # known now: shown disabled
