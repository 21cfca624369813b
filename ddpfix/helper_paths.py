"""The file a call of a helper of the script's own modules saves to or loads from, as the call site
names it (analysis/path_templates.py): `utils.save_checkpoint(model, opt, epoch, miou, args)` and
`utils.load_checkpoint(model, opt, args.save_dir, args.name)` both name
`os.path.join(args.save_dir, args.name)`. DDP410 matches a save and a load by these texts too."""

from __future__ import annotations

import libcst as cst

from .analysis.path_templates import at_call, canonical
from .analysis.summaries import LOAD
from .syntax import code_of


def helper_paths(facts, call: cst.Call, effect: str) -> set[str]:
    """The files `call` (of a function of the script's modules) saves (effect SAVE) or loads (LOAD)."""
    modules = getattr(facts, "modules", None)
    target = modules.target_of(call.func) if modules is not None else None
    if target is None or target.summary is None or target.member is None:
        return set()
    templates = target.summary.file_paths.get(target.member, {}).get("load" if effect == LOAD else "save", [])
    params = target.summary.params.get(target.member)
    if not templates or params is None:
        return set()
    args: dict[str, str] = {}
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args):
        return set()
    for name, arg in zip(params, positional):
        args[name] = code_of(arg.value)
    for arg in call.args:
        if arg.keyword is not None:
            args[arg.keyword.value] = code_of(arg.value)
    out = set()
    for template in templates:
        text = at_call(template, params, args)
        if text is not None:
            out.add(text)
    return out


def canonical_path(node: cst.BaseExpression) -> set[str]:
    """The text of a path written in the script, as the helpers' paths are written (for matching)."""
    text = canonical(code_of(node))
    return {text} if text is not None else set()


__all__ = ["canonical_path", "helper_paths"]
