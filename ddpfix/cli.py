"""The `ddpfix` command: argument parsing, printing and exit codes over the Python API."""
from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.syntax import Syntax

from . import __version__
from .diff import stats
from .engine import STDIN, FileResult, Options, discover, process, read, run_path, write_atomic
from .errors import DdpfixError
from .transforms import BY_CODE, RULES

app = typer.Typer(
    name="ddpfix",
    help="Turn single-GPU PyTorch training scripts into correct DistributedDataParallel scripts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

Paths = Annotated[list[str], typer.Argument(help="Files or folders ('-' reads standard input).", show_default=False)]
Select = Annotated[Optional[list[str]], typer.Option("--select", help="Only these rule codes or prefixes (repeatable).")]
Ignore = Annotated[Optional[list[str]], typer.Option("--ignore", help="Skip these rule codes or prefixes (repeatable).")]
Unsafe = Annotated[bool, typer.Option("--unsafe-fixes", help="Also apply fixes that change behaviour (e.g. SyncBatchNorm).")]
Color = Annotated[Optional[bool], typer.Option("--color/--no-color", help="Colour output (default: only on a terminal).")]


def _console(color: bool | None, stderr: bool = False) -> Console:
    return Console(
        stderr=stderr,
        force_terminal=True if color else None,
        no_color=color is False,
        highlight=False,
        soft_wrap=True,
    )


def _fail(message: str) -> None:
    typer.echo(f"ddpfix: error: {message}", err=True)


def _codes(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out = [v.strip().upper() for item in values for v in item.split(",") if v.strip()]
    known = {r.code for r in RULES}
    for code in out:
        if code != "ALL" and not any(k.startswith(code) for k in known):
            raise DdpfixError(f"unknown rule code or prefix: {code}")
    return out


def _results(paths: list[str], options: Options, *, fix: bool) -> tuple[list[FileResult], bool]:
    """Run every file; errors are printed as one line each. Returns (results, any_error)."""
    out: list[FileResult] = []
    had_error = False
    try:
        files = list(discover(paths))
    except DdpfixError as exc:
        _fail(str(exc))
        return [], True
    for path in files:
        if path == STDIN:
            res = process("-", sys.stdin.buffer.read(), options, fix=fix)
        else:
            res = run_path(path, options, fix=fix)
        if res.error:
            _fail(res.error)
            had_error = True
        out.append(res)
    return out, had_error


def _summary(res: FileResult) -> str:
    assert res.result is not None
    applied = res.result.applied_codes
    remaining = sorted({d.code for d in res.result.diagnostics if not d.applied})
    s = stats(res.result.diff)
    text = f"{res.path}: {s.hunks} hunk(s), +{s.added} -{s.removed}; fixed: {', '.join(applied) or 'nothing'}"
    if remaining:
        text += f"; not fixed: {', '.join(remaining)}"
    return text


@app.command()
def diff(paths: Paths, select: Select = None, ignore: Ignore = None, unsafe_fixes: Unsafe = False, color: Color = None) -> None:
    """Print the unified diff `apply` would make (exit 1 when it would change something)."""
    try:
        options = Options(_codes(select), _codes(ignore), unsafe_fixes)
    except DdpfixError as exc:
        _fail(str(exc))
        raise typer.Exit(2)
    results, had_error = _results(paths, options, fix=True)
    out, err = _console(color), _console(color, stderr=True)
    changed = False
    for res in results:
        if res.result is None or not res.result.diff:
            continue
        changed = True
        out.print(Syntax(res.result.diff.rstrip("\n"), "diff", theme="ansi_dark", background_color="default"))
        err.print(_summary(res))
    raise typer.Exit(2 if had_error else (1 if changed else 0))


@app.command()
def apply(paths: Paths, select: Select = None, ignore: Ignore = None, unsafe_fixes: Unsafe = False) -> None:
    """Rewrite files in place (atomically); '-' writes the fixed source to standard output."""
    try:
        options = Options(_codes(select), _codes(ignore), unsafe_fixes)
    except DdpfixError as exc:
        _fail(str(exc))
        raise typer.Exit(2)
    results, had_error = _results(paths, options, fix=True)
    for res in results:
        if res.result is None:
            continue
        if res.path == STDIN:
            sys.stdout.buffer.write(res.result.data if res.result.data is not None else res.result.code.encode())
            sys.stdout.buffer.flush()
            continue
        if not res.result.changed:
            continue
        try:
            write_atomic(res.path, res.result.data or res.result.code.encode(), expected=res.original)
        except DdpfixError as exc:
            _fail(str(exc))
            had_error = True
            continue
        typer.echo(_summary(res).replace(" hunk(s)", " hunk(s) applied"), err=True)
    raise typer.Exit(2 if had_error else 0)


@app.command()
def check(
    paths: Paths,
    select: Select = None,
    ignore: Ignore = None,
    output_format: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
) -> None:
    """Report what is wrong as `path:line:col: CODE message` (exit 1 on findings)."""
    if output_format not in ("text", "json"):
        _fail(f"unknown format: {output_format} (text, json)")
        raise typer.Exit(2)
    try:
        options = Options(_codes(select), _codes(ignore))
    except DdpfixError as exc:
        _fail(str(exc))
        raise typer.Exit(2)
    results, had_error = _results(paths, options, fix=False)
    found = 0
    records = []
    for res in results:
        if res.result is None:
            continue
        for d in res.result.diagnostics:
            found += 1
            if output_format == "json":
                records.append({"path": res.path, **d.to_dict()})
            else:
                typer.echo(d.format(res.path))
    if output_format == "json":
        typer.echo(json.dumps(records, indent=2))
    elif found:
        fixable = sum(1 for r in results if r.result for d in r.result.diagnostics if d.fix == "safe")
        typer.echo(f"Found {found} problem(s) ({fixable} fixable with `ddpfix apply`).", err=True)
    raise typer.Exit(2 if had_error else (1 if found else 0))


@app.command()
def rules(code: Annotated[Optional[str], typer.Argument(help="Show one rule's documentation.")] = None) -> None:
    """List the rules, or print one rule's documentation."""
    if code is None:
        for rule in sorted(RULES, key=lambda r: r.code):
            typer.echo(f"{rule.code}  {rule.name:<30} fix: {rule.fix:<6}  {rule.message}")
        return
    rule = BY_CODE.get(code.upper())
    if rule is None:
        _fail(f"unknown rule: {code}")
        raise typer.Exit(2)
    typer.echo(f"# {rule.code} {rule.name}\n\n{rule.message}\n\nFix: {rule.fix}\n{rule.docs}")


@app.command()
def lsp() -> None:
    """Run the language server over stdio (editor setup: docs/ide.md)."""
    from .lsp import main as serve

    serve()


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ddpfix {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")] = False) -> None:
    """ddpfix: DDP conversion and checks for PyTorch training scripts."""


def main() -> None:
    app()


__all__ = ["app", "main", "read"]
