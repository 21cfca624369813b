"""How a script's distributed path starts, judged by what runs on it: a backend on a path that needs a
GPU anyway (DDP002), a set_device after the join with or without GPU work before it (DDP006), the
rank that picks a GPU followed to its binding (DDP005), mp.spawn's signature (DDP004), an mp.spawn
script's launch (DDP009), and the script's own "is this run distributed" flag."""

from __future__ import annotations

import textwrap

import libcst as cst

from ddpfix import fix_source
from ddpfix.analysis import ScriptFacts


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip()


def found(text: str, code: str) -> list:
    return [d for d in fix_source(text, fix=False).diagnostics if d.code == code]


def fixed(text: str, *codes: str) -> str:
    return fix_source(text, select=list(codes) or None).code


# --------------------------------------------------------------------------- DDP002 on CUDA-only paths
SPAWNED_SETUP = src("""
    import os
    import platform

    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP


    def setup(rank, world_size):
        os.environ["MASTER_ADDR"] = "localhost"
        os.environ["MASTER_PORT"] = "29500"
        if platform.system() == "Windows":
            dist.init_process_group("gloo", rank=rank, world_size=world_size)
        else:
            dist.init_process_group("nccl", rank=rank, world_size=world_size)
        {device_line}


    def worker(rank, world_size):
        setup(rank, world_size)
        model = nn.Linear(2, 1).to(rank)
        model = DDP(model, device_ids=[rank])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(4):
            opt.zero_grad()
            model(torch.randn(4, 2, device=rank)).sum().backward()
            opt.step()
        dist.destroy_process_group()


    if __name__ == "__main__":
        n = torch.cuda.device_count()
        mp.spawn(worker, args=(n,), nprocs=n)
""")


def spawned(device_line: str = "torch.cuda.set_device(rank)") -> str:
    return SPAWNED_SETUP.format(device_line=device_line)


def test_nccl_on_a_path_that_sets_the_device_unconditionally_is_not_reported():
    assert found(spawned(), "DDP002") == []


def test_nccl_on_a_path_that_may_run_on_cpu_is_reported():
    text = spawned("if torch.cuda.is_available():\n            torch.cuda.set_device(rank)")
    [d] = found(text, "DDP002")
    assert d.line == 17  # the NCCL branch
    assert '"cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"' in fixed(text, "DDP002")


TORCHRUN_FLAG = src("""
    import os

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    ddp = int(os.environ.get("RANK", -1)) != -1
    device = "cpu"
    if ddp:
        {commit}dist.init_process_group(backend="nccl")
        local_rank = int(os.environ["LOCAL_RANK"])
        {device}
    else:
        {single}
    model = nn.Linear(2, 1).to(device)
    if ddp:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        opt.zero_grad()
        model(torch.randn(4, 2, device=device)).sum().backward()
        opt.step()
""")


def flagged(commit: str = "", device: str = "pass", single: str = "pass") -> str:
    return TORCHRUN_FLAG.format(commit=commit, device=device, single=single)


def test_an_assert_or_a_cuda_device_on_the_distributed_branch_makes_it_cuda_only():
    assert found(flagged(commit='assert torch.cuda.is_available(), "DDP needs CUDA"\n    '), "DDP002") == []
    cuda = 'device = torch.device(f"cuda:{local_rank}")\n    model_probe = torch.zeros(1).to(device)'
    assert found(flagged(device=cuda), "DDP002") == []
    assert found(flagged(device='device = f"cuda:{local_rank}"\n    torch.cuda.set_device(device)'), "DDP002") == []


def test_cuda_only_on_the_single_process_branch_leaves_the_distributed_one_cpu_capable():
    assert len(found(flagged(single="torch.cuda.set_device(0)"), "DDP002")) == 1
    assert len(found(flagged(), "DDP002")) == 1
    maybe = 'device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")'
    assert len(found(flagged(device=maybe), "DDP002")) == 1


