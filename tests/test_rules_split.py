"""DDP213: a dataset split at random with no seed, so every rank splits it its own way."""

from __future__ import annotations

import textwrap

import pytest
from invariants import converted

from ddpfix import check_source, fix_source

TRAIN = """
model = nn.Linear(1, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for xb, yb in loader:
        loss = (model(xb) - yb).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def script(split: str, head: str = "", imports: str = "") -> str:
    return (
        textwrap.dedent(
            """
            import torch
            import torch.nn as nn
            from torch.utils.data import DataLoader, TensorDataset, random_split
            """
        ).lstrip()
        + imports
        + head
        + "x = torch.linspace(-1, 1, 100).unsqueeze(1)\n"
        + "dataset = TensorDataset(x, 2 * x)\n"
        + split
        + "loader = DataLoader(train_set, batch_size=10, shuffle=True)\n"
        + TRAIN
    )


def codes(src: str, code: str = "DDP213"):
    return [d for d in check_source(src) if d.code == code]


def test_random_split_gets_one_generator_for_every_rank():
    src = script("train_set, val_set = random_split(dataset, [80, 20])\n")
    [d] = codes(src)
    assert d.message.startswith("random_split with no generator: under torchrun every rank splits the data")
    out = converted(src)
    assert "    split_generator" not in out
    assert (
        "split_generator = torch.Generator().manual_seed(0) if DISTRIBUTED else None  # every rank splits alike\n"
        in out
    )
    assert "train_set, val_set = random_split(dataset, [80, 20], generator=split_generator)\n" in out
    assert out.index("split_generator =") < out.index("random_split(dataset")


def test_train_test_split_gets_a_random_state_that_only_torchrun_uses():
    src = script(
        "train_x, val_x = train_test_split(list(range(100)), test_size=0.2)\n"
        "train_set = torch.utils.data.Subset(dataset, train_x)\n",
        imports="from sklearn.model_selection import train_test_split\n",
    )
    [d] = codes(src)
    assert d.message.startswith("train_test_split with no random_state:")
    out = converted(src)
    assert "train_test_split(list(range(100)), test_size=0.2, random_state=0 if DISTRIBUTED else None)" in out


def test_a_split_seeded_or_a_global_generator_seeded_alike_is_left_alone():
    seeded = "train_set, val_set = random_split(dataset, [80, 20], generator=torch.Generator().manual_seed(1))\n"
    assert codes(script(seeded)) == []
    positional = "train_set, val_set = random_split(dataset, [80, 20], torch.Generator().manual_seed(1))\n"
    assert codes(script(positional)) == []
    plain = "train_set, val_set = random_split(dataset, [80, 20])\n"
    assert codes(script(plain, head="torch.manual_seed(0)\n")) == []
    assert codes(script(plain, head="np.random.seed(0)\n", imports="import numpy as np\n")) == []


def test_a_seed_that_differs_by_rank_seeds_nothing_alike():
    src = script(
        "train_set, val_set = random_split(dataset, [80, 20])\n",
        head='RANK = int(os.environ.get("RANK", 0))\ntorch.manual_seed(1234 + RANK)\n',
        imports="import os\n",
    )
    assert len(codes(src)) == 1


def test_a_split_on_each_pass_of_a_loop_is_reported_with_no_fix():
    src = (
        script("")
        .replace("loader = DataLoader(train_set, batch_size=10, shuffle=True)\n", "")
        .replace(
            "for epoch in range(2):\n",
            "for epoch in range(2):\n"
            "    train_set, val_set = random_split(dataset, [80, 20])\n"
            "    loader = DataLoader(train_set, batch_size=10, shuffle=True)\n",
        )
    )
    [d] = codes(src)
    assert d.fix == "none" and d.message.endswith(
        "seed it alike on every rank by hand (a new split on each pass of a loop)"
    )
    result = fix_source(src)
    assert "generator=" not in result.code
    assert [b.invariant.number for b in result.incomplete if b.code == "DDP213"] == [7]
    # `check` on the output says the same (the contract and the diagnostics are one analysis)
    assert [d.code for d in codes(result.code)] == ["DDP213"]
    assert fix_source(result.code).code == result.code


def test_a_split_in_a_function_called_in_a_loop_is_reported_with_no_fix():
    src = textwrap.dedent(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset, random_split

        x = torch.linspace(-1, 1, 100).unsqueeze(1)
        dataset = TensorDataset(x, 2 * x)


        def fold_loader():
            train_set, val_set = random_split(dataset, [80, 20])
            return DataLoader(train_set, batch_size=10, shuffle=True)


        model = nn.Linear(1, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for fold in range(3):
            for xb, yb in fold_loader():
                loss = (model(xb) - yb).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        """
    )
    [d] = codes(src)
    assert d.fix == "none" and d.message.endswith("(a new split on each pass of a loop)")
    assert "generator=" not in fix_source(src).code
    once = src.replace(
        "for fold in range(3):\n    for xb, yb in fold_loader():",
        "loader = fold_loader()\nfor fold in range(3):\n    for xb, yb in loader:",
    )
    assert "loader = fold_loader()" in once
    [d] = codes(once)
    assert d.fix == "safe" and "generator=split_generator" in fix_source(once).code


