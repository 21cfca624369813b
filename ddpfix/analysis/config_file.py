"""The class a config file names for a factory call (config_factory.py), read only to label and order
the classes a finding names: `init_obj(module_data, config["data_loader"])`, with `config` loaded
from the JSON file the script's argparse default names (`Path(__file__).with_name("config.json")`)
beside it. Every class the module offers is fixed or reported all the same: another config file may
name another class."""

from __future__ import annotations

import json
from pathlib import Path

import libcst as cst

from ..syntax import dotted, kwarg, positional, walk
from .config_factory import FactoryCall


def configured(facts, fc: FactoryCall) -> tuple[str, str] | None:
    """(the class the default config file names for `fc`, that file's name), or None where it is not
    read so (no single `.json` default, no literal key, not a class name there)."""
    arg = positional(fc.call, fc.config_at) if fc.config_at is not None else None
    value = arg.value if arg is not None else None
    if not isinstance(value, cst.Subscript) or len(value.slice) != 1:
        return None
    index = value.slice[0].slice
    key = index.value if isinstance(index, cst.Index) else None
    path = _default_config(facts)
    if not isinstance(key, cst.SimpleString) or path is None:
        return None
    try:
        entry = json.loads(path.read_text()).get(key.evaluated_value)
    except (OSError, ValueError, AttributeError):
        return None
    name = entry.get("type") if isinstance(entry, dict) else None
    return (name, path.name) if isinstance(name, str) else None


def _default_config(facts) -> Path | None:
    """The one JSON file beside the script that an `add_argument(..., default=...)` names."""
    folder = facts.modules.folder if facts.modules is not None else None
    found = set()
    for call in facts.index.calls:
        default = kwarg(call, "default") if (dotted(call.func) or "").endswith("add_argument") else None
        for node in walk(default.value) if default is not None else ():
            if isinstance(node, cst.SimpleString) and str(node.evaluated_value).endswith(".json"):
                found.add(str(node.evaluated_value))
    if folder is None or len(found) != 1:
        return None
    path = folder / found.pop()
    return path if path.is_file() else None


__all__ = ["configured"]
