"""The values every entry point hands around: a diagnostic and the result of fixing a source."""

from __future__ import annotations

from dataclasses import dataclass, field

SAFE = "safe"
UNSAFE = "unsafe"
NONE = "none"


@dataclass(frozen=True)
class Diagnostic:
    """One finding. Lines are 1-based, columns are 1-based code points (like SARIF)."""

    code: str
    message: str
    line: int
    col: int
    end_line: int
    end_col: int
    fix: str = NONE  # "safe" | "unsafe" | "none": the fix level available for this finding
    applied: bool = False  # whether the fix of this finding is part of Result.code
    withheld: str | None = None  # why the output guard kept this finding's fix out of Result.code
    info: bool = False  # an information line (ddpfix leaves a framework's script alone), not a problem

    @property
    def fixable(self) -> bool:
        return self.fix != NONE

    def format(self, path: str = "-") -> str:
        if self.withheld is not None:
            return f"{path}:{self.line}:{self.col}: {self.code} {self.message} (not fixed: {self.withheld})"
        mark = " [*]" if self.fix == SAFE else (" [unsafe fix]" if self.fix == UNSAFE else "")
        if self.info:
            mark = " [info]"
        return f"{path}:{self.line}:{self.col}: {self.code}{mark} {self.message}"

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "message": self.message,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line,
            "end_col": self.end_col,
            "fix": self.fix,
            "applied": self.applied,
            "withheld": self.withheld,
            "severity": "info" if self.info else "problem",
        }


@dataclass
class FileChange:
    """One of the script's own modules as a cross-file fix leaves it (`Result.others`)."""

    path: str  # the module's file, found from the script's path (relative when that path is)
    source: str  # its text as it was read
    code: str  # its new text
    data: bytes  # the new text in the file's own encoding
    original: bytes  # the file's bytes as they were read (`apply` refuses a file changed since)
    codes: list[str] = field(default_factory=list)  # the rules whose fixes edit it
    diff: str = ""  # unified diff of `source` to `code`


@dataclass
class Result:
    """What `fix_source` returns: the new code, every diagnostic and the unified diff."""

    source: str
    code: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    diff: str = ""
    data: bytes | None = None  # the new source as bytes in the file's own encoding (bytes input only)
    incomplete: list = field(default_factory=list)  # contract.Incomplete: how `code` breaks the DDP contract
    # the script's own modules the fix edits too, by path (cross-file fixes only: `fix_project`)
    others: dict[str, FileChange] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """Does the fix change this script (`others` may change even so: see `changed_files`)?"""
        return self.code != self.source

    @property
    def changed_files(self) -> bool:
        """Does the fix change the script or any of its modules?"""
        return self.changed or any(c.code != c.source for c in self.others.values())

    @property
    def full_diff(self) -> str:
        """One unified diff over every file the fix changes: the script, then each module."""
        return self.diff + "".join(c.diff for c in self.others.values())

    @property
    def applied_codes(self) -> list[str]:
        return sorted({d.code for d in self.diagnostics if d.applied})

    @property
    def withheld(self) -> dict[str, str]:
        """Rule code -> why the output guard withheld that rule's fix (see docs/output.md)."""
        return {d.code: d.withheld for d in sorted(self.diagnostics, key=lambda d: d.code) if d.withheld is not None}
