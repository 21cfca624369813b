"""Reading a source: Python's parse, then (for a file the rules may have something to say about)
LibCST's. A file that never mentions torch, or that cannot be a training script, is left unparsed by
LibCST: the text screens and `analysis.gate` decide from Python's tree."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from typing import TYPE_CHECKING

from .analysis.gate import cannot_train
from .errors import DdpfixError

if TYPE_CHECKING:
    import libcst as cst

# The names of the frameworks DDP008 recognises (ddpfix.analysis.names.FRAMEWORKS, TRAINER_LIBRARIES).
FRAMEWORK_WORDS = (
    r"accelerate|lightning|deepspeed|horovod|torch_xla|colossalai|fairscale|mmengine|mmcv|Trainer|fsdp|elastic|launcher"
)
_FRAMEWORK = re.compile(FRAMEWORK_WORDS)

Source = str | bytes


_BOOL_WORDS = (re.compile(r"\b(?:and|or)\b"), re.compile(rb"\b(?:and|or)\b"))
# A training script, a process group or a DDP wrap (ScriptFacts.is_training_script) cannot
# be written without one of these words; a script a framework distributes names the framework.
MIGHT_TRAIN = re.compile(r"parameters|backward|init_process_group|DistributedDataParallel|" + FRAMEWORK_WORDS)
_MIGHT_TRAIN_BYTES = re.compile(FRAMEWORK_WORDS.encode())
_IMPORTED = re.compile(r"^[ \t]*(?:from[ \t]+\.*([\w.]+)[ \t]+import|import[ \t]+([\w.]+))", re.M)
MAX_CHAIN = 300  # and/or terms LibCST can parse and render without exhausting its stack


def parse(source: Source, path: str = "<string>") -> cst.Module:
    """Parse with LibCST; a syntax error or an undecodable file becomes a one-line DdpfixError.

    Python's own parser looks first: it refuses nesting deeper than CPython allows (which LibCST's
    native parser can crash on, taking the process with it) at a fraction of LibCST's cost. Its
    other complaints are left to LibCST, which may know newer syntax than the running Python.
    """
    return _parse(source, path)[0]


def _parse(source: Source, path: str) -> tuple[cst.Module, ast.Module | None]:
    """`parse`, also returning Python's tree of the source when Python could parse it."""
    tree = python_tree(source, path)
    return libcst_parse(source, path), tree


