"""Models trained through the functions a script builds them with.

An optimizer a function builds over the parameters of the model it is handed (`optimizer =
set_optimizer(opt, model)`, of this file or of the script's own modules), or over a module-level
model's (`make_optimizer(lr)`), trains that model, which is then wrapped (DDP301). The model was not
seen as trained: apply joined a process group and sharded the data around an unwrapped model, each
rank training its own copy, and said fixed. Where no model can be traced (a library builds the
optimizer), the step is reported and nothing of the conversion is made.

A DataParallel line in the function that builds the model and returns it (`model, criterion =
set_model()`, its one call) is kept for the plain run and the DDP wrap follows the `if` around it, in
the function (DDP302, safe); golden dataparallel_in_model_builder runs that shape on 2 ranks."""

from __future__ import annotations

import textwrap

from local_files import write

from ddpfix import check_source, fix_project, fix_source

TRAIN = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
{imports}

{helpers}

torch.manual_seed(0)
{build}
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, shuffle=True)
optimizer = {optimizer}
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

SET_OPTIMIZER = """
def set_optimizer(args, model):
    return torch.optim.SGD(model.parameters(), lr=args.get("lr", 0.1))
"""


def script(helpers: str = "", build: str = "model = nn.Linear(4, 1)", optimizer: str = "", imports: str = "") -> str:
    return textwrap.dedent(TRAIN).format(
        imports=imports, helpers=helpers, build=build, optimizer=optimizer or "set_optimizer({}, model)"
    )


def _fixes(diagnostics, codes=("DDP001", "DDP201", "DDP301", "DDP302")) -> dict[str, str]:
    return {d.code: d.fix for d in diagnostics if d.code in codes}


def test_an_optimizer_a_function_of_the_script_builds_trains_the_model_it_is_handed():
    src = script(helpers=SET_OPTIMIZER)
    assert _fixes(check_source(src)) == {"DDP001": "safe", "DDP201": "safe", "DDP301": "safe"}
    result = fix_source(src)
    assert result.code.count("model = DDP(model, ") == 1, result.code
    assert "args = DDP(" not in result.code  # the argument bound to the parameter read, not every argument
    assert result.code.index("model = DDP(model, ") < result.code.index("optimizer = set_optimizer({}, model)")
    assert result.incomplete == [], [b.format() for b in result.incomplete]


def test_an_optimizer_a_function_of_the_scripts_module_builds_trains_the_model_it_is_handed(tmp_path):
    write(tmp_path, "util.py", "import torch\n" + SET_OPTIMIZER)
    path = write(tmp_path, "train.py", script(imports="from util import set_optimizer"))
    result = fix_project(str(path))
    assert _fixes(result.diagnostics) == {"DDP001": "safe", "DDP201": "safe", "DDP301": "safe"}
    assert result.code.count("model = DDP(model, ") == 1, result.code
    assert result.incomplete == [], [b.format() for b in result.incomplete]


def test_a_function_handed_the_model_that_reads_no_parameters_builds_no_optimizer_over_it():
    """`make_optimizer(model)` reading `model.lr` only: nothing says the model is trained through it, so
    it is not wrapped; the step of that optimizer is reported, and nothing is converted."""
    helpers = (
        "def make_optimizer(model):\n    return torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=model.lr)"
    )
    src = script(helpers=helpers, optimizer="make_optimizer(model)", build="model = nn.Linear(4, 1)\nmodel.lr = 0.1")
    assert _fixes(check_source(src))["DDP301"] == "none"
    assert fix_source(src).code == src


BUILDER = """
def set_model():
    model = nn.Linear(4, 1)
    criterion = nn.MSELoss()
    if torch.cuda.is_available():
        if torch.cuda.device_count() > 1:
            model = nn.DataParallel(model)
        model = model.cuda()
        criterion = criterion.cuda()
    return model, criterion
"""


def test_dataparallel_in_the_function_that_builds_the_model_is_kept_for_the_plain_run():
    src = script(
        helpers=BUILDER, build="model, criterion = set_model()", optimizer="torch.optim.SGD(model.parameters())"
    )
    assert _fixes(check_source(src)) == {"DDP001": "safe", "DDP201": "safe", "DDP302": "safe"}
    result = fix_source(src)
    out = result.code
    assert (
        "        if torch.cuda.device_count() > 1 and not DISTRIBUTED:\n            model = nn.DataParallel(model)\n"
        in out
    )
    wrap = "    if DISTRIBUTED:\n        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)\n"
    assert wrap + "    return model, criterion\n" in out, out
    assert out.count(" = DDP(") == 1 and "DistributedSampler(" in out and "init_process_group(" in out
    assert result.incomplete == [], [b.format() for b in result.incomplete]
    assert fix_source(out).code == out


