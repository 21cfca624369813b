"""The language server's "Convert to DDP and verify" (workspace/executeCommand `ddpfix.convertAndVerify`),
driven by pytest-lsp as VS Code: offered as a code action that carries the command (no edit, nothing
runs until it is chosen); run, it applies the rewrite only when `ddpfix verify` passes it, and reports
the verdict in a window/showMessage. The runs under torchrun are slow."""

from __future__ import annotations

import asyncio
import shutil
import warnings
from pathlib import Path

import pytest
from lsprotocol import types
from teardown import CrashAtExitRerun
from test_lsp import Editor, client, fix_source, uri_for, vscode_only  # noqa: F401 (client: the server fixture)
from test_lsp import vscode as vscode  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train.py"
SAME_BATCHES = ROOT / "tests" / "verify_cases" / "generator_batches.py"
RUN_TIMEOUT = 240

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def run_command(editor: Editor, arguments) -> object:
    return await asyncio.wait_for(
        editor.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="ddpfix.convertAndVerify", arguments=arguments)
        ),
        2 * RUN_TIMEOUT,
    )


async def verify_once_more_after_a_crash_at_exit(editor: Editor, arguments) -> dict:
    result = await run_command(editor, arguments)
    failures = [line for line in result["failures"] if line.startswith("FAIL")]
    if failures == ["FAIL  completes: Completes on all ranks"] and "crashed while exiting" in str(result["failures"]):
        warnings.warn(
            f"convertAndVerify: a rank crashed while exiting; once more: {result}", CrashAtExitRerun, stacklevel=2
        )
        result = await run_command(editor, arguments)
    return result


@vscode_only
async def test_verify_is_a_command_the_server_announces_and_no_code_action_runs_it(vscode: Editor, tmp_path: Path):
    from ddpfix.lsp.server import create_server

    assert "ddpfix.convertAndVerify" in create_server().protocol.fm.commands  # in executeCommandProvider
    shutil.copy(EXAMPLE, tmp_path / "train.py")
    uri = uri_for(tmp_path)
    text = EXAMPLE.read_text()
    vscode.open(uri, text)
    diags = await vscode.diagnostics(uri)
    actions = await vscode.actions(uri, diags[0].range, diags[:1])
    assert not [a for a in actions if "verify" in a.title]  # code actions are asked for on every cursor move
    for bad in ([{"uri": uri, "args": "--epochs 1"}], [{"uri": uri, "nproc": 0}], ["train.py"]):
        with pytest.raises(Exception) as err:
            await run_command(vscode, bad)
        assert getattr(err.value, "code", None) == -32602, bad  # InvalidParams
    with pytest.raises(Exception) as err:  # a document that is not open
        await run_command(vscode, [{"uri": uri_for(tmp_path, "never_opened.py")}])
    assert getattr(err.value, "code", None) == -32602
    unsaved = uri_for(tmp_path, "unsaved.py")  # open in the editor, not on disk: no folder to copy
    vscode.open(unsaved, text)
    await vscode.diagnostics(unsaved)
    result = await run_command(vscode, [{"uri": unsaved}])
    assert result["ok"] is False and result["applied"] is False
    assert vscode.client.messages[-1].message == (
        "ddpfix: unsaved.py: only a script saved on disk can be verified (its folder is copied)"
    )
    assert vscode.texts[uri] == text and vscode.texts[unsaved] == text


@pytest.mark.slow
@vscode_only
async def test_a_rewrite_that_passes_is_applied_and_the_verdict_shown(vscode: Editor, tmp_path: Path):
    shutil.copy(EXAMPLE, tmp_path / "train.py")
    uri = uri_for(tmp_path)
    text = EXAMPLE.read_text()
    vscode.open(uri, text)
    await vscode.diagnostics(uri)
    shown = len(vscode.client.messages)
    result = await verify_once_more_after_a_crash_at_exit(
        vscode, [{"uri": uri, "args": ["--epochs", "1"], "timeout": RUN_TIMEOUT}]
    )
    assert result["ok"] and result["applied"], result
    assert vscode.texts[uri] == fix_source(text).code
    assert (tmp_path / "train.py").read_text() == text  # the editor's buffer changed, not the file on disk
    messages = [m.message for m in vscode.client.messages[shown:]]
    assert messages[0] == "ddpfix: verifying the DDP rewrite of train.py under torchrun..."
    assert messages[-1].startswith("ddpfix: train.py: verified on 2 processes: every rank finished")
    assert messages[-1].endswith("; the rewrite was applied")


@pytest.mark.slow
@vscode_only
async def test_a_rewrite_that_fails_is_not_applied_and_the_failure_shown(vscode: Editor, tmp_path: Path):
    shutil.copy(SAME_BATCHES, tmp_path / "train.py")
    uri = uri_for(tmp_path)
    text = SAME_BATCHES.read_text()
    vscode.open(uri, text)
    await vscode.diagnostics(uri)
    applied, shown = len(vscode.applied), len(vscode.client.messages)
    result = await run_command(vscode, [{"uri": uri, "timeout": RUN_TIMEOUT}])
    assert not result["ok"] and not result["applied"]
    assert len(vscode.applied) == applied and vscode.texts[uri] == text
    last = vscode.client.messages[-1]
    assert len(vscode.client.messages) > shown and last.type == types.MessageType.Warning
    assert last.message.startswith("ddpfix: train.py: verification failed on 2 processes:")
    assert (
        "the document was left unchanged (FAIL  shards: Shards disjoint and covering / ranks 0 and 1 fed"
        in (last.message.replace("FAIL  completes: Completes on all ranks / ", ""))
        or "shards" in last.message
    )
