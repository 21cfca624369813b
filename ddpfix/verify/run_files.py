"""What a run leaves in its folder: the ranks' traces (``rank{R}.jsonl``), faulthandler stack dumps
(``stack{R}.txt`` at the time limit, ``term{R}.txt`` when torchrun stops a rank), fatal-error dumps
(``crash{R}.txt``) and the agents' output."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

OUTPUT_TAIL = 64 * 1024


def read_trace_files(run_dir: str) -> tuple[dict[int, list[dict]], dict[int, int]]:
    """rank -> its trace events, and rank -> lines of its trace that were not JSON (lost lines)."""
    traces: dict[int, list[dict]] = {}
    unreadable: dict[int, int] = {}
    for p in sorted(Path(run_dir).glob("rank*.jsonl")):
        m = re.fullmatch(r"rank(\d+)\.jsonl", p.name)
        if not m:
            continue
        rank, events, bad = int(m.group(1)), [], 0
        with open(p, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    bad += 1
                    continue
                if isinstance(event, dict):
                    events.append(event)
                else:
                    bad += 1
        traces[rank] = events
        if bad:
            unreadable[rank] = bad
    return traces, unreadable


def read_traces(run_dir: str) -> dict[int, list[dict]]:
    return read_trace_files(run_dir)[0]


_THREAD_RE = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+)|^Stack \(most recent call first\)")
_FRAME_RE = re.compile(r'^\s+File "(.*)", line (\d+) in (.*)$')


def parse_stack_dump(text: str) -> list[dict]:
    """faulthandler output -> [{thread, current, frames: [{file, line, func}] innermost first}]."""
    threads: list[dict] = []
    cur = None
    for line in text.splitlines():
        m = _THREAD_RE.match(line)
        if m:
            cur = {
                "thread": m.group(2) or "",
                "current": bool(m.group(1) == "Current thread" or not m.group(1)),
                "frames": [],
            }
            threads.append(cur)
            continue
        m = _FRAME_RE.match(line)
        if m and cur is not None:
            cur["frames"].append({"file": m.group(1), "line": int(m.group(2)), "func": m.group(3).strip()})
    return threads


def read_stacks(run_dir: str, prefix: str) -> dict[int, list[dict]]:
    out = {}
    for p in Path(run_dir).glob(f"{prefix}*.txt"):
        m = re.fullmatch(re.escape(prefix) + r"(\d+)\.txt", p.name)
        if not m:
            continue
        text = p.read_text(errors="replace")
        threads = parse_stack_dump(text)
        if threads:
            out[int(m.group(1))] = threads
    return out


def read_crashes(run_dir: str) -> dict[int, str]:
    out = {}
    for p in Path(run_dir).glob("crash*.txt"):
        m = re.fullmatch(r"crash(\d+)\.txt", p.name)
        text = p.read_text(errors="replace").strip() if m else ""
        if text:
            out[int(m.group(1))] = text[-4000:]
    return out


def tail(path: Path, limit: int = OUTPUT_TAIL) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    return text if size <= limit else "…" + text
