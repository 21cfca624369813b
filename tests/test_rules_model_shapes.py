"""The model rules on shapes real scripts have: where the wrap goes when the model is picked or moved
under an `if`, models trained by the script's own modules or kept in a list, star imports and
re-exporting packages, traces and exports of the model, samples drawn after the step, forwards that
another rule's guard makes rank-0-only, and the wrappers, devices and checkpoints of scripts that
are correct as they are."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import libcst as cst

from ddpfix import check_source, fix_source
from ddpfix.analysis import ScriptFacts
from ddpfix.analysis.flow import Flow
from ddpfix.analysis.index import TreeIndex


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def found(text: str, code: str, path: str = "<string>") -> list:
    return [d for d in check_source(src(text), path=path) if d.code == code]


def fixed(text: str, *codes: str, path: str = "<string>", **kw) -> str:
    return fix_source(src(text), select=list(codes) or None, path=path, **kw).code


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src(text))
    return path


# --------------------------------------------------------------------------- where the wrap goes
def test_a_device_move_under_an_if_is_wrapped_after_that_if():
    out = fixed(
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(2, 1)
        use_gpu = torch.cuda.is_available()
        if use_gpu:
            model = model.cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            model(torch.randn(4, 2)).sum().backward()
            optimizer.step()
        torch.save(model.state_dict(), "m.pt")
        """
    )
    assert "if use_gpu:\n    model = model.cuda()\nraw_model = model\nif DISTRIBUTED:\n    model = DDP(" in out
    assert "torch.save(raw_model.state_dict()" in out


def test_a_model_picked_in_an_if_chain_is_wrapped_after_the_chain_and_its_initialisation():
    out = fixed(
        """
        import argparse

        import torch
        import torch.nn as nn


        def init(m):
            if isinstance(m, nn.Linear):
                m.weight.data.normal_(0.0, 0.02)


        def main():
            args = argparse.ArgumentParser().parse_args()
            if args.kind == "small":
                net = nn.Linear(2, 1)
            elif args.kind == "deep":
                net = nn.Sequential(nn.Linear(2, 4), nn.Linear(4, 1))
            else:
                net = nn.Sequential(nn.Linear(2, 8), nn.Linear(8, 1))
            net.apply(init)
            if args.resume:
                net.load_state_dict(torch.load(args.resume))
            net.to("cpu")
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            for step in range(2):
                net(torch.randn(4, 2)).sum().backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """,
        "DDP301",
    )
    assert '    net.to("cpu")\n    if DISTRIBUTED:\n        net = DDP(' in out
    assert out.count("DDP(net") == 1


def test_a_model_built_and_trained_in_one_branch_is_wrapped_in_that_branch():
    out = fixed(
        """
        import torch
        import torch.nn as nn

        if torch.cuda.is_available():
            model = nn.Linear(2, 1).cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(2):
                model(torch.randn(4, 2).cuda()).sum().backward()
                optimizer.step()
        """,
        "DDP301",
    )
    assert "    model = nn.Linear(2, 1).cuda()\n    if DISTRIBUTED:\n" in out


def test_a_conditional_wrap_of_the_script_is_not_wrapped_again():
    text = """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        DISTRIBUTED = int(os.environ.get("WORLD_SIZE", 1)) > 1
        if DISTRIBUTED:
            dist.init_process_group("gloo")
        net = nn.Linear(4, 1)
        model = DDP(net) if DISTRIBUTED else net
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            model(torch.randn(8, 4)).pow(2).mean().backward()
            opt.step()
        """
    assert found(text, "DDP301") == []
    assert fixed(text, "DDP301") == src(text)