def test_a_set_device_in_a_helper_the_joining_function_calls_makes_it_cuda_only():
    text = spawned("pick_gpu(rank)").replace(
        "def worker(", "def pick_gpu(index):\n    torch.cuda.set_device(index)\n\n\ndef worker("
    )
    assert found(text, "DDP002") == []
    guarded = text.replace(
        "    torch.cuda.set_device(index)", "    if index >= 0:\n        torch.cuda.set_device(index)"
    )
    assert len(found(guarded, "DDP002")) == 1


# --------------------------------------------------------------------------- DDP006: a late set_device
def test_set_device_right_after_the_join_is_harmless_and_one_line_is_never_reported_twice():
    assert found(spawned(), "DDP006") == []  # two init calls (gloo / nccl branches), nothing in between
    late = spawned("dist.barrier()\n    torch.cuda.set_device(rank)")
    [d] = found(late, "DDP006")  # one finding for the set_device both init calls precede
    assert "`dist.barrier()` (line 18) runs before it" in d.message and d.fix == "safe"
    out = fixed(late, "DDP006")
    assert "    torch.cuda.set_device(rank)\n    if platform.system()" in out


def test_gpu_work_in_the_caller_before_its_set_device_is_reported():
    text = src("""
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn


        def join():
            dist.init_process_group("nccl")


        def main():
            local_rank = int(os.environ["LOCAL_RANK"])
            join()
            model = nn.Linear(2, 1).cuda()
            torch.cuda.set_device(local_rank)
            model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.randn(2, 2).cuda()).sum().backward()
            opt.step()


        if __name__ == "__main__":
            main()
    """)
    [d] = found(text, "DDP006")
    assert "`nn.Linear(2, 1).cuda()`" not in d.message and ".cuda()` (line 15)" in d.message
    assert d.fix == "none" and "not in the same block" in d.message
    quiet = text.replace("    model = nn.Linear(2, 1).cuda()\n    torch.cuda.set_device(local_rank)\n", "")
    quiet = quiet.replace(
        "    join()\n", "    join()\n    torch.cuda.set_device(local_rank)\n    model = nn.Linear(2, 1).cuda()\n"
    )
    assert found(quiet, "DDP006") == []


def test_gpu_work_inside_a_helper_of_this_file_counts():
    text = src("""
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn


        def warm_up():
            torch.zeros(1, device="cuda").sum()


        local_rank = int(os.environ["LOCAL_RANK"])
        dist.init_process_group("nccl")
        warm_up()
        torch.cuda.set_device(local_rank)
        model = nn.parallel.DistributedDataParallel(nn.Linear(2, 1).cuda())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 2).cuda()).sum().backward()
        opt.step()
    """)
    [d] = found(text, "DDP006")
    assert "`warm_up()` (line 14)" in d.message
    out = fixed(text, "DDP006")
    assert out.index("torch.cuda.set_device(local_rank)") < out.index('dist.init_process_group("nccl")')
    assert found(text.replace('    torch.zeros(1, device="cuda").sum()', '    print("ready")'), "DDP006") == []


# --------------------------------------------------------------------------- DDP005: the binding, not the name
TORCHRUN_MAIN = src("""
    import os

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main(rank, world_size):
        dist.init_process_group("nccl")
        torch.cuda.set_device(rank)
        model = nn.Linear(2, 1).to(rank)
        model = DDP(model, device_ids=[rank])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(4, 2).to(rank)).sum().backward()
        opt.step()
        dist.destroy_process_group()


    if __name__ == "__main__":
        world_size = int(os.environ.get("WORLD_SIZE", 1))
    {binding}
        main(rank, world_size)
""")
FROM_LOCAL_RANK = """\
    if "LOCAL_RANK" in os.environ:
        rank = int(os.environ["LOCAL_RANK"])
    elif "RANK" in os.environ:
        rank = int(os.environ["RANK"])
    else:
        rank = 0"""


def test_a_rank_bound_from_local_rank_picks_the_gpu_rightly_whatever_its_name():
    assert found(TORCHRUN_MAIN.format(binding=FROM_LOCAL_RANK), "DDP005") == []


def test_a_global_rank_handed_to_a_function_is_one_finding_at_the_call():
    text = TORCHRUN_MAIN.format(binding='    rank = int(os.environ["RANK"])')
    [d] = found(text, "DDP005")  # four device uses of the parameter, one choice of the rank
    assert d.line == 23 and "the global rank `rank`" in d.message
    assert "    main(LOCAL_RANK, world_size)\n" in fixed(text, "DDP005")


