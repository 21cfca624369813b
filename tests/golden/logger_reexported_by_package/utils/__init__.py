"""Helpers for the training script."""
from .logger import *
from .misc import *
