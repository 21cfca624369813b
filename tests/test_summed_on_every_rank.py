"""DDP212: a loader every rank iterates whole while what is summed over it is all-reduced (by the loop's
own code, a function of the script, or a helper module written for several processes) counts every
sample WORLD_SIZE times; the fix gives each rank its own samples, none twice (range(RANK, len(dataset),
WORLD_SIZE)), where the loop runs under no_grad and issues no collective of its own (shards that differ by
a sample then leave no rank waiting); elsewhere it is reported without a fix. A print of such a value is
guarded to rank 0 with the collective taken out before it (every rank must join it)."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

HEAD = textwrap.dedent(
    """
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset


    def count_correct(model, loader):
        correct = torch.zeros(1)
        with {grad}:
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum(){each}
        {reduce}
        return correct.item()


    torch.manual_seed(0)
    train_set = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
    val_set = TensorDataset(torch.randn(20, 4), torch.randint(0, 3, (20,)))
    train_loader = DataLoader(train_set, batch_size=8, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=8)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        {show}
    """
).lstrip()

REDUCE = "if dist.is_available() and dist.is_initialized():\n        dist.all_reduce(correct)"
SHOW = "acc = count_correct(model, val_loader) / len(val_set)\n    print(epoch, acc)"


EXACT = "val_sampler = range(RANK, len(val_set), WORLD_SIZE) if DISTRIBUTED else None"


def _script(reduce: str = REDUCE, show: str = SHOW, grad: str = "torch.no_grad()", each: str = "") -> str:
    return HEAD.format(reduce=reduce, show=show, grad=grad, each=each)


def _with_module(tmp_path, module: str, show: str):
    """The script with `show` in its epoch loop, importing evaluate() from metrics.py (`module`) beside it:
    (its source, its path)."""
    (tmp_path / "metrics.py").write_text(textwrap.dedent(module).lstrip())
    script = _script(reduce="pass", show=show).replace(
        "from torch.utils.data import DataLoader, TensorDataset\n",
        "from torch.utils.data import DataLoader, TensorDataset\n\nfrom metrics import evaluate\n",
    )
    path = tmp_path / "train.py"
    path.write_text(script)
    return script, str(path)


def _codes(src: str) -> list[str]:
    return [d.code for d in check_source(src)]


def test_a_count_all_reduced_over_a_whole_loader_is_sharded():
    result = fix_source(_script())
    assert EXACT in result.code
    assert "val_loader = DataLoader(val_set, batch_size=8, sampler=val_sampler)" in result.code
    found = [d for d in result.diagnostics if d.code == "DDP212"]
    assert found and found[0].applied and "count_correct() all-reduces" in found[0].message
    assert not result.incomplete
    assert "DDP212" not in _codes(result.code)  # the output checks clean of it


def test_nothing_reduced_nothing_reported():
    assert "DDP212" not in _codes(_script(reduce="pass"))


def test_a_collective_on_another_value_is_not_the_sum():
    other = "flag = torch.ones(1)\n    dist.all_reduce(flag)"
    assert "DDP212" not in _codes(_script(reduce=other))


def test_a_barrier_after_the_loop_is_no_reduction_of_the_sum():
    assert "DDP212" not in _codes(_script(reduce="dist.barrier()"))


def test_the_loop_where_the_loader_is_built_counts_too():
    show = (
        "correct = torch.zeros(1)\n"
        "    for x, y in val_loader:\n"
        "        correct += (model(x).argmax(1) == y).sum()\n"
        "    dist.all_reduce(correct)\n"
        "    print(epoch, correct.item() / len(val_set))"
    )
    found = [d for d in check_source(_script(show=show)) if d.code == "DDP212"]
    assert found and "the loop at line" in found[0].message


def test_the_training_loader_is_never_this_rules():
    result = fix_source(_script())
    assert [d.line for d in result.diagnostics if d.code == "DDP212"] == [21]  # val_loader's line, not train_loader's


def test_a_helper_module_that_reduces_what_it_sums(tmp_path):
    script, path = _with_module(
        tmp_path,
        """
            import torch
            import torch.distributed as dist


            def reduce_value(value, average=True):
                if not dist.is_initialized() or dist.get_world_size() < 2:
                    return value
                dist.all_reduce(value)
                return value / dist.get_world_size() if average else value


            @torch.no_grad()
            def evaluate(model, data_loader):
                total = torch.zeros(1)
                for step, (x, y) in enumerate(data_loader):
                    total += (model(x).argmax(1) == y).sum()
                total = reduce_value(total, average=False)
                return total.item()
            """,
        "print(epoch, evaluate(model, val_loader) / len(val_set))",
    )
    result = fix_source(script, path=path, cross_file=True)
    assert EXACT in result.code
    message = next(d.message for d in result.diagnostics if d.code == "DDP212")
    assert "evaluate() in metrics.py" in message
    # the print is rank 0's; the evaluation (an all-reduce) stays on every rank, before it
    lines = [line.strip() for line in result.code.splitlines()]
    hoisted = lines.index("evaluate_result = evaluate(model, val_loader)")
    assert lines[hoisted + 1] == "if RANK == 0:"
    assert lines[hoisted + 2] == "print(epoch, evaluate_result / len(val_set))"
    assert not result.incomplete


def test_a_helper_module_that_sums_without_reducing_is_left_whole(tmp_path):
    script, path = _with_module(
        tmp_path,
        "import torch\n\n\ndef evaluate(model, data_loader):\n    total = 0\n"
        "    for x, y in data_loader:\n        total += (model(x).argmax(1) == y).sum().item()\n    return total\n",
        "print(epoch, evaluate(model, val_loader) / len(val_set))",
    )
    result = fix_source(script, path=path, cross_file=True)
    assert "DDP212" not in [d.code for d in result.diagnostics]
    assert "val_sampler" not in result.code


def test_a_collective_inside_a_comprehension_keeps_the_print_on_every_rank():
    show = "print(epoch, [count_correct(model, val_loader) for _ in range(1)])"
    result = fix_source(_script(show=show))
    assert "    print(epoch, [count_correct(model, val_loader) for _ in range(1)])" in result.code
    assert "if RANK == 0:\n        print(epoch, [" not in result.code
    kept = [d for d in result.diagnostics if d.code == "DDP406" and d.line == 29]
    assert kept and "compute it on every rank first" in kept[0].message and not kept[0].applied


def test_a_loop_with_gradients_on_is_reported_without_a_fix():
    result = fix_source(_script(grad="torch.enable_grad()"))
    found = [d for d in result.diagnostics if d.code == "DDP212"]
    assert found and not found[0].applied and "shard it by hand" in found[0].message
    assert "val_sampler" not in result.code
    assert [b.code for b in result.incomplete] == ["DDP212"]  # the output still counts twice: not done


def test_a_loop_that_reduces_at_each_batch_is_reported_without_a_fix():
    each = "\n            dist.all_reduce(torch.zeros(1))"
    found = [d for d in fix_source(_script(each=each)).diagnostics if d.code == "DDP212"]
    assert found and not found[0].applied and "collective at each batch" in found[0].message


def test_an_average_over_the_ranks_of_whole_set_sums_is_left_alone():
    # every rank's whole-set count, averaged: the single-process number; sharding would halve it
    averaged = "dist.all_reduce(correct)\n    correct /= dist.get_world_size()"
    assert "DDP212" not in _codes(_script(reduce=averaged))
    assert "DDP212" not in _codes(_script(reduce="dist.all_reduce(correct, op=dist.ReduceOp.MAX)"))


def test_a_local_helper_that_averages_is_left_alone_and_one_that_sums_is_not():
    helper = (
        "def reduce_tensor(t, average=True):\n"
        "    dist.all_reduce(t)\n"
        "    return t / WORLD_SIZE if average else t\n\n\n"
        "WORLD_SIZE = 2\n\n\n"
    )
    for call, fires in (("reduce_tensor(correct)", False), ("reduce_tensor(correct, average=False)", True)):
        src = _script(reduce=f"correct = {call}").replace("def count_correct", helper + "def count_correct")
        assert ("DDP212" in _codes(src)) is fires, call


def test_a_helper_module_whose_reduction_averages_by_default_is_left_alone(tmp_path):
    script, path = _with_module(
        tmp_path,
        """
            import torch
            import torch.distributed as dist


            def reduce_value(value, average=True):
                world_size = dist.get_world_size() if dist.is_initialized() else 1
                if world_size < 2:
                    return value
                dist.all_reduce(value)
                if average:
                    value /= world_size
                return value


            @torch.no_grad()
            def evaluate(model, data_loader, summed):
                total = torch.zeros(1)
                for x, y in data_loader:
                    total += (model(x).argmax(1) == y).sum()
                return (reduce_value(total, average=False) if summed else reduce_value(total)).item()
            """,
        "print(epoch, evaluate(model, val_loader, {summed}) / len(val_set))",
    )
    codes = [d.code for d in check_source(script, path=path, cross_file=True)]
    assert "DDP212" in codes  # one of its reductions sums (average=False): a whole-set count would double


def test_a_division_by_anything_but_a_sample_count_may_be_an_average():
    # `n_procs` is no name the analysis knows for the world size: read as a possible average, left alone
    maybe = "dist.all_reduce(correct)\n    correct = correct / n_procs"
    assert "DDP212" not in _codes(
        _script(reduce=maybe).replace("torch.manual_seed(0)\n", "n_procs = 2\ntorch.manual_seed(0)\n")
    )
    # a mean over the data (divided by the set's length) is still a sum over the ranks first
    mean = "dist.all_reduce(correct)\n    return correct.item() / len(loader.dataset)"
    assert "DDP212" in _codes(_script(reduce=mean))
