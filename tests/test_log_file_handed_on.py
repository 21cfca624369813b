"""DDP405 on a file kept open and handed on to functions that write it (golden log_file_handed_on):
rank 0 opens the file, the other ranks os.devnull; a file also read is reported without a fix."""

from __future__ import annotations

from pathlib import Path

from ddpfix import check_source, fix_source

INPUT = (Path(__file__).parent / "golden" / "log_file_handed_on" / "input.py").read_text()


def ddp405(src):
    return [d for d in check_source(src) if d.code == "DDP405"]


def test_file_handed_on_is_opened_on_rank_zero_and_devnull_elsewhere():
    [d] = ddp405(INPUT)
    assert d.fix == "safe" and "the other ranks write theirs to os.devnull" in d.message
    out = fix_source(INPUT)
    assert '    train_log = open("train.csv", "w") if RANK == 0 else open(os.devnull, "w")\n' in out.code
    assert out.incomplete == []


def test_file_read_as_well_or_read_back_gets_no_fix():
    for src in (
        INPUT.replace('open("train.csv", "w")', 'open("train.csv", "a+")'),
        INPUT.replace("    train_log.close()\n", '    train_log.close()\n    print(open("train.csv").read())\n'),
    ):
        [d] = ddp405(src)
        assert d.fix == "none" and "open and use it on rank 0 only" in d.message
        assert "os.devnull" not in fix_source(src).code
