"""`ddpfix rules` and `ddpfix explain`: the rule catalogue, and the rules behind an error."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ..docs import lookup, rule_page, rule_summary
from ..errors import DdpfixError
from ..formats import all_rules
from ..rule import Rule
from .options import exit_zero, output_format
from .output import fail, known_format

RULES_FORMATS = ("text", "json")
RulesFormat = output_format(RULES_FORMATS, "text, or json (code, name, fix, message; the docs with a rule named).")
ExplainExitZero = exit_zero("the text holds no known DDP error")


def rules(
    query: Annotated[
        str | None,
        typer.Argument(
            metavar="CODE",
            help="A rule code (DDP201), a name (missing-distributed-sampler) or a prefix (DDP2).",
            show_default=False,
        ),
    ] = None,
    long: Annotated[bool, typer.Option("--long", help="The whole page of the rule, not its short form.")] = False,
    fmt: RulesFormat = "text",
) -> None:
    """List the rules (those of a prefix: `ddpfix rules DDP2`), or show one in short (--long: its whole page)."""
    known_format(fmt, RULES_FORMATS)
    found = all_rules() if query is None else lookup(query)
    if not found:
        fail(
            f"unknown rule: {query} (give a code like DDP201, a prefix like DDP2 or a name; `ddpfix rules` lists them)"
        )
        raise typer.Exit(2)
    named = query.strip() if query is not None else ""
    one = len(found) == 1 and named.lower() in (found[0].code.lower(), found[0].name)  # not a prefix
    if fmt == "json":
        records = [_record(r, docs=one) for r in found]
        typer.echo(json.dumps(records[0] if one else records, indent=2, ensure_ascii=False))
    elif one:
        typer.echo(rule_page(found[0]) if long else rule_summary(found[0]))
    elif long:
        typer.echo("\n".join(rule_page(r) for r in found))
    else:
        for rule in found:
            typer.echo(f"{rule.code}  {rule.name:<30} fix: {rule.fix:<6}  {rule.message}")


def _record(rule: Rule, docs: bool) -> dict:
    out = {"code": rule.code, "name": rule.name, "fix": rule.fix, "message": rule.message}
    if docs:
        out["docs"] = rule.docs
    return out


def explain_cmd(
    subject: Annotated[
        str | None,
        typer.Argument(
            metavar="MESSAGE|LOG|CODE",
            help="An error message, a log file, a rule code (DDP101), or '-' (also: none) for standard input. "
            "An argument that looks like a path (one word ending in .log, .txt or .py, or holding a '/') "
            "must exist.",
            show_default=False,
        ),
    ] = None,
    script: Annotated[
        str | None,
        typer.Option("--script", metavar="SCRIPT", help="Point at the lines of this script behind the error."),
    ] = None,
    zero: ExplainExitZero = False,
) -> None:
    """Name the rules behind an error message or log (or print one rule's docs).

    Exit 1 when the text holds no known DDP error (0 with --exit-zero), 2 on bad input."""
    from ..explain import explain

    try:
        code = explain(subject, script, echo=lambda text="": typer.echo(_encodable(text, sys.stdout)))
    except DdpfixError as exc:
        fail(_encodable(str(exc), sys.stderr))
        raise typer.Exit(2) from None
    raise typer.Exit(0 if zero and code == 1 else code)


def _encodable(text: str, stream) -> str:
    """`text` with what `stream`'s encoding cannot write (and stray surrogates) as backslash escapes."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, "backslashreplace").decode(encoding, "replace")
    except LookupError:
        return text.encode("ascii", "backslashreplace").decode("ascii")
    return text


__all__ = ["explain_cmd", "rules"]
