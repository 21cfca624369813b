"""DDP305 keeps the order of what a plain run prints: the optimizer's move below the wrap takes no
print past another print (golden optimizer_print_order has the whole conversion, run both ways)."""

from __future__ import annotations

from pathlib import Path

from ddpfix import check_source, fix_source

INPUT = (Path(__file__).parent / "golden" / "optimizer_print_order" / "input.py").read_text()


def ddp305(src):
    return [d for d in check_source(src) if d.code == "DDP305"]


def _order(code: str, *names: str) -> list[int]:
    return [code.index(f"print({n})") for n in names]


def test_move_that_would_reorder_prints_offers_no_fix_and_the_conversion_keeps_the_order():
    [d] = ddp305(INPUT)
    assert d.fix == "none"
    assert "moving `print(optimizer)` below `print(criterion)` would change the order" in d.message
    out = fix_source(INPUT).code
    assert _order(out, "model", "optimizer", "criterion") == sorted(_order(out, "model", "optimizer", "criterion"))
    assert out.index("model = DDP(") < out.index("optimizer = torch.optim.Adam(")  # moved whole, by a later pass


def test_move_past_statements_that_print_nothing_is_made():
    src = INPUT.replace("    print(criterion)\n", "")
    [d] = ddp305(src)
    assert d.fix == "safe"
    out = fix_source(src).code
    assert out.index("model = DDP(") < out.index("optimizer = torch.optim.Adam(")
