"""Finer cases for the data and model rules (DDP202-207, DDP302-310, DDP403): what they catch, what
they fix, and the near misses they must leave alone."""

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


def found(src: str, code: str) -> list:
    return [d for d in check_source(src) if d.code == code]


def fixed(src: str, *codes: str, **kw) -> str:
    return fix_source(src, select=list(codes), **kw).code


# --------------------------------------------------------------------------- DDP202
SAMPLER_UNUSED = """
def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
    sampler = DistributedSampler(ds{sargs})
    loader = DataLoader(ds, batch_size=2{largs})
    model = DDP(nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            model(x).sum().backward()
            opt.step()
"""


def test_ddp202_unconditional_sampler_drops_shuffle_and_adds_set_epoch():
    out = fixed(script(SAMPLER_UNUSED.format(sargs="", largs=", shuffle=True")), "DDP202")
    assert "loader = DataLoader(ds, batch_size=2, sampler=sampler)" in out
    assert "    for epoch in range(2):\n        sampler.set_epoch(epoch)\n" in out


def test_ddp202_dynamic_shuffle_moves_into_sampler():
    out = fixed(script(SAMPLER_UNUSED.format(sargs="", largs=", shuffle=args_shuffle")), "DDP202")
    assert "DistributedSampler(ds, shuffle=args_shuffle)" in out
    assert "DataLoader(ds, batch_size=2, sampler=sampler)" in out


def test_ddp202_passed_sampler_is_left_alone():
    src = script(SAMPLER_UNUSED.format(sargs="", largs=", sampler=sampler"))
    assert found(src, "DDP202") == []


def test_ddp202_sampler_handed_to_a_batch_sampler_is_used():
    src = script(SAMPLER_UNUSED.format(sargs="", largs="")).replace(
        "    loader = DataLoader(ds, batch_size=2)",
        "    batches = torch.utils.data.BatchSampler(sampler, 2, False)\n    loader = DataLoader(ds, batch_sampler=batches)",
    )
    assert found(src, "DDP202") == []


def test_ddp202_loader_before_sampler_is_diagnostic_only():
    src = script(SAMPLER_UNUSED.format(sargs="", largs="")).replace(
        "    sampler = DistributedSampler(ds)\n    loader = DataLoader(ds, batch_size=2)\n",
        "    loader = DataLoader(ds, batch_size=2)\n    sampler = DistributedSampler(ds)\n",
    )
    [d] = found(src, "DDP202")
    assert d.fix == "none"


def test_ddp202_does_not_double_with_ddp201():
    src = script(SAMPLER_UNUSED.format(sargs="", largs=""))
    codes = [d.code for d in check_source(src)]
    assert "DDP202" in codes and "DDP201" not in codes


# --------------------------------------------------------------------------- DDP205
def test_ddp205_strips_rank_from_sampler_seed():
    src = script(SAMPLER_UNUSED.format(sargs=", seed=42 + dist.get_rank()", largs=", sampler=sampler"))
    assert "DistributedSampler(ds, seed=42)" in fixed(src, "DDP205")


def test_ddp205_seed_variable_shared_with_manual_seed():
    body = SAMPLER_UNUSED.format(sargs=", seed=seed", largs=", sampler=sampler").replace(
        '    dist.init_process_group("gloo")\n',
        '    dist.init_process_group("gloo")\n    seed = base_seed + RANK\n    torch.manual_seed(seed)\n',
    )
    out = fixed(script(body), "DDP205")
    assert "DistributedSampler(ds, seed=base_seed)" in out
    assert "seed = base_seed + RANK" in out  # augmentation keeps its per-rank offset


def test_ddp205_seed_is_only_the_rank():
    src = script(SAMPLER_UNUSED.format(sargs=", seed=RANK", largs=", sampler=sampler"))
    assert "DistributedSampler(ds)" in fixed(src, "DDP205")


def test_ddp205_constant_seed_is_left_alone():
    src = script(SAMPLER_UNUSED.format(sargs=", seed=1234", largs=", sampler=sampler"))
    assert found(src, "DDP205") == []


def test_ddp205_inseparable_rank_seed_is_diagnostic_only():
    src = script(SAMPLER_UNUSED.format(sargs=", seed=hash(RANK)", largs=", sampler=sampler"))
    [d] = found(src, "DDP205")
    assert d.fix == "none"


