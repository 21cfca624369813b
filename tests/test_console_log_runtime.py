"""DDP411's fix, run for real: under torchrun the converted script's INFO lines come out once, from
rank 0, as `python train.py` prints them; every rank still logs its own warnings."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_metric_reduce_runtime import converted_runs

GOLDEN = Path(__file__).parent / "golden" / "console_log_every_rank"


def _lines(out: str, level: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(level + " ")]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_info_lines_come_once_and_warnings_from_every_rank(tmp_path):
    script = (GOLDEN / "input.py").read_text()
    code, plain, ddp = converted_runs(tmp_path, script, "WARNING no checkpoint", ddp_last="INFO epoch 2 done")
    assert "level=logging.INFO if RANK == 0 else logging.WARNING," in code
    assert _lines(plain, "INFO") == [
        "INFO training 64 samples",
        "INFO epoch 0 done",
        "INFO epoch 1 done",
        "INFO epoch 2 done",
    ]
    assert _lines(ddp, "INFO") == _lines(plain, "INFO")
    assert _lines(ddp, "WARNING") == ["WARNING no checkpoint is kept"] * 2
