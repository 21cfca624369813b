"""DDP210's fix: a task tensor drawn at random with no seed (`W_target = torch.randn(8, 1)`) is broadcast
from rank 0 once the process group this conversion sets up is joined, so every rank fits the same
task and `python train.py` runs as before (the broadcast runs only under torchrun). Where that cannot
be done safely (not a torch tensor bound to one name, a tensor that requires grad, a draw that runs
before the process group is joined), the finding says why and the script is
left as it is."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

MAIN = textwrap.dedent(
    """
    import numpy as np
    import torch
    import torch.nn as nn

    {module}


    def main():
        {body}
        model = nn.Linear(8, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(100):
            x = torch.randn(32, 8)
            loss = (model(x) - x @ W_target).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


    if __name__ == "__main__":
        main()
    """
)


def _ddp210(src: str):
    return [d for d in check_source(src) if d.code == "DDP210"]


def test_a_torch_draw_in_the_entry_is_broadcast_right_after_it():
    src = MAIN.format(module="", body="W_target = torch.randn(8, 1) * 5")
    [d] = _ddp210(src)
    assert d.fix == "safe", d
    result = fix_source(src)
    assert (
        "    W_target = torch.randn(8, 1) * 5\n    if DISTRIBUTED:\n        dist.broadcast(W_target, src=0)\n"
        in result.code
    )
    assert result.incomplete == [], [b.format() for b in result.incomplete]
    assert _ddp210(result.code) == []  # the output checks clean of it
    assert fix_source(result.code).code == result.code  # and a second apply changes nothing


def test_a_module_level_draw_is_broadcast_after_the_setup_of_the_entry():
    """Drawn at import, before `main()` joins the process group: broadcast once it is joined (in place:
    the module's tensor itself, so every function that reads it sees rank 0's draw)."""
    src = MAIN.format(module="W_target = torch.randn(8, 1)", body="pass")
    result = fix_source(src)
    assert result.incomplete == [], [b.format() for b in result.incomplete]
    setup = 'dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")\n'
    assert setup + "\n    if DISTRIBUTED:\n        dist.broadcast(W_target, src=0)\n    pass\n" in result.code


def test_a_module_level_draw_read_at_module_level_is_left_with_the_reason():
    """`y = X @ W` at import time reads the draw before any process group: a broadcast after the setup
    would come too late for `y`."""
    module = "W_target = torch.randn(8, 1)\nscale = W_target.abs().max()"
    src = MAIN.format(module=module, body="pass")
    [d] = _ddp210(src)
    assert d.fix == "none" and "(no fix: " in d.message and "read at module level" in d.message, d.message
    assert "broadcast" not in fix_source(src).code.split("def main")[0]


def test_a_tensor_that_requires_grad_keeps_the_finding_without_a_fix():
    src = MAIN.format(module="", body="W_target = torch.randn(8, 1, requires_grad=True)")
    [d] = _ddp210(src)
    assert d.fix == "none" and "(no fix: " in d.message and "requires grad" in d.message, d.message
    assert "dist.broadcast" not in fix_source(src).code


def test_numpy_draws_and_values_built_around_a_draw_travel_as_objects():
    """A NumPy array, a tuple of draws, or a dataset built around one (`TensorDataset(torch.randn(...))`)
    is no single tensor: rank 0's value is sent whole (`dist.broadcast_object_list`) and bound again."""
    src = MAIN.format(module="", body="W_target = torch.as_tensor(np.random.randn(8, 1)).float()")
    [d] = _ddp210(src)
    assert d.fix == "safe", d.message
    result = fix_source(src)
    block = (
        "    if DISTRIBUTED:\n        shared = [W_target]\n        dist.broadcast_object_list(shared, src=0)\n"
        "        W_target = shared[0]\n"
    )
    assert "    W_target = torch.as_tensor(np.random.randn(8, 1)).float()\n" + block in result.code
    assert result.incomplete == [] and _ddp210(result.code) == []
    pair = MAIN.format(module="", body="W_target, noise = np.random.randn(8, 1), np.random.randn(8)")
    code = fix_source(pair).code
    assert "        shared = [W_target, noise]\n        dist.broadcast_object_list(shared, src=0)\n" in code
    assert "        W_target, noise = shared\n" in code


def test_a_module_level_numpy_draw_read_in_main_keeps_the_finding_without_a_fix():
    """Sent whole, the value is bound again: from main() that would bind a local name, not the module's."""
    src = MAIN.format(module="W_target = np.random.randn(8, 1)", body="pass")
    [d] = _ddp210(src)
    assert d.fix == "none" and "(no fix: " in d.message and "global" in d.message, d.message
    assert "broadcast" not in fix_source(src).code


def test_a_list_shuffled_in_place_is_sent_whole_after_the_shuffle():
    body = "order = list(range(8))\n    random.shuffle(order)\n    W_target = torch.randn(8, 1)[order]"
    src = MAIN.format(module="", body=body).replace("import numpy as np\n", "import random\n\nimport numpy as np\n")
    result = fix_source(src)
    assert (
        "    random.shuffle(order)\n    if DISTRIBUTED:\n        shared = [order]\n"
        "        dist.broadcast_object_list(shared, src=0)\n        order = shared[0]\n"
    ) in result.code, result.code


def test_a_script_that_joins_the_process_group_itself_keeps_the_finding_without_a_fix():
    body = (
        'import torch.distributed as dist\n    dist.init_process_group("gloo")\n'
        "    W_target = torch.randn(8, 1)\n    model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))"
    )
    src = MAIN.format(module="", body=body).replace("    model = nn.Linear(8, 1)\n", "")
    [d] = _ddp210(src)
    assert d.fix == "none", d


FULL_BATCH = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    x = torch.unsqueeze(torch.linspace(-1, 1, 100), dim=1)
    y = x.pow(2) + 0.2 * torch.rand(x.size())
    net = nn.Sequential(nn.Linear(1, 10), nn.ReLU(), nn.Linear(10, 1))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.2)
    for t in range(100):
        loss = nn.functional.mse_loss(net(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    """
)


def test_full_batch_training_on_a_broadcast_draw_is_still_reported_as_unsharded():
    """Broadcast, `y` is the same on every rank, so the full-batch steps are the same on every rank:
    the conversion stays incomplete, for the data now (DDP211), no longer for the task (DDP210)."""
    result = fix_source(FULL_BATCH)
    assert "    dist.broadcast(y, src=0)\n" in result.code
    assert [(b.code, b.invariant.number) for b in result.incomplete] == [("DDP211", 3)]
    assert [d.code for d in check_source(result.code) if d.code in ("DDP210", "DDP211")] == ["DDP211"]


def test_full_batch_training_on_a_broadcast_input_is_reported_on_the_output():
    """Unseeded, `x` differs by rank and DDP211 leaves it to DDP210; once broadcast it is the same
    tensor on every rank, handed whole to every step: DDP211 reports it on the output."""
    src = FULL_BATCH.replace("torch.unsqueeze(torch.linspace(-1, 1, 100), dim=1)", "torch.rand(100, 1) * 2 - 1")
    assert [d.code for d in check_source(src) if d.code in ("DDP210", "DDP211")] == ["DDP210", "DDP210"]
    result = fix_source(src)
    assert "    dist.broadcast(x, src=0)\n" in result.code and "    dist.broadcast(y, src=0)\n" in result.code
    assert [(b.code, b.invariant.number) for b in result.incomplete] == [("DDP211", 3)]


def test_every_name_of_a_draw_at_import_is_sent_after_a_setup_in_the_main_block():
    """`a, b = np.random.randn(8, 1), np.random.randn(8)` at import, the setup at the top of the
    `__main__` block: both names are sent (a name left out would still differ by rank)."""
    src = textwrap.dedent(
        """
        import numpy as np
        import torch
        import torch.nn as nn

        a, b = np.random.randn(8, 1), np.random.randn(8)

        if __name__ == "__main__":
            model = nn.Linear(8, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            w = torch.from_numpy(a).float()
            for step in range(10):
                x = torch.randn(32, 8)
                loss = (model(x) - x @ w).pow(2).mean() + float(b.sum())
                opt.zero_grad()
                loss.backward()
                opt.step()
        """
    )
    result = fix_source(src)
    assert (
        "        shared = [a, b]\n        dist.broadcast_object_list(shared, src=0)\n        a, b = shared\n"
        in result.code
    )
    assert result.incomplete == [] and _ddp210(result.code) == []