def test_the_optimizer_moves_below_the_wrap_with_the_lines_that_use_it():
    out = fixed(
        """
        import os

        import torch
        import torch.nn as nn


        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            ckpt = torch.load("last.pt", map_location="cpu") if os.path.exists("last.pt") else None
            if ckpt is not None:
                model.load_state_dict(ckpt["model"])
            if ckpt is not None:
                opt.load_state_dict(ckpt["opt"])
            model.to(device)
            for step in range(10):
                model(torch.randn(8, 4, device=device)).pow(2).mean().backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """
    )
    wrap = out.index("model = DDP(model")
    assert wrap < out.index("opt = torch.optim.SGD") < out.index('opt.load_state_dict(ckpt["opt"])')
    assert out.index("model.to(device)") < wrap


# --------------------------------------------------------------------------- models trained elsewhere
def test_an_optimizer_over_a_filtered_parameter_list_trains_the_model():
    out = fixed(
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(2, 1)
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.SGD(params, lr=0.1)
        for step in range(2):
            model(torch.randn(4, 2)).sum().backward()
            optimizer.step()
        """,
        "DDP301",
    )
    assert "model = nn.Linear(2, 1)\nif DISTRIBUTED:\n    model = DDP(model" in out


def test_an_optimizer_over_the_plain_alias_of_a_wrapped_model_is_not_a_new_model():
    text = """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def main(distributed):
            if distributed:
                dist.init_process_group("gloo")
            model = nn.Linear(2, 1)
            model_without_ddp = model
            if distributed:
                model = DDP(model)
                model_without_ddp = model.module
            params = [p for p in model_without_ddp.parameters() if p.requires_grad]
            optimizer = torch.optim.SGD(params, lr=0.1)
            for step in range(2):
                model(torch.randn(4, 2)).sum().backward()
                optimizer.step()
            torch.save(model_without_ddp.state_dict(), "m.pt")


        if __name__ == "__main__":
            main(False)
        """
    assert [d.code for d in check_source(src(text)) if d.code.startswith(("DDP30", "DDP31", "DDP402", "DDP403"))] == []


def test_an_optimizer_over_an_alias_the_script_runs_wraps_the_alias():
    out = fixed(
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(2, 1)
        net = model
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        for step in range(2):
            net(torch.randn(4, 2)).sum().backward()
            optimizer.step()
        """,
        "DDP301",
    )
    assert "net = model\nif DISTRIBUTED:\n    net = DDP(net" in out


ENGINE = """
import torch


def fit(model, loader, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


def describe(model):
    return sum(p.numel() for p in model.parameters())
"""

TRAINED_ELSEWHERE = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from engine import describe, fit


def main():
    loader = DataLoader(TensorDataset(torch.randn(16, 2), torch.randn(16, 1)), batch_size=4)
    model = nn.Linear(2, 1)
    print(describe(model), sum(p.numel() for p in model.parameters()))
    fit(model, loader, epochs=2)


if __name__ == "__main__":
    main()
