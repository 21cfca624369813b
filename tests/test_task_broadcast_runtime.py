"""DDP210's fix, run for real: after the conversion, every rank of a 2-rank torchrun fits the task rank 0
drew (the broadcast tensors are equal on both ranks), where the unconverted script draws one per rank;
and a plain run of the output still works. Each rank prints its own checksum of the task tensors from
a line added after the script's end, outside any rank guard."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
from exit_without_teardown import outside_env, torchrun

from ddpfix import fix_source

SCRIPT = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    teacher = torch.randn(16, 4)


    def main():
        bias = 0.1 * torch.randn(4)
        student = nn.Linear(16, 4)
        optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
        for step in range(5):
            inputs = torch.randn(8, 16)
            loss = nn.functional.mse_loss(student(inputs), inputs @ teacher + bias)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return bias


    if __name__ == "__main__":
        bias = main()
    """
).lstrip()

# each rank, outside every guard, after the script's own code (and after its teardown: a tensor's sum needs none)
CHECKSUM = "\nimport os\nprint(f\"<rank {os.environ.get('RANK', 0)} task {float(teacher.sum()):.6f} {float(bias.sum()):.6f}>\")\n"


def _checksums(tmp_path, name: str, code: str, nproc: int | None) -> set[str]:
    script = tmp_path / f"{name}.py"
    script.write_text(code + CHECKSUM)
    cmd = torchrun(nproc, str(script)) if nproc else [sys.executable, str(script)]
    done = subprocess.run(cmd, cwd=tmp_path, env=outside_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = re.findall(r"<rank (\d) task (\S+ \S+)>", done.stdout)  # (the ranks' lines may interleave)
    assert len(found) == (nproc or 1), done.stdout
    return {task for _, task in found}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_rank_fits_rank_0s_draw_after_the_conversion(tmp_path):
    result = fix_source(SCRIPT)
    assert result.incomplete == [], [b.format() for b in result.incomplete]
    assert "dist.broadcast(teacher, src=0)" in result.code and "dist.broadcast(bias, src=0)" in result.code
    assert len(_checksums(tmp_path, "plain_out", result.code, None)) == 1  # a plain run of the output works
    assert len(_checksums(tmp_path, "before", SCRIPT, 2)) == 2  # unconverted: one task per rank
    assert len(_checksums(tmp_path, "after", result.code, 2)) == 1  # converted: rank 0's task on both
