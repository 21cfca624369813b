"""What the code actions say and do: titles, kinds, and the suppression-comment edit."""

from __future__ import annotations

import ast
import bisect
import functools
import io
import re
import tokenize
from collections.abc import Sequence

from ..diagnostic import Diagnostic
from ..suppress import DIRECTIVE, UNUSED
from ..transforms import BY_CODE

QUICKFIX = "quickfix"
FIX_ALL = "source.fixAll.ddpfix"
CONVERT = "source.convertToDdp.ddpfix"
KINDS = [QUICKFIX, FIX_ALL, CONVERT]
COMMAND = "ddpfix.applyAction"

# What each rule's fix does, as the second half of a quick-fix title ("DDP204: call ...").
FIX_TITLES = {
    "DDP001": "add init_process_group / destroy_process_group",
    "DDP002": "choose nccl or gloo by CUDA availability",
    "DDP003": "let init_process_group read torchrun's environment",
    "DDP005": "use LOCAL_RANK for devices and RANK for writers",
    "DDP006": "call torch.cuda.set_device(LOCAL_RANK) before init_process_group",
    "DDP007": "use the device of LOCAL_RANK",
    "DDP009": "read --local_rank from torchrun's LOCAL_RANK",
    "DDP101": "move the collective out of the rank guard",
    "DDP103": "run rank 0's forward through the unwrapped model",
    "DDP201": "give the DataLoader a DistributedSampler",
    "DDP202": "pass the sampler to the DataLoader",
    "DDP203": "drop shuffle= (the sampler shuffles)",
    "DDP204": "call sampler.set_epoch(epoch) each epoch",
    "DDP205": "give the sampler the same seed on every rank",
    "DDP208": "download on local rank 0 first, then the other ranks",
    "DDP209": "give each rank its own batches, as many on every rank",
    "DDP301": "wrap the model in DistributedDataParallel",
    "DDP302": "replace DataParallel with DistributedDataParallel",
    "DDP303": "derive device_ids from the model's device",
    "DDP304": "wrap the model itself",
    "DDP305": "build the optimizer after the DDP wrap",
    "DDP306": "convert BatchNorm to SyncBatchNorm",
    "DDP307": "skip the gradient all-reduce between accumulation steps",
    "DDP308": "reach the attribute through the unwrapped model",
    "DDP401": "save on rank 0 only",
    "DDP402": "save the unwrapped model's state_dict()",
    "DDP403": "load into the unwrapped model",
    "DDP404": "load with map_location",
    "DDP405": "write the log file on rank 0 only",
    "DDP406": "print on rank 0 only",
    "DDP407": "create the tracker on rank 0 only",
    "DDP408": "draw the progress bar on rank 0 only",
    "DDP410": "add a barrier between the save and the load",
    "DDP420": "create the folder with exist_ok=True",
    "DDP421": "build the cache on rank 0 first, then the other ranks",
}
_SET_EPOCH = re.compile(r"^\s*([A-Za-z_][\w.]*)\.set_epoch\((.+)\)\s*$")


def rule_name(code: str) -> str | None:
    rule = BY_CODE.get(code)
    if rule is not None:
        return rule.name
    return UNUSED.name if code == UNUSED.code else None


def fix_title(code: str, fix: str, count: int, added: list[str] | None = None) -> str:
    """'DDP204: call train_sampler.set_epoch(epoch)', '... (unsafe fix)', '... (3 places)'."""
    what = FIX_TITLES.get(code) or f"fix {(rule_name(code) or code).replace('-', ' ')}"
    if code == "DDP204" and added:  # name the sampler and the epoch variable the fix uses
        for line in added:
            m = _SET_EPOCH.match(line)
            if m:
                what = f"call {m.group(1)}.set_epoch({m.group(2)})"
                break
    title = f"{code}: {what}"
    if count > 1:
        title += f" ({count} places)"
    if fix == "unsafe":
        title += " (unsafe fix)"
    return title


def kind_wanted(kind: str, only: list[str] | None) -> bool:
    """LSP kind filtering: 'source' asks for 'source.fixAll.ddpfix'; '' (Empty) asks for everything."""
    if not only:
        return True
    return any(o == "" or kind == o or kind.startswith(o + ".") for o in only)


# ------------------------------------------------------------------------------ suppression
_EOL = re.compile(r"\r\n|\r|\n")


