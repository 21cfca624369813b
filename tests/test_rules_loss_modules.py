"""Modules an optimizer is given besides the model: a loss of torch.nn holds no parameters (nothing
to wrap: DDP refuses a module without any), a loss module of the script's own may hold some or none
(the wrap is decided at run time); and a module-level model that a function rebinds through `global`
after the wrap (`model_load`) where training may go on after it is not wrapped, nor the rest of the
conversion made (once training is over, it is: tests/test_reload_after_training.py)."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

SCRIPT = textwrap.dedent(
    """
    import torch
    import torch.nn as nn


    class ScaledLoss(nn.Module):
        def __init__(self, learn):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(1)) if learn else None

        def forward(self, out, y):
            loss = (out - y).pow(2).mean()
            return loss * self.scale if self.scale is not None else loss


    def model_load(fn):
        global model
        model = torch.load(fn, weights_only=False)


    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    criterion = {criterion}
    params = list(model.parameters()) + list(criterion.parameters())
    optimizer = torch.optim.SGD(params, lr=0.1)
    for step in range(4):
        loss = criterion(model(torch.randn(2, 4)), torch.randn(2, 1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.save(model, "model.pt")
    {after}
    """
).lstrip()


def script(criterion: str, after: str = "") -> str:
    return SCRIPT.replace("{criterion}", criterion).replace("{after}", after)


def test_a_torch_loss_is_not_wrapped():
    out = fix_source(script("nn.MSELoss()")).code
    assert "model = DDP(model" in out and "DDP(criterion" not in out
    src = script("nn.MSELoss()")
    model_line = src.splitlines().index("model = nn.Linear(4, 1)") + 1
    assert [d.line for d in check_source(src) if d.code == "DDP301"] == [model_line]


def test_a_loss_of_the_scripts_own_is_wrapped_only_where_it_holds_parameters():
    out = fix_source(script("ScaledLoss(learn=True)")).code
    assert (
        "if DISTRIBUTED and any(p.requires_grad for p in criterion.parameters()):\n"
        "    criterion = DDP(criterion," in out
    )
    assert "if DISTRIBUTED:\n    model = DDP(model," in out


TRAINED_AGAIN = """model_load("model.pt")
for step in range(2):
    loss = criterion(model(torch.randn(2, 4)), torch.randn(2, 1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()"""


def test_a_model_a_function_rebinds_after_the_wrap_is_left_whole():
    src = script("nn.MSELoss()", TRAINED_AGAIN)
    found = {d.code: d for d in check_source(src)}
    assert found["DDP301"].fix == "none" and "model_load() rebinds the global model after the wrap" in (
        found["DDP301"].message
    )
    assert found["DDP001"].fix == "none" and "the fix cannot wrap model" in found["DDP001"].message
    assert fix_source(src).code == src


def test_a_model_a_function_rebinds_once_training_is_over_is_wrapped():
    out = fix_source(script("nn.MSELoss()", 'model_load("model.pt")\nprint(model(torch.ones(1, 4)).item())')).code
    assert "if DISTRIBUTED:\n    model = DDP(model," in out and "raw_model" not in out
    assert 'torch.save(getattr(model, "module", model), "model.pt")' in out


def test_a_rebinding_before_the_wrap_does_not_count():
    src = script("nn.MSELoss()").replace("torch.manual_seed(0)\n", 'torch.manual_seed(0)\nmodel_load("init.pt")\n')
    assert "model = DDP(model" in fix_source(src).code
