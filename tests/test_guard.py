"""The output guard: each check, on a script shape that fails it, and the fixes it must not touch."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from guard_rules import (
    AlwaysInit,
    BrokenSyntax,
    EarlyBroadcast,
    PrintX,
    ReadsDistributedFirst,
    RenameX,
    Restless,
    SetDeviceFirst,
    SilentEditor,
    TwoSteps,
    registered,
)

from ddpfix import fix_source
from ddpfix.analysis import ScriptFacts
from ddpfix.guard import process_group
from ddpfix.passes import plan_pass, with_requirements
from ddpfix.transforms import RULES

GOLDEN = Path(__file__).parent / "golden"
ALL = [r.code for r in RULES]


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def unguarded(text: str, select: list[str] | None = None) -> str:
    """What the rules' plan renders to without the guard (to show that what it withholds is broken)."""
    module = cst.parse_module(text)
    codes = select or ALL
    ctx = plan_pass(ScriptFacts(module, text), codes, with_requirements(codes), False)
    return ctx.plan.apply().code


def run_script(text: str) -> None:
    """Run a rewritten script as `python train.py` would (no torchrun: one process, no process group)."""
    exec(compile(text, "train.py", "exec"), {"__name__": "__main__"})


# ---------------------------------------------------------------------------- data dependencies
SET_DEVICE_AFTER_ITS_VALUE = src(
    """
    import os

    import torch
    import torch.distributed as dist


    def main():
        dist.init_process_group("nccl")
        device = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(device)
        model = torch.nn.Linear(2, 2).cuda(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            model(torch.randn(4, 2).cuda(device)).sum().backward()
            opt.step()


    if __name__ == "__main__":
        main()
    """
)


def test_set_device_is_not_moved_above_the_binding_it_reads():
    # DDP006 leaves this script's set_device where it is (it reads `device`, bound after init) ...
    result = fix_source(SET_DEVICE_AFTER_ITS_VALUE)
    assert result.withheld == {}
    assert 'device = int(os.environ["LOCAL_RANK"])\n    torch.cuda.set_device(device)' in result.code
    # ... and a fix that moves it above its binding anyway is withheld
    with registered(SetDeviceFirst()):
        assert "torch.cuda.set_device(device)\n    dist.init_process_group" in unguarded(
            SET_DEVICE_AFTER_ITS_VALUE, ["DDP905"]
        )
        result = fix_source(SET_DEVICE_AFTER_ITS_VALUE, select=["DDP905"])
    assert result.withheld == {
        "DDP905": 'moves `torch.cuda.set_device(device)` up above `device = int(os.environ["LOCAL_RANK"])`, '
        "which binds `device`"
    }
    [d] = [d for d in result.diagnostics if d.code == "DDP905"]
    assert not d.applied and d.format().endswith(f"(not fixed: {d.withheld})")
    assert result.code == SET_DEVICE_AFTER_ITS_VALUE


MID_FILE_IMPORT = src(
    """
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    dataset = TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    loader = DataLoader(dataset, batch_size=8, shuffle=True)

    import torch.nn as nn

    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """
)


def test_a_line_that_reads_the_setup_constants_before_they_exist_is_withheld():
    # the rules place the constants and the setup above the sampler, mid-file import or not ...
    result = fix_source(MID_FILE_IMPORT)
    assert result.withheld == {} and "DistributedSampler" in result.code
    run_script(result.code)
    # ... and a line inserted above everything that binds them is withheld
    with registered(ReadsDistributedFirst()):
        with pytest.raises(NameError):
            run_script(unguarded(MID_FILE_IMPORT, ["DDP906"]))
        result = fix_source(MID_FILE_IMPORT, select=["DDP906"])
    assert "would be read where it is not defined" in result.withheld["DDP906"]
    assert result.code == MID_FILE_IMPORT


MODULE_LEVEL_CONSTANTS = src(
    """
    import os

    import torch
    import torch.nn as nn

    WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
    DISTRIBUTED = WORLD_SIZE > 1


    def main():
        model = nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
    """
)


def test_the_setup_goes_below_the_scripts_own_constants():
    # main() is never called: the module is the entry point; the setup must follow `DISTRIBUTED = ...`
    result = fix_source(MODULE_LEVEL_CONSTANTS)
    assert result.withheld == {} and "init_process_group" in result.code
    assert result.code.index("DISTRIBUTED = WORLD_SIZE > 1") < result.code.index("if DISTRIBUTED:")
    run_script(result.code)


