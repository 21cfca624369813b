"""DDP308 on a model shown as text after the wrap the conversion adds (`print(model)`, a logger, an
f-string, `str(model)`): shown through the plain module, so that the ranks print what a plain run
prints; a script's own wrap, a read of an attribute, and a print before the wrap are left alone."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


SCRIPT = src(
    """
    import logging

    import torch
    import torch.nn as nn

    log = logging.getLogger(__name__)


    def main():
        model = nn.Linear(2, 1)
        print("built:", model.training)
        model.to("cpu")
        print(model)
        log.info("model %s", model)
        log.info(f"model {model}")
        text = str(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
        print(repr(model), text)


    if __name__ == "__main__":
        main()
    """
)


def _lines(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines()]


def test_each_show_after_the_added_wrap_reads_the_plain_module():
    out = fix_source(SCRIPT).code
    lines = _lines(out)
    for shown in (
        "print(raw_model)",
        'log.info("model %s", raw_model)',
        'log.info(f"model {raw_model}")',
        "text = str(raw_model)",
        "print(repr(raw_model), text)",
    ):
        assert shown in lines, shown
    assert 'print("built:", model.training)' in lines  # an attribute the wrapper has: left alone
    assert "model(torch.randn(4, 2)).sum().backward()" in lines  # the forward stays the wrapper's
    assert lines.index("print(raw_model)") > lines.index(
        "model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)"
    )
    assert fix_source(out).code == out


def test_findings_name_the_plain_module_and_say_it_is_after_the_wrap():
    shows = [d for d in check_source(SCRIPT) if d.code == "DDP308"]
    assert [(d.line, d.col) for d in shows] == [(13, 11), (14, 26), (15, 23), (16, 16), (21, 16)]
    assert all(d.fix == "safe" for d in shows)
    assert shows[0].message.startswith("after the DDP wrap, model would be shown as its DDP wrapper")
    assert shows[0].message.endswith("show raw_model")


def test_a_print_before_the_wrap_is_left_alone():
    before = SCRIPT.replace('    model.to("cpu")\n    print(model)\n', '    print(model)\n    model.to("cpu")\n')
    assert before != SCRIPT
    out = fix_source(before).code
    assert "    print(model)\n" in out and "print(raw_model)" not in out


def test_a_scripts_own_wrap_prints_what_it_printed():
    own = src(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(2, 1))
        print(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
        dist.destroy_process_group()
        """
    )
    assert [d for d in check_source(own) if d.code == "DDP308"] == []


def test_a_module_level_model_shown_by_a_function_after_the_wrap():
    script = src(
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(2, 1)


        def report():
            print(model)


        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            model(torch.randn(4, 2)).sum().backward()
            opt.step()
        report()
        """
    )
    out = fix_source(script).code
    assert "    print(raw_model)\n" in out
