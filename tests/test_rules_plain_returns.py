"""A function that wraps the model it trains hands back the plain module (`return raw_model`), as a
plain run hands back the model; a save in such a function races the loads after its calls (DDP410
puts the barrier after the call). Golden: trained_model_returned_and_reloaded."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

TRAIN = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train(loader):
    model = nn.Linear(8, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    {save}
    return {returned}


if __name__ == "__main__":
    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    {bound} = train(loader)
    {after}
"""


def _script(save="pass", returned="model", bound="model", after="print(model.weight.shape)") -> str:
    return textwrap.dedent(TRAIN).format(save=save, returned=returned, bound=bound, after=after)


def test_the_wrapped_model_is_returned_plain():
    code = fix_source(_script()).code
    assert "    return raw_model\n" in code
    assert "    print(model.weight.shape)\n" in code  # the caller reads the model's own attributes as before


def test_a_tuple_returns_the_plain_module_in_the_models_place():
    code = fix_source(_script(returned="model, optimizer", bound="model, optimizer")).code
    assert "    return raw_model, optimizer\n" in code


def test_other_returned_values_are_left_alone():
    code = fix_source(_script(returned="loss.item()", bound="last", after="print(last)")).code
    assert "    return loss.item()\n" in code
    assert "raw_model\n" not in code.split("return")[-1]


def test_the_output_checks_clean():
    result = fix_source(_script())
    assert not result.incomplete
    assert check_source(result.code) == []


def test_a_load_after_the_call_of_a_saving_function_waits_for_rank_0():
    source = _script(
        save='torch.save(model.state_dict(), "best.pt")', after='model.load_state_dict(torch.load("best.pt"))'
    )
    result = fix_source(source)
    lines = [line.strip() for line in result.code.splitlines()]
    call = lines.index("model = train(loader)")
    assert lines[call + 1 : call + 3] == ["if DISTRIBUTED:", "dist.barrier()"]
    assert "DDP410" in {d.code for d in result.diagnostics if d.applied}
    assert check_source(result.code) == []


def test_no_barrier_when_the_function_does_not_save_the_file_loaded():
    source = _script(after='model.load_state_dict(torch.load("pretrained.pt"))')
    assert "barrier" not in fix_source(source).code