WRITES_METRICS = (Path(__file__).parent / "lsp_data" / "writes_metrics.py").read_text(encoding="utf-8")


def test_a_name_bound_under_a_new_rank_guard_and_read_on_every_rank_is_withheld(work, monkeypatch):
    # DDP405 puts the `with open(...)` under `if RANK == 0:`; `stats` is then unbound on rank 1
    broken = unguarded(WRITES_METRICS)
    monkeypatch.setenv("RANK", "1")  # what rank 1 runs (WORLD_SIZE 1: no process group needed)
    with pytest.raises(NameError, match="stats"):
        run_script(broken)
    result = fix_source(WRITES_METRICS)
    assert result.withheld == {
        "DDP405": 'binds `stats` under `if RANK == 0:` only, but `best = stats["loss"]` reads it on every rank'
    }
    run_script(result.code)
    assert {"DDP001", "DDP301"} <= set(result.applied_codes)


# ---------------------------------------------------------------------------- process group
HELPER_INIT = src(
    """
    import torch
    from utils import init_distributed_mode


    def main(args):
        init_distributed_mode(args)
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()


    if __name__ == "__main__":
        main(None)
    """
)


def test_a_script_that_joins_through_a_helper_gets_no_second_init():
    """The rules see the helper and add no init; a fix that would add one anyway is withheld."""
    result = fix_source(HELPER_INIT)
    assert "DDP001" not in {d.code for d in result.diagnostics}
    assert result.code.count("init_process_group") == 0 and "DDP(model" in result.code  # the wrap is kept
    with registered(AlwaysInit()):
        assert unguarded(HELPER_INIT, ["DDP904"]).count("init_process_group") == 1
        result = fix_source(HELPER_INIT, select=["DDP904"])
    reason = "the script may already join the process group (`init_distributed_mode()` at line 6)"
    assert result.withheld["DDP904"] == reason + "; it would be initialised twice"
    assert result.code == HELPER_INIT


LOCAL_MODULE_INIT = HELPER_INIT.replace(
    "from utils import init_distributed_mode", "from common import prepare"
).replace("init_distributed_mode(args)", "prepare(args)")
COMMON = 'import torch.distributed as dist\n\n\ndef prepare(args):\n    dist.init_process_group("gloo")\n'


def test_inits_in_the_scripts_own_modules_count(tmp_path):
    # a name that says nothing: only the analysis of the local module `common` can tell
    script = tmp_path / "train.py"
    script.write_text(LOCAL_MODULE_INIT)
    with registered(AlwaysInit()):
        assert fix_source(LOCAL_MODULE_INIT, select=["DDP904"]).withheld == {}  # `common` unreadable: no path
        (tmp_path / "common.py").write_text(COMMON)
        result = fix_source(LOCAL_MODULE_INIT, path=str(script), select=["DDP904"])
    assert result.withheld["DDP904"].startswith("the script already joins the process group (`prepare()` at line 6)")
    assert result.code == LOCAL_MODULE_INIT


def test_counts_see_helpers_branches_spawn_targets_and_constructors():
    def counts(text: str):
        return process_group.counts(ScriptFacts(cst.parse_module(src(text))))

    twice = counts(
        """
        import torch.distributed as dist

        def setup():
            dist.init_process_group("gloo")

        def main():
            dist.init_process_group("gloo")
            setup()
        """
    )
    # the call of setup() follows main's init, and so does the init inside setup() on that path
    assert sorted((p.text, p.via) for p in twice.repeated) == [
        ("`dist.init_process_group()`", ""),
        ("`setup()`", "a helper"),
    ]
    either = counts(
        """
        import torch.distributed as dist

        def main(cuda):
            if cuda:
                dist.init_process_group("nccl")
            else:
                dist.init_process_group("gloo")
        """
    )
    assert either.repeated == []
    spawned = counts(
        """
        import torch, torch.multiprocessing as mp
        from torch.nn.parallel import DistributedDataParallel as DDP

        def worker(rank):
            model = DDP(torch.nn.Linear(2, 2))

        def main():
            torch.distributed.init_process_group("gloo")  # the parent's group is not the workers'
            mp.spawn(worker, nprocs=2)
        """
    )
    assert len(spawned.unjoined) == 1
    built = counts(
        """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        class Trainer:
            def __init__(self):
                self.model = DDP(torch.nn.Linear(2, 2))

        def main():
            dist.init_process_group("gloo")
            Trainer()

        if __name__ == "__main__":
            main()
        """
    )
    assert built.unjoined == [] and built.repeated == []


