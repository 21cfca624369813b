"""Training batches drawn from `get_batch()` of a class of the script's modules that builds its own
DataLoaders and draws from them with next() (analysis/batch_sources.py, batch_source_loaders.py), and
what the same script needs besides: an optimizer over a list filled with the model's parameters, a
DataParallel model shown by the plain run, a log opened around code every rank runs.

The project is golden balanced_batches_in_module's; each test edits one thing of it."""

from __future__ import annotations

from pathlib import Path

from local_files import by_code, edit, fix_input, golden_copy

GOLDEN = Path(__file__).parent / "golden" / "balanced_batches_in_module"


def _batches(result) -> str:
    return next(c.code for p, c in result.others.items() if Path(p).name == "batches.py")


def test_each_loader_of_the_class_is_sharded_and_moves_its_epoch_on_at_each_new_pass(tmp_path):
    result = fix_input(golden_copy(GOLDEN, tmp_path))
    (found,) = by_code(result)["DDP201"]
    assert found.applied
    assert "batches.get_batch() draws the training batches from DataLoaders BalancedBatches builds" in found.message
    code = _batches(result)
    assert "            sampler = DistributedSampler(dataset) if dist.is_initialized() else None\n" in code
    assert "shuffle=(sampler is None), drop_last=True, sampler=sampler)" in code
    assert (
        '                if isinstance(getattr(self.loaders[i], "sampler", None), DistributedSampler):\n'
        "                    self.loaders[i].sampler.set_epoch(self.loaders[i].sampler.epoch + 1)\n"
        "                self.iters[i] = iter(self.loaders[i])\n"
    ) in code
    assert result.incomplete == []


def test_the_check_names_the_loaders_and_offers_the_fix(tmp_path):
    root = golden_copy(GOLDEN, tmp_path)
    found = [d for d in fix_input(root, fix=False).diagnostics if d.code == "DDP201"]
    assert len(found) == 1 and found[0].fix == "safe"
    assert "(batches.py:21)" in found[0].message


def test_a_loader_built_at_each_call_is_reported_and_the_conversion_is_incomplete(tmp_path):
    root = golden_copy(GOLDEN, tmp_path)
    edit(
        root / "batches.py",
        "    def get_batch(self):\n",
        "    def fresh(self, n):\n"
        "        return next(iter(DataLoader(make_dataset(n, 0), batch_size=4, shuffle=True)))\n\n"
        "    def get_batch(self):\n",
    )
    edit(root / "batches.py", "        return torch.cat(xs), torch.cat(ys)\n", "        return self.fresh(8)\n")
    result = fix_input(root)
    (found,) = by_code(result)["DDP201"]
    assert not found.applied and "BalancedBatches.fresh() builds a DataLoader each time it is called" in found.message
    assert "DDP201" in {i.code for i in result.incomplete}
    assert "sampler" not in "".join(c.code for c in result.others.values())  # no half sharding


def test_a_pass_started_over_an_expression_with_a_call_is_not_edited(tmp_path):
    root = golden_copy(GOLDEN, tmp_path)
    edit(root / "batches.py", "self.iters[i] = iter(self.loaders[i])", "self.iters[i] = iter(self.loader(i))")
    edit(
        root / "batches.py",
        "    def get_batch(self):\n",
        "    def loader(self, i):\n        return self.loaders[i]\n\n    def get_batch(self):\n",
    )
    result = fix_input(root)
    (found,) = by_code(result)["DDP201"]
    assert not found.applied and "an expression it would evaluate again" in found.message
    assert "DDP201" in {i.code for i in result.incomplete}


def test_a_class_whose_loaders_have_their_sampler_already_is_left_alone(tmp_path):
    root = golden_copy(GOLDEN, tmp_path)
    edit(
        root / "batches.py",
        "            loader = DataLoader(dataset, batch_size=part, shuffle=True, drop_last=True)\n",
        "            sampler = DistributedSampler(dataset) if dist.is_initialized() else None\n"
        "            loader = DataLoader(dataset, batch_size=part, shuffle=sampler is None, sampler=sampler)\n",
    )
    edit(
        root / "batches.py",
        "import torch\n",
        "import torch\nimport torch.distributed as dist\nfrom torch.utils.data.distributed import DistributedSampler\n",
    )
    assert "DDP201" not in by_code(fix_input(root))


