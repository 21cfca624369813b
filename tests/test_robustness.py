"""Regression tests for inputs the corpus run and the fuzzers found: each must go through `check` and
`diff` without an exception, with an output that parses and that a second apply leaves alone."""

from __future__ import annotations

import textwrap

from invariants import problems


def assert_sound(source: str, **kwargs) -> None:
    found = problems(textwrap.dedent(source), "case.py", **kwargs)
    assert not found, "\n".join(found)


def test_save_then_load_in_a_script_that_only_calls_backward():
    # torch/testing/_internal/common_nn.py: the save was guarded on the first pass (DDP401), and the
    # barrier before the load (DDP410) only came on the second.
    assert_sound(
        """\
        import torch


        def train(model, data):
            for x in data:
                model(x).sum().backward()
            torch.save(model, "m.pt")
            return torch.load("m.pt")
        """
    )


def test_ddp_on_an_explicit_cuda_module_with_a_process_group_but_no_set_device():
    # torch/testing/_internal/distributed/ddp_under_dist_autograd_test.py and distributed_test.py
    assert_sound(
        """\
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def main(rank):
            dist.init_process_group("gloo")
            model = nn.Linear(2, 2).cuda(rank)
            ddp = DDP(model, device_ids=[rank])
            opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
            ddp(torch.randn(1, 2)).sum().backward()
            opt.step()
        """
    )


def test_ddp_with_device_ids_and_no_process_group():
    # found by the fuzzer (training scripts assembled from fragments)
    assert_sound(
        """\
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(model, device_ids=[local_rank])
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        """
    )


def test_ddp_with_device_ids_and_a_checkpoint_load():
    # found by the fuzzer: DDP404's map_location="cpu" is not a CPU device for the model
    assert_sound(
        """\
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(model, device_ids=[0], output_device=0)
        model.load_state_dict(torch.load('ckpt.pt'))
        for x, y in loader:
            optimizer.zero_grad()
        """
    )


def test_process_group_in_an_mp_spawn_target_without_a_process_index():
    # found by the fuzzer: the LOCAL_RANK constant another fix adds is not the index mp.spawn passes
    assert_sound(
        """\
        import os
        import torch.multiprocessing as mp

        def main():
            torch.distributed.init_process_group(backend='nccl', rank=rank, world_size=world_size)
            model = nn.Linear(4, 2)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                optimizer.zero_grad()
            mp.spawn(main, nprocs=2)

        main()
        """
    )