# --------------------------------------------------------------------------- DDP206
EVAL = """
def main():
    dist.init_process_group("gloo")
    model = DDP(nn.Linear(2, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    val = TensorDataset(torch.randn(5, 2), torch.randint(0, 2, (5,)))
    val_loader = DataLoader(val, batch_size=2{largs})
    correct = 0
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
"""


def test_ddp206_counts_over_a_distributed_sampler():
    src = script(EVAL.format(largs=", sampler=DistributedSampler(val, shuffle=False)"))
    [d] = found(src, "DDP206")
    assert d.fix == "none"


def test_ddp206_full_set_on_every_rank_is_fine():
    assert found(script(EVAL.format(largs="")), "DDP206") == []


# --------------------------------------------------------------------------- DDP207
def test_ddp207_summed_loss_under_ddp():
    src = script(
        """
        def main():
            dist.init_process_group("gloo")
            model = DDP(nn.Linear(2, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            loss_fn = nn.MSELoss(reduction="sum")
            for step in range(2):
                loss_fn(model(torch.randn(4, 2)), torch.randn(4, 1)).backward()
                opt.step()
        """
    )
    [d] = found(src, "DDP207")
    assert "averaged" in d.message


def test_ddp207_mean_loss_is_silent():
    src = script(
        """
        def main():
            dist.init_process_group("gloo")
            model = DDP(nn.Linear(2, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            loss_fn = nn.MSELoss()
            for step in range(2):
                loss_fn(model(torch.randn(4, 2)), torch.randn(4, 1)).backward()
                opt.step()
        """
    )
    assert found(src, "DDP207") == []


# --------------------------------------------------------------------------- DDP302
# main() is the entry point, so DDP001's process group (which DDP302's fix needs) is set up there.
DP = """
def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(2, 1).to(device)
{wrap}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        model(torch.randn(4, 2, device=device)).sum().backward()
        opt.step()
    torch.save(model.module.state_dict(), "m.pt")


if __name__ == "__main__":
    main()
"""


def test_ddp302_device_count_guard_becomes_the_plain_runs_branch():
    """A plain run keeps its DataParallel; under torchrun DDP takes its place, on a CPU machine too."""
    src = script(DP.format(wrap="    if torch.cuda.device_count() > 1:\n        model = nn.DataParallel(model)"))
    [d] = found(src, "DDP302")
    assert d.fix == "safe"
    out = fixed(src, "DDP302")
    assert (
        '    raw_model = model\n    if DISTRIBUTED:\n        model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)\n'
        "    elif torch.cuda.device_count() > 1:\n        model = nn.DataParallel(model)\n" in out
    )
    assert "torch.save(raw_model.state_dict()" in out


def test_ddp302_chained_device_move_is_kept_on_both_paths():
    src = script(DP.format(wrap="    model = nn.DataParallel(model, device_ids=[0, 1]).to(device)"))
    out = fixed(src, "DDP302")
    assert (
        "    if DISTRIBUTED:\n"
        '        model = DDP(model.to(device), device_ids=[LOCAL_RANK] if device.type == "cuda" else None)\n'
        "    else:\n        model = nn.DataParallel(model, device_ids=[0, 1]).to(device)\n" in out
    )


def test_ddp302_with_a_later_device_move_keeps_the_line_for_the_plain_run_and_wraps_after_the_move():
    """A device move after the line: the plain run keeps the line (`if not DISTRIBUTED:`), and the DDP
    wrap follows the move."""
    src = script(DP.format(wrap="    model = nn.DataParallel(model)\n    model = model.to(device)"))
    [d] = found(src, "DDP302")
    assert d.fix == "safe"
    out = fixed(src, "DDP302")
    assert (
        "    raw_model = model\n    if not DISTRIBUTED:\n        model = nn.DataParallel(model)\n"
        "    model = model.to(device)\n    if DISTRIBUTED:\n        model = DDP(model, " in out
    )


def test_ddp302_wrapping_in_several_places_is_unsafe_and_not_applied_by_default():
    wrap = "    if False:\n        model = nn.DataParallel(model)\n    if args.data_parallel:\n        model = nn.DataParallel(model)"
    src = script(DP.format(wrap=wrap))
    assert {d.fix for d in found(src, "DDP302")} == {"unsafe"}
    assert fixed(src, "DDP302") == src


