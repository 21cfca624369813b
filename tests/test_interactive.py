"""`ddpfix apply -i`: hunk by hunk through the prompt, with dependencies kept and the result valid Python."""

from __future__ import annotations

import ast
import itertools
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner
from unidiff import PatchSet

import ddpfix
from ddpfix.cli import app
from ddpfix.interactive import FilePlan, apply_hunks, hunk_diff

EXAMPLE = (Path(__file__).resolve().parent.parent / "examples" / "train.py").read_text()
GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.fixture
def train(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "train.py"
    p.write_text(EXAMPLE)
    return p


def plan_for(text: str | bytes, **kw) -> FilePlan:
    result = ddpfix.fix_source(text, path="train.py", **kw)
    return FilePlan("train.py", text, result, **kw)


def apply_i(answers: str, *args):
    return CliRunner().invoke(app, ["apply", "-i", *args, "train.py"], input=answers)


def prompts(output: str) -> int:
    return output.count("Apply this hunk [y,n,a,d,q,?]? ")


# ------------------------------------------------------------------------------------ through the prompt
def test_yes_to_everything_equals_apply(train):
    n = len(plan_for(EXAMPLE).hunks)
    result = apply_i("y\n" * n)
    assert result.exit_code == 0, result.output
    assert prompts(result.stdout) == n
    assert train.read_text() == ddpfix.fix_source(EXAMPLE).code
    assert f"{n} of {n} hunk(s) applied" in result.stderr


def test_a_applies_the_rest_of_the_file(train):
    result = apply_i("n\na\n")
    assert prompts(result.stdout) == 2
    assert train.read_text() == ddpfix.fix_source(EXAMPLE).code  # hunk 1 is needed by the others


def test_no_to_everything_leaves_the_file_alone(train):
    n = len(plan_for(EXAMPLE).hunks)
    before = train.stat().st_mtime_ns
    result = apply_i("n\n" * n)
    assert result.exit_code == 0
    assert train.read_text() == EXAMPLE and train.stat().st_mtime_ns == before


def test_quit_and_end_of_input_keep_earlier_choices(train):
    result = apply_i("y\nq\n")
    assert prompts(result.stdout) == 2
    text = train.read_text()
    assert "import torch.distributed as dist" in text and "init_process_group" not in text
    compile(text, "train.py", "exec")
    train.write_text(EXAMPLE)
    result = apply_i("y\n")  # input ends after one answer: treated as q
    assert result.exit_code == 0 and train.read_text() == text


def test_d_skips_the_rest_of_the_file(train):
    result = apply_i("y\nd\n")
    assert prompts(result.stdout) == 2
    assert "init_process_group" not in train.read_text()


def test_labels_and_help(train):
    result = apply_i("?\nn\nd\n")
    out = result.stdout
    assert "[1/" in out and "DDP001 missing-process-group" in out
    assert "y - apply this hunk" in out and "q - quit" in out
    assert prompts(out) == 3  # '?' asks again


def test_chosen_hunk_pulls_in_what_it_needs_and_says_so(train):
    plan = plan_for(EXAMPLE)
    sampler = next(h for h in plan.hunks if "DistributedSampler(train_dataset)" in str(h.hunk))
    answers = "".join("y\n" if h is sampler else "n\n" for h in plan.hunks)
    result = apply_i(answers)
    assert result.exit_code == 0
    # the prompt named the dependency before asking ...
    assert "needs hunk 1 (defines " in result.stdout and "DistributedSampler" in result.stdout
    # ... and the import/constants hunk (1) and the process group (DDP201 needs DDP001) came along
    assert f"hunk {sampler.index + 1} needs hunk 1" in result.stdout and "including hunk 1" in result.stdout
    assert "DDP201 needs DDP001's fix" in result.stdout
    text = train.read_text()
    compile(text, "train.py", "exec")
    assert "from torch.utils.data.distributed import DistributedSampler" in text
    assert "dist.init_process_group" in text
    assert '        torch.save(model.state_dict(), "checkpoint.pt")' in text  # the declined guard stays out


def test_guard_hunk_brings_the_rank_constant(train):
    plan = plan_for(EXAMPLE)
    guard = next(h for h in plan.hunks if "torch.save(raw_model" in str(h.hunk))
    answers = "".join("y\n" if h is guard else "n\n" for h in plan.hunks)
    result = apply_i(answers)
    text = train.read_text()
    assert "RANK = int(os.environ" in text and "raw_model = model" in text
    assert "including hunk" in result.stdout
    tree = ast.parse(text)
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    assert {"RANK", "raw_model"} <= bound


def test_interactive_refuses_stdin_source(train):
    result = CliRunner().invoke(app, ["apply", "-i", "-"], input="x = 1\n")
    assert result.exit_code == 2 and "--interactive" in result.stderr


def test_colour_forced(train):
    result = apply_i("n\n" * 10, "--color")
    assert "\x1b[" in result.stdout


def test_crlf_file_partial_apply(train):
    data = EXAMPLE.replace("\n", "\r\n").encode()
    train.write_bytes(data)
    result = apply_i("y\nn\nn\nn\nn\nn\nn\n")
    assert result.exit_code == 0
    out = train.read_bytes()
    assert b"import os\r\n" in out and out.count(b"\n") == out.count(b"\r\n")
    compile(out.decode(), "train.py", "exec")


def test_latin1_file_partial_apply(train):
    text = "# -*- coding: latin-1 -*-\n" + EXAMPLE.replace('"""Train', '"""Entraîne')
    train.write_bytes(text.encode("latin-1"))
    apply_i("y\n" + "n\n" * 10)
    out = train.read_bytes()
    assert "Entraîne".encode("latin-1") in out and b"import os" in out


# ------------------------------------------------------------------------------------ the hunk model
def test_every_selection_of_the_example_is_valid_python():
    plan = plan_for(EXAMPLE)
    assert len(plan.hunks) >= 4
    for k in range(1, len(plan.hunks) + 1):
        for chosen in itertools.combinations(range(len(plan.hunks)), k):
            text, final, notes = plan.select(set(chosen))
            assert text is not None, notes
            assert set(chosen) <= final
            ast.parse(text)
    assert plan.select(set(range(len(plan.hunks))))[0] == plan.new


def _golden_inputs():
    return sorted(p for p in GOLDEN.glob("*/input.py"))


@pytest.mark.parametrize("path", _golden_inputs(), ids=lambda p: p.parent.name)
def test_random_selections_over_the_goldens_stay_valid(path):
    data = path.read_bytes()
    try:
        result = ddpfix.fix_source(data, path="input.py")
    except ddpfix.DdpfixError:
        pytest.skip("not valid input")
    if not result.changed:
        return
    plan = FilePlan("input.py", data, result)
    rng = random.Random(path.parent.name)
    n = len(plan.hunks)
    for _ in range(min(40, 2**n)):
        chosen = {i for i in range(n) if rng.random() < 0.5} or {rng.randrange(n)}
        text, final, notes = plan.select(chosen)
        if text is None:  # refused: allowed, but must say why
            assert notes and "nothing written" in notes[-1]
            continue
        ast.parse(text)
        assert chosen <= final
        plan.encode(text)  # encodable in the file's own encoding


@pytest.mark.parametrize(
    "old,new",
    [
        ("a\nb\nc\nd\ne\nf\ng\nh\ni\n", "a\nB\nc\nd\ne\nf\ng\nH\ni\n"),
        ("a\nb", "a\nb\nc"),
        ("a\r\nb\r\nc\r\n", "z\r\na\r\nb\r\nc\r\ny\r\n"),
        ("a\rb\rc\r", "a\rq\rb\rc\r"),
        ("", "x\n"),
        ("x\ny\n", ""),
        ("one\n" * 20, "zero\n" + "one\n" * 10 + "mid\n" + "one\n" * 10 + "end"),
    ],
)
def test_apply_hunks_every_subset(old, new):
    patch = PatchSet(hunk_diff(old, new, "f.py"))
    hunks = list(patch[0]) if len(patch) else []
    assert apply_hunks(old, new, hunks, range(len(hunks))) == new
    assert apply_hunks(old, new, hunks, []) == old
    for k in range(len(hunks) + 1):
        for keep in itertools.combinations(range(len(hunks)), k):
            apply_hunks(old, new, hunks, keep)  # never raises


def test_a_split_move_is_kept_together():
    src = (
        "import torch\n\n\ndef main():\n"
        "    model = torch.nn.Linear(2, 2)\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        + "".join(f"    step{i} = {i}\n" for i in range(10))
        + "    model = model.to('cuda')\n"
        "    for epoch in range(2):\n        opt.step()\n\n\nif __name__ == '__main__':\n    main()\n"
    )
    result = ddpfix.fix_source(src)
    plan = FilePlan("train.py", src, result)
    for i in range(len(plan.hunks)):
        text, final, notes = plan.select({i})
        if text is None:
            continue
        tree = ast.parse(text)
        stores = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        assert "opt" in stores  # the optimizer is never lost by taking half of a move
