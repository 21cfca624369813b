"""Resolving imports to files: `from utils import init_distributed_mode` is the function
`init_distributed_mode` of `utils.py` beside the script; `import numpy` is a library; an import that
is neither is unknown."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path

# Libraries whose functions do not set up the script's process group (those that distribute a script
# themselves, Accelerate, Lightning, DeepSpeed..., are recognised elsewhere and left alone).
KNOWN_LIBRARIES = {
    "torch", "torchvision", "torchaudio", "torchtext", "numpy", "scipy", "pandas", "PIL", "cv2", "sklearn",
    "matplotlib", "tqdm", "yaml", "wandb", "mlflow", "tensorboardX", "transformers", "datasets", "timm",
    "einops", "h5py", "tokenizers", "sentencepiece", "omegaconf", "hydra", "absl", "apex", "albumentations",
    "skimage", "librosa", "soundfile", "imageio", "seaborn", "tabulate", "termcolor", "easydict", "munch",
    "ignite",
    "fire", "typer", "click", "jsonargparse", "tyro", "rich", "loguru", "safetensors", "huggingface_hub",
}  # fmt: skip


class Origin(Enum):
    LOCAL = "local"
    LIBRARY = "library"
    UNKNOWN = "unknown"


Imported = dict[str, tuple[str, str | None, int]]  # local name -> (module, imported member, relative level)


class ImportTable:
    """Resolves dotted names through one file's imports to the local module file that defines them."""

    def __init__(self, imported: Imported, find) -> None:
        self.imported = imported
        self.find = find  # (module, level) -> Path | None
        self._resolved: dict[str, tuple[Origin, Path | None, str | None]] = {}
        self._shadowed: dict[str, bool] = {}

    def resolve(self, name: str) -> tuple[Origin, Path | None, str | None]:
        """(origin, the local module's file, the member's name in it) for `name` (`du.init`, `init`)."""
        if name not in self._resolved:
            self._resolved[name] = self._resolve(name)
        return self._resolved[name]

    def _resolve(self, name: str) -> tuple[Origin, Path | None, str | None]:
        parts = name.split(".")
        origin = self.imported.get(parts[0])
        if origin is None:
            return Origin.LIBRARY, None, None  # not imported here: a builtin or a name of this file
        module, member, level = origin
        top = module.split(".")[0] if module else (member or "")
        if level == 0 and _is_library(top) and not self._local(top):
            return Origin.LIBRARY, None, None  # `torch.nn.Linear`: no file of the script's to look for
        tries = []
        if member is not None:
            joined = f"{module}.{member}" if module else member
            tries.append((joined, parts[1:]))  # `from utils import dist`: a submodule
            tries.append((module, [member, *parts[1:]]))
        else:
            tries.append((module, parts[1:]))
        for base, chain in tries:
            for k in range(len(chain) - 1, -1, -1):  # the longest module prefix, leaving a member
                path = self.find(".".join(filter(None, [base, *chain[:k]])), level)
                if path is not None:
                    return Origin.LOCAL, path, ".".join(chain[k:])
            if not chain and base:
                path = self.find(base, level)
                if path is not None:
                    return Origin.LOCAL, path, None
        if level == 0 and top and _is_library(top):
            return Origin.LIBRARY, None, None
        return Origin.UNKNOWN, None, None

    def _local(self, top: str) -> bool:
        """Does the script's folder hold a module of that name (shadowing the library)?"""
        if top not in self._shadowed:
            self._shadowed[top] = self.find(top, 0) is not None
        return self._shadowed[top]


def package_base(folder: Path, level: int) -> Path:
    """The folder a relative import of `level` dots looks in, from the importing module's folder (one
    dot: that folder itself)."""
    for _ in range(max(level - 1, 0)):
        folder = folder.parent
    return folder


def find_module(base: Path | None, module: str) -> Path | None:
    """`utils.dist` under `base`: utils/dist.py or utils/dist/__init__.py."""
    if base is None or not module:
        return None
    rel = Path(*module.split("."))
    for cand in (base / rel.with_suffix(".py"), base / rel / "__init__.py"):
        try:
            if cand.is_file():
                return cand
        except OSError:
            return None
    return None


def _is_library(top: str) -> bool:
    """The standard library and well-known libraries. Where ddpfix runs is not where the script runs,
    so what happens to be importable here decides nothing: anything else is unknown."""
    return top in KNOWN_LIBRARIES or top in sys.stdlib_module_names


__all__ = ["KNOWN_LIBRARIES", "ImportTable", "Imported", "Origin", "find_module"]
