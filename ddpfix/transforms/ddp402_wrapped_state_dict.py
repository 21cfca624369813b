"""DDP402: saving the DDP wrapper's state_dict (keys get a `module.` prefix)."""

from __future__ import annotations

import libcst as cst

from ..analysis.classes import module_under
from ..analysis.effects import PICKLERS
from ..analysis.model_params import STATE_DICT
from ..examples import clean, fixes
from ..factory_reports import report_factory_state_dicts
from ..handles import handles_prefix, handoffs, keys_kept, once_wrapped, raw_at, wrap_level, wrappers
from ..kept_state_dicts import unwrap_kept_attributes
from ..module_unwrap import inside_load, unwrap_built_models, unwrap_handed_wraps, unwrap_in_classes
from ..rule import Context, Rule
from ..syntax import code_of, dotted, receiver


class WrappedStateDict(Rule):
    code = "DDP402"
    name = "wrapped-state-dict"
    message = "state_dict() of the DDP-wrapped model: keys get a 'module.' prefix; use the unwrapped model"
    requires = ("DDP301",)
    reads = frozenset({"wraps"})
    docs = """
## What
`model.state_dict()` where `model` is (or becomes) the `DistributedDataParallel` wrapper, the
wrapper handed to a helper of the script (of this file or of its own modules) that saves its
`state_dict()` (`save_checkpoint(model, path)`), or the whole wrapper pickled (`torch.save(model,
path)`, `joblib.dump`, `pickle.dump`, also as a value of the dict saved, `state = {"net": net, "acc":
acc}; torch.save(state, path)`, or an element of a list or tuple saved, `torch.save([model, criterion,
optimizer], f)`: loading it needs a process group), also by a helper or a method of
an object of this file it is handed to (`early_stopper.is_continuable(model, loss)` running
`torch.save(model, self.save_path)`: the plain module is passed). The methods that return the
module they are called on return the wrapper itself: `model.float().state_dict()` and
`torch.save(model.cpu().eval(), path)` become `raw_model.float().state_dict()` and
`torch.save(raw_model.cpu().eval(), path)` (the same calls on the plain module, which the wrapper's
would have moved or cast anyway).

## Why
The wrapper's keys are `module.conv.weight`, ...; loading such a checkpoint into a plain model fails
with `Missing key(s) in state_dict: "conv.weight" ... Unexpected key(s) in state_dict: "module.conv.weight"`.

## Example
```python
torch.save(model.state_dict(), "checkpoint.pt")
save_checkpoint(model, epoch, "last.pt")
```
becomes
```python
torch.save(raw_model.state_dict(), "checkpoint.pt")
save_checkpoint(raw_model, epoch, "last.pt")
```
(`raw_model` is the handle kept before wrapping; for a wrap the script already had, `model.module`,
and in another method than the one that wrapped `self.model`, `self.model.module`.)

## Fix safety
Safe: the unwrapped model's keys are what a plain run saves. Helpers already handed the plain
module (`save(model.module)`, `save(model_without_ddp)`, `save(unwrap_model(model))`) and helpers that
unwrap it themselves are not reported. Neither is a script that keeps the prefix on purpose: it wraps
the model itself and loads the file it saves (the same path) back into the wrapper (a resume: both
sides have `module.` keys), or strips the prefix itself (`k.replace("module.", "")`). A helper that trains through the handed-in model, one that
hands it back where the script keeps what it returns (`model = save_checkpoint(model, path)`), or a
use where no name reaches the plain module, gets the diagnostic only. The wrapper handed to a trainer a config names by
class (`init_obj(module_trainer, config["trainer"], model)`, see DDP401) whose methods save
`self.model.state_dict()` (or `model.state_dict()` after `model = self.model`, or `model, config =
self.model, self.config`, the name's only binding in that method) is reported with that file and line,
and the fix unwraps it in every class
the module offers that the wrapper reaches (through `super().__init__(model, ...)` to the base class
that keeps it); where it cannot follow the wrapper to the attribute that saves it, the finding has no
fix. A name bound again after the wrap
(`model = Net()`) is no longer the wrapper.

A class of the script's own modules that builds the models it trains, and that the fix wraps there
(DDP301: `Solver(loader, config).train()`), saves `getattr(self.G, "module", self.G).state_dict()`
in place of each `self.G.state_dict()`: the plain module's keys under DDP, the same object in a
plain run; the class's loads into the model reach the plain module too (DDP301), so a checkpoint it
saves is one it can load back, under DDP and in a plain run. The finding is reported at the script's
call, naming the module's lines. The same edit serves a class handed the wrapper (`Trainer(model,
...)` keeping `self.model = model`), unless that class loads into the wrapper itself, and a class
the fix wraps a handed model in, after the class moves it to its device (DDP301), also where it saves
through a local name (`model = self.model`, then `torch.save(model.state_dict(), path)`). The script's own
`torch.save(trainer.model.state_dict(), path)` through such an object (`trainer` built from the
wrapper, its class keeping that parameter as `self.model`) saves
`getattr(trainer.model, "module", trainer.model).state_dict()` likewise.

For a wrap that this conversion adds (DDP301), the fix comes at that wrap's level: none where DDP301
cannot wrap the model here, unsafe where the wrap is made only with `--unsafe-fixes`.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for handle, (raw, wrap_stmt) in wrappers(ctx).items():
            for call in facts.names.method_calls("state_dict"):
                recv = receiver(call)
                base = module_under(recv) if recv is not None else None  # `model.float().state_dict()`
                if base is None or dotted(base) != handle or inside_load(facts, call):
                    continue
                if not facts.wraps.after_wrap(call, handle, wrap_stmt):
                    continue
                if keys_kept(ctx, handle, wrap_stmt) or handles_prefix(ctx, call):
                    continue  # a resume through the wrapper, or keys stripped of the prefix by hand
                spelled = raw_at(ctx, handle, raw, wrap_stmt, call)
                if spelled is None:
                    ctx.report(
                        call,
                        f"{handle}.state_dict() saves the DDP wrapper ('module.' keys), and no name reaches the plain "
                        "module here: keep one before wrapping and save its state_dict()",
                        fix="none",
                    )
                    continue
                said = once_wrapped(
                    ctx,
                    handle,
                    f"{handle}.state_dict() saves the DDP wrapper ('module.' keys)",
                    f"{handle}.state_dict() would save the wrapper's 'module.'-prefixed keys",
                )
                level, why = wrap_level(ctx, handle)
                if base is not recv:  # through the methods that return the module: the same wrapper
                    said = f"{said} (`{code_of(recv)}` is the wrapper itself)"
                if ctx.report(call, f"{said}: use {_through(spelled, base, recv)}.state_dict(){why}", fix=level):
                    ctx.plan.replace(base, lambda n, s=spelled: cst.parse_expression(s))
            for call in (c for qual in PICKLERS for c in facts.names.calls_to(qual)):
                first = call.args[0].value if call.args and call.args[0].keyword is None else None
                for value in _pickled(facts, call, first):
                    base = module_under(value)  # `joblib.dump(model.float(), path)`
                    if dotted(base) != handle or not facts.wraps.after_wrap(value, handle, wrap_stmt):
                        continue
                    saved = f"{dotted(call.func)}({code_of(first)})"  # type: ignore[arg-type]
                    how = ("" if base is value else " itself") + ("" if value is first else f" (`{code_of(value)}`)")
                    spelled = raw_at(ctx, handle, raw, wrap_stmt, call)
                    if spelled is None:
                        ctx.report(
                            value,
                            f"{saved} pickles the DDP wrapper{how}, and no name reaches the plain module here: "
                            "keep one before wrapping and save it",
                            fix="none",
                        )
                        continue
                    level, why = wrap_level(ctx, handle)
                    if ctx.report(
                        value,
                        f"{saved} pickles the DDP wrapper{how} (loading it needs a process group): save "
                        f"{_through(spelled, base, value)}{why}",
                        fix=level,
                    ):
                        ctx.plan.replace(base, lambda n, s=spelled: cst.parse_expression(s))
        for hand in handoffs(ctx):
            if hand.code != self.code:
                continue
            callee = code_of(hand.call.func)
            saves = (
                f"saves the state_dict() of {hand.handle}, the DDP wrapper ('module.' keys)"
                if STATE_DICT in hand.uses
                else f"pickles {hand.handle}, the DDP wrapper (loading it needs a process group)"
            )
            if not hand.fixable:
                ctx.report(
                    hand.arg.value, f"{callee}() {saves}; pass the plain module ({hand.why}: by hand)", fix="none"
                )
                continue
            if ctx.report(hand.arg.value, f"{callee}() {saves}: pass {hand.raw}"):
                ctx.plan.replace(hand.arg.value, lambda n, s=hand.raw: cst.parse_expression(s))
        unwrap_in_classes(ctx, self)
        unwrap_built_models(ctx, self)
        unwrap_handed_wraps(ctx, self)
        unwrap_kept_attributes(ctx)
        report_factory_state_dicts(ctx)


def _pickled(facts, call: cst.Call, first: cst.BaseExpression | None) -> list[cst.BaseExpression]:
    """What a pickler's first argument pickles whole: itself, or the values of a dict literal it is
    (`torch.save({"net": net, "acc": acc}, path)`) or that its name was last given in this scope
    (`state = {"net": net, ...}; torch.save(state, path)`), or the elements of a list or tuple literal
    (`torch.save([model, criterion, optimizer], f)`)."""
    if first is None:
        return []
    found = first
    name = dotted(first) if isinstance(first, cst.Name) else None
    if name is not None:
        given = facts.names.value_before(facts.index.scope_of(call), name, call)
        found = given if isinstance(given, (cst.Dict, cst.List, cst.Tuple)) else first
    if isinstance(found, cst.Dict):
        return [e.value for e in found.elements if isinstance(e, cst.DictElement)]
    if isinstance(found, (cst.List, cst.Tuple)):
        return [e.value for e in found.elements if isinstance(e, cst.Element)]
    return [first]


def _through(spelled: str, base: cst.BaseExpression, value: cst.BaseExpression) -> str:
    """`value` (`model.float()`) with its module `base` spelled `spelled` (`raw_model.float()`)."""
    return spelled + code_of(value)[len(code_of(base)) :]


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save(model.state_dict(), "model.pt")
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")
        """,
        note="The checkpoint holds the plain module's keys, which a plain run can load:",
    ),
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def save(net, path):
            torch.save(net.state_dict(), path)


        dist.init_process_group("gloo")
        net = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for step in range(10):
            loss = net(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            save(net, "model.pt")
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def save(net, path):
            torch.save(net.state_dict(), path)


        dist.init_process_group("gloo")
        net = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for step in range(10):
            loss = net(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            save(net.module, "model.pt")
        """,
        note="A helper saves what it is handed: handed the plain module, its checkpoint has no 'module.' keys:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict()}, "last.pt")
        """,
        note="The module's own keys, and the optimizer's state (which has no wrapper):",
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        if os.path.exists("last.pt"):
            ckpt = torch.load("last.pt", map_location="cpu")
            model.load_state_dict(ckpt["model"])
            opt.load_state_dict(ckpt["opt"])
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, "last.pt")
        """,
        note="A resume through the wrapper: the file it saves is the file it loads, with 'module.' keys on both sides:",
    ),
)