def test_ddp302_shared_if_block_with_a_print_becomes_the_elif():
    src = script(
        DP.format(
            wrap="    if torch.cuda.device_count() > 1:\n        print('gpus')\n        model = nn.DataParallel(model)"
        )
    )
    [d] = found(src, "DDP302")
    assert d.fix == "safe"
    out = fixed(src, "DDP302")
    assert (
        "    elif torch.cuda.device_count() > 1:\n        print('gpus')\n        model = nn.DataParallel(model)\n"
        in out
    )


def test_ddp302_shared_if_block_that_binds_keeps_it_for_both_runs():
    """The block also binds a name: it still runs under torchrun, the line only in a plain run."""
    src = script(
        DP.format(
            wrap="    if torch.cuda.device_count() > 1:\n        n = torch.cuda.device_count()\n"
            "        model = nn.DataParallel(model)"
        )
    )
    [d] = found(src, "DDP302")
    assert d.fix == "safe"
    out = fixed(src, "DDP302")
    assert (
        "    raw_model = model\n    if torch.cuda.device_count() > 1:\n        n = torch.cuda.device_count()\n"
        "        if not DISTRIBUTED:\n            model = nn.DataParallel(model)\n"
        '    if DISTRIBUTED:\n        model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)\n'
        in out
    )


def test_ddp302_dead_code_and_flags_become_one_wrap():
    wrap = (
        "    if False:\n        model = nn.DataParallel(model)\n"
        "    if args.data_parallel:  # off by default\n        model = nn.DataParallel(model)"
    )
    out = fixed(script(DP.format(wrap=wrap)), "DDP302", unsafe_fixes=True)
    assert "nn.DataParallel" not in out and "if False" not in out and "args.data_parallel" not in out
    assert out.count("DDP(model") == 1 and out.count("raw_model = model") == 1


def test_ddp302_model_used_after_it_in_its_block_is_diagnostic_only_and_unsharded():
    wrap = "    if torch.cuda.device_count() > 1:\n        model = nn.DataParallel(model)\n        print(model.module)"
    src = (
        script(DP.format(wrap=wrap))
        .replace(
            "    opt = torch.optim.SGD",
            "    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=2, shuffle=True)\n    opt = torch.optim.SGD",
        )
        .replace("    for step in range(2):\n", "    for epoch in range(2):\n      for (xb,) in loader:\n")
    )
    [d] = found(src, "DDP302")
    assert d.fix == "none"
    [s] = found(src, "DDP201")
    assert s.fix == "none"
    out = fixed(src, "DDP302", "DDP201", unsafe_fixes=True)
    assert "DistributedSampler(" not in out and "nn.DataParallel(model)" in out


def test_ddp207_dataparallel_batch_is_reported():
    src = script(
        """
        def main():
            ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
            loader = DataLoader(ds, batch_size=4)
            model = nn.DataParallel(nn.Linear(2, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(2):
                for x, y in loader:
                    model(x).sum().backward()
                    opt.step()
        """
    )
    [d] = found(src, "DDP207")
    assert "batch_size=4" in d.message


# --------------------------------------------------------------------------- DDP303
WRAP = """
def main():
    dist.init_process_group("gloo")
    device = torch.device(f"cuda:{{LOCAL_RANK}}" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(2, 1).to(device)
    model = DDP(model{args})
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        model(torch.randn(4, 2, device=device)).sum().backward()
        opt.step()
"""


def test_ddp303_several_devices_become_local_rank():
    out = fixed(script(WRAP.format(args=", device_ids=[0, 1], output_device=0")), "DDP303")
    assert (
        'DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None, output_device=LOCAL_RANK if device.type == "cuda" else None)'
        in out
    )


def test_ddp303_conditional_device_ids_are_left_alone():
    src = script(WRAP.format(args=', device_ids=[LOCAL_RANK] if device.type == "cuda" else None'))
    assert found(src, "DDP303") == []


def test_ddp303_missing_device_ids_is_not_reported():
    assert found(script(WRAP.format(args="")), "DDP303") == []


def test_ddp303_cuda_only_script_keeps_device_ids():
    src = script(
        """
        def main():
            dist.init_process_group("nccl")
            model = nn.Linear(2, 1).cuda(LOCAL_RANK)
            model = DDP(model, device_ids=[LOCAL_RANK])
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(2):
                model(torch.randn(4, 2).cuda()).sum().backward()
                opt.step()
        """
    )
    assert found(src, "DDP303") == []


