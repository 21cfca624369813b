"""Fixtures shared by the test modules."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _uncoloured(monkeypatch):
    """Output as a pipe gets it, whatever colour settings the calling shell has."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.fixture
def work(tmp_path, monkeypatch):
    """An empty folder, made the working directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
