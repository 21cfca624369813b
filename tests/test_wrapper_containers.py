"""DDP308 on a model used as a container: `model[0]`, `len(model)`, `for layer in model:`,
`enumerate(model)` after the DDP wrap raise TypeError under torchrun ('DistributedDataParallel' object
is not subscriptable / has no len() / is not iterable), while a plain run works. They go through the
plain module; a walk of the layers that runs them in the training step is reported without a fix
(it would bypass DDP). A function of the script that freezes the part it is handed (`freeze(model[0])`)
prepares the model: the wrap follows it. Golden sequential_layers runs both on 2 ranks."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

TRAIN = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
{imports}

def freeze(layer):
    for p in layer.parameters():
        p.requires_grad = False


torch.manual_seed(0)
{build}
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, shuffle=True)
optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
for epoch in range(2):
    for x, y in loader:
        {forward}
        loss = nn.functional.mse_loss(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
{after}
"""
SEQ = "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))"


def script(build: str = SEQ, forward: str = "out = model(x)", after: str = "", imports: str = "") -> str:
    return textwrap.dedent(TRAIN).format(build=build, forward=forward, after=after, imports=imports)


def test_indexing_length_and_iteration_after_the_wrap_go_through_the_plain_module():
    after = "head = model[-1]\nprint(len(model), [type(m).__name__ for m in model])\nfor i, layer in enumerate(model):\n    pass"
    src = script(after=after)
    found = [(d.code, d.fix) for d in check_source(src) if d.code == "DDP308"]
    assert found == [("DDP308", "safe")] * 4, found
    out = fix_source(src).code
    assert "head = raw_model[-1]\n" in out
    assert "len(raw_model), [type(m).__name__ for m in raw_model]" in out
    assert "for i, layer in enumerate(raw_model):" in out


def test_a_walk_of_the_layers_in_the_training_step_is_reported_without_a_fix():
    forward = "out = x\n        for layer in model:\n            out = layer(out)"
    src = script(forward=forward)
    found = [d for d in check_source(src) if d.code == "DDP308"]
    assert [(d.fix, d.line) for d in found] == [("none", src.splitlines().index("        for layer in model:") + 1)]
    result = fix_source(src)
    assert "for layer in model:" in result.code
    assert [(b.code, b.invariant.number) for b in result.incomplete] == [("DDP308", 2)]


def test_a_script_that_wraps_its_model_itself_reads_the_layers_through_module():
    build = (
        "import torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        'dist.init_process_group("gloo")\n'
        f"model = DDP({SEQ.split(' = ', 1)[1]})"
    )
    src = script(build=build, after="print(model[0].weight.shape)")
    out = fix_source(src, select=["DDP308"]).code
    assert "print(model.module[0].weight.shape)" in out, out


def test_the_wrap_follows_a_function_of_the_script_that_freezes_the_part_it_is_handed():
    src = script(build=f"{SEQ}\nfreeze(model[0])")
    out = fix_source(src).code
    assert out.index("freeze(model[0])") < out.index("model = DDP(model"), out
    src = script(build=f"{SEQ}\nfreeze(model)\nmodel[2].requires_grad_(True)")
    out = fix_source(src).code
    assert out.index("model[2].requires_grad_(True)") < out.index("model = DDP(model"), out


def test_a_list_of_wrappers_is_a_container():
    """`nets = [DDP(net) for net in nets]` (golden model_list): the list is walked, not a wrapper."""
    src = """
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
nets = [DDP(nn.Linear(4, 1)) for _ in range(2)]
opts = [torch.optim.SGD(net.parameters(), lr=0.1) for net in nets]
for step in range(3):
    for net, opt in zip(nets, opts):
        loss = net(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
print(len(nets), nets[0].module.weight.shape)
"""
    assert "DDP308" not in {d.code for d in check_source(src)}
