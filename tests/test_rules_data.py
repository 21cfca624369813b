"""Finer cases for the data rules (DDP104, DDP201-DDP209) and the file-system race (DDP411): what they
catch, what they fix, and the near misses they must leave alone."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

HEAD = """\
import os
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1
"""


def script(body: str) -> str:
    return HEAD + textwrap.dedent(body)


def found(src: str, code: str, path: str | None = None) -> list:
    return [d for d in check_source(src, path=path) if d.code == code]


def fixed(src: str, *codes: str, **kw) -> str:
    return fix_source(src, select=list(codes), **kw).code


# --------------------------------------------------------------------------- DDP104
SHARD = """
dist.init_process_group("gloo")
model = DDP(nn.Linear(2, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(65, 2)
shard = {cut}
for xb in shard.split(8):
    loss = model(xb).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_ddp104_a_shard_cut_to_one_length_on_every_rank_is_even():
    assert len(found(script(SHARD.format(cut="x[RANK::WORLD_SIZE]")), "DDP104")) == 1
    assert found(script(SHARD.format(cut="x[RANK::WORLD_SIZE][: len(x) // WORLD_SIZE]")), "DDP104") == []
    assert len(found(script(SHARD.format(cut="x[RANK::WORLD_SIZE][:16]")), "DDP104")) == 1  # not shown even


# --------------------------------------------------------------------------- DDP206
EVAL = """
def main():
    dist.init_process_group("gloo")
    model = DDP(nn.Linear(2, 2))
    val = TensorDataset(torch.randn(5, 2), torch.randint(0, 2, (5,)))
    sampler = DistributedSampler(val, shuffle=False{sargs})
    val_loader = DataLoader(val, batch_size=2, sampler=sampler)
    correct = 0
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
"""


def test_ddp206_padding_sampler_is_reported():
    assert [d.fix for d in found(script(EVAL.format(sargs="")), "DDP206")] == ["none"]
    assert len(found(script(EVAL.format(sargs=", drop_last=False")), "DDP206")) == 1


def test_ddp206_sampler_that_drops_the_tail_does_not_pad():
    assert found(script(EVAL.format(sargs=", drop_last=True")), "DDP206") == []
    conditional = EVAL.format(sargs=", drop_last=True").replace(
        "shuffle=False, drop_last=True)", "shuffle=False, drop_last=True) if DISTRIBUTED else None"
    )
    assert found(script(conditional), "DDP206") == []


# --------------------------------------------------------------------------- DDP420
TRAIN_TAIL = """
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(4, 2)).sum().backward()
    opt.step()
"""


def race(body: str) -> str:
    return script("\ndef main(out):\n" + textwrap.indent(textwrap.dedent(body), "    ") + TRAIN_TAIL)


FRESH = """
import os
import shutil

import torch
import torch.nn as nn


def main(log_dir):
{clear}    os.makedirs(log_dir)
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(4, 2)).sum().backward()
    opt.step()
    with open(os.path.join(log_dir, "done.txt"), "w") as f:
        f.write("done")


if __name__ == "__main__":
    main("logs")
"""
CLEAR = "    if os.path.isdir(log_dir):\n        shutil.rmtree(log_dir)\n"


def test_ddp420_a_folder_removed_and_made_again_is_made_on_rank_0_before_the_others_go_on():
    """`if os.path.isdir(d): shutil.rmtree(d)` then `os.makedirs(d)`: on every rank, one rank deletes what
    another has just made (and written into)."""
    src = FRESH.format(clear=CLEAR).lstrip()
    [d] = found(src, "DDP420")
    assert d.fix == "safe" and "removed and made again on every rank" in d.message
    out = fix_source(src).code
    made = (
        "    if RANK == 0:\n        if os.path.isdir(log_dir):\n            shutil.rmtree(log_dir)\n"
        "        os.makedirs(log_dir)\n    if DISTRIBUTED:\n"
        "        dist.barrier()  # the others wait until rank 0 has made the folder\n"
    )
    assert made in out, out
    assert found(out, "DDP420") == [] and fix_source(out).code == out
    # without the removal first, a makedirs with no exist_ok (which may refuse reuse on purpose) is made
    # on rank 0 alone, where a folder already there still raises, and the others wait for it
    plain_src = FRESH.format(clear="").lstrip()
    [plain] = found(plain_src, "DDP420")
    assert plain.fix == "safe" and "without exist_ok=True" in plain.message
    made = "    if RANK == 0:\n        os.makedirs(log_dir)\n    if DISTRIBUTED:\n        dist.barrier()  # the others"
    assert made in fix_source(plain_src).code


def test_ddp420_a_fresh_folder_made_before_the_join_is_reported_without_a_fix():
    src = (
        FRESH.format(clear="")
        .lstrip()
        .replace(
            'if __name__ == "__main__":\n',
            'if os.path.isdir("logs"):\n    shutil.rmtree("logs")\nos.makedirs("logs")\n\nif __name__ == "__main__":\n',
        )
    )
    fresh = [d for d in found(src, "DDP420") if "removed and made again" in d.message]
    assert [d.fix for d in fresh] == ["none"] and "before the process group is joined" in fresh[0].message


def test_ddp420_check_then_makedirs_becomes_one_call():
    src = race("""
        # checkpoints go here
        if not os.path.exists(out):
            os.makedirs(out)
    """)
    assert [d.fix for d in found(src, "DDP420")] == ["safe"]
    assert "    # checkpoints go here\n    os.makedirs(out, exist_ok=True)\n" in fixed(src, "DDP420")


def test_ddp420_one_line_check_and_isdir():
    src = race("if not os.path.isdir(out): os.makedirs(out, 0o755)  # logs\n")
    assert "    os.makedirs(out, 0o755, exist_ok=True)  # logs\n" in fixed(src, "DDP420")


def test_ddp420_if_doing_more_keeps_the_check():
    src = race("""
        if not os.path.exists(out):  # first run
            os.makedirs(out)
            print("created", out)
    """)
    out = fixed(src, "DDP420")
    assert (
        "    if not os.path.exists(out):  # first run\n        os.makedirs(out, exist_ok=True)\n        print(" in out
    )


def test_ddp420_pathlib_mkdir():
    src = race("""
        ckpt = Path(out) / "ckpt"
        if not ckpt.exists():
            ckpt.mkdir(parents=True)
    """).replace("import os\n", "import os\nfrom pathlib import Path\n")
    assert "    ckpt.mkdir(parents=True, exist_ok=True)\n" in fixed(src, "DDP420")


def test_ddp420_os_mkdir_on_its_own_line_is_kept_and_its_race_suppressed():
    src = race("""
        if not os.path.exists(out):
            os.mkdir(out)
    """)
    assert [d.fix for d in found(src, "DDP420")] == ["safe"]
    out = fixed(src, "DDP420")
    assert "        with contextlib.suppress(FileExistsError):\n            os.mkdir(out)\n" in out
    assert "import contextlib\n" in out and found(out, "DDP420") == []


def test_ddp420_os_mkdir_on_the_line_of_its_if_becomes_makedirs_only_as_an_unsafe_fix():
    src = race("if not os.path.exists(out): os.mkdir(out)\n")
    assert [d.fix for d in found(src, "DDP420")] == ["unsafe"]
    assert "os.mkdir(out)" in fixed(src, "DDP420")
    assert "os.makedirs(out, exist_ok=True)" in fixed(src, "DDP420", unsafe_fixes=True)


def test_ddp420_bare_makedirs_is_made_on_rank_0_and_the_others_wait():
    """No check, no exist_ok: a second plain run fails there too, perhaps on purpose; so does rank 0's."""
    src = race("os.makedirs(out)\n")
    [d] = found(src, "DDP420")
    assert d.fix == "safe" and "without exist_ok=True" in d.message
    out = fix_source(src).code
    assert "if RANK == 0:\n        os.makedirs(out)\n    if DISTRIBUTED:\n        dist.barrier()" in out, out
    assert found(out, "DDP420") == [] and fix_source(out).code == out


def test_ddp420_bare_makedirs_under_a_condition_is_reported_without_a_fix():
    """In an `if`, a barrier after it would not be reached by every rank for certain."""
    src = race("if not os.path.exists(other):\n    os.makedirs(out)\n")
    [d] = found(src, "DDP420")
    assert d.fix == "none" and "exist_ok=True" in d.message
    assert fixed(src, "DDP420") == src


def test_ddp420_leaves_safe_creations_alone():
    for body in (
        "os.makedirs(out, exist_ok=True)\n",
        "if RANK == 0:\n    os.makedirs(out)\n",
        "try:\n    os.mkdir(out)\nexcept FileExistsError:\n    pass\n",
        "with contextlib.suppress(FileExistsError):\n    os.mkdir(out)\n",
        "if not fs.exists(out):\n    fs.mkdir(out)\n",  # another API's mkdir
        "if not os.path.exists(other):\n    os.makedirs(out)\n",  # checks something else
    ):
        assert [d.fix for d in found(race(body), "DDP420")] in ([], ["none"]), body
    assert found(race("if not os.path.exists(other):\n    os.makedirs(out)\n"), "DDP420")[0].fix == "none"
    assert found(race("if not fs.exists(out):\n    fs.mkdir(out)\n"), "DDP420") == []


# --------------------------------------------------------------------------- DDP208
DOWNLOAD = """\
import torch
import torch.nn as nn
from torchvision import datasets
{top}

def main():
{body}
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(2, 4)).sum().backward()
    opt.step()


if __name__ == "__main__":
    main()
"""


def download(body: str, top: str = "") -> str:
    return DOWNLOAD.format(top=top, body=textwrap.indent(textwrap.dedent(body), "    "))


WAIT = "    if DISTRIBUTED and LOCAL_RANK != 0:\n        dist.barrier()  # the other ranks wait while local rank 0 downloads\n"
RELEASE = "    if DISTRIBUTED and LOCAL_RANK == 0:\n        dist.barrier()\n"


def test_ddp208_local_rank_0_downloads_first():
    src = download('train_set = datasets.MNIST("data", train=True, download=True)\n')
    out = fix_source(src).code
    assert WAIT + '    train_set = datasets.MNIST("data", train=True, download=True)\n' + RELEASE in out
    assert fix_source(out).code == out  # the barriers are recognised on the next run


def test_ddp208_adjacent_downloads_share_one_pair_of_barriers():
    src = download("""
        train_set = datasets.MNIST("data", train=True, download=True)
        test_set = datasets.MNIST("data", train=False, download=True)
    """)
    out = fix_source(src).code
    assert out.count("dist.barrier()") == 2
    assert WAIT + "    train_set = " in out and "train=False, download=True)\n" + RELEASE in out


def test_ddp208_urlretrieve_and_hub_load_are_downloads():
    src = download(
        """
        urllib.request.urlretrieve(URL, "w.pt")
        repo = torch.hub.load("owner/repo", "model")
        """,
        top="import urllib.request\nURL = 'https://example.com/w.pt'\n",
    )
    assert len(found(src, "DDP208")) == 2


def test_ddp208_downloads_that_lock_or_rename_are_not_reported():
    # the Hugging Face hub and datasets hold a file lock while they fetch; torch.hub's URL downloads
    # (and torchvision's pretrained weights) write a temporary file and rename it into place
    src = download(
        """
        tok = AutoTokenizer.from_pretrained("bert-base-uncased")
        path = hf_hub_download("owner/repo", "w.bin")
        ds = load_dataset("imdb")
        weights = torch.hub.load_state_dict_from_url(URL)
        net = models.resnet18(weights="IMAGENET1K_V1")
        """,
        top=(
            "from transformers import AutoTokenizer\nfrom huggingface_hub import hf_hub_download\n"
            "from datasets import load_dataset\nfrom torchvision import models\nURL = 'https://example.com/w.pt'\n"
        ),
    )
    assert found(src, "DDP208") == []


def test_ddp208_plain_dataset_and_download_false_are_not_downloads():
    src = download('train_set = datasets.MNIST("data", train=True, download=False)\n')
    assert found(src, "DDP208") == []
    assert found(download('train_set = datasets.ImageFolder("data")\n'), "DDP208") == []


def test_ddp208_returned_download_is_reported_with_the_reason():
    src = download(
        "train_set = get_data()\n", top='\n\ndef get_data():\n    return datasets.MNIST("data", download=True)\n'
    )
    [d] = found(src, "DDP208")
    assert d.fix == "none" and "returned straight out" in d.message


def test_ddp208_download_before_the_process_group_is_reported():
    src = download("pass\n", top='TRAIN = datasets.MNIST("data", download=True)\n')
    [d] = found(src, "DDP208")
    assert d.fix == "none" and "before the process group" in d.message


def test_ddp208_download_in_a_helper_called_after_init():
    src = download(
        "train_set = get_data()\n",
        top='\n\ndef get_data():\n    ds = datasets.MNIST("data", download=True)\n    return ds\n',
    )
    out = fix_source(src).code
    assert WAIT + '    ds = datasets.MNIST("data", download=True)\n' + RELEASE in out


SOLVER = """

class Solver:
    def __init__(self, root):
        self.root = root{init}

    def load_data(self):
        self.train_set = datasets.MNIST(self.root, train=True, download=True)

    def run(self):
        self.load_data()
"""


def test_ddp208_download_in_a_method_run_through_an_instance_after_init():
    """`solver = Solver(root)`, then `solver.run()` -> `self.load_data()`: reached after the join DDP001
    puts at the top of main()."""
    src = download("solver = Solver('data')\nsolver.run()\n", top=SOLVER.format(init=""))
    out = fix_source(src).code
    wait, release = (textwrap.indent(b, "    ") for b in (WAIT, RELEASE))
    assert wait + "        self.train_set = datasets.MNIST(" in out and "download=True)\n" + release in out, out
    assert found(out, "DDP208") == []
    # `Solver('data').run()` and an instance bound at module level, run from main(), are the same
    for body, top in (("Solver('data').run()\n", ""), ("SOLVER.run()\n", "SOLVER = Solver('data')\n")):
        again = fix_source(download(body, top=SOLVER.format(init="") + top)).code
        assert wait + "        self.train_set = datasets.MNIST(" in again, again


def test_ddp208_download_in_a_constructor_called_after_init():
    src = download(
        "solver = Solver('data')\n",
        top=SOLVER.format(init="\n        self.test_set = datasets.MNIST(root, train=False, download=True)"),
    )
    out = fix_source(src).code
    assert "dist.barrier()  # the other ranks wait while local rank 0 downloads\n        self.test_set" in out, out


def test_ddp208_method_run_through_an_instance_before_init_is_reported():
    """The instance's method runs at import time, before main() joins: no barrier can go there."""
    src = download("pass\n", top=SOLVER.format(init="") + "SOLVER = Solver('data')\nSOLVER.run()\n")
    [d] = found(src, "DDP208")
    assert d.fix == "none" and "before the process group" in d.message


def test_ddp208_unchecked_urlretrieve_runs_on_local_rank_0_only():
    """It writes the file again on every call: a second rank's would rewrite it as rank 0 reads it."""
    top = "import urllib.request\nURL = 'https://example.com/w.csv'\n"
    out = fix_source(download('urllib.request.urlretrieve(URL, "w.csv")\n', top=top)).code
    assert (WAIT + '    if LOCAL_RANK == 0:\n        urllib.request.urlretrieve(URL, "w.csv")\n' + RELEASE) in out, out
    assert fix_source(out).code == out
    checked = fix_source(
        download(
            'if not os.path.exists("w.csv"):\n    urllib.request.urlretrieve(URL, "w.csv")\n', top=top + "import os\n"
        )
    ).code
    assert "if LOCAL_RANK == 0:" not in checked  # the others find the file and skip it
    [d] = found(download('path, _ = urllib.request.urlretrieve(URL, "w.csv")\n', top=top), "DDP208")
    assert d.fix == "none" and "its result is kept" in d.message


def test_ddp208_already_ordered_downloads_are_left_alone():
    assert (
        found(
            download("""
                if LOCAL_RANK == 0:
                    datasets.MNIST("data", download=True)
            """).replace("import torch\n", "import torch\nLOCAL_RANK = 0\n"),
            "DDP208",
        )
        == []
    )
    src = download("""
        with torch_distributed_zero_first(LOCAL_RANK):
            train_set = datasets.MNIST("data", download=True)
    """)
    assert found(src, "DDP208") == []


# --------------------------------------------------------------------------- DDP201: loader arguments from a dict
KWARGS = """
def main(args):
    ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
{build}
    loader = DataLoader({loader})
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            model(x).sum().backward()
            opt.step()
"""


def kw_script(build: str, loader: str = "ds, **kw") -> str:
    return script(KWARGS.format(build=textwrap.indent(textwrap.dedent(build).strip("\n"), "    "), loader=loader))


PUT = '    if DISTRIBUTED:\n        kw["sampler"] = DistributedSampler(ds, shuffle=kw.pop("shuffle", False))\n'
SET_EPOCH = "    for epoch in range(2):\n        if DISTRIBUTED:\n            loader.sampler.set_epoch(epoch)\n"


def test_ddp201_dict_with_shuffle_on_some_paths_gets_the_sampler_at_run_time():
    src = kw_script("""
        kw = {"batch_size": 2}
        if torch.cuda.is_available():
            kw.update({"pin_memory": True, "shuffle": True})
    """)
    out = fixed(src, "DDP201")
    assert PUT + "    loader = DataLoader(ds, **kw)\n" in out
    assert SET_EPOCH in out
    assert found(out, "DDP201") == [] and found(out, "DDP203") == [] and found(out, "DDP204") == []


def test_ddp201_dict_shapes_that_are_followed():
    for build in (
        "kw = dict(batch_size=2, shuffle=True)",
        'base = {"batch_size": 2}\nkw = {**base, "shuffle": args.shuffle}',
        'kw = {"batch_size": 2}\nkw["shuffle"] = True',
        'kw = {"batch_size": 2} | {"shuffle": True}',
        'extra = {"shuffle": True}\nkw = {"batch_size": 2}\nif args.shuffle:\n    kw.update(extra)',
        'kw = {"batch_size": 2}\nkw.setdefault("shuffle", True)',
    ):
        assert PUT in fixed(kw_script(build), "DDP201"), build


def test_ddp201_dict_without_shuffle_takes_the_plain_sampler_fix():
    out = fixed(kw_script('kw = {"batch_size": 2, "num_workers": 0}'), "DDP201")
    assert "    sampler = DistributedSampler(ds, shuffle=False) if DISTRIBUTED else None\n" in out
    assert "    loader = DataLoader(ds, sampler=sampler, **kw)\n" in out


def test_ddp201_dict_that_cannot_be_read_is_reported_with_where_it_comes_from():
    [d] = found(kw_script("kw = vars(args)"), "DDP201")
    assert d.fix == "none" and "vars(args) (line" in d.message
    [d] = found(kw_script('kw = {"batch_size": 2}\nkw.update(load_config())'), "DDP201")
    assert d.fix == "none" and "load_config() (line" in d.message
    src = script(KWARGS.format(build="    pass", loader="ds, **kw").replace("def main(args):", "def main(args, **kw):"))
    [d] = found(src, "DDP201")
    assert d.fix == "none" and "a parameter of main()" in d.message


def test_ddp201_dict_used_again_is_not_changed():
    src = kw_script('kw = {"batch_size": 2, "shuffle": True}').replace(
        "    loader = DataLoader(ds, **kw)\n",
        "    loader = DataLoader(ds, **kw)\n    val_loader = DataLoader(ds, **kw)\n",
    )
    [d] = found(src, "DDP201")
    assert d.fix == "none" and "kw is used again at line" in d.message and "sampler=DistributedSampler" in d.message
    handed = kw_script('kw = {"batch_size": 2, "shuffle": True}\nlog_config(kw)')
    [d] = found(handed, "DDP201")
    assert d.fix == "none" and "handed on at line" in d.message


def test_ddp201_dataset_inside_the_dict():
    src = kw_script("kw = dict(dataset=ds, batch_size=2, shuffle=True)", loader="**kw")
    out = fixed(src, "DDP201")
    assert '        kw["sampler"] = DistributedSampler(kw["dataset"], shuffle=kw.pop("shuffle", False))\n' in out
    assert fixed(out, "DDP201") == out


def test_ddp201_dict_that_brings_a_sampler_is_left_alone():
    assert found(kw_script('kw = {"batch_size": 2, "sampler": my_sampler}'), "DDP201") == []


WEIGHTED = """
    kw = {"batch_size": 2, "shuffle": True}
    if args.use_sampler:
        sampler = WeightedRandomSampler(torch.ones(8), 8)
        kw["sampler"] = sampler
        kw["shuffle"] = False
"""


def test_ddp201_dict_with_its_own_sampler_on_some_paths_gets_one_on_the_others():
    src = kw_script(WEIGHTED).replace(
        "import torch\n", "import torch\nfrom torch.utils.data import WeightedRandomSampler\n", 1
    )
    [d] = found(src, "DDP201")
    assert d.fix == "safe"
    result = fix_source(src)
    out = result.code
    assert (
        '    if DISTRIBUTED and "sampler" not in kw:\n'
        '        kw["sampler"] = DistributedSampler(ds, shuffle=kw.pop("shuffle", False))\n'
        "    loader = DataLoader(ds, **kw)\n"
    ) in out
    assert (
        "        if isinstance(loader.sampler, DistributedSampler):\n            loader.sampler.set_epoch(epoch)\n"
        in out
    )
    # the paths with the script's own sampler stay unsharded: said on the output, and the conversion is incomplete
    [left] = found(out, "DDP201")
    assert left.fix == "none" and "bring a WeightedRandomSampler of their own on the paths that set it" in left.message
    assert ("DDP201", 3) in [(b.code, b.invariant.number) for b in result.incomplete]
    assert fix_source(out).code == out


def test_ddp201_dict_with_its_own_sampler_on_every_path_is_reported():
    src = kw_script('kw = {"batch_size": 2, "sampler": WeightedRandomSampler(torch.ones(8), 8)}')
    [d] = found(src, "DDP201")
    assert d.fix == "none" and "bring a WeightedRandomSampler of their own on every path" in d.message


# --------------------------------------------------------------------------- DDP203: shuffle through **kwargs
SAMPLED = """
def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
    kw = {{"batch_size": 2}}
    if torch.cuda.is_available():
        kw.update({{"pin_memory": True, "shuffle": {shuffle}}})
    sampler = {sampler}
    loader = DataLoader(ds, sampler=sampler, **kw)
    model = DDP(nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            model(x).sum().backward()
            opt.step()
"""


def test_ddp203_shuffle_from_kwargs_next_to_a_sampler():
    src = script(SAMPLED.format(shuffle="True", sampler="DistributedSampler(ds) if DISTRIBUTED else None"))
    [d] = found(src, "DDP203")
    assert d.fix == "safe" and "mutually exclusive" in d.message
    out = fixed(src, "DDP203")
    assert '    if sampler is not None:\n        kw.pop("shuffle", None)  # the sampler shuffles\n    loader = ' in out
    assert found(out, "DDP203") == []


def test_ddp203_unconditional_sampler_pops_shuffle_unconditionally():
    out = fixed(script(SAMPLED.format(shuffle="True", sampler="DistributedSampler(ds)")), "DDP203")
    assert '    kw.pop("shuffle", None)  # the sampler shuffles\n    loader = ' in out


def test_ddp203_shuffle_false_in_kwargs_is_fine():
    assert found(script(SAMPLED.format(shuffle="False", sampler="DistributedSampler(ds)")), "DDP203") == []


def test_ddp203_dynamic_shuffle_in_kwargs_is_reported_only():
    [d] = found(script(SAMPLED.format(shuffle="args_shuffle", sampler="DistributedSampler(ds)")), "DDP203")
    assert d.fix == "none" and "args_shuffle" in d.message


# --------------------------------------------------------------------------- DDP201: loaders built by helpers
FACTORY = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
{imports}
{helper}

def main():
    {call}
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in {train}:
            model(x).sum().backward()
            opt.step()
        for x, y in {val}:
            print(model(x).sum().item())


if __name__ == "__main__":
    main()
"""

PAIR = """
def build(bs):
    ds = TensorDataset(torch.randn(8, 4), torch.randn(8, 1))
    train_loader = DataLoader(ds, batch_size=bs, shuffle=True)
    val_loader = DataLoader(ds, batch_size=bs)
    return train_loader, val_loader
"""


def factory(helper: str, call: str, train: str, val: str, imports: str = "") -> str:
    return FACTORY.format(helper=helper, call=call, train=train, val=val, imports=imports)


def test_ddp201_loader_returned_in_a_tuple_under_other_names():
    src = factory(PAIR, "tl, vl = build(2)", "tl", "vl")
    out = fixed(src, "DDP201")
    assert (
        "    train_loader = DataLoader(ds, batch_size=bs, shuffle=(train_sampler is None), sampler=train_sampler)\n"
        in out
    )
    assert "    val_loader = DataLoader(ds, batch_size=bs)\n" in out
    assert "        if isinstance(tl.sampler, DistributedSampler):\n            tl.sampler.set_epoch(epoch)\n" in out


def test_ddp201_loader_returned_in_a_dict_and_read_by_key():
    helper = PAIR.replace("return train_loader, val_loader", 'return {"train": train_loader, "val": val_loader}')
    out = fixed(factory(helper, "loaders = build(2)", 'loaders["train"]', 'loaders["val"]'), "DDP201")
    assert "sampler=train_sampler)\n" in out and "    val_loader = DataLoader(ds, batch_size=bs)\n" in out
    assert '            loaders["train"].sampler.set_epoch(epoch)\n' in out
    assert found(out, "DDP204") == []  # that set_epoch is seen on the next run
    picked = factory(helper, 'loaders = build(2)\n    tl = loaders["train"]', "tl", 'loaders["val"]')
    assert '            loaders["train"].sampler.set_epoch(epoch)\n        for x, y in tl:' in fixed(picked, "DDP201")


def test_ddp201_helper_that_also_builds_the_validation_loader_is_reported():
    helper = "\ndef make(ds, shuffle):\n    return DataLoader(ds, batch_size=2, shuffle=shuffle)\n"
    call = "ds = TensorDataset(torch.randn(8, 4), torch.randn(8, 1))\n    tl = make(ds, True)\n    vl = make(ds, False)"
    src = factory(helper, call, "tl", "vl")
    [d] = found(src, "DDP201")
    assert d.fix == "none" and "make() (line" in d.message and "also builds vl" in d.message
    assert "DistributedSampler" not in fixed(src, "DDP201")


def test_ddp201_loader_of_another_file_is_reported_at_the_call(tmp_path):
    (tmp_path / "data_utils.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        + PAIR.replace("def build", "def build")
    )
    src = factory("", "tl, vl = build(2)", "tl", "vl", imports="from data_utils import build\n")
    script_path = tmp_path / "train.py"
    [d] = found(src, "DDP201", path=str(script_path))
    assert d.fix == "none" and "build() at data_utils.py:6" in d.message and "edit that file" in d.message
    # the validation loader, or one that already has a sampler there, is not reported
    (tmp_path / "data_utils.py").write_text(
        (tmp_path / "data_utils.py").read_text().replace("shuffle=True)", "sampler=make_sampler(ds))")
    )
    assert found(src, "DDP201", path=str(script_path)) == []


# --------------------------------------------------------------------------- DDP202: samplers built by helpers
HELPER_SAMPLER = """
def make_sampler(dataset):
    if dist.is_initialized():
        return DistributedSampler(dataset)
    return None
"""
USES_HELPER = """
def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
    sampler = make_sampler(ds)
    loader = DataLoader(ds, batch_size=2, shuffle={shuffle})
    model = DDP(nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            model(x).sum().backward()
            opt.step()
"""


def test_ddp202_sampler_from_a_helper_of_this_file():
    src = script(HELPER_SAMPLER + USES_HELPER.format(shuffle="True"))
    [d] = found(src, "DDP202")
    assert d.fix == "safe" and found(src, "DDP201") == []
    out = fixed(src, "DDP202")
    assert "    loader = DataLoader(ds, batch_size=2, shuffle=(sampler is None), sampler=sampler)\n" in out
    assert "        if sampler is not None:\n            sampler.set_epoch(epoch)\n" in out


def test_ddp202_sampler_from_a_helper_of_another_file(tmp_path):
    (tmp_path / "samplers.py").write_text(
        "import torch.distributed as dist\nfrom torch.utils.data.distributed import DistributedSampler\n"
        + HELPER_SAMPLER
    )
    src = script("from samplers import make_sampler\n" + USES_HELPER.format(shuffle="True"))
    path = str(tmp_path / "train.py")
    [d] = found(src, "DDP202", path=path)
    assert d.fix == "safe"
    out = fix_source(src, path=path, select=["DDP202"]).code
    assert "shuffle=(sampler is None), sampler=sampler)\n" in out


def test_ddp202_helper_sampler_with_a_dynamic_shuffle_is_reported_only():
    [d] = found(script(HELPER_SAMPLER + USES_HELPER.format(shuffle="args_shuffle")), "DDP202")
    assert d.fix == "none" and "shuffle=args_shuffle" in d.message


# --------------------------------------------------------------------------- DDP209
MANUAL = """\
import numpy as np
import torch
import torch.nn as nn

x, y = torch.randn(50, 2), torch.randn(50, 1)
model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
{body}
"""

STEP = "model(xb).sum().backward()\nopt.step()\n"


def manual(body: str) -> str:
    """`body` in the epoch loop, and a training step after it (inside it when it is a loop)."""
    body = textwrap.dedent(body).strip("\n")
    step = textwrap.indent(STEP, "        " if body.startswith("for ") else "    ")
    return MANUAL.format(body=textwrap.indent(body, "    ") + "\n" + step)


def test_ddp209_offset_loop_takes_every_world_size_th_batch_the_same_number_on_every_rank():
    out = fixed(manual("for i in range(0, len(x), 10):\n    xb = x[i:i + 10]"), "DDP209")
    assert (
        "    num_batches = len(range(0, len(x), 10)) // WORLD_SIZE  # the same on every rank: DDP steps together\n"
        "    for i in range(RANK * 10, len(x), WORLD_SIZE * 10)[:num_batches]:\n"
    ) in out
    assert found(out, "DDP209") == []


def test_ddp209_enumerated_offsets_and_batch_numbers():
    out = fixed(manual("for step, i in enumerate(range(0, len(x), bs + 1)):\n    xb = x[i:i + bs + 1]"), "DDP209")
    assert "enumerate(range(RANK * (bs + 1), len(x), WORLD_SIZE * (bs + 1))[:num_batches])" in out
    out = fixed(manual("for b in range(len(x) // 10):\n    xb = x[b * 10:(b + 1) * 10]"), "DDP209")
    assert "    for b in range(RANK, len(x) // 10, WORLD_SIZE)[: (len(x) // 10) // WORLD_SIZE]:\n" in out


def test_ddp209_bounds_computed_from_the_batch_number_first():
    src = manual("for k in range(len(x) // 10):\n    start, end = k * 10, (k + 1) * 10\n    xb = x[start:end]")
    out = fixed(src, "DDP209")
    assert "    for k in range(RANK, len(x) // 10, WORLD_SIZE)[: (len(x) // 10) // WORLD_SIZE]:\n" in out
    assert found(out, "DDP209") == []
    # bounds that do not come from the loop's number are not batches of it
    assert found(manual("for k in range(len(x) // 10):\n    start, end = 0, 10\n    xb = x[start:end]"), "DDP209") == []


def test_ddp209_plain_run_takes_the_same_batches():
    for n, bs, world in ((50, 10, 1), (53, 10, 1), (7, 3, 1)):
        rank = 0
        num_batches = len(range(0, n, bs)) // world
        assert list(range(rank * bs, n, world * bs)[:num_batches]) == list(range(0, n, bs))
    for n, bs, world in ((53, 10, 2), (100, 8, 3), (5, 2, 4)):  # equal counts, disjoint
        num_batches = len(range(0, n, bs)) // world
        shards = [list(range(r * bs, n, world * bs)[:num_batches]) for r in range(world)]
        assert len({len(s) for s in shards}) == 1
        assert len({i for s in shards for i in s}) == sum(len(s) for s in shards)


def test_ddp209_random_batch_indices_become_one_draw_split_by_rank():
    src = manual("ix = torch.randint(len(x), (bs,))\nxb = x[ix]")
    out = fixed(src, "DDP209")
    assert (
        "    ix = torch.randint(len(x), (bs * WORLD_SIZE,))[RANK * bs:(RANK + 1) * bs]"
        "  # one draw for all ranks; this rank's part\n"
    ) in out
    out = fixed(manual("ix = np.random.randint(0, len(x), size=bs)\nxb = x[ix]"), "DDP209")
    assert "np.random.randint(0, len(x), size=bs * WORLD_SIZE)[RANK * bs:(RANK + 1) * bs]" in out


def test_ddp209_shapes_reported_with_what_to_do():
    [d] = found(manual("for xb in x.split(10):\n    pass"), "DDP209")
    assert d.fix == "none" and "x.split(10)" in d.message
    [d] = found(manual("for i in range(5, len(x), 10):\n    xb = x[i:i + 10]"), "DDP209")
    assert d.fix == "none" and "does not start at 0" in d.message


def test_ddp209_leaves_alone():
    for body in (
        "for i in range(RANK * 10, len(x), WORLD_SIZE * 10):\n    xb = x[i:i + 10]",  # sharded already
        "for i in range(0, len(x), 10):\n    xb = x",  # the offset cuts nothing
        "ix = torch.randint(10, (4,))\nxb = x",  # a draw that indexes nothing
    ):
        env = 'import os\nimport torch\nRANK = int(os.environ.get("RANK", 0))\nWORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))\n'
        src = manual(body).replace("import torch\n", env)
        assert found(src, "DDP209") == [], body


def test_ddp208_and_ddp209_leave_spawned_ranks_to_the_author():
    spawned = """\
import torch
import torch.multiprocessing as mp
import torch.nn as nn
from torchvision import datasets


def worker(rank, world_size):
    data = datasets.MNIST("data", download=True)
    x = torch.randn(20, 2)
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(0, len(x), 5):
        model(x[i:i + 5]).sum().backward()
        opt.step()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
"""
    assert [(d.code, d.fix) for d in check_source(spawned) if d.code in ("DDP208", "DDP209")] == [
        ("DDP208", "none"),
        ("DDP209", "none"),
    ]


def test_ddp209_data_already_sharded_by_rank_is_left_alone():
    unsharded = manual("for i in range(0, len(shard), 10):\n    xb = shard[i:i + 10]")
    assert len(found(unsharded.replace("for epoch", "shard = x\nfor epoch"), "DDP209")) == 1
    src = unsharded.replace("for epoch", "RANK, WORLD_SIZE = 0, 1\nshard = x[RANK::WORLD_SIZE]\nfor epoch")
    assert found(src, "DDP209") == []


def test_ddp201_a_stream_with_replacement_seeded_per_rank_is_left_alone():
    """The fix DDP201 makes for a sampler drawing with replacement (each rank seeds its own generator)
    is not reported again on its own output; a generator seeded alike on every rank still is."""
    src = textwrap.dedent(
        """\
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, RandomSampler, TensorDataset


        def main():
            torch.manual_seed(0)
            ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
            loader = DataLoader(ds, batch_size=8, sampler=RandomSampler(ds, replacement=True, num_samples=64))
            model = nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """
    )
    fixed = fix_source(src)
    assert "manual_seed(torch.initial_seed() + RANK)" in fixed.code
    assert [d.code for d in check_source(fixed.code) if d.code == "DDP201"] == []
    assert fixed.incomplete == []
    same_seed = fixed.code.replace("torch.initial_seed() + RANK", "torch.initial_seed()")
    assert [d.code for d in check_source(same_seed)].count("DDP201") == 1


# --------------------------------------------------------------------------- DDP211
WHOLE = """
import torch
import torch.nn as nn


def make_batch():
    return [[0, 1], [1, 2], [2, 0]], [2, 0, 1]


def main():
    inputs, targets = make_batch()
    inputs = torch.LongTensor(inputs)
    targets = torch.LongTensor(targets)
    model = nn.Sequential(nn.Embedding(3, 4), nn.Flatten(), nn.Linear(8, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(100):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model({arg}), targets)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_ddp211_full_batch_built_by_a_helper_then_made_a_tensor():
    [d] = found(WHOLE.format(arg="inputs"), "DDP211")
    assert d.fix == "unsafe" and "all of `inputs` at every step, on every rank" in d.message
    result = fix_source(WHOLE.format(arg="inputs"))
    assert [b.code for b in result.incomplete] == ["DDP211"]  # converted, and said to gain nothing
    cut = fix_source(WHOLE.format(arg="inputs"), unsafe_fixes=True)  # with --unsafe-fixes, each rank its part
    assert "model(inputs_shard), targets_shard)" in cut.code and cut.incomplete == []


def test_ddp211_leaves_batches_cut_or_drawn_per_step_alone():
    assert found(WHOLE.format(arg="inputs[epoch % 3 : epoch % 3 + 1]"), "DDP211") == []
    drawn = WHOLE.replace(
        "    inputs = torch.LongTensor(inputs)\n", "    inputs = torch.LongTensor(inputs)\n    torch.manual_seed(0)\n"
    )
    assert found(drawn.format(arg="inputs[torch.randint(0, 3, (2,))]"), "DDP211") == []


SUBSET_SAMPLER = textwrap.dedent(
    """
    import numpy as np
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.sampler import SubsetRandomSampler

    x = torch.linspace(-1, 1, 200).unsqueeze(1)
    train_data = TensorDataset(x, 2 * x)
    indices = list(range(len(train_data)))
    np.random.shuffle(indices)
    train_idx, valid_idx = indices[40:], indices[:40]
    train_sampler = SubsetRandomSampler(train_idx)
    train_loader = DataLoader(train_data, batch_size=20, sampler=train_sampler)
    model = nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        train_loss = 0.0
        for data, target in train_loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(data), target)
            loss.backward()
            optimizer.step()
            train_loss += loss.item() * data.size(0)
        train_loss = train_loss / len(train_loader.sampler)
        print(f"epoch {epoch} loss {train_loss:.6f}")
    """
).lstrip()


def test_ddp201_reports_a_sampler_of_another_kind_passed_to_the_loader():
    """`sampler=SubsetRandomSampler(train_idx)`: every rank draws the whole subset. Reported (the conversion is
    incomplete, invariant 3), and no total over that loader is reduced as if it were a shard."""
    [d] = [d for d in check_source(SUBSET_SAMPLER) if d.code == "DDP201"]
    assert d.fix == "none" and d.line == 13
    assert d.message == (
        "training DataLoader with a SubsetRandomSampler of its own: it does not shard the data by rank; "
        "shard it per rank by hand"
    )
    result = fix_source(SUBSET_SAMPLER)
    # (the indices shuffled in place with no seed are sent from rank 0: DDP210's fix, every rank cuts the same subset)
    assert [(b.code, b.invariant.number) for b in result.incomplete] == [("DDP201", 3)]
    assert "dist.broadcast_object_list(shared, src=0)" in result.code
    assert "reduce_over_ranks" not in result.code and "DDP409" not in {d.code for d in result.diagnostics}
    inline = SUBSET_SAMPLER.replace("sampler=train_sampler)", "sampler=SubsetRandomSampler(train_idx))")
    assert [d.fix for d in check_source(inline) if d.code == "DDP201"] == ["none"]
