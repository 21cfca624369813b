"""Training batches a function of the script's own modules takes from an object no rule shards: the
script builds it with another function of its modules that returns no DataLoader (`train_iter =
build_iterator(train_data, config)`, a batch iterator class of utils.py) and hands it to the function
that trains over it (`train(config, model, train_iter, ...)`). Every rank would train on the same
batches; no rule knows how to split that object, so DDP209 says so (the contract's invariant 3)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ..syntax import dotted
from .values import handle_of


def unsharded_handoffs(facts) -> Iterator[tuple[cst.Arg, str]]:
    """(argument, DDP209's message) for each such hand-over."""
    data = facts.data
    known = {loader.target for loader in data.loaders} | {f.target for f in data.foreign}
    index = facts.index
    for call in facts.training.module_training_calls:
        for arg, handoff in data.handoffs.trained_over(call):
            name = handle_of(arg.value)
            if name is None or name in known or "." in name:
                continue
            scope = index.scope_of(call)
            value = facts.names.value_before(scope, name, call)
            if not isinstance(value, cst.Call) or facts.ranks.depends_on_rank(value):
                continue
            target = facts.modules.target_of(value.func)
            if target is None or target.summary is None or target.member is None:
                continue
            if target.member in target.summary.classes or target.summary.returns.get(target.member) is not None:
                continue  # an instance of a class of the script's (its own rules), or a loader factory
            built = dotted(value.func) or target.member
            yield (
                arg,
                (
                    f"training batches come from {name}, which {built}() builds and {handoff.where} trains over: no "
                    "rule shards it, so every rank trains on the same batches; give each rank its own part of the "
                    "data before it is built (its samples [RANK::WORLD_SIZE], cut to the same length on every rank)"
                ),
            )


__all__ = ["unsharded_handoffs"]