"""


def test_a_model_handed_to_a_trainer_of_a_local_package_is_wrapped(tmp_path: Path):
    write(tmp_path, "engine/__init__.py", "from .loop import describe, fit\n")
    write(tmp_path, "engine/loop.py", ENGINE)
    path = write(tmp_path, "train.py", TRAINED_ELSEWHERE)
    out = fix_source(path.read_text(), path=str(path), select=["DDP301"]).code
    assert "    model = nn.Linear(2, 1)\n    if DISTRIBUTED:\n" in out
    assert out.index("model = DDP(model") < out.index("fit(model, loader, epochs=2)")


def test_a_loss_module_handed_to_a_local_trainer_is_not_a_model(tmp_path: Path):
    write(
        tmp_path,
        "engine.py",
        """
        import torch


        def train_one_epoch(model, criterion, loader, optimizer):
            for x, y in loader:
                loss = criterion(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
        """,
    )
    path = write(
        tmp_path,
        "train.py",
        """
        import torch
        import torch.nn as nn

        from engine import train_one_epoch

        model = nn.Linear(2, 1)
        criterion = nn.MSELoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = [(torch.randn(4, 2), torch.randn(4, 1))]
        for epoch in range(2):
            train_one_epoch(model, criterion, loader, optimizer)
        """,
    )
    out = fix_source(path.read_text(), path=str(path), select=["DDP301", "DDP308"]).code
    assert "model = DDP(model" in out and "criterion = DDP" not in out and "raw_criterion" not in out


def test_a_model_only_described_by_a_local_module_is_not_trained(tmp_path: Path):
    write(tmp_path, "engine.py", ENGINE)
    path = write(tmp_path, "train.py", TRAINED_ELSEWHERE.replace("fit(model, loader, epochs=2)", "pass"))
    assert "DDP301" not in [d.code for d in check_source(path.read_text(), path=str(path))]


def test_models_in_a_list_with_one_optimizer_each_are_wrapped_each():
    text = """
        import torch
        import torch.nn as nn

        nets = [nn.Sequential(nn.Linear(2, 4), nn.BatchNorm1d(4), nn.Linear(4, 1)) for _ in range(2)]
        opts = [torch.optim.Adam(net.parameters(), lr=0.01) for net in nets]
        for step in range(2):
            for net, opt in zip(nets, opts):
                net(torch.randn(4, 2)).sum().backward()
                opt.step()
        """
    out = fixed(text, "DDP301", "DDP306", unsafe_fixes=True)
    assert (
        "if DISTRIBUTED:\n    nets = [nn.SyncBatchNorm.convert_sync_batchnorm(net) "
        "if next(net.parameters()).is_cuda else net for net in nets]\n"
        ""
        "if DISTRIBUTED:\n"
        "    nets = [DDP(net, device_ids=[LOCAL_RANK] if next(net.parameters()).is_cuda else None) for net in nets]\n"
        "opts = [torch.optim.Adam(" in out
    )
    assert fixed(src(out), "DDP301", "DDP306", unsafe_fixes=True) == src(out)  # wrapped once


def test_a_submodule_used_only_with_a_construction_option_makes_ddp_look_for_unused_parameters():
    text = """
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self, batch_normalization=False):
                super().__init__()
                self.do_bn = batch_normalization
                self.bn_input = nn.BatchNorm1d(2)
                self.fc = nn.Linear(2, 1)

            def forward(self, x):
                if self.do_bn:
                    x = self.bn_input(x)
                return self.fc(x)


        model = Net(batch_normalization=False)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
        """
    assert "else None, find_unused_parameters=True)" in fixed(text, "DDP301")
    assert [d.message.split(":")[0] for d in found(text, "DDP310")] == [
        "self.bn_input is used in forward only when the model is built with self.do_bn"
    ]
    plain = text.replace("if self.do_bn:\n                    x = self.bn_input(x)", "x = self.bn_input(x)")
    assert "find_unused_parameters" not in fixed(plain, "DDP301")


# --------------------------------------------------------------------------- the script's own modules
MODEL = """
import torch
import torch.nn as nn


class CharRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(2, 2)

    def forward(self, x, h):
        return self.cell(x, h)

    def init_hidden(self, n):
        return torch.zeros(n, 2)
"""

STAR = """
import torch

from model import *

decoder = CharRNN()
decoder_optimizer = torch.optim.Adam(decoder.parameters(), lr=0.01)


def train(x):
    hidden = decoder.init_hidden(4)
    decoder(x, hidden).sum().backward()
    decoder_optimizer.step()


for epoch in range(2):
    train(torch.randn(4, 2))
