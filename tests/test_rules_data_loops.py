"""Where the data rules find a training loader's batches and epochs: batches drawn with `next()`,
loaders handed to the script's own modules or to an ignite trainer, `while` epoch loops, `for _ in`
epoch loops; and the near misses on already-distributed scripts (DDP204, DDP207, DDP208, DDP420)."""

from __future__ import annotations

import ast
import textwrap

from ddpfix import check_source, fix_source
from ddpfix.analysis.loader_params import EPOCHS, SETS_EPOCH, TRAINS_ON, ast_loader_uses

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


# --------------------------------------------------------------------------- batches drawn with next()
DRAWN = """
def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = DataLoader(ds, batch_size=4, shuffle=True)
    model = DDP(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
{loop}
"""


def test_ddp201_batches_drawn_from_an_iterator_get_the_sampler_and_set_epoch_before_iter():
    loop = """
    for epoch in range(3):
        it = iter(loader)
        step = 0
        while step < len(loader):
            x, y = next(it)
            step += 1
            model(x).sum().backward()
            opt.step()
"""
    out = fixed(script(DRAWN.format(loop=loop)), "DDP201")
    assert "sampler = DistributedSampler(ds) if DISTRIBUTED else None" in out
    assert "    for epoch in range(3):\n        if sampler is not None:\n            sampler.set_epoch(epoch)\n" in out
    assert out.index("sampler.set_epoch(epoch)") < out.index("it = iter(loader)")


def test_ddp201_iterator_made_once_gets_the_sampler_but_no_set_epoch():
    loop = """
    it = iter(loader)
    while True:
        x, y = next(it)
        model(x).sum().backward()
        opt.step()
"""
    out = fixed(script(DRAWN.format(loop=loop)), "DDP201")
    assert "sampler=sampler" in out and "set_epoch" not in out


def test_an_iterator_nobody_trains_on_is_not_a_training_loader():
    loop = """
    it = iter(loader)
    x, y = next(it)
    print(x.shape)
"""
    assert found(script(DRAWN.format(loop=loop)), "DDP201") == []


INFINITE = """
class Stream:
    \"\"\"Batches without end: a sampler that draws with replacement, restarted when it runs out.\"\"\"

    def __init__(self, dataset, **kwargs):
        sampler = torch.utils.data.RandomSampler(dataset, {draw})
        self.loader = DataLoader(dataset, sampler=sampler, **kwargs)
        self.batches = iter(self.loader)

    def next(self):
        try:
            return next(self.batches)
        except StopIteration:
            self.batches = iter(self.loader)
            return next(self.batches)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    stream = Stream(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4)
    model = DDP(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    while step < 100:
        x, y = stream.next()
        model(x).sum().backward()
        opt.step()
        step += 1
"""


def test_ddp201_stream_drawn_with_replacement_gets_a_seed_per_rank():
    src = script(INFINITE.format(draw="replacement=True, num_samples=10**9"))
    [d] = found(src, "DDP201")
    assert d.fix == "safe" and "its own random stream" in d.message
    out = fixed(src, "DDP201")
    assert (
        "sampler = torch.utils.data.RandomSampler(dataset, replacement=True, num_samples=10**9, "
        "generator=torch.Generator().manual_seed(torch.initial_seed() + RANK) if DISTRIBUTED else None)\n"
    ) in out
    assert "DistributedSampler(dataset" not in out and "set_epoch" not in out
    assert fixed(out, "DDP201") == out


def test_ddp201_stream_with_its_own_generator_or_an_unknown_replacement_is_reported_only():
    for draw, words in (
        ("replacement=True, generator=torch.Generator().manual_seed(1)", "generator of its own"),
        ("replacement=args.replace", "replacement=args.replace"),
    ):
        src = script(INFINITE.format(draw=draw))
        [d] = found(src, "DDP201")
        assert d.fix == "none" and words in d.message, draw
        assert fixed(src, "DDP201") == src


def test_ddp201_stream_without_replacement_gets_a_distributed_sampler():
    out = fixed(script(INFINITE.format(draw="replacement=False")), "DDP201")
    assert "sampler = DistributedSampler(dataset) if DISTRIBUTED else torch.utils.data.RandomSampler(" in out


