"""What the server keeps: each open document (its own copy of the text, see `text.py` for why, and the
analysis of its current version) and what the client can do."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.uris import to_fs_path

from .analysis import Analysis
from .precompute import Job
from .text import UTF16


@dataclass
class Document:
    uri: str
    text: str
    version: int | None
    path: str | None  # file system path (None for untitled: and other non-file URIs)
    analysis: Analysis | None = None
    timer: asyncio.TimerHandle | None = None  # the debounced analysis
    fix_timer: asyncio.TimerHandle | None = None  # the fixes computed ahead, once typing stops
    job: Job | None = None  # those fixes, under way or done


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


def path_of(uri: str) -> str | None:
    if not uri.startswith("file:"):
        return None
    try:
        return to_fs_path(uri) or unquote(urlparse(uri).path)
    except Exception:
        return None


__all__ = ["ClientFeatures", "Document", "path_of"]
