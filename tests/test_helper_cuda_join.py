"""A script that joins its process group only through a helper of its own modules that commits to a
GPU first (`utils.init_distributed_mode(args)` calling `torch.cuda.set_device(args.gpu)`) wraps on
CUDA: DDP303 does not ask for `device_ids` only on CUDA there. And a `torch.save` into an in-memory
buffer writes no file (DDP401), in the script and in its helpers."""

import ast
import textwrap

from local_files import codes, write

from ddpfix.analysis.ast_cuda_join import cuda_join_line
from ddpfix.analysis.summaries import summarise


def line_of(body: str) -> int | None:
    func = ast.parse(textwrap.dedent(body)).body[-1]
    assert isinstance(func, ast.FunctionDef)
    return cuda_join_line(func, lambda name: name.replace("dist.", "torch.distributed.", 1))


def test_the_commitment_must_come_first_on_the_joins_own_path():
    assert (
        line_of("""
        def setup(gpu):
            if gpu is None:
                return
            torch.cuda.set_device(gpu)
            dist.init_process_group(backend="gloo")
        """)
        == 5
    )
    assert (
        line_of("""
        def setup(backend):
            dist.init_process_group(backend="nccl")
        """)
        == 3
    )
    assert (
        line_of("""
        def setup(gpu):
            if gpu is not None:
                torch.cuda.set_device(gpu)
            dist.init_process_group(backend="gloo")
        """)
        is None
    )  # set_device only on one branch
    assert (
        line_of("""
        def setup(gpu):
            dist.init_process_group(backend="gloo")
            torch.cuda.set_device(gpu)
        """)
        is None
    )  # too late
    assert (
        line_of("""
        def setup(gpus):
            for gpu in gpus:
                torch.cuda.set_device(gpu)
            dist.init_process_group(backend="gloo")
        """)
        is None
    )  # a loop may not run
    assert (
        line_of("""
        def setup(gpu, dist_backend):
            try:
                torch.cuda.set_device(gpu)
            except RuntimeError:
                pass
            dist.init_process_group(backend=dist_backend)
        """)
        == 4
    )
    assert line_of("def seed(n):\n    torch.manual_seed(n)\n") is None  # joins nowhere


UTILS = """
import io
import os

import torch
import torch.distributed as dist


def init_distributed_mode(args):
    if "RANK" not in os.environ:
        args.distributed = False
        return
    args.distributed = True
    args.gpu = int(os.environ["LOCAL_RANK"])
    {first}
    dist.init_process_group(backend=args.dist_backend)


def copy_state(model, state):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    model.load_state_dict(torch.load(buffer))


def save_state(state, path):
    torch.save(state, path)
"""

TRAIN = """
import argparse

import torch
import torch.nn as nn

import utils


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ema-device", default="cpu")
    args = parser.parse_args()
    utils.init_distributed_mode(args)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 2).to(device)
    ema = nn.Linear(4, 2).to(args.ema_device)
    if args.distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        model(torch.randn(8, 4, device=device)).sum().backward()
        opt.step()
    utils.copy_state(ema, model.state_dict())
    {save}


if __name__ == "__main__":
    main()
"""


def test_a_helper_that_sets_the_device_before_joining_makes_the_wrap_cuda_only(tmp_path):
    write(tmp_path, "utils.py", UTILS.format(first="torch.cuda.set_device(args.gpu)"))
    train = write(tmp_path, "train.py", TRAIN.format(save="pass"))
    summary = summarise(tmp_path / "utils.py", lambda module, level: None)
    assert summary.joins_on_cuda == {"init_distributed_mode": 14}
    assert "DDP303" not in codes(train)


def test_a_helper_that_can_join_without_a_gpu_leaves_the_finding(tmp_path):
    write(tmp_path, "utils.py", UTILS.format(first="pass"))
    train = write(tmp_path, "train.py", TRAIN.format(save="pass"))
    assert summarise(tmp_path / "utils.py", lambda module, level: None).joins_on_cuda == {}
    assert "DDP303" in codes(train)


def test_a_join_through_another_function_is_not_known_to_need_a_gpu(tmp_path):
    utils = UTILS.format(first="torch.cuda.set_device(args.gpu)")
    utils += "\n\ndef join_cpu():\n    dist.init_process_group(backend='gloo')\n"
    utils = utils.replace(
        "    dist.init_process_group(backend=args.dist_backend)\n",
        "    dist.init_process_group(backend=args.dist_backend)\n    join_cpu()\n",
        1,
    )
    write(tmp_path, "utils.py", utils)
    train = write(tmp_path, "train.py", TRAIN.format(save="pass"))
    assert summarise(tmp_path / "utils.py", lambda module, level: None).joins_on_cuda == {}
    assert "DDP303" in codes(train)


def test_a_save_into_an_in_memory_buffer_writes_no_file(tmp_path):
    write(tmp_path, "utils.py", UTILS.format(first="torch.cuda.set_device(args.gpu)"))
    quiet = write(tmp_path, "train.py", TRAIN.format(save="utils.copy_state(ema, ema.state_dict())"))
    assert "DDP401" not in codes(quiet)  # copy_state saves into io.BytesIO()
    loud = write(tmp_path, "train.py", TRAIN.format(save='utils.save_state(model.state_dict(), "ckpt.pt")'))
    assert codes(loud).count("DDP401") == 1  # save_state writes a file on every rank


def test_a_save_into_a_buffer_in_the_script_itself(tmp_path):
    write(tmp_path, "utils.py", UTILS.format(first="torch.cuda.set_device(args.gpu)"))
    buffered = "import io\n" + TRAIN.format(save="buf = io.BytesIO()\n    torch.save(model.state_dict(), buf)")
    assert "DDP401" not in codes(write(tmp_path, "train.py", buffered))
    inline = "import io\n" + TRAIN.format(save="torch.save(model.state_dict(), io.BytesIO())")
    assert "DDP401" not in codes(write(tmp_path, "train.py", inline))
    either = "import io\n" + TRAIN.format(
        save='buf = io.BytesIO() if args.distributed else "ckpt.pt"\n    torch.save(model.state_dict(), buf)'
    )
    assert "DDP401" in codes(write(tmp_path, "train.py", either))
    to_file = TRAIN.format(save='torch.save(model.state_dict(), "ckpt.pt")')
    assert "DDP401" in codes(write(tmp_path, "train.py", to_file))