PER_PATH = """
def main(distributed):
    if distributed:
        dist.init_process_group("gloo")
    dataset = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    if distributed:
        train_sampler = torch.utils.data.distributed.DistributedSampler(dataset)
    else:
        train_sampler = torch.utils.data.RandomSampler(dataset)
    loader = DataLoader(dataset, batch_size=4, sampler=train_sampler)
    model = nn.Linear(4, 1)
    if distributed:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if distributed:
            train_sampler.set_epoch(epoch)
        for x, y in loader:
            model(x).sum().backward()
            opt.step()
"""


def test_ddp201_a_sampler_picked_per_path_by_the_script_is_left_alone():
    """`if args.distributed: DistributedSampler(...) else: RandomSampler(...)`: the plain sampler is
    the single-process path's, not a loader that samples everything on every rank."""
    assert found(script(PER_PATH), "DDP201") == []
    # with no DistributedSampler on any path, the RandomSampler is the finding
    only_random = PER_PATH.replace(
        "train_sampler = torch.utils.data.distributed.DistributedSampler(dataset)",
        "train_sampler = torch.utils.data.RandomSampler(dataset)",
    )
    [d] = found(script(only_random), "DDP201")
    assert "samples the whole dataset on every rank" in d.message


# --------------------------------------------------------------------------- epoch loops: while, `_`
SAMPLED = """
def main():
    dist.init_process_group("gloo")
    ds = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=4, sampler=sampler)
    model = DDP(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
{loop}
"""
BATCHES = """
        for x, y in loader:
            model(x).sum().backward()
            opt.step()
"""


def test_ddp204_for_underscore_gets_a_named_epoch_variable():
    src = script(SAMPLED.format(loop="    for _ in range(3):" + BATCHES))
    [d] = found(src, "DDP204")
    assert d.fix == "safe"
    out = fixed(src, "DDP204")
    assert "    for epoch in range(3):\n        sampler.set_epoch(epoch)\n        for x, y in loader:\n" in out
    assert fixed(out, "DDP204") == out


def test_ddp204_for_underscore_read_in_the_body_is_reported_without_a_fix():
    body = BATCHES.replace("opt.step()", "opt.step()\n        print(_)")
    src = script(SAMPLED.format(loop="    for _ in range(3):" + body))
    [d] = found(src, "DDP204")
    assert d.fix == "none" and "no epoch variable" in d.message


STEP_LOOP = """
    step = 0
    while {test}:
        for x, y in loader:
            model(x).sum().backward()
            opt.step()
            step += 1
            if step >= 10:
                break
{tail}"""


def test_ddp204_a_while_loop_counting_steps_gets_a_count_of_its_passes():
    src = script(SAMPLED.format(loop=STEP_LOOP.format(test="step < 10", tail="")))
    [d] = found(src, "DDP204")
    assert d.fix == "safe"
    out = fixed(src, "DDP204")
    assert "    epoch = 0\n    while step < 10:\n        sampler.set_epoch(epoch)\n        for x, y in loader:\n" in out
    assert "                break\n        epoch += 1\n\n" in out  # last in the loop's body: after the pass
    assert fixed(out, "DDP204") == out


def test_ddp204_a_while_true_loop_left_by_a_return_gets_the_count_too():
    tail = "        if step >= 10:\n            return\n"
    out = fixed(script(SAMPLED.format(loop=STEP_LOOP.format(test="True", tail=tail))), "DDP204")
    assert "    epoch = 0\n    while True:\n        sampler.set_epoch(epoch)\n" in out
    assert "            return\n        epoch += 1\n" in out


def test_ddp204_a_while_loop_with_a_continue_of_its_own_is_reported_without_a_fix():
    # the continue would skip a count at the end of the body: the same epoch twice
    tail = "        if step < 3:\n            continue\n        print(step)\n"
    src = script(SAMPLED.format(loop=STEP_LOOP.format(test="step < 10", tail=tail)))
    [d] = found(src, "DDP204")
    assert d.fix == "none" and "no epoch variable" in d.message
    assert "epoch" not in fixed(src, "DDP204").split("opt = ")[1]


