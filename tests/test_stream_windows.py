"""DDP209 on a token stream walked in windows a helper cuts (`while i < len(train_data) - 1: data,
targets = get_batch(train_data, i, seq_len); ...; i += seq_len`): each rank takes its own stretch of
the stream, all as long, where the stream is bound (golden bptt_stream_while), or, where the ranks
could not take as many steps, the finding says why and the conversion is incomplete."""

from __future__ import annotations

from pathlib import Path

from local_files import by_code

from ddpfix import check_source, fix_project, fix_source

GOLDEN = Path(__file__).parent / "golden" / "bptt_stream_while"
SOURCE = (GOLDEN / "input.py").read_text()
STRETCH = (
    "train_data = batchify(stream, batch_size)\n"
    "if DISTRIBUTED:  # each rank its own stretch of the stream, all as long: the ranks take the same steps\n"
    "    stretch = len(train_data) // WORLD_SIZE\n"
    "    train_data = train_data[RANK * stretch : (RANK + 1) * stretch]\n"
)


def _cut(result) -> object:
    [found] = by_code(result)["DDP209"]
    return found


def test_each_rank_takes_its_own_stretch_where_the_stream_is_bound():
    result = fix_source(SOURCE, path="train.py")
    assert _cut(result).applied and STRETCH in result.code
    assert not result.incomplete
    assert "DDP209" not in {d.code for d in check_source(result.code, path="train.py")}


def test_window_lengths_drawn_with_no_seed_are_reported_not_cut():
    """Unseeded, every rank draws its own lengths, walks its stretch in a different number of steps, and
    waits in an all-reduce the others never reach: no stretch is cut, and the conversion is incomplete."""
    source = SOURCE.replace("np.random.seed(1)\ntorch.manual_seed(1)\n", "")
    result = fix_source(source, path="train.py")
    found = _cut(result)
    assert found.fix == "none" and "np.random.normal() with no seed" in found.message
    assert "stretch" not in result.code
    assert [b.invariant.number for b in result.incomplete if b.code == "DDP209"] == [3]


def test_a_stream_bound_twice_is_reported_not_cut():
    source = SOURCE.replace(
        "train_data = batchify(stream, batch_size)\n",
        "train_data = batchify(stream, batch_size)\ntrain_data = train_data[:-1]\n",
    )
    result = fix_source(source, path="train.py")
    found = _cut(result)
    assert found.fix == "none" and "bound more than once" in found.message
    assert "stretch" not in result.code


def test_a_stream_each_rank_cut_already_is_left_alone():
    source = SOURCE.replace(
        "train_data = batchify(stream, batch_size)\n",
        "train_data = batchify(stream, batch_size)\n"
        "train_data = train_data[int(os.environ['RANK']) :: int(os.environ['WORLD_SIZE'])]\n",
    ).replace("import numpy as np\n", "import os\n\nimport numpy as np\n")
    assert "DDP209" not in by_code(fix_source(source, path="train.py"))


def test_a_helper_that_does_not_cut_its_first_parameter_is_not_taken_for_one():
    source = SOURCE.replace("    data = source[i : i + seq_len]\n", "    data = source.roll(i)[:seq_len]\n")
    source = source.replace(
        "    target = source[i + 1 : i + 1 + seq_len].reshape(-1)\n", "    target = data.reshape(-1)\n"
    )
    assert "DDP209" not in by_code(fix_source(source, path="train.py"))


def test_the_helper_of_another_module_is_followed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    head, _, rest = SOURCE.partition("def batchify(")
    helpers, _, tail = ("def batchify(" + rest).partition("class RNNModel(")
    (tmp_path / "utils.py").write_text("bptt = 6\n\n\n" + helpers)
    (tmp_path / "train.py").write_text(head + "from utils import batchify, get_batch\n\n\nclass RNNModel(" + tail)
    result = fix_project("train.py")
    assert _cut(result).applied and STRETCH in result.code
