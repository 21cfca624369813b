"""DDP308's fix for a model shown after the wrap the conversion adds, run for real: under torchrun,
rank 0 prints the model (`print(model)`, an f-string, `str(model)`) as `python train.py` prints it,
not as `DistributedDataParallel(...)` around it."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_metric_reduce_runtime import _run

from ddpfix import fix_source

GOLDEN = Path(__file__).parent / "golden" / "print_model_after_wrap"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_rank_zero_prints_the_model_as_the_plain_run_does(tmp_path):
    script = (GOLDEN / "input.py").read_text()
    result = fix_source(script)
    assert result.incomplete == [], [b.format() for b in result.incomplete]
    assert "print(raw_model)" in result.code and "{raw_model!r}" in result.code
    before, after = tmp_path / "train.py", tmp_path / "train_ddp.py"
    before.write_text(script)
    after.write_text(result.code)
    plain = _run(tmp_path, before, "plain", None, last="epoch 1 done")
    assert plain.startswith("Sequential(\n") and "parameters" in plain
    assert _run(tmp_path, after, "plain_out", None, last="epoch 1 done") == plain
    ddp = _run(tmp_path, after, "ddp", 2, last="epoch 1 done")
    assert "DistributedDataParallel" not in ddp
    assert ddp == plain