def python_tree(source: Source, path: str) -> ast.Module | None:
    """Python's tree of the source; None where Python cannot parse it but LibCST may (LibCST reports
    what it refuses in its own words). Raises `DdpfixError` for what would crash LibCST."""
    tree = None
    try:
        tree = ast.parse(source)
        words = _BOOL_WORDS[isinstance(source, bytes)]
        longest = 0
        if len(words.findall(source)) > MAX_CHAIN:  # a long chain needs that many `and`/`or` words
            longest = max((len(n.values) for n in ast.walk(tree) if isinstance(n, ast.BoolOp)), default=0)
        if longest > MAX_CHAIN:  # flat for Python, one nesting level a term for LibCST
            raise DdpfixError(f"{path}: too deeply nested to analyse (an and/or chain of {longest} terms)")
    except SyntaxError as exc:
        if "too many nested" in exc.msg or "too many levels" in exc.msg:
            raise DdpfixError(f"{path}:{exc.lineno or 1}:{exc.offset or 1}: syntax error: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise DdpfixError(f"{path}: too deeply nested to analyse") from None
    except (ValueError, UnicodeDecodeError, LookupError):
        pass  # LibCST reports decoding problems in its own words
    return tree


def libcst_parse(source: Source, path: str) -> cst.Module:
    import libcst as cst

    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        check_syntax_only(source, path)  # Python's own message is clearer when it also fails
        raise DdpfixError(
            f"{path}:{exc.raw_line}:{exc.raw_column + 1}: syntax error: {exc.message.splitlines()[0]}"
        ) from None
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        raise DdpfixError(f"{path}: cannot decode: {exc}") from None


def might_need_ddp(source: Source, path: str | None = None) -> bool:
    """Cheap pre-filter: a file that never mentions torch (nor a framework that distributes it, whose
    scripts get DDP008's information line), and imports no module of its own folder that trains, is
    skipped without parsing."""
    if isinstance(source, bytes):
        if b"torch" in source or _MIGHT_TRAIN_BYTES.search(source) is not None:
            return True
        return b"import" in source and imports_training(source.decode("utf-8", "replace"), path)
    if "torch" in source or _FRAMEWORK.search(source) is not None:
        return True
    return "import" in source and imports_training(source, path)


IMPORT_DEPTH = 3  # how far `imports_training` follows the script's own modules through theirs
IMPORT_FILES = 50  # and how many of them it reads at most


def imports_training(text: str, path: str | None) -> bool:
    """Does the script import a module of its own folder that names one of `MIGHT_TRAIN`'s words, itself
    or through the modules of that folder it imports in turn (up to `IMPORT_DEPTH` levels)? A script
    that trains only through its modules (`Solver(loader, config).train()`, the networks and optimizers
    built in solver.py; `GMFEngine(config)` of gmf.py over an `Engine` of engine.py) need not name any
    of them, nor torch, itself."""
    if path is None or path.startswith("<"):
        return False
    folder = Path(path).parent
    seen: set[Path] = set()
    texts = [text]
    for _ in range(IMPORT_DEPTH):
        found = []
        for source in texts:
            for match in _IMPORTED.finditer(source):
                base = folder.joinpath(*(match.group(1) or match.group(2)).split("."))
                for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
                    if candidate in seen or len(seen) >= IMPORT_FILES:
                        continue
                    seen.add(candidate)
                    try:
                        if not candidate.is_file():
                            continue
                        module = candidate.read_text(errors="replace")
                    except OSError:
                        continue
                    if MIGHT_TRAIN.search(module):
                        return True
                    found.append(module)
        texts = found
    return False


def check_syntax_only(source: Source, path: str) -> str:
    """For files the pre-filter skips: still refuse undecodable or syntactically broken input (fast, C parser)."""
    try:
        text = source if isinstance(source, str) else _decode(source)
        ast.parse(source)
    except SyntaxError as exc:
        if "encoding" in exc.msg:
            raise DdpfixError(f"{path}: cannot decode: {exc.msg}") from None
        raise DdpfixError(f"{path}:{exc.lineno or 1}:{(exc.offset or 0) or 1}: syntax error: {exc.msg}") from None
    except (UnicodeDecodeError, LookupError, ValueError) as exc:
        raise DdpfixError(f"{path}: cannot decode: {exc}") from None
    return text


def _decode(data: bytes) -> str:
    return data.decode(encoding_of(data))


def encoding_of(data: bytes) -> str:
    """The source's PEP 263 encoding, as Python and LibCST read it."""
    return tokenize.detect_encoding(io.BytesIO(data).readline)[0]


# Decide from Python's tree, before LibCST parses, that a file is no training script (False: always
# parse; the tests compare both ways).
GATE = True


def not_training(text: str, tree: ast.Module, path: str) -> bool:
    """Is the file certainly no training script (what `_run` would find out after LibCST's parse and
    the analysis: no rule has anything to say but DDP000)? Its words first, then its tree."""
    if not GATE:
        return False
    where = None if path in ("<string>", "-") else path
    if not MIGHT_TRAIN.search(text) and not imports_training(text, where):
        return True
    if _TORCH_IMPORT.search(text) and _SURELY_KEPT.search(text):
        return False  # the gate would keep it: a torch script that calls backward() or sets up DDP
    return cannot_train(tree, where)


# What makes the gate keep a file at once (`_Gate.may_reach_rules`): torch imported and a call of
# `.backward(`, `init_process_group(` or `DistributedDataParallel(`. Seen in the text (a comment or a
# string matches too), it only spares the gate's walk of the tree on a training script; the analysis
# after LibCST's parse then decides, as it does for every file the gate keeps.
_TORCH_IMPORT = re.compile(r"^[ \t]*(?:import|from)[ \t]+torch\b", re.M)
_SURELY_KEPT = re.compile(r"\.backward[ \t]*\(|\binit_process_group[ \t]*\(|\bDistributedDataParallel[ \t]*\(")
