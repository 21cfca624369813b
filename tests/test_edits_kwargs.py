"""Keyword arguments added to and removed from calls of every layout come out as a person would type
them: `with_kwarg` / `without_kwarg` directly, and through the fixes that use them."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddpfix import fix_source
from ddpfix.edits import with_kwarg, without_kwarg
from ddpfix.syntax import code_of

ADDED = [
    ("loader(ds, batch_size=4)", "loader(ds, batch_size=4, sampler=s)"),
    ("loader(ds, batch_size=4,)", "loader(ds, batch_size=4, sampler=s,)"),
    ("loader()", "loader(sampler=s)"),
    (  # aligned under the first argument
        """
        loader(ds,
               batch_size=4,
               shuffle=True)
        """,
        """
        loader(ds,
               batch_size=4,
               shuffle=True,
               sampler=s)
        """,
    ),
    (  # aligned, trailing comma, closing parenthesis on its own line
        """
        loader(ds,
               batch_size=4,
        )
        """,
        """
        loader(ds,
               batch_size=4,
               sampler=s,
        )
        """,
    ),
    (  # hanging indent, one argument per line, trailing comma
        """
        loader(
            ds,
            batch_size=4,
        )
        """,
        """
        loader(
            ds,
            batch_size=4,
            sampler=s,
        )
        """,
    ),
    (  # hanging indent, no trailing comma
        """
        loader(
            ds,
            batch_size=4
        )
        """,
        """
        loader(
            ds,
            batch_size=4,
            sampler=s
        )
        """,
    ),
    (  # hanging indent, all arguments on one line
        """
        loader(
            ds, batch_size=4
        )
        """,
        """
        loader(
            ds, batch_size=4, sampler=s
        )
        """,
    ),
    (  # comments after the arguments stay on their lines
        """
        loader(
            ds,
            batch_size=4,  # per process
            shuffle=True  # a new order each epoch
        )
        """,
        """
        loader(
            ds,
            batch_size=4,  # per process
            shuffle=True,  # a new order each epoch
            sampler=s
        )
        """,
    ),
    (
        """
        loader(
            ds,
            batch_size=4,  # per process
            shuffle=True,  # a new order each epoch
        )
        """,
        """
        loader(
            ds,
            batch_size=4,  # per process
            shuffle=True,  # a new order each epoch
            sampler=s,
        )
        """,
    ),
    (  # one hanging argument
        """
        loader(
            ds)
        """,
        """
        loader(
            ds,
            sampler=s)
        """,
    ),
    ("loader(ds, batch_size=4, **kw)", "loader(ds, batch_size=4, sampler=s, **kw)"),
    ("loader(**kw)", "loader(sampler=s, **kw)"),
    (
        """
        loader(
            ds,
            **kw,
        )
        """,
        """
        loader(
            ds,
            sampler=s,
            **kw,
        )
        """,
    ),
    ("loader(ds, sampler=None)", "loader(ds, sampler=s)"),
]


def _expr(text: str) -> cst.Call:
    call = cst.parse_expression(textwrap.dedent(text).strip())
    assert isinstance(call, cst.Call)
    return call


@pytest.mark.parametrize(("before", "after"), ADDED)
def test_with_kwarg_layouts(before, after):
    assert code_of(with_kwarg(_expr(before), "sampler", cst.Name("s"))) == textwrap.dedent(after).strip()


REMOVED = [
    ("loader(ds, shuffle=True)", "loader(ds)"),
    ("loader(ds, shuffle=True, batch_size=2)", "loader(ds, batch_size=2)"),
    ("loader(ds, batch_size=2, shuffle=True,)", "loader(ds, batch_size=2,)"),
    ("loader(ds, batch_size=2)", "loader(ds, batch_size=2)"),
    (
        """
        loader(ds,
               batch_size=4,
               shuffle=True)
        """,
        """
        loader(ds,
               batch_size=4)
        """,
    ),
    (
        """
        loader(
            ds,
            batch_size=4,  # per process
            shuffle=True  # a new order each epoch
        )
        """,
        """
        loader(
            ds,
            batch_size=4  # per process
        )
        """,
    ),
    (
        """
        loader(
            ds,
            batch_size=4,  # per process
            shuffle=True,  # a new order each epoch
        )
        """,
        """
        loader(
            ds,
            batch_size=4,  # per process
        )
        """,
    ),
    (
        """
        loader(
            ds,
            shuffle=True,
            batch_size=4,
        )
        """,
        """
        loader(
            ds,
            batch_size=4,
        )
        """,
    ),
]


@pytest.mark.parametrize(("before", "after"), REMOVED)
def test_without_kwarg_layouts(before, after):
    assert code_of(without_kwarg(_expr(before), "shuffle")) == textwrap.dedent(after).strip()


SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    dataset = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
    train_loader = {loader}
    model = nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in train_loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
"""


@pytest.mark.parametrize(
    ("loader", "fixed"),
    [
        (
            "DataLoader(\n        dataset,\n        batch_size=2,\n        shuffle=True,  # reshuffle\n    )",
            "DataLoader(\n        dataset,\n        batch_size=2,\n        shuffle=(train_sampler is None),  # reshuffle\n"
            "        sampler=train_sampler,\n    )",
        ),
        (
            "DataLoader(dataset,\n                              batch_size=2,\n                              shuffle=True)",
            "DataLoader(dataset,\n                              batch_size=2,\n                              "
            "shuffle=(train_sampler is None),\n                              sampler=train_sampler)",
        ),
        (
            "DataLoader(\n        dataset,\n        batch_size=2  # per process\n    )",
            "DataLoader(\n        dataset,\n        batch_size=2,  # per process\n        sampler=train_sampler\n    )",
        ),
    ],
)
def test_sampler_fix_follows_the_loader_layout(loader, fixed):
    out = fix_source(SCRIPT.format(loader=loader), select=["DDP201"]).code
    assert f"    train_loader = {fixed}\n" in out, out
