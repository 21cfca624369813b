"""ddpfix: turn single-GPU PyTorch training scripts into correct DistributedDataParallel scripts."""

from .api import Parsed, check_source, fix_parsed, fix_project, fix_source, parse_source
from .diagnostic import Diagnostic, FileChange, Result
from .errors import DdpfixError
from .verified import VerifiedFix, fix_and_verify

__version__ = "0.1.0"
__all__ = [
    "fix_source",
    "fix_project",
    "check_source",
    "parse_source",
    "fix_parsed",
    "fix_and_verify",
    "VerifiedFix",
    "Parsed",
    "Diagnostic",
    "Result",
    "FileChange",
    "DdpfixError",
    "__version__",
]
