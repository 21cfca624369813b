"""The tree index's fast lookups give what the plain definitions give, on every golden input; the API
hands the garbage collector back as it found it."""

from __future__ import annotations

import gc
from pathlib import Path

import libcst as cst
import pytest

from ddpfix.analysis.flow import binds
from ddpfix.analysis.index import TreeIndex
from ddpfix.api import PAUSE_GC_FROM, fix_source
from ddpfix.errors import DdpfixError
from ddpfix.syntax import calls_in, child_nodes, is_statement, walk

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*/input.py"))
KINDS = (cst.FunctionDef, cst.ClassDef, cst.If, (cst.For, cst.While), cst.BaseCompoundStatement, cst.BaseSmallStatement)


def _spelled(call: cst.Call) -> str | None:
    f = call.func
    return f.attr.value if isinstance(f, cst.Attribute) else (f.value if isinstance(f, cst.Name) else None)


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.parent.name)
def test_lookups_match_plain_definitions(path: Path) -> None:
    module = cst.parse_module(path.read_bytes())
    index = TreeIndex(module)
    names = {_spelled(c) for c in index.calls} - {None}
    for name in names:
        assert index.calls_by_name(name) == [c for c in index.calls if _spelled(c) == name]
    assert index.calls_by_name("no_such_callee_anywhere") == []
    for node in list(walk(module))[::7]:
        ancestors = list(index.ancestors(node))
        for kind in KINDS:
            assert index.enclosing(node, kind) is next((a for a in ancestors if isinstance(a, kind)), None)
        site = index.site(node)
        chain = [node, *ancestors]
        expected = next(
            (
                c
                for c, up in zip(chain, chain[1:])
                if isinstance(up, (cst.Module, cst.IndentedBlock)) and is_statement(c)
            ),
            node,
        )
        assert site.stmt is expected
        above = ancestors[ancestors.index(site.block) :] if site.block in ancestors else []
        assert site.func is next((a for a in above if isinstance(a, cst.FunctionDef)), None)
        assert site.cls is next((a for a in above if isinstance(a, cst.ClassDef)), None)
        assert list(calls_in(node)) == [n for n in walk(node) if isinstance(n, cst.Call)]
    for stmt in module.body:
        assert isinstance(binds(stmt), set)


