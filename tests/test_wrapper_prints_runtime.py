"""DDP308's fix for a model shown after the wrap the conversion adds, run for real: under torchrun,
rank 0 prints the model (`print(model)`, an f-string, `str(model)`) as `python train.py` prints it,
not as `DistributedDataParallel(...)` around it."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_metric_reduce_runtime import converted_runs

GOLDEN = Path(__file__).parent / "golden" / "print_model_after_wrap"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_rank_zero_prints_the_model_as_the_plain_run_does(tmp_path):
    code, plain, ddp = converted_runs(tmp_path, (GOLDEN / "input.py").read_text(), "epoch 1 done")
    assert "print(raw_model)" in code and "{raw_model!r}" in code
    assert plain.startswith("Sequential(\n") and "parameters" in plain
    assert "DistributedDataParallel" not in ddp
    assert ddp == plain
