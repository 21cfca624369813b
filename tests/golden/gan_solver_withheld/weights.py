"""Loading weights saved by an earlier run, keeping only the entries the model has."""
import torch


def load_weights(model, path):
    state = torch.load(path, map_location="cpu")
    own = model.state_dict()
    model.load_state_dict({k: v for k, v in state.items() if k in own}, strict=False)