def test_an_optimizer_over_a_list_filled_with_the_parameters_is_traced_to_the_model(tmp_path):
    root = golden_copy(GOLDEN, tmp_path)
    edit(
        root / "input.py",
        "    for p in filter(lambda p: p.requires_grad, model.parameters()):\n        trainable.append(p)\n",
        "    trainable.extend(model.parameters())\n",
    )
    result = fix_input(root)
    assert "model = DDP(model.to(device)" in result.code and result.incomplete == []


def test_a_list_filled_with_something_else_leaves_the_optimizer_untraced(tmp_path):
    root = golden_copy(GOLDEN, tmp_path)
    edit(
        root / "input.py",
        "    for p in filter(lambda p: p.requires_grad, model.parameters()):\n        trainable.append(p)\n",
        "    for p in filter(lambda p: p.requires_grad, model.parameters()):\n        trainable.append(p * 1)\n",
    )
    result = fix_input(root)
    assert "DDP(" not in result.code
    assert "cannot trace its optimizer" in next(d.message for d in result.diagnostics if d.code == "DDP301")


def test_a_dataparallel_model_is_still_shown_as_the_plain_run_shows_it(tmp_path):
    result = fix_input(golden_copy(GOLDEN, tmp_path))
    assert "        print(model)\n" in result.code and "print(raw_model)" not in result.code
    assert "DDP308" not in by_code(result)


def test_a_log_opened_around_a_validation_and_a_save_goes_to_devnull_on_the_other_ranks(tmp_path):
    result = fix_input(golden_copy(GOLDEN, tmp_path))
    assert (
        'with (open(os.path.join(args.out, "log_train.txt"), "a") if RANK == 0 else open(os.devnull, "a")) as log:'
        in result.code
    )
    assert "                    if RANK == 0:\n                        torch.save(raw_model.state_dict()" in result.code


def test_a_log_read_back_is_reported_not_sent_to_devnull(tmp_path):
    root = golden_copy(GOLDEN, tmp_path)
    edit(
        root / "input.py",
        "        step += 1\n",
        '        print(open(os.path.join(args.out, "log_train.txt")).read())\n        step += 1\n',
    )
    result = fix_input(root)
    found = [d for d in result.diagnostics if d.code == "DDP405" and "around code every rank runs" in d.message]
    assert len(found) == 1 and not found[0].applied and "open and use it on rank 0 only" in found[0].message


def test_a_validation_loader_the_class_keeps_but_never_draws_from_is_left_unsharded(tmp_path):
    root = golden_copy(GOLDEN, tmp_path)
    edit(
        root / "batches.py",
        "        log.close()\n",
        "        log.close()\n        self.val_loader = DataLoader(make_dataset(16, seed=9), batch_size=8)\n\n"
        "    def validate(self, model):\n        return [model(x) for x, _ in iter(self.val_loader)]\n",
    )
    result = fix_input(root)
    (found,) = by_code(result)["DDP201"]
    assert found.applied and "(batches.py:21)" in found.message
    code = _batches(result)
    assert code.count("DistributedSampler(") == 1
    assert "self.val_loader = DataLoader(make_dataset(16, seed=9), batch_size=8)" in code
    assert "val_loader.sampler" not in code


# ------------------------------------------------------------------ a loader kept as an attribute
KEPT = Path(__file__).parent / "golden" / "loader_kept_by_data_object"


def test_a_loader_the_script_iterates_as_an_attribute_is_sharded_there_and_its_epoch_set_here(tmp_path):
    result = fix_input(golden_copy(KEPT, tmp_path))
    (found,) = by_code(result)["DDP201"]
    assert found.applied and "the script trains on data.train, a DataLoader Data builds itself" in found.message
    assert "sets its epoch at the start of each epoch (line 42)" in found.message
    assert (
        "    for epoch in range(args.epochs):\n"
        '        if isinstance(getattr(data.train, "sampler", None), DistributedSampler):\n'
        "            data.train.sampler.set_epoch(epoch)\n"
    ) in result.code
    data = next(c.code for p, c in result.others.items() if Path(p).name == "data.py")
    assert "sampler = DistributedSampler(dataset) if dist.is_initialized() else None" in data
    assert result.incomplete == []


