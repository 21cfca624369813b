"""ddpfix: turn single-GPU PyTorch training scripts into correct DistributedDataParallel scripts."""
from .api import check_source, fix_source
from .diagnostic import Diagnostic, Result
from .errors import DdpfixError

__version__ = "0.1.0"
__all__ = ["fix_source", "check_source", "Diagnostic", "Result", "DdpfixError", "__version__"]
