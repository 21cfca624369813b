"""DDP311: a model whose layers set their own parameters from the input in forward (ActNorm's
data-dependent initialisation; golden parameters_set_from_input). Under DDP each rank sets them from its
own batch after the wrap's broadcast: reported, followed from the model the script builds down to the
layer of its modules, the conversion is incomplete, and `check` on the output says so. The advice the
finding gives (broadcast the parameters from rank 0 after that first forward) is run under torchrun."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from ddpfix import check_source, fix_source

CASE = Path(__file__).parent / "golden" / "parameters_set_from_input"
MESSAGE = (
    "`ActNorm` sets its parameters `loc`, `logs` from its input in forward (flows.py:19): under DDP each rank "
    "takes them from its own batch after the wrap's broadcast, and the ranks train different models; broadcast "
    "them from rank 0 after that forward"
)


@pytest.fixture
def project(tmp_path):
    shutil.copy(CASE / "input.py", tmp_path / "train.py")
    shutil.copy(CASE / "flows.py", tmp_path / "flows.py")
    return tmp_path


def _found(project: Path, source: str | None = None):
    path = project / "train.py"
    if source is not None:
        path.write_text(textwrap.dedent(source))
    return [d for d in check_source(path.read_bytes(), path=str(path)) if d.code == "DDP311"]


def test_reported_at_the_model_the_script_builds(project):
    found = _found(project)
    assert [(d.line, d.message, d.fix) for d in found] == [(13, MESSAGE, "none")]


def test_the_conversion_is_incomplete_and_check_on_its_output_says_so(project):
    path = project / "train.py"
    result = fix_source(path.read_bytes(), path=str(path))
    assert [(b.line, b.code, b.invariant.number) for b in result.incomplete] == [(13, "DDP311", 7)]
    assert "model = DDP(model" in result.code  # the rest of the conversion is made
    assert [d.message for d in check_source(result.code, path=str(path)) if d.code == "DDP311"] == [MESSAGE]


def test_a_class_of_the_script_that_builds_a_derived_layer(project):
    (project / "flows.py").write_text(
        (CASE / "flows.py").read_text() + "\n\nclass CenteredNorm(ActNorm):\n    pass\n", encoding="utf-8"
    )
    found = _found(
        project,
        """
        import torch
        import torch.nn as nn

        from flows import CenteredNorm


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = CenteredNorm(4)
                self.head = nn.Linear(4, 1)

            def forward(self, x):
                return self.head(self.norm(x))


        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    )
    assert [(d.line, d.message) for d in found] == [(18, MESSAGE)]


SCRIPT_LAYER = """
import torch
import torch.nn as nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))

    def forward(self, x):
        with torch.no_grad():
            {write}
        return x * self.w


model = nn.Sequential(Scaled(), nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize(
    ("write", "reported"),
    [
        ("self.w.data.copy_(x.abs().mean(0))", True),
        ("self.w.data = 1 / x.std(0)", True),
        ("self.w.data.clamp_(-1, 1)", False),  # weight clipping: the same on every rank
        ("self.w.copy_(self.w * 0.5)", False),  # from the parameter itself, not from the input
    ],
)
def test_only_a_write_from_the_input_is_reported(project, write, reported):
    found = _found(project, SCRIPT_LAYER.replace("{write}", write))
    assert [d.line for d in found] == ([17] if reported else [])
    if reported:
        assert found[0].message.startswith("`Scaled` sets its parameters `w` from its input in forward (line 13)")


def test_a_script_that_broadcasts_the_parameters_is_not_reported(project):
    source = (
        (CASE / "input.py")
        .read_text()
        .replace(
            "model = Flow(4, depth=2)\n",
            "model = Flow(4, depth=2)\nfor p in model.parameters():\n    torch.distributed.broadcast(p.data, 0)\n",
        )
    )
    assert _found(project, source) == []


@pytest.mark.slow
def test_the_advice_makes_the_ranks_train_one_model(project):
    """The converted golden with the edit the finding asks for: an initialising forward on a batch, then
    the parameters broadcast from rank 0, before the wrap. verify's `params` fails without it (the
    golden declares so) and passes with it; DDP311 is satisfied."""
    from ddpfix.verify import verify_script

    expected = (CASE / "expected.py").read_text()
    wrap = "raw_model = model\n"
    advice = (
        "with torch.no_grad():\n"
        "    model(inputs[:8])  # the ActNorm layers' data-dependent initialisation\n"
        "if DISTRIBUTED:\n"
        "    for p in model.parameters():\n"
        "        dist.broadcast(p.data, 0)\n"
    )
    assert expected.count(wrap) == 1
    (project / "train.py").write_text(expected.replace(wrap, advice + wrap))
    assert _found(project) == []
    report = verify_script("train.py", nproc=2, timeout=240, cwd=project)
    assert report.statuses["params"] == "pass", report.output[-3000:]
    assert report.statuses["shards"] == "pass"
