"""The architectures this project trains, built by name."""
from .mlp import MLP
from .resnet import resnet_tiny

_BUILDERS = {"mlp": MLP, "resnet": resnet_tiny}


def build_model(name, num_classes=4):
    if name not in _BUILDERS:
        raise ValueError(f"unknown model {name!r}; choose from {sorted(_BUILDERS)}")
    return _BUILDERS[name](num_classes=num_classes)
