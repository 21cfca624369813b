"""Where a script shows its model (`print(model)`, `logger.info("%s", model)`, `str(model)`,
`f"{model}"`) after the DDP wrap this conversion adds: there the handle is the wrapper, whose text is
`DistributedDataParallel(\n  (module): Net(...` where `python train.py` prints `Net(...`. DDP308 shows
the plain module instead (`print(raw_model)`), which a plain run leaves as it is.

Only for wraps the conversion adds: a script that wraps the model itself already prints the wrapper
in every run, and that is its own choice.
"""

from __future__ import annotations

import libcst as cst

from .syntax import dotted, walk

SHOWN_BY = frozenset({"print", "str", "repr", "format", "pprint", "pprint.pprint", "tqdm.write"})
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log"})


def shown(facts, handle: str, wrap_stmt: cst.CSTNode) -> list[cst.BaseExpression]:
    """The reads of `handle` that show it as text once it is the wrapper, in source order: an argument
    of `print`/`str`/`repr`/a logger's methods, or the expression of an f-string's `{handle}`."""
    out: list[cst.BaseExpression] = []
    for call in facts.index.calls:
        if not shows(call.func):
            continue
        for arg in call.args:
            if arg.keyword is None and not arg.star and dotted(arg.value) == handle:
                out.append(arg.value)
    text = facts.index.source
    if text is None or "{" + handle in text:
        for node in walk(facts.module):
            if type(node) is cst.FormattedStringExpression and dotted(node.expression) == handle:
                out.append(node.expression)
    return [n for n in out if facts.wraps.after_wrap(n, handle, wrap_stmt)]


def shows(func: cst.BaseExpression) -> bool:
    """Does calling `func` show its positional arguments as text (`print`, `str`, a logger's `info`)?"""
    name = dotted(func)
    if name in SHOWN_BY:
        return True
    if type(func) is not cst.Attribute or func.attr.value not in LOG_METHODS:
        return False
    receiver = dotted(func.value)
    return receiver is not None and "log" in receiver.lower()


__all__ = ["LOG_METHODS", "SHOWN_BY", "shown", "shows"]
