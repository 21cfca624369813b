"""Output formats for `ddpfix check`: text, json, sarif (2.1.0) and github (workflow annotations)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

from . import __version__
from .contract import judged
from .diagnostic import NONE, SAFE, Diagnostic
from .diff import apply_edits, edits_between
from .engine import FileResult
from .fix_edits import by_path
from .rule import Rule
from .suppress import UNUSED
from .transforms import RULES

FORMATS = ("text", "json", "sarif", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def all_rules() -> list[Rule]:
    return [UNUSED, *sorted(RULES, key=lambda r: r.code)]


def rule_by_code() -> dict[str, Rule]:
    return {r.code: r for r in all_rules()}


# ---------------------------------------------------------------------------------------- edits
# ---------------------------------------------------------------------------------------- records
def _withheld(res: FileResult, d: Diagnostic) -> str | None:
    """Why the output guard withheld this finding's fix: in the run that made the result (apply's
    settings) or in the run of this rule's fix alone (the edits shown)."""
    return d.withheld or res.withheld.get(d.code)


def _fix_of(res: FileResult, d: Diagnostic) -> dict | None:
    if d.fix == NONE:
        return None
    rule = rule_by_code().get(d.code)
    withheld = _withheld(res, d)
    return {
        "applicability": d.fix,
        "message": f"apply {d.code}'s fix"
        + (" (unsafe: needs --unsafe-fixes)" if d.fix != SAFE else "")
        + (f": {rule.name}" if rule else ""),
        # the edits fix every finding of this rule in the file (and the fixes it needs, e.g. the process group)
        "edits": [] if withheld else res.fixes.get(d.code, []),
        "withheld": withheld,  # null, or why the output guard keeps this fix out (docs/output.md)
    }


def _contract(d: Diagnostic) -> dict | None:
    """The invariant of the DDP contract this finding breaks (docs/contract.md), or None."""
    inv = None if d.info else judged(d.code)
    return None if inv is None else {"invariant": inv.number, "key": inv.key, "label": inv.label}


def records(results: Iterable[FileResult]) -> list[dict]:
    """One JSON-ready dict per diagnostic, fix included."""
    by_code = rule_by_code()
    out = []
    for res in results:
        if res.result is None:
            continue
        for d in res.result.diagnostics:
            rule = by_code.get(d.code)
            out.append(
                {
                    "path": res.path,
                    "code": d.code,
                    "name": rule.name if rule else None,
                    "message": d.message,
                    "line": d.line,
                    "col": d.col,
                    "end_line": d.end_line,
                    "end_col": d.end_col,
                    "severity": "info" if d.info else "problem",
                    "fix": _fix_of(res, d),
                    "contract": _contract(d),
                }
            )
    return out


def to_json(results: Iterable[FileResult]) -> str:
    return json.dumps(records(results), indent=2, ensure_ascii=False)


# ---------------------------------------------------------------------------------------- SARIF
def _uri(path: str) -> tuple[str, str | None]:
    """(uri, uriBaseId): relative paths are relative to %SRCROOT% (the working directory)."""
    if path == "-":
        return "stdin", None
    p = Path(path)
    if p.is_absolute():
        return p.as_uri(), None
    return quote(p.as_posix()), "%SRCROOT%"


def _artifact(path: str) -> dict:
    uri, base = _uri(path)
    return {"uri": uri, **({"uriBaseId": base} if base else {})}


def _region(line: int, col: int, end_line: int, end_col: int) -> dict:
    return {"startLine": line, "startColumn": col, "endLine": end_line, "endColumn": end_col}


def _what(rule: Rule) -> str:
    """The first paragraph of the rule's `## What` section."""
    text = rule.docs.split("## What", 1)[-1].split("##", 1)[0].strip()
    return " ".join(text.split("\n\n", 1)[0].split()) or rule.message


def to_sarif(results: list[FileResult], errors: Iterable[str] = ()) -> dict:
    rules = all_rules()
    index = {r.code: i for i, r in enumerate(rules)}
    sarif_rules = [
        {
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": r.message},
            "fullDescription": {"text": _what(r)},
            "help": {"text": r.docs.strip(), "markdown": r.docs.strip()},
            "defaultConfiguration": {"level": "note" if r.code == UNUSED.code or r.info else "error"},
            "properties": {"fix": r.fix},
        }
        for r in rules
    ]
    sarif_results = []
    for res in results:
        if res.result is None:
            continue
        artifact = _artifact(res.path)
        for d in res.result.diagnostics:
            item: dict = {
                "ruleId": d.code,
                "level": "note" if d.code == UNUSED.code or d.info else "error",
                "message": {"text": d.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": artifact,
                            "region": _region(d.line, d.col, d.end_line, d.end_col),
                        }
                    }
                ],
                "properties": {"fix": d.fix},
            }
            contract = _contract(d)
            if contract:
                item["properties"]["contract"] = contract
            withheld = _withheld(res, d) if d.fix != NONE else None
            if withheld:
                item["properties"]["withheld"] = withheld
            if d.code in index:
                item["ruleIndex"] = index[d.code]
            edits = res.fixes.get(d.code) if d.fix != NONE and not withheld else None
            if edits:
                item["fixes"] = [
                    {
                        "description": {"text": f"{d.code} fix ({d.fix})"},
                        "artifactChanges": [  # one per file the fix edits: the script, then its modules
                            {
                                "artifactLocation": artifact if file == res.path else _artifact(file),
                                "replacements": [
                                    {
                                        "deletedRegion": _region(e["line"], e["col"], e["end_line"], e["end_col"]),
                                        "insertedContent": {"text": e["content"]},
                                    }
                                    for e in file_edits
                                ],
                            }
                            for file, file_edits in by_path(edits, res.path).items()
                        ],
                    }
                ]
            sarif_results.append(item)
    errors = list(errors)
    run = {
        "tool": {
            "driver": {"name": "ddpfix", "version": __version__, "semanticVersion": __version__, "rules": sarif_rules}
        },
        "results": sarif_results,
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(os.getcwd()).as_uri() + "/"}},
        "invocations": [
            {
                "executionSuccessful": not errors,
                "toolExecutionNotifications": [{"level": "error", "message": {"text": e}} for e in errors],
            }
        ],
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


# ---------------------------------------------------------------------------------------- GitHub
def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def to_github(results: Iterable[FileResult]) -> list[str]:
    """`::error file=…,line=…::message` workflow commands (GitHub shows them on the diff)."""
    out = []
    for res in results:
        if res.result is None:
            continue
        for d in res.result.diagnostics:
            level = "notice" if d.info else ("warning" if d.code == UNUSED.code else "error")
            props = ",".join(
                f"{k}={_escape_property(str(v))}"
                for k, v in (
                    ("title", f"ddpfix ({d.code})"),
                    ("file", res.path),
                    ("line", d.line),
                    ("col", d.col),
                    ("endLine", d.end_line),
                    ("endColumn", d.end_col),
                )
            )
            out.append(f"::{level} {props}::{_escape_data(d.format(res.path))}")
    return out


__all__ = ["FORMATS", "records", "to_json", "to_sarif", "to_github", "edits_between", "apply_edits", "all_rules"]
