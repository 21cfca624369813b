"""Shapes of already-distributed and single-GPU scripts the rank rules used to misread: prints that
are not duplicated output, guards the detector did not know, writes hidden in the script's own
modules, and exits and totals the ranks already agree on. Every script here is self-written."""

from __future__ import annotations

import textwrap

import libcst as cst

from ddpfix import check_source, fix_source
from ddpfix.analysis import ScriptFacts

HEAD = """\
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
"""


def script(body: str) -> str:
    return HEAD + textwrap.dedent(body)


def found(src: str, code: str, **kw) -> list:
    return [d for d in check_source(src, **kw) if d.code == code]


def lines(src: str, code: str, **kw) -> list[int]:
    return [d.line for d in found(src, code, **kw)]


def line_of(src: str, text: str) -> int:
    return next(i for i, line in enumerate(src.splitlines(), 1) if text in line)


def write(tmp_path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


# --------------------------------------------------------------------------- DDP406: what repeats
DISTRIBUTED_PRINTS = """
def evaluate(model):
    with torch.no_grad():
        loss = model(torch.randn(4, 2)).pow(2).mean()
    print(f"val loss {loss.item():.4f}")


def main():
    dist.init_process_group("gloo")
    print("Initializing a new model from scratch")
    model = DDP(nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for step in range(3):
            loss = model(torch.randn(4, 2)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"step {step}: loss {loss.item():.4f}")
        evaluate(model)
    print("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def test_a_distributed_script_hears_only_about_prints_that_repeat_with_training():
    src = script(DISTRIBUTED_PRINTS)
    assert lines(src, "DDP406") == [line_of(src, 'print(f"val loss'), line_of(src, 'print(f"step {step}')]
    out = fix_source(src, select=["DDP406"]).code
    assert 'print("Initializing a new model from scratch")\n' in out and '    print("done")\n' in out


def test_a_converted_script_still_gets_every_print_guarded():
    src = textwrap.dedent("""
        import torch
        import torch.nn as nn

        print("Initializing a new model from scratch")
        model = nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            loss = model(torch.randn(4, 2)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print("done")
    """)
    assert lines(src, "DDP406") == [line_of(src, "Initializing"), line_of(src, '"done"')]


def test_an_error_message_before_giving_up_is_left_alone():
    src = textwrap.dedent("""
        import sys

        import torch
        import torch.nn as nn


        def check(header):
            if header != 20240520:
                print("ERROR: magic number mismatch in the data file")
                print("---> HINT: re-run the preprocessing")
                exit(1)
            if header < 0:
                print("header is negative")
                raise ValueError(header)
            if header == 1:
                print("nothing to do")
                sys.exit(0)


        check(20240520)
        model = nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
    """)
    assert lines(src, "DDP406") == [line_of(src, "nothing to do")]  # exit(0) is a normal ending


def test_a_line_whose_text_differs_per_rank_is_left_alone():
    src = script("""
    def main():
        dist.init_process_group("gloo")
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
        model = DDP(nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
            print(f"using device: {device}")
            print(f"step {step}")
    """)
    assert lines(src, "DDP406") == [line_of(src, 'print(f"step {step}")')]


# --------------------------------------------------------------------------- mp.spawn's parent
SPAWNED = """
import torch.multiprocessing as mp


def banner():
    print("CUDA available:", torch.cuda.is_available())


def worker(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    model = DDP(nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
        print(f"loss at step {step}")
    dist.destroy_process_group()


if __name__ == "__main__":
    print("PyTorch version:", torch.__version__)
    banner()
    {launch}
"""


def _launcher(src: str) -> dict[str, bool]:
    facts = ScriptFacts(cst.parse_module(src))
    out = {}
    for call in facts.index.calls:
        if isinstance(call.func, cst.Name) and call.func.value == "print":
            first = call.args[0].value
            text = first.evaluated_value if isinstance(first, cst.SimpleString) else cst.Module([]).code_for_node(first)
            out[text] = facts.ranks.in_launcher(call)
    return out


def test_code_of_the_process_that_spawns_the_ranks_runs_once():
    src = script(SPAWNED.replace("{launch}", "mp.spawn(worker, args=(2,), nprocs=2)"))
    assert _launcher(src) == {"PyTorch version:": True, "CUDA available:": True, 'f"loss at step {step}"': False}
    assert lines(src, "DDP406") == [line_of(src, "loss at step")]


def test_a_main_block_that_also_runs_the_worker_per_rank_is_not_the_launcher():
    launch = (
        'if "LOCAL_RANK" in os.environ:\n        worker(int(os.environ["LOCAL_RANK"]), 2)\n'
        "    else:\n        mp.spawn(worker, args=(2,), nprocs=2)"
    )
    src = script(SPAWNED.replace("{launch}", launch))
    assert not any(_launcher(src).values())


# --------------------------------------------------------------------------- guards the detector knows
def test_a_node_rank_test_is_a_rank_test():
    src = script("""
    import argparse

    from torch.utils.tensorboard import SummaryWriter


    def main(gpu, args):
        rank = args.nr * args.gpus + gpu
        dist.init_process_group("gloo", rank=rank, world_size=args.world_size)
        model = DDP(nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        writer = None
        if args.nr == 0:
            writer = SummaryWriter()
        for step in range(3):
            loss = model(torch.randn(4, 2)).sum()
            loss.backward()
            opt.step()
            if args.nr == 0:
                writer.add_scalar("loss", loss.item(), step)
                print(f"step {step}")
    """)
    facts = ScriptFacts(cst.parse_module(src))
    test = next(i.test for i in facts.index.ifs if "args.nr" in cst.Module([]).code_for_node(i.test))
    assert facts.ranks.takes(test) == (True, None)  # node 0's other processes take it too
    assert found(src, "DDP406") == [] and found(src, "DDP407") == []


def test_a_setting_the_script_may_overwrite_at_run_time_is_not_a_constant():
    body = """
    import wandb

    wandb_log = False
    {config}
    dist.init_process_group("gloo")
    master_process = dist.get_rank() == 0
    if wandb_log and master_process:
        wandb.init(project="p")
    model = DDP(nn.Linear(2, 1))
    """
    configured = script(body.replace("{config}", 'exec(open("configurator.py").read())'))
    assert found(configured, "DDP407") == []
    facts = ScriptFacts(cst.parse_module(configured))
    test = next(i.test for i in facts.index.ifs if "wandb_log" in cst.Module([]).code_for_node(i.test))
    assert facts.ranks.is_rank_test(test)
    fixed = script(body.replace("{config}", ""))
    facts = ScriptFacts(cst.parse_module(fixed))
    test = next(i.test for i in facts.index.ifs if "wandb_log" in cst.Module([]).code_for_node(i.test))
    assert facts.ranks.takes(test) == (False, False)  # a constant False: no rank takes it


# --------------------------------------------------------------------------- the script's own package
DIST_UTILS = """
import builtins

import torch.distributed as dist


def setup_for_distributed(is_master):
    builtin_print = builtins.print

    def print(*args, **kwargs):
        if is_master or kwargs.pop("force", False):
            builtin_print(*args, **kwargs)

    builtins.print = print


def init_distributed_mode(args):
    dist.init_process_group("gloo")
    setup_for_distributed(dist.get_rank() == 0)
"""

PACKAGE_SCRIPT = """
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from train_utils import init_distributed_mode, dist


def main(args):
    init_distributed_mode(args)
    print(args)
    model = DDP(nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), "init.pt")
    dist.barrier()
    model.module.load_state_dict(torch.load("init.pt"))
    for epoch in range(2):
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
        print(f"epoch {epoch}")


if __name__ == "__main__":
    main(None)
"""


def test_names_a_package_hands_on_are_read_in_the_module_that_defines_them(tmp_path):
    write(
        tmp_path,
        {
            "train_utils/__init__.py": "from .distributed_utils import init_distributed_mode, dist\n",
            "train_utils/distributed_utils.py": DIST_UTILS,
            "train.py": PACKAGE_SCRIPT,
        },
    )
    src = (tmp_path / "train.py").read_text()
    path = str(tmp_path / "train.py")
    diagnostics = check_source(src, path=path)
    assert [d.code for d in diagnostics if d.code in ("DDP406", "DDP410", "DDP001")] == []
    facts = ScriptFacts(cst.parse_module(src), path=path)
    barrier = next(c for c in facts.index.calls if cst.Module([]).code_for_node(c.func) == "dist.barrier")
    assert facts.ranks.collective_op(barrier) == "barrier"  # `dist` is torch.distributed, through the package
    assert fix_source(src, path=path, select=["DDP406", "DDP410"]).changed is False


# --------------------------------------------------------------------------- one-line suites
OPTIONAL_IMPORT = """
import torch
import torch.nn as nn

try: from sklearn.manifold import TSNE; HAS_SK = True
except: HAS_SK = False; print('Please install sklearn for layer visualization')

model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(4, 2)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss.item())
    if HAS_SK:
        pass
"""


def test_a_print_on_a_one_line_suite_that_binds_names_is_reported_not_guarded():
    src = textwrap.dedent(OPTIONAL_IMPORT)
    out = fix_source(src, select=["DDP406"])
    by_line = {d.line: d for d in out.diagnostics if d.code == "DDP406"}
    assert by_line[line_of(src, "except:")].fix == "none"
    assert by_line[line_of(src, "print(step")].applied  # the other prints keep their fix
    assert "try: from sklearn.manifold import TSNE; HAS_SK = True\nexcept: HAS_SK = False; print(" in out.code


def test_a_print_on_its_own_line_in_an_except_is_guarded_alone():
    src = textwrap.dedent(OPTIONAL_IMPORT).replace(
        "try: from sklearn.manifold import TSNE; HAS_SK = True\n"
        "except: HAS_SK = False; print('Please install sklearn for layer visualization')\n",
        "try:\n    from sklearn.manifold import TSNE\n    HAS_SK = True\nexcept ImportError:\n"
        "    HAS_SK = False\n    print('Please install sklearn for layer visualization')\n",
    )
    out = fix_source(src, select=["DDP406"]).code
    assert "except ImportError:\n    HAS_SK = False\n    if RANK == 0:\n        print('Please install" in out


def test_a_one_line_suite_that_binds_nothing_is_guarded_whole():
    src = textwrap.dedent(OPTIONAL_IMPORT).replace(
        "    print(step, loss.item())\n", "    if step % 2 == 0: print(step, loss.item())\n"
    )
    out = fix_source(src, select=["DDP406"]).code
    assert "    if RANK == 0:\n        if step % 2 == 0: print(step, loss.item())\n" in out


# --------------------------------------------------------------------------- DDP102, DDP105, DDP409
def test_a_counter_restored_from_a_checkpoint_is_not_this_ranks_data():
    src = script("""
    dist.init_process_group("gloo")
    model = DDP(nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    iter_num, best_val_loss = 0, 1e9
    if os.path.exists("ckpt.pt"):
        checkpoint = torch.load("ckpt.pt")
        iter_num = checkpoint["iter_num"]
    while True:
        loss = model(torch.randn(4, 2)).pow(2).mean()
        if loss.item() < best_val_loss:
            best_val_loss = loss.item()
            checkpoint = {"iter_num": iter_num, "best_val_loss": best_val_loss}
        if iter_num == 0 and os.environ.get("EVAL_ONLY"):
            break
        loss.backward()
        opt.step()
        iter_num += 1
        if iter_num > 10:
            break
        if best_val_loss < 0.01:
            break
    """)
    assert lines(src, "DDP102") == [line_of(src, "if best_val_loss < 0.01:") + 1]


def test_a_reference_backward_before_the_wrap_is_left_alone():
    body = """
    dist.init_process_group("gloo")
    master_process = dist.get_rank() == 0
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    {first}
    model = DDP(model)
    {second}
    for step in range(3):
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
    """
    reference = "if master_process:\n        model(torch.randn(4, 2)).sum().backward()\n        opt.zero_grad()"
    before = script(body.replace("{first}", reference).replace("{second}", ""))
    assert found(before, "DDP105") == []
    after = script(body.replace("{first}", "").replace("{second}", reference))
    assert lines(after, "DDP105") == [line_of(after, "if master_process:") + 1]


SHARDED = """
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
rank = dist.get_rank()
ds = TensorDataset(torch.randn(32, 2), torch.randn(32, 1))
loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds))
model = DDP(nn.Linear(2, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
global_step, epoch_loss, seen = 0, 0.0, 0
for x, y in loader:
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    global_step += 1
    seen += len(x)
    reduced = loss.detach().clone()
    dist.all_reduce(reduced)
    reduced /= dist.get_world_size()
    epoch_loss += reduced.item()
if rank == 0:
    print(f"step {global_step}: mean loss {epoch_loss / global_step:.4f}")
    print(f"samples seen: {seen}")
"""


def test_step_counts_and_sums_of_reduced_values_are_global():
    src = script(SHARDED)
    diagnostics = found(src, "DDP409")
    assert [d.line for d in diagnostics] == [line_of(src, "samples seen")]
    assert diagnostics[0].message.startswith("seen summed over this rank's shard only")


# --------------------------------------------------------------------------- writes in the script's modules
TRAINER = """
import logging
import os

import torch
from torch.utils.tensorboard import SummaryWriter

from utils import save_checkpoint


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.writer = SummaryWriter()
        logging.basicConfig(filename=os.path.join(self.writer.log_dir, "training.log"), level=logging.INFO)

    def fit(self, batches):
        for step, (x, y) in enumerate(batches):
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.writer.add_scalar("loss", loss.item(), step)
        save_checkpoint(self.model.state_dict(), os.path.join(self.writer.log_dir, "last.pt"))
"""

UTILS = """
import torch
import torch.distributed as dist


def save_checkpoint(state, filename):
    torch.save(state, filename)


def save_on_master(state, filename):
    if dist.get_rank() == 0:
        torch.save(state, filename)
"""

RUN = """
import torch
import torch.nn as nn

from trainer import Trainer


def main():
    model = nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [(torch.randn(4, 2), torch.randn(4, 1)) for _ in range(3)]
    trainer = Trainer(model, optimizer)
    trainer.fit(batches)


if __name__ == "__main__":
    main()
"""


def test_writes_inside_the_scripts_own_trainer_class_are_reported_at_its_calls(tmp_path):
    write(tmp_path, {"trainer.py": TRAINER, "utils.py": UTILS, "run.py": RUN})
    src = (tmp_path / "run.py").read_text()
    path = str(tmp_path / "run.py")
    tracker, save = found(src, "DDP407", path=path), found(src, "DDP401", path=path)
    assert [(d.line, d.fix) for d in tracker] == [(line_of(src, "trainer = Trainer("), "none")]
    assert "Trainer() creates an experiment tracker on every rank (trainer.py:15)" in tracker[0].message
    assert "cross-file edits are off" in tracker[0].message
    log = found(src, "DDP405", path=path)
    assert [(d.line, d.fix) for d in log] == [(line_of(src, "trainer = Trainer("), "none")]
    assert "Trainer() opens a file for writing on every rank (trainer.py:16)" in log[0].message
    assert [(d.line, d.fix) for d in save] == [(line_of(src, "trainer.fit("), "none")]
    assert "trainer.fit() runs torch.save on every rank (utils.py:7)" in save[0].message
    out = fix_source(src, path=path).code
    assert "    trainer = Trainer(model, optimizer)\n    trainer.fit(batches)\n" in out  # the fix is the module's


def test_a_save_the_module_guards_itself_is_not_reported(tmp_path):
    guarded = TRAINER.replace("from utils import save_checkpoint", "from utils import save_on_master").replace(
        "save_checkpoint(", "save_on_master("
    )
    guarded = guarded.replace("        self.writer = SummaryWriter()\n", "        self.writer = None\n")
    guarded = guarded.replace('os.path.join(self.writer.log_dir, "training.log")', 'f"train_rank{model.rank}.log"')
    write(tmp_path, {"trainer.py": guarded, "utils.py": UTILS, "run.py": RUN})
    src = (tmp_path / "run.py").read_text()
    path = str(tmp_path / "run.py")
    assert [d.code for d in check_source(src, path=path) if d.code in ("DDP401", "DDP405", "DDP407")] == []


def test_the_trainer_module_on_its_own_gets_findings_and_no_edits(tmp_path):
    write(tmp_path, {"trainer.py": TRAINER, "utils.py": UTILS})
    src = (tmp_path / "trainer.py").read_text()
    path = str(tmp_path / "trainer.py")
    result = fix_source(src, path=path)
    assert not result.changed
    assert line_of(src, "SummaryWriter()") in [d.line for d in result.diagnostics if d.code == "DDP407"]
