"""A logger class a package re-exports with `from .logger import *` (`from utils import Logger,
savefig`), built in either branch of `if args.resume:`: its file is written on rank 0 only."""

from __future__ import annotations

from local_files import write

from ddpfix import fix_source

LOGGER = """
import matplotlib.pyplot as plt

__all__ = ["Logger", "savefig"]


def savefig(fname):
    plt.savefig(fname)


class Logger:
    def __init__(self, fpath, resume=False):
        if resume:
            self.file = open(fpath, "a")
        else:
            self.file = open(fpath, "w")

    def set_names(self, names):
        self.file.write("\\t".join(names) + "\\n")

    def append(self, numbers):
        self.file.write("\\t".join(str(n) for n in numbers) + "\\n")

    def close(self):
        self.file.close()
"""

SCRIPT = """
import argparse

import torch
import torch.nn as nn

from utils import Logger, savefig

parser = argparse.ArgumentParser()
parser.add_argument("--resume", action="store_true")
args = parser.parse_args()

model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
if args.resume:
    logger = Logger("log.txt", resume=True)
else:
    {other}
    logger.set_names(["loss"])
for step in range(2):
    loss = model(torch.randn(4, 2)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    logger.append([loss.item()])
logger.close()
savefig("log.eps")
"""


def _run(
    tmp_path, other: str = 'logger = Logger("log.txt")', init: str = "from .misc import *\nfrom .logger import *\n"
):
    write(tmp_path, "utils/__init__.py", init)
    write(tmp_path, "utils/logger.py", LOGGER)
    write(tmp_path, "utils/misc.py", "def mkdir_p(path):\n    pass\n")
    path = write(tmp_path, "train.py", SCRIPT.format(other=other))
    return fix_source(path.read_text(), path=str(path), cross_file=True)


def _codes(result, code: str) -> list:
    return [d for d in result.diagnostics if d.code == code]


def test_a_class_a_package_star_imports_is_read_in_its_module(tmp_path):
    result = _run(tmp_path)
    opens = _codes(result, "DDP405")
    assert [d.line for d in opens] == [15, 17]  # both constructions
    assert all("Logger() opens a file for writing on every rank (utils/logger.py:" in d.message for d in opens)
    (saves,) = _codes(result, "DDP401")
    assert "savefig() runs matplotlib.pyplot.savefig on every rank (utils/logger.py:7)" in saves.message


def test_an_object_built_in_either_branch_is_built_and_used_on_rank_0_only(tmp_path):
    result = _run(tmp_path)
    assert all(d.applied for d in _codes(result, "DDP405"))
    assert '    if RANK == 0:\n        logger = Logger("log.txt", resume=True)' in result.code
    assert '    if RANK == 0:\n        logger = Logger("log.txt")\n        logger.set_names(["loss"])' in result.code
    assert "    if RANK == 0:\n        logger.append([loss.item()])" in result.code
    assert "if RANK == 0:\n    logger.close()" in result.code
    assert result.incomplete == []


def test_a_branch_that_binds_the_name_to_something_else_leaves_the_object_on_every_rank(tmp_path):
    # not kept to rank 0 in the script: the class opens the file on rank 0 and os.devnull elsewhere
    result = _run(tmp_path, other="logger = None")
    (found,) = _codes(result, "DDP405")
    assert found.applied and "the other ranks os.devnull" in found.message
    assert '    logger = Logger("log.txt", resume=True)\n' in result.code  # unguarded
    logger = next(c.code for p, c in result.others.items() if p.endswith("logger.py"))
    assert (
        'self.file = open(fpath, "a") if not dist.is_initialized() or dist.get_rank() == 0 else open(os.devnull, "a")'
        in logger
    )
    assert result.incomplete == []


def test_the_last_star_import_that_defines_the_name_is_the_one_read(tmp_path):
    # `from .logger import *` then `from .quiet import *`: Python binds quiet's Logger, which writes nothing
    write(
        tmp_path,
        "utils/quiet.py",
        "class Logger:\n    def __init__(self, fpath, resume=False):\n        self.fpath = fpath\n",
    )
    assert _codes(_run(tmp_path, init="from .logger import *\nfrom .quiet import *\n"), "DDP405") == []
    assert len(_codes(_run(tmp_path, init="from .quiet import *\nfrom .logger import *\n"), "DDP405")) == 2