def test_ddp204_a_continue_of_the_inner_loop_does_not_stop_the_count():
    src = script(SAMPLED.format(loop=STEP_LOOP.format(test="step < 10", tail="")))
    src = src.replace(
        "            step += 1\n", "            step += 1\n            if step == 2:\n                continue\n"
    )
    assert "        epoch += 1\n" in fixed(src, "DDP204")


def test_ddp204_the_name_epoch_taken_gives_another():
    src = script(SAMPLED.format(loop="    epoch = 7\n    for _ in range(3):" + BATCHES))
    out = fixed(src, "DDP204")
    assert "    for epoch_2 in range(3):\n        sampler.set_epoch(epoch_2)\n" in out


def test_ddp201_for_underscore_epoch_loop_is_renamed_once_for_two_loaders():
    src = script("""
        def main():
            dist.init_process_group("gloo")
            a = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=4, shuffle=True)
            b = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=4, shuffle=True)
            model = DDP(nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for _ in range(2):
                for x, y in a:
                    model(x).sum().backward()
                    opt.step()
                for x, y in b:
                    model(x).sum().backward()
                    opt.step()
        """)
    out = fixed(src, "DDP201")
    assert "    for epoch in range(2):\n" in out and "epoch_2" not in out
    assert out.count(".set_epoch(epoch)") == 2


def test_ddp204_while_epoch_loop_gets_set_epoch_first_thing():
    loop = "    epoch = 0\n    while epoch < 3:" + BATCHES + "        epoch += 1\n"
    out = fixed(script(SAMPLED.format(loop=loop)), "DDP204")
    assert "    while epoch < 3:\n        sampler.set_epoch(epoch)\n        for x, y in loader:\n" in out


def test_ddp204_while_loop_without_a_clear_counter_counts_its_passes():
    loop = "    done = False\n    while not done:" + BATCHES + "        done = True\n"
    src = script(SAMPLED.format(loop=loop))
    [d] = found(src, "DDP204")
    assert d.fix == "safe"
    assert "    epoch = 0\n    while not done:\n        sampler.set_epoch(epoch)\n" in fixed(src, "DDP204")
    # a counter stepped inside the batch loop counts steps, not epochs: the passes get their own
    loop = "    step = 0\n    while step < 30:" + BATCHES.replace("opt.step()", "opt.step()\n            step += 1")
    out = fixed(script(SAMPLED.format(loop=loop)), "DDP204")
    assert "sampler.set_epoch(epoch)" in out and "set_epoch(step)" not in out


def test_ddp204_set_epoch_through_the_loader_passed_to_a_training_function_is_recognised():
    # the loader comes from a factory with an inline sampler, and the function that runs the epochs
    # sets the epoch through its own parameter name
    src = script("""
        def make_loader(ds):
            return DataLoader(ds, batch_size=4, shuffle=False, sampler=DistributedSampler(ds))


        def fit(model, opt, train_loader, epochs):
            for epoch in range(epochs):
                if isinstance(train_loader.sampler, DistributedSampler):
                    train_loader.sampler.set_epoch(epoch)
                for x, y in train_loader:
                    model(x).sum().backward()
                    opt.step()


        def main():
            dist.init_process_group("gloo")
            loader = make_loader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)))
            model = DDP(nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            fit(model, opt, train_loader=loader, epochs=2)
        """)
    assert found(src, "DDP204") == []
    without = src.replace(
        "        if isinstance(train_loader.sampler, DistributedSampler):\n"
        "            train_loader.sampler.set_epoch(epoch)\n",
        "",
    )
    [d] = found(without, "DDP204")
    out = fixed(without, "DDP204")
    assert without != src and d.fix == "safe"
    assert "    for epoch in range(epochs):\n        train_loader.sampler.set_epoch(epoch)\n" in out


# --------------------------------------------------------------------------- loaders handed to the script's modules
TRAINER_MODULE = """\
import torch


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def train(self, loader, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                loss = (self.model(x) - y).pow(2).mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
"""
RUN = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from trainer import Trainer


def main():
    ds = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    train_loader = DataLoader(ds, batch_size=4, shuffle=True)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    trainer = Trainer(model, optimizer)
    trainer.train(train_loader, 2)


if __name__ == "__main__":
    main()
