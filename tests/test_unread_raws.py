"""The name a DDP wrap keeps for the plain module (`raw_model = model`) is written only where an edit
reads it; and a wrap under a condition with no such name still counts as a wrap, its plain module
reached as `getattr(model, "module", model)`."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

SCRIPT = """\
import torch
import torch.nn as nn


def main():
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
{tail}

if __name__ == "__main__":
    main()
"""


def _fixed(tail: str = "") -> str:
    return fix_source(SCRIPT.format(tail=textwrap.indent(tail, "    ")), path="train.py").code


def test_no_name_is_kept_where_nothing_reads_it():
    out = _fixed()
    assert "raw_model" not in out
    assert "    model = nn.Linear(4, 1)\n    if DISTRIBUTED:\n        model = DDP(model, device_ids=" in out


def test_the_name_is_kept_where_a_save_reads_it():
    out = _fixed('torch.save(model.state_dict(), "model.pt")')
    assert "    raw_model = model\n    if DISTRIBUTED:\n" in out
    assert 'torch.save(raw_model.state_dict(), "model.pt")' in out


def test_a_name_taken_by_the_script_is_left_alone_and_the_unread_one_dropped():
    out = _fixed('raw_model = "the script\'s own"\nprint(raw_model)')
    assert "unwrapped_model" not in out and out.count("raw_model = ") == 1


def test_a_second_apply_changes_nothing_and_the_output_checks_clean():
    out = _fixed()
    assert fix_source(out, path="train.py").code == out
    assert check_source(out, path="train.py") == []
