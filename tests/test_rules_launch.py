"""How a script starts and joins its process group (DDP001-DDP009): where the setup and the torchrun
constants go, set_device and its data, a script's own launch path, mp.spawn ranks, GPUs picked by the
global rank, frameworks that distribute a script, modules that are not programs, and helpers of the
script's own modules."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ddpfix import check_source, fix_source


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip()


def codes(text: str, path: str = "<string>") -> list[str]:
    return [d.code for d in fix_source(text, path=path, fix=False).diagnostics]


def found(text: str, code: str, path: str = "<string>") -> list:
    return [d for d in fix_source(text, path=path, fix=False).diagnostics if d.code == code]


def fixed(text: str, path: str = "<string>", **kw) -> str:
    return fix_source(text, path=path, **kw).code


def before(out: str, *parts: str) -> bool:
    """Do `parts` appear in `out` in this order?"""
    positions = [out.index(p) for p in parts]
    return positions == sorted(positions)


def runs(code: str, tmp_path: Path, name: str = "script.py") -> subprocess.CompletedProcess:
    """Run `code` as a plain single process (no torchrun environment)."""
    path = tmp_path / name
    path.write_text(code)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    return subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, timeout=120)


# --------------------------------------------------------------------------- DDP006 and data
DEVICE_AFTER_INIT = src("""
    import os

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main():
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        dist.init_process_group("gloo")
        {collective}{between}device = {device}
        if torch.cuda.is_available():
            torch.cuda.set_device(device)
        model = DDP(nn.Linear(2, 1).to(device))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(4, 2, device=device)).sum().backward()
        opt.step()
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
""")
LOCAL_DEVICE = 'torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")'
BARRIER = "dist.barrier()\n    "  # a collective before set_device: NCCL would run it on the wrong GPU


def after_init(between: str = "", device: str = LOCAL_DEVICE, collective: str = BARRIER) -> str:
    return DEVICE_AFTER_INIT.format(between=between, device=device, collective=collective)


def test_set_device_moves_up_with_the_assignment_it_reads():
    out = fixed(after_init())
    assert before(
        out, "local_rank = int(", "    device = torch.device(", "torch.cuda.set_device(device)", "init_process_group"
    )
    [d] = found(after_init(), "DDP006")
    assert not d.applied and "`dist.barrier()` (line 12) runs before it on the wrong GPU" in d.message
    assert fix_source(out, select=["DDP006"]).code == out


def test_set_device_reading_the_process_group_is_reported_without_a_fix():
    text = after_init(device="dist.get_rank() % max(torch.cuda.device_count(), 1)")
    [d] = found(text, "DDP006")
    assert d.fix == "none" and "reads `device`, set at line 13 after the process group exists" in d.message
    assert "DDP006" not in fix_source(text).applied_codes


def test_set_device_is_not_moved_above_a_line_that_reads_what_moves():
    text = after_init(between='print("device", device)\n    ')
    text = text.replace("    dist.init_process_group", '    device = "cpu"\n    dist.init_process_group')
    [d] = found(text, "DDP006")
    assert d.fix == "none" and "would change line" in d.message


def test_inserted_set_device_never_reads_a_name_bound_after_init():
    text = src("""
        import os
        import torch
        import torch.distributed as dist
        import torch.nn as nn

        dist.init_process_group("nccl")
        LOCAL_RANK = int(os.environ["LOCAL_RANK"])
        model = nn.parallel.DistributedDataParallel(nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 2)).sum().backward()
    """)
    [d] = found(text, "DDP006")
    assert d.fix == "none" and "`LOCAL_RANK` is set only after it" in d.message


# --------------------------------------------------------------------------- placement at module level
MIDFILE = src("""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)


    def build_loader():
        data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
        return DataLoader(data, batch_size=4, shuffle=True)


    loader = build_loader()

    import torch.nn as nn

    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        print(epoch)
""")


MIDFILE_TOP = src("""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = DataLoader(data, batch_size=4, shuffle=True)

    import torch.nn as nn

    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        print(epoch)