def test_a_global_rank_used_twice_is_two_findings_one_each():
    text = src("""
        import torch
        import torch.distributed as dist
        import torch.nn as nn


        def train():
            dist.init_process_group("nccl")
            rank = dist.get_rank()
            device = torch.device(f"cuda:{rank}")
            model = nn.parallel.DistributedDataParallel(nn.Linear(2, 1).to(device), device_ids=[rank])
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.randn(2, 2).to(device)).sum().backward()
            opt.step()


        if __name__ == "__main__":
            train()
    """)
    assert [d.line for d in found(text, "DDP005")] == [9, 10]


def test_a_rank_modulo_the_gpus_per_node_is_a_local_index():
    text = src("""
        import torch
        import torch.distributed as dist
        import torch.nn as nn

        dist.init_process_group("nccl")
        gpu = dist.get_rank() % torch.cuda.device_count()
        torch.cuda.set_device(gpu)
        model = nn.parallel.DistributedDataParallel(nn.Linear(2, 1).cuda(), device_ids=[gpu])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 2).cuda()).sum().backward()
        opt.step()
    """)
    assert found(text, "DDP005") == []


# --------------------------------------------------------------------------- DDP004 / DDP009: mp.spawn
SPAWN = src("""
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    import torch.nn as nn


    def worker({params}):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29541", rank=rank, world_size=2)
        model = nn.parallel.DistributedDataParallel(nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 2)).sum().backward()
        opt.step()
        dist.destroy_process_group()


    if __name__ == "__main__":
        mp.spawn(worker, args=(2,), nprocs=2)
""")


def test_spawn_target_taking_too_few_or_too_many_arguments_is_reported():
    [d] = found(SPAWN.format(params="rank"), "DDP004")
    assert "with 2 argument(s) but worker takes 1" in d.message
    [d] = found(SPAWN.format(params="rank, world_size, epochs"), "DDP004")
    assert "with 2 argument(s) but worker takes 3" in d.message
    for params in ("rank, world_size", "rank, world_size, epochs=2", "rank, *rest"):
        assert found(SPAWN.format(params=params), "DDP004") == [], params
    [d] = found(SPAWN.format(params="rank, *, world_size=2"), "DDP004")  # a bare `*` takes nothing more
    assert "but worker takes 1" in d.message


def test_a_spawning_script_gets_no_launch_line():
    assert found(SPAWN.format(params="rank, world_size"), "DDP009") == []


# --------------------------------------------------------------------------- the script's "distributed" flag
def env_names(line: str) -> dict[str, str]:
    return ScriptFacts(cst.parse_module(f"import os\n{line}\n")).launch.env_names


def test_a_flag_computed_from_world_size_is_the_distributed_flag_not_the_world_size():
    for flag in (
        'int(os.environ.get("WORLD_SIZE", 1)) > 1',
        'int(os.environ.get("WORLD_SIZE", 1)) >= 2',
        'int(os.environ.get("WORLD_SIZE", "1")) != 1',
        '"WORLD_SIZE" in os.environ',
        'int(os.environ.get("RANK", -1)) != -1',
    ):
        assert env_names(f"DISTRIBUTED = {flag}") == {"DISTRIBUTED": "DISTRIBUTED"}, flag
    assert env_names('WORLD = int(os.environ.get("WORLD_SIZE", 1))') == {"WORLD_SIZE": "WORLD"}


def test_the_script_s_flag_guards_what_ddpfix_adds():
    text = src("""
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn

        DISTRIBUTED = int(os.environ.get("WORLD_SIZE", 1)) > 1


        def main():
            if DISTRIBUTED:
                dist.init_process_group("gloo")
            model = nn.Linear(2, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.randn(2, 2)).sum().backward()
            opt.step()


        if __name__ == "__main__":
            main()
    """)
    out = fixed(text)
    assert "    if DISTRIBUTED:\n        model = DDP(" in out
    assert "IS_DISTRIBUTED" not in out and "DISTRIBUTED > 1" not in out


