"""The file a call of a helper of the script's own modules saves to or loads from, as the call site
names it (analysis/path_templates.py): `utils.save_checkpoint(model, opt, epoch, miou, args)` and
`utils.load_checkpoint(model, opt, args.save_dir, args.name)` both name
`os.path.join(args.save_dir, args.name)`. DDP410 matches a save and a load by these texts
too, beside the path texts of the script's own `torch.save`/`torch.load` calls (file_paths.py)."""

from __future__ import annotations

import libcst as cst

from .analysis.path_templates import at_call
from .analysis.summaries import LOAD
from .syntax import arg_slots, code_of


def helper_paths(facts, call: cst.Call, effect: str) -> set[str]:
    """The files `call` (of a function of the script's modules) saves (effect SAVE) or loads (LOAD)."""
    target = facts.modules.target_of(call.func)
    if target is None or target.summary is None or target.member is None:
        return set()
    templates = target.summary.file_paths.get(target.member, {}).get("load" if effect == LOAD else "save", [])
    params = target.summary.params.get(target.member)
    if not templates or params is None or any(a.star for a in call.args):
        return set()
    args = {
        slot if isinstance(slot, str) else params[slot]: code_of(arg.value)
        for slot, arg in arg_slots(call)
        if isinstance(slot, str) or slot < len(params)
    }
    texts = (at_call(template, params, args) for template in templates)
    return {text for text in texts if text is not None}


__all__ = ["helper_paths"]
