"""Training the script never holds the model of: a call of its own modules that trains a model it
builds itself there (`run(5)` with `def run(steps): model = Net(); opt = SGD(model.parameters())`),
or a method of a class whose model the summary cannot place (`exp = Exp(args); exp.train(setting)`,
the model built in a base class of another module). No rule can wrap that model, so no part of the
conversion is made: a process group and a sampler without the wrap would train one unsynchronised
copy per rank, while `apply` reported success."""

from __future__ import annotations

import libcst as cst

from ..syntax import dotted
from .global_rebinds import blocked_wrap
from .module_summary import WRAP


def unseen_training(facts) -> cst.Call | None:
    """The first call that trains a model the script does not hold, of a module that does not wrap it
    in DDP itself; None when every trained model is the script's (or a class's the fix reads)."""
    training = facts.training
    if facts.models.trained or facts.models.ddp_calls or training.models_built_in_modules:
        return None
    methods = {id(c): (summary, method) for c, summary, method in training.trained_in_modules}
    for call in training.module_training_calls:
        found = methods.get(id(call))
        if found is not None:
            summary, method = found
            cls = summary.classes.get(method.split(".")[0])
            if cls is not None and cls.wraps:
                continue
        elif facts.modules.call_does(call, WRAP):
            continue
        return call
    return None


def unseen_clause(call: cst.Call) -> str:
    return (
        f"{dotted(call.func) or 'a call'}() trains a model the script never holds (built inside the code it "
        "calls), which the fix cannot wrap"
    )


def why_no_wrap(facts) -> str | None:
    """Why a trained model stays unwrapped in this pass, as a clause for DDP001 and DDP201 (then no
    process group and no sampler either); None when every wrap can be made."""
    blocked = blocked_wrap(facts.models, facts.index)
    if blocked is not None:
        return blocked
    call = unseen_training(facts)
    return unseen_clause(call) if call is not None else None


__all__ = ["unseen_clause", "unseen_training", "why_no_wrap"]
