"""DDP311: a model whose layers set their own parameters from the input in forward (ActNorm's
data-dependent initialisation; golden parameters_set_from_input, verified on 2 ranks). Under DDP each
rank sets them from its own batch after the wrap's broadcast: reported, followed from the model the
script builds down to the layer of its modules. An initialisation behind the class's own flag is fixed
(rank 0's parameters broadcast once the first forward has run); a write on every forward is reported,
the conversion is incomplete and `check` on the output says so, and verify fails `params` on it."""

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
    assert [(d.line, d.message, d.fix) for d in found] == [(13, MESSAGE, "safe")]


def test_the_fix_broadcasts_once_the_first_forward_has_run(project):
    path = project / "train.py"
    result = fix_source(path.read_bytes(), path=str(path))
    lines = result.code.splitlines()
    built = lines.index("model = Flow(4, depth=2)")
    assert lines[built + 1 : built + 3] == [
        "if DISTRIBUTED:",
        "    broadcast_after_first_forward(model)  # ActNorm sets its parameters from each rank's first batch",
    ]
    assert lines.index("def broadcast_after_first_forward(module):") < built
    assert "                dist.broadcast(p.data, 0)" in lines
    assert not result.incomplete
    assert [d for d in check_source(result.code, path=str(path)) if d.code == "DDP311"] == []
    assert fix_source(result.code, path=str(path)).code == result.code


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
    ("write", "fix"),
    [
        ("self.w.data.copy_(x.abs().mean(0))", "none"),  # on every forward: no one broadcast keeps them equal
        ("self.w.data = 1 / x.std(0)", "none"),
        ("if self.training:\n            self.w.data = 1 / x.std(0)", "none"),  # true on every training step
        ("if not self.ready:\n            self.w.data = 1 / x.std(0)\n            self.ready = True", "safe"),
        ("self.w.data.clamp_(-1, 1)", None),  # weight clipping: the same on every rank
        ("self.w.copy_(self.w * 0.5)", None),  # from the parameter itself, not from the input
    ],
)
def test_only_a_write_from_the_input_is_reported_and_only_a_first_one_fixed(project, write, fix):
    found = _found(project, SCRIPT_LAYER.replace("{write}", write))
    assert [(d.line, d.fix) for d in found] == ([] if fix is None else [(line_of(write), fix)])
    if fix is not None:
        assert found[0].message.startswith("`Scaled` sets its parameters `w` from its input in forward (line ")


def line_of(write: str) -> int:
    """The line of the model the script builds in SCRIPT_LAYER with `write` in its forward."""
    return (
        SCRIPT_LAYER.replace("{write}", write).splitlines().index("model = nn.Sequential(Scaled(), nn.Linear(4, 1))")
        + 1
    )


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


def test_a_model_a_trainer_class_of_the_script_builds(project):
    path = project / "train.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch
            import torch.nn as nn
            from torch.utils.data import DataLoader, TensorDataset

            from flows import Flow


            class Trainer:
                def __init__(self):
                    self.model = Flow(4, depth=2)
                    self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-2)

                def fit(self, loader):
                    for x, y in loader:
                        loss = nn.functional.mse_loss(self.model(x), y)
                        self.optimizer.zero_grad()
                        loss.backward()
                        self.optimizer.step()


            torch.manual_seed(0)
            inputs = torch.randn(64, 4)
            loader = DataLoader(TensorDataset(inputs, inputs.sum(1, keepdim=True)), batch_size=8, shuffle=True)
            Trainer().fit(loader)
            """
        )
    )
    assert [(d.line, d.fix) for d in _found(project)] == [(11, "safe")]
    lines = fix_source(path.read_bytes(), path=str(path)).code.splitlines()
    built = lines.index("        self.model = Flow(4, depth=2)")
    assert lines[built + 1 : built + 3] == [
        "        if DISTRIBUTED:",
        "            broadcast_after_first_forward(self.model)  # ActNorm sets its parameters from each rank's first batch",
    ]


@pytest.mark.slow
def test_a_write_on_every_forward_is_incomplete_and_verify_fails_params(project):
    """The golden's layer renormalising on every batch: no fix, the conversion is incomplete, and the
    output does train different models on the two ranks (verify's `params`), as the finding says."""
    from ddpfix.verify import verify_script

    flows = (CASE / "flows.py").read_text()
    assert flows.count("if self.initialized.item() == 0:") == 1
    (project / "flows.py").write_text(flows.replace("if self.initialized.item() == 0:", "if self.training:"))
    path = project / "train.py"
    result = fix_source(path.read_bytes(), path=str(path))
    assert [(b.line, b.code, b.invariant.number) for b in result.incomplete] == [(13, "DDP311", 7)]
    assert "model = DDP(model" in result.code  # the rest of the conversion is made
    assert [d.message for d in check_source(result.code, path=str(path)) if d.code == "DDP311"] == [MESSAGE]
    path.write_text(result.code)
    report = verify_script("train.py", nproc=2, timeout=240, cwd=project)
    assert report.statuses["params"] == "fail", report.output[-3000:]
    assert report.statuses["shards"] == "pass"
