"""DDP405 for an object whose class opens its file where the module cannot be guarded (`self.csv_file =
open(filename, "w")` in `CSVLogger.__init__`): kept to rank 0 in the script, or reported without a fix."""

from __future__ import annotations

from local_files import write

from ddpfix import fix_source

LOGGER = """
class CSVLogger:
    def __init__(self, filename):
        self.csv_file = open(filename, "w")

    def writerow(self, row):
        self.csv_file.write(str(row))

    def close(self):
        self.csv_file.close()
"""

SCRIPT = """
import torch
import torch.nn as nn

from csvlog import CSVLogger

model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
log = CSVLogger("log.csv")
for step in range(2):
    loss = model(torch.randn(4, 2)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    {use}
log.close()
"""


def _run(tmp_path, use: str):
    write(tmp_path, "csvlog.py", LOGGER)
    path = write(tmp_path, "train.py", SCRIPT.format(use=use))
    result = fix_source(path.read_text(), path=str(path), cross_file=True)
    (found,) = [d for d in result.diagnostics if d.code == "DDP405"]
    return result, found


def test_object_built_and_used_in_statements_is_kept_to_rank_0(tmp_path):
    result, found = _run(tmp_path, "log.writerow(loss.item())")
    assert found.applied and "the fix builds and uses it on rank 0 only" in found.message
    assert 'if RANK == 0:\n    log = CSVLogger("log.csv")' in result.code
    assert "    if RANK == 0:\n        log.writerow(loss.item())" in result.code
    assert "if RANK == 0:\n    log.close()" in result.code
    assert result.others == {}  # csvlog.py is left as it is
    assert result.incomplete == []


DEVNULL = 'open(filename, "w") if not dist.is_initialized() or dist.get_rank() == 0 else open(os.devnull, "w")'


def _devnull_in_module(result, found) -> None:
    """The object stays on every rank; its class opens the file on rank 0, os.devnull on the others."""
    assert found.applied and "the fix has rank 0 write it there, the other ranks os.devnull" in found.message
    (change,) = result.others.values()
    assert f"self.csv_file = {DEVNULL}" in change.code
    assert result.incomplete == []


def test_object_read_in_an_expression_is_kept_and_its_class_writes_devnull_on_other_ranks(tmp_path):
    result, found = _run(tmp_path, "print(log.csv_file.name)")
    assert 'log = CSVLogger("log.csv")\n' in result.code and "    log = CSVLogger" not in result.code
    _devnull_in_module(result, found)


def test_object_handed_to_a_function_is_kept_and_its_class_writes_devnull_on_other_ranks(tmp_path):
    result, found = _run(tmp_path, "print_row(log)")
    _devnull_in_module(result, found)


def test_a_class_whose_file_is_read_back_gets_no_fix(tmp_path):
    reads = (
        LOGGER.replace("open(filename,", 'open("log.csv",')
        + '\n    def rows(self):\n        return open("log.csv").read()\n'
    )
    write(tmp_path, "csvlog.py", reads)
    path = write(tmp_path, "train.py", SCRIPT.format(use="print_row(log)"))
    result = fix_source(path.read_text(), path=str(path), cross_file=True)
    (found,) = [d for d in result.diagnostics if d.code == "DDP405"]
    assert not found.applied and found.fix == "none" and result.others == {}
    assert [i.code for i in result.incomplete] == ["DDP405"]


def test_an_object_built_alike_in_either_branch_is_kept_to_rank_0_in_both(tmp_path):
    """`log = CSVLogger("a.csv")` in one branch and `log = CSVLogger("b.csv")` in the other: both
    bindings and every use are guarded; a use before the first binding is not followed."""
    branches = 'if len("ab") > 1:\n    log = CSVLogger("a.csv")\nelse:\n    log = CSVLogger("b.csv")\n'
    write(tmp_path, "csvlog.py", LOGGER)
    path = write(
        tmp_path,
        "train.py",
        SCRIPT.format(use="log.writerow(loss.item())").replace('log = CSVLogger("log.csv")\n', branches),
    )
    result = fix_source(path.read_text(), path=str(path), cross_file=True)
    found = [d for d in result.diagnostics if d.code == "DDP405"]
    assert len(found) == 2 and all(d.applied for d in found)
    assert (
        '    if RANK == 0:\n        log = CSVLogger("a.csv")\nelse:\n    if RANK == 0:\n        log = CSVLogger("b.csv")'
        in result.code
    )
    assert "        log.writerow(loss.item())" in result.code and result.incomplete == []
    early = path.read_text().replace("opt = torch", "log.close()\nopt = torch")
    path.write_text(early)
    result = fix_source(early, path=str(path), cross_file=True)
    found = [d for d in result.diagnostics if d.code == "DDP405"]  # not kept to rank 0 here: devnull there
    assert [d.applied for d in found] == [
        True,
        True,
    ] and "    if RANK == 0:\n        log = CSVLogger" not in result.code
    assert all("the other ranks os.devnull" in d.message for d in found)


HANDLE = """
import json

import torch
import torch.nn as nn

model = nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
log = open({path}, "w")
log.write(json.dumps({{"lr": 0.1}}) + "\\n")
for step in range(2):
    loss = model(torch.randn(4, 2)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    {use}
log.close()
"""


def test_a_file_kept_open_and_written_is_opened_and_written_on_rank_0_only():
    """`log = open(path, "w")`, then `log.write(...)` as the run goes: every rank truncated and wrote the
    same file; the opening and each use become rank 0's together."""
    src = HANDLE.format(path='"log.txt"', use="log.write(str(loss.item()))\n    log.flush()")
    result = fix_source(src)
    assert [d.fix for d in result.diagnostics if d.code == "DDP405"] == ["safe"]
    out = result.code
    assert '\nif RANK == 0:\n    log = open("log.txt", "w")\n' in out, out
    assert "    if RANK == 0:\n        log.write(str(loss.item()))\n        log.flush()\n" in out, out
    assert "\nif RANK == 0:\n    log.close()\n" in out, out
    assert fix_source(out).code == out


def test_an_attribute_or_keyword_spelled_like_the_handle_is_no_use_of_it():
    """`args.log` (the folder option) and `f(log=...)` beside `log = open(...)`: other names."""
    src = "import argparse\nargs = argparse.Namespace(log='.')\n" + HANDLE.format(
        path="args.log + '/log.txt'", use="log.write(str(dict(log=1)))"
    )
    result = fix_source(src)
    assert [d.fix for d in result.diagnostics if d.code == "DDP405"] == ["safe"], result.diagnostics
    assert "if RANK == 0:\n    log = open(args.log + '/log.txt', \"w\")\n" in result.code, result.code


def test_a_file_handle_used_in_an_expression_is_opened_on_rank_zero_and_devnull_elsewhere():
    """`print(..., file=log)` cannot be guarded statement by statement: the other ranks print to
    os.devnull."""
    src = HANDLE.format(path='"log.txt"', use="print(loss.item(), file=log)")
    result = fix_source(src)
    [d] = [d for d in result.diagnostics if d.code == "DDP405"]
    assert d.fix == "safe" and "log is a file every rank opens for writing" in d.message
    assert 'open("log.txt", "w") if RANK == 0 else open(os.devnull, "w")' in result.code


def test_a_file_named_per_rank_is_left_alone():
    src = HANDLE.format(path="f\"log_{os.environ.get('RANK', 0)}.txt\"", use="log.write(str(loss.item()))")
    src = "import os\n" + src
    assert [d for d in fix_source(src).diagnostics if d.code == "DDP405"] == []
