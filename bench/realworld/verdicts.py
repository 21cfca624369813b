"""Verdicts of the real-script corpus: an entry's failure classes, the judgement of an
already-distributed script's findings and of the lines a safe apply changed, and the figures of a run.

Pure functions over the runner's result records (no mirrors, no runs), so that every rule can be
tested with a crafted result.
"""

from __future__ import annotations

import difflib

VERIFY_CHECKS = ("completes", "ddp", "shards", "epoch_order", "params", "files", "collectives", "probe")
CHECK_STATUSES = ("pass", "fail", "n/a")

# Failure classes, in the order a verdict names them first.
CLASSES = (
    "setup-error",
    "original-fails",
    "apply-error",
    "unconverted",
    "converted-unexpectedly",
    "incomplete",
    "rewrite-syntax",
    "not-idempotent",
    "rewrite-breaks-single",
    "rewrite-differs-single",
    *(f"verify-{c}-fail" for c in VERIFY_CHECKS),
    *(f"verify-{c}-n/a" for c in VERIFY_CHECKS),
    "verify-unexpected",
    "verify-error",
    "false-finding",
    "missed-finding",
    "ddp-script-changed",
)


# ---------------------------------------------------------------- single-GPU scripts


def check_mismatches(result: dict) -> list[dict]:
    """Each verify check whose status is not the one the entry declares (``expected_checks``; a check
    that ran but is not declared is expected to pass): ``{check, expected, got}``."""
    ver = result.get("verify") or {}
    got = {k: v for k, v in (ver.get("checks") or {}).items() if k in VERIFY_CHECKS}
    if ver.get("error") or not got:
        return []
    declared = result.get("expected_checks") or {}
    out = []
    for name in VERIFY_CHECKS:
        if name not in got and name not in declared:
            continue
        want, status = declared.get(name, "pass"), got.get(name, "n/a")  # a check not reported judged nothing
        if status != want:
            out.append({"check": name, "expected": want, "got": status})
    return out


def mismatch_class(m: dict) -> str:
    if m["got"] == "fail":
        return f"verify-{m['check']}-fail"
    if m["got"] == "n/a" and m["expected"] == "pass":
        return f"verify-{m['check']}-n/a"
    return "verify-unexpected"  # a pass where the entry declared n/a or fail, or n/a where it declared fail


def classify(result: dict) -> list[str]:
    """The failure classes of one entry's result (empty list: pass)."""
    cls = []
    if result.get("setup_error"):
        return ["setup-error"]
    orig = result.get("original")
    if result["kind"] == "ddp":
        if orig is not None and orig["rc"] != 0:
            cls.append("original-fails")
        if result.get("check_error") or result.get("diff_error"):
            cls.append("apply-error")
        if result.get("false_findings"):
            cls.append("false-finding")
        if result.get("missed_true"):
            cls.append("missed-finding")
        if result.get("unexpected_changes"):
            cls.append("ddp-script-changed")
        return cls
    if orig is None or orig["rc"] != 0:
        return ["original-fails"]
    apply_ = result.get("apply") or {}
    if apply_.get("error"):
        return ["apply-error"]
    if not apply_.get("changed"):
        # never a pass: even a script with nothing to distribute (expect = "unconverted") stays
        # unconverted; such entries are counted apart from the conversions (see summarise)
        return ["unconverted"]
    if result.get("expect") == "unconverted":
        cls.append("converted-unexpectedly")
    if not apply_.get("parses"):
        return [*cls, "rewrite-syntax"]
    if apply_.get("incomplete"):
        cls.append("incomplete")  # the rewrite breaks the DDP contract, and says so: not a pass
    if not apply_.get("idempotent"):
        cls.append("not-idempotent")
    single = result.get("rewrite_single")
    if single is not None:
        if single["rc"] != 0:
            cls.append("rewrite-breaks-single")
        elif result.get("single_differences"):
            cls.append("rewrite-differs-single")
    ver = result.get("verify")
    if ver is not None:
        if ver.get("error") or not set(ver.get("checks") or {}) & set(VERIFY_CHECKS):
            cls.append("verify-error")  # no statuses to compare: nothing was proved
        cls.extend(mismatch_class(m) for m in check_mismatches(result))
    return sorted(set(cls), key=CLASSES.index)