def test_dataparallel_in_a_builder_called_twice_is_not_kept():
    """A second call would hand a DDP wrapper to code that may run on one rank only (an evaluation
    model): the conversion stays what it was, unsafe."""
    build = "model, criterion = set_model()\nshadow, _ = set_model()"
    src = script(helpers=BUILDER, build=build, optimizer="torch.optim.SGD(model.parameters())")
    assert _fixes(check_source(src)) == {"DDP001": "unsafe", "DDP201": "unsafe", "DDP302": "unsafe"}
    assert fix_source(src).code == src


def test_an_optimizer_a_function_builds_over_the_module_level_model_trains_it():
    helpers = "def make_optimizer(lr):\n    return torch.optim.SGD(model.parameters(), lr=lr)"
    src = script(helpers=helpers, optimizer="make_optimizer(0.1)")
    assert _fixes(check_source(src)) == {"DDP001": "safe", "DDP201": "safe", "DDP301": "safe"}
    out = fix_source(src).code
    assert out.count("model = DDP(model, ") == 1 and out.index("model = DDP(") < out.index("make_optimizer(0.1)\n")


def assert_step_reported_and_nothing_converted(src: str) -> None:
    """DDP301 without a fix at the step, DDP001 and DDP201 without one either, and nothing changed."""
    found = {d.code: (d.fix, d.line) for d in check_source(src) if d.code in ("DDP001", "DDP201", "DDP301")}
    assert found["DDP301"] == ("none", src.splitlines().index("        optimizer.step()") + 1), found
    assert found["DDP001"][0] == found["DDP201"][0] == "none", found
    result = fix_source(src)
    assert result.code == src, result.diff
    assert {b.code for b in result.incomplete} == {"DDP001", "DDP201", "DDP301"}


def test_a_step_of_an_optimizer_traced_to_no_model_is_reported_and_nothing_converted():
    """`build_optimizer(config)` of a library: the model it updates is the script's, but nothing says
    which. Before, apply joined a process group and sharded the data around the unwrapped model."""
    src = script(imports="from somelib import build_optimizer", optimizer='build_optimizer({"lr": 0.1})')
    assert_step_reported_and_nothing_converted(src)


HANDED = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from somelib import build_optimizer


def train_epoch(model, loader, optimizer):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def fit(model, loader, opt, epochs):
    for epoch in range(epochs):
        train_epoch(model, loader, optimizer=opt)


def main():
    model = nn.Linear(4, 1)
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, shuffle=True)
    optimizer = {optimizer}
    fit(model, loader, optimizer, 2)


if __name__ == "__main__":
    main()
"""


def test_an_optimizer_traced_to_no_model_and_handed_to_the_training_function_is_reported():
    """`optimizer = build_optimizer(...)` in main(), stepped two calls down in train_epoch(optimizer):
    before, apply joined a process group and sharded the data around the unwrapped model, said fixed,
    and check on its output was silent."""
    src = textwrap.dedent(HANDED).format(optimizer='build_optimizer({"lr": 0.1})')
    assert_step_reported_and_nothing_converted(src)


def test_an_optimizer_over_the_model_handed_to_the_training_function_still_converts():
    src = textwrap.dedent(HANDED).format(optimizer="torch.optim.SGD(model.parameters(), lr=0.1)")
    result = fix_source(src)
    assert not result.incomplete, result.incomplete
    assert "model = DDP(model, " in result.code and "DistributedSampler(" in result.code


def test_an_optimizer_parameter_of_a_function_no_call_of_this_file_reaches_is_not_reported():
    """A training function others call (a trainer module's): its optimizer is the caller's to trace."""
    src = textwrap.dedent(HANDED).format(optimizer='build_optimizer({"lr": 0.1})')
    src = src.replace("    fit(model, loader, optimizer, 2)\n", "    return model, loader, optimizer\n")
    assert "DDP301" not in {d.code for d in check_source(src)}


TRAINABLE = "def trainable(module):\n    return [p for p in module.parameters() if p.requires_grad]"


def test_an_optimizer_over_what_a_function_returns_of_the_models_parameters_trains_it():
    """`AdamW(param_groups(model, wd))`, also through a name (`params = trainable(model)`): the model
    was traced to no optimizer, and nothing of the conversion was made."""
    for optimizer, build in (
        ("torch.optim.SGD(trainable(model), lr=0.1)", "model = nn.Linear(4, 1)"),
        ("torch.optim.SGD(params, lr=0.1)", "model = nn.Linear(4, 1)\nparams = trainable(model)"),
    ):
        src = script(helpers=TRAINABLE, build=build, optimizer=optimizer)
        assert _fixes(check_source(src)) == {"DDP001": "safe", "DDP201": "safe", "DDP301": "safe"}, optimizer
        result = fix_source(src)
        assert not result.incomplete and result.code.count("model = DDP(model, ") == 1, result.diff
        assert result.code.index("model = DDP(") < result.code.index(f"optimizer = {optimizer}")
