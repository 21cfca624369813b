"""The gate in front of LibCST (ddpfix/analysis/gate.py, reach.py): a file it passes over must be one
the full analysis would turn down too, with the same result."""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from ddpfix import fix_source, parsing
from ddpfix.analysis import ScriptFacts
from ddpfix.analysis.gate import cannot_train

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_FILES = sorted([*GOLDEN.glob("*/input.py"), *GOLDEN.glob("*/expected.py")])


def _torch_sample() -> list[Path]:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return []
    return sorted(Path(spec.origin).parent.rglob("*.py"))[::150]


TORCH_FILES = _torch_sample()


def reaches_rules(path: Path) -> bool:
    """What the full analysis says: a training script, or one another library distributes (DDP008)."""
    data = path.read_bytes()
    module = cst.parse_module(data)
    text = data.decode(module.encoding)
    facts = ScriptFacts(module, text, ast.parse(data), str(path))
    return facts.names.other_launcher is not None or facts.is_training_script()


def closed(path: Path) -> bool:
    """Does the gate alone (not the text screens in front of it) pass the file over?"""
    return cannot_train(ast.parse(path.read_bytes()), str(path))


def screened(path: Path) -> bool:
    """Is the file passed over unparsed by LibCST (the text screens, then the gate)?"""
    data = path.read_bytes()
    return parsing.not_training(data.decode("utf-8", "replace"), ast.parse(data), str(path))


def results(path: Path, monkeypatch, gate: bool):
    monkeypatch.setattr(parsing, "GATE", gate)
    data = path.read_bytes()
    out = []
    for fix in (False, True):  # `check`, then `diff` / `apply`
        r = fix_source(data, path=str(path), fix=fix, cross_file=True)
        out.append((r.code, r.data, r.diff, r.diagnostics, r.incomplete, r.others))
    return out


def assert_sound(path: Path, monkeypatch) -> bool:
    """The gate closes only on files the analysis turns down, and a file passed over unparsed gets
    the result it gets parsed."""
    if closed(path):
        assert not reaches_rules(path), f"{path}: passed over, but the analysis treats it as a training script"
    if not screened(path):
        return False
    assert results(path, monkeypatch, True) == results(path, monkeypatch, False), path
    return True


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden_files_the_gate_passes_over_are_no_training_scripts(path, monkeypatch):
    assert_sound(path, monkeypatch)


def test_the_gate_passes_over_no_golden_input():
    """Every golden input is a script the rules have something to say about, or a module of one
    that trains (a negative golden without a finding may be passed over: see the test above)."""
    kept = [p for p in GOLDEN.glob("*/input.py") if not screened(p)]
    assert len(kept) > 0.9 * len(list(GOLDEN.glob("*/input.py")))


@pytest.mark.skipif(not TORCH_FILES, reason="torch is not installed")
@pytest.mark.parametrize("path", TORCH_FILES, ids=lambda p: "/".join(p.parts[-3:]))
def test_torch_files_the_gate_passes_over_are_no_training_scripts(path, monkeypatch):
    assert_sound(path, monkeypatch)


# --------------------------------------------------------------------------- each criterion
def project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    return tmp_path / "train.py"


SCRIPT = """\
import torch
from solver import Solver

if __name__ == "__main__":
    model = torch.nn.Linear(2, 2)
    Solver(model).fit()
"""
SOLVER = """\
class Solver:
    def __init__(self, model):
        self.model = model

    def fit(self):
        loss = self.model(x).sum()
        loss.backward()
"""


def gate_and_truth(script: Path) -> tuple[bool, bool]:
    return not closed(script), reaches_rules(script)


def test_a_script_that_trains_only_through_a_local_module_is_analysed(tmp_path, monkeypatch):
    script = project(tmp_path, {"train.py": SCRIPT, "solver.py": SOLVER})
    assert gate_and_truth(script) == (True, True)
    assert fix_source(script.read_text(), path=str(script), fix=False).diagnostics  # findings, as before


