"""Mutation tests of `ddpfix verify`: take a rewrite ddpfix makes, break one thing that makes it
distributed, and run it under torchrun. The check that guards that thing must fail, and no other.

- the DDP wrap removed and the optimizer replaced by manual updates (``p -= lr * p.grad``): `ddp` fails,
  although no optimizer ever steps;
- the per-rank cut of hand-cut batches removed (every rank slices the same batches): `shards` fails,
  although no DataLoader draws them;
- the DistributedSampler removed from a DataLoader: `shards` fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from teardown import verify_with_reruns

import ddpfix
from ddpfix.verify import verify_script

ROOT = Path(__file__).resolve().parents[1]
MANUAL = ROOT / "tests" / "golden" / "manual_batches" / "input.py"
EXAMPLE = ROOT / "examples" / "train.py"
TIMEOUT = 240


def mutate(source: str, *edits: tuple[str, str]) -> str:
    """Apply each (old, new) replacement, which must match exactly once: a mutation that no longer
    applies fails the test instead of silently testing the unmutated rewrite."""
    for old, new in edits:
        assert source.count(old) == 1, f"mutation target not found once: {old!r}"
        source = source.replace(old, new)
    return source


def rewrite(path: Path) -> str:
    result = ddpfix.fix_source(path.read_text(encoding="utf-8"), path=str(path))
    assert result.changed
    return result.code


def run(tmp_path: Path, source: str, args=()):
    script = tmp_path / "train.py"
    script.write_text(source, encoding="utf-8")
    return verify_with_reruns(
        lambda cwd: verify_script(script, list(args), nproc=2, timeout=TIMEOUT, cwd=cwd), tmp_path / "run", "mutant"
    ).last


def statuses(report) -> str:
    return "\n".join(f"{c.status:5} {c.name}: {' / '.join(c.evidence)}" for c in report.checks)


WRAP = "        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)\n"
MANUAL_UPDATES = (
    ("    if DISTRIBUTED:\n" + WRAP, ""),
    ("    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)\n", ""),
    ("            optimizer.zero_grad()\n", "            model.zero_grad()\n"),
    (
        "            optimizer.step()\n",
        "            with torch.no_grad():\n"
        "                for p in model.parameters():\n"
        "                    p -= 0.05 * p.grad\n",
    ),
)
UNSHARDED = (
    (
        "range(RANK * args.batch_size, n, WORLD_SIZE * args.batch_size)[:num_batches]",
        "range(0, n, args.batch_size)[:num_batches]",
    ),
)


@pytest.mark.slow
def test_the_rewrite_of_hand_cut_batches_passes_ddp_and_shards(tmp_path):
    report = run(tmp_path, rewrite(MANUAL), ["--epochs", "1"])
    assert report.ok, statuses(report)
    assert report["ddp"].status == "pass" and report["shards"].status == "pass", statuses(report)


@pytest.mark.slow
def test_ddp_wrap_removed_with_manual_updates_fails_ddp(tmp_path):
    report = run(tmp_path, mutate(rewrite(MANUAL), *MANUAL_UPDATES), ["--epochs", "1"])
    assert {c.name for c in report.failed} == {"ddp"}, statuses(report)
    ev = report["ddp"].evidence[0]
    assert "reached the parameters of Linear" in ev and "no optimizer step" in ev, ev


@pytest.mark.slow
def test_hand_cut_batches_no_longer_cut_by_rank_fail_shards(tmp_path):
    report = run(tmp_path, mutate(rewrite(MANUAL), *UNSHARDED), ["--epochs", "1"])
    assert {c.name for c in report.failed} == {"shards"}, statuses(report)
    assert "fed the same 6 training inputs to Linear's forward" in report["shards"].evidence[0], statuses(report)


@pytest.mark.slow
def test_sampler_removed_from_the_loader_fails_shards(tmp_path):
    source = mutate(
        rewrite(EXAMPLE),
        (
            "shuffle=(train_sampler is None), sampler=train_sampler)",
            "shuffle=True)",
        ),
        ("        if train_sampler is not None:\n            train_sampler.set_epoch(epoch)\n", ""),
    )
    report = run(tmp_path, source, ["--epochs", "1"])
    assert "shards" in {c.name for c in report.failed}, statuses(report)
    assert report["shards"].evidence[0].startswith("loader at train.py:"), statuses(report)