""")


def test_constants_setup_and_imports_come_before_a_mid_file_use(tmp_path):
    out = fixed(MIDFILE_TOP)
    assert before(
        out,
        "from torch.utils.data.distributed import DistributedSampler",
        "DISTRIBUTED = WORLD_SIZE > 1",
        "dist.init_process_group(",
        "torch.manual_seed(0)",
        "sampler = DistributedSampler(data) if DISTRIBUTED else None",
        "import torch.nn as nn",
        "model = DDP(",
    )
    got = runs(out, tmp_path)
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    assert got.stdout.decode().split() == ["0", "1"]


def test_a_function_called_before_a_late_import_sees_the_constants(tmp_path):
    out = fixed(MIDFILE)
    assert before(
        out,
        "from torch.utils.data.distributed import DistributedSampler",
        "DISTRIBUTED = WORLD_SIZE > 1",
        "dist.init_process_group(",
        "torch.manual_seed(0)",
        "loader = build_loader()",
        "import torch.nn as nn",
        "model = DDP(",
    )
    got = runs(out, tmp_path)
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    assert got.stdout.decode().split() == ["0", "1"]


def test_module_level_model_gets_its_process_group_at_module_level():
    text = src("""
        import torch
        import torch.nn as nn

        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)


        def train():
            opt.zero_grad()
            model(torch.randn(2, 4)).sum().backward()
            opt.step()


        if __name__ == "__main__":
            for _ in range(2):
                train()
    """)
    out = fixed(text)
    assert before(
        out, "dist.init_process_group(", "model = nn.Linear", "model = DDP(model", 'if __name__ == "__main__":'
    )
    assert out.rstrip().endswith("if DISTRIBUTED:\n    dist.destroy_process_group()")
    assert out.count("init_process_group(") == 1


LATE_DIST = src("""
    import torch
    import torch.nn as nn

    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    {late}
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
""")


def test_setup_that_would_need_a_late_binding_is_reported_without_a_fix():
    text = LATE_DIST.format(late="try:\n    import torch.distributed as dist\nexcept ImportError:\n    dist = None")
    [d] = found(text, "DDP001")
    assert d.fix == "none" and "imported only at line 6" in d.message
    out = fixed(text)
    assert "DDP(" not in out and "init_process_group" not in out  # no wrap without a process group on its path
    assert [d.fix for d in found(text, "DDP301")] == ["none"]


def test_late_plain_imports_move_up_with_what_needs_them(tmp_path):
    out = fixed(LATE_DIST.format(late="import torch.distributed as dist\nimport os"))
    assert before(out, "import os", "import torch.distributed as dist", "RANK = int(os.environ", "model = nn.Linear")
    assert out.count("import os") == 1 and out.count("import torch.distributed as dist") == 1
    got = runs(out, tmp_path)
    assert got.returncode == 0, got.stderr.decode()[-2000:]


def test_a_silenced_process_group_leaves_the_rest_to_run_time(tmp_path):
    silenced = MIDFILE_TOP.replace("model = nn.Linear(4, 1)", "model = nn.Linear(4, 1)  # ddpfix: ignore[DDP001]")
    out = fixed(silenced)
    assert "init_process_group" not in out and "DISTRIBUTED" not in out
    assert "sampler = DistributedSampler(data) if dist.is_initialized() else None" in out
    assert "if dist.is_initialized():\n    model = DDP(model" in out
    got = runs(out, tmp_path)
    assert got.returncode == 0, got.stderr.decode()[-2000:]


def test_setup_in_a_function_goes_after_the_function_s_own_import():
    text = src("""
        import torch


        def main():
            import torch.distributed as dist
            model = torch.nn.Linear(2, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.randn(2, 2)).sum().backward()
            opt.step()
            print(dist.is_available())


        if __name__ == "__main__":
            main()
    """)
    out = fixed(text)
    assert before(
        out, "    import torch.distributed as dist", "    if DISTRIBUTED:", "        dist.init_process_group("
    )


# --------------------------------------------------------------------------- a script's own launch path
OWN_FLAG = src("""
    import argparse

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--distributed", action="store_true")
        parser.add_argument("--dist-backend", default="nccl")
        args = parser.parse_args()
        if args.distributed:
            dist.init_process_group(backend=args.dist_backend)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4, shuffle=True)
        for epoch in range(2):
            for x, y in loader:
                opt.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                opt.step()
            torch.save(model.state_dict(), "last.pt")


    if __name__ == "__main__":
        main()