"""


def test_a_class_of_a_star_import_is_read(tmp_path: Path):
    write(tmp_path, "model.py", MODEL)
    path = write(tmp_path, "train.py", STAR)
    out = fix_source(path.read_text(), path=str(path), select=["DDP301", "DDP308"]).code
    assert "hidden = raw_decoder.init_hidden(4)" in out


def test_a_name_the_script_defines_itself_is_not_the_star_imports(tmp_path: Path):
    write(tmp_path, "model.py", MODEL)
    own = "\nclass CharRNN(torch.nn.GRUCell):\n    pass\n"
    for text, star in ((STAR, True), (STAR.replace("\ndecoder = CharRNN()", own + "\n\ndecoder = CharRNN()"), False)):
        path = write(tmp_path, "train.py", text)
        facts = ScriptFacts(cst.parse_module(path.read_text()), path=str(path))
        target = facts.modules.target_of(cst.Name("CharRNN"))
        assert (target is not None and target.member == "CharRNN") is star


# --------------------------------------------------------------------------- the wrapper where it does not belong
SAMPLES = """
import torch
import torch.nn as nn


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 2)
        self.dec = nn.Linear(2, 4)

    def forward(self, x):
        return self.dec(self.enc(x))

    def inference(self, z):
        return self.dec(z)


def main():
    vae = VAE()
    optimizer = torch.optim.Adam(vae.parameters(), lr=1e-2)
    for i in range(4):
        {before}
        loss = (vae(torch.randn(8, 4)) - 1).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        {after}


if __name__ == "__main__":
    main()
