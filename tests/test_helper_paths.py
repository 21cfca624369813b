"""The file a helper of the script's modules saves or loads, written in its parameters and then at
each call site (analysis/path_templates.py, helper_paths.py): what lets DDP410 see that
`utils.save_checkpoint(model, epoch, args)` and `utils.load_checkpoint(model, args.save_dir,
args.name)` name the same file (golden checkpoint_helpers_of_a_module)."""

from __future__ import annotations

import ast
import textwrap

from ddpfix import fix_source
from ddpfix.analysis.path_templates import at_call, path_templates

HELPERS = """
import os

import torch


def save_checkpoint(model, epoch, args):
    model_path = os.path.join(args.save_dir, args.name)
    torch.save({"state_dict": model.state_dict(), "epoch": epoch}, model_path)


def load_checkpoint(model, folder_dir, filename):
    model_path = os.path.join(folder_dir, filename)
    checkpoint = torch.load(model_path)
    model.load_state_dict(checkpoint["state_dict"])
    return model


def load_elsewhere(model, folder_dir):
    model.load_state_dict(torch.load(os.path.join(folder_dir, "other.pt")))
"""


def _templates(name: str) -> dict[str, list[str]]:
    tree = ast.parse(textwrap.dedent(HELPERS))
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return path_templates(func, lambda q: q)


def test_a_helpers_path_is_written_in_its_parameters():
    assert _templates("save_checkpoint") == {"save": ["os.path.join(args.save_dir, args.name)"]}
    assert _templates("load_checkpoint") == {"load": ["os.path.join(folder_dir, filename)"]}


def test_the_call_sites_name_the_same_file():
    save = at_call("os.path.join(args.save_dir, args.name)", ["model", "epoch", "args"], {"args": "args"})
    load = at_call(
        "os.path.join(folder_dir, filename)",
        ["model", "folder_dir", "filename"],
        {"folder_dir": "args.save_dir", "filename": "args.name"},
    )
    assert save == load == "os.path.join(args.save_dir, args.name)"


def test_a_parameter_with_no_argument_names_no_file():
    assert at_call("os.path.join(folder_dir, filename)", ["folder_dir", "filename"], {"folder_dir": "d"}) is None


SCRIPT = """
import argparse
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import utils

parser = argparse.ArgumentParser()
parser.add_argument("--save-dir", default=".")
parser.add_argument("--name", default="m.pt")
args = parser.parse_args()

if __name__ == "__main__":
    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    model = nn.Linear(8, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        utils.save_checkpoint(model, epoch, args)
    {load}
"""


def _fixed(tmp_path, load: str):
    (tmp_path / "utils.py").write_text(textwrap.dedent(HELPERS))
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT).replace("{load}", load))
    return fix_source(script.read_bytes(), path=str(script), cross_file=True)


def test_a_load_through_another_helper_of_the_same_file_waits_for_the_save(tmp_path):
    result = _fixed(tmp_path, "model = utils.load_checkpoint(model, args.save_dir, args.name)")
    lines = [line.strip() for line in result.code.splitlines()]
    load = lines.index("model = utils.load_checkpoint(model, args.save_dir, args.name)")
    assert lines[load - 2 : load] == ["if DISTRIBUTED:", "dist.barrier()"]
    assert "DDP410" in {d.code for d in result.diagnostics if d.applied}


def test_a_load_of_another_file_gets_no_barrier(tmp_path):
    result = _fixed(tmp_path, "utils.load_elsewhere(model, args.save_dir)")
    assert "barrier" not in result.code


def test_a_load_written_in_the_script_matches_the_helpers_save(tmp_path):
    """`torch.load(os.path.join(args.save_dir, args.name))` in the script reads what the helper saved."""
    load = "model.load_state_dict(torch.load(os.path.join(args.save_dir, args.name)))"
    result = _fixed(tmp_path, load)
    lines = [line.strip() for line in result.code.splitlines()]
    at = next(i for i, line in enumerate(lines) if "load_state_dict(torch.load(os.path.join(" in line)
    assert lines[at - 2 : at] == ["if DISTRIBUTED:", "dist.barrier()"]
