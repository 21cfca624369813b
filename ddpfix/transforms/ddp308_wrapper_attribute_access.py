"""DDP308: a custom method or attribute of the model reached through the DDP wrapper."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from ..analysis.model_params import CUSTOM, TRAINS, reaches_model
from ..examples import clean, fixes
from ..handles import handoffs, in_training_step, once_wrapped, raw_at, wrap_level, wrappers
from ..module_routes import handed_planner, model_members
from ..rule import Context, Rule
from ..syntax import assign_targets, assigned_value, code_of, dotted, walk
from ..wrapper_containers import container_uses
from ..wrapper_prints import shown


class WrapperAttributeAccess(Rule):
    code = "DDP308"
    name = "wrapper-attribute-access"
    message = "custom model attribute reached through the DDP wrapper: DistributedDataParallel does not forward it"
    reads = frozenset({"wraps"})
    docs = """
## What
An attribute that is not part of `nn.Module`'s or `DistributedDataParallel`'s public API
(`model.generate(...)`, `model.save_pretrained(...)`, `model.init_hidden(...)`, `model.config`,
`model.n_classes`, `model.encoder`), read through a handle that is (or becomes, once wrapped) the
`DistributedDataParallel` wrapper: in the same function after the wrap, in a function that reads the
module-level model (`def evaluate(): model.generate(...)`) and runs after the wrap, in a method of
the class that holds `self.model`, or inside a helper the wrapper is handed to
(`evaluate(model)` with `model.generate(...)` inside). Also the wrapper handed to what traces,
exports or summarises a module (`writer.add_graph(model, x)`, `torch.jit.trace`, `torch.onnx.export`,
`torch.export.export`, `torchinfo.summary`, ...), directly or through a helper of the script. And,
after a wrap this conversion adds, the model shown as text (`print(model)`, `logger.info("%s", model)`,
`str(model)`, `f"{model}"`). And the model used as a container after the wrap (`model[0]`,
`model[-1].state_dict()`, `len(model)`, `for layer in model:`, `enumerate(model)`, `list(model)`):
an `nn.Sequential`, `nn.ModuleList` or `nn.ModuleDict` answers those, the wrapper does not.

## Why
The wrapper is a different module: it answers `forward`, `parameters()`, `state_dict()`, `train()`,
`no_sync()` and the rest of the two APIs, and nothing else. Under `torchrun` the script stops with
`AttributeError: 'DistributedDataParallel' object has no attribute 'generate'`, while a plain run
(where the wrap is skipped) works. The class of the model does not matter: one of the script's
file, of its own modules (also imported with `from model import *`), or of a library
(`transformers`) fails the same way. A trace of the wrapper fails too (`Tried to trace
<...ProcessGroup...> but it is not part of the active trace`), and a summary describes the wrapper.
Used as a container, it raises `TypeError: 'DistributedDataParallel' object is not subscriptable`
(`has no len()`, `is not iterable`). Printed, the wrapper is `DistributedDataParallel(\n  (module): Net(...` where `python train.py`
printed `Net(...`: the converted script no longer prints what the plain one does.

## Example
```python
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
...
hidden = model.init_hidden(batch_size)
samples = model.generate(prompt)
print(evaluate(model))  # def evaluate(m): return m.score(x)
print(model)
```
becomes
```python
hidden = raw_model.init_hidden(batch_size)
samples = raw_model.generate(prompt)
print(evaluate(raw_model))
print(raw_model)
```
(`raw_model` is the handle kept before wrapping; for an unconditional wrap the script already had,
`model.module`.) The two APIs are written out from torch (`ddpfix.analysis.torch_api`; a test
compares them with the installed torch).