# --------------------------------------------------------------------------- workers the script starts itself
PROCESS_WORKERS = src("""
    import argparse

    import torch
    import torch.nn as nn
    from torch.multiprocessing import Process
    from torch.nn.parallel import DistributedDataParallel as DDP

    from dist_utils import dist


    def main_fun(rank, world_size, args):
        dist.init_process_group("gloo", init_method=args.dist_url, world_size=world_size, rank=rank)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--world-size", default=2, type=int)
        parser.add_argument("--dist-url", default="tcp://127.0.0.1:29533")
        opt = parser.parse_args()
        processes = []
        for rank in range(opt.world_size):
            p = Process(target=main_fun, args=(rank, opt.world_size, opt))
            p.start()
            processes.append(p)
        for p in processes:
            p.join()
""")


def test_torch_distributed_taken_from_a_local_module_is_torch_distributed(tmp_path):
    """`from dist_utils import dist`, where dist_utils has `import torch.distributed as dist`: the
    script joins the process group itself; it gets no second one."""
    (tmp_path / "dist_utils.py").write_text(
        "import torch.distributed as dist\n\n\ndef cleanup():\n    dist.destroy_process_group()\n"
    )
    path = str(tmp_path / "train.py")
    facts = ScriptFacts(cst.parse_module(PROCESS_WORKERS), path=path)
    assert (
        facts.names.qualname(cst.parse_expression("dist.init_process_group")) == "torch.distributed.init_process_group"
    )
    diags = fix_source(PROCESS_WORKERS, path=path, fix=False).diagnostics
    assert [d.code for d in diags if d.code in ("DDP001", "DDP301")] == []
    # without the module beside it, `dist` is nothing ddpfix knows
    alone = ScriptFacts(cst.parse_module(PROCESS_WORKERS), path=str(tmp_path / "elsewhere" / "train.py"))
    assert (
        alone.names.qualname(cst.parse_expression("dist.init_process_group")) != "torch.distributed.init_process_group"
    )


def test_ddp003_leaves_alone_a_script_that_starts_one_process_per_worker(tmp_path):
    text = PROCESS_WORKERS.replace("from dist_utils import dist", "import torch.distributed as dist")
    assert found(text, "DDP003") == []
    # the same init under torchrun, with no workers of its own, is reported
    torchrun = text.replace("from torch.multiprocessing import Process\n", "").split('if __name__ == "__main__":')[0]
    torchrun += 'if __name__ == "__main__":\n    main_fun(0, 1, argparse.Namespace(dist_url="env://"))\n'
    assert [d.code for d in found(torchrun, "DDP003")] == ["DDP003"]


def test_processes_the_script_starts_are_wrapped_when_their_group_exists():
    """Workers started with `Process(target=...)` get no torchrun environment: the wrap DDP301 adds
    asks the process group (`dist.is_initialized()`), never WORLD_SIZE, and no LOCAL_RANK is made up
    for their set_device. On a CPU script the wrap's own device choice (`... if
    next(model.parameters()).is_cuda else None`) is no GPU use: the output checks clean of DDP006; with
    the model moved to a GPU, DDP006 names the process index to pass to set_device."""
    text = PROCESS_WORKERS.replace("from dist_utils import dist", "import torch.distributed as dist").replace(
        "model = DDP(nn.Linear(4, 1))", "model = nn.Linear(4, 1)"
    )
    result = fix_source(text)
    assert (
        "    if dist.is_initialized():\n        model = DDP(model, device_ids=[torch.cuda.current_device()]"
        in result.code
    )
    assert "WORLD_SIZE" not in result.code and "LOCAL_RANK =" not in result.code
    assert "set_device" not in result.code
    assert result.incomplete == []
    assert [d for d in fix_source(result.code, fix=False).diagnostics if d.code == "DDP006"] == []
    on_gpu = text.replace("model = nn.Linear(4, 1)", "model = nn.Linear(4, 1).cuda(rank)")
    out = fix_source(on_gpu).code
    on_output = [d for d in fix_source(out, fix=False).diagnostics if d.code == "DDP006"]
    assert [
        d.message.endswith("(pass the process index of the script's own Process to set_device)") for d in on_output
    ] == [True]
