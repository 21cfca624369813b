"""Trainer classes of the script's modules picked in an if/elif (`model = GAN(args)` / `model = WGAN(args)`,
then `model.train(train_loader)`): every class the call may reach is converted, or none is.

The project is golden gan_trainers_by_flag's; each test edits one thing of it."""

from __future__ import annotations

import ast
from pathlib import Path

from local_files import edit, fix_input, golden_copy

from ddpfix import fix_source
from ddpfix.analysis.loader_params import EPOCHS, TRAINS_ON, ast_loader_uses

GOLDEN = Path(__file__).parent / "golden" / "gan_trainers_by_flag"


def _edited(result, name: str) -> str:
    return next(c.code for p, c in result.others.items() if Path(p).name == name)


def test_each_class_the_instance_may_be_is_wrapped_and_sets_its_epochs(tmp_path):
    result = fix_input(golden_copy(GOLDEN, tmp_path))
    wraps = [d for d in result.diagnostics if d.code == "DDP301"]
    assert [d.applied for d in wraps] == [True, True]
    assert sorted(d.message.split(" builds itself")[0].split()[-1] for d in wraps) == ["GAN", "WGAN"]
    for name in ("gan.py", "wgan.py"):
        code = _edited(result, name)
        # after check_cuda(), which moves both networks, and before the optimizers
        assert "self.check_cuda(args.cuda)\n        if dist.is_initialized():\n            self.D = DDP(" in code
        assert "        epoch = 0\n        while True:\n            if isinstance(getattr(data_loader" in code
        assert (
            'open("losses.txt", "w") if not dist.is_initialized() or dist.get_rank() == 0 else open(os.devnull, "w")'
            in code
        )
    assert result.incomplete == []


def test_a_method_that_moves_the_model_after_the_wrap_too_leaves_the_class_unwrapped(tmp_path):
    root = golden_copy(GOLDEN, tmp_path)
    edit(
        root / "models/wgan.py",
        '        self.file = open("losses.txt", "w")\n',
        '        self.check_cuda(False)\n        self.file = open("losses.txt", "w")\n',
    )
    result = fix_input(root)
    wgan = next(d for d in result.diagnostics if d.code == "DDP301" and "WGAN builds" in d.message)
    assert not wgan.applied and "self.D.cuda" in wgan.message
    assert result.others == {}  # no class is converted when one cannot be (no half conversion)
    assert "DDP301" in {i.code for i in result.incomplete}


def test_a_file_read_back_in_the_module_is_not_sent_to_devnull(tmp_path):
    root = golden_copy(GOLDEN, tmp_path)
    edit(
        root / "models/gan.py",
        "        self.file.close()\n",
        '        self.file.close()\n        print(open("losses.txt").read())\n',
    )
    result = fix_input(root)
    found = next(d for d in result.diagnostics if d.code == "DDP405")
    assert not found.applied and "read back at models/gan.py:" in found.message


def test_a_separate_penalty_backward_withholds_the_conversion_of_every_class(tmp_path):
    root = golden_copy(GOLDEN, tmp_path)
    edit(
        root / "models/wgan.py",
        "                d_loss.backward()\n",
        "                d_loss.backward()\n"
        "                penalty = self.gradient_penalty(images, self.G(z).detach())\n"
        "                penalty.backward()\n",
    )
    edit(
        root / "models/wgan.py",
        "    def save_model(self):",
        "    def gradient_penalty(self, real, fake):\n"
        "        eta = torch.rand(real.size(0), 1)\n"
        "        interpolated = (eta * real + (1 - eta) * fake).requires_grad_(True)\n"
        "        prob = self.D(interpolated)\n"
        "        gradients = torch.autograd.grad(outputs=prob, inputs=interpolated, grad_outputs=torch.ones_like(prob), create_graph=True)[0]\n"
        "        return ((gradients.norm(2, dim=1) - 1) ** 2).mean()\n\n"
        "    def save_model(self):",
    )
    result = fix_input(root)
    wgan = next(d for d in result.diagnostics if d.code == "DDP301" and "WGAN builds" in d.message)
    assert (
        not wgan.applied
        and "the gradient penalty over self.D's output (torch.autograd.grad at models/wgan.py:" in wgan.message
    )
    assert result.others == {} and result.code == (root / "input.py").read_text()
    assert {i.code for i in result.incomplete} >= {"DDP001", "DDP301"}