def test_a_local_module_that_does_not_train_lets_the_gate_close(tmp_path, monkeypatch):
    script = project(tmp_path, {"train.py": SCRIPT, "solver.py": SOLVER.replace("loss.backward()", "print(loss)")})
    assert gate_and_truth(script) == (False, False)
    assert_sound(script, monkeypatch)


def test_training_two_modules_away_through_a_package_is_not_passed_over_by_the_gate(tmp_path):
    """(The text screen in front of the gate reads one level of modules only: it passes this
    script over, before and after the gate.)"""
    script = project(
        tmp_path,
        {
            "train.py": SCRIPT.replace("from solver import Solver", "import pkg").replace("Solver(", "pkg.run.Solver("),
            "pkg/__init__.py": "",
            "pkg/run.py": "from .core import step_all\n\nclass Solver:\n    def fit(self):\n        step_all()\n",
            "pkg/core.py": "def step_all():\n    optimizer.step()\n",
        },
    )
    assert gate_and_truth(script) == (True, True)


def test_a_star_import_of_a_training_module_is_analysed(tmp_path):
    script = project(
        tmp_path, {"train.py": SCRIPT.replace("from solver import Solver", "from solver import *"), "solver.py": SOLVER}
    )
    assert gate_and_truth(script) == (True, True)


def test_a_training_function_of_a_module_the_script_does_not_call_lets_the_gate_close(tmp_path, monkeypatch):
    solver = SOLVER.replace("loss.backward()", "print(loss)") + "\n\ndef unused(loss):\n    loss.backward()\n"
    script = project(
        tmp_path,
        {
            "train.py": SCRIPT.replace("from solver import Solver", "from solver import Solver\nimport helpers"),
            "solver.py": solver,
            "helpers.py": "def fit_other(opt):\n    opt.step()\n",
        },
    )
    assert gate_and_truth(script) == (False, False)
    assert_sound(script, monkeypatch)


@pytest.mark.parametrize(
    "files",
    [
        {  # a package hands on a function of one of its modules
            "train.py": "import torch\nfrom pkg import fit\n\nfit(torch.nn.Linear(2, 2))\n",
            "pkg/__init__.py": "from .impl import fit\n",
            "pkg/impl.py": "def fit(model):\n    model(x).sum().backward()\n",
        },
        {  # a method calling another method of its class
            "train.py": "import torch\nfrom solver import Solver\n\nsolver = Solver()\nsolver.fit()\n",
            "solver.py": "class Solver:\n    def fit(self):\n        self.once()\n\n    def once(self):\n"
            "        self.optimizer.step()\n",
        },
        {  # a function calling another of its module, which trains
            "train.py": "import torch\nimport loops\n\nloops.run(torch.nn.Linear(2, 2))\n",
            "loops.py": "def run(model):\n    return inner(model)\n\ndef inner(model):\n    model(x).sum().backward()\n",
        },
    ],
    ids=["package-re-export", "method-of-method", "helper-of-helper"],
)
def test_a_call_that_trains_through_functions_of_modules_is_analysed(tmp_path, files):
    assert gate_and_truth(project(tmp_path, files)) == (True, True)


def test_a_method_inherited_from_another_module_keeps_the_file_for_the_analysis(tmp_path):
    """`self.train_step()` where `train_step` is a method of a base class imported from another
    module: the gate keeps the file (whatever the analysis then makes of it)."""
    files = {
        "train.py": "import torch\nfrom solver import Solver\n\nsolver = Solver()\nsolver.fit()\n",
        "solver.py": "from base import Base\n\nclass Solver(Base):\n    def fit(self):\n        self.train_step()\n",
        "base.py": "class Base:\n    def train_step(self):\n        self.optimizer.step()\n",
    }
    assert not closed(project(tmp_path, files))


