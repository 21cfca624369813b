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

# what pickles its first argument whole (a module pickled whole keeps its class: the wrapper's needs a
# process group to load)
PICKLERS = ("torch.save", "joblib.dump", "pickle.dump", "dill.dump")
# functions that write the file they are handed: qualified name -> (position, keyword) of the path
WRITERS = {
    "torch.save": (1, "f"),
    "torchvision.utils.save_image": (1, "fp"),
    "numpy.save": (0, "file"),
    "numpy.savez": (0, "file"),
    "numpy.savez_compressed": (0, "file"),
    "numpy.savetxt": (0, "fname"),
    "matplotlib.pyplot.savefig": (0, "fname"),
    "matplotlib.pyplot.imsave": (0, "fname"),
    "imageio.imwrite": (0, "uri"),
    "imageio.mimsave": (0, "uri"),
    "imageio.imsave": (0, "uri"),
    "imageio.mimwrite": (0, "uri"),
    "imageio.v2.imwrite": (0, "uri"),
    "imageio.v2.mimsave": (0, "uri"),
    "imageio.v3.imwrite": (0, "uri"),
    "cv2.imwrite": (0, "filename"),
    "torchvision.io.write_png": (1, "filename"),
    "torchvision.io.write_jpeg": (1, "filename"),
    "torchaudio.save": (0, "uri"),
    "soundfile.write": (0, "file"),
    "joblib.dump": (1, "filename"),
}

__all__ = [
    "PICKLERS",
    "WRITERS",
    "FILE_HANDLERS",
    "IN_MEMORY_FILES",
    "LOGGER_METHODS",
    "TRACKER_CTORS",
    "TRACKER_MODULES",
]