@functools.lru_cache(maxsize=8)  # one tokenize per text, not one per finding a listing is about
def _scan(text: str) -> tuple[set[int], dict[int, list[tuple[int, str]]]]:
    """Lines (1-based) whose end lies inside a token (a multi-line string), and the comments per line
    (shared between calls: read them, never change them)."""
    blocked: set[int] = set()
    comments: dict[int, list[tuple[int, str]]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments.setdefault(tok.start[0], []).append((tok.start[1], tok.string))
            elif tok.end[0] > tok.start[0] and tok.type not in (tokenize.NEWLINE, tokenize.NL):
                blocked.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return blocked, comments


def _window(text: str, line: int, starts: Sequence[int] | None) -> tuple[str, int]:
    """The part of `text` a tokenizer must read to know lines `line - 1` and `line` (1-based), and the
    number of lines before it: from the top-level statement holding line `line - 1` to the start of
    the next one after `line`. A top-level statement starts outside every string and bracket, so
    the tokens of those lines are the same as in the whole text. Without `starts`: the whole text."""
    if not starts:
        return text, 0
    i = bisect.bisect_right(starts, max(line - 1, 1)) - 1
    first = starts[i] if i >= 0 else 1
    j = bisect.bisect_right(starts, line)
    if first <= 1 and j >= len(starts):
        return text, 0
    ends = [m.end() for m in _EOL.finditer(text)]
    begin = ends[first - 2] if first > 1 else 0
    end = ends[starts[j] - 2] if j < len(starts) and starts[j] - 2 < len(ends) else len(text)
    return text[begin:end], first - 1


def statement_starts(tree: ast.Module | None) -> list[int] | None:
    """The first line (decorators included) of each top-level statement of Python's parse of a text."""
    if tree is None:
        return None
    lines = [min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", ())]) for n in tree.body]
    return sorted(set(lines))


def suppression_edit(
    text: str, diag: Diagnostic, starts: Sequence[int] | None = None
) -> tuple[int, int, int, str] | None:
    """Where and what to write so that `# ddpfix: ignore[CODE]` silences `diag`.

    Returns (line, start_col, end_col, new_text): 1-based line, 0-based code-point columns of the
    original text. A trailing comment goes on the line the finding starts on (merged into a
    `# ddpfix: ignore[...]` comment already there). Where that line cannot end in a comment (its end
    is inside a multi-line string, or it ends in a backslash) the comment goes on a line of its own
    above it, which silences the next line of code. None when no comment can be placed.

    `starts` (`statement_starts` of the text) lets it tokenize only the statements around the line."""
    lines = _EOL.split(text)
    if not 1 <= diag.line <= len(lines):
        return None
    line, code = lines[diag.line - 1], diag.code
    window, skipped = _window(text, diag.line, starts)
    blocked, comments = _scan(window)
    if skipped:
        blocked = {n + skipped for n in blocked}
        comments = {n + skipped: c for n, c in comments.items()}
    for col, comment in comments.get(diag.line, ()):
        m = DIRECTIVE.search(comment)
        if m is None:
            continue
        if m.group("codes") is None:
            return None  # a bare `# ddpfix: ignore` already silences every rule here
        codes = [c.strip() for c in m.group("codes").split(",") if c.strip()]
        if code in (c.upper() for c in codes):
            return None
        return diag.line, col + m.start(), col + m.end(), f"# ddpfix: ignore[{', '.join(codes + [code])}]"
    body = line.rstrip()
    if diag.line not in blocked and not body.endswith("\\"):
        return diag.line, len(body), len(line), f"  # ddpfix: ignore[{code}]"
    above = lines[diag.line - 2] if diag.line > 1 else ""
    if (diag.line - 1) in blocked or above.rstrip().endswith("\\"):
        return None  # the line above runs on into this one: a comment line cannot go between them
    indent = line[: len(line) - len(line.lstrip())]
    m = _EOL.search(text)
    return diag.line, 0, 0, f"{indent}# ddpfix: ignore[{code}]{m.group(0) if m else chr(10)}"


__all__ = [
    "QUICKFIX",
    "FIX_ALL",
    "CONVERT",
    "KINDS",
    "COMMAND",
    "fix_title",
    "kind_wanted",
    "suppression_edit",
    "statement_starts",
    "rule_name",
]
