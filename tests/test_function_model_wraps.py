"""A model a module-level function of the script's modules builds and trains as its own local (golden
fit_function_builds_model: `fit(args.epochs, args.out)`, with `model = Regressor(width=12).to(device)`
and the optimizer over `model.parameters()` in `fit` of fitting.py): the wrap, the loader's sampler and
its epoch, the rank-0 guards and the plain module's save all go in that function, decided at run time;
where the wrap cannot be made there, nothing is converted and the findings say why."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from local_files import by_code, edit, golden_project

import ddpfix
from ddpfix.analysis.class_models import ast_function_locals
from ddpfix.analysis.summaries import summarise

CASE = Path(__file__).parent / "golden" / "fit_function_builds_model"
BUILD = "    model = Regressor(width=12).to(device)\n"
OPTIMIZER = "    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)\n"


def _nothing(module, level):  # fitting.py imports no module of its own
    return None


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return golden_project(CASE, tmp_path, "fitting.py")


def test_the_summary_names_the_function_and_its_local_model(project):
    tree = ast.parse((project / "fitting.py").read_text())
    [fit] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "fit"]
    assert ast_function_locals(fit) == [("model", 21)]
    owner = summarise(project / "fitting.py", _nothing).builders["fit"]
    assert owner.function and owner.local_models == [("fit", "model", 21)] and owner.member("fit") == "fit"


def test_the_local_model_is_wrapped_in_its_function_and_its_loader_sharded_there(project):
    result = ddpfix.fix_project("main.py")
    [wrap] = by_code(result)["DDP301"]
    assert wrap.applied and "model in fit() at fitting.py:21" in wrap.message, wrap.message
    [shard] = by_code(result)["DDP201"]
    assert shard.applied and "fit() trains on a DataLoader it builds itself (loader at fitting.py:20)" in shard.message
    assert result.incomplete == []
    text = result.others["fitting.py"].code
    assert BUILD + "    if dist.is_initialized():\n        model = DDP(model, " in text
    assert "sampler = DistributedSampler(data) if dist.is_initialized() else None\n" in text
    assert "            loader.sampler.set_epoch(epoch)\n" in text
    assert "getattr(model, 'module', model).width" in text  # what only the model has
    assert 'torch.save(getattr(model, "module", model).state_dict(), out)' in text


def test_check_on_the_output_is_clean_and_a_second_apply_changes_nothing(project):
    result = ddpfix.fix_project("main.py")
    (project / "main.py").write_text(result.code)
    (project / "fitting.py").write_text(result.others["fitting.py"].code)
    again = ddpfix.fix_project("main.py")
    assert again.code == result.code and not again.others
    assert [d for d in again.diagnostics if not d.info] == [] and again.incomplete == []


def test_a_module_function_that_wraps_with_an_alias_of_ddp_wraps():
    """`DDP(model)` after `from torch.nn.parallel import DistributedDataParallel as DDP` is the wrap (the
    summary read the spelling `DDP`, not what it imports, and the output above kept its finding)."""
    from ddpfix.analysis.module_summary import WRAP

    path = CASE / "expected" / "fitting.py"
    assert summarise(path, _nothing).does("fit", WRAP)


SHAPES = {
    "put in DataParallel": (
        BUILD,
        BUILD + "    model = nn.DataParallel(model)\n",
        "is put in nn.DataParallel in fit()",
    ),
    "built in a branch": (
        BUILD,
        "    if epochs:\n        model = Regressor(width=12).to(device)\n",
        "model is bound inside a block of fit()",
    ),
    "rebound after its optimizer": (
        "    for epoch in range(epochs):\n",
        "    model = model.float()\n    for epoch in range(epochs):\n",
        "model is bound again after its optimizer is built in fit()",
    ),
    "its loader built elsewhere": (
        "    loader = DataLoader(data, batch_size=10, shuffle=True)  # shuffled every epoch\n",
        "    loader = make_loader(data)\n",
        "no DataLoader the script builds was found",
    ),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_local_model_the_fix_cannot_wrap_there_leaves_the_whole_script_alone(project, shape):
    old, new, why = SHAPES[shape]
    edit(project / "fitting.py", old, new)
    if shape == "its loader built elsewhere":
        edit(project / "fitting.py", "def fit(", "def make_loader(data):\n    return list(data)\n\n\ndef fit(")
    result = ddpfix.fix_project("main.py")
    [wrap] = by_code(result)["DDP301"]
    assert wrap.fix == "none" and why in wrap.message, wrap.message
    assert result.code == (project / "main.py").read_text() and not result.others
    assert {"DDP001", "DDP301"} <= {b.code for b in result.incomplete}


def test_a_function_the_script_reaches_through_another_is_still_reported(project):
    """`main()` of the module calls `fit()`: the script never calls the function that holds the model,
    so nothing says where the wrap would run; reported, nothing converted (as before)."""
    edit(project / "fitting.py", "def fit(", "def main(epochs, out):\n    fit(epochs, out)\n\n\ndef fit(")
    edit(project / "main.py", "from fitting import fit", "from fitting import main as fit")
    result = ddpfix.fix_project("main.py")
    [wrap] = by_code(result)["DDP301"]
    assert wrap.fix == "none" and "never holds" in wrap.message, wrap.message
    assert result.code == (project / "main.py").read_text() and not result.others


HANDS = Path(__file__).parent / "golden" / "fit_function_hands_model_to_evaluate"


@pytest.fixture
def handing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return golden_project(HANDS, tmp_path, "fitting.py")


def test_a_function_of_the_module_handed_the_model_reads_the_plain_module_there(handing):
    """evaluate(model, test_loader, device) reads model.width: routed in evaluate, which a plain model
    passes through unchanged; the wrap is made (before: 'model is handed on', nothing converted)."""
    result = ddpfix.fix_project("main.py")
    assert result.incomplete == [] and by_code(result)["DDP301"][0].applied
    text = result.others["fitting.py"].code
    assert "print(f\"evaluated a regressor {getattr(model, 'module', model).width} units wide\")" in text
    assert "        model = DDP(model, " in text


def test_a_print_that_calls_a_function_of_the_module_stays_on_every_rank(handing):
    """The epoch's print runs evaluate(), a forward through the wrapper: guarded to rank 0, the other
    ranks would never join its buffer broadcast. Left on every rank, saying why."""
    result = ddpfix.fix_project("main.py")
    [prints] = by_code(result)["DDP406"]
    assert prints.fix == "none" and "calls evaluate(), which would then run on rank 0 only" in prints.message
    text = result.others["fitting.py"].code
    assert '        print(f"epoch {epoch} test loss {evaluate(model, test_loader, device):.4f}")\n' in text


def test_a_state_dict_saved_by_the_function_handed_the_model_is_the_plain_modules(handing):
    edit(
        handing / "fitting.py",
        "    model.train()\n",
        '    model.train()\n    torch.save(model.state_dict(), "last.pt")\n',
    )
    result = ddpfix.fix_project("main.py")
    text = result.others["fitting.py"].code
    assert 'torch.save(getattr(model, "module", model).state_dict(), "last.pt")' in text


def test_a_function_that_rebinds_the_model_it_is_handed_is_not_followed(handing):
    edit(handing / "fitting.py", "    model.eval()\n", "    model = model.eval()\n")
    result = ddpfix.fix_project("main.py")
    [wrap] = by_code(result)["DDP301"]
    assert wrap.fix == "none" and "model is bound again in evaluate()" in wrap.message, wrap.message
    assert not result.others


def test_a_print_that_calls_a_helper_handed_no_model_is_guarded(handing):
    edit(
        handing / "fitting.py",
        '        print(f"epoch {epoch} test loss {evaluate(model, test_loader, device):.4f}")\n',
        '        print(f"epoch {epoch} at {stamp(epoch)}")\n',
    )
    edit(handing / "fitting.py", "def fit(", 'def stamp(n):\n    return f"#{n}"\n\n\ndef fit(')
    result = ddpfix.fix_project("main.py")
    assert by_code(result)["DDP406"][0].applied
    assert '            print(f"epoch {epoch} at {stamp(epoch)}")\n' in result.others["fitting.py"].code
