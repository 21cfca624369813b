"""The language server's "Convert to DDP and verify" (workspace/executeCommand `ddpfix.convertAndVerify`):
the document's DDP rewrite (the same as "Convert to DDP") is run under torchrun in a temporary copy of
the script's folder (`ddpfix.fix_and_verify`, in a worker thread: the server keeps answering), and
applied to the document with workspace/applyEdit only when no check failed. The verdict comes back in
a window/showMessage, and as the command's result. It runs only when asked, never on a keystroke.

Arguments: one object, ``{"uri": ..., "args": [script arguments], "nproc": 2, "timeout": 300,
"unsafe": false}``; only ``uri`` is required, and the document must be open and be a file on disk (its
folder is what gets copied)."""

from __future__ import annotations

import asyncio
import os

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from ..errors import DdpfixError
from .language_server import DdpfixServer

VERIFY_COMMAND = "ddpfix.convertAndVerify"
VERIFY_TITLE = "Convert to DDP and verify (ddpfix)"
MAX_EVIDENCE = 3  # failure lines in the message; the command's result holds them all


def _arguments(data) -> tuple[str, list[str], int | None, float | None, bool]:
    if not isinstance(data, dict) or not isinstance(data.get("uri"), str):
        raise JsonRpcInvalidParams(f"{VERIFY_COMMAND} takes one object argument with a document uri")
    args = data.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise JsonRpcInvalidParams(f"{VERIFY_COMMAND}: args must be a list of strings (the script's arguments)")
    nproc, timeout = data.get("nproc"), data.get("timeout")
    if nproc is not None and (not isinstance(nproc, int) or isinstance(nproc, bool) or nproc < 1):
        raise JsonRpcInvalidParams(f"{VERIFY_COMMAND}: nproc must be a positive integer")
    if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0):
        raise JsonRpcInvalidParams(f"{VERIFY_COMMAND}: timeout must be a positive number of seconds")
    return data["uri"], args, nproc, timeout, bool(data.get("unsafe"))


def _show(ls: DdpfixServer, kind: types.MessageType, message: str) -> None:
    ls.window_show_message(types.ShowMessageParams(type=kind, message=message))


async def convert_and_verify(ls: DdpfixServer, data) -> dict:
    """Run the command; the result says whether the rewrite was verified and applied, and why not."""
    from ..verified import fix_and_verify
    from ..verify import VerifyUsageError

    uri, args, nproc, timeout, unsafe = _arguments(data)
    doc = ls.docs.get(uri)
    if doc is None:
        raise JsonRpcInvalidParams(f"{VERIFY_COMMAND}: document not open: {uri}")
    name = os.path.basename(doc.path or uri)
    if not doc.path or not os.path.isfile(doc.path):
        message = f"ddpfix: {name}: only a script saved on disk can be verified (its folder is copied)"
        _show(ls, types.MessageType.Error, message)
        return {"ok": False, "applied": False, "error": message}
    a = ls.analysis(doc)
    result = None if a.error else ls.fixed(doc, a, None, unsafe)
    if result is None:
        message = f"ddpfix: {name}: cannot rewrite: {a.error or 'the fix could not be computed'}"
        _show(ls, types.MessageType.Error, message)
        return {"ok": False, "applied": False, "error": message}
    text, version = doc.text, doc.version
    _show(ls, types.MessageType.Info, f"ddpfix: verifying the DDP rewrite of {name} under torchrun...")
    try:
        outcome = await asyncio.to_thread(
            fix_and_verify, doc.path, args, source=text, result=result, nproc=nproc, timeout=timeout, write=False
        )
    except (DdpfixError, VerifyUsageError, OSError) as exc:
        message = f"ddpfix: {name}: cannot verify: {exc}"
        _show(ls, types.MessageType.Error, message)
        return {"ok": False, "applied": False, "error": message}
    applied = False
    if not outcome.ok:
        evidence = " / ".join(line.strip() for line in outcome.failures[:MAX_EVIDENCE])
        message = f"ddpfix: {name}: {outcome.summary}; the document was left unchanged ({evidence})"
        _show(ls, types.MessageType.Warning, message)
    elif not result.changed:
        message = f"ddpfix: {name}: nothing to rewrite; {outcome.summary}"
        _show(ls, types.MessageType.Info, message)
    elif doc.version != version or doc.text != text or ls.docs.get(uri) is not doc:
        message = f"ddpfix: {name}: {outcome.summary}; not applied: the document changed while it ran"
        _show(ls, types.MessageType.Warning, message)
    else:
        edit = ls.workspace_edit(doc, result.code)
        answer = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=VERIFY_TITLE))
        applied = bool(getattr(answer, "applied", False))
        message = f"ddpfix: {name}: {outcome.summary}; " + (
            "the rewrite was applied" if applied else "the editor did not apply the rewrite"
        )
        _show(ls, types.MessageType.Info if applied else types.MessageType.Warning, message)
    return {
        "ok": outcome.ok,
        "applied": applied,
        "summary": outcome.summary,
        "failures": outcome.failures,
        "message": message,
    }


__all__ = ["VERIFY_COMMAND", "VERIFY_TITLE", "convert_and_verify"]
