"""Fixtures shared by the test modules."""

from __future__ import annotations

import os

import pytest

# One OpenMP thread per process, in the test processes and in every script they start. The suite
# runs on as many workers as there are cores (pyproject.toml: -n auto), and each worker starts
# scripts that import torch; with torch's default of one thread per core, the threads of the
# concurrent processes spin against each other. torchrun sets the same for its ranks.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The ranks of the scripts the tests run under torchrun leave without the interpreter's teardown once
# the script has ended (ddpfix/verify/probe.py `_leave`): torch's gloo threads race that teardown and
# crash a finished rank now and then, which is no test's business (tests/teardown.py). The test of
# that crash itself turns it off.
os.environ.setdefault("DDPFIX_PROBE_SKIP_TEARDOWN", "1")


def pytest_collection_modifyitems(config, items):
    """The slow tests first (in their order), then the rest: the workers finish on short tests
    instead of one worker running a long one while the other waits."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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
