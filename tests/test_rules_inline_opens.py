"""DDP405 on a file opened inside the one call of a statement (`pickle.dump(vocab, open(path, "wb"))`,
`json.dump(stats, open(path, "w"))`, `open(path, "w").write(text)`): written by every rank, so the
statement runs on rank 0; reported without a fix where the script reads the file back (the other
ranks would then read it before rank 0 has written it)."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

SCRIPT = textwrap.dedent(
    """
    import json
    import pickle

    import torch
    import torch.nn as nn

    vocab = {{"a": 1}}
    {write}
    {read}
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(2, 4)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """
).lstrip()


def script(write: str, read: str = "") -> str:
    return SCRIPT.replace("{{", "{").replace("}}", "}").replace("{write}", write).replace("{read}", read)


def ddp405(src: str) -> list:
    return [d for d in check_source(src) if d.code == "DDP405"]


def test_a_file_written_where_it_is_opened_is_rank_zeros():
    for write in (
        'pickle.dump(vocab, open("vocab.pkl", "wb"))',
        'json.dump(vocab, open("vocab.json", "w"), indent=2)',
        'open("vocab.txt", "w").write(str(vocab))',
    ):
        src = script(write)
        [d] = ddp405(src)
        assert d.fix == "safe" and d.line == 8, write
        assert f"if RANK == 0:\n    {write}\n" in fix_source(src).code


def test_a_file_read_back_is_reported_without_a_fix():
    src = script('pickle.dump(vocab, open("vocab.pkl", "wb"))', 'vocab = pickle.load(open("vocab.pkl", "rb"))')
    [d] = ddp405(src)
    assert d.fix == "none" and "read back at line 9" in d.message
    assert "if RANK == 0:\n    pickle.dump" not in fix_source(src).code


def test_a_file_named_per_rank_or_opened_for_reading_is_left_alone():
    for write in (
        'pickle.dump(vocab, open(f"vocab{torch.distributed.get_rank()}.pkl", "wb"))',
        'print(json.load(open("vocab.json")))',
    ):
        assert ddp405(script(write)) == [], write


def test_a_check_that_the_file_exists_is_no_read():
    src = script('pickle.dump(vocab, open("vocab.pkl", "wb"))', 'print(os.path.exists("vocab.pkl"))')
    src = "import os\n" + src
    [d] = ddp405(src)
    assert d.fix == "safe"
