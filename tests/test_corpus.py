"""Robustness over real code: `check` and `diff` over the installed torch package's sources and the
golden inputs. Zero crashes, every proposed output re-parses, applying twice changes nothing.

CI runs a deterministic subset: every golden input, every CORPUS_STRIDE-th torch file, and every
torch file up to CI_MAX_BYTES that reaches the rules (it mentions backward, DDP, process groups or
parameters). The whole package (about 5 minutes on 2 cores):

    DDPFIX_CORPUS=full python -m pytest tests/test_corpus.py        # every .py file of torch
    DDPFIX_CORPUS=7 python -m pytest tests/test_corpus.py           # every 7th file, plus the above
"""

from __future__ import annotations

import multiprocessing
import os
import re
import sys
import time
from pathlib import Path

import pytest
from invariants import problems

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from corpus import golden_inputs, torch_dir, torch_files  # noqa: E402

CORPUS_STRIDE = 40
# Files that get past the "is this a training script" gate, where the rules and fixes run.
REACHES_RULES = re.compile(rb"\.backward\(|DistributedDataParallel|init_process_group|\.parameters\(")
# The largest of those are generated tables and test harnesses: in the full run only.
CI_MAX_BYTES = 80_000


# Files with a known, reported bug: file -> what every one of its problems says. The run fails if one
# of them stops failing (so the list cannot go stale) or fails in another way. Each entry needs a
# minimal reproducer in tests/test_robustness.py. None at present.
KNOWN: dict[str, str] = {}


def _selected() -> list[Path]:
    mode = os.environ.get("DDPFIX_CORPUS", "ci")
    files = torch_files()
    if mode == "full":
        return files + golden_inputs()
    stride = int(mode) if mode.isdigit() else CORPUS_STRIDE
    picked = []
    for i, path in enumerate(files):
        if i % stride == 0:
            picked.append(path)
            continue
        if path.stat().st_size <= CI_MAX_BYTES and REACHES_RULES.search(path.read_bytes()):
            picked.append(path)
    return picked + golden_inputs()


def _one(path: Path) -> tuple[str, list[str], float]:
    start = time.process_time()
    data = path.read_bytes()
    found = problems(data, str(path), unsafe_fixes=path.name == "input.py")
    return str(path), found, time.process_time() - start


@pytest.mark.slow
@pytest.mark.timeout(7200)
@pytest.mark.skipif(torch_dir() is None, reason="torch is not installed")
def test_corpus_never_breaks():
    files = _selected()
    assert len(files) > 100
    jobs = min(len(os.sched_getaffinity(0)), 4)
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        results = list(pool.imap_unordered(_one, files, chunksize=4))
    root = torch_dir()
    failures, known_failing = [], set()
    for path, found, _ in results:
        rel = Path(path).relative_to(root).as_posix() if Path(path).is_relative_to(root) else path
        if rel in KNOWN and found and all(KNOWN[rel] in problem for problem in found):
            known_failing.add(rel)
        else:
            failures += found
    ran_known = {Path(p).relative_to(root).as_posix() for p, _, _ in results if Path(p).is_relative_to(root)} & set(
        KNOWN
    )
    fixed = sorted(ran_known - known_failing)
    slowest = sorted(results, key=lambda r: -r[2])[:5]
    print(f"\n{len(files)} files; slowest: " + ", ".join(f"{Path(p).name} {s:.1f}s" for p, _, s in slowest))
    assert not failures, f"{len(failures)} problem(s):\n" + "\n".join(failures[:30])
    assert not fixed, f"known problems gone, remove them from KNOWN: {fixed}"
