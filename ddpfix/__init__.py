"""ddpfix: turn single-GPU PyTorch training scripts into correct DistributedDataParallel scripts."""

from .api import Parsed, check_source, fix_parsed, fix_source, parse_source
from .diagnostic import Diagnostic, Result
from .errors import DdpfixError
from .verified import VerifiedFix, fix_and_verify

__version__ = "0.1.0"
__all__ = [
    "fix_source",
    "check_source",
    "parse_source",
    "fix_parsed",
    "fix_and_verify",
    "VerifiedFix",
    "Parsed",
    "Diagnostic",
    "Result",
    "DdpfixError",
    "__version__",
]
