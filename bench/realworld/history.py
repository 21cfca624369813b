"""The corpus's verdicts change only in commits of their own.

A verdict in ``manifest.toml`` (an entry's ``true_findings``, ``checks`` and their reasons, ``expect``,
``blind``) is a judgement about a script; changed in the same commit as ddpfix's code, it could be
fitted to what that code now does. :func:`violations` walks the git history of the manifest and names
each commit that changed a verdict (or added an entry with verdicts) and also changed ``ddpfix/``.

    python bench/realworld/history.py [BASE]      # commits after BASE (default: the whole history)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent.parent
MANIFEST = "bench/realworld/manifest.toml"
VERDICT_KEYS = ("true_findings", "checks", "check_reasons", "expect", "blind")
RULE_CODE = ("ddpfix/",)  # the code the verdicts judge


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def verdicts(text: str | None) -> dict[str, dict]:
    """Entry id -> its verdict keys, from a manifest's text (empty when absent or unreadable)."""
    if not text:
        return {}
    try:
        entries = tomllib.loads(text).get("script", [])
    except tomllib.TOMLDecodeError:
        return {}
    return {e.get("id"): {k: e[k] for k in VERDICT_KEYS if k in e} for e in entries}


def changed_verdicts(before: str | None, after: str | None) -> list[str]:
    """The ids whose verdicts differ between two texts of the manifest (a new entry with verdicts too)."""
    a, b = verdicts(before), verdicts(after)
    return sorted(i for i in b if b[i] and a.get(i) != b[i]) + sorted(i for i in a if a[i] and i not in b)


def violations(root: Path = ROOT, base: str | None = None, manifest: str = MANIFEST) -> list[dict]:
    """Each commit (merges aside) after BASE that changed a verdict and the rule code in one go:
    ``{commit, ids, files}``."""
    rng = [f"{base}..HEAD"] if base else ["HEAD"]
    log = _git(root, "log", "--no-merges", "--format=%H", *rng, "--", manifest)
    if log.returncode != 0:
        raise RuntimeError(log.stderr.strip())
    out = []
    for commit in log.stdout.split():
        files = _git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", commit).stdout.split()
        rule = [f for f in files if f.startswith(RULE_CODE)]
        if not rule:
            continue
        old = _git(root, "show", f"{commit}^:{manifest}")
        new = _git(root, "show", f"{commit}:{manifest}")
        ids = changed_verdicts(old.stdout if old.returncode == 0 else None, new.stdout if new.returncode == 0 else None)
        if ids:
            out.append({"commit": commit, "ids": ids, "files": rule})
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    found = violations(ROOT, argv[0] if argv else None)
    for v in found:
        print(f"{v['commit'][:10]}: verdicts of {', '.join(v['ids'])} changed with {', '.join(v['files'][:4])}")
    print(f"{len(found)} commit(s) changed a verdict together with ddpfix's code")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
