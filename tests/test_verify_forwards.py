"""The probe sees a training forward called as `model.forward(x)` (no module hook runs for it) as it sees
`model(x)`: once, as the outermost forward, on a DistributedDataParallel wrapper (whose own forward
prepares the gradient all-reduce: the wrapper counts as used and its all-reduce is observed), on a
module class of the script and on an nn.Sequential. One process, no torchrun."""

from __future__ import annotations

from test_verify import run_probe

PRELUDE = """\
import sys
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        return self.out.forward(self.hidden.forward(x))


def step(model, call, x):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad()
    out = model(x) if call else model.forward(x)
    F.mse_loss(out, torch.zeros_like(out)).backward()
    optimizer.step()


torch.manual_seed(0)
xs = [torch.randn(2, 4) for _ in range(4)]
"""


def forwards(trace):
    end = trace[-1]
    assert end["ev"] == "end" and end["status"] == "ok", end
    inputs = [(e["module"], e["ddp"]) for e in trace if e["ev"] == "input"]
    trained = [e["module"] for e in trace if e["ev"] == "train_module"]
    return end, inputs, trained


def test_direct_forward_of_a_plain_model_is_one_training_forward(tmp_path):
    source = PRELUDE + (
        "model = Net()\n"
        "for i, x in enumerate(xs):\n"
        "    step(model, i % 2, x)\n"
        "seq = nn.Sequential(nn.Linear(4, 1))\n"
        "step(seq, False, xs[0])\n"
        "model.eval()\n"
        "model.forward(xs[0])\n"  # not training: not counted
    )
    p, trace, _ = run_probe(tmp_path, source)
    assert p.returncode == 0, p.stderr
    end, inputs, trained = forwards(trace)
    assert trained == ["Net", "Sequential"]  # not the Linear layers inside
    assert inputs == [("Net", False)] * 4 + [("Sequential", False)]
    assert end["train_forwards"] == 5
    assert [m["module"] for m in end["plain_trained"]] == ["Net", "Sequential"]
    assert all(m["reached"] for m in end["plain_trained"])


def test_direct_forward_of_a_ddp_wrapper_runs_it_and_its_all_reduce_is_seen(tmp_path):
    source = PRELUDE + (
        "dist.init_process_group('gloo', init_method=sys.argv[1], rank=0, world_size=1)\n"
        "model = DDP(Net())\n"
        "for i, x in enumerate(xs):\n"
        "    step(model, i >= 2, x)\n"  # two `model.forward(x)`, then two `model(x)`
        "dist.destroy_process_group()\n"
    )
    p, trace, _ = run_probe(tmp_path, source, args=[(tmp_path / "store").as_uri()])
    assert p.returncode == 0, p.stderr
    end, inputs, trained = forwards(trace)
    assert inputs == [("Net", True)] * 4 and end["train_forwards"] == 4
    assert end["ddp_forwards"] == {"0": 4}
    assert [e["ddp"] for e in trace if e["ev"] == "coll" and e["op"] == "ddp.allreduce"] == [0] * 4
    assert trained == [] and end["plain_trained"] == []  # the wrapped Net ran inside the wrapper's forward


def test_a_script_module_class_still_compiles_with_torch_jit_script(tmp_path):
    """torch.jit.script compiles the class's forward from its source, resolving the names in it (`F`)
    through the function it finds on the class: the probe's wrapper must not hide them."""
    source = PRELUDE + (
        "class Act(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return F.relu(x)\n"
        "scripted = torch.jit.script(Act())\n"
        "print(scripted(torch.tensor([-1.0, 2.0])).tolist())\n"
    )
    p, trace, _ = run_probe(tmp_path, source)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[0.0, 2.0]"
    assert trace[-1]["status"] == "ok"


def test_a_symbolic_trace_of_a_module_class_is_no_training_forward(tmp_path):
    """torch.fx calls the class's forward with proxies, outside any module call: not a forward the
    script trained through. The traced module's own training forward is."""
    source = PRELUDE + (
        "traced = torch.fx.symbolic_trace(Net())\n"
        "print(traced.code.strip().splitlines()[0])\n"
        "step(traced, True, xs[0])\n"
    )
    p, trace, _ = run_probe(tmp_path, source)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "def forward(self, x):"
    end, inputs, trained = forwards(trace)
    assert len(trained) == 1 and len(inputs) == 1 and end["train_forwards"] == 1, trace


TEARDOWN = """
import atexit


class Last:
    def __del__(self):
        print("teardown ran", flush=True)


keep = Last()
atexit.register(lambda: print("exit handler ran", flush=True))
"""


def test_a_run_of_one_process_that_joins_a_group_itself_leaves_without_the_teardown(tmp_path):
    """The suite sets DDPFIX_PROBE_SKIP_TEARDOWN=1 (tests/teardown.py): a process group's gloo threads
    outlive `destroy_process_group()` and now and then abort the interpreter's teardown. A script that
    joins a group of one itself (no WORLD_SIZE in the environment) has them too, so it also leaves
    without the teardown: its exit handlers run, the teardown (a module-level object's `__del__`) does
    not; a run that joins no group keeps the real exit."""
    joined = (
        PRELUDE
        + TEARDOWN
        + (
            "dist.init_process_group('gloo', init_method=sys.argv[1], rank=0, world_size=1)\n"
            "step(DDP(Net()), True, xs[0])\n"
            "dist.destroy_process_group()\n"
        )
    )
    p, trace, _ = run_probe(tmp_path, joined, args=[(tmp_path / "store").as_uri()])
    assert p.returncode == 0 and trace[-1]["status"] == "ok", p.stderr
    assert "exit handler ran" in p.stdout and "teardown ran" not in p.stdout, p.stdout
    plain = PRELUDE + TEARDOWN + "step(Net(), True, xs[0])\n"
    (tmp_path / "plain").mkdir()
    p, _, _ = run_probe(tmp_path / "plain", plain)
    assert p.returncode == 0 and "exit handler ran" in p.stdout and "teardown ran" in p.stdout, p.stdout
