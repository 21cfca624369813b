"""Names: what the imports make of a dotted name (`t.utils.data.DataLoader` is
`torch.utils.data.DataLoader`), the calls to a qualified name, which statements assign a target,
and the string literals that mention something."""

from __future__ import annotations

import re
from functools import cached_property

import libcst as cst

from ..syntax import assign_targets, assigned_value, dotted, method_name, walk
from .index import Site, TreeIndex
from .node_memo import NodeMemo

# Libraries that distribute a script themselves, by the import that hands them the job (the longest
# prefix wins) -> how to name them.
FRAMEWORKS = {
    "accelerate": "Accelerate",
    "lightning": "Lightning",
    "lightning.fabric": "Lightning Fabric",
    "lightning_fabric": "Lightning Fabric",
    "pytorch_lightning": "Lightning",
    "deepspeed": "DeepSpeed",
    "horovod": "Horovod",
    "torch_xla": "PyTorch/XLA",
    "colossalai": "ColossalAI",
    "fairscale": "FairScale",
    "mmengine.runner": "MMEngine",
    "mmcv.runner": "MMCV",
    "torch.distributed.fsdp": "FSDP",
    "torch.distributed._composable.fsdp": "FSDP",
    "torch.distributed.elastic.agent": "torch.distributed.elastic",
    "torch.distributed.launcher": "torch.distributed.elastic",
    "torch.distributed.run": "torch.distributed.elastic",
    "ignite.distributed": "PyTorch-Ignite",
}
# Libraries whose trainer classes run the training loop, and distribute it, for the script.
TRAINER_LIBRARIES = {"transformers": "the Hugging Face Trainer", "trl": "TRL"}
# Parts of Accelerate a plain script may use without handing it the training (seeding, logging).
ACCELERATE_UTILITIES = ("accelerate.utils", "accelerate.logging")

_UNKNOWN = object()


