"""The script's own modules are read: a process group joined through a helper in another file is
seen, unreadable imports are "unknown" (never "absent"), and a module other files import gets no
process group of its own."""

import os
import textwrap

from local_files import codes, write

from ddpfix import fix_source
from ddpfix.analysis.summaries import INIT, RANK_TEST, SILENCES_PRINT, summarise

UTILS = """
import os
import torch
import torch.distributed as dist


def get_rank():
    return dist.get_rank() if dist.is_initialized() else 0


def is_main_process():
    return get_rank() == 0


def setup_for_distributed(is_master):
    import builtins as __builtin__
    builtin_print = __builtin__.print

    def print(*args, **kwargs):
        if is_master:
            builtin_print(*args, **kwargs)

    __builtin__.print = print


def _join():
    dist.init_process_group(backend="nccl")


def init_distributed_mode(args):
    if "RANK" not in os.environ:
        return
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    _join()
    setup_for_distributed(int(os.environ["RANK"]) == 0)
"""

TRAIN = """
import torch
{imports}


def main():
    {call}
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        loss = model(torch.randn(4, 2)).sum()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_summary_follows_calls_inside_the_module(tmp_path):
    s = summarise(write(tmp_path, "utils.py", UTILS), lambda module, level: None)
    assert s.does("init_distributed_mode", INIT) and s.does("_join", INIT)
    assert s.does("is_main_process", RANK_TEST) and not s.does("get_rank", RANK_TEST)
    assert s.does("setup_for_distributed", SILENCES_PRINT) and s.does("init_distributed_mode", SILENCES_PRINT)
    assert not s.runs_as_program


def test_process_group_joined_in_a_helper_module_gets_no_second_one(tmp_path):
    write(tmp_path, "utils.py", UTILS)
    for imports, call in [
        ("import utils", "utils.init_distributed_mode(None)"),
        ("from utils import init_distributed_mode", "init_distributed_mode(None)"),
        ("import utils as u", "u.init_distributed_mode(None)"),
    ]:
        train = write(tmp_path, "train.py", TRAIN.format(imports=imports, call=call))
        assert "DDP001" not in codes(train), imports
        out = fix_source(train.read_text(), path=str(train)).code
        assert "init_process_group" not in out, imports
        assert "DDP(" in out  # the wrap is still added: only the process group was there already


def test_packages_submodules_and_relative_imports(tmp_path):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/comm.py", UTILS)
    write(tmp_path, "pkg/launch.py", "from .comm import init_distributed_mode as start\n")
    cases = [
        ("import pkg.comm as comm", "comm.init_distributed_mode(None)"),
        ("from pkg import comm", "comm.init_distributed_mode(None)"),
        ("from pkg.comm import init_distributed_mode", "init_distributed_mode(None)"),
    ]
    for imports, call in cases:
        train = write(tmp_path, "train.py", TRAIN.format(imports=imports, call=call))
        assert "DDP001" not in codes(train), imports
    inner = write(
        tmp_path,
        "pkg/train.py",
        TRAIN.format(imports="from .comm import init_distributed_mode", call="init_distributed_mode(None)"),
    )
    assert "DDP001" not in codes(inner)
    summary = summarise(tmp_path / "pkg/launch.py", lambda module, level: None)
    assert summary.effects == {}  # a re-export, no function of its own


def test_a_helper_that_does_not_join_leaves_the_finding(tmp_path):
    write(tmp_path, "utils.py", "import random\n\n\ndef setup_seed(seed):\n    random.seed(seed)\n")
    train = write(tmp_path, "train.py", TRAIN.format(imports="import utils", call="utils.setup_seed(0)"))
    assert "DDP001" in codes(train)


def test_an_unreadable_import_is_unknown_not_absent(tmp_path):
    train = write(tmp_path, "train.py", TRAIN.format(imports="from mytools.dist import init_dist", call="init_dist()"))
    assert "DDP001" not in codes(train)  # mytools is not beside the script: it may join the group
    assert "init_process_group" not in fix_source(train.read_text(), path=str(train)).code
    lib = write(tmp_path, "train.py", TRAIN.format(imports="import numpy as np", call="np.random.seed(0)"))
    assert "DDP001" in codes(lib)  # a library: known not to


def test_without_a_path_a_local_import_is_unknown(tmp_path):
    src = TRAIN.format(imports="import utils", call="utils.init_distributed_mode(None)")
    assert "DDP001" not in [d.code for d in fix_source(textwrap.dedent(src), fix=False).diagnostics]


def test_summaries_are_read_again_when_the_file_changes(tmp_path):
    utils = write(tmp_path, "utils.py", "def init_distributed_mode(args):\n    pass\n")
    train = write(tmp_path, "train.py", TRAIN.format(imports="import utils", call="utils.init_distributed_mode(None)"))
    assert "DDP001" in codes(train)
    utils.write_text(textwrap.dedent(UTILS).lstrip())
    os.utime(utils, ns=(utils.stat().st_atime_ns, utils.stat().st_mtime_ns + 10**9))
    assert "DDP001" not in codes(train)


def test_an_import_cycle_between_local_modules_terminates(tmp_path):
    write(tmp_path, "a.py", "import b\n\n\ndef setup():\n    b.setup()\n")
    write(tmp_path, "b.py", "import a\n\n\ndef setup():\n    a.setup()\n")
    train = write(tmp_path, "train.py", TRAIN.format(imports="import a", call="a.setup()"))
    assert "DDP001" in codes(train)


LIBRARY = """
import torch


def train_one_epoch(model, loader, opt):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(model.state_dict(), "last.pt")
"""


def test_a_module_other_files_import_gets_no_process_group(tmp_path):
    engine = write(tmp_path, "engine.py", LIBRARY)
    result = fix_source(engine.read_text(), path=str(engine))
    assert "init_process_group" not in result.code and "destroy_process_group" not in result.code
    assert "DDP001" not in [d.code for d in result.diagnostics]
    program = LIBRARY + '\n\nif __name__ == "__main__":\n    train_one_epoch(None, [], None)\n'
    assert "DDP001" in [d.code for d in fix_source(textwrap.dedent(program), fix=False).diagnostics]
