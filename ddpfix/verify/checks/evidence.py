"""Reading the traces and writing evidence: events of a rank, places in the script ("`dist.barrier()` at
train.py:31"), sets, ranks and counts as a person reads them."""

from __future__ import annotations

import linecache
import os
import re

from .. import probe
from .model import RunData

# One definition of "the script's own code" for the probe (inside every rank) and the checks (here):
# the probe must stay a single standard-library file, so the helper lives there and is imported from it.
LIB_PREFIXES = probe.library_prefixes()
PROBE_DIR = os.path.dirname(os.path.abspath(probe.__file__)) + os.sep


def is_user_file(path: str) -> bool:
    return probe.is_user_file(path, LIB_PREFIXES)


# ------------------------------------------------------------------------ the traces
def events(run: RunData, rank: int, ev: str) -> list:
    return [e for e in run.traces.get(rank, ()) if e.get("ev") == ev]


def first(run: RunData, rank: int, ev: str):
    for e in run.traces.get(rank, ()):
        if e.get("ev") == ev:
            return e
    return None


def all_ranks(run: RunData) -> list:
    return sorted(set(range(run.world_size)) | set(run.traces))


def finished(run: RunData, rank: int) -> bool:
    """The rank ran the script to its end (it may still have crashed while its process exited)."""
    end = first(run, rank, "end")
    return end is not None and end.get("status") == "ok"


# ------------------------------------------------------------------------ places
def split_site(site: str | None):
    if not site:
        return None, None
    path, _, line = site.rpartition(":")
    try:
        return path, int(line)
    except ValueError:
        return site, None


def short_path(path: str, run: RunData) -> str:
    if not path:
        return "?"
    if path.startswith("<"):
        return path
    base = run.cwd or os.getcwd()
    try:
        rel = os.path.relpath(path, base)
    except ValueError:
        return path
    if rel.startswith(".." + os.sep):
        sdir = os.path.dirname(run.script)
        rel2 = os.path.relpath(path, sdir) if sdir else rel
        return rel2 if not rel2.startswith("..") else path
    return rel


def fmt_site(site: str | None, run: RunData, code: bool = True) -> str:
    """ "train.py:31" or, with the source line, "`dist.barrier()` at train.py:31"."""
    path, line = split_site(site)
    if path is None:
        return "an unknown place"
    where = f"{short_path(path, run)}:{line}" if line else short_path(path, run)
    if code and line:
        src = strip_comment(linecache.getline(path, line).strip())
        if src:
            if len(src) > 60:
                src = src[:57] + "..."
            return f"`{src}` at {where}"
    return where


def strip_comment(src: str) -> str:
    """Drop a trailing ``# comment`` when the ``#`` is clearly outside string literals."""
    if "#" not in src:
        return src
    code, _, _ = src.partition("#")
    if code.count('"') % 2 == 0 and code.count("'") % 2 == 0 and code.strip():
        return code.rstrip()
    return src


# ------------------------------------------------------------------------ words and numbers
def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def fmt_set(values, limit: int = 3) -> str:
    vals = sorted(values, key=lambda v: (not isinstance(v, int), v if isinstance(v, int) else str(v)))
    shown = ", ".join(str(v) for v in vals[:limit])
    more = f" and {len(vals) - limit} more" if len(vals) > limit else ""
    return "{" + shown + "}" + more


def fmt_ranks(ranks) -> str:
    ranks = sorted(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) == 2:
        return f"ranks {ranks[0]} and {ranks[1]}"
    return f"ranks {ranks}"


def short_message(msg: str | None, limit: int = 200) -> str:
    if not msg:
        return ""
    line = msg.strip().splitlines()[0] if msg.strip() else ""
    line = re.sub(r"\[[^\]\s]*\.(?:cc|cpp|h|hpp|cu):\d+\]\s*", "", line)  # gloo's "[/path/pair.cc:553] "
    return line if len(line) <= limit else line[: limit - 3] + "..."
