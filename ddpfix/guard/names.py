"""Names a rewrite leaves undefined or reads before assignment, by pyflakes' scope analysis.

pyflakes walks Python's own tree (`ast`) in execution order per scope: module order, function locals
(a name assigned anywhere in a function is local to all of it), class bodies, comprehensions,
`global`/`nonlocal`. Its "undefined name" and "local variable referenced before assignment" findings
of the input and of the output are compared as sets of (kind, name): lines move in a rewrite, so they
take no part. A finding the output has and the input has not is a name the rewrite broke. A name the
input already leaves undefined (a fragment, a name made by `exec`, a builtin pyflakes does not know)
is not held against the rewrite where the rewrite reads it once more (a seed expression copied into
the sampler); counting occurrences would withhold such fixes for what the script already does.
"""

from __future__ import annotations

import ast

from pyflakes import checker, messages

Findings = set[tuple[str, str]]  # (kind, name)
_KINDS = {messages.UndefinedName: "undefined", messages.UndefinedLocal: "unassigned"}


def findings(tree: ast.Module) -> Findings:
    """pyflakes' undefined-name and referenced-before-assignment findings of `tree`."""
    out: Findings = set()
    for m in checker.Checker(tree).messages:
        kind = _KINDS.get(type(m))
        if kind is not None:
            out.add((kind, str(m.message_args[0])))
    return out


def new_findings(before: Findings, after: Findings) -> list[tuple[str, str]]:
    return sorted(after - before)


def describe(new: list[tuple[str, str]]) -> str:
    kind, name = new[0]
    text = (
        f"`{name}` would be read before it is assigned"
        if kind == "unassigned"
        else f"`{name}` would be read where it is not defined"
    )
    more = len({n for _, n in new}) - 1
    return text + (f" (and {more} more name{'s' if more > 1 else ''})" if more > 0 else "")


__all__ = ["findings", "new_findings", "describe", "Findings"]
