"""Findings routed through a DDP wrap that this conversion would make (DDP308, DDP402, DDP403) offer
their fix at no better level than the wrap's own finding (DDP301), and the wrap at no better level than
the process group it needs (DDP001): `check` promises no fix that `apply` does not make."""

from __future__ import annotations

from ddpfix import check_source, fix_source

NET = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_classes = 4
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x)
"""

REBOUND = (
    NET
    + """

model = Net()


def model_load(path):
    global model
    model = Net()
    model.load_state_dict(torch.load(path))


def main():
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        loss = model(torch.randn(4, 8)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(model.n_classes)
    torch.save(model.state_dict(), "m.pt")
    model_load("m.pt")


if __name__ == "__main__":
    main()
"""
)

BESIDE_DATAPARALLEL = (
    NET
    + """

def main():
    gen = nn.Linear(8, 8)
    if torch.cuda.device_count() > 1:
        gen = nn.DataParallel(gen).cuda()
    disc = Net()
    opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
    opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
    for step in range(4):
        loss = disc(gen(torch.randn(4, 8))).sum()
        opt_g.zero_grad()
        opt_d.zero_grad()
        loss.backward()
        opt_g.step()
        opt_d.step()
    print(disc.n_classes)
    torch.save(disc.state_dict(), "d.pt")


if __name__ == "__main__":
    main()
"""
)

ROUTED = ("DDP308", "DDP402", "DDP403")


def levels(src: str, codes=("DDP301", *ROUTED)) -> dict[str, str]:
    return {d.code: d.fix for d in check_source(src) if d.code in codes}


def test_wrap_that_cannot_be_made_offers_no_fix_through_it():
    """A global model rebound after the wrap: DDP301 has no fix, so neither have the findings that
    would read the plain module through `raw_model` (they said [*] and apply withheld them)."""
    assert levels(REBOUND) == {"DDP301": "none", "DDP308": "none", "DDP402": "none", "DDP403": "none"}
    found = [d for d in check_source(REBOUND) if d.code in ROUTED]
    assert all(d.message.endswith("(no fix: model is not wrapped here, see DDP301)") for d in found)
    result = fix_source(REBOUND)
    assert result.code == REBOUND
    assert not any(d.withheld for d in result.diagnostics), [d.withheld for d in result.diagnostics if d.withheld]


def test_wrap_beside_a_dataparallel_kept_for_the_plain_run_is_safe():
    """Another trained model in DataParallel on a line of its own: DDP302 keeps it for the plain run and
    wraps it in DDP under torchrun (safe), so the process group, the wrap of `disc` and what reads its
    plain module are safe too."""
    src = BESIDE_DATAPARALLEL.replace(
        "    gen = nn.Linear(8, 8)\n    if torch.cuda.device_count() > 1:\n        gen = nn.DataParallel(gen).cuda()\n",
        "    gen = nn.DataParallel(nn.Linear(8, 8))\n",
    )
    assert src != BESIDE_DATAPARALLEL
    assert levels(src, ("DDP001", "DDP301", "DDP302", *ROUTED)) == {
        "DDP001": "safe",
        "DDP301": "safe",
        "DDP302": "safe",
        "DDP308": "safe",
        "DDP402": "safe",
    }
    result = fix_source(src)
    assert (
        "print(raw_disc.n_classes)" in result.code and "    else:\n        gen = nn.DataParallel(gen)\n" in result.code
    )
    assert result.incomplete == []


def test_wrap_made_only_with_unsafe_fixes_makes_what_goes_through_it_unsafe():
    """Another trained model in DataParallel that DDP302 converts only by replacing it (a move to CUDA
    under the test around it): the process group (DDP001) comes only with --unsafe-fixes, so the wrap
    of `disc` and what reads its plain module are unsafe too, and a safe apply withholds none."""
    assert levels(BESIDE_DATAPARALLEL) == {"DDP301": "unsafe", "DDP308": "unsafe", "DDP402": "unsafe"}
    safe = fix_source(BESIDE_DATAPARALLEL)
    assert safe.code == BESIDE_DATAPARALLEL and not any(d.withheld for d in safe.diagnostics)
    unsafe = fix_source(BESIDE_DATAPARALLEL, unsafe_fixes=True)
    applied = {d.code for d in unsafe.diagnostics if d.applied}
    assert {"DDP001", "DDP301", "DDP302", "DDP308", "DDP402"} <= applied
    assert "print(raw_disc.n_classes)" in unsafe.code and "torch.save(raw_disc.state_dict()" in unsafe.code
    assert unsafe.incomplete == []


def test_safe_wrap_keeps_its_routed_fixes_safe():
    plain = REBOUND.replace('    model_load("m.pt")\n', "")
    assert levels(plain) == {"DDP301": "safe", "DDP308": "safe", "DDP402": "safe"}
    result = fix_source(plain)
    assert {"DDP301", "DDP308", "DDP402"} <= {d.code for d in result.diagnostics if d.applied}