def test_an_attribute_loop_through_enumerate_and_a_while_epoch_loop(tmp_path):
    root = golden_copy(KEPT, tmp_path)
    edit(root / "input.py", "    for epoch in range(args.epochs):\n", "    epoch = 0\n    while epoch < args.epochs:\n")
    edit(root / "input.py", "        for x, y in data.train:\n", "        for i, (x, y) in enumerate(data.train):\n")
    edit(root / "input.py", '.3f}")\n', '.3f}")\n        epoch += 1\n')
    result = fix_input(root)
    assert by_code(result)["DDP201"][0].applied
    assert "    while epoch < args.epochs:\n        if isinstance(getattr(data.train" in result.code


def test_a_loader_attribute_set_outside_init_is_reported_without_a_fix(tmp_path):
    root = golden_copy(KEPT, tmp_path)
    edit(
        root / "data.py",
        "        self.train = DataLoader(",
        "        self.x, self.y, self.batch_size = x, y, batch_size\n\n    def reload(self):\n        self.train = DataLoader(",
    )
    edit(
        root / "data.py",
        "self.train = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=batch_size,",
        "self.train = DataLoader(TensorDataset(self.x[:64], self.y[:64]), batch_size=self.batch_size,",
    )
    edit(
        root / "data.py",
        "        self.test = DataLoader(TensorDataset(x[64:], y[64:]), batch_size=batch_size)",
        "        self.test = DataLoader(TensorDataset(self.x[64:], self.y[64:]), batch_size=self.batch_size)",
    )
    edit(
        root / "input.py", "    data = Data(args.batch_size)\n", "    data = Data(args.batch_size)\n    data.reload()\n"
    )
    result = fix_input(root)
    (found,) = by_code(result)["DDP201"]
    assert not found.applied and "Data.reload() builds it each time it is called" in found.message
    assert "DDP201" in {i.code for i in result.incomplete}


def test_epochs_run_by_a_caller_are_reported_without_a_fix(tmp_path):
    root = golden_copy(KEPT, tmp_path)
    edit(
        root / "input.py",
        "    for epoch in range(args.epochs):\n        model.train()\n        for x, y in data.train:\n",
        "    def one_epoch():\n        for x, y in data.train:\n",
    )
    edit(
        root / "input.py",
        "            optimizer.zero_grad()\n\n        model.eval()\n",
        "            optimizer.zero_grad()\n\n    for epoch in range(args.epochs):\n        model.train()\n        one_epoch()\n        model.eval()\n",
    )
    result = fix_input(root)
    (found,) = by_code(result)["DDP201"]
    assert not found.applied and "the epochs of one_epoch() run where it is called" in found.message
    assert "DDP201" in {i.code for i in result.incomplete}


def test_a_data_object_read_as_a_global_by_the_training_function(tmp_path):
    root = golden_copy(KEPT, tmp_path)
    edit(
        root / "input.py",
        "    for epoch in range(args.epochs):\n",
        "    def fit():\n      for epoch in range(args.epochs):\n",
    )
    text = (root / "input.py").read_text()
    head, tail = text.split("      for epoch in range(args.epochs):\n")
    body = "".join("  " + line if line.strip() else line for line in tail.splitlines(keepends=True))
    (root / "input.py").write_text(head + "      for epoch in range(args.epochs):\n" + body + "\n    fit()\n")
    result = fix_input(root)
    assert by_code(result)["DDP201"][0].applied
    assert 'if isinstance(getattr(data.train, "sampler", None), DistributedSampler):' in result.code


def test_a_loader_attribute_set_in_each_branch_is_sharded_in_each(tmp_path):
    root = golden_copy(KEPT, tmp_path)
    edit(
        root / "data.py",
        "        self.train = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=batch_size, shuffle=True)\n",
        "        if batch_size > 4:\n"
        "            self.train = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=batch_size, shuffle=True)\n"
        "        else:\n"
        "            self.train = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=4, shuffle=True, drop_last=True)\n",
    )
    result = fix_input(root)
    assert by_code(result)["DDP201"][0].applied
    data = next(c.code for p, c in result.others.items() if Path(p).name == "data.py")
    assert data.count("dataset) if dist.is_initialized() else None") == 2
