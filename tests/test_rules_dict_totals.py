"""DDP409 on a dict of totals (`losses[key] += float(v)` into `losses = {k: 0 for k in ...}`): the helper
reduce_over_ranks all-reduces a number, a list or a tensor, not a dict, so such a total is reported
without a fix rather than handed to it (a TypeError under torchrun, after a plain run that works)."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

SCRIPT = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        {bind}
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses["mse"] += loss.item() * x.size(0)
        print({{k: v / len(loader.dataset) for k, v in losses.items()}})
    """
)


def test_a_dict_of_totals_is_reported_without_a_fix():
    for bind in ('losses = {"mse": 0.0}', 'losses = {k: 0.0 for k in ["mse"]}', "losses = dict(mse=0.0)"):
        src = SCRIPT.format(bind=bind)
        [d] = [d for d in check_source(src) if d.code == "DDP409"]
        assert d.fix == "none", (bind, d)
        assert d.message.endswith("(no fix: losses is a dict of totals: all-reduce each of its values)"), d.message
        assert "reduce_over_ranks(losses" not in fix_source(src).code, bind


def test_a_list_of_totals_is_still_reduced():
    src = (
        SCRIPT.format(bind="losses = [0.0]")
        .replace('losses["mse"]', "losses[0]")
        .replace(
            "print({k: v / len(loader.dataset) for k, v in losses.items()})", "print(losses[0] / len(loader.dataset))"
        )
    )
    assert "global_losses = reduce_over_ranks(losses)" in fix_source(src).code