def test_collector_is_left_as_found() -> None:
    source = "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters())\n"
    source += "".join(f"setting_{k} = {k}\n" for k in range(PAUSE_GC_FROM // 10))  # long: the pause applies
    assert len(source) >= PAUSE_GC_FROM
    assert gc.isenabled()
    fix_source(source)
    assert gc.isenabled()
    gc.disable()
    try:
        fix_source(source)
        assert not gc.isenabled()  # the caller's choice stands
    finally:
        gc.enable()
    with pytest.raises(DdpfixError):
        fix_source(source + "def (:\n")
    assert gc.isenabled()  # also after an error


@pytest.mark.parametrize("path", GOLDEN[::9], ids=lambda p: p.parent.name)
def test_parents_and_order_match_a_walk(path: Path) -> None:
    module = cst.parse_module(path.read_bytes())
    index = TreeIndex(module)
    nodes = list(walk(module))
    expected = {}
    for node in nodes:
        for child in child_nodes(node):
            expected[child] = node
    assert len(index.parent) == len(expected) and set(index.parent) == set(expected)
    for child, up in expected.items():
        assert index.parent[child] is up and index.parent.get(child) is up and child in index.parent
    assert [index.order(n) for n in nodes] == list(range(len(nodes)))  # pre-order, as walked
    foreign = cst.Name("x")  # a node of no tree: no parent, and not mistaken for one while it lives
    assert index.parent.get(foreign) is None and foreign not in index.parent and module not in index.parent
    with pytest.raises(KeyError):
        index.parent[foreign]


GLOBALS = """
model = None
def load():
    global model, step
    model = 1
def outer():
    def inner():
        global model
    return inner
class Trainer:
    def fit(self):
        global step
"""


@pytest.mark.parametrize("source", [GLOBALS, *(p.read_text(encoding="utf-8", errors="replace") for p in GOLDEN[::11])])
def test_declared_global_matches_a_walk_of_each_function(source: str) -> None:
    index = TreeIndex(cst.parse_module(source))
    names = {g.name.value for n in walk(index.module) if isinstance(n, cst.Global) for g in n.names}
    for name in names | {"nothing_declares_this"}:
        expected = [
            f
            for f in index.funcs
            if any(isinstance(n, cst.Global) and any(g.name.value == name for g in n.names) for n in walk(f.body))
        ]
        assert index.declared_global.get(name, []) == expected
    if source is GLOBALS:
        assert [f.name.value for f in index.declared_global["model"]] == ["load", "outer", "inner"]
        assert [f.name.value for f in index.declared_global["step"]] == ["load", "fit"]


CALLEES = """
def helper():
    pass


def outer():
    def inner():
        pass

    inner()
    helper()


class Model:
    def step(self):
        pass

    def run(self):
        step()


if __name__ == "__main__":
    def train():
        pass

    def twice():
        pass

    def twice():
        pass

    train()
    twice()
    outer()
"""


def test_a_call_by_name_finds_the_function_its_scope_sees() -> None:
    """A closure of the calling function, a function in a block at module level (`if __name__ ==
    "__main__":`), a module-level one; never a method (`step()` in a method is no `self.step()`), nor a
    name its scope defines twice."""
    module = cst.parse_module(CALLEES)
    index = TreeIndex(module)
    callee = {c.func.value: index.callee_of(c) for c in index.calls if isinstance(c.func, cst.Name)}
    names = {k: v.name.value if v is not None else None for k, v in callee.items()}
    assert names == {
        "inner": "inner",
        "helper": "helper",
        "step": None,
        "train": "train",
        "twice": None,
        "outer": "outer",
    }
    train = next(f for f in index.funcs if f.name.value == "train")
    assert [c.func.value for c in index.callers_of(train)] == ["train"]


def test_frozen_heap_is_given_back() -> None:
    """A short script runs with the heap frozen out of the collector, and gets it back after (an error
    included); a process that froze objects itself keeps them frozen."""
    seen: list[int] = []
    real = gc.freeze

    def spy() -> None:
        real()
        seen.append(gc.get_freeze_count())

    source = "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters())\n"
    assert gc.get_freeze_count() == 0
    gc.freeze = spy  # type: ignore[assignment]
    try:
        fix_source(source)
        assert seen and seen[0] > 0  # the tree was frozen during the analysis
        assert gc.get_freeze_count() == 0 and gc.isenabled()
        with pytest.raises(DdpfixError):
            fix_source(source + "def (:\n")
        assert gc.get_freeze_count() == 0
        real()
        calls = len(seen)
        fix_source(source)
        assert len(seen) == calls and gc.get_freeze_count() > 0  # the process's own freeze stands
    finally:
        gc.freeze = real  # type: ignore[assignment]
        gc.unfreeze()


def test_node_memo_answers_once_per_node_and_arguments() -> None:
    from ddpfix.analysis.node_memo import NodeMemo

    memo, calls = NodeMemo(), []

    def answer(node, *args):
        calls.append((node, args))
        return None if args == ("none",) else (node.value, args)

    a, b = cst.Name("x"), cst.Name("x")  # equal by value, two nodes: two answers
    assert memo(a, answer) == ("x", ()) and memo(a, answer) == ("x", ())
    assert memo(b, answer) == ("x", ()) and memo(a, answer, 1) == ("x", (1,))
    assert memo(a, answer, "none") is None and memo(a, answer, "none") is None  # None is remembered too
    assert calls == [(a, ()), (b, ()), (a, (1,)), (a, ("none",))]
    for _ in range(200):  # a node made and dropped cannot take over the answer of one the memo keeps
        assert memo(cst.Name("y"), answer) == ("y", ())
    assert memo(a, answer) == ("x", ()) and len(calls) == 204