def test_ddp303_module_moved_with_cuda_keeps_device_ids_in_a_cpu_capable_script():
    for module in ("model.cuda(LOCAL_RANK)", 'nn.Linear(2, 1).to(f"cuda:{LOCAL_RANK}")'):
        src = script(WRAP.format(args=", device_ids=[LOCAL_RANK]").replace("DDP(model", f"DDP({module}"))
        assert found(src, "DDP303") == [], module
    bound = script(WRAP.format(args=", device_ids=[LOCAL_RANK]").replace(".to(device)", ".cuda(LOCAL_RANK)"))
    assert found(bound, "DDP303") == []


def test_ddp303_module_that_is_not_a_name_uses_the_device_or_reports_only():
    with_device = fixed(
        script(WRAP.format(args=", device_ids=[LOCAL_RANK]").replace("DDP(model", "DDP(copy.deepcopy(model)")), "DDP303"
    )
    assert 'DDP(copy.deepcopy(model), device_ids=[LOCAL_RANK] if device.type == "cuda" else None)' in with_device
    no_device = script(
        """
        def main():
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
            model = DDP(nn.Linear(2, 1).float(), device_ids=[0, 1])
        """
    )
    [d] = found(no_device, "DDP303")
    assert d.fix == "none" and ".parameters()" not in fixed(no_device, "DDP303")


def test_ddp303_composes_with_the_rank_fix_inside_device_ids():
    src = script(WRAP.format(args=", device_ids=[RANK], output_device=RANK"))
    out = fixed(src, "DDP303", "DDP005")
    assert (
        'DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None, output_device=LOCAL_RANK if device.type == "cuda" else None)'
        in out
    )
    assert fixed(out, "DDP303", "DDP005") == out


# --------------------------------------------------------------------------- DDP304
def test_ddp304_module_list_of_one():
    out = fixed(script(WRAP.format(args="").replace("DDP(model)", "DDP(nn.ModuleList([model]))")), "DDP304")
    assert "    model = DDP(model)\n" in out


def test_ddp304_reaching_into_the_container_is_diagnostic_only():
    src = script(
        WRAP.format(args="").replace("DDP(model)", "DDP(nn.Sequential(model))") + "    print(model.module[0].weight)\n"
    )
    [d] = found(src, "DDP304")
    assert d.fix == "none"


# --------------------------------------------------------------------------- DDP307
ACCUM = """
def main():
    dist.init_process_group("gloo")
    model = DDP(nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(8):
{body}
"""


def test_ddp307_unconditional_wrap_sets_the_flag_without_guard():
    body = "        loss = model(torch.randn(4, 2)).sum()\n        loss.backward()\n        if (i + 1) % 4 == 0:\n            opt.step()\n            opt.zero_grad()"
    out = fixed(script(ACCUM.format(body=body)), "DDP307")
    assert "    for i in range(8):\n        model.require_backward_grad_sync = (i + 1) % 4 == 0\n        loss = " in out


def test_ddp307_condition_computed_in_the_loop_is_diagnostic_only():
    body = "        last = (i + 1) % 4 == 0\n        model(torch.randn(4, 2)).sum().backward()\n        if last and i % 1 == 0:\n            opt.step()"
    [d] = found(script(ACCUM.format(body=body)), "DDP307")
    assert d.fix == "none"


def test_ddp307_existing_no_sync_on_the_right_micro_steps_is_left_alone():
    body = "        if (i + 1) % 4 != 0:\n            with model.no_sync():\n                model(torch.randn(4, 2)).sum().backward()\n        else:\n            model(torch.randn(4, 2)).sum().backward()\n        if (i + 1) % 4 == 0:\n            opt.step()"
    assert found(script(ACCUM.format(body=body)), "DDP307") == []


INNER = """
def main():
    dist.init_process_group("gloo")
    model = DDP(nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    accum = 4
    for step in range(3):
        for micro in range(accum):
{body}
        opt.step()
        opt.zero_grad()
"""


def test_ddp307_inner_micro_step_loop_syncs_on_its_last_iteration():
    body = "            loss = model(torch.randn(4, 2)).sum() / accum\n            loss.backward()"
    src = script(INNER.format(body=body))
    [d] = found(src, "DDP307")
    assert d.fix == "safe"
    out = fixed(src, "DDP307")
    assert (
        "        for micro in range(accum):\n            model.require_backward_grad_sync = micro == accum - 1\n" in out
    )
    assert found(out, "DDP307") == []