# ---------------------------------------------------------------- already-distributed scripts


def finding_key(f: dict) -> tuple[str, int]:
    return (f["code"], int(f["line"]))


def judge_findings(findings: list[dict], true_findings: list[dict]) -> tuple[list[dict], list[dict]]:
    """Split reported findings into (true, false) by the entry's list of (code, line) judged true. A
    second report of the same (code, line) is false: it is a duplicate."""
    truth = {finding_key(t) for t in true_findings}
    true, false, seen = [], [], set()
    for f in findings:
        k = finding_key(f)
        (true if k in truth and k not in seen else false).append(f)
        seen.add(k)
    return true, false


def missed_findings(findings: list[dict], true_findings: list[dict]) -> list[dict]:
    """The entry's true findings that check did not report (its recall's misses)."""
    reported = {finding_key(f) for f in findings}
    return [t for t in true_findings if finding_key(t) not in reported]


def edit_lines(e: dict) -> list[int]:
    """The lines of the original one edit replaces, or before which it inserts."""
    end = max(e["end_line"], e["line"]) + (0 if e["end_col"] == 1 and e["end_line"] > e["line"] else 1)
    return list(range(e["line"], end))


def fix_lines(finding: dict) -> list[int]:
    """The lines of the original that a finding's fix edits (its fix's edit ranges)."""
    return sorted({n for e in finding.get("edits", []) for n in edit_lines(e)})


def changed_lines(before: str, after: str) -> list[int]:
    """Line numbers (1-based, of BEFORE) that an edit replaced or next to which it inserted."""
    return sorted({alts[0] for alts in changed_spans(before, after)})


def _slides(a: list[str], i: int, block: list[str]) -> list[int]:
    """The 0-based positions where inserting BLOCK gives the same text as inserting it before a[i]: a
    block slides over equal lines (two blank lines inserted after a blank line may as well come
    before it), so the diff of one apply and that of one fix may place it differently."""
    out = [i]
    up, blk = i, list(block)
    while up > 0 and blk and a[up - 1] == blk[-1]:
        up, blk = up - 1, [a[up - 1], *blk[:-1]]
        out.append(up)
    down, blk = i, list(block)
    while down < len(a) and blk and a[down] == blk[0]:
        down, blk = down + 1, [*blk[1:], a[down]]
        out.append(down)
    return out