class Names:
    """Import aliases, qualified names of calls, assignments by target, string literals."""

    def __init__(self, index: TreeIndex, libraries: dict[str, str] | None = None) -> None:
        self.index = index
        self.aliases: dict[str, str] = {}  # local name -> what it was imported as
        for node in index.imports:
            self._record_import(node)
        # names the script's own modules hand on from a library (`from utils import dist`, where
        # utils has `import torch.distributed as dist`): the library's
        self.aliases.update(libraries or {})
        self._assignments = NodeMemo()  # (scope, name) -> its assignments: asked about again and again

    def _record_import(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted(alias.name) or ""
                if alias.asname is not None:
                    self.aliases[alias.asname.name.value] = full  # type: ignore[union-attr]
                else:
                    head = full.split(".")[0]
                    self.aliases[head] = head
        elif node.module is not None and not node.relative and not isinstance(node.names, cst.ImportStar):
            mod = dotted(node.module) or ""
            for alias in node.names:
                name = dotted(alias.name) or ""
                local = alias.asname.name.value if alias.asname is not None else name  # type: ignore[union-attr]
                self.aliases[local] = f"{mod}.{name}"

    # ----------------------------------------------------------------- qualified names
    def qualname(self, node: cst.BaseExpression) -> str | None:
        """`t.utils.data.DataLoader` -> `torch.utils.data.DataLoader` through the import aliases."""
        d = dotted(node)
        if d is None:
            return None
        head, _, rest = d.partition(".")
        if head in self.aliases:
            full = self.aliases[head]
            return f"{full}.{rest}" if rest else full
        return d

    @cached_property
    def _call_quals(self) -> dict[cst.Call, str | None]:
        return {c: self.qualname(c.func) for c in self.index.calls}

    def call_qual(self, call: cst.Call) -> str | None:
        q = self._call_quals.get(call, _UNKNOWN)
        return self.qualname(call.func) if q is _UNKNOWN else q  # type: ignore[return-value]

    def alias_for(self, qualified: str, *, via_parent: bool = False) -> str | None:
        """Local spelling of a module or object the script already imports (`dist` for torch.distributed).

        With `via_parent`, `import torch` is enough to spell `torch.nn` as `torch.nn`.
        """
        for local, full in self.aliases.items():
            if full == qualified:
                return local
        head, _, rest = qualified.partition(".")
        if via_parent and self.aliases.get(head) == head and rest:
            return qualified
        return None

    def calls_to(self, *qualified: str) -> list[cst.Call]:
        wanted = set(qualified)
        return [c for c, q in self._call_quals.items() if q in wanted]

    def calls_matching(self, pred) -> list[cst.Call]:
        return [c for c, q in self._call_quals.items() if pred(q or "")]

    def torch_calls_ending(self, *suffixes: str) -> list[cst.Call]:
        """Calls of a torch function whose qualified name ends with one of `suffixes`."""
        return [
            c for c, q in self._call_quals.items() if (q or "").startswith("torch.") and (q or "").endswith(suffixes)
        ]

    def method_calls(self, *methods: str) -> list[cst.Call]:
        wanted = set(methods)
        return [c for c in self.index.calls if method_name(c) in wanted]

    # ----------------------------------------------------------------- libraries
    @cached_property
    def uses_torch(self) -> bool:
        return any(v == "torch" or v.startswith("torch.") for v in self.aliases.values())

    @cached_property
    def other_launcher(self) -> str | None:
        """The library that distributes the script itself (Accelerate, Lightning, DeepSpeed, FSDP,
        Horovod, a Hugging Face or TRL trainer, ...), by name: its own setup, samplers and wrappers are
        not DDP's to rewrite."""
        found = self._launcher
        return found[0] if found is not None else None

    @cached_property
    def launcher_import(self) -> cst.Import | cst.ImportFrom | None:
        """The import that brings in `other_launcher`."""
        found = self._launcher
        return found[1] if found is not None else None

    @cached_property
    def _launcher(self) -> tuple[str, cst.Import | cst.ImportFrom] | None:
        for node in self.index.imports:
            for full in _imported(node):
                name = framework_of(full)
                if name is not None:
                    return name, node
        for call in self.calls_matching(lambda q: q.split(".")[0] in TRAINER_LIBRARIES and q.endswith("Trainer")):
            top = (self.call_qual(call) or "").split(".")[0]  # `import transformers` ... `transformers.Trainer(...)`
            node = next(
                n for n in self.index.imports if top in _imported(n) or any(f.startswith(top) for f in _imported(n))
            )
            return TRAINER_LIBRARIES[top], node
        return None

    # ----------------------------------------------------------------- assignments
    @cached_property
    def _assigning(self) -> dict[str, list[cst.SimpleStatementLine]]:
        """Every statement line of the module by the targets it assigns, in source order."""
        out: dict[str, list[cst.SimpleStatementLine]] = {}
        for n in walk(self.index.module):
            if type(n) is cst.SimpleStatementLine:
                for target in dict.fromkeys(assign_targets(n)):
                    out.setdefault(target, []).append(n)
        return out

    def assignments(self, scope: cst.CSTNode, target: str) -> list[Site]:
        """Statements in `scope` (not nested functions) that assign `target`, in source order."""
        return list(self._assignments(scope, self._assignments_in, target))

    def _assignments_in(self, scope: cst.CSTNode, target: str) -> list[Site]:
        index = self.index
        if index.indexed(scope):  # a node of this module: ask the index
            lines = [n for n in self._assigning.get(target, ()) if index.contains(scope, n)]
        else:
            lines = [n for n in walk(scope) if isinstance(n, cst.SimpleStatementLine) and target in assign_targets(n)]
        return [index.site(n) for n in lines if isinstance(scope, cst.ClassDef) or index.scope_of(n) is scope]

    def assignments_before(self, scope: cst.CSTNode, target: str, at: cst.CSTNode) -> list[Site]:
        """`assignments(scope, target)` that come before `at`."""
        return [s for s in self.assignments(scope, target) if self.index.before(s.stmt, at)]

    def value_before(self, scope: cst.CSTNode, target: str, at: cst.CSTNode) -> cst.BaseExpression | None:
        """The value the last of `assignments_before(scope, target, at)` gives (None: none, or not a plain
        assignment)."""
        sites = self.assignments_before(scope, target, at)
        return assigned_value(sites[-1].stmt) if sites else None

    # ----------------------------------------------------------------- strings
    def string_literals(self, needle: str) -> list[tuple[cst.SimpleString, str]]:
        """(node, value) of the text string literals whose source mentions `needle` (evaluating every
        literal of a file costs a Python parse each)."""
        out = []
        for string in self.index.strings:
            if needle in string.value:
                value = string.evaluated_value
                if isinstance(value, str):
                    out.append((string, value))
        return out

    @cached_property
    def _env_string_lines(self) -> set[cst.CSTNode]:
        """Statement lines holding a string literal that names a torchrun variable (`"LOCAL_RANK"`): the
        only ones whose text the environment lookups need to read."""
        out = set()
        for string in self.index.strings:
            if "RANK" in string.value or "WORLD_SIZE" in string.value:
                line = next((a for a in self.index.ancestors(string) if isinstance(a, cst.SimpleStatementLine)), None)
                if line is not None:
                    out.add(line)
        return out

    def reads_environment(self, stmt: cst.CSTNode) -> bool:
        """Might `stmt` (a statement line) read RANK, LOCAL_RANK or WORLD_SIZE from the environment?"""
        return stmt in self._env_string_lines


def _imported(node: cst.Import | cst.ImportFrom) -> list[str]:
    """What an import brings in, by qualified name (`accelerate.Accelerator`, `deepspeed`)."""
    if isinstance(node, cst.Import):
        return [dotted(a.name) or "" for a in node.names]
    if node.relative or node.module is None:
        return []
    module = dotted(node.module) or ""
    if isinstance(node.names, cst.ImportStar):
        return [module]
    return [f"{module}.{dotted(a.name)}" for a in node.names]


def framework_of(full: str) -> str | None:
    """The framework an imported name hands the training to, if any."""
    top = full.split(".")[0]
    if top in TRAINER_LIBRARIES:
        return TRAINER_LIBRARIES[top] if full.endswith("Trainer") else None
    if full.startswith(ACCELERATE_UTILITIES):
        return None
    best = max((p for p in FRAMEWORKS if full == p or full.startswith(p + ".")), key=len, default=None)
    return FRAMEWORKS[best] if best is not None else None


ENV_LOOKUP = re.compile(r"environ(?:\.get\(|\[)\s*['\"](RANK|LOCAL_RANK|WORLD_SIZE)['\"]")

__all__ = ["ENV_LOOKUP", "FRAMEWORKS", "Names", "framework_of"]