""")


def test_own_flag_path_is_completed_at_run_time_not_bolted_on():
    out = fixed(OWN_FLAG)
    assert out.count("init_process_group(") == 1
    assert "DISTRIBUTED" not in out and "WORLD_SIZE" not in out and "\nRANK =" not in out
    assert "    if dist.is_initialized():\n        model = DDP(model" in out
    assert "sampler = DistributedSampler(dataset) if dist.is_initialized() else None" in out
    assert "if not dist.is_initialized() or dist.get_rank() == 0:\n            torch.save(raw_model" in out


def test_backend_named_as_a_setting_keeps_the_script_s_choice():
    out = fixed(OWN_FLAG, select=["DDP002"])
    assert 'parser.add_argument("--dist-backend", default="nccl" if torch.cuda.is_available() else "gloo")' in out
    assert "backend=args.dist_backend" in out
    for shape, want in [
        ('BACKEND = "nccl"\n', 'BACKEND = "nccl" if torch.cuda.is_available() else "gloo"'),
        ("", 'def setup(backend="nccl" if torch.cuda.is_available() else "gloo"):'),
    ]:
        text = src(f"""
            import torch
            import torch.distributed as dist
            {shape}

            def setup(backend="nccl"):
                dist.init_process_group({"BACKEND" if shape else "backend"})
                model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
                torch.optim.SGD(model.parameters(), lr=0.1)


            if __name__ == "__main__":
                setup()
        """)
        assert want in fixed(text, select=["DDP002"]), shape


def test_local_rank_option_reads_the_environment_and_takes_the_new_spelling():
    text = OWN_FLAG.replace(
        'parser.add_argument("--distributed", action="store_true")',
        'parser.add_argument("--local_rank", type=int, default=-1)',
    ).replace("if args.distributed:", "if args.local_rank != -1:")
    out = fixed(text)
    assert (
        'parser.add_argument("--local_rank", "--local-rank", type=int, default=int(os.environ.get("LOCAL_RANK", -1)))'
        in out
    )
    assert "            torch.cuda.set_device(args.local_rank)\n        dist.init_process_group(" in out
    env_default = text.replace("default=-1", 'default=int(os.environ.get("LOCAL_RANK", -1))')
    assert "DDP009" not in codes(env_default)


def test_option_driven_init_arguments_are_the_script_s_contract():
    text = OWN_FLAG.replace(
        "dist.init_process_group(backend=args.dist_backend)",
        "dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url, "
        "world_size=args.world_size, rank=args.rank)",
    ).replace(
        "    args = parser.parse_args()\n",
        '    parser.add_argument("--dist-url", default="tcp://127.0.0.1:23456")\n'
        '    parser.add_argument("--world-size", type=int, default=1)\n'
        '    parser.add_argument("--rank", type=int, default=0)\n'
        "    args = parser.parse_args()\n",
    )
    [d] = found(text, "DDP003")
    assert d.fix == "none" and "(--rank, --world-size, --dist-url)" in d.message
    assert "init_method=args.dist_url" in fixed(text)


SPAWNED = src("""
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    import torch.nn as nn


    def worker(rank, world_size):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29541", rank=rank, world_size=world_size)
        model = nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 2)).sum().backward()
        opt.step()
        torch.save(model.state_dict(), "w.pt")
        dist.destroy_process_group()


    if __name__ == "__main__":
        mp.spawn(worker, args=(2,), nprocs=2)