# ---------------------------------------------------------------------------- parse, fixpoint, contract
PLAIN = src(
    """
    import torch

    x = 1
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
    print("done")
    """
)


def test_a_fix_whose_output_does_not_parse_is_withheld():
    with registered(BrokenSyntax()):
        result = fix_source(PLAIN, select=["DDP903"])
    assert result.withheld == {"DDP903": "the output would not parse: invalid syntax (line 9)"}
    assert result.code == PLAIN and result.diff == ""


def test_a_fix_that_never_settles_is_withheld():
    with registered(Restless()):
        result = fix_source(PLAIN, select=["DDP904"])
    assert result.withheld == {
        "DDP904": "the output is still not settled after 3 passes (DDP904 would change it again)"
    }
    assert result.code == PLAIN


def test_a_fix_that_settles_on_the_second_pass_is_kept_with_what_that_pass_adds():
    with registered(TwoSteps()):
        result = fix_source(PLAIN, select=["DDP905"])
    assert result.withheld == {}
    assert result.code == PLAIN + "_step = 1\n_step = 1\n"
    with registered(TwoSteps()):
        assert fix_source(result.code, select=["DDP905"]).code == result.code  # and a second apply agrees


def test_an_edit_by_a_rule_that_offers_no_fix_leaves_the_input_as_it_is():
    with registered(SilentEditor()):
        result = fix_source(PLAIN, select=["DDP906"])
    assert result.code == PLAIN
    assert result.withheld == {"DDP906": "DDP906 edits the script but offers no fix"}


def test_only_the_later_of_two_fixes_that_break_the_script_together_is_withheld():
    with registered(RenameX(), PrintX()):
        alone = [fix_source(PLAIN, select=[code]) for code in ("DDP907", "DDP908")]
        both = fix_source(PLAIN, select=["DDP907", "DDP908"])
    assert [r.withheld for r in alone] == [{}, {}] and all(r.changed for r in alone)
    assert both.withheld == {"DDP908": "`x` would be read where it is not defined"}
    assert both.code == alone[0].code  # DDP907's fix is kept


def test_a_name_the_input_already_leaves_undefined_is_not_held_against_a_fix():
    text = PLAIN.replace("x = 1\n", "")  # `x` is read by the fix below but never defined
    with registered(PrintX()):
        result = fix_source(text.replace('print("done")', 'print("done", x)'), select=["DDP908"])
    assert result.withheld == {} and "_shown = print(x)" in result.code


# ---------------------------------------------------------------------------- the goldens
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "input.py").exists())


@pytest.mark.parametrize("case", CASES)
def test_the_guard_withholds_nothing_on_the_goldens(case):
    opts_file = GOLDEN / case / "options.json"
    opts = json.loads(opts_file.read_text()) if opts_file.exists() else {}
    opts = {k: v for k, v in opts.items() if k in ("unsafe_fixes", "select", "ignore")}
    result = fix_source((GOLDEN / case / "input.py").read_bytes(), path=str(GOLDEN / case / "input.py"), **opts)
    assert result.withheld == {}  # (tests/test_golden.py compares the output itself)


EARLY = src(
    """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main():
        x = torch.zeros(2)
        dist.init_process_group("gloo")
        model = DDP(torch.nn.Linear(2, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            model(torch.randn(4, 2) + x).sum().backward()
            opt.step()


    if __name__ == "__main__":
        main()
    """
)


def test_a_collective_that_would_run_before_the_process_group_is_withheld():
    with registered(EarlyBroadcast()):
        assert "torch.distributed.broadcast(x, src=0)\n    dist.init_process_group" in unguarded(EARLY, ["DDP907"])
        result = fix_source(EARLY, select=["DDP907"])
    assert (
        result.withheld["DDP907"]
        == "`torch.distributed.broadcast(x, src=0)` would run before the process group is initialised"
    )
    assert result.code == EARLY
