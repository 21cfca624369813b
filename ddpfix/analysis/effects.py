"""Side effects every rank would repeat: the logging, file-handler and experiment-tracker APIs."""

from __future__ import annotations

LOGGER_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
FILE_HANDLERS = {
    "logging.FileHandler",
    "logging.handlers.RotatingFileHandler",
    "logging.handlers.TimedRotatingFileHandler",
    "logging.handlers.WatchedFileHandler",
}
TRACKER_CTORS = {
    "torch.utils.tensorboard.SummaryWriter",
    "torch.utils.tensorboard.writer.SummaryWriter",
    "tensorboardX.SummaryWriter",
}
TRACKER_MODULES = ("wandb", "mlflow")
# file objects that live in memory: a save into one writes no file
IN_MEMORY_FILES = {"io.BytesIO", "io.StringIO"}

__all__ = ["FILE_HANDLERS", "IN_MEMORY_FILES", "LOGGER_METHODS", "TRACKER_CTORS", "TRACKER_MODULES"]