""")


def test_spawned_script_is_completed_where_it_is_without_a_launch_line():
    assert "DDP009" not in codes(SPAWNED)  # it runs with python as before: nothing to say about how it starts
    out = fixed(SPAWNED)
    assert out.count("init_process_group(") == 1 and "LOCAL_RANK" not in out
    assert "    if dist.is_initialized():\n        model = DDP(model, device_ids=" in out
    assert "    if rank == 0:\n        torch.save(raw_model.state_dict()" in out or "dist.get_rank() == 0" in out


# --------------------------------------------------------------------------- DDP005: mp.spawn ranks, GPUs by global rank
NODES = src("""
    import argparse

    import torch.distributed as dist
    import torch.multiprocessing as mp


    def train(gpu, args):
        rank = gpu
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29533", world_size=args.world_size, rank=rank)


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--nodes", type=int, default=1)
        parser.add_argument("--gpus", type=int, default=2)
        parser.add_argument("--nr", type=int, default=0)
        args = parser.parse_args()
        args.world_size = args.gpus * args.nodes
        mp.spawn(train, nprocs=args.gpus, args=(args,))
""")


def test_spawn_index_as_multi_node_rank_is_fixed_where_the_node_rank_is_named():
    [d] = found(NODES, "DDP005")
    assert d.fix == "safe" and "on a second node the ranks repeat" in d.message
    assert "    rank = args.nr * args.gpus + gpu\n" in fixed(NODES, select=["DDP005"])


def test_spawn_index_as_multi_node_rank_without_a_node_rank_is_reported():
    text = NODES.replace('    parser.add_argument("--nr", type=int, default=0)\n', "")
    [d] = found(text, "DDP005")
    assert d.fix == "none" and "name the node rank" in d.message


def test_single_node_spawn_rank_is_right():
    assert "DDP005" not in codes(SPAWNED)
    one_node = NODES.replace("args.world_size = args.gpus * args.nodes", "args.world_size = args.gpus").replace(
        '    parser.add_argument("--nr", type=int, default=0)\n', ""
    )
    assert "DDP005" not in codes(one_node)


GLOBAL_DEVICE = src("""
    import torch
    import torch.distributed as dist
    import torch.nn as nn


    def get_device():
        if torch.cuda.is_available():
            return torch.device(f"cuda:{dist.get_rank()}")
        return torch.device("cpu")


    def pick(rank):
        return torch.device("cuda", rank) if torch.cuda.is_available() else torch.device("cpu")


    def main():
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        device = get_device()
        other = pick(dist.get_rank())
        third = pick(rank)
        model = nn.parallel.DistributedDataParallel(nn.Linear(2, 1).to(device))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 2)).sum().backward()
        opt.step()


    if __name__ == "__main__":
        main()
""")


def test_global_rank_picking_the_gpu_is_seen_in_helpers_and_their_callers():
    lines = [d.line for d in found(GLOBAL_DEVICE, "DDP005")]
    assert lines == [8, 20, 21]  # the f-string in get_device, and the global ranks handed to pick()
    out = fixed(GLOBAL_DEVICE, select=["DDP005"])
    assert 'return torch.device(f"cuda:{LOCAL_RANK}")' in out
    assert "other = pick(LOCAL_RANK)" in out and "third = pick(LOCAL_RANK)" in out
    assert "model = nn.parallel.DistributedDataParallel(nn.Linear(2, 1).to(device))" in out  # `device` is no rank


def test_global_rank_device_in_a_spawn_target_becomes_the_process_index():
    text = SPAWNED.replace("model = nn.Linear(2, 1)", 'model = nn.Linear(2, 1).to(f"cuda:{dist.get_rank()}")')
    assert 'nn.Linear(2, 1).to(f"cuda:{rank}")' in fixed(text, select=["DDP005"])


def test_global_rank_device_in_a_helper_module_is_reported_at_the_call(tmp_path):
    (tmp_path / "devices.py").write_text(
        src("""
            import torch
            import torch.distributed as dist


            def get_device():
                rank = dist.get_rank()
                return torch.device(f"cuda:{rank}")
        """)
    )
    train = tmp_path / "train.py"
    train.write_text(
        GLOBAL_DEVICE.replace("import torch.nn as nn\n", "import torch.nn as nn\nfrom devices import get_device\n")
        .replace("def get_device():", "def unused():")
        .replace("        other = pick(dist.get_rank())\n        third = pick(rank)\n", "")
    )
    [d] = [d for d in found(train.read_text(), "DDP005", path=str(train)) if "devices.py" in d.message]
    assert d.fix == "none" and "devices.py:7" in d.message and "get_device()" in d.message
    assert train.read_text().splitlines()[d.line - 1].strip() == "device = get_device()"


# --------------------------------------------------------------------------- DDP008: frameworks
PLAIN = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
{imp}
model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=2, shuffle=True)
for epoch in range(2):
    for x, y in loader:
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    print(epoch)
"""
FRAMEWORK_IMPORTS = [
    ("from accelerate import Accelerator", "Accelerate"),
    ("import accelerate", "Accelerate"),
    ("import lightning as L", "Lightning"),
    ("from lightning.fabric import Fabric", "Lightning Fabric"),
    ("import lightning_fabric", "Lightning Fabric"),
    ("import pytorch_lightning as pl", "Lightning"),
    ("import deepspeed", "DeepSpeed"),
    ("from transformers import Trainer, TrainingArguments", "the Hugging Face Trainer"),
    ("from transformers import Seq2SeqTrainer", "the Hugging Face Trainer"),
    ("from trl import SFTTrainer", "TRL"),
    ("import horovod.torch as hvd", "Horovod"),
    ("from torch.distributed.fsdp import FullyShardedDataParallel as FSDP", "FSDP"),
    ("from torch.distributed.fsdp import fully_shard", "FSDP"),
    ("from torch.distributed.launcher.api import LaunchConfig, elastic_launch", "torch.distributed.elastic"),
    (
        "from torch.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent",
        "torch.distributed.elastic",
    ),
    ("from mmengine.runner import Runner", "MMEngine"),
    ("from mmcv.runner import EpochBasedRunner", "MMCV"),
    ("import colossalai", "ColossalAI"),
    ("import torch_xla.core.xla_model as xm", "PyTorch/XLA"),
]