def test_a_penalty_added_to_the_loss_is_back_propagated_with_it_and_converts(tmp_path):
    root = golden_copy(GOLDEN, tmp_path)
    edit(
        root / "models/wgan.py", "self.D(images).mean()\n", "self.D(images).mean() + self.gradient_penalty(images, z)\n"
    )
    edit(
        root / "models/wgan.py",
        "    def save_model(self):",
        "    def gradient_penalty(self, real, z):\n"
        "        interpolated = (0.5 * real + 0.5 * self.G(z).detach()).requires_grad_(True)\n"
        "        prob = self.D(interpolated)\n"
        "        gradients = torch.autograd.grad(outputs=prob, inputs=interpolated, grad_outputs=torch.ones_like(prob), create_graph=True)[0]\n"
        "        return ((gradients.norm(2, dim=1) - 1) ** 2).mean()\n\n"
        "    def save_model(self):",
    )
    result = fix_input(root)
    assert [d.applied for d in result.diagnostics if d.code == "DDP301"] == [True, True]
    assert result.incomplete == []


def test_a_loader_drawn_through_a_generator_made_of_it_is_trained_on_pass_after_pass():
    tree = ast.parse(
        "def train(self, loader, other):\n"
        "    self.data = self.batches(loader)\n"
        "    extra = self.batches(other)\n"
        "    for step in range(10):\n"
        "        x = self.data.__next__()\n"
        "        loss = self.model(x).sum()\n"
        "        loss.backward()\n"
        "        self.optimizer.step()\n"
    )
    uses = ast_loader_uses(tree.body[0], ["loader", "other"])
    assert uses == {"loader": {TRAINS_ON, EPOCHS}}  # `other` is made into batches nobody draws


def test_a_script_penalty_back_propagated_on_its_own_leaves_its_model_unwrapped():
    src = LONE_PENALTY
    result = fix_source(src)
    d_wrap = next(d for d in result.diagnostics if d.code == "DDP301" and d.line == 7)
    assert not d_wrap.applied and "(torch.autograd.grad at line 18) is back-propagated on its own" in d_wrap.message
    assert "DDP301" in {i.code for i in result.incomplete}
    combined = src.replace(
        "        d_fake = D(fake).mean()\n        d_fake.backward()\n        penalty = gradient_penalty(real, fake)\n        penalty.backward()\n",
        "        d_loss = D(fake).mean() + gradient_penalty(real, fake)\n        d_loss.backward()\n",
    )
    assert combined != src
    result = fix_source(combined)
    assert all(d.applied for d in result.diagnostics if d.code == "DDP301") and result.incomplete == []


LONE_PENALTY = """\
import torch
import torch.nn as nn
from torch import autograd
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
D = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
G = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 4))
d_opt = torch.optim.Adam(D.parameters(), lr=1e-3)
g_opt = torch.optim.Adam(G.parameters(), lr=1e-3)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)


def gradient_penalty(real, fake):
    eta = torch.rand(real.size(0), 1)
    interpolated = (eta * real + (1 - eta) * fake).requires_grad_(True)
    prob = D(interpolated)
    gradients = autograd.grad(outputs=prob, inputs=interpolated, grad_outputs=torch.ones_like(prob), create_graph=True)[0]
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * 10


for epoch in range(2):
    for (real,) in loader:
        fake = G(torch.randn(real.size(0), 2)).detach()
        D.zero_grad()
        d_fake = D(fake).mean()
        d_fake.backward()
        penalty = gradient_penalty(real, fake)
        penalty.backward()
        d_opt.step()
        g_loss = -D(G(torch.randn(real.size(0), 2))).mean()
        G.zero_grad()
        g_loss.backward()
        g_opt.step()
torch.save(G.state_dict(), "g.pt")
"""
