"""DDP201: the training DataLoader has no DistributedSampler, so every rank sees the whole dataset."""

from __future__ import annotations

import libcst as cst

from ..analysis import Loader
from ..analysis.dataparallel import conversion_blocked, converts_keeping_plain_path, dataparallel_trains
from ..analysis.unseen_models import why_no_wrap
from ..batch_source_loaders import shard as shard_batch_sources
from ..class_loaders import shard as shard_class_loaders
from ..examples import clean, fixes, reports
from ..factory_reports import report_factory_loaders
from ..handed_wraps import withheld as handed_withheld
from ..loader_factory import shard_factories
from ..loader_kwargs import add_sampler_to_kwargs, dict_brings_sampler, has_unpassed_sampler, kwargs_fix_blocker
from ..local_samplers import swap_local_sampler
from ..module_epochs import set_epoch_blocker
from ..module_wraps import withheld, wrapped_here
from ..rule import Context, Rule
from ..sampler_edit import add_sampler, add_set_epoch, is_iterable_dataset, taken_per_rank
from ..syntax import kwarg, positional


class MissingDistributedSampler(Rule):
    code = "DDP201"
    name = "missing-distributed-sampler"
    message = "training DataLoader without a DistributedSampler: every rank trains on the whole dataset"
    requires = ("DDP001",)
    docs = """
## What
A DataLoader over a map-style dataset that feeds training steps, with no `sampler=` (or with a plain
`RandomSampler` / `SequentialSampler`, or a slot the script keeps for one and leaves empty on every
path: `train_sampler = None`, then `sampler=train_sampler`; distributed runs fill that slot,
`train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None`, where the dataset is
bound before it and the loader's `shuffle` is false or reads the slot, `shuffle=(train_sampler is
None)`). Training draws from it in one of these ways:
- a `for` loop over it (or over `tqdm(loader)`, `enumerate(loader)`, a parameter or class attribute
  holding it) with a training step inside;
- `next(it)` on `it = iter(loader)` in a loop that trains, in the same function or through a method
  of the loader's own class (`batch = stream.next()`);
- a generator of the script that draws from it and yields its batches (`yield next(it)`, or
  `for batch in loader: yield batch`), consumed by a loop that trains (`for x, y in sample_data(...)`,
  or `batches = iter(sample_data(...))` then `next(batches)`);
- a call that hands it to code iterating it elsewhere: a function or method of the script's own
  modules that trains over that argument (`trainer.train(train_loader)`, `Trainer` from
  `trainer.py`), or an ignite trainer (`trainer.run(train_loader, max_epochs=n)` with
  `trainer = create_supervised_trainer(...)`).

A loader over a dataset each rank builds for itself (its value depends on the rank:
`partitioner.use(dist.get_rank())`, `Subset(ds, range(rank, n, world_size))`) is already split and
is not reported.

## Why
DDP does not shard input. Without a `DistributedSampler` each of the N processes iterates the
full dataset, so an "epoch" does N times the work and the gradient average sees duplicates.

## Example
```python
train_loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
for epoch in range(epochs):
    for xb, yb in train_loader:
```
becomes
```python
train_dataset = TensorDataset(x, y)
train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
train_loader = DataLoader(train_dataset, batch_size=32, shuffle=(train_sampler is None), sampler=train_sampler)
for epoch in range(epochs):
    if train_sampler is not None:
        train_sampler.set_epoch(epoch)
    for xb, yb in train_loader:
```
`shuffle` moves into the sampler (`DistributedSampler(..., shuffle=False)` when the loader did not
shuffle), and `set_epoch(epoch)` becomes the first statement of the epoch loop so every epoch gets a
new order. A plain run has no sampler and keeps the exact same order and random-number use.

Arguments that come from a dict (`DataLoader(train_set, **train_kwargs)`) are followed to where the
dict is built (a literal, `dict(...)`, `{**a, **b}`, `.update(...)`, `d["shuffle"] = ...`), including
keys set on some paths only (`if use_cuda: train_kwargs.update(cuda_kwargs)` with `"shuffle": True`
in it). When the dict may hold `shuffle` (or the dataset), whether the loader shuffles is known at
run time only, so the sampler goes into the dict at run time:
```python
if DISTRIBUTED:
    train_kwargs["sampler"] = DistributedSampler(train_set, shuffle=train_kwargs.pop("shuffle", False))
train_loader = DataLoader(train_set, **train_kwargs)
for epoch in range(1, epochs + 1):
    if DISTRIBUTED:
        train_loader.sampler.set_epoch(epoch)
```
A dict that cannot hold `shuffle` gets the plain fix (`sampler=train_sampler` before `**train_kwargs`).
A dict that brings a sampler of its own on some paths only (`if args.use_sampler:
train_kwargs["sampler"] = WeightedRandomSampler(...)`) gets the DistributedSampler on the others
(`if DISTRIBUTED and "sampler" not in train_kwargs:`, and `set_epoch` only where the loader's sampler is
one), and the paths with its own sampler are reported on the output, to shard by hand: the conversion
is incomplete there. A sampler of its own on every path is reported with no fix; a DistributedSampler
the dict already brings is left alone.

A loader built in a helper of the script is found through the helper: returned alone, in a tuple or
in a dict (`train_dl, val_dl = build_loaders(args)`, `loaders = get_dataloaders(cfg)` then
`loaders["train"]`). The sampler goes where the loader is built, and `set_epoch` goes into the epoch
loop through the name the loop uses (`if isinstance(train_dl.sampler, DistributedSampler):`).

The epoch loop is the loop around the batch loop (for batches drawn with `next()`, the loop around
`iter(loader)`: a new iterator starts a new epoch), or a loop calling the function that holds it: a
`for` loop, or a `while epoch < n:` loop that steps its counter by one at its own level. An epoch loop
written `for _ in range(n):` (whose body does not read `_`) gets a variable, `epoch`, for the call.
An ignite trainer runs the epochs itself: `set_epoch` goes into a handler registered before
`trainer.run(...)` (ignite counts epochs from 1):
```python
@trainer.on(Events.EPOCH_STARTED)
def set_sampler_epoch(engine):
    if isinstance(train_loader.sampler, DistributedSampler):
        train_loader.sampler.set_epoch(engine.state.epoch - 1)
```
When a function or method of the script's own modules runs the epochs and calls no `set_epoch`
(`simclr.train(train_loader)`, with `SimCLR.train` in `simclr.py` looping over epochs), the sampler
goes in here and the fix also edits that module: `set_epoch` becomes the first statement of its epoch
loop, through the parameter the loader arrives as (or the attribute a class keeps it in:
`Learner(model, optimizer, train_loader).fit()` with `self.train_loader` iterated per epoch, also in a
method the epoch loop calls), tested at run time so that a plain run and any other caller's loader
skip it:
```python
        for epoch_counter in range(self.args.epochs):
            if isinstance(getattr(train_loader, "sampler", None), DistributedSampler):
                train_loader.sampler.set_epoch(epoch_counter)
            for images, _ in tqdm(train_loader):
```
A function or method (in the script or in one of its modules, also a generator that yields the
batches) that draws its batches with `next()` from an iterator it makes once before its loop and
again when it runs out (`except StopIteration: data_iter = iter(self.data_loader)`) has no epoch
loop: each pass over the loader is an epoch. So does a generator handed the loader that restarts it
(`def inf_generator(iterable):` making `iterable.__iter__()` again on `StopIteration`, with
`data_gen = inf_generator(train_loader)` and `data_gen.__next__()` in a loop over steps; `iter(x)` and
`x.__iter__()`, `next(it)` and `it.__next__()` are read alike), and so does a method of a class of the
script's modules handed the loader that makes batches of it with a generator method (`self.data =
self.get_infinite_batches(train_loader)`, `images = self.data.__next__()` in its training loop, the
generator looping `while True:` over the loader: the count goes around that loop). The fix counts the passes and sets the
epoch before each `iter()`, so every pass is reshuffled and the ranks' shards stay disjoint:
```python
        epoch = 0
        if isinstance(getattr(self.data_loader, "sampler", None), DistributedSampler):
            self.data_loader.sampler.set_epoch(epoch)
        data_iter = iter(self.data_loader)
        for i in range(self.num_iters):
            try:
                (real,) = next(data_iter)
            except StopIteration:
                epoch += 1
                if isinstance(getattr(self.data_loader, "sampler", None), DistributedSampler):
                    self.data_loader.sampler.set_epoch(epoch)
                data_iter = iter(self.data_loader)
                (real,) = next(data_iter)
```
The training loader of a class that builds the models it trains itself (`Solver(loader,
config).train()`) gets its sampler only where the fix also wraps those models in that class (DDP301),
also when a factory of the script's modules builds that loader (`get_loader(...)`);
where it cannot, no sampler is added, since sharded data without the wrap would train one
unsynchronised copy per rank. Such a class, or a class the script hands the model it trains
(`Trainer(model, dataset, config).train()`), may build its training loader itself too
(`self.train_loader = DataLoader(dataset, batch_size=..., shuffle=True)` in its `__init__`, or a local
loader in the method that trains on it: a loop over it that calls `backward()`, itself or through a
method of the class, or batches drawn with next() from `iter(loader)` in a loop that trains): then the
script holds no loader, and the finding is reported at the script's call with the module's lines. The
fix shards it there, decided at run time like the wrap:
`sampler = DistributedSampler(dataset) if dist.is_initialized() else None` before it, `shuffle` moved
into the sampler, and the epoch set first in the loop around the class's pass over it (a `while` loop
counting steps gets a count of its passes, as in DDP204; an iterator remade when it runs out, a count
of the remakes). A loader drawing an endless stream with replacement
(`sampler=RandomSampler(dataset, replacement=True, num_samples=n)`) gets a generator seeded per rank
instead (`generator=torch.Generator().manual_seed(torch.initial_seed() + dist.get_rank()) if
dist.is_initialized() else None`) and no epoch. The loader and the models a class builds go together:
the sampler is added only where those models are wrapped there, and they are wrapped only where the
loader can be sharded (not when it takes its arguments from a dict, has a sampler of its own, is built
anew each epoch, or no loop around the pass can name an epoch); otherwise nothing is converted and both
findings say why. For a model the script hands the class, the script wraps it, and a loader the fix
cannot shard is reported without a fix (the conversion is then incomplete, invariant 3). A loader
such a class trains on that a function of the script's modules builds and returns for it
(`self.data_loader = get_loader(config)`, `get_loader` in loaders.py, also through a local name:
`train_loader = DataLoader(...); data_loader = train_loader; return data_loader`) is sharded where that
function builds it, as for a factory the script calls itself: the function gets `distributed=False`
and the sampler when it is true, the class's call passes `distributed=dist.is_initialized()`, and the
class's loop sets the epoch; a function that gives its loader a sampler only when a parameter asks for
it is only asked. One the fix does not follow (`data.get_loader(...)` through a module, a function
returning several loaders) is reported without a fix: the fix does not reach it there, and says so
rather than report the conversion done. A validation loader the class only evaluates on is left alone.
Where that module may not be edited (outside the script's folder, an installed package, read-only,
cross-file edits off, an epoch loop with no epoch variable), the sampler still goes in here and the
message says where `set_epoch(epoch)` must be added by hand, and why the fix does not (DDP204 keeps
reporting it until it is there).

A `RandomSampler(ds, replacement=True, num_samples=n)` draws every sample independently, an endless
stream in which samples repeat. A `DistributedSampler` cannot draw with replacement, and the same
draws on every rank (one seed everywhere) would train every rank on the same samples; each rank
drawing its own stream is what one process drawing N times as many would do. So it gets a generator
seeded per rank when distributed (`generator=torch.Generator().manual_seed(torch.initial_seed() + RANK)
if DISTRIBUTED else None`); a plain run keeps drawing from the global generator as before. Each rank
still draws `num_samples` per pass. A sampler with a generator of its own, or a `replacement` that is
not a literal, is reported only.

Objects a config names by class (`init_obj(module_trainer, config["trainer"], model, ...)`, a factory
of the script's own modules that returns `getattr(module, cfg["type"])(...)`) are built from a class
chosen at run time. A training loader built that way from a module that offers `DataLoader`
subclasses, and handed to a trainer built the same way, is reported at the factory call with each
class's file and line; the classes the module offers are known, so the fix edits every one the config
could name, each dual-mode: every DataLoader class builds
`sampler = DistributedSampler(dataset, shuffle=shuffle) if dist.is_initialized() else None` before its
`super().__init__(dataset, ..., shuffle=(sampler is None and shuffle), sampler=sampler)`, and every
trainer class the factory can build with that loader sets its epoch where the epoch and the loader
meet: in the loop of its method over `self.data_loader`, or first in that method
(`if isinstance(getattr(self.data_loader, "sampler", None), DistributedSampler):
self.data_loader.sampler.set_epoch(epoch)`) when an epoch loop of its chain hands it the epoch
(`for epoch in ...: self._train_epoch(epoch)` in a base class of another file). A plain run builds no
sampler and skips the call. Where one class cannot be edited (its loader's arguments come from a dict,
it has a `batch_sampler` or no `super().__init__`, a trainer keeps no loader or has no epoch to pass,
the module may not be edited), the finding has no fix, says why, and no class is edited for it.

## Fix safety
Safe for map-style datasets. Loaders with `batch_sampler=` or over an `IterableDataset` get the
diagnostic only, and so do loaders whose dict of arguments cannot be read (`**vars(args)`, a
function's result or parameter: the message names it and its line), is handed to other code before
the loader, is used again after it (the sampler would reach that use too), or is unpacked in a loop.
A helper that builds the training loader and also a loader nothing trains on
(`make_loader(train_set)`, `make_loader(val_set)`) is reported at the training call: sharding inside
it would shard both. A training loader built by a factory function in one of the script's own modules
(`build_loaders()` in data_utils.py beside the script) is sharded there: the factory gets a parameter
`distributed=False` that adds the sampler when true, the script's training call passes
`distributed=DISTRIBUTED`, and its epoch loop sets the epoch through `loader.sampler`; other callers
of the factory keep what they had. Training batches the script asks an object of its own modules
for one call at a time (`images, labels = train_dataset.get_batch()` in the training loop), where the
object's class builds DataLoaders in `__init__` and draws from them with next(), are sharded in that
class: each DataLoader gets `sampler = DistributedSampler(dataset) if dist.is_initialized() else None`,
and each `iter()` that starts a new pass over one (`self.iters[i] = iter(self.loaders[i])` under
`except StopIteration:`) first sets its sampler's epoch one past its own count
(`self.loaders[i].sampler.set_epoch(self.loaders[i].sampler.epoch + 1)`); a loader built anew at each
call, or a pass started over an expression that calls something, is reported without a fix. A
DataLoader such an object keeps as an attribute (`self.train = DataLoader(...)` in `__init__`), which the
script's training loop iterates (`for batch in dataset.train:`), gets its sampler there the same way and
its epoch set at the start of each pass of the script's loop around it
(`dataset.train.sampler.set_epoch(epoch)` behind the same `isinstance` test); where that loop is in a
caller of the function, it is reported without a fix. That
edit of the other file is made only inside the script's folder
and with cross-file edits on (`--no-cross-file` keeps them off), and not for a factory that builds the
loader from a `**kwargs` dict or with a `batch_sampler`, reads an IterableDataset, already uses the
name `distributed`, or is run by its own module as a program: then the finding names that file and
line and why. With a model still in
`nn.DataParallel` the sampler is as unsafe as its conversion (DDP302), and it is not added where that
conversion is not possible: sharded data without the DDP wrap would train unsynchronised copies.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        # Sharding the data is only right once gradients are synchronised: a model left in
        # nn.DataParallel (its conversion, DDP302, is an unsafe fix) would train per-rank copies.
        # So with a DataParallel model the sampler is as unsafe as that conversion, in check and fix alike.
        dataparallel = dataparallel_trains(facts.models) and not converts_keeping_plain_path(
            facts.index, facts.names, facts.models, facts.launch
        )
        # A DataParallel that DDP302 cannot convert stays: sharding the data then trains N unsynchronised copies.
        stuck = dataparallel and conversion_blocked(facts.index, facts.names, facts.models)
        # Models a class of the script's own modules builds and trains, unwrapped: no sampler before the wrap.
        built = None if facts.models.trained else withheld(ctx)
        blocked = why_no_wrap(facts) or handed_withheld(ctx)
        why = f"{built}: wrap them there first" if built is not None else f"{blocked}: wrap it first"
        for loader, batch_loop in facts.data.training_loaders:
            if built is not None or blocked is not None:
                ctx.report(
                    loader.site.node,
                    f"training DataLoader without a DistributedSampler; {why}, then shard the data",
                    fix="none",
                )
                continue
            if stuck:
                ctx.report(
                    loader.site.node,
                    "training DataLoader without a DistributedSampler; the model is still nn.DataParallel, which "
                    "cannot be converted automatically (DDP302): convert it to DDP by hand, then shard the data",
                    fix="none",
                )
                continue
            if dataparallel and not ctx.unsafe_fixes:
                ctx.report(
                    loader.site.node,
                    "training DataLoader without a DistributedSampler; the model is still nn.DataParallel: "
                    "convert it to DDP first (DDP302, --unsafe-fixes), then shard the data",
                    fix="unsafe",
                )
                continue
            call = loader.site.node
            assert isinstance(call, cst.Call)
            shared = facts.data.shared_factory(loader)
            if shared is not None and kwarg(call, "sampler") is None:
                ctx.report(
                    loader.via[0],
                    f"training DataLoader without a DistributedSampler; {loader.factory.name.value}() "  # type: ignore[union-attr]
                    f"(line {_line(facts, call)}) also builds {shared.target} (line {_line(facts, shared.via[0])}), "
                    "which is not a training loader: give it a sampler argument, or build the training loader apart",
                    fix="none",
                )
                continue
            if kwarg(call, "sampler") is not None:
                swap_local_sampler(ctx, loader, batch_loop, kwarg(call, "sampler"))
                continue
            if has_unpassed_sampler(facts, call):
                continue
            contents = facts.data.kwargs_of(call)
            if contents is not None and contents.unknown:
                ctx.report(
                    call,
                    f"training DataLoader without a DistributedSampler; its arguments come from {contents.unknown[0]}, "
                    "which cannot be read here: pass sampler=DistributedSampler(dataset) and move shuffle into it",
                    fix="none",
                )
                continue
            if contents is not None and dict_brings_sampler(ctx, call, contents):
                continue  # a DistributedSampler, or a sampler of another kind that it reports
            if kwarg(call, "batch_sampler") is not None or (contents is not None and contents.has("batch_sampler")):
                ctx.report(
                    call, "training DataLoader with a batch_sampler: shard the batches per rank by hand", fix="none"
                )
                continue
            ds_arg = positional(call, 0) or kwarg(call, "dataset")
            ds_key = contents is not None and ds_arg is None and contents.has("dataset")
            if (ds_arg is None and not ds_key) or (ds_arg is not None and is_iterable_dataset(facts, ds_arg.value)):
                ctx.report(
                    call,
                    "training DataLoader over an IterableDataset: shard it per rank inside the dataset",
                    fix="none",
                )
                continue
            if ds_arg is not None and taken_per_rank(facts, ds_arg.value):
                continue  # a dataset each rank builds for itself (`partitioner.use(dist.get_rank())`): already split
            message = _elsewhere(ctx, self, loader, batch_loop)
            if contents is not None and (contents.has("shuffle") or ds_key):
                why = kwargs_fix_blocker(facts, call)
                if why is not None:
                    ctx.report(
                        call,
                        f"training DataLoader without a DistributedSampler; {why} "
                        "(pass sampler=DistributedSampler(dataset) and move shuffle into it)",
                        fix="none",
                    )
                elif ctx.report(call, message, fix="unsafe" if dataparallel else None):
                    add_sampler_to_kwargs(ctx, loader, batch_loop, ds_arg)
                continue
            if not ctx.report(call, message, fix="unsafe" if dataparallel else None):
                continue
            add_set_epoch(ctx, loader, batch_loop, add_sampler(ctx, loader, ds_arg))
        unwrapped = why if built is not None or blocked is not None else None
        shard_factories(ctx, self, unwrapped)
        shard_class_loaders(ctx, self, lambda summary, cls: self._unwrapped(ctx, summary, cls, unwrapped))
        if unwrapped is None and stuck:
            unwrapped = "the model is still nn.DataParallel, which cannot be converted automatically (DDP302)"
        elif unwrapped is None and dataparallel and not ctx.unsafe_fixes:
            unwrapped = "the model is still nn.DataParallel: convert it to DDP first (DDP302, --unsafe-fixes)"
        shard_batch_sources(ctx, self, unwrapped)
        report_factory_loaders(ctx, "training DataLoader without a DistributedSampler")

    def _unwrapped(self, ctx: Context, summary, cls, script: str | None) -> str | None:
        """Why the models a class of the script's modules trains stay unwrapped in this pass: those it
        builds, wrapped there (module_wraps.py), or the model the script hands it, wrapped by the script."""
        if cls.trained or cls.local_models:
            return (
                None
                if wrapped_here(ctx, self, summary, cls)
                else f"the models of {cls.shown} are not wrapped there (DDP301)"
            )
        if ctx.fixing and "DDP301" not in ctx.fixing:
            return "the model it trains is not wrapped (DDP301 is not fixed)"
        return script


def _elsewhere(ctx: Context, rule: Rule, loader: Loader, batch_loop: cst.CSTNode) -> str | None:
    """The finding's message when the loader's epochs run in one of the script's own modules, which
    has no set_epoch for it: the sampler goes in here, the set_epoch call in there (module_epochs.py),
    or by hand where that module cannot be edited."""
    facts = ctx.facts
    handoff = facts.data.handoff(batch_loop)
    if handoff is None or handoff.engine is not None or not handoff.epochs_there or handoff.sets_epoch:
        return None
    if facts.data.epoch_loop_for(batch_loop) is not None:
        return None
    head = f"training DataLoader without a DistributedSampler; {handoff.where} runs the epochs over it"
    why, where = set_epoch_blocker(ctx, rule, handoff)
    if why is None:
        return f"{head}: the fix also sets its sampler's epoch at the start of each epoch there ({where})"
    return (
        f"{head}: call {handoff.there or loader.target}.sampler.set_epoch(epoch) at the start of each epoch there "
        f"(the fix cannot edit that file: {why})"
    )


def _line(facts, node: cst.CSTNode) -> int:
    return facts.index.position(node).start.line


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset

        dist.init_process_group("gloo")
        loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        dist.init_process_group("gloo")
        dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(dataset) if DISTRIBUTED else None
        loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            if sampler is not None:
                sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note="Each rank gets its own shard, a new order every epoch; a plain run keeps its shuffled loader:",
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, IterableDataset


        class Stream(IterableDataset):
            def __iter__(self):
                for _ in range(64):
                    yield torch.randn(4), torch.randn(1)


        dist.init_process_group("gloo")
        loader = DataLoader(Stream(), batch_size=8)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        message="training DataLoader over an IterableDataset: shard it per rank inside the dataset",
        note=(
            "Reported without a fix: a sampler cannot shard an IterableDataset; the dataset itself must split "
            "its stream per rank:"
        ),
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note="A loader that already shards with a DistributedSampler:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, Subset, TensorDataset

        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        part = Subset(ds, range(dist.get_rank(), len(ds), dist.get_world_size()))
        loader = DataLoader(part, batch_size=8, shuffle=True)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note="A loader over a partition each rank takes for itself (the dataset depends on the rank):",
    ),
)
