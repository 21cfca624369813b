"""Reported positions equal LibCST's PositionProvider, whether they come from one recording render of
the whole module or from rendering only the statement that holds the node."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from ddpfix.analysis.index import TreeIndex
from ddpfix.positions import StatementPositions

GOLDEN = Path(__file__).parent / "golden"

LAYOUTS = {
    "crlf": "import torch\r\nx = (1,\r\n     2)\r\n",
    "cr only": 'import torch\rx = 1\rif x:\r\ty = """a\rb"""\r',
    "form feed, tabs": "import torch\n\x0c\ndef f():\n\treturn [\n\t\t1,  # c\n\t]\n",
    "empty": "",
    "blank": "\n\n",
    "continuation, one-line class": "x = f'{1}' \\\n    'a'\n@dec\nclass A: pass\n",
    "elif, else-if, one-line suites": "if a:\n  x = 1\nelif b: y(); z()\nelse:\n  if c: z\n  else:\n    w\n",
    "try, except*, finally": "try:\n    a()\nexcept (E, F) as e:\n    b\nelse:\n    c\nfinally:\n    d\ntry:\n    a\nexcept* E:\n    pass\n",
    "match": "match cmd:\n    case [x, y]:\n        go(x)\n    case {'k': v} if v:\n        pass\n    case _:\n        stop()\n",
    "async": "async def f(loader):\n    async with lock as l, other:\n        async for b in loader:\n            await step(b)\n",
    "decorators and comments": "# head\n\n@a.b(c=1)\n# between\n@d\n\ndef f(x: int = 1, *a, **k) -> None:\n    '''doc'''\n    # lead\n    return x\n\n\nclass C(B, metaclass=M):\n    @property\n    def p(self): return 1\n",
    "semicolons": "import torch; x = 1; y = torch.zeros(2)\nfor i in range(2): print(i); continue\n",
    "non-ASCII text": "s = 'é中文'; model = Net()  # ç\nif s == 'ü': print(s, model)\n",
    "parenthesised statements": "(a) = 1\n(\n    b\n)\nwith (open(p) as f,\n      open(q) as g):\n    pass\n",
    "global, del, nested": "def f():\n    global g\n    def h():\n        nonlocal_x = 1\n        del nonlocal_x\n    return h\n",
    "no trailing newline after a block": "if x:\n    y = 1",
    "indents of several widths": "class A:\n  def f(self):\n      if x:\n          pass\n      match y:\n       case 1:\n         z()\n",
    "decorator in parentheses": "@(\n    dec)\ndef f():\n    pass\n",
    "byte order mark": "\ufeffimport torch\nx = 1",
}
SLOW_PATH = {"decorator in parentheses"}  # Python puts the decorator on its second line: the whole module is rendered
SOURCES = {p.parent.name: p.read_bytes() for p in sorted(GOLDEN.glob("*/input.py"))} | LAYOUTS


def _text(module: cst.Module, source: str | bytes) -> str:
    return source.decode(module.encoding) if isinstance(source, bytes) else source


@pytest.mark.parametrize("name", list(SOURCES))
def test_module_positions_match_position_provider(name):
    module = cst.parse_module(SOURCES[name])
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    facts = TreeIndex(module)
    assert all(facts.position(node) == rng for node, rng in expected.items())


@pytest.mark.parametrize("name", list(SOURCES))
def test_statement_positions_match_position_provider(name):
    source = SOURCES[name]
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    facts = TreeIndex(module)
    positions = StatementPositions(module, _text(module, source), facts.parent)
    wrong = [
        (type(n).__name__, positions[n], rng)
        for n, rng in expected.items()
        if n in facts.parent and positions[n] != rng
    ]
    assert not wrong, wrong[:5]
    if name not in SLOW_PATH and name != "byte order mark":
        assert positions._whole is None, "rendered the whole module instead of the statements"
    # the nodes outside every statement (whitespace, the module's own range) go the slow way, and agree too
    assert all(positions[n] == rng for n, rng in expected.items())


def test_a_statement_the_two_parsers_place_differently_is_not_trusted():
    source = "x = 1\ny = 2\n"
    module = cst.parse_module(source)
    facts = TreeIndex(module)
    other = ast.parse("x = 1\n\ny = 2\n")  # puts `y = 2` on line 3, where the text has nothing
    positions = StatementPositions(module, source, facts.parent, other)
    assert positions[module.body[1]].start.line == 2  # the render did not match there: the whole module's positions
    assert positions._whole is not None
