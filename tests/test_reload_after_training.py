"""A function that rebinds the global model through `global` (`model_load(fn)`: `model, optimizer =
torch.load(f)`), called once training is over, no longer stops the conversion (golden
reload_best_through_global): the wrap keeps no name for the plain module, which after the call would
still hold the trained one, and every use that needs the plain module reads it from the name as it is
then (`getattr(model, "module", model)`). Called where training goes on after it, the wrap is still
withheld, and the whole conversion with it."""

from __future__ import annotations

from pathlib import Path

from local_files import by_code

from ddpfix import fix_source

SOURCE = (Path(__file__).parent / "golden" / "reload_best_through_global" / "input.py").read_text()
LOAD = '# the best model back, for the final number\nmodel_load("best.pt")\n'


def _withheld(source: str) -> None:
    result = fix_source(source, path="train.py")
    [wrap] = by_code(result)["DDP301"]
    assert wrap.fix == "none" and "model_load() rebinds the global model after the wrap" in wrap.message
    assert result.code == source
    assert {"DDP001", "DDP301"} <= {b.code for b in result.incomplete}


def test_a_reload_after_training_keeps_no_name_for_the_plain_module():
    result = fix_source(SOURCE, path="train.py")
    assert by_code(result)["DDP301"][0].applied and not result.incomplete
    assert "raw_model" not in result.code
    assert "model = Net(8, 16, 3)\nif DISTRIBUTED:\n    model = DDP(model, device_ids=" in result.code
    # the pickled list holds the plain module, not the wrapper (loading a wrapper needs a process group)
    assert 'torch.save([getattr(model, "module", model), optimizer], f)' in result.code
    # every rank waits for rank 0's file before reading it
    assert "if DISTRIBUTED:\n    dist.barrier()\n" + 'model_load("best.pt")' in result.code


def test_a_reload_inside_the_training_loop_withholds_the_wrap():
    source = SOURCE.replace(LOAD, "").replace(
        "        best = val_loss\n", '        best = val_loss\n    model_load("best.pt")\n'
    )
    _withheld(source)


def test_training_again_after_the_reload_withholds_the_wrap():
    tune = (
        "for x, y in train_loader:\n"
        "    loss = nn.functional.cross_entropy(model(x), y)\n"
        "    optimizer.zero_grad()\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
    )
    _withheld(SOURCE.replace(LOAD, LOAD + tune))


def test_a_reload_in_a_function_withholds_the_wrap():
    """Only a call at the script's top level is known to run once, after the training."""
    source = SOURCE.replace(LOAD, "\n\ndef finish():\n    model_load('best.pt')\n\n\nfinish()\n")
    _withheld(source)
