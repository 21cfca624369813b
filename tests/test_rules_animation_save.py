"""A matplotlib animation saved to a file (`anim = animation.ArtistAnimation(fig, ims, ...)`, then
`anim.save("celeba.gif", writer="imagemagick")`, the last line of a DCGAN script) is a file write like
`plt.savefig`: rank 0's (DDP401). Another object's `save(...)` is not taken for one."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

SCRIPT = textwrap.dedent(
    """
    import matplotlib.animation as animation
    import matplotlib.pyplot as plt
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = DataLoader(data, batch_size=4, shuffle=True)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    frames = []
    fig = plt.figure()
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        frames.append([plt.plot([epoch], [loss.item()])[0]])
    anim = {build}
    anim.save("progress.gif", writer="pillow")
    """
).lstrip()


def saves(src: str) -> list:
    return [d for d in check_source(src) if d.code == "DDP401"]


def test_an_animation_save_is_rank_0s():
    src = SCRIPT.replace("{build}", "animation.ArtistAnimation(fig, frames, interval=100)")
    [d] = saves(src)
    assert d.line == src.splitlines().index('anim.save("progress.gif", writer="pillow")') + 1
    out = fix_source(src).code
    assert 'if RANK == 0:\n    anim.save("progress.gif", writer="pillow")\n' in out
    assert [x for x in check_source(out) if x.code == "DDP401"] == []


def test_a_func_animation_imported_by_name_is_one_too():
    src = SCRIPT.replace("import matplotlib.animation as animation", "from matplotlib.animation import FuncAnimation")
    src = src.replace("{build}", "FuncAnimation(fig, lambda i: frames[i], frames=len(frames))")
    assert len(saves(src)) == 1


def test_another_objects_save_is_not_a_file_write_here():
    """`recorder.save(...)` of an object that is no animation: nothing says it writes a file."""
    src = SCRIPT.replace("{build}", "Recorder(frames)").replace(
        "frames = []\n",
        "frames = []\n\n\nclass Recorder:\n    def __init__(self, f):\n        self.f = f\n\n    def save(self, *a, **k):\n        return len(self.f)\n\n\n",
    )
    assert saves(src) == []
