"""`# ddpfix: ignore[...]`: silences the finding and its fix, on the line or the line above; DDP000 for unused ones."""

from __future__ import annotations

import textwrap

import pytest

import ddpfix
from ddpfix.suppress import scan, selected

TRAIN = textwrap.dedent(
    """\
    import torch
    from torch.utils.data import DataLoader


    def main():
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader([1, 2], batch_size=1)
        for epoch in range(2):
            for x in loader:
                opt.step()
            print(epoch){print_comment}
            {save_above}torch.save(model.state_dict(), "x.pt"){save_comment}


    if __name__ == "__main__":
        main()
    """
)


def script(print_comment="", save_above="", save_comment=""):
    if save_above:
        save_above = save_above + "\n        "
    return TRAIN.format(print_comment=print_comment, save_above=save_above, save_comment=save_comment)


def codes(src, **kw):
    return [d.code for d in ddpfix.check_source(src, **kw)]


def test_baseline_reports_print_and_save():
    found = codes(script())
    assert "DDP406" in found and "DDP401" in found


def test_trailing_comment_silences_finding_and_fix():
    src = script(print_comment="  # ddpfix: ignore[DDP406]")
    assert "DDP406" not in codes(src)
    result = ddpfix.fix_source(src)
    assert "DDP406" not in [d.code for d in result.diagnostics]
    # the print stays unguarded, the save (not silenced) is guarded
    assert "        print(epoch)  # ddpfix: ignore[DDP406]\n" in result.code
    assert "if RANK == 0:\n            torch.save(" in result.code
    compile(result.code, "<fixed>", "exec")


def test_comment_on_the_line_above_silences_the_next_line():
    src = script(save_above="# ddpfix: ignore[DDP401]")
    assert "DDP401" not in codes(src)
    result = ddpfix.fix_source(src)
    assert "        # ddpfix: ignore[DDP401]\n        torch.save(" in result.code
    assert "DDP000" not in [d.code for d in result.diagnostics]


def test_comment_block_above_may_hold_an_explanation():
    src = script(save_above="# ddpfix: ignore[DDP401]\n        # every rank writes its own shard elsewhere")
    assert "DDP401" not in codes(src)


def test_blank_line_detaches_a_suppression():
    src = script(save_above="# ddpfix: ignore[DDP401]\n")
    found = codes(src)
    assert "DDP401" in found and "DDP000" in found


def test_bare_ignore_silences_every_rule_on_its_line():
    src = script(print_comment="  # ddpfix: ignore")
    assert "DDP406" not in codes(src)
    assert "DDP000" not in codes(src)


def test_other_code_does_not_silence_and_is_reported_unused():
    src = script(print_comment="  # ddpfix: ignore[DDP401]")
    diags = ddpfix.check_source(src)
    assert "DDP406" in [d.code for d in diags]
    unused = [d for d in diags if d.code == "DDP000"]
    assert len(unused) == 1
    assert unused[0].line == 12 and "unused: DDP401" in unused[0].message
    assert unused[0].col == 23  # the '#' of the directive


def test_unknown_code_is_reported():
    src = script(print_comment="  # ddpfix: ignore[DDP406, DDP999]")
    diags = ddpfix.check_source(src)
    assert "DDP406" not in [d.code for d in diags]
    (unused,) = [d for d in diags if d.code == "DDP000"]
    assert unused.message == "unused suppression (unknown: DDP999)"


def test_bare_unused_suppression():
    src = script(save_comment="  # ddpfix: ignore").replace("opt.step()", "opt.step()  # ddpfix: ignore")
    diags = ddpfix.check_source(src)
    unused = [d for d in diags if d.code == "DDP000"]
    assert [d.line for d in unused] == [11]


def test_unused_not_reported_for_rules_not_selected():
    src = script(print_comment="  # ddpfix: ignore[DDP406]")
    # DDP406 does not run: its suppression is not judged
    assert "DDP000" not in codes(src, select=["DDP401", "DDP000"])
    # DDP000 itself can be switched off
    src2 = script(print_comment="  # ddpfix: ignore[DDP401]")
    assert "DDP000" not in codes(src2, ignore=["DDP000"])
    assert "DDP000" not in codes(src2, select=["DDP4"])


def test_directive_inside_a_string_is_not_a_suppression():
    src = script().replace("print(epoch)", 'print("# ddpfix: ignore[DDP406]")')
    assert "DDP406" in codes(src)


def test_suppressed_required_fix_is_not_made_but_dependents_still_fix():
    src = script().replace(
        "    model = torch.nn.Linear(2, 2)", "    model = torch.nn.Linear(2, 2)  # ddpfix: ignore[DDP001, DDP301]"
    )
    result = ddpfix.fix_source(src)
    found = {d.code for d in result.diagnostics}
    assert not found & {"DDP001", "DDP301", "DDP000"}
    assert "init_process_group" not in result.code and "DistributedDataParallel" not in result.code
    assert "DistributedSampler" in result.code
    compile(result.code, "<fixed>", "exec")


def test_crlf_source_keeps_line_numbers():
    src = script(print_comment="  # ddpfix: ignore[DDP406]").replace("\n", "\r\n")
    assert "DDP406" not in codes(src)
    assert "DDP401" in codes(src)


def test_bytes_source_and_pre_filter():
    src = script(print_comment="  # ddpfix: ignore[DDP406]").encode()
    assert "DDP406" not in codes(src)
    # a source with no directive never pays for tokenizing
    assert scan("x = 1\n") is None


def test_not_a_training_script_reports_only_unknown_codes():
    src = "import torch\n\ntorch.save({}, 'x.pt')  # ddpfix: ignore[DDP401]\nx = 1  # ddpfix: ignore\ny = 2  # ddpfix: ignore[NOPE1]\n"
    diags = ddpfix.check_source(src)
    assert [(d.code, d.line) for d in diags] == [("DDP000", 5)]


@pytest.mark.parametrize(
    "comment,codes_",
    [
        ("# ddpfix: ignore", None),
        ("# ddpfix: ignore[DDP401]", ("DDP401",)),
        ("#ddpfix:ignore[ddp401,DDP406 ]", ("DDP401", "DDP406")),
        ("# noqa  # ddpfix: ignore[DDP401]", ("DDP401",)),
    ],
)
def test_scan_spellings(comment, codes_):
    sup = scan(f"x = 1  {comment}\n")
    assert sup is not None and sup.items[0].codes == codes_ and sup.items[0].target == 1


def test_selected_mirrors_prefix_matching():
    assert selected(None, None)
    assert selected(["ALL"], None)
    assert selected(["DDP"], None) and selected(["DDP0"], None)
    assert not selected(["DDP4"], None)
    assert not selected(None, ["DDP000"])