"""


def test_ddp201_loader_trained_by_a_class_of_another_module_gets_its_sampler_here(tmp_path):
    (tmp_path / "trainer.py").write_text(TRAINER_MODULE)
    path = str(tmp_path / "run.py")
    [d] = found(RUN, "DDP201", path=path)
    assert d.fix == "safe"
    assert "Trainer.train() in trainer.py runs the epochs" in d.message
    assert "call train_loader.sampler.set_epoch(epoch)" in d.message
    out = fix_source(RUN, path=path, select=["DDP001", "DDP201"]).code
    assert "    train_sampler = DistributedSampler(ds) if DISTRIBUTED else None\n" in out
    assert "shuffle=(train_sampler is None), sampler=train_sampler)" in out
    # once it has its sampler, the missing set_epoch over there stays reported, without a fix
    [e] = found(out, "DDP204", path=path)
    assert e.fix == "none" and "Trainer.train() in trainer.py" in e.message


def test_ddp201_module_that_sets_the_epoch_itself_gets_the_plain_message(tmp_path):
    (tmp_path / "trainer.py").write_text(
        TRAINER_MODULE.replace(
            "        for epoch in range(epochs):\n",
            "        for epoch in range(epochs):\n"
            "            if hasattr(loader.sampler, 'set_epoch'):\n"
            "                loader.sampler.set_epoch(epoch)\n",
        )
    )
    path = str(tmp_path / "run.py")
    [d] = found(RUN, "DDP201", path=path)
    assert "runs the epochs" not in d.message and d.fix == "safe"


def test_ddp201_loader_trained_through_a_loggers_iterator_in_a_package(tmp_path):
    """torchvision-reference style: a package re-exports `train_one_epoch`, which iterates
    `metric_logger.log_every(data_loader, print_freq, header)`."""
    pkg = tmp_path / "train_utils"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .engine import train_one_epoch\n")
    (pkg / "engine.py").write_text(
        textwrap.dedent("""
        class MetricLogger:
            def log_every(self, iterable, print_freq, header=None):
                for i, obj in enumerate(iterable):
                    yield obj


        def train_one_epoch(model, optimizer, data_loader, epoch, print_freq=10):
            metric_logger = MetricLogger()
            for x, y in metric_logger.log_every(data_loader, print_freq, f"Epoch: [{epoch}]"):
                loss = (model(x) - y).pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """)
    )
    run = textwrap.dedent("""
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        from train_utils import train_one_epoch


        def main():
            ds = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
            train_loader = DataLoader(ds, batch_size=4, shuffle=True)
            model = nn.Linear(4, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(2):
                train_one_epoch(model, optimizer, train_loader, epoch)


        if __name__ == "__main__":
            main()
        """)
    path = str(tmp_path / "run.py")
    [d] = found(run, "DDP201", path=path)
    assert d.fix == "safe"
    out = fix_source(run, path=path).code
    assert "train_sampler = DistributedSampler(ds) if DISTRIBUTED else None" in out
    assert (
        "        if train_sampler is not None:\n"
        "            train_sampler.set_epoch(epoch)\n"
        "        train_one_epoch(model, optimizer, train_loader, epoch)\n"
    ) in out
    # counting the batches is no training over them
    (pkg / "engine.py").write_text(
        (pkg / "engine.py")
        .read_text()
        .replace('metric_logger.log_every(data_loader, print_freq, f"Epoch: [{epoch}]")', "range(len(data_loader))")
    )
    assert found(run, "DDP201", path=path) == []


def test_a_module_function_that_does_not_train_on_the_loader_is_no_training_loop(tmp_path):
    (tmp_path / "trainer.py").write_text(
        TRAINER_MODULE.replace("loss.backward()", "pass").replace("self.optimizer.step()", "pass")
    )
    assert found(RUN, "DDP201", path=str(tmp_path / "run.py")) == []


def test_loader_param_uses_read_from_a_module_function():
    tree = ast.parse(
        textwrap.dedent("""
        def fit(model, loader, opt, val_loader):
            for epoch in range(3):
                loader.sampler.set_epoch(epoch)
                for i, (x, y) in enumerate(tqdm(loader)):
                    model(x).sum().backward()
                    opt.step()
                    print(i / len(loader))
                evaluate(model, val_loader)


        def one_epoch(model, loader, opt):
            for x, y in loader:
                model(x).sum().backward()
                opt.step()
            return len(loader)
        """)
    )
    fit, one = tree.body
    assert ast_loader_uses(fit, ["model", "loader", "opt", "val_loader"]) == {
        "loader": {TRAINS_ON, EPOCHS, SETS_EPOCH},
        "model": {EPOCHS},  # handed on inside the loop too: harmless, no loader is trained through it
        "val_loader": {EPOCHS},
    }
    assert ast_loader_uses(one, ["model", "loader", "opt"]) == {"loader": {TRAINS_ON}}


# --------------------------------------------------------------------------- ignite trainers
IGNITE = """\
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from ignite.engine import Events, create_supervised_trainer


def get_data_loaders(batch_size):
    x, y = torch.randn(64, 6), torch.randint(0, 2, (64,))
    train_loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True)
    val_loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=False)
    return train_loader, val_loader


