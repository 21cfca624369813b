"""Which models built by torchvision and timm have BatchNorm layers that train, by the builder's name:
`torchvision.models.resnet50()`, `torchvision.models.get_model("resnet50")`, `timm.create_model(
"efficientnet_b0")`. A name decided at run time (`timm.create_model(args.model)`) is not known, and
says no: DDP306 reports only BatchNorm it can see."""

from __future__ import annotations

import re

# name fragments of the families whose models normalise with BatchNorm
BATCHNORM_FAMILIES = (
    "resnet",
    "resnext",
    "densenet",
    "mobilenet",
    "efficientnet",
    "regnet",
    "shufflenet",
    "mnasnet",
    "googlenet",
    "inception",
    "deeplabv3",
    "fcn_",
    "lraspp",
    "dla",
    "hrnet",
    "dpn",
    "xception",
    "darknet",
    "rexnet",
    "ghostnet",
    "mixnet",
    "res2net",
    "resnest",
)
# builders named after such a family whose models train no BatchNorm: torchvision's detection models
# freeze theirs (FrozenBatchNorm2d), timm's normalizer-free nets have none
NO_BATCHNORM = ("fasterrcnn_", "maskrcnn_", "keypointrcnn_", "retinanet_", "fcos_", "nf_", "nfnet")
BY_NAME = {"torchvision.models.get_model", "timm.create_model", "timm.models.create_model"}


def builds_batchnorm(qual: str, name: str | None) -> bool:
    """Does the call `qual(name, ...)` (a torchvision or timm builder; `name`: its first argument when
    that is a string) build a model with BatchNorm layers that train?"""
    if qual in BY_NAME:
        model = name
    elif qual.startswith("torchvision.models."):
        model = qual.rsplit(".", 1)[-1]
    else:
        return False
    if not model:
        return False
    model = model.lower().rsplit("/", 1)[-1]  # timm's hub names: "timm/resnet50.a1_in1k"
    if model.startswith(NO_BATCHNORM):
        return False
    return any(f in model for f in BATCHNORM_FAMILIES) or re.match(r"vgg\d+_bn", model) is not None


__all__ = ["builds_batchnorm"]
