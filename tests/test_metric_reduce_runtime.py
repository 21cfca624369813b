"""DDP409's fix, run for real: the epoch metrics a converted script prints under torchrun are the
numbers `python train.py` prints. The model does not learn (lr=0), so every sample's loss is the same
whichever rank computes it, and the reduced totals must match the plain run's to the printed digit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest
from exit_without_teardown import outside_env, torchrun
from local_files import write
from teardown import run_plain
from test_rules_imported_meters import NAMED_METER
from test_rules_imported_meters import SCRIPT as IMPORTED
from test_rules_meters import AVERAGE_METER

from ddpfix import fix_project, fix_source

SCRIPT = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    for epoch in range(2):
        total, correct, running, summed = 0.0, 0, 0.0, torch.zeros(())
        for i, (x, y) in enumerate(loader, 1):
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(x)
            correct += (out.argmax(1) == y).sum().item()
            running += loss.item()
            summed += loss.detach() * len(x)
        print(f"epoch {epoch} loss {total / len(ds):.5f} acc {correct / len(ds):.4f} mean {running / i:.5f}")
        print(f"epoch {epoch} tensor {summed.item() / len(ds):.5f}")
    """
).lstrip()


LISTS = textwrap.dedent(
    """
    import numpy as np
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    for epoch in range(2):
        losses = []
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {epoch} mean {np.mean(losses):.5f}")
        print(f"epoch {epoch} tensor {sum(losses) / len(losses):.5f}")
    """
).lstrip()


DIVIDED = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    for epoch in range(2):
        train_loss, total, running = 0.0, 0.0, 0.0
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            train_loss += loss.item() * x.size(0)
            total += loss.item() * x.size(0)
            running += loss.item()
        train_loss = train_loss / len(loader.sampler)
        total /= len(loader.dataset)
        running /= len(loader)
        print(f"epoch {epoch} sampler {train_loss:.5f} dataset {total:.5f} batches {running:.5f}")
    """
).lstrip()


DERIVED = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    for epoch in range(2):
        running_loss, running_correct, steps = 0.0, 0, 0
        for x, y in loader:
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running_loss += loss.item() * x.size(0)
            running_correct += (out.argmax(1) == y).sum().item()
            steps += 1
        epoch_loss = running_loss / len(loader.dataset)
        epoch_acc = 100.0 * running_correct / len(ds)
        print(f"epoch {epoch} loss {epoch_loss:.5f} acc {epoch_acc:.3f}")
        mean_loss = running_loss / steps
        print(f"epoch {epoch} tensor {mean_loss:.5f}")
    """
).lstrip()


RETURNED = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset


    def train_epoch(model, loader, optimizer):
        running_loss, correct = 0.0, 0
        for x, y in loader:
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running_loss += loss.item() * x.size(0)
            correct += (out.argmax(1) == y).sum().item()
        accuracy = 100.0 * correct / len(loader.dataset)
        return running_loss / len(loader.dataset), accuracy


    def main():
        torch.manual_seed(0)
        ds = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
        loader = DataLoader(ds, batch_size=8, shuffle=True)
        model = nn.Linear(4, 3)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        for epoch in range(2):
            train_loss, train_acc = train_epoch(model, loader, optimizer)
            print(f"epoch {epoch} loss {train_loss:.5f} acc {train_acc:.3f}")
            print(f"epoch {epoch} tensor {train_loss:.5f}")


    if __name__ == "__main__":
        main()
    """
).lstrip()


CUT = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    X = torch.randn(64, 4)
    Y = torch.randint(0, 3, (64,))
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    batch_size = 8
    for epoch in range(2):
        cost = 0.0
        num_batches = len(X) // batch_size
        for k in range(num_batches):
            start, end = k * batch_size, (k + 1) * batch_size
            loss = nn.functional.cross_entropy(model(X[start:end]), Y[start:end])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            cost += loss.item()
        print(f"epoch {epoch} cost {cost / num_batches:.5f}")
        print(f"epoch {epoch} tensor {cost:.5f}")
    """
).lstrip()

