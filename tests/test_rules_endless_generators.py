"""Batches drawn by step count from a generator that restarts the loader (golden endless_generator:
`data_gen = inf_generator(train_loader)`, `def inf_generator(iterable)` making `iterable.__iter__()`
again on StopIteration). Each restart is an epoch: the sampler's epoch is counted there, in either
spelling (`iter(x)`/`next(it)` or `x.__iter__()`/`it.__next__()`)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from ddpfix import check_source, fix_source
from ddpfix.syntax import drawn_from, iterated_by

CASE = Path(__file__).parent / "golden" / "endless_generator"
COUNTED = (
    "            epoch += 1\n"
    '            if isinstance(getattr(iterable, "sampler", None), DistributedSampler):\n'
    "                iterable.sampler.set_epoch(epoch)\n"
    "            iterator = iterable.__iter__()\n"
)


def _builtin_spelling(text: str) -> str:
    text = text.replace("iterable.__iter__()", "iter(iterable)").replace("iterator.__next__()", "next(iterator)")
    return text.replace("data_gen.__next__()", "next(data_gen)")


def test_the_dunder_and_builtin_spellings_are_read_alike():
    for text, made, drawn in (("iter(x)", "x", None), ("x.__iter__()", "x", None), ("next(it)", None, "it")):
        call = cst.parse_expression(text)
        assert (cst.Module([]).code_for_node(iterated_by(call)) if made else iterated_by(call)) == made
        assert (cst.Module([]).code_for_node(drawn_from(call)) if drawn else drawn_from(call)) == drawn
    assert iterated_by(cst.parse_expression("iter(f, None)")) is None  # iter(callable, sentinel)
    assert drawn_from(cst.parse_expression("it.__next__(1)")) is None


def test_each_restart_of_the_generator_sets_the_epoch():
    result = fix_source((CASE / "input.py").read_text(), path="train.py")
    assert COUNTED in result.code
    assert "    epoch = 0\n" in result.code


def test_the_builtin_spelling_gets_the_same_counting():
    result = fix_source(_builtin_spelling((CASE / "input.py").read_text()), path="train.py")
    assert COUNTED.replace("iterable.__iter__()", "iter(iterable)") in result.code


def test_a_sampler_the_script_built_is_reported_and_counted():
    text = (CASE / "expected.py").read_text()
    for added in ("    epoch = 0\n", "            epoch += 1\n"):
        text = text.replace(added, "")
    lines = text.splitlines(keepends=True)
    text = "".join(
        line
        for i, line in enumerate(lines)
        if "set_epoch" not in line and "set_epoch" not in (lines[i + 1] if i + 1 < len(lines) else "")
    )
    [d] = [d for d in check_source(text, path="train.py") if d.code == "DDP204"]
    assert "inf_generator() draws its batches with next()" in d.message and d.fix == "safe"
    assert COUNTED in fix_source(text, path="train.py").code


def test_a_generator_that_makes_its_iterator_once_needs_no_count():
    text = (
        (CASE / "input.py")
        .read_text()
        .replace(
            "        except StopIteration:\n            iterator = iterable.__iter__()\n",
            "        except StopIteration:\n            return\n",
        )
    )
    result = fix_source(text, path="train.py")
    assert "set_epoch" not in result.code and "DistributedSampler(" in result.code