def test_ddp307_inner_loop_over_chunks_uses_their_count():
    src = script(INNER.format(body="            model(torch.randn(4, 2)).sum().backward()")).replace(
        "        for micro in range(accum):", "        for k, chunk in enumerate(chunks):"
    )
    out = fixed(src.replace("    accum = 4\n", "    accum = 4\n    chunks = [1, 2]\n"), "DDP307")
    assert "model.require_backward_grad_sync = k == len(chunks) - 1" in out


def test_ddp307_inner_loop_with_break_is_diagnostic_only():
    body = "            model(torch.randn(4, 2)).sum().backward()\n            if micro > 5:\n                break"
    [d] = found(script(INNER.format(body=body)), "DDP307")
    assert d.fix == "none"


def test_ddp307_no_sync_on_the_stepping_micro_step_is_reported():
    wrong = (
        "            if micro > 0:\n                with model.no_sync():\n"
        "                    model(torch.randn(4, 2)).sum().backward()\n"
        "            else:\n                model(torch.randn(4, 2)).sum().backward()"
    )
    [d] = found(script(INNER.format(body=wrong)), "DDP307")
    assert d.fix == "none" and "stepping" in d.message
    right = wrong.replace("if micro > 0:", "if micro < accum - 1:")
    assert found(script(INNER.format(body=right)), "DDP307") == []
    first_only = wrong.replace("if micro > 0:", "if micro == 0:")
    assert found(script(INNER.format(body=first_only)), "DDP307") == []
    literal = script(INNER.format(body=wrong)).replace("range(accum)", "range(4)")
    [d] = found(literal, "DDP307")
    assert d.fix == "none"
    all_but_last = script(INNER.format(body=wrong.replace("if micro > 0:", "if micro != 3:"))).replace(
        "range(accum)", "range(4)"
    )
    assert found(all_but_last, "DDP307") == []


def test_ddp307_no_sync_on_every_micro_step_is_reported():
    body = "        with model.no_sync():\n            model(torch.randn(4, 2)).sum().backward()\n        if (i + 1) % 4 == 0:\n            opt.step()"
    [d] = found(script(ACCUM.format(body=body)), "DDP307")
    assert d.fix == "none"
    ok = body.replace(
        "with model.no_sync():", "with model.no_sync() if (i + 1) % 4 != 0 else contextlib.nullcontext():"
    )
    assert found(script(ACCUM.format(body=ok)), "DDP307") == []
    flag = "        model.require_backward_grad_sync = (i + 1) % 4 == 1\n        model(torch.randn(4, 2)).sum().backward()\n        if (i + 1) % 4 == 0:\n            opt.step()"
    [d] = found(script(ACCUM.format(body=flag)), "DDP307")
    assert d.fix == "none"


def test_ddp307_step_every_iteration_is_not_accumulation():
    body = "        model(torch.randn(4, 2)).sum().backward()\n        opt.step()"
    assert found(script(ACCUM.format(body=body)), "DDP307") == []


# --------------------------------------------------------------------------- DDP308 / DDP309 / DDP403
NET = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 1)

    def forward(self, x):
        return self.fc(x)

    def score(self, x):
        return self.forward(x).mean()


def evaluate(net, x):
    return net.score(x)


