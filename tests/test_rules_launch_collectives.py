"""Finer cases for the launch, collective and checkpoint rules: what they catch, what they fix, and
the near misses they must leave alone."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

HEAD = """\
import os
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
"""


def script(body: str) -> str:
    return HEAD + textwrap.dedent(body)


def codes(src: str, select=None) -> list[str]:
    return [d.code for d in check_source(src, select=select)]


TRAIN = """
def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        loss = model(torch.randn(4, 2)).sum()
        loss.backward()
        opt.step()
{extra}
"""


def train(extra: str) -> str:
    return script(TRAIN.format(extra=textwrap.indent(textwrap.dedent(extra), "    ")))


# --------------------------------------------------------------------------- DDP101
def test_main_process_first_is_not_flagged():
    src = train("""
        if rank != 0:
            dist.barrier()
        data = torch.randn(4)
        if rank == 0:
            dist.barrier()
    """)
    assert "DDP101" not in codes(src)


def test_barrier_on_rank0_only_is_flagged_and_hoisted_with_unsafe_fixes():
    src = train("""
        if rank == 0:
            torch.save(model.module.state_dict(), "c.pt")
            dist.barrier()
    """)
    assert "DDP101" in codes(src)
    assert "dist.barrier()" in fix_source(src).code.split("if rank == 0:")[1].split("\n")[2]  # safe run: untouched
    fixed = fix_source(src, unsafe_fixes=True).code
    assert 'if rank == 0:\n        torch.save(model.module.state_dict(), "c.pt")\n    dist.barrier()\n' in fixed


def test_lone_guarded_collective_has_no_fix():
    src = train("""
        if rank == 0:
            dist.all_reduce(torch.ones(1))
    """)
    diags = [d for d in check_source(src) if d.code == "DDP101"]
    assert diags and diags[0].fix == "none"


def test_collective_through_a_helper_is_flagged():
    src = script("""
    def sync():
        dist.barrier()


    def main():
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        model = DDP(nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 2)).sum().backward()
        opt.step()
        if rank == 0:
            sync()
    """)
    assert "DDP101" in codes(src)


def test_balanced_branches_are_not_flagged():
    src = train("""
        if rank == 0:
            dist.broadcast(torch.ones(1), 0)
        else:
            dist.broadcast(torch.zeros(1), 0)
    """)
    assert "DDP101" not in codes(src)


# --------------------------------------------------------------------------- DDP102 / DDP105
def test_nan_skip_is_flagged_step_limit_is_not():
    src = train("""
        for i in range(3):
            loss = model(torch.randn(4, 2)).sum()
            if torch.isnan(loss):
                continue
            if i >= 2:
                break
            loss.backward()
    """)
    found = [d for d in check_source(src) if d.code == "DDP102"]
    assert len(found) == 1 and "continue" in found[0].message


def test_step_under_rank_guard():
    src = train("""
        if rank == 0:
            opt.step()
    """)
    assert "DDP105" in codes(src)
    assert "DDP105" not in codes(train("opt.step()\n"))


# --------------------------------------------------------------------------- DDP002 / DDP003
def test_nccl_literal_fixed_gloo_left_alone():
    src = script("""
    dist.init_process_group(backend="nccl")
    model = DDP(nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(2, 2)).sum().backward()
    """)
    out = fix_source(src, select=["DDP002"]).code
    assert 'backend="cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"' in out
    assert "DDP002" not in codes(src.replace('"nccl"', '"gloo"'))


def test_init_args_dropped_under_torchrun_kept_under_spawn():
    src = script("""
    def main(rank, world_size):
        dist.init_process_group("gloo", rank=rank, world_size=world_size, init_method="tcp://127.0.0.1:23456")
        model = DDP(nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 2)).sum().backward()
    """)
    out = fix_source(src, select=["DDP003"]).code
    assert 'dist.init_process_group("gloo")' in out
    spawned = src + "\nimport torch.multiprocessing as mp\nmp.spawn(main, args=(2,), nprocs=2)\n"
    assert "DDP003" not in codes(spawned)
    assert "DDP003" not in codes(
        src.replace('init_method="tcp://127.0.0.1:23456"', 'init_method="env://"').replace(
            "rank=rank, world_size=world_size, ", ""
        )
    )


# --------------------------------------------------------------------------- DDP004
def test_spawn_signature():
    ok = script("""
    import torch.multiprocessing as mp
    def worker(rank, world_size):
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
        model = DDP(nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 2)).sum().backward()
    mp.spawn(worker, args=(2,), nprocs=2)
    """)
    assert "DDP004" not in codes(ok)
    assert "DDP004" in codes(ok.replace("def worker(rank, world_size):", "def worker(world_size):"))


# --------------------------------------------------------------------------- DDP005
def test_global_rank_as_device_is_fixed_local_rank_is_not_flagged():
    src = script("""
    def main():
        rank = int(os.environ["RANK"])
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl")
        model = DDP(nn.Linear(2, 1).cuda(), device_ids=[local_rank])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 2)).sum().backward()
    """)
    out = fix_source(src, select=["DDP005"]).code
    assert "torch.cuda.set_device(local_rank)" in out
    assert "device_ids=[local_rank]" in out
    assert [d.code for d in check_source(out, select=["DDP005"])] == []


def test_local_rank_writer_becomes_global():
    src = train("""
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if local_rank == 0:
            torch.save(model.module.state_dict(), "c.pt")
    """)
    out = fix_source(src, select=["DDP005"]).code
    assert "if rank == 0:\n        torch.save" in out


def test_local_rank_writer_inside_and_keeps_its_meaning():
    """The rank-0 test that replaces `args.local_rank in [-1, 0]` in `step % 5 == 0 and ...` is an
    `or` at run time (the script's own launch path): it gets parentheses, else `and` binds first and
    every rank but 0 would save on every step."""
    src = textwrap.dedent("""\
        import argparse

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        parser = argparse.ArgumentParser()
        parser.add_argument("--local_rank", type=int, default=-1)
        args = parser.parse_args()
        if args.local_rank != -1:
            torch.cuda.set_device(args.local_rank)
            dist.init_process_group("nccl")
        model = nn.Linear(4, 1).cuda()
        if args.local_rank != -1:
            model = DDP(model, device_ids=[args.local_rank])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 5 == 0 and args.local_rank in [-1, 0]:
                torch.save(model.state_dict(), "m.pt")
    """)
    out = fix_source(src, select=["DDP005"]).code
    assert "    if step % 5 == 0 and (not dist.is_initialized() or dist.get_rank() == 0):\n" in out


# --------------------------------------------------------------------------- DDP103 / DDP410 / DDP408 / DDP409
def test_rank0_eval_uses_the_plain_module():
    src = train("""
        if rank == 0:
            print(model(torch.randn(1, 2)))
    """)
    out = fix_source(src, select=["DDP103"]).code
    assert "print(model.module(torch.randn(1, 2)))" in out


def test_save_load_race_gets_a_barrier_unless_one_is_there():
    body = """
        if rank == 0:
            torch.save(model.module.state_dict(), "c.pt")
        {barrier}model.module.load_state_dict(torch.load("c.pt", map_location="cpu"))
    """
    src = train(body.format(barrier=""))
    out = fix_source(src, select=["DDP410"]).code
    assert "    if DISTRIBUTED:\n        dist.barrier()\n    model.module.load_state_dict" in out
    assert "DDP410" not in codes(train(body.format(barrier="dist.barrier()\n        ")))


def test_tqdm_gets_disable_unless_it_has_one():
    src = train("""
        from tqdm import tqdm
        for i in tqdm(range(3)):
            pass
        for i in tqdm(range(3), disable=rank != 0):
            pass
    """)
    out = fix_source(src, select=["DDP408"]).code
    assert out.count("disable=rank != 0") == 2
    assert [d.code for d in check_source(out, select=["DDP408"])] == []


def test_unreduced_metric_flagged_only_without_all_reduce():
    base = """
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler
        data = torch.randn(8, 2)
        sampler = DistributedSampler(data)
        loader = DataLoader(data, sampler=sampler)
        total = 0.0
        for x in loader:
            total += model(x).sum().item()
        {reduce}
        if rank == 0:
            print(f"sum {{total:.3f}} last {{loss.item():.3f}}")
    """
    found = [d for d in check_source(train(base.format(reduce=""))) if d.code == "DDP409"]
    assert len(found) == 1 and found[0].message.startswith("total summed")
    assert "DDP409" not in codes(train(base.format(reduce="dist.all_reduce(torch.tensor(total))")))


def test_scripts_distributed_by_another_library_are_left_alone():
    body = """
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
    assert check_source(textwrap.dedent(body.format(imp="")))  # a plain script is converted
    for imp in (
        "from accelerate import Accelerator",
        "import lightning as L",
        "import deepspeed",
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP",
    ):
        src = textwrap.dedent(body.format(imp=imp))
        assert [d.code for d in check_source(src)] == ["DDP008"] and not fix_source(src).changed, imp


def test_a_print_sharing_its_line_is_not_guarded():
    src = script("""
    def main():
        dist.init_process_group("gloo")
        model = DDP(nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        history = []
        for step in range(10):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
            msg = f"step {step}"; print(msg)
            history.append(msg)
    """)
    out = fix_source(src, select=["DDP406"])
    assert not out.changed
    found = [d for d in out.diagnostics if d.code == "DDP406"]
    assert found and found[0].fix == "none"
