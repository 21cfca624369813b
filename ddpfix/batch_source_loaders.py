"""DDP201 across files: the DataLoaders a class of the script's own modules builds for itself and draws
the script's training batches from with next() (analysis/batch_sources.py). Each gets a
DistributedSampler where the class builds it (when torch.distributed is initialized), and each
`iter()` that starts a new pass over one moves its sampler's epoch on first, so every pass is
reshuffled and the shards stay disjoint:

    except StopIteration:
        if isinstance(getattr(self.data_loader_list[i], "sampler", None), DistributedSampler):
            self.data_loader_list[i].sampler.set_epoch(self.data_loader_list[i].sampler.epoch + 1)
        self.dataloader_iter_list[i] = iter(self.data_loader_list[i])

The epoch is the sampler's own count (it starts at 0), as the loaders of a list restart one by one.
A loader the object keeps as an attribute that the script's loop iterates (`for batch in
dataset.train:`) gets its sampler the same way, and its epoch set from the script's loop around that
one (`dataset.train.sampler.set_epoch(epoch)`, behind the same test). Where an edit cannot be made
(a loader built in a method called again and again, an `iter()` of an expression with a call in it,
epochs run by a caller, the module may not be edited) none is kept and the finding says why."""

from __future__ import annotations

import libcst as cst

from .analysis.batch_sources import BatchSource, batch_sources
from .analysis.local_writes import shown
from .analysis.module_summary import Finding
from .class_loaders import builds_loader
from .edits import epoch_name
from .module_edits import Planner
from .module_epochs import through_loader
from .module_trials import Edit, keep, sampler_planner, tried
from .rule import Context, Order, Rule
from .syntax import code_of, dotted, iterated_by, walk

HEAD = "training DataLoader without a DistributedSampler"


def shard(ctx: Context, rule: Rule, unwrapped: str | None) -> None:
    """Report each such class's loaders at the script's call, and shard them there unless `unwrapped`
    says why the model stays unwrapped in this pass."""
    facts = ctx.facts
    for source in batch_sources(facts):
        where = ", ".join(shown(facts.modules, Finding("", source.path, line, "")) for line in source.loaders)
        epochs = _epoch_loop(ctx, source)
        if source.loop is None:
            head = (
                f"{HEAD}: {code_of(source.at.func)}() draws the training batches from DataLoaders {source.cls} "
                f"builds itself ({where})"
            )
            remedy = "give each one there and set its epoch at each new pass"
            done = "the fix gives each one there when distributed, and moves its epoch on at each new pass ({})"
        else:
            head = (
                f"{HEAD}: the script trains on {code_of(source.at)}, a DataLoader {source.cls} builds itself ({where})"
            )
            remedy = "give it one there and set its epoch each epoch"
            done = "the fix gives it one there when distributed ({})"
            if epochs is not None and not isinstance(epochs, str):
                done += (
                    f", and sets its epoch at the start of each epoch (line {facts.index.position(epochs).start.line})"
                )
        problem = source.problem or (epochs if isinstance(epochs, str) else None)
        why, places, edits = (problem, [], []) if problem else tried(ctx, rule, _edits(source))
        why = why or unwrapped
        if why is not None:
            ctx.report(source.at, f"{head}: {remedy} (the fix does not: {why})", fix="none")
        elif ctx.report(source.at, f"{head}: {done.format(', '.join(places))}"):
            keep(ctx, rule, edits)
            if epochs is not None:
                assert not isinstance(epochs, str)
                sets = through_loader(ctx, code_of(source.at), epoch_name(ctx, epochs))  # type: ignore[arg-type]
                ctx.plan.prepend(epochs.body, sets, order=Order.SET_EPOCH)


def _epoch_loop(ctx: Context, source: BatchSource) -> cst.For | cst.While | str | None:
    """The loop of the script around its loop over the attribute, whose epoch sets the sampler's; None
    where there is none (one pass, or a drawing method's source); why not where it cannot be named."""
    if source.loop is None:
        return None
    index = ctx.facts.index
    for anc in index.ancestors(source.loop):
        if type(anc) in (cst.For, cst.While):
            if epoch_name(ctx, anc, plan=False) is None:
                line = index.position(anc).start.line
                return f"the loop around the pass over {code_of(source.at)} (line {line}) has no epoch to pass"
            return anc  # type: ignore[return-value]
        if type(anc) is cst.FunctionDef:  # called in a loop: the epochs run there, where the loader has another name
            if any(_in_loop(index, c) for c in index.callers_of(anc)):
                return f"the epochs of {anc.name.value}() run where it is called"
            break
    return None


def _in_loop(index, node: cst.CSTNode) -> bool:
    return any(type(a) in (cst.For, cst.While) for a in index.ancestors(node))


def _edits(source: BatchSource) -> list[Edit]:
    edits: list[Edit] = [
        (
            source.path,
            ("sampler", source.path, source.cls, line),
            lambda lines, line=line: sampler_planner(source.cls, line, lines, builds_loader),
        )
        for line in source.loaders
    ]
    edits += [
        (
            source.path,
            ("next_pass", source.path, source.cls, line),
            lambda lines, line=line: _next_pass_planner(source.cls, line, lines),
        )
        for line in source.restarts
    ]
    return edits


def _next_pass_planner(cls_name: str, line: int, lines: list[int]) -> Planner:
    """Before the statement at `line` of the class `cls_name` that makes `iter(loader)` again: the
    loader's sampler's epoch, one more than it was."""

    def plan(ctx: Context) -> str | None:
        index = ctx.facts.index
        call = next(
            (c for c in index.calls if iterated_by(c) is not None and index.position(c).start.line == line), None
        )
        site = index.site(call) if call is not None else None
        if site is None or site.cls is None or site.cls.name.value != cls_name:
            return f"{cls_name} does not make an iterator at line {line}"
        reach = iterated_by(call)
        if any(type(n) is cst.Call for n in walk(reach)) or not _plain(reach):
            return f"the iterator {cls_name} makes at line {line} is of an expression it would evaluate again"
        text = code_of(reach)
        ctx.joins_elsewhere()
        stmts = through_loader(ctx, text, f"{text}.sampler.epoch + 1")
        ctx.plan.insert_before(site.stmt, stmts, order=Order.SET_EPOCH)
        lines.append(line)
        return None

    return plan


def _plain(node: cst.BaseExpression) -> bool:
    """A name, an attribute chain, or an item of one by a name or a number: `self.loaders[i]`."""
    if type(node) is cst.Subscript:
        if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
            return False
        key = node.slice[0].slice.value
        return type(key) in (cst.Name, cst.Integer) and _plain(node.value)
    return dotted(node) is not None


__all__ = ["shard"]
