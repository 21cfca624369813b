"""DDP401 on deletions: a path every rank deletes (`os.remove` of the checkpoints a `glob` lists,
`shutil.rmtree(log_dir)` before `os.makedirs(log_dir)`, `Path(p).unlink()`) is rank 0's to delete; a
path made per rank or per process is left alone."""

from __future__ import annotations

import textwrap

import pytest

from ddpfix import check_source, fix_source

SCRIPT = textwrap.dedent(
    """
    import glob
    import os
    import shutil
    import tempfile
    from pathlib import Path

    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    RANK = int(os.environ.get("RANK", 0))


    def main():
        loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4, shuffle=True)
        model = nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        for epoch in range(2):
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            {delete}


    if __name__ == "__main__":
        main()
    """
).lstrip()


def deletions(delete: str) -> list:
    src = SCRIPT.replace("{delete}", delete)
    return [d for d in check_source(src) if d.code == "DDP401"]


@pytest.mark.parametrize(
    "delete",
    [
        "os.remove('last.pt')",
        "os.unlink('last.pt')",
        "shutil.rmtree('runs')",
        "Path('last.pt').unlink()",
        "Path('last.pt').unlink(missing_ok=True)",
        "[os.remove(p) for p in []]\n        for p in glob.glob('*.pt'):\n            os.remove(p)",
    ],
)
def test_a_shared_path_deleted_on_every_rank_is_reported(delete):
    [d] = deletions(delete)
    assert d.fix == "safe" and "every process deletes the same path" in d.message


@pytest.mark.parametrize(
    "delete",
    [
        "os.remove(f'rank{RANK}.pt')",  # one file per rank
        "fd, tmp = tempfile.mkstemp()\n        os.remove(tmp)",  # one file per process
        "os.remove(f'tmp_{os.getpid()}.txt')",
        "if RANK == 0:\n            os.remove('last.pt')",  # rank 0's already
    ],
)
def test_a_path_of_one_process_is_left_alone(delete):
    assert deletions(delete) == []


def test_the_fix_guards_the_deletion_and_keeps_a_plain_run_as_it_was():
    src = SCRIPT.replace("{delete}", "for p in glob.glob('*.pt'):\n            os.remove(p)")
    out = fix_source(src).code
    assert "        for p in glob.glob('*.pt'):\n            if RANK == 0:\n                os.remove(p)" in out
    assert fix_source(out).code == out


def test_a_folder_made_afresh_is_ddp420s_with_or_without_exist_ok():
    """`if os.path.exists(d): shutil.rmtree(d)` right before `os.makedirs(d, exist_ok=True)`: rank 0
    makes the folder afresh and the others wait at a barrier (DDP420), one finding, not two."""
    for flag in ("", ", exist_ok=True"):
        fresh = f"if os.path.exists('runs'):\n            shutil.rmtree('runs')\n        os.makedirs('runs'{flag})"
        src = SCRIPT.replace("{delete}", fresh)
        assert deletions(fresh) == [], flag
        [d] = [d for d in check_source(src) if d.code == "DDP420"]
        assert d.fix == "safe", flag
        out = fix_source(src).code
        assert "dist.barrier()  # the others wait until rank 0 has made the folder" in out, flag
