"""DDP409 on ratios of two totals (`100. * correct / total`): both sides take one reduction, summed where
either is also shown as a count (`%d`), else averaged as before; sides that need different ones: no fix."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

SCRIPT = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
ds = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
loader = DataLoader(ds, batch_size=8, shuffle=True)
model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    correct, total, steps = 0, 0, 0
    for x, y in loader:
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        correct += (out.argmax(1) == y).sum().item()
        total += y.size(0)
        steps += 1
{show}
"""


def script(show: str) -> str:
    return SCRIPT.format(show=textwrap.indent(textwrap.dedent(show).strip(), "    "))


def reductions(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines() if "= reduce_over_ranks(" in line]


def ddp409(src: str):
    return [d for d in check_source(src) if d.code == "DDP409"]


def test_a_ratio_shown_beside_its_counts_is_summed_on_both_sides():
    src = script('print("acc %.3f (%d/%d)" % (100.0 * correct / total, correct, total))')
    assert [d.fix for d in ddp409(src)] == ["safe"]
    code = fix_source(src).code
    assert reductions(code) == [
        "global_correct = reduce_over_ranks(correct)",
        "global_total = reduce_over_ranks(total)",
    ]
    assert 'print("acc %.3f (%d/%d)" % (100.0 * global_correct / global_total, global_correct, global_total))' in code


def test_a_ratio_alone_is_averaged_on_both_sides():
    src = script('print(f"acc {correct / total:.3f}")')
    code = fix_source(src).code
    assert reductions(code) == [
        "avg_correct = reduce_over_ranks(correct, average=True)",
        "avg_total = reduce_over_ranks(total, average=True)",
    ]


def test_a_ratio_whose_sides_need_different_reductions_gets_no_fix():
    """`correct` shown as a count (summed), `total` divided by this rank's steps (averaged): no reduction
    keeps `correct / total` right on both sides."""
    src = script("print(correct / total, correct, total / steps)")
    [d] = ddp409(src)
    assert d.fix == "none"
    assert d.message.endswith("(no fix: the two sides of a ratio need different reductions)")
    assert "reduce_over_ranks" not in fix_source(src).code


def test_a_total_both_summed_and_averaged_says_so():
    [d] = ddp409(script("print(correct / steps, correct)"))
    assert d.fix == "none"
    assert d.message.endswith("(no fix: correct is shown both as a sum and as an average over the ranks)")
