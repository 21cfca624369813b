"""DDP409 on derived values: a value computed from totals of this rank's shard (`epoch_loss = running_loss
/ len(loader.dataset)`) and shown as the run's is reduced where it is derived, or reported."""

from __future__ import annotations

import textwrap

import pytest
from invariants import converted

from ddpfix import check_source, fix_source

SCRIPT = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(ds, batch_size=8, shuffle=True)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    running_loss, steps = 0.0, 0
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running_loss += loss.item() * x.size(0)
        steps += 1
{after}
""".lstrip()

DISTRIBUTED = """
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
model = DDP(nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0.0
for x, y in loader:
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    total += loss.item()
mean_loss = total / len(loader)
if dist.get_rank() == 0:
    print(f"mean loss {mean_loss:.4f}")
""".lstrip()


def script(after: str) -> str:
    return SCRIPT.format(after=textwrap.indent(textwrap.dedent(after).strip(), "    "))


def found(src: str) -> list:
    return [d for d in check_source(src) if d.code == "DDP409"]


@pytest.mark.parametrize(
    ("after", "reduced"),
    [
        (
            'epoch_loss = running_loss / len(loader.dataset)\nprint(f"loss {epoch_loss:.4f}")',
            "    global_running_loss = reduce_over_ranks(running_loss)\n"
            "    epoch_loss = global_running_loss / len(loader.dataset)\n",
        ),
        (  # divided by this rank's count of steps: averaged
            'mean_loss = running_loss / steps\nprint("loss", mean_loss)',
            "    avg_running_loss = reduce_over_ranks(running_loss, average=True)\n",
        ),
        (  # the print further down, after other statements, and the value returned by no one
            'epoch_loss = running_loss / len(ds)\nlr = opt.param_groups[0]["lr"]\nprint(epoch, lr, epoch_loss)',
            "    global_running_loss = reduce_over_ranks(running_loss)\n    epoch_loss = global_running_loss / len(ds)\n",
        ),
    ],
)
def test_a_value_derived_from_a_total_is_reduced_where_it_is_derived(after, reduced):
    src = script(after)
    (d,) = found(src)
    assert d.message.startswith("after the conversion, ") and "(no fix" not in d.message
    assert d.message.split(" would ")[0].endswith(("epoch_loss", "mean_loss"))
    out = converted(src)
    assert reduced in out
    assert out.count("= reduce_over_ranks(") == 1


@pytest.mark.parametrize(
    ("after", "why"),
    [
        (  # derived in the loop that accumulates, shown after it: the value reduced would be a step's
            None,
            "epoch_loss is computed from running_loss in a block that does not hold the statement that shows it",
        ),
        (
            'if epoch % 2 == 0:\n    epoch_loss = running_loss / len(ds)\nprint(f"loss {epoch_loss:.4f}")',
            "epoch_loss is computed from running_loss in a block that does not hold the statement that shows it",
        ),
    ],
)
def test_a_value_derived_where_its_totals_cannot_be_reduced_is_reported_without_a_fix(after, why):
    if after is None:
        src = script('print(f"loss {epoch_loss:.4f}")').replace(
            "        steps += 1\n", "        steps += 1\n        epoch_loss = running_loss / len(ds)\n"
        )
    else:
        src = script(after)
    (d,) = found(src)
    assert d.message.endswith(f"(no fix: {why})")
    assert "reduce_over_ranks" not in fix_source(src).code


@pytest.mark.parametrize(
    "after",
    [
        'epoch_loss = running_loss / len(ds)\nepoch_loss = 0.0\nprint(f"loss {epoch_loss:.4f}")',  # rebound since
        'lr = steps * 0.1\nprint(f"lr {lr:.4f}")',  # a count of steps, the same on every rank
        "epoch_loss = running_loss / len(ds)\nprint(epoch)",  # derived, never shown
    ],
)
def test_a_shown_value_not_derived_from_a_total_is_clean(after):
    assert found(script(after)) == []


def test_a_distributed_script_reduces_before_the_derivation_outside_its_rank_guard():
    (d,) = found(DISTRIBUTED)
    assert d.message == "mean_loss summed over this rank's shard only, logged as if global: all-reduce it first"
    out = fix_source(DISTRIBUTED).code
    assert (
        "avg_total = reduce_over_ranks(total, average=True)\nmean_loss = avg_total / len(loader)\n"
        'if dist.get_rank() == 0:\n    print(f"mean loss {mean_loss:.4f}")\n'
    ) in out
    assert fix_source(out).code == out


RETURNING = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def run_epoch(model, loader, opt):
    running_loss = 0.0
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running_loss += loss.item() * x.size(0)
{returned}


torch.manual_seed(0)
train_set = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(train_set, batch_size=8, shuffle=True)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
{loop}
""".lstrip()

EPOCHS = 'for epoch in range(2):\n    train_loss = run_epoch(model, loader, opt)\n    print(f"loss {train_loss:.4f}")'


def returning(returned: str, loop: str = EPOCHS) -> str:
    return RETURNING.format(returned=textwrap.indent(textwrap.dedent(returned).strip(), "    "), loop=loop)


@pytest.mark.parametrize(
    ("returned", "reduced"),
    [
        (
            "return running_loss / len(loader.dataset)",
            "    global_running_loss = reduce_over_ranks(running_loss)\n"
            "    return global_running_loss / len(loader.dataset)\n",
        ),
        (
            "epoch_loss = running_loss / len(loader.dataset)\nreturn epoch_loss",
            "    global_running_loss = reduce_over_ranks(running_loss)\n"
            "    epoch_loss = global_running_loss / len(loader.dataset)\n    return epoch_loss\n",
        ),
    ],
)
def test_a_value_returned_from_totals_and_shown_by_the_caller_is_reduced_before_the_return(returned, reduced):
    src = returning(returned)
    (d,) = found(src)
    assert d.message.startswith("after the conversion, train_loss would sum this rank's shard only")
    assert "(no fix" not in d.message
    out = converted(src)
    assert reduced in out
    assert out.count("= reduce_over_ranks(") == 1


@pytest.mark.parametrize(
    ("loop", "why"),
    [
        (
            'train_loss = 1.0\nwhile train_loss > 0.5:\n    train_loss = run_epoch(model, loader, opt)\n    print(f"loss {train_loss:.4f}")',
            "not every rank calls run_epoch, which returns train_loss, alike",
        ),
    ],
)
def test_a_returned_value_whose_totals_cannot_be_reduced_in_the_function_is_reported_without_a_fix(loop, why):
    src = returning("return running_loss / len(loader.dataset)", loop)
    (d,) = found(src)
    assert d.message.endswith(f"(no fix: {why})")
    assert "reduce_over_ranks" not in fix_source(src).code


def test_a_call_shown_as_it_is_is_taken_out_of_the_print_and_its_return_reduced():
    """`print(f"loss {run_epoch(...):.4f}")`: the call trains, so it is taken out of the print the conversion
    guards to rank 0 (every rank runs it), and the total is reduced before the function returns it."""
    src = returning(
        "return running_loss / len(loader.dataset)",
        'for epoch in range(2):\n    print(f"loss {run_epoch(model, loader, opt):.4f}")',
    )
    (d,) = found(src)
    assert d.message == (
        "after the conversion, run_epoch() would sum this rank's shard only and be logged as if global: all-reduce "
        "it before it is shown"
    )
    code = fix_source(src).code
    assert "    global_running_loss = reduce_over_ranks(running_loss)\n" in code
    assert (
        "    run_epoch_result = run_epoch(model, loader, opt)\n"
        "    if RANK == 0:\n"
        '        print(f"loss {run_epoch_result:.4f}")\n'
    ) in code


def test_a_call_shown_inside_a_comprehension_is_reported_without_a_fix():
    """A call inside a comprehension cannot be taken out of the print: nothing is reduced inside the function."""
    src = returning(
        "return running_loss / len(loader.dataset)",
        'for epoch in range(2):\n    print([f"loss {run_epoch(model, loader, opt):.4f}" for _ in range(1)])',
    )
    (d,) = found(src)
    assert d.message.endswith(
        "(no fix: run_epoch() is called in the statement that shows it, which rank 0 alone runs once converted)"
    )
    assert "reduce_over_ranks" not in fix_source(src).code


def test_a_returned_value_that_is_no_total_is_clean():
    assert found(returning("return len(loader.dataset)")) == []


def test_a_function_also_handed_a_loader_that_is_not_sharded_is_reported_without_a_fix():
    """`evaluate(model, loader)` over the training loader (sharded) and the validation one (whole on every
    rank): reducing in `evaluate` would sum the validation totals over the ranks too."""
    src = RETURNING.format(returned="    return running_loss", loop="").replace(
        "def run_epoch(",
        "def evaluate(model, loader):\n    total = 0.0\n    with torch.no_grad():\n        for x, y in loader:\n"
        "            total += nn.functional.mse_loss(model(x), y, reduction='sum').item()\n"
        "    return total / len(loader.dataset)\n\n\ndef run_epoch(",
    ) + (
        "val_loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=8)\n"
        "for epoch in range(2):\n    run_epoch(model, loader, opt)\n"
        '    print("train", evaluate(model, loader))\n    val_loss = evaluate(model, val_loader)\n'
        '    train_loss = evaluate(model, loader)\n    print(f"{train_loss:.4f} {val_loss:.4f}")\n'
    )
    assert [d.message.split(" would ")[0] for d in found(src)] == [
        "after the conversion, evaluate()",  # print("train", evaluate(model, loader))
        "after the conversion, train_loss",
    ]
    assert found(src)[1].message.endswith("(no fix: evaluate is also handed val_loader, which is not sharded)")
    assert "reduce_over_ranks" not in fix_source(src).code


def test_a_total_of_the_same_name_in_a_function_over_unsharded_data_is_not_the_shards():
    """`correct`/`total` summed by `train()` over its shard and by `test()` over the whole test set: the
    value `test()` derives from its own totals is global already (a reduction would count each test
    sample once per rank)."""
    src = textwrap.dedent(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.manual_seed(0)
        trainloader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,))), batch_size=8, shuffle=True)
        testloader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randint(0, 3, (32,))), batch_size=8)
        net = nn.Linear(4, 3)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)


        def train(epoch):
            correct, total = 0, 0
            for x, y in trainloader:
                out = net(x)
                loss = nn.functional.cross_entropy(out, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                correct += (out.argmax(1) == y).sum().item()
                total += y.size(0)


        def test(epoch):
            correct, total = 0, 0
            with torch.no_grad():
                for x, y in testloader:
                    correct += (net(x).argmax(1) == y).sum().item()
                    total += y.size(0)
            acc = 100.0 * correct / total
            print("| Validation Epoch #%d Acc@1: %.2f%%" % (epoch, acc))


        for epoch in range(2):
            train(epoch)
            test(epoch)
        """
    ).lstrip()
    assert found(src) == []


def test_a_value_computed_beside_one_the_script_reduced_itself_is_its_own_global_figure():
    """`global_avg_tps = global_tokens / cumulative_time`: the tokens reached an all_reduce, and the time
    summed per rank is no shard of the data."""
    src = DISTRIBUTED.replace(
        "    total += loss.item()\n",
        "    total += loss.item()\n    step_time = 0.5\n    elapsed += step_time\n    tokens = torch.tensor([8.0])\n"
        "    dist.all_reduce(tokens)\n    global_tokens = tokens.item()\n    tps = global_tokens / elapsed\n"
        '    if dist.get_rank() == 0:\n        print(f"tok/s {tps:.1f}")\n',
    ).replace("total = 0.0\n", "total = 0.0\nelapsed = 0.0\n")
    assert [d.message.split(" summed ")[0] for d in found(src)] == ["mean_loss"]


def test_a_total_shown_as_it_is_by_a_function_over_unsharded_data_is_not_the_shards():
    """`test()` prints `100.0 * correct / len(testloader.dataset)` over the whole test set, while `train()`
    sums a `correct` of its own over its shard: summing test()'s over the ranks would print it doubled."""
    src = textwrap.dedent(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.manual_seed(0)
        trainloader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,))), batch_size=8, shuffle=True)
        testloader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randint(0, 3, (32,))), batch_size=8)
        net = nn.Linear(4, 3)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)


        def train(epoch):
            correct = 0
            for x, y in trainloader:
                out = net(x)
                loss = nn.functional.cross_entropy(out, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                correct += (out.argmax(1) == y).sum().item()
            print(f"train acc {100.0 * correct / len(trainloader.dataset):.2f}")


        def test(epoch):
            correct = 0
            with torch.no_grad():
                for x, y in testloader:
                    correct += (net(x).argmax(1) == y).sum().item()
            print(f"test acc {100.0 * correct / len(testloader.dataset):.2f}")


        for epoch in range(2):
            train(epoch)
            test(epoch)
        """
    ).lstrip()
    assert [d.line for d in found(src)] == [
        src.splitlines().index('    print(f"train acc {100.0 * correct / len(trainloader.dataset):.2f}")') + 1
    ]
    out = converted(src)
    assert 'print(f"test acc {100.0 * correct / len(testloader.dataset):.2f}")' in out
