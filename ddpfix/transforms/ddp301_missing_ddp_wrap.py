"""DDP301: the trained model is never wrapped in DistributedDataParallel."""

from __future__ import annotations

import libcst as cst

from ..analysis.global_rebinds import moved_after_wrap, rebound_after
from ..analysis.unseen_models import unseen_clause, unseen_training
from ..analysis.unused import sits_out
from ..diagnostic import NONE
from ..double_backward import lone_penalty, penalty_words
from ..edits import cuda_test
from ..examples import clean, fixes
from ..handed_wraps import class_wrap
from ..handles import raw_handle
from ..module_trials import keep
from ..module_wraps import wraps_in_modules
from ..plain_returns import return_plain
from ..plain_spelling import UNWRAP
from ..plan import PlannedWrap
from ..rule import Context, Order, Rule
from ..syntax import anchor_of, assign_targets, assigned_value, dotted

DDP = "torch.nn.parallel.DistributedDataParallel"


class MissingDdpWrap(Rule):
    code = "DDP301"
    name = "missing-ddp-wrap"
    message = "trained model is never wrapped in DistributedDataParallel: gradients are not synchronised"
    requires = ("DDP001",)
    provides = frozenset({"wraps"})
    docs = """
## What
A model whose parameters an optimizer updates (also through a name bound before: `params = [p for
p in model.parameters() if p.requires_grad]`, or a function that builds the optimizer over the
parameters of the model it is handed: `optimizer = set_optimizer(opt, model)`, of this file or of the
script's own modules, or a function of this file over a module-level model's: `optimizer =
make_optimizer(lr)`, or an argument such a function builds: `AdamW(param_groups(model, wd))`), or
that the script updates by hand (`for p in
model.parameters(): p -= lr * p.grad`, `p.data.add_(p.grad, alpha=-lr)`), with no
`DistributedDataParallel(model)` (a conditional `DDP(net) if distributed else net` counts). Also a
model a helper builds and returns (`model, optimizer = build(cfg)`, `return {"model": net, "opt":
...}`, of this file or of the script's own modules), a model handed to a function of the script's
own modules that trains it (`train_one_epoch(model, optimizer, loader)` from a local package), a
model handed to a class of the script's own modules that keeps it, builds its optimizer over it and
trains it (`Trainer(model, loader).fit(2)` with `self.opt = torch.optim.SGD(model.parameters())` in
`Trainer.__init__`, or in a method that reads it through a local name, `model, config = self.model,
self.config`, or that a method of the model builds, `self.optimizer = model.configure_optimizers(config)`
then stepped: the script wraps it before the hand-over, and the class's optimizer is then over the
wrapper's parameters; where the class moves the model to its device after the hand-over
(`self.model = self.model.to(self.device)`, also under `if torch.cuda.is_available():`) and the script
has not moved it there before, a wrap in the script would hold a model on the CPU that is moved
afterwards, which fails at the first backward on GPUs, so the wrap goes in the class instead, right
after that move in `__init__` and decided at run time (`if dist.is_initialized(): self.model =
DDP(self.model, ...)`), the script keeping the plain module; the class's uses the wrapper does not
serve, also through a local name (`model.configure_optimizers(config)`), go through the plain module,
and its saves write the plain module's keys (DDP402). A class that binds or moves the model outside
`__init__`, calls or hands on the plain parameter after the move, or whose object the script reads
the model back from (`trainer.model`), is not converted, and the finding says why), and models kept
in a list with one optimizer each (`opts = [SGD(net.parameters()) for net in nets]`).
An optimizer over parameter groups of submodules (`{"params": model.head.parameters()}`) trains the
model that owns them: it is wrapped, and the groups then come from the unwrapped model (DDP308).

A loss module the optimizer is also given (`params = list(model.parameters()) +
list(criterion.parameters())`) is a module to wrap only if it holds parameters: a loss of torch.nn
holds none (all but `AdaptiveLogSoftmaxWithLoss`) and is not wrapped; one of the script's own (a
class named `...Loss`/`...Criterion`, or kept as `criterion`/`loss_fn`) may hold some or none by its
configuration, so the wrap is decided at run time, `if DISTRIBUTED and any(p.requires_grad for p in
criterion.parameters()):` (DDP refuses a module without parameters that need gradients).

A model the training loop reaches only through a module that holds it (`trainer =
GaussianDiffusionTrainer(model).to(device)`, then `loss = trainer(x0)`; a module of the script's own,
of this file or of its modules, built from the model's name) is trained through that module's
forward: the holder is wrapped, after it is built and moved, and the model keeps its name as the
plain module, so an EMA copy (`copy.deepcopy(model)`), `ema(model, ema_model)` and the checkpoint's
`model.state_dict()` stay as they are. Only where that is certain: one such module run with
gradients on (a sampler built from the model and run under `torch.no_grad()` does not count), in the
function that calls `backward()`, and the model itself not run there nor handed to a function of the
script that runs it; otherwise the model itself is wrapped, as above.

The wrap follows what prepares the model where it is built: a move to its device, a load, an
initialisation, and what changes which parameters it trains, a freeze (`for p in
model.backbone.parameters(): p.requires_grad = False`, `model.fc.requires_grad_(False)`, a function
of the script handed the model or a part of it that does so, `freeze(model[0])`, also under a
flag, `if args.freeze_layers: ...`) or a new layer (`model.fc = nn.Linear(512, 10)`); what only reads
the model there (a writer's `add_graph(model, x)`, `wandb.watch(model)`) does not stop it. DDP registers the parameters that need a gradient, of the
layers it holds, when it is built: a freeze or a new layer after the wrap leaves it waiting for
gradients that never come, and the second step raises "Expected to have finished reduction in the
prior iteration".

An optimizer the analysis cannot trace to a model (`optimizer = build_optimizer(config)` of a
library) whose `step()` the script calls after a `backward()` (where it is built, or in a function of
the script it is handed to, `train(model, loader, optimizer)`), with no model found and none wrapped:
reported at the step, without a fix, and nothing else of the conversion is made (DDP001, DDP201): a
process group and a sampler without the wrap would train one unsynchronised copy per rank.

A module-level model that a function rebinds through `global` (`def model_load(fn): global model;
model = torch.load(fn)`) is wrapped without a name kept for the plain module when that function is
called only once training is over (at the script's top level, no loop around the call, nothing after
it that trains, as in loading the best model back for the final test): every use that needs the
plain module reads it from the name as it is then, `getattr(model, "module", model)`, the loaded
module itself after the call. Called where training may go on after it (in a loop, in a function,
before more training), it is reported without a fix: from that call on the name holds what was
loaded, while a kept plain module would still hold the trained one. No process group or sampler is
added then either (DDP001, DDP201).

A function that builds its model and trains it (also through a Trainer object of the script's
modules) before returning it is where the wrap goes, not after the call that hands it back (a helper
that only builds it, `return model, optimizer`, gets the wrap where it is called); it then returns
the plain module (`return raw_model`), the object a plain run returns, for the caller to use as written.

Training the script reaches only through its own modules, on a model it never holds, is reported at
the call without a fix, and withholds the rest of the conversion the same way: a function that builds
and trains its model reached through another function of the modules (`main()` there calling
`fit()`), or a method of a class whose model the fix cannot place (built in a
base class of another module; also a class called through an alias, `Exp = Exp_Informer`). A
function or class there that wraps its model in DDP itself is left to do so.

## Why
Without the wrap each rank trains its own copy: gradients are never averaged, parameters drift
apart and N processes do N independent trainings.

## Example
```python
model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
```
becomes
```python
model = Net().to(device)
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
```
The wrap goes after the model is built, moved to its device, initialised and any checkpoint is
loaded (also by a helper that only loads into it), and before the optimizer and the first statement
that runs the model or hands it on. Initialised means any statement that changes the parameters in
place: `model.apply(init)`, a method of the model's class that writes them (`G.weight_init(0.0,
0.02)`; for a class from elsewhere, a method named as an initialiser), `nn.init.normal_(model.fc.weight)`,
`model.fc.bias.data.zero_()`, a `for m in model.modules():` loop re-initialising the layers. DDP
copies rank 0's parameters to every rank once, when it is built: an unseeded re-initialisation after
the wrap would leave each rank its own weights for the whole run. A model defined or moved under an `if`
(`if use_gpu: model = model.cuda()`, a model picked in an `if/elif/else` chain) is wrapped after that
whole `if`, at the level where it is trained, so that the wrap runs whichever branch ran. A model a
helper builds is wrapped in the caller, after the call (`model, optimizer = build(cfg)` then the
wrap). A list of models is wrapped element by element: `raw_nets = nets`, then `nets = [DDP(net,
...) for net in nets]` when distributed. Where another fix needs the plain module after the wrap (a
save of its state without the `module.` prefix, a method only the model has, `return raw_model`), the
wrap keeps a name for it first, `raw_model = model`; where no edit reads that name, the line is left
out. A wrap under a condition with no such name (`if args.distributed: model = DDP(model)`) reaches
the plain module as `getattr(model, "module", model)`, which is the model itself in a plain run. `device_ids` is set only on
CUDA (`ValueError: DistributedDataParallel device_ids and output_device arguments only work with
single-device/multiple-device GPU modules or CPU modules` otherwise): the script's
`device.type == "cuda"` when the model is moved with that device before the wrap, else
`next(model.parameters()).is_cuda`. When the model's class (of this file) uses a submodule in
forward only on some inputs or only when built with some option (`if self.do_bn: x = self.bn(x)`),
which parameters get gradients is known only at run time: the wrap passes
`find_unused_parameters=True` (DDP310 names the submodule). A hand-written update keeps running after the wrap and sees the
averaged gradients.

A class of the script's own modules that builds its models and their optimizers itself, and that
the script only hands its data and calls (`Solver(loader, config).train()`, with `self.G`, `self.D`
and their optimizers built in solver.py), is reported at that call with the file and line of each
model there; the fix wraps each model in that class, right after it is built (and moved, initialised,
loaded) and before the optimizer over its parameters, when the process group is initialised:
```python
self.G = Generator(self.z_dim, image_size)
if dist.is_initialized():
    self.G = DDP(self.G, device_ids=[torch.cuda.current_device()] if next(self.G.parameters()).is_cuda else None)
self.g_optimizer = torch.optim.Adam(self.G.parameters(), lr, betas=(0.5, 0.999))
```
The test is made at run time, so a plain run, and any other entry point that imports the class, keeps
the plain model; `device_ids` is the current CUDA device, which the entry's setup sets to LOCAL_RANK.
After the wrap the class uses each model as DDP serves it: called (the forward), or through
`parameters()`, `train()`, `eval()`, `zero_grad()`, `state_dict()` (DDP402 then saves the plain
module's keys) and the like. What the wrapper does not answer as the model would, the fix reads
through the plain module in the class's own methods, the model itself in a plain run: a state loaded
into it and what only the model has (any name outside the public API of `nn.Module` and
`DistributedDataParallel`, as DDP308 reads it):
```python
getattr(self.model, "module", self.model).load_state_dict(ckpt["model_state"])
h = torch.zeros(batch_size, getattr(self.model, "module", self.model).hidden_size)
```
A load before the wrap (between the build and the optimizer) is the model's own and stays as it is;
so is a method of the class that only the statements before the wrap call (`self.check_cuda(args.cuda)`
moving `self.D` and `self.G` to the GPU in `__init__`): the wrap goes after that call. An instance
bound in several branches to different classes (`model = GAN(args)` under `if`, `model = WGAN(args)`
under `elif`, then `model.train(train_loader)`) is reported for each class and converted in each,
or, where one of them cannot be, in none (no branch trains unsynchronised copies).

A gradient penalty back-propagated on its own through a model the fix would wrap (WGAN-GP:
`prob = D(interpolated)`, `gradients = torch.autograd.grad(outputs=prob, inputs=interpolated,
create_graph=True)[0]`, then `penalty.backward()` by itself, in the script or in a class of its
modules) is a double backward that leaves parameters without a gradient (the critic's last bias);
DDP never finishes that reduction ("Expected to have finished reduction in the prior iteration", with
`find_unused_parameters=True` or `static_graph=True` too). That model is reported without a fix,
naming the `autograd.grad` line: add the penalty to the loss back-propagated with the other terms
(`(d_fake - d_real + penalty).backward()`, which DDP accepts), then convert.
A model the method the script calls builds and trains as its own local (`Trainer(args).train()`, with
`model = Forecaster(...)`, `model = model.to(self.device)` and the optimizer over `model.parameters()`
in `Trainer.train`) gets its wrap in that method the same way, after the statements that build and
prepare it at the method's top level and before its optimizer; its saves and the reads of what only
the model has go through `getattr(model, "module", model)`. Such a model bound inside a block of the
method, bound to something else before its optimizer or again after it, or put in `nn.DataParallel`
there is left to the user, and the whole script with it. A module-level function the script calls
that builds and trains its model as a local (`fit(args.epochs, args.out)`, with `model =
Regressor(width=12).to(device)` and its optimizer in `fit` of fitting.py) is read the same way: the
wrap, the DataLoader it builds (a sampler when distributed, its epoch set in the function's loop), its
saves and its prints are all fixed in that function, under the same limits; a loader the script builds
(or a function of its modules builds for it) and hands to that function is sharded where it is built.
With no loader found to reach that training (batches the function draws itself), nothing is converted.
The model handed to another function of the module (`evaluate(model, test_loader, device)`) is
followed there: what only the model has (`model.width`) and its `state_dict()` are read through
`getattr(model, "module", model)` in that function.
The saves the class loads back are the plain module's too (DDP402); where DDP402 is not fixed, a
class that saves and loads its model's state is not converted (the keys would not match).
A method of the model that runs a forward (or of a class not read, a library's) called in the
training step, whose gradients on the plain module DDP would not average; a move or another use of
the two APIs after the wrap (`self.G.to(device)`, `self.G.module`); a model handed on to a function
the fix does not read (another module's, a library's: `load_weights(self.G, path)`, whose callee may
need the model or the wrapper; one of the same module is followed, see above); a model built more
than once or whose optimizer is built in another block; a model the script itself reaches through
the object it trains with (`solver.G.state_dict()`); and a class that also trains a model it is
handed are not wrapped there: then nothing is distributed (DDP001 adds no process group and DDP201
no sampler, which without the wrap would train one unsynchronised copy per rank) and every finding
says why.

## Fix safety
Safe: a plain run skips the wrap, in the script and in a class of its modules alike, and
`getattr(self.G, "module", self.G)` is then the model itself. The wrap needs the process group
(DDP001), so it is offered at no better level than DDP001's fix: only with `--unsafe-fixes` where the
script becomes distributed only so (another trained model is in `nn.DataParallel`).
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for model in facts.models.trained:
            if facts.models.wrapped(model) is not None or facts.models.dataparallel(model) is not None:
                continue
            holds = _holds_parameters(facts, model)
            if holds is False:
                continue  # a loss of torch.nn whose parameters() an optimizer is given: it has none to sync
            point = facts.models.wrap_point(model)
            # a function that rebinds the global name once training is over (`model_load(args.save)` for the
            # test): no name kept for the plain module, which would still hold the trained one
            rebound = rebound_after(facts.index, model.handle, point.anchor)
            loaded = (
                rebound is not None
                and model.each is None
                and rebound_after(facts.index, model.handle, point.anchor, facts.training) is None
            )
            if loaded:
                rebound = None
            raw = UNWRAP.format(name=model.handle) if loaded else raw_handle(ctx, model)
            planned = ctx.plan.wraps[model.handle] = PlannedWrap(raw)  # later rules see the wrap, fixed or not
            before = len(ctx.diagnostics)
            penalty = lone_penalty(facts.module, model.handle) if _differentiates(facts) else None
            why = None
            if rebound is not None:
                why = (
                    f"{rebound[0]}() rebinds the global {model.handle} after the wrap, at line {rebound[1]}: the "
                    "plain module and the wrapper would no longer be the model it loads; keep what it loads apart "
                    "from the trained model, or wrap by hand"
                )
            elif penalty is not None:
                why = penalty_words(model.handle, f"line {facts.index.position(penalty).start.line}")
            if why is not None:
                planned.level = NONE
                ctx.report(anchor_of(_reported_binding(facts, model)), f"{self.message} ({why})", fix="none")
                continue
            in_class = class_wrap(ctx, self, model)
            if in_class is not None:  # the class it is handed to moves it: the wrap goes there, after the move
                del ctx.plan.wraps[model.handle]  # the script's name keeps the plain module
                why, where, edits = in_class
                reported = anchor_of(_reported_binding(facts, model))
                if why is not None:
                    moved = moved_after_wrap(facts.models, facts.index, model.handle)
                    ctx.report(reported, f"{self.message} ({moved}; the fix does not: {why})", fix="none")
                elif ctx.report(reported, f"{self.message}; {where}"):
                    keep(ctx, self, edits)
                continue
            made = ctx.report(anchor_of(_reported_binding(facts, model)))
            # what its finding offers (DDP001 may set up the process group only unsafely, or not); silenced: none
            planned.level = ctx.diagnostics[-1].fix if len(ctx.diagnostics) > before else NONE
            if not made:
                continue
            ddp = ctx.plan.ref(DDP, "DDP")
            template = """
                {keep}if {D}{some}:
                    {m} = {ddp}({m}, device_ids=[{L}] if {cuda} else None{unused})
                """
            if model.each is not None:  # a list of models trained side by side: wrap each one
                template = """
                {raw} = {m}
                if {D}:
                    {m} = [{ddp}({e}, device_ids=[{L}] if {cuda} else None{unused}) for {e} in {m}]
                """
            stmts = ctx.plan.statements(
                template,
                keep="" if loaded else f"{raw} = {model.handle}\n",
                raw=raw,
                m=model.handle,
                e=model.each or "",
                D=ctx.env("DISTRIBUTED"),
                # a loss module may hold no parameters (DDP refuses such a module): decided at run time
                some=f" and any(p.requires_grad for p in {model.handle}.parameters())" if holds is None else "",
                ddp=ddp,
                L=ctx.env("LOCAL_RANK"),
                cuda=_cuda(ctx, model, point.anchor),
                unused=", find_unused_parameters=True" if sits_out(facts, model) else "",
            )
            ctx.plan.insert_after(point.anchor, stmts, order=Order.WRAP)
            if model.each is None:
                return_plain(ctx, model.handle, raw, point.anchor)  # `return model` hands back the plain module
        wraps_in_modules(ctx, self)
        unseen = unseen_training(facts)
        if unseen is not None:
            ctx.report(
                unseen,
                f"{unseen_clause(unseen)}: wrap it in DistributedDataParallel where it is built, after it is moved "
                "to its device and before its optimizer",
                fix="none",
            )


def _differentiates(facts) -> bool:
    """Does the script call `torch.autograd.grad` (a gradient penalty may be made there)?"""
    return any((dotted(c.func) or "").endswith("autograd.grad") for c in facts.index.calls)


def _reported_binding(facts, model) -> cst.CSTNode:
    """The statement the finding is shown at: the model's definition, or, where that only rebinds the
    name to itself (`model = model`), the binding it copies (`model = Net()`)."""
    stmt = model.definition.stmt
    while _self_rebind(stmt, model.handle):
        scope = facts.index.scope_of(stmt)
        earlier = [s.stmt for s in facts.names.assignments_before(scope, model.handle, stmt)]
        if not earlier:
            break
        stmt = earlier[-1]
    return stmt


def _self_rebind(stmt: cst.CSTNode, handle: str) -> bool:
    value = assigned_value(stmt)
    return value is not None and dotted(value) == handle and assign_targets(stmt) == [handle]


def _holds_parameters(facts, model) -> bool | None:
    """False for a loss of torch.nn (`criterion = nn.MSELoss()`, all but AdaptiveLogSoftmaxWithLoss
    hold no parameters); None for a module named or built as a loss or criterion of the script's own
    (`criterion = SplitCrossEntropyLoss(...)`: it may hold some or none); True for the rest."""
    value = assigned_value(model.definition.stmt)
    built = facts.names.call_qual(value) if isinstance(value, cst.Call) else None
    if built is not None and built.startswith("torch.nn.") and built.endswith("Loss"):
        return "AdaptiveLogSoftmax" in built
    leaf = (built or "").split(".")[-1]
    name = model.handle.split(".")[-1].lower()
    if "Loss" in leaf or "Criterion" in leaf or "criterion" in name or "loss" in name:
        return None
    return True


def _cuda(ctx: Context, model, anchor) -> str:
    """The script's `device.type == "cuda"` when the model is moved with that device before the wrap;
    else the model's own parameters tell (`next(model.parameters()).is_cuda`): a model built by a
    helper, or kept on the CPU beside a device variable, gets `device_ids` only on CUDA."""
    module = model.each or model.handle
    dev = ctx.facts.models.device_var(anchor)
    if dev is not None and dev[1] and not ctx.facts.models.moved_with(model, anchor, dev[0]):
        return f"next({module}.parameters()).is_cuda"
    return cuda_test(ctx, module, anchor)


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn


        def main():
            dist.init_process_group("gloo")
            device = torch.device("cpu")
            model = nn.Linear(4, 1).to(device)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1


        def main():
            dist.init_process_group("gloo")
            device = torch.device("cpu")
            model = nn.Linear(4, 1).to(device)
            if DISTRIBUTED:
                model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        note=(
            "The model is wrapped once it is on its device, before the optimizer sees it (no edit reads the plain "
            "module after the wrap here, so no name is kept for it):"
        ),
    ),
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn

        dist.init_process_group("gloo")
        model = nn.Linear(4, 1)
        if torch.cuda.is_available():
            model = model.cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4, device=next(model.parameters()).device)).pow(2).mean()
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

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        dist.init_process_group("gloo")
        model = nn.Linear(4, 1)
        if torch.cuda.is_available():
            model = model.cuda()
        if DISTRIBUTED:
            model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4, device=next(model.parameters()).device)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A model moved to the GPU under an `if` is wrapped after that `if`, whichever way it went:",
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        if WORLD_SIZE > 1:
            dist.init_process_group("gloo")
        model = nn.Linear(4, 1)
        if WORLD_SIZE > 1:
            model = DDP(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A model wrapped when the run is distributed:",
    ),
)
