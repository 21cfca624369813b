"""Each rule's fix as edits, for `check --format json` and `sarif`: the rule's fix made on its own
(with the fixes it needs), as 1-based line/column ranges over the original texts with their
replacement text. A fix that also edits the script's own modules (DDP201's loader factory, DDP401's
save in trainer.py) carries those edits too: every edit names its file (`path`), the script's first,
then each module in the order the fix reports them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .api import fix_source
from .diff import edits_between

if TYPE_CHECKING:
    from .engine import FileResult


def fix_edits(data: bytes | str, path: str, code: str, *, cross_file: bool = True) -> tuple[list[dict], str | None]:
    """The edits that fix the findings of one rule in this source and, with `cross_file`, in the
    script's own modules; or no edits and the reason the output guard withheld that fix."""
    try:
        res = fix_source(data, path=path, select=[code], unsafe_fixes=True, cross_file=cross_file)
    except Exception:  # the file already produced diagnostics; a failing single-rule run just has no edits
        return [], None
    reason = res.withheld.get(code)
    if reason is not None:
        return [], reason
    edits = [{"path": path, **e} for e in edits_between(res.source, res.code)]
    for other, change in res.others.items():
        edits += [{"path": other, **e} for e in edits_between(change.source, change.code)]
    return edits, None


def with_fixes(res: FileResult, *, cross_file: bool = True) -> FileResult:
    """Attach each fixable rule's edits, or why its fix was withheld (for JSON/SARIF output)."""
    if res.result is None or res.original is None:
        return res
    for code in sorted({d.code for d in res.result.diagnostics if d.fixable}):
        res.fixes[code], reason = fix_edits(res.original, res.path, code, cross_file=cross_file)
        if reason is not None:
            res.withheld[code] = reason
    return res


def by_path(edits: list[dict], default: str) -> dict[str, list[dict]]:
    """The edits grouped by file, in the order the files first appear (the script first)."""
    out: dict[str, list[dict]] = {}
    for e in edits:
        out.setdefault(e.get("path", default), []).append(e)
    return out


__all__ = ["by_path", "fix_edits", "with_fixes"]
