"""The package's shape: small modules, no import cycles between them, public names between modules."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 400


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of `package` (a folder under `root`) by its dotted name; a package by its own name."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(name: str, path: Path, known: dict[str, Path]) -> dict[str, list[str]]:
    """The modules of `known` that the module `name` imports when it runs (at module level or in a
    function; not under `if TYPE_CHECKING:`), each with the names it takes from there."""
    base = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: dict[str, list[str]] = {}

    def add(target: str, what: str) -> None:
        if target in known and target != name:
            out.setdefault(target, []).append(what)

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node.test):
            for stmt in node.orelse:
                visit(stmt)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base.rsplit(".", node.level - 1)[0] if node.level > 1 else base
                source = f"{anchor}.{node.module}" if node.module else anchor
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                add(sub if sub in known else source, alias.name)  # `from . import mod` imports a module
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return out


def graph(root: Path, package: str) -> dict[str, dict[str, list[str]]]:
    known = modules(root, package)
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """Import cycles, each as `[a, b, ..., a]`: at least one when there is any (a depth-first walk)."""
    found: list[list[str]] = []
    on_cycle: set[str] = set()
    done: set[str] = set()

    def walk(node: str, path: list[str]) -> None:
        if node in path:
            cycle = path[path.index(node) :] + [node]
            if not on_cycle.intersection(cycle):
                found.append(cycle)
            on_cycle.update(cycle)
            return
        if node in done:
            return
        for target in sorted(edges.get(node, {})):
            walk(target, [*path, node])
        done.add(node)

    for node in sorted(edges):
        walk(node, [])
    return found


def _counted_lines(path: Path) -> int | None:
    """The lines that count against MAX_LINES: all of them, but a rule file's tested examples
    (`EXAMPLES = (...)` at its end, ddpfix/examples.py) do not count, and the verify probe (one
    standard-library file run in each rank before the script) is not counted at all (None)."""
    rel = path.relative_to(ROOT).as_posix()
    if rel == "ddpfix/verify/probe.py":
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    if rel.startswith("ddpfix/transforms/ddp") and "EXAMPLES = (" in lines:
        return lines.index("EXAMPLES = (")
    return len(lines)


# ----------------------------------------------------------------------------- the package
def test_modules_are_small():
    over = {
        path.relative_to(ROOT).as_posix(): lines
        for path in modules(ROOT, "ddpfix").values()
        if (lines := _counted_lines(path)) is not None and lines > MAX_LINES
    }
    assert not over, f"modules over {MAX_LINES} lines: {over}"
    rule = ROOT / "ddpfix" / "transforms" / "ddp201_missing_distributed_sampler.py"
    assert _counted_lines(rule) < len(rule.read_text(encoding="utf-8").splitlines()), "examples found"


def test_no_import_cycles_between_modules():
    edges = graph(ROOT, "ddpfix")
    assert len(edges) > 100 and edges["ddpfix.api"], "the walk found the package's modules and their imports"
    found = cycles(edges)
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_modules_import_only_public_names_from_each_other():
    private = [
        f"{module}: {name} from {target}"
        for module, targets in graph(ROOT, "ddpfix").items()
        for target, names in targets.items()
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert not private, private


# ----------------------------------------------------------------------------- the walk itself
def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    for rel, text in files.items():
        path = tmp_path / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return graph(tmp_path, "pkg")


def test_the_walk_finds_cycles_through_relative_absolute_and_deferred_imports(tmp_path):
    edges = _package(
        tmp_path,
        {
            "__init__.py": "from .a import run\n",
            "a.py": "from .sub import b\ndef run():\n    pass\n",
            "sub/__init__.py": "",
            "sub/b.py": "import pkg.c\n",
            "sub/d.py": "from .. import a\n",
            "c.py": "def later():\n    from .sub.b import x\n",
        },
    )
    assert edges["pkg"] == {"pkg.a": ["run"]}
    assert edges["pkg.a"] == {"pkg.sub.b": ["b"]}  # `from .sub import b`: the module b, not the package
    assert edges["pkg.sub.b"] == {"pkg.c": ["pkg.c"]}
    assert edges["pkg.sub.d"] == {"pkg.a": ["a"]}
    assert cycles(edges) == [["pkg.sub.b", "pkg.c", "pkg.sub.b"]]  # the import inside a function counts


def test_the_walk_leaves_out_type_checking_imports_and_finds_a_package_importing_its_importer(tmp_path):
    edges = _package(
        tmp_path,
        {
            "__init__.py": "from .plan import Plan\n",
            "plan.py": "from .apply import apply\nclass Plan:\n    pass\n",
            "apply.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .plan import Plan\n",
            "rule.py": "from . import Plan\n",
            "other.py": "import typing\nif typing.TYPE_CHECKING:\n    from .rule import x\nelse:\n    from .plan import Plan\n",
        },
    )
    assert "pkg.plan" not in edges["pkg.apply"] and edges["pkg.other"] == {"pkg.plan": ["Plan"]}
    assert cycles(edges) == []
    edges["pkg.plan"]["pkg.rule"] = ["x"]  # the package imports plan, plan imports rule, rule the package
    assert cycles(edges) == [["pkg", "pkg.plan", "pkg.rule", "pkg"]]
