"""Meter classes the script imports from its own modules (`from utils import AverageMeter`, `utils.
AverageMeter("Loss", ":.4e")`): each read from its module's text as meters.py reads the script's own
classes, by the name the script calls it by."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from ..syntax import dotted
from .imports import Origin
from .meters import MeterClass, meter_class
from .module_summary import COLLECTIVE
from .stamps import Stamp, read_bytes, stamp

# a module's classes by name, per stamp (its text as the analysis reads it)
_CLASSES: dict[Stamp, dict[str, cst.ClassDef]] = {}


def imported_meter_classes(facts, own: dict[str, MeterClass]) -> dict[str, MeterClass]:
    """The meter classes of the script's own modules that the script instantiates by a name bound by
    an assignment (`losses = AverageMeter()`), keyed by that name; `own`: the script's meter classes. A
    class or function the script defines itself shadows an imported one of that name."""
    out: dict[str, MeterClass] = {}
    index = facts.index
    seen: set[str] = set(own) | {c.name.value for c in index.classes} | {f.name.value for f in index.funcs}
    for assign in index.assigns:
        value = assign.value
        if type(value) is not cst.Call:
            continue
        name = dotted(value.func)
        if name is None or name in seen or name.split(".")[0] in seen:
            continue
        seen.add(name)
        target = facts.modules.target_of(value.func)
        if target is None or target.origin is not Origin.LOCAL or target.summary is None:
            continue
        summary, member = target.summary, target.member
        if member is None or member not in summary.classes:
            continue
        cls = _classes(summary.path).get(member)
        if cls is None:
            continue
        methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
        reduces = any(summary.does(f"{member}.{m}", COLLECTIVE) for m in methods)
        meter = meter_class(cls, methods, reduces)
        if meter is not None:
            out[name] = meter
    return out


def _classes(path: Path) -> dict[str, cst.ClassDef]:
    """The top-level classes of the module at `path` (none where it cannot be read or parsed)."""
    key = stamp(path)
    if key is None:
        return {}
    if key not in _CLASSES:
        try:
            module = cst.parse_module(read_bytes(path))
        except (cst.ParserSyntaxError, OSError, UnicodeDecodeError, LookupError, RecursionError):
            module = None
        found = {} if module is None else {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}
        _CLASSES[key] = found
    return _CLASSES[key]


__all__ = ["imported_meter_classes"]
