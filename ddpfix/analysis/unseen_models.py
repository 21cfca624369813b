"""Training the script never holds the model of: a call of its own modules that trains a model it
builds itself there (`run(5)` with `def run(steps): model = Net(); opt = SGD(model.parameters())`),
or a method of a class whose model the summary cannot place (`exp = Exp(args); exp.train(setting)`,
the model built in a base class of another module). No rule can wrap that model, so no part of the
conversion is made: a process group and a sampler without the wrap would train one unsynchronised
copy per rank, while `apply` reported success."""

from __future__ import annotations

import libcst as cst

from ..syntax import dotted, method_name, receiver
from .call_params import param_for, param_names
from .global_rebinds import blocked_wrap
from .module_summary import WRAP
from .training import OPTIMIZER_NAMES


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
    return untraced_step(facts)


def untraced_step(facts) -> cst.Call | None:
    """An optimizer's `step()` after a `backward()` in the script, the optimizer built there by a call
    the analysis finds no model in (`optimizer = build(config)` of a library): the model it updates is
    the script's, but nothing says which one to wrap."""
    if not facts.training.backward_calls:
        return None
    for call in facts.names.method_calls("step"):
        name = receiver(call)
        if type(name) is cst.Name and OPTIMIZER_NAMES.search(name.value) and _untraced(facts, name.value, call, 2):
            return call
    return None


def _untraced(facts, name: str, at: cst.CSTNode, depth: int) -> bool:
    """`name`, read at `at`, is an optimizer built in this file by a call that hands over no model's
    parameters the analysis can see: where `at` reads it, or, for a parameter of the function around
    `at` (`def train(model, loader, optimizer)`), at a call of that function in this file, `depth`
    functions up. An optimizer handed in from outside the file is the caller's to trace (a trainer
    module's)."""
    names, index = facts.names, facts.index
    scope = index.scope_of(at)
    built = names.value_before(scope, name, at) or names.value_before(index.module, name, at)
    if built is not None:
        return isinstance(built, cst.Call) and not facts.training.parameter_receivers(built)
    if depth == 0 or type(scope) is not cst.FunctionDef or name not in param_names(scope):
        return False
    for caller in index.callers_of(scope):
        arg = next((a for a in caller.args if param_for(scope, caller, a) == name), None)
        if arg is not None and type(arg.value) is cst.Name and _untraced(facts, arg.value.value, caller, depth - 1):
            return True
    return False


def unseen_clause(call: cst.Call) -> str:
    if method_name(call) == "step":
        return (
            f"{dotted(call.func)}() updates a model the analysis cannot trace its optimizer to (built where the "
            "fix does not look), which the fix cannot wrap"
        )
    return (
        f"{dotted(call.func) or 'a call'}() trains a model the script never holds (built inside the code it "
        "calls), which the fix cannot wrap"
    )


def why_no_wrap(facts) -> str | None:
    """Why a trained model stays unwrapped in this pass, as a clause for DDP001 and DDP201 (then no
    process group and no sampler either); None when every wrap can be made."""
    blocked = blocked_wrap(facts.models, facts.index, facts.training)
    if blocked is not None:
        return blocked
    call = unseen_training(facts)
    return unseen_clause(call) if call is not None else None


__all__ = ["unseen_clause", "unseen_training", "untraced_step", "why_no_wrap"]