@pytest.mark.parametrize("imp,name", FRAMEWORK_IMPORTS)
def test_a_framework_gets_one_information_line_and_no_edit(imp, name):
    text = PLAIN.format(imp=imp)
    result = fix_source(text)
    assert [(d.code, d.fix, d.line) for d in result.diagnostics] == [("DDP008", "none", 5)]
    assert result.diagnostics[0].message == f"distribution is handled by {name}: ddpfix leaves this script alone"
    assert not result.changed


@pytest.mark.parametrize(
    "imp",
    [
        "from accelerate.utils import set_seed",
        "from torch.distributed.elastic.multiprocessing.errors import record",
        "from transformers import AutoModel",
        "import trl",
    ],
)
def test_utilities_of_a_framework_do_not_hand_it_the_script(imp):
    text = PLAIN.format(imp=imp)
    assert "DDP008" not in codes(text) and "DDP001" in codes(text)


def test_trainer_scripts_without_torch_or_a_training_word_get_the_line():
    text = src("""
        import transformers

        args = transformers.TrainingArguments(output_dir="out")
        trainer = transformers.Trainer(model=None, args=args)
        trainer.train()
    """)
    assert [d.code for d in check_source(text)] == ["DDP008"]
    assert check_source(text, ignore=["DDP008"]) == []
    assert check_source("# ddpfix: ignore[DDP008]\n" + text) == []


# --------------------------------------------------------------------------- programs and modules
TRAIN_FN = """
import torch
{imports}

def {name}(epochs: int = 2):
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 2)), batch_size=2, shuffle=True)
    for _ in range(epochs):
        for (x,) in loader:
            model(x).sum().backward()
            opt.step()
    torch.save(model.state_dict(), "m.pt")
{tail}
"""
PROGRAMS = {
    "fire": ("import fire", "main", "\nif __name__ == '__main__':\n    fire.Fire(main)\n"),
    "fire_module_level": ("import fire", "train", "\nfire.Fire(train)\n"),
    "typer": ("import typer", "train", "\nif __name__ == '__main__':\n    typer.run(train)\n"),
    "click": ("import click", "main", "\nif __name__ == '__main__':\n    main()\n"),
    "console_entry_point": ("", "main", ""),
}


