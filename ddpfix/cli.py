"""The `ddpfix` command: argument parsing, printing and exit codes over the Python API."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from rich.console import Console
from rich.syntax import Syntax

from . import __version__
from .config import Overrides, Resolver, check_codes, effective, is_excluded
from .diff import stats
from .docs import rule_page
from .engine import STDIN, FileResult, Options, Task, discover, read, run_many, run_task, write_atomic
from .errors import DdpfixError
from .formats import FORMATS, all_rules, rule_by_code, to_github, to_json, to_sarif
from .verify.command import CONTEXT_SETTINGS as VERIFY_CONTEXT
from .verify.command import verify

app = typer.Typer(
    name="ddpfix",
    help="Turn single-GPU PyTorch training scripts into correct DistributedDataParallel scripts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PROGRESS_MIN_FILES = 10  # a progress bar only for runs at least this long, and only on a terminal

Paths = Annotated[
    list[str] | None,
    typer.Argument(help="Files or folders ('-' reads standard input). None given: nothing to do.", show_default=False),
]
Select = Annotated[
    list[str] | None,
    typer.Option("--select", help="Only these rule codes or prefixes (repeatable; overrides the config)."),
]
Ignore = Annotated[
    list[str] | None,
    typer.Option("--ignore", help="Skip these rule codes or prefixes (repeatable; overrides the config)."),
]
Unsafe = Annotated[
    bool | None,
    typer.Option(
        "--unsafe-fixes/--no-unsafe-fixes",
        help="Also apply fixes that change behaviour (e.g. SyncBatchNorm); default from the config, else off.",
        show_default=False,
    ),
]
Color = Annotated[
    bool | None,
    typer.Option("--color/--no-color", help="Colour output (default: only on a terminal).", show_default=False),
]
ConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--config", help="Read settings from this pyproject.toml (or ddpfix.toml) instead of the nearest one."
    ),
]
Isolated = Annotated[bool, typer.Option("--isolated", help="Ignore every configuration file.")]
Exclude = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude", help="Skip paths matching these gitignore-style patterns (repeatable; overrides the config)."
    ),
]
Jobs = Annotated[
    int | None,
    typer.Option("--jobs", "-j", help="Worker processes for many files (default: the number of CPUs).", min=1),
]
Quiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="Print findings and errors only: no summaries, no progress bar.")
]
Verbose = Annotated[
    bool, typer.Option("--verbose", "-v", help="Also print the config used, skipped paths and per-file timings.")
]
StdinName = Annotated[
    str | None,
    typer.Option("--stdin-filename", help="The path to report (and to match config patterns against) for '-'."),
]


# ------------------------------------------------------------------------------------ plumbing
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


def _note(message: str) -> None:
    typer.echo(message, err=True)


def _codes(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return check_codes(values, "--select/--ignore")


class Run:
    """What every file command shares: settings, discovery, the worker pool, progress, messages."""

    def __init__(
        self,
        *,
        select: list[str] | None = None,
        ignore: list[str] | None = None,
        unsafe_fixes: bool | None = None,
        config: str | None = None,
        isolated: bool = False,
        exclude: list[str] | None = None,
        jobs: int | None = None,
        quiet: bool = False,
        verbose: bool = False,
        stdin_filename: str | None = None,
    ) -> None:
        self.overrides = Overrides(
            select=_codes(select), ignore=_codes(ignore), unsafe_fixes=unsafe_fixes, exclude=exclude
        )
        self.resolver = Resolver(config, isolated)
        self.jobs = jobs
        self.quiet = quiet and not verbose
        self.verbose = verbose
        self.stdin_filename = stdin_filename
        self.errors: list[str] = []
        self._configs_seen: set[str] = set()

    def error(self, message: str) -> None:
        self.errors.append(message)
        _fail(message)

    def verbose_note(self, message: str) -> None:
        if self.verbose:
            _note(message)

    def options(self, path: str) -> Options:
        cfg = self.resolver.for_path(path)
        if self.verbose and cfg.path is not None and str(cfg.path) not in self._configs_seen:
            self._configs_seen.add(str(cfg.path))
            _note(f"config: {cfg.path}")
        return effective(cfg, self.overrides, path)

    def _excluded(self, path: str, is_dir: bool) -> bool:
        cfg = self.resolver.for_dir(path) if is_dir else self.resolver.for_path(path)
        return is_excluded(cfg, self.overrides, path, is_dir)

    def files(self, paths: list[str] | None) -> list[str]:
        if not paths:
            if not self.quiet:
                _note("ddpfix: no files given; nothing to do")
            return []
        return list(discover(paths, self._excluded, on_skip=lambda p: self.verbose_note(f"excluded: {p}")))

    def results(
        self, paths: list[str] | None, *, fix: bool, keep: str = "all", fixes: bool = False
    ) -> list[FileResult]:
        """Every file's result, in order; errors are printed as one line each (and remembered)."""
        start = time.perf_counter()
        files = self.files(paths)
        out: list[FileResult] = []
        tasks: list[Task] = []
        for path in files:
            if path == STDIN:
                name = self.stdin_filename or STDIN
                task = Task(name, self.options(name), fix=fix, keep="all", fixes=fixes)
                res = run_task(task, data=sys.stdin.buffer.read())
                res.stdin = True
                out.append(res)
            else:
                tasks.append(Task(path, self.options(path), fix=fix, keep=keep, fixes=fixes))
        with self.progress(len(tasks)) as advance:
            out.extend(run_many(tasks, jobs=self.jobs, on_done=advance))
        for res in out:
            if res.error:
                self.error(res.error)
            elif self.verbose and res.result is not None:
                _note(f"{res.path}: {len(res.result.diagnostics)} finding(s) in {res.seconds * 1000:.0f} ms")
        if self.verbose:
            _note(f"{len(out)} file(s) in {time.perf_counter() - start:.2f} s")
        return out

    @contextmanager
    def progress(self, total: int) -> Iterator[Callable[[FileResult], None]]:
        console = Console(stderr=True)
        if self.quiet or total < PROGRESS_MIN_FILES or not console.is_terminal:
            yield lambda res: None
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        bar = Progress(
            TextColumn("ddpfix"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        task = bar.add_task("files", total=total)
        started = False

        def advance(res: FileResult) -> None:
            # the bar (and its refresh thread) starts with the first result, after the worker pool has
            # forked: forking a process that already runs threads can deadlock the children
            nonlocal started
            if not started:
                bar.start()
                started = True
            bar.advance(task)

        try:
            yield advance
        finally:
            if started:
                bar.stop()


def _start(**kwargs) -> Run:
    try:
        return Run(**kwargs)
    except DdpfixError as exc:
        _fail(str(exc))
        raise typer.Exit(2) from None


def _discovered(run: Run, paths, **kwargs) -> list[FileResult]:
    try:
        return run.results(paths, **kwargs)
    except DdpfixError as exc:  # a missing path, a broken config found on the way
        run.error(str(exc))
        return []


def _summary(res: FileResult, verb: str = "") -> str:
    """`path: 2 hunk(s), +9 -1; fixed: DDP001; not fixed: DDP104; 1 fix withheld: DDP006 (why)`."""
    assert res.result is not None
    applied = res.result.applied_codes
    withheld = res.result.withheld
    remaining = sorted({d.code for d in res.result.diagnostics if not d.applied} - set(withheld))
    s = stats(res.result.diff)
    text = f"{res.path}: {s.hunks} hunk(s){verb}, +{s.added} -{s.removed}; fixed: {', '.join(applied) or 'nothing'}"
    if remaining:
        text += f"; not fixed: {', '.join(remaining)}"
    if withheld:
        text += f"; {_withheld_summary(withheld)}"
    return text


def _withheld_summary(withheld: dict[str, str]) -> str:
    n = len(withheld)
    items = "; ".join(f"{code} ({reason})" for code, reason in withheld.items())
    return f"{n} fix{'es' if n > 1 else ''} withheld as unsafe for this script: {items}"


# ------------------------------------------------------------------------------------ commands
@app.command()
def diff(
    paths: Paths = None,
    select: Select = None,
    ignore: Ignore = None,
    unsafe_fixes: Unsafe = None,
    color: Color = None,
    config: ConfigOpt = None,
    isolated: Isolated = False,
    exclude: Exclude = None,
    jobs: Jobs = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    stdin_filename: StdinName = None,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when there are changes (errors still exit 2).")
    ] = False,
) -> None:
    """Print the unified diff `apply` would make, with the same flags (exit 1 when it would change
    something or withhold a fix)."""
    run = _start(
        select=select,
        ignore=ignore,
        unsafe_fixes=unsafe_fixes,
        config=config,
        isolated=isolated,
        exclude=exclude,
        jobs=jobs,
        quiet=quiet,
        verbose=verbose,
        stdin_filename=stdin_filename,
    )
    results = _discovered(run, paths, fix=True, keep="diff")
    out, err = _console(color), _console(color, stderr=True)
    changed = withheld = False
    for res in results:
        if res.result is None or not (res.result.diff or res.result.withheld):
            continue
        changed = changed or bool(res.result.diff)
        withheld = withheld or bool(res.result.withheld)
        if res.result.diff:
            out.print(Syntax(res.result.diff.rstrip("\n"), "diff", theme="ansi_dark", background_color="default"))
        if not run.quiet:
            err.print(_summary(res), markup=False)
    raise typer.Exit(2 if run.errors else (1 if (changed or withheld) and not exit_zero else 0))


@app.command()
def apply(
    paths: Paths = None,
    select: Select = None,
    ignore: Ignore = None,
    unsafe_fixes: Unsafe = None,
    interactive: Annotated[
        bool, typer.Option("--interactive", "-i", help="Choose hunk by hunk (y/n/a/d/q), like `git add -p`.")
    ] = False,
    color: Color = None,
    config: ConfigOpt = None,
    isolated: Isolated = False,
    exclude: Exclude = None,
    jobs: Jobs = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    stdin_filename: StdinName = None,
) -> None:
    """Rewrite files in place (atomically) with the safe fixes; '-' writes the fixed source to standard output.

    Exit 1 when the output guard withheld a fix (the summary line says which and why), 2 on errors."""
    if interactive and paths and STDIN in paths:
        _fail("--interactive reads answers from standard input; it cannot also read the source from '-'")
        raise typer.Exit(2) from None
    run = _start(
        select=select,
        ignore=ignore,
        unsafe_fixes=unsafe_fixes,
        config=config,
        isolated=isolated,
        exclude=exclude,
        jobs=jobs,
        quiet=quiet,
        verbose=verbose,
        stdin_filename=stdin_filename,
    )
    results = _discovered(run, paths, fix=True, keep="all")
    withheld = any(res.result is not None and res.result.withheld for res in results)
    if interactive:
        _interactive(run, results, color)
        raise typer.Exit(2 if run.errors else (1 if withheld else 0))
    for res in results:
        if res.result is None:
            continue
        if res.stdin:
            _stdout(res)
            if res.result.withheld and not run.quiet:
                _note(_summary(res, " applied"))
            continue
        if res.result.changed:
            try:
                write_atomic(res.path, res.result.data or res.result.code.encode(), expected=res.original)
            except DdpfixError as exc:
                run.error(str(exc))
                continue
        if not run.quiet and (res.result.changed or res.result.withheld):
            _note(_summary(res, " applied"))
    raise typer.Exit(2 if run.errors else (1 if withheld else 0))


def _stdout(res: FileResult) -> None:
    assert res.result is not None
    sys.stdout.buffer.write(res.result.data if res.result.data is not None else res.result.code.encode())
    sys.stdout.buffer.flush()


def _interactive(run: Run, results: list[FileResult], color: bool | None) -> None:
    from .interactive import FilePlan, walk

    out = _console(color)
    plans = []
    for res in results:
        if res.result is not None and res.result.withheld and not run.quiet:
            _note(f"{res.path}: {_withheld_summary(res.result.withheld)}")
        if res.result is None or not res.result.changed or res.original is None or res.stdin:
            continue
        opts = run.options(res.path)
        plans.append(
            FilePlan(
                res.path,
                res.original,
                res.result,
                select=opts.select,
                ignore=opts.ignore,
                unsafe_fixes=opts.unsafe_fixes,
            )
        )

    def ask(prompt: str) -> str | None:
        typer.echo(prompt, nl=False)
        line = sys.stdin.readline()
        return line if line else None

    def show(hunk: str) -> None:
        out.print(Syntax(hunk.rstrip("\n"), "diff", theme="ansi_dark", background_color="default"))

    outcomes = walk(plans, ask, lambda text: out.print(text, markup=False, highlight=False), show)
    originals = {res.path: res.original for res in results}
    for o in outcomes:
        if o.data is None:
            if not run.quiet and o.text is None and o.chosen:
                _note(f"{o.path}: not rewritten")
            continue
        try:
            write_atomic(o.path, o.data, expected=originals.get(o.path))
        except DdpfixError as exc:
            run.error(str(exc))
            continue
        if not run.quiet:
            _note(f"{o.path}: {len(o.chosen)} of {o.total} hunk(s) applied")


@app.command()
def check(
    paths: Paths = None,
    select: Select = None,
    ignore: Ignore = None,
    output_format: Annotated[
        str,
        typer.Option(
            "--format", help="text, json (with each fix's edits), sarif (2.1.0) or github (workflow annotations)."
        ),
    ] = "text",
    output_file: Annotated[
        str | None,
        typer.Option("--output-file", "-o", help="Write the report to this file instead of standard output."),
    ] = None,
    config: ConfigOpt = None,
    isolated: Isolated = False,
    exclude: Exclude = None,
    jobs: Jobs = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    stdin_filename: StdinName = None,
) -> None:
    """Report what is wrong as `path:line:col: CODE message` (exit 1 on findings)."""
    if output_format not in FORMATS:
        _fail(f"unknown format: {output_format} ({', '.join(FORMATS)})")
        raise typer.Exit(2) from None
    run = _start(
        select=select,
        ignore=ignore,
        config=config,
        isolated=isolated,
        exclude=exclude,
        jobs=jobs,
        quiet=quiet,
        verbose=verbose,
        stdin_filename=stdin_filename,
    )
    results = _discovered(run, paths, fix=False, keep="diagnostics", fixes=output_format in ("json", "sarif"))
    diagnostics = [(res, d) for res in results if res.result is not None for d in res.result.diagnostics]
    if output_format == "json":
        report = to_json(results) + "\n"
    elif output_format == "sarif":
        import json

        report = json.dumps(to_sarif(results, run.errors), indent=2, ensure_ascii=False) + "\n"
    elif output_format == "github":
        report = "".join(line + "\n" for line in to_github(results))
    else:
        report = "".join(d.format(res.path) + "\n" for res, d in diagnostics)
    if output_file:
        try:
            with open(output_file, "w", encoding="utf-8") as f:
                f.write(report)
        except OSError as exc:
            _fail(f"{output_file}: cannot write: {exc.strerror or exc}")
            raise typer.Exit(2) from None
    else:
        sys.stdout.write(report)
        sys.stdout.flush()
    if diagnostics and not run.quiet and (output_format == "text" or output_file):
        safe = sum(1 for _, d in diagnostics if d.fix == "safe")
        unsafe = sum(1 for _, d in diagnostics if d.fix == "unsafe")
        text = f"Found {len(diagnostics)} problem(s) ({safe} fixable with `ddpfix apply`"
        text += f", {unsafe} more with `--unsafe-fixes`)." if unsafe else ")."
        _note(text)
    raise typer.Exit(2 if run.errors else (1 if diagnostics else 0))


@app.command()
def rules(code: Annotated[str | None, typer.Argument(help="Show one rule's documentation.")] = None) -> None:
    """List the rules, or print one rule's documentation."""
    if code is None:
        for rule in all_rules():
            typer.echo(f"{rule.code}  {rule.name:<30} fix: {rule.fix:<6}  {rule.message}")
        return
    rule = rule_by_code().get(code.upper())
    if rule is None:
        _fail(f"unknown rule: {code}")
        raise typer.Exit(2) from None
    typer.echo(rule_page(rule))


@app.command("explain")
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
    from .explain import explain

    try:
        code = explain(subject, script, echo=lambda text="": typer.echo(_encodable(text, sys.stdout)))
    except DdpfixError as exc:
        _fail(_encodable(str(exc), sys.stderr))
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


app.command("verify", context_settings=VERIFY_CONTEXT)(verify)


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
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """ddpfix: DDP conversion and checks for PyTorch training scripts."""


def main() -> None:
    app()


__all__ = ["app", "main", "read"]
