"""DDP402 through the methods that return the module they are called on: `torch.save(model.cpu())`,
`joblib.dump(model.float(), path)` and `model.float().state_dict()` all reach the DDP wrapper itself,
so they save the plain module (`raw_model.cpu()`), and what the converted script saves under torchrun
loads in a plain process as the plain module."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
from exit_without_teardown import outside_env, torchrun

from ddpfix import check_source, fix_source

GOLDEN = Path(__file__).parent / "golden" / "whole_model_pickle"

SCRIPT = textwrap.dedent(
    """
    import joblib
    import pickle
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4, shuffle=True)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    {save}
    """
).lstrip()


@pytest.mark.parametrize(
    "save, saved",
    [
        (
            "joblib.dump(model.float(), 'model.pkl', compress=2)",
            "joblib.dump(raw_model.float(), 'model.pkl', compress=2)",
        ),
        ("torch.save(model.to('cpu').eval(), 'model.pt')", "torch.save(raw_model.to('cpu').eval(), 'model.pt')"),
        ("pickle.dump(model.cpu(), open('model.pkl', 'wb'))", "pickle.dump(raw_model.cpu(), open('model.pkl', 'wb'))"),
        ("torch.save(model.half().state_dict(), 'w.pt')", "torch.save(raw_model.half().state_dict(), 'w.pt')"),
    ],
)
def test_the_wrapper_reached_through_its_own_methods_is_saved_plain(save, saved):
    src = SCRIPT.replace("{save}", save)
    [d] = [d for d in check_source(src) if d.code == "DDP402"]
    assert d.fix == "safe" and "raw_model." in d.message, d.message
    out = fix_source(src).code
    assert saved in out, out
    assert fix_source(out).code == out


def test_a_method_returning_something_else_is_not_the_wrapper():
    """`model.parameters()` is no module: nothing to route."""
    src = SCRIPT.replace("{save}", "torch.save(list(model.named_parameters()), 'p.pt')")
    assert [d for d in check_source(src) if d.code == "DDP402"] == []


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_what_two_ranks_save_loads_as_the_plain_module(tmp_path):
    import torch

    env = outside_env()
    script = GOLDEN / "expected.py"
    cmd = torchrun(2, str(script))
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    model = torch.load(tmp_path / "model.pt", weights_only=False)
    assert type(model) is torch.nn.Linear
    assert sorted(torch.load(tmp_path / "weights.pt")) == ["bias", "weight"]


@pytest.mark.parametrize(
    "save, saved",
    [
        ("torch.save({'net': model, 'acc': 1.0}, 'ckpt.t7')", "torch.save({'net': raw_model, 'acc': 1.0}, 'ckpt.t7')"),
        (
            "state = {'net': model, 'epoch': 3}\ntorch.save(state, 'ckpt.t7')",
            "state = {'net': raw_model, 'epoch': 3}\nif RANK == 0:\n    torch.save(state, 'ckpt.t7')",
        ),
    ],
)
def test_the_wrapper_in_a_saved_dict_is_saved_plain(save, saved):
    """`state = {'net': net, 'acc': acc}; torch.save(state, path)`: the dict's value is the wrapper
    (mixup-cifar10 pickled it whole)."""
    src = SCRIPT.replace("{save}", save)
    [d] = [d for d in check_source(src) if d.code == "DDP402"]
    assert d.fix == "safe" and "(`model`)" in d.message and "save raw_model" in d.message, d.message
    out = fix_source(src).code
    assert saved in out, out


def test_a_dict_of_state_dicts_is_left_to_the_state_dict_rule():
    src = SCRIPT.replace("{save}", "torch.save({'net': model.state_dict()}, 'ckpt.t7')")
    [d] = [d for d in check_source(src) if d.code == "DDP402"]
    assert "state_dict()" in d.message and "pickles" not in d.message


STOPPER = Path(__file__).parent / "golden" / "early_stopper_pickles" / "input.py"


def test_a_method_of_an_object_that_pickles_the_wrapper_is_handed_the_plain_module():
    """`early_stopper.is_continuable(model, loss)` of a class of this file runs `torch.save(model, path)`
    (golden early_stopper_pickles): the plain module is passed, so what it pickles loads without DDP."""
    result = fix_source(STOPPER.read_text(), path="train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP402"]
    assert d.applied and "early_stopper.is_continuable() pickles model, the DDP wrapper" in d.message
    assert "early_stopper.is_continuable(raw_model, total)" in result.code


def test_a_method_that_also_trains_through_it_is_reported_without_a_fix():
    text = STOPPER.read_text().replace(
        "            torch.save(model, self.save_path)\n",
        "            torch.save(model, self.save_path)\n            model(torch.randn(2, 4)).sum().backward()\n",
    )
    [d] = [d for d in check_source(text, path="train.py") if d.code == "DDP402"]
    assert d.fix == "none" and "it trains through it" in d.message


def test_a_method_that_saves_something_else_is_not_reported():
    text = STOPPER.read_text().replace("torch.save(model, self.save_path)", "torch.save(loss, self.save_path)")
    assert [d for d in check_source(text, path="train.py") if d.code == "DDP402"] == []


def test_the_method_of_an_object_of_the_scripts_module_too(tmp_path, monkeypatch):
    """The same stopper in a module of the script (stopping.py): its summary says the method pickles the
    argument, and the script passes the plain module."""
    text = STOPPER.read_text()
    start, main = text.index("class EarlyStopper"), text.index('if __name__ == "__main__":')
    (tmp_path / "stopping.py").write_text("import torch\n\n\n" + text[start:main].rstrip() + "\n")
    (tmp_path / "train.py").write_text(text[:start] + "from stopping import EarlyStopper\n\n\n" + text[main:])
    monkeypatch.chdir(tmp_path)
    result = fix_source((tmp_path / "train.py").read_text(), path=str(tmp_path / "train.py"))
    [d] = [d for d in result.diagnostics if d.code == "DDP402"]
    assert d.applied and "pickles model" in d.message
    assert "early_stopper.is_continuable(raw_model, total)" in result.code


def test_a_function_of_the_scripts_module_that_pickles_it(tmp_path, monkeypatch):
    """`save_model(model, path)` of utils.py running `torch.save(model, path)`: the plain module is passed."""
    (tmp_path / "utils.py").write_text("import torch\n\n\ndef save_model(model, path):\n    torch.save(model, path)\n")
    text = STOPPER.read_text().replace(
        "        if not early_stopper.is_continuable(model, total):\n            break\n",
        "        save_model(model, 'best.pt')\n",
    )
    text = text.replace("import torch\n", "import torch\nfrom utils import save_model\n", 1)
    (tmp_path / "train.py").write_text(text)
    monkeypatch.chdir(tmp_path)
    result = fix_source(text, path=str(tmp_path / "train.py"))
    [d] = [d for d in result.diagnostics if d.code == "DDP402"]
    assert "save_model() pickles model" in d.message and d.applied
    assert "save_model(raw_model, 'best.pt')" in result.code