"""


def test_a_sample_drawn_after_the_step_goes_through_the_plain_module():
    out = fixed(SAMPLES.format(before="", after="print(vae.inference(torch.randn(2, 2)).mean())"), "DDP301", "DDP308")
    assert "print(raw_vae.inference(torch.randn(2, 2)).mean())" in out


def test_a_forward_method_before_backward_is_still_reported_only():
    text = SAMPLES.format(before="z = vae.inference(torch.randn(2, 2))", after="")
    diags = found(text, "DDP308")
    assert [d.fix for d in diags] == ["none"] and "in the training step" in diags[0].message


def test_traces_and_graph_exports_take_the_plain_module():
    out = fixed(
        """
        import torch
        import torch.nn as nn
        from torch.utils.tensorboard import SummaryWriter

        model = nn.Linear(2, 1)
        writer = SummaryWriter()
        writer.add_graph(model, torch.randn(1, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
        traced = torch.jit.trace(model, torch.randn(1, 2))
        torch.onnx.export(model=model, args=(torch.randn(1, 2),), f="m.onnx")
        """,
        "DDP301",
        "DDP308",
    )
    assert "writer.add_graph(raw_model, torch.randn(1, 2))" in out
    assert "traced = torch.jit.trace(raw_model, torch.randn(1, 2))" in out
    assert "torch.onnx.export(model=raw_model, args=" in out


def test_a_helper_of_a_local_module_that_traces_the_model(tmp_path: Path):
    write(
        tmp_path,
        "export.py",
        "import torch\n\n\ndef export(net, path):\n    torch.jit.trace(net, torch.randn(1, 2)).save(path)\n",
    )
    path = write(
        tmp_path,
        "train.py",
        """
        import torch
        import torch.nn as nn

        from export import export

        model = nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
        export(model, "m.pt")
        """,
    )
    diags = [d for d in check_source(path.read_text(), path=str(path)) if d.code == "DDP308"]
    assert [d.message for d in diags] == [
        "export() traces model, the DDP wrapper, whose forward calls into the process group: pass raw_model"
    ]


def test_the_whole_wrapper_is_not_pickled():
    out = fixed(
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)


        def save():
            torch.save(model, "model.pt")


        for step in range(2):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
        save()
        """,
        "DDP301",
        "DDP402",
    )
    assert 'torch.save(raw_model, "model.pt")' in out


# --------------------------------------------------------------------------- rank-0 forwards made by a guard
GUARDED = """
import torch
import torch.nn as nn


def evaluate(model):
    with torch.no_grad():
        return model(torch.randn(8, 4)).mean().item()


def main():
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        model(torch.randn(8, 4)).pow(2).mean().backward()
        opt.step()
        {line}


if __name__ == "__main__":
    main()
"""


def test_a_forward_in_a_print_that_is_guarded_goes_through_the_plain_module():
    out = fixed(GUARDED.format(line="print(step, evaluate(model), model(torch.randn(2, 4)).sum().item())"))
    assert "    if RANK == 0:\n            print(step, evaluate(raw_model), raw_model(torch.randn(2, 4))" in out
    found_codes = [(d.code, d.col) for d in found(GUARDED.format(line="print(evaluate(model))"), "DDP103")]
    assert found_codes == [("DDP103", 24)]  # `check` reports what the guard will need


def test_a_forward_every_rank_runs_is_left_alone():
    text = GUARDED.format(
        line="score = evaluate(model)\n        if step > 0 and step % 5 == 0:\n            s = evaluate(model)"
    )
    assert found(text, "DDP103") == []


# --------------------------------------------------------------------------- scripts already correct
CUDA_ONLY = """
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

{setup}


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    {before}
    model = nn.Linear(4, 1).to(device)
    model = DDP(model, device_ids=[LOCAL_RANK])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        model(torch.randn(8, 4, device=device)).sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
"""
LOCAL = 'LOCAL_RANK = int(os.environ["LOCAL_RANK"])'


def test_device_ids_on_a_path_that_needs_a_gpu_are_not_reported():
    for setup, before in (
        (LOCAL, 'torch.cuda.set_device(LOCAL_RANK)\n    dist.init_process_group("gloo")'),
        (LOCAL, 'dist.init_process_group(backend="nccl")'),
        (LOCAL, 'assert torch.cuda.is_available(), "DDP needs GPUs"'),
        (LOCAL, 'if torch.cuda.is_available() is False:\n        raise EnvironmentError("no GPU")'),
        (
            LOCAL + "\n\n\ndef setup():\n    dist.init_process_group('gloo')\n    torch.cuda.set_device(LOCAL_RANK)",
            "setup()",
        ),
    ):
        assert found(CUDA_ONLY.format(setup=setup, before=before), "DDP303") == [], before


def test_device_ids_where_the_gpu_is_optional_are_still_reported():
    for before in (
        'if torch.cuda.is_available():\n        torch.cuda.set_device(LOCAL_RANK)\n    dist.init_process_group("gloo")',
        'if os.environ.get("USE_GPU"):\n        torch.cuda.set_device(LOCAL_RANK)\n    dist.init_process_group("gloo")',
    ):
        assert [d.fix for d in found(CUDA_ONLY.format(setup=LOCAL, before=before), "DDP303")] == ["safe"], before


def test_device_ids_of_a_module_moved_to_a_cuda_device_variable():
    text = CUDA_ONLY.format(setup=LOCAL, before="").replace(
        "    model = nn.Linear(4, 1).to(device)\n",
        '    gpu = torch.device("cuda", LOCAL_RANK)\n    model = nn.Linear(4, 1).to(gpu)\n    model = model.to(torch.bfloat16)\n',
    )
    assert found(text, "DDP303") == []


RESUME = """
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = DDP(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    {load}
    for step in range(10):
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
    if dist.get_rank() == 0:
        state = dict(model=model.state_dict(), opt=opt.state_dict())
        torch.save(state, os.path.join("ckpt", "last.pt"))


if __name__ == "__main__":
    main()
"""


def test_a_resume_through_the_wrapper_keeps_its_keys():
    load = (
        'if os.path.exists(os.path.join("ckpt", "last.pt")):\n'
        '        ckpt = torch.load(os.path.join("ckpt", "last.pt"), map_location="cpu")\n'
        '        model.load_state_dict(ckpt["model"])'
    )
    text = RESUME.format(load=load)
    assert found(text, "DDP402") == [] and found(text, "DDP403") == []


def test_keys_given_the_prefix_by_hand_are_left_alone():
    load = (
        'plain = torch.load("plain.pt", map_location="cpu")\n'
        "    loaded = {}\n"
        "    for key, value in plain.items():\n"
        '        loaded["module." + key] = value\n'
        "    model.load_state_dict(loaded)"
    )
    assert found(RESUME.format(load=load), "DDP403") == []


def test_a_plain_checkpoint_loaded_into_the_wrapper_is_still_reported():
    load = 'model.load_state_dict(torch.load("pretrained.pt", map_location="cpu"))'
    text = RESUME.format(load=load)
    assert [d.code for d in found(text, "DDP403")] == ["DDP403"]
    assert [d.code for d in found(text, "DDP402")] == ["DDP402"]


def test_dataparallel_offered_beside_ddp_under_a_flag_is_left_alone():
    text = """
        import argparse

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler


        def main(gpu, args):
            if args.nodes > 1:
                dist.init_process_group("gloo", rank=gpu, world_size=args.nodes)
            data = TensorDataset(torch.randn(16, 4))
            sampler = DistributedSampler(data) if args.nodes > 1 else None
            loader = DataLoader(data, batch_size=4, sampler=sampler)
            model = nn.Linear(4, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            if args.dataparallel:
                model = nn.DataParallel(model)
            else:
                if args.nodes > 1:
                    model = DDP(model)
            for (x,) in loader:
                model(x).sum().backward()
                optimizer.step()


        if __name__ == "__main__":
            main(0, argparse.ArgumentParser().parse_args())
        """
    assert found(text, "DDP302") == [] and found(text, "DDP207") == []
    alone = text.replace(
        "                if args.nodes > 1:\n                    model = DDP(model)", "                pass"
    )
    assert [d.code for d in found(alone, "DDP302")] == ["DDP302"]


def test_a_scheduler_stepped_every_few_iterations_is_not_accumulation():
    text = """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
        for i in range(32):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            {step}
            if (i + 1) % 8 == 0:
                {gated}
        """
    assert found(text.format(step="opt.step()", gated="sched.step()"), "DDP307") == []
    accumulating = text.format(step="pass", gated="opt.step()\n        sched.step()")
    assert [d.code for d in found(accumulating, "DDP307")] == ["DDP307"]


# --------------------------------------------------------------------------- how far calls are followed
def test_when_a_method_runs_is_found_quickly_through_many_mutual_calls():
    classes = "\n".join(
        f"class Block{i}:\n"
        f"    def forward(self, x):\n"
        f"        return self.inner.forward(x) + self.other.step(x)\n"
        f"    def step(self, x):\n"
        f"        return self.inner.step(x) + self.forward(x)\n"
        for i in range(14)
    )
    text = f"{classes}\n\nblocks = [Block0(), Block1()]\nprint(blocks[0].forward(1))\n"
    index = TreeIndex(cst.parse_module(text))
    flow = Flow(index)
    target = next(c for c in index.calls if cst.Module([]).code_for_node(c) == "self.inner.forward(x)")
    start = time.perf_counter()
    assert flow.runs_at(target) == len(index.module.body) - 2  # where the classes are named, through any chain
    assert time.perf_counter() - start < 5


DP_AROUND_CONSTRUCTOR = """
    import torch
    import torch.nn as nn


    def main():
        model = nn.DataParallel(nn.Linear(4, 1))
        model.cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


    if __name__ == "__main__":
        main()
"""


def test_dataparallel_around_the_constructor_is_never_half_converted():
    text = src(DP_AROUND_CONSTRUCTOR)
    safe = fix_source(text)
    assert safe.incomplete == [] and "init_process_group" in safe.code, [b.format() for b in safe.incomplete]
    # the model is built plain; the plain run wraps it in DataParallel as before, then moves it; under
    # torchrun it is moved, then wrapped: DDP sees parameters already on their device
    assert (
        "    model = nn.Linear(4, 1)\n    if not DISTRIBUTED:\n"
        "        model = nn.DataParallel(model)\n    model.cuda()\n    if DISTRIBUTED:\n"
        "        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)\n"
    ) in safe.code
    assert fixed(text, unsafe_fixes=True) == safe.code
