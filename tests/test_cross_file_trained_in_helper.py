"""A function of the script that builds the model, trains it through a Trainer object of the script's
own modules and hands it back (golden trained_in_helper_with_trainer): the wrap goes in that function,
before its optimizer, not after the call that returns the trained model; the process group is set up
in the `__main__` block, which goes on using what the function returns; the loader, built by another
function and handed through the training function's parameter to the Trainer, gets its sampler; and
the epoch loop around `trainer.run_epoch()` sets the sampler's epoch through the loader."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from ddpfix import check_source, fix_source

CASE = Path(__file__).parent / "golden" / "trained_in_helper_with_trainer"


@pytest.fixture
def project(tmp_path):
    shutil.copy(CASE / "input.py", tmp_path / "main.py")
    shutil.copy(CASE / "trainer.py", tmp_path / "trainer.py")
    return tmp_path


def _fix(project: Path, source: str | None = None):
    path = project / "main.py"
    if source is not None:
        path.write_text(textwrap.dedent(source))
    return fix_source(path.read_bytes(), path=str(path), cross_file=True)


def _lines(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines()]


def test_the_wrap_goes_where_the_model_is_trained(project):
    result = _fix(project)
    lines = _lines(result.code)
    wrap = lines.index("model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)")
    assert (
        lines.index("def train(train_loader):")
        < wrap
        < lines.index("optimizer = optim.Adam(model.parameters(), lr=1e-2)")
    )
    assert lines.count("raw_model = model") == 1  # wrapped once: not again after `model = train(train_loader)`
    main = lines.index('if __name__ == "__main__":')
    assert all("DDP(" not in line for line in lines[main:])
    assert not result.incomplete


def test_the_process_group_outlives_the_training_function(project):
    lines = _lines(_fix(project).code)
    main = lines.index('if __name__ == "__main__":')
    init = lines.index('dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")')
    destroy = lines.index("dist.destroy_process_group()")
    assert main < init < lines.index("model = train(train_loader)  # trains and hands back the model")
    assert destroy > lines.index("test(model, train_loader)")


def test_the_loader_handed_through_a_parameter_is_sharded_and_reshuffled(project):
    result = _fix(project)
    lines = _lines(result.code)
    assert "train_sampler = DistributedSampler(ds) if DISTRIBUTED else None" in lines
    loop = lines.index("for epoch in range(3):")
    assert lines[loop + 1 : loop + 3] == [
        "if isinstance(train_loader.sampler, DistributedSampler):",
        "train_loader.sampler.set_epoch(epoch)",
    ]
    assert {d.code for d in result.diagnostics if d.applied} >= {"DDP001", "DDP201", "DDP301"}
    left = check_source(result.code, path=str(project / "main.py"), cross_file=True)
    assert left == []


def test_a_set_epoch_the_output_lacks_is_reported_and_fixed_through_the_loader(project):
    """The same script already sharded, with no `set_epoch`: DDP204 sets it where the epochs run."""
    fixed = _fix(project).code
    without = fixed.replace(
        "        if isinstance(train_loader.sampler, DistributedSampler):\n"
        "            train_loader.sampler.set_epoch(epoch)\n",
        "",
    )
    assert without != fixed
    found = [d for d in check_source(without, path=str(project / "main.py"), cross_file=True) if d.code == "DDP204"]
    assert [d.message for d in found] == [
        "train_loader.sampler never gets set_epoch(epoch): every epoch sees the same order"
    ]
    again = _fix(project, without)
    assert 'if isinstance(getattr(train_loader, "sampler", None), DistributedSampler):' in again.code


def test_a_builder_that_does_not_train_is_still_wrapped_where_it_is_called(project):
    result = _fix(
        project,
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset


        def build():
            model = nn.Linear(8, 3)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            return model, optimizer


        if __name__ == "__main__":
            ds = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
            loader = DataLoader(ds, batch_size=8, shuffle=True)
            model, optimizer = build()
            for epoch in range(2):
                for x, y in loader:
                    loss = nn.functional.cross_entropy(model(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
    )
    lines = _lines(result.code)
    wrap = next(i for i, line in enumerate(lines) if line.startswith("model = DDP(model"))
    assert wrap > lines.index("model, optimizer = build()")


def test_a_function_whose_result_is_unused_stays_the_entry(project):
    """`main()` alone in the `__main__` block: the group is set up in it, as before."""
    result = _fix(
        project,
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset


        def main():
            ds = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
            loader = DataLoader(ds, batch_size=8, shuffle=True)
            model = nn.Linear(8, 3)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                loss = nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()


        if __name__ == "__main__":
            main()
        """,
    )
    lines = _lines(result.code)
    init = next(i for i, line in enumerate(lines) if line.startswith("dist.init_process_group("))
    assert lines.index("def main():") < init < lines.index('if __name__ == "__main__":')