@pytest.mark.parametrize("shape", sorted(PROGRAMS))
def test_programs_get_a_process_group(shape):
    imports, name, tail = PROGRAMS[shape]
    text = TRAIN_FN.format(imports=imports, name=name, tail=tail)
    if shape == "click":
        text = text.replace(f"def {name}(", f"@click.command()\n@click.option('--epochs', default=2)\ndef {name}(")
    out = fixed(text)
    assert out.count("dist.init_process_group(") == 1, shape
    assert before(out, f"def {name}(", "dist.init_process_group(", "model = DDP(model")


def test_a_library_module_gets_findings_and_no_edit():
    text = TRAIN_FN.format(imports="", name="train", tail="")
    result = fix_source(text)
    assert not result.changed
    assert "DDP001" not in [d.code for d in result.diagnostics]
    wrap = [d for d in result.diagnostics if d.code in ("DDP201", "DDP301")]
    assert len(wrap) == 2 and not any(d.applied for d in wrap)  # reported, never inserted without a process group


# --------------------------------------------------------------------------- helpers of the script's own modules
TRAIN_WITH_HELPER = src("""
    import torch
    {imports}


    def main():
        {call}
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
        {end}


    if __name__ == "__main__":
        main()
""")
COMM = src("""
    import os

    import torch
    import torch.distributed as dist


    def setup():
        {device}dist.init_process_group({args})


    def cleanup():
        if dist.is_initialized():
            dist.destroy_process_group()
""")


def _project(tmp_path: Path, *, device: str = "", args: str = '"gloo"', call="comm.setup()", end="") -> Path:
    (tmp_path / "comm.py").write_text(COMM.format(device=device, args=args))
    train = tmp_path / "train.py"
    train.write_text(TRAIN_WITH_HELPER.format(imports="import comm", call=call, end=end))
    return train


def test_set_device_done_by_a_helper_is_not_added_again(tmp_path):
    train = _project(tmp_path, device='torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))\n    ')
    assert "DDP006" not in codes(train.read_text(), str(train))


def test_a_helper_that_joins_without_set_device_gets_it_before_the_call(tmp_path):
    train = _project(tmp_path)
    [d] = found(train.read_text(), "DDP006", str(train))
    assert "before comm.setup()" in d.message
    out = fixed(train.read_text(), str(train))
    assert "        torch.cuda.set_device(LOCAL_RANK)\n    comm.setup()" in out
    assert "init_process_group" not in out


def test_a_helper_s_hard_coded_backend_and_arguments_are_reported_at_its_call(tmp_path):
    train = _project(tmp_path, args='backend="nccl", init_method="tcp://10.0.0.1:23456", rank=0, world_size=2')
    text = train.read_text()
    [backend] = found(text, "DDP002", str(train))
    [args] = found(text, "DDP003", str(train))
    assert backend.fix == "none" and 'backend "nccl" hard-coded (comm.py:8)' in backend.message
    assert args.fix == "none" and "init_method, rank, world_size" in args.message and "(comm.py:8)" in args.message
    assert (backend.line, args.line) == (6, 6)
    assert (tmp_path / "comm.py").read_text() == COMM.format(
        device="", args='backend="nccl", init_method="tcp://10.0.0.1:23456", rank=0, world_size=2'
    )


def test_no_destroy_where_a_helper_destroys_the_group(tmp_path):
    (tmp_path / "comm.py").write_text(COMM.format(device="", args='"gloo"'))
    train = tmp_path / "train.py"
    train.write_text(TRAIN_WITH_HELPER.format(imports="import comm", call="pass", end="comm.cleanup()"))
    out = fixed(train.read_text(), str(train))
    assert out.count("dist.init_process_group(") == 1 and "destroy_process_group" not in out
    in_file = TRAIN_WITH_HELPER.format(
        imports="import torch.distributed as dist", call="pass", end="dist.destroy_process_group()"
    )
    assert fixed(in_file).count("destroy_process_group") == 1


def test_a_wrap_after_a_helper_that_may_not_join_is_decided_at_run_time(tmp_path):
    train = tmp_path / "train.py"
    train.write_text(
        TRAIN_WITH_HELPER.format(imports="from mytools.launching import init_dist", call="init_dist()", end="")
    )
    out = fixed(train.read_text(), str(train))
    assert "init_process_group" not in out
    assert "    if dist.is_initialized():\n        model = DDP(model" in out