def main():
    dist.init_process_group("gloo")
    model = Net()
    ddp_model = DDP(model)
    opt = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
    for step in range(2):
{loop}
    print(evaluate(ddp_model, torch.randn(2, 2)))
{after}
"""


def net(
    loop: str = "        ddp_model(torch.randn(4, 2)).sum().backward()\n        opt.step()", after: str = ""
) -> str:
    return script(NET.format(loop=loop, after=after))


def test_ddp308_separate_wrapper_name_goes_back_to_the_model():
    out = fixed(net(after="    print(ddp_model.score(torch.randn(2, 2)), ddp_model.fc.weight.shape)"), "DDP308")
    assert "print(model.score(torch.randn(2, 2)), model.fc.weight.shape)" in out


def test_ddp308_wrapper_passed_to_a_helper_passes_the_model():
    [d] = found(net(), "DDP308")
    assert (d.fix, d.line) == (
        "safe",
        net().splitlines().index("    print(evaluate(ddp_model, torch.randn(2, 2)))") + 1,
    )
    out = fixed(net(), "DDP308")
    assert "    print(evaluate(model, torch.randn(2, 2)))" in out and "return net.score(x)" in out


def test_ddp308_wrapper_passed_to_a_helper_that_trains_is_diagnostic_only():
    src = net().replace("    return net.score(x)", "    net.score(x).backward()")
    [d] = found(src, "DDP308")
    assert d.fix == "none" and "trains" in d.message


def test_ddp308_module_api_and_dot_module_are_left_alone():
    src = net(after="    ddp_model.train()\n    print(ddp_model.module.score(torch.randn(2, 2)))")
    lines = src.splitlines()
    flagged = {lines[d.line - 1].strip() for d in found(src, "DDP308")}
    assert flagged == {"print(evaluate(ddp_model, torch.randn(2, 2)))"}


def test_ddp309_forward_through_module_in_training_loop():
    src = net(loop="        ddp_model.module(torch.randn(4, 2)).sum().backward()\n        opt.step()")
    [d] = found(src, "DDP309")
    assert d.fix == "none"


def test_ddp309_eval_forward_under_no_grad_is_fine():
    loop = "        ddp_model(torch.randn(4, 2)).sum().backward()\n        opt.step()\n        with torch.no_grad():\n            model(torch.randn(4, 2))"
    assert found(net(loop=loop), "DDP309") == []


def test_ddp403_load_after_wrap_goes_through_the_model():
    out = fixed(net(after='    ddp_model.load_state_dict(torch.load("m.pt"))'), "DDP403")
    assert 'model.load_state_dict(torch.load("m.pt"))' in out and "ddp_model.load_state_dict" not in out


def test_ddp403_rank0_only_load_after_wrap_is_diagnostic_only():
    src = net(after='    if RANK == 0:\n        ddp_model.load_state_dict(torch.load("m.pt"))')
    [d] = found(src, "DDP403")
    assert d.fix == "none"


def test_ddp403_load_before_wrap_is_left_alone():
    src = net().replace("    model = Net()\n", '    model = Net()\n    model.load_state_dict(torch.load("m.pt"))\n')
    assert found(src, "DDP403") == []


# --------------------------------------------------------------------------- DDP310
UNUSED = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 1)
        self.extra = nn.Linear(2, 1)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
{forward}


def main():
    dist.init_process_group("gloo")
    model = DDP(Net(){args})
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
"""


def test_ddp310_input_conditional_submodule():
    fwd = "        if x.sum() > 0:\n            return self.extra(x)\n        return self.fc(x)"
    [d] = found(script(UNUSED.format(forward=fwd, args="")), "DDP310")
    assert "self.extra" in d.message and "condition" in d.message


def test_ddp310_all_used_is_silent_and_flag_is_overuse():
    fwd = "        return self.fc(x) + self.extra(x)"
    assert found(script(UNUSED.format(forward=fwd, args="")), "DDP310") == []
    [d] = found(script(UNUSED.format(forward=fwd, args=", find_unused_parameters=True")), "DDP310")
    assert "extra autograd traversal" in d.message


def test_ddp310_flag_already_set_for_unused():
    fwd = "        return self.fc(x)"
    assert found(script(UNUSED.format(forward=fwd, args=", find_unused_parameters=True")), "DDP310") == []


def test_ddp310_dynamic_access_is_skipped():
    fwd = "        return sum(m(x) for m in self.children() if isinstance(m, nn.Linear))"
    assert found(script(UNUSED.format(forward=fwd, args="")), "DDP310") == []


def test_dataparallel_before_the_device_move_is_wrapped_after_it():
    src = (
        "import torch\nimport torch.nn as nn\n\n\ndef main():\n"
        "    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "    model = nn.Linear(2, 1)\n"
        "    if torch.cuda.device_count() > 1:\n"
        "        model = nn.DataParallel(model)\n"
        "    model = model.to(device)\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    model(torch.randn(2, 2)).sum().backward()\n"
        "    opt.step()\n"
    )
    out = fix_source(src).code
    assert "    if torch.cuda.device_count() > 1 and not DISTRIBUTED:\n        model = nn.DataParallel(model)\n" in out
    moved = out.index("model = model.to(device)")
    assert "raw_model" not in out and moved < out.index("model = DDP(model")  # (no edit reads a kept name)