def test_joining_the_process_group_only_through_a_local_helper(tmp_path, monkeypatch):
    """Not a training script today (its own code joins no group and trains nothing): the gate agrees."""
    script = project(
        tmp_path,
        {
            "train.py": "import torch\nfrom dist_utils import setup\n\nsetup()\nprint(torch.zeros(3))\n",
            "dist_utils.py": "import torch.distributed as dist\n\ndef setup():\n    dist.init_process_group('gloo')\n",
        },
    )
    assert gate_and_truth(script) == (False, False)
    assert_sound(script, monkeypatch)


def test_a_library_module_handed_on_by_a_local_module_is_followed(tmp_path):
    """`from utils import d` where utils has `import torch.distributed as d`: `d.init_process_group()`."""
    script = project(
        tmp_path,
        {
            "train.py": "import torch\nfrom utils import d\n\nd.init_process_group('gloo')\n",
            "utils.py": "import torch.distributed as d\n",
        },
    )
    assert gate_and_truth(script) == (True, True)


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as Wrap\nm = Wrap(torch.nn.Linear(2, 2))\n",
        "import torch\nimport torch.nn.parallel as par\nm = par.DistributedDataParallel(torch.nn.Linear(2, 2))\n",
        "import torch\nfrom torch.distributed import init_process_group as start\nstart('gloo')\n",
        "import torch\nnet = torch.nn.Linear(2, 2)\nnet(torch.ones(2)).sum().backward()\n",
        "import torch\nnet = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(net.parameters(), lr=0.1)\n",
        "import torch\nnet = torch.nn.Linear(2, 2)\nps = [p for p in net.parameters()]\nsolver = torch.optim.Adam(ps)\n",
        "import torch\nfrom torch import optim as o\nnet = torch.nn.Linear(2, 2)\nstates = [o.SGD(m.parameters()) for m in [net]]\n",
        "import torch\nimport lightning as L\ntrainer = L.Trainer()\n",
        "import torch\nfrom transformers import Trainer as T\nT(model=None).train()\n",
    ],
    ids=[
        "ddp-alias",
        "ddp-module-alias",
        "init-alias",
        "backward",
        "optimizer",
        "bound-params",
        "opt-list",
        "lightning",
        "hf",
    ],
)
def test_each_criterion_keeps_a_file_for_the_analysis(tmp_path, source):
    script = project(tmp_path, {"train.py": source})
    assert gate_and_truth(script) == (True, True)


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nnet = torch.nn.Linear(2, 2)\nn = sum(p.numel() for p in net.parameters())\n",
        "import torch\nnet = torch.nn.Linear(2, 2)\nparams = list(net.parameters())\n",
        "import torch\nsched.step()  # ddpfix: ignore[DDP401]\n",
        "import numpy\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x):\n        return x\n",
    ],
    ids=["counting", "listing", "suppression", "module"],
)
def test_the_gate_closes_on_files_that_do_not_train(tmp_path, monkeypatch, source):
    script = project(tmp_path, {"train.py": source})
    assert gate_and_truth(script) == (False, False)
    assert assert_sound(script, monkeypatch)


def test_a_file_passed_over_is_not_parsed_by_libcst_and_keeps_its_unused_suppression(tmp_path, monkeypatch):
    script = project(tmp_path, {"train.py": "import torch\nx = torch.zeros(3)  # ddpfix: ignore[DDP999]\n"})
    monkeypatch.setattr(parsing, "GATE", False)
    expected = fix_source(script.read_bytes(), path=str(script), fix=False).diagnostics
    assert [d.code for d in expected] == ["DDP000"]
    monkeypatch.setattr(cst, "parse_module", lambda *a, **k: pytest.fail("parsed"))
    monkeypatch.setattr(parsing, "GATE", True)
    assert fix_source(script.read_bytes(), path=str(script), fix=False).diagnostics == expected


def test_cannot_train_reads_only_the_tree():
    tree = ast.parse("import torch\nx = torch.ones(2)\n")
    assert cannot_train(tree, None)
    assert not cannot_train(ast.parse("import torch\nloss.backward()\n"), None)