## Fix safety
Safe: the unwrapped module is the object the wrapper holds, with the same parameters. Names that
start with `_` are rewritten only where the model's class (of this file or of the script's own
modules) defines them; dunders and attributes set through the wrapper itself are left alone.
Diagnostic only: a call that runs a forward (a submodule, `self(...)` or a method that does) inside
the training step (before the step's `backward()`; a sample drawn after it feeds no gradient and
takes the plain module), where the plain module would bypass DDP's gradient averaging (move it into
`forward()`), and the same for the container's layers called or walked there (`for layer in model:
x = layer(x)`); a helper that trains through the handed-in model; and a use where no name reaches the
plain module (keep one before wrapping). A name bound again after the wrap (`model = Net()`) is no
longer the wrapper.

A class of the script's own modules that keeps the wrapper (`Trainer(model, opt)` with
`self.model = model` in `__init__`), trains through it and reads such an attribute in a method
(`self.model.sample_latent(64)`) must keep the wrapper for its forward: the finding is at the
constructor call, and the fix reads each such attribute there through the plain module, in the
class's own file (`getattr(self.model, "module", self.model).sample_latent(64)`, which a plain run
leaves as it is); the class printing it (`print(self.model)`) prints the plain module the same way.
Without a fix (the rewrite is incomplete, and says why) where the class uses the wrapper in a way it
does not serve as the model (`self.model.to(device)` or `.cuda()` after the wrap, the model handed on
to a function), runs a forward the wrapper would not see in the training step, keeps it under more
than one attribute, or lies outside the script's folder.

A model shown as text is routed only after a wrap this conversion adds (a script that wraps its
model itself prints the wrapper in every run, by its own choice), and left alone where no name
reaches the plain module (only the text shown differs) or where the plain run shows a wrapper too (a
`model = nn.DataParallel(model)` that DDP302 keeps for `python train.py`: that run prints what it
printed, torchrun the DDP wrapper in its place).

For a wrap that this conversion adds (DDP301), the fix comes at that wrap's level: none where DDP301
cannot wrap the model here, unsafe where the wrap is made only with `--unsafe-fixes`.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for handle, (raw, wrap_stmt) in wrappers(ctx).items():
            members, forward_like = model_members(facts, raw, handle, wrap_stmt)
            uses = [n for n in walk(facts.module) if type(n) is cst.Attribute and dotted(n.value) == handle]
            stored = {n.attr.value for n in uses if _written(facts, n)}  # set through the wrapper itself
            for node in uses:
                name = node.attr.value
                if name in stored or not reaches_model(name, members):
                    continue
                if not facts.wraps.after_wrap(node, handle, wrap_stmt):
                    continue
                parent = facts.index.parent.get(node)
                called = isinstance(parent, cst.Call) and parent.func is node
                if called and in_training_step(facts, node) and (forward_like is None or name in forward_like):
                    ctx.report(
                        node,
                        f"{handle}.{name}(...) in the training step: the DDP wrapper has no attribute '{name}', and "
                        f"calling it on the plain module runs a forward DDP does not see (its gradients would not "
                        f"be averaged): compute it in the model's forward() and call {handle}(...)",
                        fix="none",
                    )
                    continue
                spelled = raw_at(ctx, handle, raw, wrap_stmt, node)
                if spelled is None:
                    ctx.report(
                        node,
                        f"{handle}.{name}: the DDP wrapper has no attribute '{name}', and no name reaches the plain "
                        f"module here: keep one before wrapping and use it",
                        fix="none",
                    )
                    continue
                said = once_wrapped(
                    ctx,
                    handle,
                    f"{handle}.{name}: the DDP wrapper has no attribute '{name}'",
                    f"{handle}.{name} would fail: the wrapper has no attribute '{name}'",
                )
                level, why = wrap_level(ctx, handle)
                if ctx.report(node, f"{said}; use {spelled}.{name}{why}", fix=level):
                    ctx.plan.replace(node, lambda n, s=spelled: n.with_changes(value=cst.parse_expression(s)))
            _containers(ctx, handle, raw, wrap_stmt)
            if handle in ctx.plan.wraps:  # a wrap this conversion adds: shown as the plain run shows it
                _show_plain(ctx, handle, raw, wrap_stmt)
        for hand in handoffs(ctx):
            if hand.code != self.code:
                continue
            callee = code_of(hand.call.func)
            what = (
                f"reads attributes of {hand.handle} that the DDP wrapper does not have"
                if CUSTOM in hand.uses
                else f"traces {hand.handle}, the DDP wrapper, whose forward calls into the process group"
            )
            if not hand.fixable:
                if TRAINS in hand.uses and CUSTOM in hand.uses:  # it must keep the wrapper for its forward
                    routed = _route_in_class(ctx, self, hand)
                    if isinstance(routed, tuple):
                        path, planner, words = routed
                        level, why = wrap_level(ctx, hand.handle)
                        message = f"{callee}() {what}; it trains through {hand.handle}: {words}{why}"
                        if ctx.report(hand.arg.value, message, fix=level):
                            ctx.others.keep(path, self, planner)  # type: ignore[union-attr]
                        continue
                    advice = (
                        f"it trains through {hand.handle}, so keep handing it the wrapper and read those attributes "
                        f"there through the plain module (`getattr(m, 'module', m)`, which a plain run leaves as it is)"
                        f"{'' if routed is None else f'; the fix does not: {routed}'}"
                    )
                else:
                    advice = f"pass the plain module ({hand.why}: by hand)"
                ctx.report(hand.arg.value, f"{callee}() {what}; {advice}", fix="none")
                continue
            if ctx.report(hand.arg.value, f"{callee}() {what}: pass {hand.raw}"):
                ctx.plan.replace(hand.arg.value, lambda n, s=hand.raw: cst.parse_expression(s))


def _containers(ctx: Context, handle: str, raw: str, wrap_stmt: cst.CSTNode) -> None:
    """`model[0]`, `len(model)`, `for layer in model:` after the wrap: the wrapper is no container."""
    facts = ctx.facts
    if any(m.handle == handle and m.each for m in facts.models.trained):
        return  # `nets`: a list of wrappers, trained side by side, is a container
    if isinstance(assigned_value(wrap_stmt), (cst.List, cst.ListComp, cst.Tuple, cst.Dict, cst.DictComp)):
        return
    for node, how, runs in container_uses(facts, handle, wrap_stmt):
        if runs is not None and in_training_step(facts, runs):
            message = (
                f"{how} in the training step: the DDP wrapper is no container, and running its layers through the "
                f"plain module runs a forward DDP does not see (its gradients would not be averaged): call {handle}(...)"
            )
            ctx.report(node, message, fix="none")
            continue
        spelled = raw_at(ctx, handle, raw, wrap_stmt, node)
        if spelled is None:
            message = f"{how}: the DDP wrapper is no container, and no name reaches the plain module here: keep one before wrapping"
            ctx.report(node, message, fix="none")
            continue
        said = once_wrapped(
            ctx, handle, f"{how}: the DDP wrapper is no container", f"{how} would fail: the wrapper is no container"
        )
        level, why = wrap_level(ctx, handle)
        if ctx.report(node, f"{said}; use {spelled}{why}", fix=level):
            ctx.plan.replace(node, lambda n, s=spelled: cst.parse_expression(s))


def _show_plain(ctx: Context, handle: str, raw: str, wrap_stmt: cst.CSTNode) -> None:
    """`print(model)` after the wrap this conversion adds shows the wrapper: show the plain module. Not
    where the plain run shows a wrapper too (`model = nn.DataParallel(model)`, kept on the plain path by
    DDP302): `python train.py` prints what it printed, and torchrun shows the wrapper in its place."""
    facts = ctx.facts
    if any(handle in assign_targets(facts.index.site(c).stmt) for c in facts.models.dp_calls):
        return
    for node in shown(ctx.facts, handle, wrap_stmt):
        spelled = raw_at(ctx, handle, raw, wrap_stmt, node)
        if spelled is None:  # no name reaches the plain module there: only the text shown differs
            continue
        level, why = wrap_level(ctx, handle)
        message = (
            f"after the DDP wrap, {handle} would be shown as its DDP wrapper (`DistributedDataParallel(...)`), "
            f"not as a plain run shows it; show {spelled}{why}"
        )
        if ctx.report(node, message, fix=level):
            ctx.plan.replace(node, lambda n, s=spelled: cst.parse_expression(s))


def _route_in_class(ctx: Context, rule: Rule, hand) -> tuple[Path, object, str] | str | None:
    """(the module, its planner, the words for the finding) that read the model's own attributes
    through the plain module in the class of the script's modules that keeps the wrapper
    (`Trainer(model, opt)`, `self.model = model`, `self.model.init_hidden(n)`); or why not; None where
    no class of the script's modules receives it (a helper function, a library's class)."""
    facts, others = ctx.facts, ctx.others
    found = facts.helpers.constructor_param(hand.call, hand.arg)
    if found is None or others is None:
        return None
    summary, cls_name, param = found
    why = others.why_not(summary.path)
    if why is not None:
        return why
    raw, wrap_stmt = wrappers(ctx)[hand.handle]
    where = others.shown(summary.path)
    routed: list[tuple[int, str]] = []
    planner = handed_planner(cls_name, param, where, model_members(facts, raw, hand.handle, wrap_stmt), routed)
    why = others.trial(summary.path, rule, planner)
    if why is not None:
        return why
    if not routed:
        return f"{cls_name} reads no attribute of it that the wrapper lacks ({where})"
    places = ", ".join(f"{use} at {where}:{line}" for line, use in sorted(set(routed))[:3])
    more = f" and {len(set(routed)) - 3} more" if len(set(routed)) > 3 else ""
    return summary.path, planner, f'the fix reads them through getattr(..., "module", ...) there ({places}{more})'


def _written(facts, node: cst.Attribute) -> bool:
    parent = facts.index.parent.get(node)
    return isinstance(parent, (cst.AssignTarget, cst.AugAssign)) or (
        isinstance(parent, cst.AnnAssign) and parent.target is node
    )


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Linear):
            def predict(self, x):
                return self(x) > 0


        dist.init_process_group("gloo")
        model = DDP(Net(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(model.predict(torch.randn(2, 4)))
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Linear):
            def predict(self, x):
                return self(x) > 0


        dist.init_process_group("gloo")
        model = DDP(Net(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(model.module.predict(torch.randn(2, 4)))
        """,
        note="The model's own method goes through the module the wrapper holds:",
    ),
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Linear):
            def predict(self, x):
                return self(x) > 0


        def report(net):
            print(net.predict(torch.randn(2, 4)))


        dist.init_process_group("gloo")
        model = DDP(Net(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        report(model)
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Linear):
            def predict(self, x):
                return self(x) > 0


        def report(net):
            print(net.predict(torch.randn(2, 4)))


        dist.init_process_group("gloo")
        model = DDP(Net(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        report(model.module)
        """,
        note="A helper handed the wrapper reads the model's own attributes: it gets the plain module at the call:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Linear):
            def predict(self, x):
                return self(x) > 0


        dist.init_process_group("gloo")
        model = DDP(Net(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        print(model.module.predict(torch.randn(2, 4)))
        """,
        note="`nn.Module`'s own API (`eval()`) works on the wrapper; the custom method already goes through `.module`:",
    ),
)
