"""Options: the script's argparse command-line options (`parser.add_argument("--dist-backend",
default="nccl")`), by the attribute they set on the parsed namespace (`args.dist_backend`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from ..syntax import kwarg, method_name, string_value
from .index import TreeIndex

# Options through which a script launches its own processes or joins its own process group.
LAUNCH_OPTIONS = re.compile(r"^(local_rank|dist_url|world_size|multiprocessing_distributed|dist_backend|node_rank|nr)$")


@dataclass(frozen=True)
class Option:
    dest: str  # "dist_backend"
    flags: tuple[str, ...]  # ("--dist-backend",)
    call: cst.Call  # the add_argument call
    default: cst.Arg | None


class Options:
    """`add_argument` calls of the script, by destination."""

    def __init__(self, index: TreeIndex) -> None:
        self.index = index

    @cached_property
    def by_dest(self) -> dict[str, Option]:
        out: dict[str, Option] = {}
        for call in self.index.calls:
            if method_name(call) != "add_argument":
                continue
            flags = tuple(
                v for a in call.args if a.keyword is None and (v := string_value(a.value)) and v.startswith("-")
            )
            if not flags:
                continue
            dest_arg = kwarg(call, "dest")
            dest = string_value(dest_arg.value) if dest_arg is not None else None
            if dest is None:
                long = [f for f in flags if f.startswith("--")]
                dest = (long[0] if long else flags[0]).lstrip("-").replace("-", "_")
            out.setdefault(dest, Option(dest, flags, call, kwarg(call, "default")))
        return out

    def of(self, expr: cst.BaseExpression) -> Option | None:
        """The option an attribute of the parsed namespace reads (`args.dist_backend`)."""
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, (cst.Name, cst.Attribute)):
            return self.by_dest.get(expr.attr.value)
        return None

    @cached_property
    def launch(self) -> list[Option]:
        """The options that drive a launch of the script's own (`--local_rank`, `--dist-url`, ...)."""
        return [o for d, o in self.by_dest.items() if LAUNCH_OPTIONS.match(d)]


__all__ = ["LAUNCH_OPTIONS", "Option", "Options"]