def run(epochs):
    train_loader, val_loader = get_data_loaders(8)
    model = nn.Linear(6, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    trainer = create_supervised_trainer(model, optimizer, nn.CrossEntropyLoss())

    @trainer.on(Events.EPOCH_COMPLETED)
    def log(engine):
        print(engine.state.epoch)

    trainer.run(train_loader, max_epochs=epochs)


if __name__ == "__main__":
    run(2)
"""
HANDLER = """
    @trainer.on(Events.EPOCH_STARTED)
    def set_sampler_epoch(engine):
        if isinstance(train_loader.sampler, DistributedSampler):
            train_loader.sampler.set_epoch(engine.state.epoch - 1)

    trainer.run(train_loader, max_epochs=epochs)
"""


def test_ddp201_loader_run_by_an_ignite_trainer_sets_its_epoch_in_a_handler():
    [d] = found(IGNITE, "DDP201")
    assert d.fix == "safe" and d.line == 10  # the training loader, not the validation one
    out = fixed(IGNITE, "DDP001", "DDP201")
    assert "    train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None\n" in out
    assert "val_loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=False)" in out
    assert "        print(engine.state.epoch)\n" + HANDLER in out
    assert fixed(out, "DDP001", "DDP201", "DDP204") == out


def test_ddp204_ignite_trainer_over_a_sampled_loader_gets_the_handler():
    src = IGNITE.replace(
        "    train_loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True)\n",
        "    train_loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, sampler=DistributedSampler(x))\n",
    ).replace(
        "from torch.utils.data import",
        "from torch.utils.data.distributed import DistributedSampler\nfrom torch.utils.data import",
    )
    [d] = found(src, "DDP204")
    assert d.fix == "safe"
    assert HANDLER in fixed(src, "DDP204")


def test_an_engine_that_is_not_a_trainer_is_no_training_loop():
    src = IGNITE.replace("create_supervised_trainer(model, optimizer, nn.CrossEntropyLoss())", "make_engine(model)")
    assert found(src, "DDP201") == []


# --------------------------------------------------------------------------- already-distributed near misses
SPAWNED = """\
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torchvision import datasets


def worker(gpu, args):
    dist.init_process_group("gloo", rank=gpu, world_size=args.gpus)
    {worker_body}
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(2, 4)).sum().backward()
    opt.step()


if __name__ == "__main__":
    args = parse_args()
    {parent_body}
    mp.spawn(worker, args=(args,), nprocs=args.gpus)
