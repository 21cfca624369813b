"""The walks that the summaries cache per tree do not keep the tree alive."""

from __future__ import annotations

import ast
import gc
import weakref

from ddpfix.analysis import ast_reading

SOURCE = """
import torch


def train(model, loader):
    for x, y in loader:
        model(x).sum().backward()
"""


def test_cached_walks_do_not_keep_their_tree_alive():
    gc.collect()
    before = len(ast_reading._NODES), len(ast_reading._PARENTS)
    tree = ast.parse(SOURCE)
    func = tree.body[1]
    assert ast_reading.nodes(tree)[0] is tree and ast_reading.nodes(func)[0] is func
    loop = func.body[0]
    assert ast_reading.parents(func).get(loop.body[0]) is loop
    assert ast_reading.parents(func).get(loop) is None  # `func`'s own children: their parent is not kept
    assert [type(n).__name__ for n in ast_reading.calls(func)][:1] == ["Call"]
    gone = weakref.ref(tree), weakref.ref(func)
    del tree, func, loop
    gc.collect()
    assert [r() for r in gone] == [None, None]
    assert (len(ast_reading._NODES), len(ast_reading._PARENTS)) == before
