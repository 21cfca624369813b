"""Regression tests for inputs the corpus run and the fuzzers found: each must go through `check` and
`diff` without an exception, with an output that parses and that a second apply leaves alone."""
from __future__ import annotations

import textwrap

import pytest

from invariants import problems


def assert_sound(source: str, **kwargs) -> None:
    found = problems(textwrap.dedent(source), "case.py", **kwargs)
    assert not found, "\n".join(found)


def test_save_then_load_in_a_script_that_only_calls_backward():
    # torch/testing/_internal/common_nn.py: the save was guarded on the first pass (DDP401), and the
    # barrier before the load (DDP410) only came on the second.
    assert_sound(
        """\
        import torch


        def train(model, data):
            for x in data:
                model(x).sum().backward()
            torch.save(model, "m.pt")
            return torch.load("m.pt")
        """
    )