"""


def test_ddp420_check_then_create_in_the_spawning_parent_is_left_alone():
    make = "if not os.path.exists(args.out):\n        os.makedirs(args.out)"
    src = SPAWNED.format(worker_body="pass", parent_body=make)
    assert found(src, "DDP420") == []
    # the same lines in the worker run on every rank
    src = SPAWNED.format(worker_body=make.replace("args.out", "args.ckpt"), parent_body="pass")
    assert [d.line for d in found(src, "DDP420")] == [12]


def test_ddp420_module_level_code_outside_the_main_block_runs_in_every_worker():
    src = SPAWNED.format(worker_body="pass", parent_body="pass").replace(
        "\n\ndef worker", "\nif not os.path.exists('out'):\n    os.makedirs('out')\n\n\ndef worker"
    )
    assert len(found(src, "DDP420")) == 1


def test_ddp208_download_in_the_spawning_parent_is_left_alone():
    get = 'datasets.MNIST("data", download=True)'
    assert found(SPAWNED.format(worker_body="pass", parent_body=get), "DDP208") == []
    [d] = found(SPAWNED.format(worker_body=get, parent_body="pass"), "DDP208")
    assert d.fix == "none" and "mp.spawn" in d.message


def test_ddp207_dataparallel_beside_a_ddp_path_is_left_alone():
    body = """
        def main(args):
            ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
            loader = DataLoader(ds, batch_size=4)
            model = nn.Linear(2, 1)
            if args.dataparallel:
                model = nn.DataParallel(model)
            else:
                dist.init_process_group("gloo")
                model = DDP(model)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(2):
                for x, y in loader:
                    model(x).sum().backward()
                    opt.step()
        """
    assert [d for d in found(script(body), "DDP207") if "batch_size" in d.message] == []
    dp_only = body.replace(
        '            else:\n                dist.init_process_group("gloo")\n                model = DDP(model)\n', ""
    )
    assert [d for d in found(script(dp_only), "DDP207") if "batch_size=4" in d.message]


def test_ddp206_says_the_metric_may_be_off():
    src = script("""
        def main():
            dist.init_process_group("gloo")
            model = DDP(nn.Linear(2, 2))
            val = TensorDataset(torch.randn(5, 2), torch.randint(0, 2, (5,)))
            val_loader = DataLoader(val, batch_size=2, sampler=DistributedSampler(val, shuffle=False))
            correct = 0
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum().item()
        """)
    [d] = found(src, "DDP206")
    assert "may count twice" in d.message and "multiple of the world size" in d.message


def test_ddp201_set_epoch_reaches_an_epoch_loop_calling_a_closure_of_the_main_block():
    """`def train(): for x, y in loader: ...` inside `if __name__ == "__main__":`, called once per epoch
    by the loop below it: the sampler's epoch is set in that loop (it was left out, each epoch drawing the
    same order on every rank)."""
    src = textwrap.dedent(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        if __name__ == "__main__":
            loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, shuffle=True)
            net = nn.Linear(4, 1)
            optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

            def train():
                for x, y in loader:
                    loss = nn.functional.mse_loss(net(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()

            for epoch in range(2):
                train()
        """
    ).lstrip()
    out = fix_source(src).code
    assert (
        "    for epoch in range(2):\n        if sampler is not None:\n            sampler.set_epoch(epoch)\n" in out
    ), out
    assert [d for d in check_source(out) if d.code == "DDP204"] == []


TRAINER_FIT = """
class Trainer:
    def __init__(self):
        self.model = nn.Linear(6, 3)
        if DISTRIBUTED:
            self.model = DDP(self.model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                loss = nn.functional.cross_entropy(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()


if DISTRIBUTED:
    dist.init_process_group("gloo")
torch.manual_seed(0)
ds = TensorDataset(torch.randn(96, 6), torch.randint(0, 3, (96,)))
sampler = DistributedSampler(ds) if DISTRIBUTED else None
loader = DataLoader(ds, batch_size=12, shuffle=(sampler is None), sampler=sampler)
trainer = Trainer()
trainer.fit(loader, epochs=3)
"""


def test_set_epoch_through_the_loader_a_method_of_the_script_is_handed():
    """The epoch loop in a method every call hands the loader to (golden trainer_method_given_loader):
    the sampler's variable is out of its reach, the method's parameter is not."""
    result = fix_source(script(TRAINER_FIT))
    lines = [line.strip() for line in result.code.splitlines()]
    loop = lines.index("for epoch in range(epochs):")
    assert lines[loop + 1 : loop + 3] == [
        'if isinstance(getattr(loader, "sampler", None), DistributedSampler):',
        "loader.sampler.set_epoch(epoch)",
    ]
    assert not result.incomplete


def test_a_method_handed_different_loaders_gets_no_guess():
    source = script(TRAINER_FIT + "trainer.fit(DataLoader(ds, batch_size=12), epochs=1)\n")
    found = [d for d in check_source(source) if d.code == "DDP204"]
    assert [(d.message, d.fix) for d in found] == [
        ("DistributedSampler never gets set_epoch(epoch): call it first thing in the epoch loop", "none")
    ]
