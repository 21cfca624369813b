"""What must hold for any input, shared by the corpus run and the fuzzers: `check` and `diff` do not
raise (a refused input is a one-line DdpfixError), a proposed output re-parses, and applying the
fixes a second time changes nothing."""

from __future__ import annotations

import ast
import traceback

import libcst as cst

from ddpfix import fix_source
from ddpfix.errors import DdpfixError


def _crash(path: str, what: str, exc: BaseException) -> str:
    where = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{path}: {what}: {type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"


def _valid_python(source: str | bytes) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def problems(source: str | bytes, path: str = "<fuzz>", *, unsafe_fixes: bool = False) -> list[str]:
    """Everything wrong with ddpfix on `source`, as one line each (empty when all is well)."""
    out: list[str] = []
    try:
        checked = fix_source(source, path=path, fix=False)
    except DdpfixError as exc:
        checked = None  # refused cleanly (syntax error, undecodable): the diff run must refuse it too
        if _valid_python(source):
            out.append(f"{path}: refused valid Python: {exc}")
    except Exception as exc:  # noqa: BLE001 - any other exception is a crash
        return [_crash(path, "check", exc)]
    try:
        fixed = fix_source(source, path=path, unsafe_fixes=unsafe_fixes)
    except DdpfixError as exc:
        if checked is not None:
            out.append(f"{path}: diff refused what check accepted: {exc}")
        return out
    except Exception as exc:  # noqa: BLE001
        return out + [_crash(path, "diff", exc)]
    if checked is None:
        return out + [f"{path}: check refused what diff accepted"]
    if fixed.code == fixed.source:
        if fixed.diff:
            out.append(f"{path}: a diff for an unchanged file")
        return out
    new: str | bytes = fixed.data if isinstance(source, bytes) and fixed.data is not None else fixed.code
    try:
        ast.parse(new)
        cst.parse_module(new)
    except Exception as exc:  # noqa: BLE001
        return out + [f"{path}: the fixed output does not parse: {type(exc).__name__}: {exc}"]
    try:
        again = fix_source(new, path=path, unsafe_fixes=unsafe_fixes)
    except Exception as exc:  # noqa: BLE001
        return out + [_crash(path, "second diff", exc)]
    if again.code != fixed.code:
        out.append(f"{path}: not idempotent: a second apply changes it again\n{again.diff}")
    return out


def converted(source: str) -> str:
    """`source` fixed, holding the contract: nothing incomplete, `check` clean on the output (info
    findings aside), and a second fix changing nothing. The output."""
    from ddpfix import check_source

    result = fix_source(source)
    assert result.incomplete == [], [b.format() for b in result.incomplete]
    out = result.code
    assert [d for d in check_source(out) if not d.info] == [], out
    assert fix_source(out).code == out
    return out