def changed_spans(before: str, after: str) -> list[tuple[int, ...]]:
    """Each changed line of BEFORE (1-based), as the tuple of line numbers it may equally be read at:
    one for a replaced or deleted line, every place an inserted block could slide to for an insertion
    (its own place first)."""
    a, b = before.splitlines(), after.splitlines()
    out: list[tuple[int, ...]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            out.extend((n,) for n in range(i1 + 1, i2 + 1))
        else:
            out.append(tuple(n + 1 for n in _slides(a, i1, b[j1:j2])))
    return out


def allowed_lines(true: list[dict], false: list[dict], script: str) -> dict[str, set[int]]:
    """file -> the lines the fixes of the TRUE findings edit. A rule's fix edits every finding of that
    rule at once; where one rule has both true and false findings, an edit of the script that spans a
    false finding's line and no true finding's line is that false finding's, not allowed."""
    false_at: dict[str, set[int]] = {}
    true_at: dict[str, set[int]] = {}
    for f in false:
        false_at.setdefault(f["code"], set()).add(int(f["line"]))
    for f in true:
        true_at.setdefault(f["code"], set()).add(int(f["line"]))
    allowed: dict[str, set[int]] = {}
    for f in true:
        for e in f.get("edits", []):
            path, span = e.get("path") or script, set(edit_lines(e))
            if path == script and span & false_at.get(f["code"], set()) and not span & true_at[f["code"]]:
                continue
            allowed.setdefault(path, set()).update(span)
    return allowed


def changes_beyond(
    before: dict[str, str], after: dict[str, str], script: str, true: list[dict], false: list[dict]
) -> list:
    """Every line a safe apply changed (in the script and in any other file: BEFORE and AFTER map a
    file to its text) that no true finding's fix edits: line numbers of the script, ``file:line``
    for another file."""
    allowed = allowed_lines(true, false, script)
    out: list = []
    for path in sorted(set(before) | set(after), key=lambda p: (p != script, p)):
        b, a = before.get(path, ""), after.get(path, "")
        if a == b:
            continue
        ok = allowed.get(path, set())
        bad = sorted({alts[0] for alts in changed_spans(b, a) if not ok.intersection(alts)})
        out.extend(bad if path == script else [f"{path}:{n}" for n in bad])
    return out


# ---------------------------------------------------------------- figures


def nothing_to_distribute(r: dict) -> bool:
    return r["kind"] == "single" and r.get("expect") == "unconverted"


def counted(r: dict) -> bool:
    """Runnable on CPU, the original runs, and a conversion is expected: the entry is in the figures."""
    return r.get("runs_on_cpu", True) and "original-fails" not in r["classes"] and not nothing_to_distribute(r)


def figures(results: list[dict]) -> dict:
    """The headline figures of a set of results."""
    cnt = [r for r in results if counted(r)]
    single = [r for r in cnt if r["kind"] == "single"]
    ddp = [r for r in results if r["kind"] == "ddp"]
    none = [r for r in results if nothing_to_distribute(r)]
    return {
        "entries": len(results),
        "repos": len({r["repo"] for r in results}),
        "counted": len(cnt),
        "counted_repos": len({r["repo"] for r in cnt}),
        "pass": sum(1 for r in cnt if not r["classes"]),
        "single": len(single),
        "single_pass": sum(1 for r in single if not r["classes"]),
        "single_incomplete": sum(1 for r in single if "incomplete" in r["classes"]),
        "nothing_to_distribute": len(none),
        "left_alone": sum(1 for r in none if r["classes"] == ["unconverted"]),
        "ddp": len(ddp),
        "ddp_repos": len({r["repo"] for r in ddp}),
        "ddp_pass": sum(1 for r in ddp if not r["classes"]),
        "ddp_findings": sum(len(r.get("findings", [])) for r in ddp),
        "ddp_true": sum(len(r.get("true_findings", [])) for r in ddp),
        "ddp_false": sum(len(r.get("false_findings", [])) for r in ddp),
        "ddp_missed": sum(len(r.get("missed_true", [])) for r in ddp),
        "ddp_changed": sum(1 for r in ddp if r.get("unexpected_changes")),
        "ddp_changed_lines": sum(len(r.get("unexpected_changes") or []) for r in ddp),
    }


def not_counted(r: dict) -> str | None:
    """Why an entry is left out of the figures (None: it is counted)."""
    if not r.get("runs_on_cpu", True):
        return (
            "judged statically only: the original cannot run on a CPU-only machine "
            "(its findings and changes count in the already-distributed figures)"
        )
    if "original-fails" in r["classes"]:
        orig = r.get("original") or {}
        tail = (orig.get("stderr_tail") or "").strip().splitlines()
        return "the original fails with its recipe: " + (tail[-1] if tail else f"exit {orig.get('rc')}")
    if nothing_to_distribute(r):
        return "nothing to distribute (expect = unconverted): " + (
            "left alone" if r["classes"] == ["unconverted"] else "changed"
        )
    return None


def summarise(results: list[dict]) -> dict:
    per_class: dict[str, int] = {}
    first: dict[str, int] = {}
    for r in results:
        for c in r["classes"]:
            per_class[c] = per_class.get(c, 0) + 1
        if r["classes"]:
            first[r["classes"][0]] = first.get(r["classes"][0], 0) + 1
    order = lambda kv: CLASSES.index(kv[0]) if kv[0] in CLASSES else len(CLASSES)  # noqa: E731
    return {
        **figures(results),
        "in_sample": figures([r for r in results if not r.get("blind")]),
        "blind": figures([r for r in results if r.get("blind")]),
        "per_class": dict(sorted(per_class.items(), key=order)),
        "first_class": dict(sorted(first.items(), key=order)),
    }