INDEXED = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    for epoch in range(2):
        stats = [0.0, 0.0]
        correct, total = 0, 0
        for x, y in loader:
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            stats[0] += loss.item() * len(x)
            stats[1] += len(x)
            correct += (out.argmax(1) == y).sum().item()
            total += len(y)
        print(f"epoch {epoch} loss {stats[0] / len(ds):.5f} acc {100.0 * correct / total:.3f} ({correct}/{total})")
        print(f"epoch {epoch} per batch {stats[0] / (len(ds) / 8):.3f}")  # the whole run's number of batches
        print(f"epoch {epoch} tensor {stats[1]:.1f} samples")
    """
).lstrip()

METERS = (
    textwrap.dedent(
        """
    import torch
    import torch.nn as nn


    class Average:
        def __init__(self):
            self.sum = 0.0
            self.count = 0

        def __str__(self):
            return "{:.5f}".format(self.sum / self.count)

        def update(self, value, number):
            self.sum += value * number
            self.count += number


    class Accuracy:
        def __init__(self):
            self.correct = 0
            self.count = 0

        @property
        def accuracy(self):
            return self.correct / self.count

        def update(self, output, target):
            self.correct += (output.argmax(1) == target).sum().item()
            self.count += len(target)


    {average_meter}

    def train(model, loader, optimizer):
        losses = Average()
        acc = Accuracy()
        meter = AverageMeter()
        for x, y in loader:
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.update(loss.item(), len(x))
            acc.update(out, y)
            meter.update(loss.item(), len(x))
        return losses, acc, meter


    torch.manual_seed(0)
    ds = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
    loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    for epoch in range(2):
        losses, acc, meter = train(model, loader, optimizer)
        print(f"epoch {epoch} loss {losses} acc {acc.accuracy:.4f} over {acc.count}")
        print(f"epoch {epoch} meter {meter.avg:.5f} over {meter.count}")
        print(f"epoch {epoch} tensor {losses.count} {losses.sum / losses.count:.5f}")
    """
    )
    .lstrip()
    .replace("{average_meter}\n", AVERAGE_METER.lstrip("\n"))
)


def _run(tmp_path, script, name: str, nproc: int | None, last: str = "epoch 1 tensor") -> str:
    env = outside_env()
    cmd = [sys.executable, str(script)]
    if nproc is not None:
        cmd = torchrun(nproc, str(script))

    def once(out):
        out.mkdir()
        done = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True, timeout=300)
        lines = done.stdout.splitlines()
        return SimpleNamespace(
            returncode=done.returncode,
            stdout=done.stdout,
            stderr=done.stderr,
            reached_end=sum(line.startswith(last) for line in lines) == 1,
        )

    done = run_plain(once, tmp_path / name, name)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def converted_runs(tmp_path, script: str, last: str, ddp_last: str | None = None) -> tuple[str, str, str]:
    """Fix `script` (the rewrite must keep the contract), run the input and the output as plain
    processes and the output under torchrun with 2 ranks: (the output's code, the plain run's stdout,
    the 2-rank run's stdout). The output's plain run must print what the input's does."""
    result = fix_source(script)
    assert result.incomplete == [], [b.format() for b in result.incomplete]
    before, after = tmp_path / "train.py", tmp_path / "train_ddp.py"
    before.write_text(script)
    after.write_text(result.code)
    plain = _run(tmp_path, before, "plain", None, last)
    assert _run(tmp_path, after, "plain_out", None, last) == plain  # a plain run of the output prints the same
    return result.code, plain, _run(tmp_path, after, "ddp", 2, ddp_last or last)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "script, wanted",
    [
        (
            SCRIPT,
            (
                "reduce_over_ranks(total)",
                "reduce_over_ranks(running, average=True)",
                "global_summed.item()",  # a tensor total comes back a tensor
            ),
        ),
        # batches cut by rank (DDP209) in the same apply: the count of the whole run's batches divides
        # the sum over the ranks
        (CUT, ("range(RANK, num_batches, WORLD_SIZE)", "global_cost = reduce_over_ranks(cost)\n")),
        # totals kept in meter objects that a function fills and returns: reduced back into the meters
        (METERS, ("losses.count = reduce_over_ranks(losses.count)\n", "acc.correct = reduce_over_ranks(acc.correct)")),
        # the mean of a list of this rank's batch losses: averaged over the ranks (every shard has as many batches)
        (
            LISTS,
            (
                "avg_losses = reduce_over_ranks(np.mean(losses), average=True)\n",
                'print(f"epoch {epoch} tensor {avg_losses:.5f}")',  # the same mean, reduced once
            ),
        ),
        # totals the script divides in place before it prints them: by the length of the loader's sampler
        # (this rank's share once it is a DistributedSampler) or of batches, averaged; by the dataset's, summed
        (
            DIVIDED,
            (
                "avg_train_loss = reduce_over_ranks(train_loss, average=True)\n",
                "global_total = reduce_over_ranks(total)\n",
                "avg_running = reduce_over_ranks(running, average=True)\n",
            ),
        ),
        # totals carried into a new name before they are shown (`epoch_loss = running_loss /
        # len(loader.dataset)`, then `print(epoch_loss)`): reduced just before the statement that derives
        # the shown value, by what it divides them by
        (
            DERIVED,
            (
                "global_running_loss = reduce_over_ranks(running_loss)\n",
                "epoch_loss = global_running_loss / len(loader.dataset)\n",
                "epoch_acc = 100.0 * global_running_correct / len(ds)\n",
                "avg_running_loss = reduce_over_ranks(running_loss, average=True)\n",
                'print(f"epoch {epoch} loss {epoch_loss:.5f} acc {epoch_acc:.3f}")',
            ),
        ),
        # totals returned by the function that accumulates them (`return running_loss / len(loader.dataset),
        # accuracy`) and shown by its caller: reduced in that function, before its return (or the statement
        # that derives what it returns)
        (
            RETURNED,
            (
                "global_running_loss = reduce_over_ranks(running_loss)\n",
                "return global_running_loss / len(loader.dataset), accuracy\n",
                "global_correct = reduce_over_ranks(correct)\n",
            ),
        ),
        # totals kept in a list and added to by index (`stats[0] += ...`), divided by the whole run's number
        # of batches, and a ratio of two totals shown beside the counts themselves (`100.0 * correct /
        # total`, then `{correct}/{total}`): summed
        (
            INDEXED,
            (
                "global_stats = reduce_over_ranks(stats)\n",
                "global_correct = reduce_over_ranks(correct)\n",
                "global_total = reduce_over_ranks(total)\n",
            ),
        ),
    ],
    ids=[
        "loader",
        "cut-batches",
        "meters",
        "list-means",
        "divided-in-place",
        "derived-name",
        "returned",
        "indexed-ratio",
    ],
)
def test_reduced_metrics_print_the_plain_runs_numbers(tmp_path, script, wanted):
    code, plain, ddp = converted_runs(tmp_path, script, "epoch 1 tensor")
    for text in wanted:
        assert text in code
    assert [line for line in ddp.splitlines() if line.startswith("epoch")] == [
        line for line in plain.splitlines() if line.startswith("epoch")
    ]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_meters_of_a_class_imported_from_the_scripts_module_print_the_plain_runs_numbers(tmp_path):
    """`from utils import AverageMeter`: the class is read from utils.py, the totals reduced in the script."""
    write(tmp_path, "utils.py", NAMED_METER.lstrip("\n"))
    before = write(tmp_path, "train.py", IMPORTED.replace("lr=0.1", "lr=0.0"))
    result = fix_project(str(before))
    assert result.incomplete == [] and result.others == {}, [b.format() for b in result.incomplete]
    assert "top1.avg = top1.sum / top1.count\n" in result.code
    after = write(tmp_path, "train_ddp.py", result.code)
    plain = _run(tmp_path, before, "plain", None, last="epoch 1 loss")
    assert plain.count("epoch") == 2
    assert _run(tmp_path, after, "plain_out", None, last="epoch 1 loss") == plain
    ddp = _run(tmp_path, after, "ddp", 2, last="epoch 1 loss")
    assert [line for line in ddp.splitlines() if line.startswith("epoch")] == [
        line for line in plain.splitlines() if line.startswith("epoch")
    ]
