"""One analysis per document version, shared by diagnostics and every code action.

`Analysis` holds the text of one document version, its parse, its rule options and the results asked
for so far (diagnostics first, then whatever fixes code actions need), so a code action on an
unchanged document neither re-parses it nor re-runs what the diagnostics already ran, and one fix is
computed once.

Fixes are also computed ahead, in a worker thread (`precompute.py`): every engine run (the analysis
and each fix) holds `ENGINE`, so two never overlap, and a fix asked for while the worker computes it
waits for that result instead of computing it again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ..api import Parsed, fix_parsed, parse_source
from ..diagnostic import Diagnostic, Result
from ..errors import DdpfixError
from .reparse import Statements, reparse
from .settings import RuleOptions

log = logging.getLogger(__name__)

ENGINE = threading.Lock()  # held by every engine run of the server (analysis, fixes)

FixKey = tuple[tuple[str, ...] | None, bool]  # (selected codes or None for the configured set, unsafe)


@dataclass
class Analysis:
    text: str
    version: int | None
    options: RuleOptions
    path: str = "<editor>"
    error: str | None = None  # syntax error, undecodable text or an internal error: no diagnostics
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fixes: dict[FixKey, Result | None] = field(default_factory=dict)
    parsed: Parsed | None = None
    withheld: dict[str, str] = field(default_factory=dict)  # code -> why a fix computed so far was withheld
    shown: int = 0  # how many of `withheld` the diagnostics published last say
    memo: dict = field(default_factory=dict)  # what code actions derive from a fix (DDP204's added lines)
    statements: Statements | None = None  # its top-level statements, for the next version's parse

    @classmethod
    def run(
        cls,
        text: str,
        version: int | None,
        options: RuleOptions,
        path: str = "<editor>",
        previous: Statements | None = None,
    ) -> "Analysis":
        """Analyse `text`; `previous`, the statements of an earlier version of the document, spares
        parsing the top-level statements whose text is unchanged (`reparse.py`)."""
        a = cls(text=text, version=version, options=options, path=path)
        try:
            with ENGINE:
                a.parsed, a.statements = reparse(text, path, previous)
                result = fix_parsed(
                    a.parsed, select=options.select, ignore=options.ignore, fix=False, cross_file=options.cross_file
                )
        except DdpfixError as exc:
            a.error = str(exc)
        except (RecursionError, MemoryError) as exc:
            a.error = f"{path}: cannot analyse: {type(exc).__name__}"
        except Exception as exc:  # an engine bug must not take the server down
            log.exception("internal error analysing %s", path)
            a.error = f"{path}: internal error ({type(exc).__name__}: {exc})"
        else:
            a.diagnostics = result.diagnostics
        return a

    def matches(self, text: str, version: int | None, options: RuleOptions) -> bool:
        return self.version == version and self.options == options and self.text == text

    def fixed(
        self, codes: tuple[str, ...] | None, unsafe: bool, stop: Callable[[], bool] | None = None
    ) -> Result | None:
        """The document with these rules' fixes (None: the configured rules) applied; cached.

        A single rule's fix brings the fixes it needs (DDP201's sampler brings DDP001's process
        group); that is the engine's job, and so is the output guard: a fix it withholds is not in the
        result, and why is added to `withheld`. None when the fix cannot be computed, or when `stop()`
        says, once the engine is free, that it is no longer wanted (then nothing is cached)."""
        key: FixKey = (codes, unsafe)
        if key in self.fixes:
            return self.fixes[key]
        with ENGINE:
            if key in self.fixes:  # computed by the other thread while this one waited
                return self.fixes[key]
            if stop is not None and stop():
                return None
            try:
                parsed = self.parsed if self.parsed is not None else parse_source(self.text, self.path)
                cross = self.options.cross_file  # the script's own modules may be edited too (Result.others)
                if codes is None:
                    res = fix_parsed(
                        parsed,
                        select=self.options.select,
                        ignore=self.options.ignore,
                        unsafe_fixes=unsafe,
                        cross_file=cross,
                    )
                else:
                    res = fix_parsed(parsed, select=list(codes), unsafe_fixes=unsafe, cross_file=cross)
            except Exception:  # DdpfixError cannot happen for a text that analysed; anything else is a bug
                log.exception("internal error fixing %s with %s", self.path, key)
                res = None
            if res is not None:
                for code, reason in res.withheld.items():
                    self.withheld.setdefault(code, reason)
            self.fixes[key] = res  # last: a reader that finds the result finds its reasons too
        return res


__all__ = ["Analysis", "ENGINE", "FixKey"]
