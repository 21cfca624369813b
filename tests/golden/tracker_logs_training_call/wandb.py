"""A stand-in for the W&B client with the rules that matter here: one run per process, written to a
file named after the project, and nothing to name, configure or log before `init`."""
import json

run = None
config = None


class Run:
    def __init__(self, project):
        self.name = None
        self._file = open(f"wandb_{project}.jsonl", "w")

    def log(self, data):
        self._file.write(json.dumps({"run": self.name, **data}) + "\n")


class Config(dict):
    def update(self, values):
        super().update(values)
        run.log({"config": dict(self)})


def init(project):
    global run, config
    if run is not None:
        raise RuntimeError("wandb.init() called twice")
    run = Run(project)
    config = Config()
    return run


def log(data):
    if run is None:
        raise RuntimeError("You must call wandb.init() before wandb.log()")
    run.log(data)


def finish():
    global run, config
    if run is None:
        raise RuntimeError("You must call wandb.init() before wandb.finish()")
    run._file.close()
    run = config = None
