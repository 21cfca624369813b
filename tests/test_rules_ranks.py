"""The rank detector and the rules that depend on it: which tests are rank tests (and which flags are
not), code that is already rank-0 only, and what the collective, exit and side-effect rules do with it."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddpfix import check_source, fix_source
from ddpfix.analysis import ScriptFacts

HEAD = """\
import logging
import os
import shutil

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
"""

TRAIN = """
def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    device = torch.device("cpu")
    model = DDP(nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        loss = model(torch.randn(4, 2)).pow(2).mean()
        loss.backward()
        opt.step()
{extra}
"""


def script(body: str) -> str:
    return HEAD + textwrap.dedent(body)


def train(extra: str, tail: str = "") -> str:
    return script(TRAIN.format(extra=textwrap.indent(textwrap.dedent(extra), "    "))) + textwrap.dedent(tail)


def found(src: str, code: str, **kw) -> list:
    return [d for d in check_source(src, **kw) if d.code == code]


def fixed(src: str, *codes: str, **kw) -> str:
    return fix_source(src, select=list(codes) or None, **kw).code


def with_modules(tmp_path, src: str, **modules: str) -> str:
    """Write `src` as train.py beside the given modules; return its path."""
    for name, text in modules.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    path = tmp_path / "train.py"
    path.write_text(src)
    return str(path)


# --------------------------------------------------------------------------- one detector
DETECTOR = """
import os
import torch.distributed as dist
import helpers

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    ddp_rank = int(os.environ["RANK"])
    master_process = ddp_rank == 0
else:
    master_process = True
is_master = helpers.chief()


def get_rank():
    if not dist.is_initialized():
        return 0
    return dist.get_rank()


def is_main_process():
    return get_rank() == 0


def should_log():
    return is_main_process()


TESTS = [{tests}]
"""

RANK0_TESTS = [
    "rank == 0",
    "0 == rank",
    "not rank",
    "rank in (-1, 0)",
    "args.local_rank in [-1, 0]",
    "dist.get_rank() == 0",
    "is_main_process()",
    "should_log()",
    "is_primary(args)",
    "utils.is_main_process()",
    "helpers.chief()",
    "master_process",
    "is_master",
    "args.rank % ngpus_per_node == 0",
    "accelerator.is_main_process",
    "trainer.is_global_zero",
    "int(os.environ.get('LOCAL_RANK', -1)) in [-1, 0]",
    "args.local_rank == -1 or dist.get_rank() == 0",
    "dist.is_initialized() and dist.get_rank() == 0",
]
NOT_RANK_TESTS = [
    "ddp",
    "ddp == 0",
    "not ddp",
    "args.local_rank != -1",
    "args.gpu is not None",
    "args.num_gpus > 1",
    "epoch % 10 == 0",
    "loss < best",
]


def _tests(tmp_path, tests):
    path = with_modules(
        tmp_path,
        DETECTOR.format(tests=", ".join(tests)),
        helpers="import torch.distributed as dist\n\n\ndef chief():\n    return dist.get_rank() == 0\n",
    )
    module = cst.parse_module(open(path).read())
    facts = ScriptFacts(module, path=path)
    [assign] = [a for a in facts.index.assigns if getattr(a.targets[0].target, "value", None) == "TESTS"]
    return facts.ranks, [e.value for e in assign.value.elements]


def test_rank0_tests_are_recognised_by_the_one_detector(tmp_path):
    ranks, exprs = _tests(tmp_path, RANK0_TESTS)
    for text, expr in zip(RANK0_TESTS, exprs):
        assert ranks.takes(expr) == (True, False), text
        assert ranks.is_rank_test(expr), text


def test_flags_every_rank_shares_are_not_rank_tests(tmp_path):
    ranks, exprs = _tests(tmp_path, NOT_RANK_TESTS)
    for text, expr in zip(NOT_RANK_TESTS, exprs):
        assert not ranks.is_rank_test(expr), text


def test_hang_rule_sees_the_tests_the_writer_rules_see():
    for test in ("args.local_rank in [-1, 0]", "not rank", "is_main_process()"):
        src = train(
            f"""
            if {test}:
                dist.barrier()
            """,
            "\n\ndef is_main_process():\n    return dist.get_rank() == 0\n",
        )
        assert found(src, "DDP101"), test
        printing = src.replace("dist.barrier()", 'print("done")')
        assert not found(printing, "DDP406"), test


FLAGGED = """
ddp_rank = int(os.environ.get("RANK", -1))
ddp = ddp_rank != -1


def main():
    if ddp:
        dist.init_process_group("gloo")
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
        print(step)
        if ddp:
            dist.barrier()
        if ddp == 0:
            torch.save(model.state_dict(), "c.pt")


if __name__ == "__main__":
    main()
"""


def test_a_flag_bound_from_the_rank_is_no_rank_test():
    src = script(FLAGGED)
    assert found(src, "DDP101") == []  # `if ddp: dist.barrier()` runs on every rank
    assert len(found(src, "DDP401")) == 1  # `if ddp == 0:` is no rank-0 guard


def test_guard_on_a_rank_variable_a_plain_run_sets_to_minus_one():
    out = fixed(script(FLAGGED), "DDP401", "DDP406")
    assert "        if ddp_rank in (-1, 0):\n            print(step)\n" in out
    assert "        if ddp == 0:\n            if ddp_rank in (-1, 0):\n                torch.save(" in out
    assert fixed(out, "DDP401", "DDP406") == out


def test_a_flag_read_from_the_environment_never_becomes_the_guard():
    src = script("""
    ddp = int(os.environ.get("RANK", -1)) != -1


    def main():
        if ddp:
            dist.init_process_group("gloo")
        model = nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
            torch.save(model.state_dict(), "c.pt")
            if ddp:
                dist.barrier()
            model.load_state_dict(torch.load("c.pt"))


    if __name__ == "__main__":
        main()
    """)
    out = fixed(src, "DDP401", "DDP410")
    assert "ddp == 0" not in out
    assert '        if RANK == 0:\n            torch.save(model.state_dict(), "c.pt")\n' in out
    assert 'RANK = int(os.environ.get("RANK", 0))\n' in out
    assert fixed(out, "DDP401", "DDP410") == out


def test_guards_on_the_scripts_own_rank_name_do_not_nest_on_reapply():
    src = script(
        FLAGGED.replace('ddp_rank = int(os.environ.get("RANK", -1))', 'proc_id = int(os.environ.get("RANK", 0))')
    )
    src = src.replace("ddp = ddp_rank != -1", 'ddp = int(os.environ.get("LOCAL_RANK", -1)) != -1')
    once = fixed(src, "DDP406")
    assert "        if proc_id == 0:\n            print(step)\n" in once
    assert fixed(once, "DDP406") == once


def test_name_bound_from_a_local_helper_guards(tmp_path):
    utils = """
    import torch.distributed as dist


    def on_first_process():
        return not dist.is_initialized() or dist.get_rank() == 0
    """
    src = train("""
        lead = utils.on_first_process()
        if lead:
            print(loss.item())
            torch.save(model.module.state_dict(), "c.pt")
    """).replace("import shutil\n", "import shutil\n\nimport utils\n")
    path = with_modules(tmp_path, src, utils=utils)
    assert [d.code for d in check_source(src, path=path) if d.code.startswith("DDP4")] == []
    assert not fix_source(src, path=path, select=["DDP401", "DDP406"]).changed


# --------------------------------------------------------------------------- already rank-0 only
def _nested_guards(code: str) -> list[str]:
    """Rank tests inside a branch of the same rank test."""
    module = cst.parse_module(code)
    facts = ScriptFacts(module)
    out = []
    for node in facts.index.ifs:
        if not facts.ranks.is_rank_test(node.test):
            continue
        for anc in facts.index.ancestors(node):
            if isinstance(anc, cst.If) and facts.ranks.takes(anc.test) == facts.ranks.takes(node.test):
                out.append(module.code_for_node(node.test))
    return out


def test_no_nested_guard_inside_existing_rank_guards():
    for test in ("args.rank == 0", "is_main_process()", "master_process", "not rank", "is_primary(args)"):
        src = train(f"""
            if {test}:
                print("saving")
                torch.save(model.module.state_dict(), "c.pt")
        """)
        assert not fix_source(src, select=["DDP401", "DDP406"]).changed, test


def test_no_guard_planned_inside_another():
    src = train("""
        with open("metrics.txt", "w") as f:
            f.write("x")
            print("written")
        with open("c.pt", "wb") as f:
            torch.save(model.module.state_dict(), f)
            print("saved")
    """)
    out = fixed(src)
    assert _nested_guards(out) == []
    assert '    if rank == 0:\n        with open("metrics.txt", "w") as f:\n            f.write("x")\n' in out
    assert '        with open("c.pt", "wb") as f:\n            torch.save(model.module.state_dict(), f)\n' in out


def test_print_silenced_by_setup_for_distributed_in_this_file():
    src = script("""
    def setup_for_distributed(is_master):
        import builtins as __builtin__

        builtin_print = __builtin__.print

        def print(*args, **kwargs):
            force = kwargs.pop("force", False)
            if is_master or force:
                builtin_print(*args, **kwargs)

        __builtin__.print = print


    def init_distributed_mode():
        dist.init_process_group("gloo")
        setup_for_distributed(dist.get_rank() == 0)


    def train_one_epoch(model, opt):
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
        print("epoch done")


    def banner():
        print("banner")


    def summary():
        print("summary")


    def on_event():
        print("event")


    def main():
        print("starting")
        banner()
        init_distributed_mode()
        model = DDP(nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            train_one_epoch(model, opt)
        summary()
        print("done")
    """)
    facts = ScriptFacts(cst.parse_module(src))
    silenced = {
        c.args[0].value.evaluated_value: facts.ranks.print_silenced(c)
        for c in facts.index.calls
        if isinstance(c.func, cst.Name) and c.func.value == "print" and c.args
        if isinstance(c.args[0].value, cst.SimpleString)
    }
    assert silenced == {
        "starting": False,  # before the setup, in its own function
        "banner": False,  # in a helper only called before the setup
        "epoch done": True,
        "summary": True,  # in a helper only called after it
        "event": True,  # a function this file never calls: taken to run later
        "done": True,
    }
    assert found(src, "DDP406") == []  # the prints before the setup are start-up messages of a distributed script


def test_print_silenced_through_a_local_module(tmp_path):
    utils = """
    import builtins


    def setup_for_distributed(is_master):
        builtin_print = builtins.print

        def print(*args, **kwargs):
            if is_master or kwargs.pop("force", False):
                builtin_print(*args, **kwargs)

        builtins.print = print


    def init_distributed_mode(args):
        import torch.distributed as dist

        dist.init_process_group("gloo")
        setup_for_distributed(dist.get_rank() == 0)
    """
    src = train('print("step", step)\n').replace("import shutil\n", "import shutil\n\nimport utils\n")
    src = src.replace('    dist.init_process_group("gloo")\n', "    utils.init_distributed_mode(None)\n")
    path = with_modules(tmp_path, src, utils=utils)
    assert [d for d in check_source(src, path=path) if d.code == "DDP406"] == []
    assert found(src, "DDP406")  # without the module, the print is on every rank


def test_logger_configured_on_rank0_only_is_left_alone():
    configs = {
        "handler added on rank 0": """
            logger = logging.getLogger("train")
            handler = logging.FileHandler("train.log")
            if rank == 0:
                logger.addHandler(handler)
                logger.setLevel(logging.INFO)
        """,
        "level per rank": """
            logger = logging.getLogger("train")
            if rank == 0:
                logger.addHandler(logging.FileHandler("train.log"))
            logger.setLevel(logging.INFO if rank == 0 else logging.WARN)
        """,
        "basicConfig on rank 0": """
            logger = logging.getLogger("train")
            if rank == 0:
                logging.basicConfig(filename="train.log", level=logging.INFO)
        """,
    }
    for name, config in configs.items():
        src = train(config + 'logger.info("loss %.3f", loss.item())\n')
        assert found(src, "DDP405") == [], name


def test_logs_and_prints_after_an_early_return_on_other_ranks():
    src = script("""
    def report(rank, epoch, loss):
        if rank != 0:
            return
        print(f"epoch {epoch} loss {loss:.3f}")
        with open("metrics.txt", "a") as f:
            f.write(f"{epoch} {loss}\\n")
        torch.save({"epoch": epoch}, "state.pt")
    """) + TRAIN.format(extra="    report(rank, 0, loss.item())")
    assert [d.code for d in check_source(src) if d.code.startswith("DDP4")] == []


# --------------------------------------------------------------------------- per-rank files
def test_per_rank_log_and_checkpoint_files_are_not_shared():
    src = train("""
        out = "runs"
        logging.basicConfig(filename=f"log_rank{rank}.txt", level=logging.INFO)
        handler = logging.FileHandler(os.path.join(out, f"train_{rank}.log"))
        log_file = f"{out}/events_{rank}.log"
        with open(log_file, "w") as f:
            f.write("start\\n")
        torch.save(model.module.state_dict(), f"{out}/shard_{rank}.pt")
        logging.info("loss %.3f", loss.item())
    """)
    assert [d.code for d in check_source(src) if d.code in ("DDP401", "DDP405")] == []


def test_tutorial_map_location_idiom_is_quiet():
    """The tutorial's idiom: under mp.spawn on one node the process index is the local rank."""
    src = script("""
        import torch.multiprocessing as mp


        def worker(rank, world_size):
            dist.init_process_group("gloo", rank=rank, world_size=world_size)
            model = DDP(nn.Linear(2, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(4, 2)).pow(2).mean()
                loss.backward()
                opt.step()
            if rank == 0:
                torch.save(model.state_dict(), "c.pt")
            dist.barrier()
            map_location = {"cuda:%d" % 0: "cuda:%d" % rank}
            model.load_state_dict(torch.load("c.pt", map_location=map_location))
            model.load_state_dict(torch.load("c.pt", map_location={"cuda:0": f"cuda:{rank}"}))


        if __name__ == "__main__":
            mp.spawn(worker, args=(2,), nprocs=2)
    """)
    assert [d.code for d in check_source(src) if d.code in ("DDP404", "DDP005", "DDP007", "DDP410")] == []


def test_map_location_by_the_global_rank_under_torchrun_is_the_local_rank():
    """Under torchrun `dist.get_rank()` is global: on a second node `cuda:{rank}` names no GPU."""
    src = train("""
        if rank == 0:
            torch.save(model.state_dict(), "c.pt")
        dist.barrier()
        model.load_state_dict(torch.load("c.pt", map_location={"cuda:0": f"cuda:{rank}"}))
    """)
    assert [d.code for d in found(src, "DDP005")] == ["DDP005"]
    assert 'map_location={"cuda:0": f"cuda:{LOCAL_RANK}"}' in fixed(src, "DDP005")


# --------------------------------------------------------------------------- DDP101 split
def test_collective_in_the_middle_of_a_guard_splits_the_block():
    src = train("""
        if rank == 0:
            torch.save(model.module.state_dict(), "c.pt")
            dist.barrier()

            # report it
            print("saved")
    """)
    [d] = found(src, "DDP101")
    assert d.fix == "unsafe"
    assert not fix_source(src, select=["DDP101"]).changed  # unsafe: only on request
    out = fixed(src, "DDP101", unsafe_fixes=True)
    assert (
        '    if rank == 0:\n        torch.save(model.module.state_dict(), "c.pt")\n'
        '    dist.barrier()\n\n    # report it\n    if rank == 0:\n        print("saved")\n'
    ) in out
    assert found(out, "DDP101") == []
    assert fixed(out, "DDP101", unsafe_fixes=True) == out


def test_collective_first_in_the_guard_leaves_it():
    src = train("""
        if rank == 0:
            dist.barrier()
            print("after")
    """)
    out = fixed(src, "DDP101", unsafe_fixes=True)
    assert '    dist.barrier()\n    if rank == 0:\n        print("after")\n' in out


def test_split_not_made_when_the_test_can_change_or_the_call_takes_data():
    changing = train("""
        done = False
        if rank == 0 and not done:
            done = True
            dist.barrier()
            print("x")
    """)
    with_data = train("""
        if rank == 0:
            t = torch.ones(1)
            dist.all_reduce(t)
            print(t)
    """)
    for src in (changing, with_data):
        [d] = found(src, "DDP101")
        assert d.fix == "none"


# --------------------------------------------------------------------------- DDP102
def test_exit_reported_once_and_its_remedy_is_quiet():
    src = train("""
        for epoch in range(3):
            for inner in range(2):
                loss = model(torch.randn(4, 2)).sum()
                if torch.isnan(loss):
                    break
                loss.backward()
            stop = torch.tensor(float(loss.item() < 0.1))
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            if stop.item():
                break
            flag = [loss.item() < 0.2]
            dist.broadcast_object_list(flag, src=0)
            if flag[0]:
                break
    """)
    diags = found(src, "DDP102")
    assert len(diags) == 1 and "`break`" in diags[0].message


def test_stop_decisions_become_agreements():
    src = train("""
        best, bad_epochs = float("inf"), 0
        for epoch in range(5):
            loss = model(torch.randn(4, 2)).pow(2).mean()
            if torch.isnan(loss):
                continue
            loss.backward()
            val_loss = loss.item()
            if val_loss < best:
                best, bad_epochs = val_loss, 0
            else:
                bad_epochs += 1
            if bad_epochs > 2:
                break
            if val_loss < 1e-3:
                break
    """)
    diags = found(src, "DDP102")
    assert [d.fix for d in diags] == ["safe", "safe", "safe"]
    out = fixed(src, "DDP102")
    assert (
        "        skip = torch.tensor(float(torch.isnan(loss)), device=device)\n"
        "        if DISTRIBUTED:\n"
        "            dist.all_reduce(skip, op=dist.ReduceOp.MAX)\n"
        "        if skip.item():\n"
        "            continue\n"
    ) in out
    assert "stop = torch.tensor(float(bad_epochs > 2), device=device)" in out
    assert "stop = torch.tensor(float(val_loss < 1e-3), device=device)" in out
    assert found(out, "DDP102") == []
    assert fixed(out, "DDP102") == out


def test_a_bool_of_a_test_becomes_an_agreement():
    """`if bool(loss == 0): continue`: `float(bool(x))` is exactly what `if` tests, whatever `x` is."""
    src = train("""
        for epoch in range(5):
            loss = model(torch.randn(4, 2)).pow(2).mean()
            if bool(loss == 0):
                continue
            loss.backward()
    """)
    [d] = found(src, "DDP102")
    assert d.fix == "safe"
    out = fixed(src, "DDP102")
    assert "skip = torch.tensor(float(bool(loss == 0)), device=device)\n" in out
    assert found(out, "DDP102") == []


def test_stop_agreement_keeps_the_plain_run():
    """Single process, the fixed loop leaves at the same step as the original."""
    body = """
    import torch
    import torch.nn as nn


    def run():
        torch.manual_seed(0)
        model = nn.Linear(1, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(16, 1)
        y = 3 * x + 2
        seen = []
        for step in range(200):
            loss = nn.functional.mse_loss(model(x), y)
            if loss.item() < 0.5:
                break
            loss.backward()
            opt.step()
            opt.zero_grad()
            seen.append(round(loss.item(), 6))
        return seen


    if __name__ == "__main__":
        print(run())
    """
    src = textwrap.dedent(body)
    out = fix_source(src, select=["DDP102"]).code
    assert "dist.all_reduce(stop, op=dist.ReduceOp.MAX)" in out
    before, after = {}, {}
    exec(compile(src, "before", "exec"), before)
    exec(compile(out, "after", "exec"), after)
    assert 0 < len(before["run"]()) < 200
    assert before["run"]() == after["run"]()


def test_rank_exits_and_unknown_shapes_are_reported_only():
    src = train("""
        for epoch in range(3):
            model(torch.randn(4, 2)).sum().backward()
            if rank == 0 and epoch > 1:
                break
            if step_ok(loss):
                break
    """)
    diags = found(src, "DDP102")
    assert [d.fix for d in diags] == ["none", "none"]  # the rank; a call of unknown result
    named = train("""
        for epoch in range(3):
            model(torch.randn(4, 2)).sum().backward()
            done = loss.item() < 0.1
            if done:
                break
    """)
    [d] = found(named, "DDP102")
    assert d.fix == "none"


def test_stop_agreement_under_spawn_and_nccl():
    spawned = script("""
    import torch.multiprocessing as mp


    def worker(rank, world_size):
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
        model = DDP(nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(4, 2)).pow(2).mean()
            if loss.item() < 0.01:
                break
            loss.backward()
            opt.step()


    if __name__ == "__main__":
        mp.spawn(worker, args=(2,), nprocs=2)
    """)
    out = fixed(spawned, "DDP102")
    assert "        if dist.is_initialized():\n            dist.all_reduce(stop, op=dist.ReduceOp.MAX)\n" in out
    nccl = spawned.replace('"gloo", rank', '"nccl", rank')
    [d] = found(nccl, "DDP102")
    assert d.fix == "none"  # a CPU flag cannot go through NCCL, and the script names no device


# --------------------------------------------------------------------------- DDP105
def test_scheduler_step_under_rank_guard():
    src = train("""
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
        if rank == 0:
            sched.step()
        sched.step()
    """)
    diags = found(src, "DDP105")
    assert len(diags) == 1 and "learning rate" in diags[0].message and diags[0].fix == "none"


# --------------------------------------------------------------------------- DDP401
def test_copy_of_a_saved_checkpoint_shares_its_guard():
    src = script("""
    def save_checkpoint(state, is_best, filename="checkpoint.pt"):
        torch.save(state, filename)
        if is_best:
            shutil.copyfile(filename, "model_best.pt")


    def main():
        dist.init_process_group("gloo")
        model = DDP(nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
            save_checkpoint(model.module.state_dict(), epoch == 1)
            torch.save(model.module.state_dict(), "tmp.pt")
            os.replace("tmp.pt", "last.pt")
    """)
    out = fixed(src, "DDP401")
    assert (
        "    if RANK == 0:\n        torch.save(state, filename)\n        if is_best:\n"
        '            shutil.copyfile(filename, "model_best.pt")\n'
    ) in out
    assert '        if RANK == 0:\n            torch.save(model.module.state_dict(), "tmp.pt")\n' in out
    assert '            os.replace("tmp.pt", "last.pt")\n' in out
    assert [d.message.split(" ")[0] for d in found(src, "DDP401")] == [
        "torch.save",
        "shutil.copyfile",
        "torch.save",
        "os.replace",
    ]


def test_copy_after_a_save_the_script_guards():
    src = train("""
        if rank == 0:
            torch.save(model.module.state_dict(), "c.pt")
        shutil.copy("c.pt", "backup.pt")
    """)
    out = fixed(src, "DDP401")
    assert '    if rank == 0:\n        shutil.copy("c.pt", "backup.pt")\n' in out


# --------------------------------------------------------------------------- DDP407
def test_wandb_chain_is_guarded_whole():
    src = train("""
        import wandb
        wandb.init(project="p")
        wandb.run.name = f"run-{step}"
        wandb.config.update({"lr": 0.1})
        wandb.log({"loss": loss.item()})
    """)
    out = fixed(src, "DDP407")
    assert (
        '    if rank == 0:\n        wandb.init(project="p")\n        wandb.run.name = f"run-{step}"\n'
        '        wandb.config.update({"lr": 0.1})\n        wandb.log({"loss": loss.item()})\n'
    ) in out
    assert found(out, "DDP407") == []


def test_wandb_chain_with_a_read_is_reported_whole_and_left_alone():
    src = train("""
        import wandb
        wandb.init(project="p")
        run_dir = wandb.run.dir
        wandb.log({"loss": loss.item()})
    """)
    diags = found(src, "DDP407")
    assert len(diags) == 3 and {d.fix for d in diags} == {"none"}
    assert not fix_source(src, select=["DDP407"]).changed


def test_uses_of_a_tracker_that_is_none_on_other_ranks():
    src = train("""
        from torch.utils.tensorboard import SummaryWriter
        import wandb
        writer = SummaryWriter("runs") if rank == 0 else None
        writer.add_scalar("loss", loss.item(), step)
        if writer is not None:
            writer.flush()
        experiment = wandb.init(project="p")
        experiment.config.update({"lr": 0.1})
    """)
    out = fixed(src, "DDP407")
    assert '    if rank == 0:\n        writer.add_scalar("loss", loss.item(), step)\n' in out
    assert "    if writer is not None:\n        writer.flush()\n" in out
    assert 'experiment = wandb.init(project="p") if rank == 0 else None' in out
    assert '    if rank == 0:\n        experiment.config.update({"lr": 0.1})\n' in out
    assert fixed(out, "DDP407") == out


# --------------------------------------------------------------------------- DDP409
EVAL = """
from torch.utils.data import DataLoader, SequentialSampler, TensorDataset
from torch.utils.data.distributed import DistributedSampler
data = TensorDataset(torch.randn(8, 2), torch.randint(0, 1, (8,)))
loader = DataLoader(data, sampler=DistributedSampler(data))
test_loader = DataLoader(data, sampler={test_sampler})
test_loss = 0.0
for x, y in test_loader:
    test_loss += nn.functional.mse_loss(model(x).squeeze(1), y.float(), reduction="sum").item()
{reduce}
if rank == 0:
    print(f"test loss {{test_loss / len(data):.4f}}")
"""


def test_eval_metric_of_an_unsharded_loader_is_quiet():
    src = train(EVAL.format(test_sampler="SequentialSampler(data)", reduce=""))
    assert found(src, "DDP409") == []
    sharded = train(EVAL.format(test_sampler="DistributedSampler(data)", reduce=""))
    assert len(found(sharded, "DDP409")) == 1


def test_eval_metric_reduced_before_it_is_printed_is_quiet(tmp_path):
    packed = EVAL.format(
        test_sampler="DistributedSampler(data)",
        reduce="stats = torch.tensor([test_loss])\ndist.all_reduce(stats)\ntest_loss = stats.item()",
    )
    assert found(train(packed), "DDP409") == []
    utils = """
    import torch.distributed as dist


    def reduce_value(value):
        dist.all_reduce(value)
        return value
    """
    helper = EVAL.format(
        test_sampler="DistributedSampler(data)", reduce="test_loss = utils.reduce_value(torch.tensor(test_loss))"
    )
    src = train(helper).replace("import shutil\n", "import shutil\n\nimport utils\n")
    path = with_modules(tmp_path, src, utils=utils)
    assert [d for d in check_source(src, path=path) if d.code == "DDP409"] == []


# --------------------------------------------------------------------------- DDP410
def test_save_in_a_helper_then_load_on_every_rank():
    src = script("""
    def save_checkpoint(model, path):
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), path)
    """) + TRAIN.format(
        extra="""    ckpt_path = "c.pt"
    save_checkpoint(model, ckpt_path)
    model.module.load_state_dict(torch.load(ckpt_path, map_location="cpu"))"""
    )
    [d] = found(src, "DDP410")
    out = fixed(src, "DDP410")
    assert "    if DISTRIBUTED:\n        dist.barrier()\n    model.module.load_state_dict(torch.load(ckpt_path" in out
    assert found(out, "DDP410") == []


def test_save_and_load_through_a_local_module(tmp_path):
    utils = """
    import torch
    import torch.distributed as dist


    def save_on_master(obj, path):
        if dist.get_rank() == 0:
            torch.save(obj, path)


    def load_weights(model, path):
        model.load_state_dict(torch.load(path, map_location="cpu"))
    """
    src = train("""
        utils.save_on_master(model.module.state_dict(), "c.pt")
        utils.load_weights(model.module, "c.pt")
    """).replace("import shutil\n", "import shutil\n\nimport utils\n")
    path = with_modules(tmp_path, src, utils=utils)
    diags = [d for d in check_source(src, path=path) if d.code == "DDP410"]
    assert len(diags) == 1 and "utils.load_weights()" in diags[0].message
    out = fix_source(src, path=path, select=["DDP410"]).code
    assert '    if DISTRIBUTED:\n        dist.barrier()\n    utils.load_weights(model.module, "c.pt")' in out
    unrelated = src.replace('utils.load_weights(model.module, "c.pt")', "utils.load_weights(model.module, other)")
    assert [d for d in check_source(unrelated, path=path) if d.code == "DDP410"] == []


@pytest.mark.parametrize("code", ["DDP401", "DDP405", "DDP406", "DDP407"])
def test_guards_are_idempotent(code):
    src = train("""
        import wandb
        logging.basicConfig(filename="train.log")
        wandb.init(project="p")
        wandb.log({"loss": loss.item()})
        logging.info("step %d", step)
        print(step)
        with open("metrics.txt", "w") as f:
            f.write("x")
            print("written")
        torch.save(model.module.state_dict(), "c.pt")
    """)
    once = fixed(src, code)
    assert fixed(once, code) == once
    everything = fixed(src)
    assert fixed(everything) == everything
    assert _nested_guards(everything) == []


def test_image_and_audio_writers_are_saves_too():
    for call in ('imageio.mimsave("train.gif", frames)', 'cv2.imwrite("sample.png", frame)'):
        module = call.split(".")[0]
        src = f"import {module}\n" + train("frames = []\nframe = None", tail=call + "\n")
        [d] = found(src, "DDP401")
        assert d.message.startswith(call.split("(")[0]), d.message
        out = fixed(src, "DDP401")
        assert f"if RANK == 0:\n    {call}\n" in out


def test_ddp409_fix_reduces_the_total_not_a_same_named_attribute():
    src = ATTR_TOTAL
    out = fix_source(src).code
    assert "    global_total = reduce_over_ranks(total)\n" in out
    assert '{global_total / len(ds):.4f} {stats.total}", sep=" ")' in out


ATTR_TOTAL = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Stats:
    total = 0


ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(ds, batch_size=8, shuffle=True)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
stats = Stats()
for epoch in range(2):
    total = 0.0
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(x)
    print(f"epoch {epoch} loss {total / len(ds):.4f} {stats.total}", sep=" ")
"""
