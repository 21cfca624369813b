"""One analysis per document version, shared by diagnostics and every code action.

`Analysis` holds the text of one document version, its parse, its rule options and the results asked
for so far (diagnostics first, then whatever fixes code actions need), so a code action on an
unchanged document neither re-parses it nor re-runs what the diagnostics already ran, and one fix is
computed once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ..api import Parsed, fix_parsed, parse_source
from ..diagnostic import Diagnostic, Result
from ..errors import DdpfixError
from .settings import RuleOptions

log = logging.getLogger(__name__)

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

    @classmethod
    def run(cls, text: str, version: int | None, options: RuleOptions, path: str = "<editor>") -> "Analysis":
        a = cls(text=text, version=version, options=options, path=path)
        try:
            a.parsed = parse_source(text, path)
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

    def fixed(self, codes: tuple[str, ...] | None, unsafe: bool) -> Result | None:
        """The document with these rules' fixes (None: the configured rules) applied; cached.

        A single rule's fix brings the fixes it needs (DDP201's sampler brings DDP001's process
        group); that is the engine's job, and so is the output guard: a fix it withholds is not in the
        result, and why is added to `withheld`. None when the fix cannot be computed."""
        key: FixKey = (codes, unsafe)
        if key not in self.fixes:
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
            self.fixes[key] = res
            if res is not None:
                for code, reason in res.withheld.items():
                    self.withheld.setdefault(code, reason)
        return self.fixes[key]


__all__ = ["Analysis"]