def test_the_split_generator_does_not_silence_random_data_drawn_per_rank():
    """`torch.Generator().manual_seed(0)` seeds only that generator: random data the script draws
    with no seed is still drawn per rank, on the input and on the output alike."""
    src = script("train_set, val_set = random_split(dataset, [80, 20])\n").replace(
        "dataset = TensorDataset(x, 2 * x)\n", "dataset = TensorDataset(x, torch.randn(100, 1))\n"
    )
    assert [d.code for d in codes(src, "DDP210")] == ["DDP210"]  # not silenced by the split's generator
    result = fix_source(src)
    assert "generator=split_generator" in result.code
    # ... and fixed: rank 0's dataset, drawn data and all, is sent to every rank before the split
    assert "    shared = [dataset]\n    dist.broadcast_object_list(shared, src=0)\n" in result.code
    assert result.incomplete == [] and codes(result.code) == []


def test_a_script_that_starts_its_own_processes_is_reported_with_no_fix():
    src = textwrap.dedent(
        """
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset, random_split
        from torch.utils.data.distributed import DistributedSampler


        def worker(rank, world_size):
            dist.init_process_group("gloo", rank=rank, world_size=world_size)
            x = torch.linspace(-1, 1, 100).unsqueeze(1)
            train_set, val_set = random_split(TensorDataset(x, 2 * x), [80, 20])
            loader = DataLoader(train_set, batch_size=10, sampler=DistributedSampler(train_set))
            model = DDP(nn.Linear(1, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for xb, yb in loader:
                loss = (model(xb) - yb).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            dist.destroy_process_group()


        if __name__ == "__main__":
            mp.spawn(worker, args=(2,), nprocs=2)
        """
    )
    [d] = codes(src)
    assert d.fix == "none" and d.message.endswith("(the script starts its own processes)")
    assert "generator=" not in fix_source(src).code


HAND_SPLIT = (
    "indices = list(range(len(dataset)))\n{shuffle}\ntrain_set = torch.utils.data.Subset(dataset, indices[20:])\n"
)


@pytest.mark.parametrize(
    ("imports", "shuffle"),
    [
        ("import numpy as np\n", "np.random.shuffle(indices)"),
        ("import random\n", "random.shuffle(indices)"),
        ("from numpy.random import shuffle\n", "shuffle(indices)"),
    ],
)
def test_indices_shuffled_in_place_with_no_seed_are_sent_whole_from_rank_0(imports, shuffle):
    """A split made by hand from indices shuffled in place: each rank's Subset would hold other samples
    (DDP210, invariant 7); the fix sends rank 0's order to every rank right after the shuffle."""
    src = script(HAND_SPLIT.format(shuffle=shuffle), imports=imports)
    [d] = codes(src, "DDP210")
    assert d.message.startswith("`indices` is shuffled in place with no seed: under torchrun every rank shuffles it")
    assert d.line == src.splitlines().index(shuffle) + 1 and d.fix == "safe"
    result = fix_source(src)
    assert f"{shuffle}\nif DISTRIBUTED:\n    shared = [indices]\n" in result.code
    assert ("DDP210", 7) not in [(b.code, b.invariant.number) for b in result.incomplete]
    assert codes(result.code, "DDP210") == []


@pytest.mark.parametrize(
    "head, shuffle",
    [
        ("np.random.seed(0)\n", "np.random.shuffle(indices)"),  # seeded alike on every rank
        ("", "np.random.shuffle(val_only)"),  # shuffles nothing the training reads
        ("", "rng = np.random.default_rng(0)\nrng.shuffle(indices)"),  # a generator of its own, seeded
    ],
)
def test_a_shuffle_seeded_or_of_nothing_trained_on_is_left_alone(head, shuffle):
    src = script(HAND_SPLIT.format(shuffle="val_only = list(indices)\n" + shuffle), head, "import numpy as np\n")
    assert codes(src, "DDP210") == []


def test_a_pandas_sample_with_no_random_state_is_a_draw_per_rank():
    src = script(
        "frame = pd.DataFrame({'x': x[:, 0].tolist()}).sample(frac=1)\n"
        "train_set = TensorDataset(torch.tensor(frame['x'].values).unsqueeze(1), x)\n",
        imports="import pandas as pd\n",
    )
    [d] = codes(src, "DDP210")
    assert d.message.startswith("`frame` is drawn at random with no seed")
    assert codes(src.replace("sample(frac=1)", "sample(frac=1, random_state=0)"), "DDP210") == []


def test_a_seed_that_differs_by_rank_does_not_make_a_shuffle_alike():
    """`np.random.seed(1234 + rank)` seeds every rank differently: the shuffle still differs by rank."""
    head = 'rank = int(os.environ.get("RANK", 0))\nnp.random.seed(1234 + rank)\n'
    src = script(HAND_SPLIT.format(shuffle="np.random.shuffle(indices)"), head, "import os\n\nimport numpy as np\n")
    [d] = codes(src, "DDP210")
    assert d.message.startswith("`indices` is shuffled in place with no seed")
    assert " (`np.random.seed(1234 + rank)` seeds each rank differently)" in d.message
    assert d.fix == "safe"  # rank 0's order is sent to every rank after the shuffle
    assert codes(src.replace("1234 + rank", "1234"), "DDP210") == []
