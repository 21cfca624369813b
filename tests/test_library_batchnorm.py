"""DDP306 on a model built by torchvision or timm: reported only when the builder's name says the
model has BatchNorm layers (`resnet18`, `timm.create_model("efficientnet_b0")`); a name decided at
run time (`timm.create_model(args.model)`) or a model without BatchNorm (`vit_b_16`, a detection
model with frozen BatchNorm) is not reported."""

import textwrap

import pytest

from ddpfix import check_source
from ddpfix.analysis.library_models import builds_batchnorm

SCRIPT = """
import argparse

import torch
import torchvision
import timm

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="resnet50")
args = parser.parse_args()
model = {build}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    opt.zero_grad()
    model(torch.randn(2, 3, 32, 32)).sum().backward()
    opt.step()
"""


@pytest.mark.parametrize(
    "build, reported",
    [
        ("torchvision.models.resnet18()", True),
        ("torchvision.models.vgg11_bn()", True),
        ('torchvision.models.get_model("mobilenet_v3_small")', True),
        ('timm.create_model("efficientnet_b0", num_classes=10)', True),
        ('timm.create_model("timm/resnet50.a1_in1k")', True),
        ("torchvision.models.vit_b_16()", False),
        ("torchvision.models.vgg11()", False),
        ("torchvision.models.detection.fasterrcnn_resnet50_fpn()", False),
        ('timm.create_model("convnext_tiny")', False),
        ('timm.create_model("nf_resnet50")', False),
        ("timm.create_model(args.model)", False),  # decided at run time: not known
    ],
)
def test_library_models_are_reported_by_what_they_build(build, reported):
    src = textwrap.dedent(SCRIPT.format(build=build)).lstrip()
    codes = [d.code for d in check_source(src)]
    assert "DDP301" in codes  # the rule ran on a model it trains
    assert ("DDP306" in codes) is reported


def test_builder_names():
    assert builds_batchnorm("torchvision.models.densenet121", None)
    assert builds_batchnorm("timm.create_model", "tf_efficientnet_b3")
    assert not builds_batchnorm("timm.create_model", None)
    assert not builds_batchnorm("torchvision.models.swin_t", None)
    assert not builds_batchnorm("mylib.models.resnet50", None)
