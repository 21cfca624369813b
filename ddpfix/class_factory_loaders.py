"""DDP201 across files: the training DataLoader a class of the script's modules trains on, built for it
by a function of the script's modules (`self.data_loader = get_loader(config)` in `Solver.__init__`,
`get_loader` in loaders.py building and returning one DataLoader).

The function gets the same edit as a factory the script calls itself (loader_factory.py): a keyword
parameter `distributed=False` that gives its loader a DistributedSampler (shuffle moved into it). The
class's call passes `distributed=dist.is_initialized()`, decided at run time as the class's wrap is
(module_wraps.py), and its epoch loop sets the sampler's epoch (module_epochs.epoch_loop_planner):

    self.data_loader = get_loader(config, distributed=dist.is_initialized())

A function that gives its loader a sampler only when asked (`sampler=DistributedSampler(ds) if
distributed else None`) is only asked. Every other caller keeps what it had. A function that returns
several loaders, or one reached through another module's import of another, is left out: the finding
says the fix does not reach it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from .analysis.class_loaders import ForeignLoader, foreign_loaders
from .analysis.imports import ImportTable, Origin
from .analysis.module_summary import LOADER
from .analysis.returns import Built
from .edits import with_kwarg
from .loader_factory import PARAM, factory_planner
from .module_edits import Planner
from .module_epochs import epoch_loop_planner
from .module_trials import Edit
from .rule import Context
from .syntax import dotted, kwarg


@dataclass(frozen=True)
class FactoryLoader:
    found: ForeignLoader  # the class's call of the function, and the loop that trains on what it returns
    path: Path  # the class's module
    cls: str
    factory: Path  # the module that defines the function
    func: str  # its name there
    built: Built  # the DataLoader it builds there, and the parameter that gives it a sampler, if any


def factory_loaders(ctx: Context, summary, cls: str) -> list[FactoryLoader]:
    """The loaders of `foreign_loaders` that a function of the script's modules builds and returns whole."""
    out = []
    for found in foreign_loaders(summary, cls):
        where = _defined(ctx, summary, found.builder)
        built = summary.returns.get(found.builder)
        if where is None or not isinstance(built, Built) or built.kind != LOADER:
            continue
        if built.sampled and built.gate is None:
            continue  # it has a sampler of its own
        out.append(FactoryLoader(found, summary.path, cls, where[0], where[1], built))
    return out


def _defined(ctx: Context, summary, name: str) -> tuple[Path, str] | None:
    """The module file and the function's name there, for a function the class's module defines or
    imports from another module of the script by name (`from loaders import get_loader`)."""
    if "." in name:
        return None
    if name not in summary.imported:
        return (summary.path, name) if name in summary.params else None
    table = ImportTable(summary.imported, ctx.facts.modules.finder_for(summary.path))
    origin, path, member = table.resolve(name)
    if origin is not Origin.LOCAL or path is None or not member or "." in member:
        return None
    return path, member


def factory_edits(ctx: Context, made: list[FactoryLoader]) -> list[Edit]:
    """The function's parameter and sampler (unless it has one already), the class's call passing it, and
    the epoch the class's loop sets."""
    others = ctx.others
    edits: list[Edit] = []
    for f in made:
        gate = f.built.gate or PARAM
        if f.built.gate is None:
            shown = others.shown(f.factory) if others is not None else str(f.factory)
            edits.append(
                (
                    f.factory,
                    ("factory", f.factory, f.func),
                    lambda lines, f=f, shown=shown: _noting(
                        factory_planner(f.factory, f.func, [f.built.line], shown), lines, f.built.line
                    ),
                )
            )
        edits.append(
            (f.path, ("factory call", f.path, f.found.line), lambda lines, f=f, g=gate: _call_planner(f, g, lines))
        )
        member = f"{f.cls}.{f.found.method}"
        edits.append(
            (
                f.path,
                ("set_epoch", f.path, member, f.found.reach),
                lambda lines, m=member, r=f.found.reach: epoch_loop_planner(m, r, lines),
            )
        )
    return edits


def _noting(plan: Planner, lines: list[int], line: int) -> Planner:
    def noted(ctx: Context) -> str | None:
        why = plan(ctx)
        if why is None:
            lines.append(line)
        return why

    return noted


def _call_planner(f: FactoryLoader, gate: str, lines: list[int]) -> Planner:
    """`get_loader(config, distributed=dist.is_initialized())` at the class's call."""

    def plan(ctx: Context) -> str | None:
        index = ctx.facts.index
        call = next(
            (
                c
                for c in index.calls
                if dotted(c.func) == f.found.builder and index.position(c).start.line == f.found.line
            ),
            None,
        )
        site = index.site(call) if call is not None else None
        if call is None or site is None or site.cls is None or site.cls.name.value != f.cls:
            return f"{f.cls} does not call {f.found.builder}() at line {f.found.line}"
        if kwarg(call, gate) is not None or any(a.star for a in call.args):
            return f"{f.cls} passes {f.found.builder}() its arguments where the fix cannot add {gate}="
        ctx.joins_elsewhere()  # the module does not know how its caller launched: ask the process group
        flag = cst.parse_expression(ctx.env("DISTRIBUTED"))
        ctx.plan.replace(call, lambda node: with_kwarg(node, gate, flag))
        lines.append(f.found.line)
        return None

    return plan


__all__ = ["FactoryLoader", "factory_edits", "factory_loaders"]
