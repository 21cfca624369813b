"""`ddpfix rules` and `ddpfix explain`: the rule catalogue, and the rules behind an error."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..docs import rule_page
from ..errors import DdpfixError
from ..formats import all_rules, rule_by_code
from .output import fail


def rules(code: Annotated[str | None, typer.Argument(help="Show one rule's documentation.")] = None) -> None:
    """List the rules, or print one rule's documentation."""
    if code is None:
        for rule in all_rules():
            typer.echo(f"{rule.code}  {rule.name:<30} fix: {rule.fix:<6}  {rule.message}")
        return
    rule = rule_by_code().get(code.upper())
    if rule is None:
        fail(f"unknown rule: {code}")
        raise typer.Exit(2) from None
    typer.echo(rule_page(rule))


def explain_cmd(
    subject: Annotated[
        str | None,
        typer.Argument(
            help="A rule code (DDP101), an error message, a log file, or '-' (also: none) for standard input.",
            show_default=False,
        ),
    ] = None,
    script: Annotated[
        str | None, typer.Option("--script", help="Point at the lines of this script behind the error.")
    ] = None,
) -> None:
    """Name the rules behind an error message or log (or print one rule's docs). Exit 1: no known DDP error."""
    from ..explain import explain

    try:
        code = explain(subject, script, echo=lambda text="": typer.echo(_encodable(text, sys.stdout)))
    except DdpfixError as exc:
        fail(_encodable(str(exc), sys.stderr))
        raise typer.Exit(2) from None
    raise typer.Exit(code)


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
