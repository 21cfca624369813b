"""Fuzzing `fix_source`: no exception, every output parses, a second apply changes nothing.

Three sources of programs: hypothesmith's grammar- and CST-based generators (any valid Python),
those programs with torch training fragments spliced in, and training scripts assembled at random
from fragments (imports, setup, model, optimizer, data, loops, saves, logging) in different
containers (module level, main(), helper functions, a Trainer class) and layouts (indent, tabs, CRLF,
comments, one-line suites).

The seed is fixed (derandomize). CI runs DDPFIX_FUZZ_EXAMPLES examples per test (default below);
for a longer local run:

    DDPFIX_FUZZ_EXAMPLES=2000 python -m pytest tests/test_fuzz.py -p no:cacheprovider
"""

from __future__ import annotations

import os

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invariants import problems
from libcst.metadata import MetadataWrapper, PositionProvider

from ddpfix.analysis.index import TreeIndex
from ddpfix.positions import StatementPositions

hypothesmith = pytest.importorskip("hypothesmith")
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")  # generated programs like `1()`

EXAMPLES = int(os.environ.get("DDPFIX_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # nothing written to .hypothesis/
    derandomize=True,  # a fixed seed: the same programs on every run
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)


def assert_positions_agree(source: str) -> None:
    """Every node's range from rendering only its statement equals LibCST's PositionProvider."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    positions = StatementPositions(module, source, TreeIndex(module).parent)
    wrong = [(type(n).__name__, positions[n], rng) for n, rng in expected.items() if positions[n] != rng]
    assert not wrong, f"{wrong[:3]}\n--- program ---\n{source}"


def assert_sound(source: str | bytes, *, unsafe_fixes: bool = False) -> None:
    found = problems(source, "fuzz.py", unsafe_fixes=unsafe_fixes)
    assert not found, (
        "\n".join(found)
        + "\n--- program ---\n"
        + (source if isinstance(source, str) else source.decode("utf-8", "replace"))
    )


# ------------------------------------------------------------------------------------ fragments
IMPORTS = [
    "import os",
    "import sys",
    "import logging",
    "import torch",
    "import torch as T",
    "import torch.nn as nn",
    "from torch import nn, optim",
    "import torch.nn.functional as F",
    "import torch.distributed as dist",
    "from torch import distributed",
    "import torch.multiprocessing as mp",
    "from torch.utils.data import DataLoader, TensorDataset",
    "from torch.utils.data import DataLoader as DL",
    "from torch.utils.data.distributed import DistributedSampler",
    "from torch.nn.parallel import DistributedDataParallel as DDP",
    "from torch.nn.parallel import DistributedDataParallel",
    "from torch.utils.tensorboard import SummaryWriter",
    "from tqdm import tqdm",
    "import wandb",
]

SETUP = [
    "{dev} = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
    "{dev} = 'cuda:0'",
    "{dev} = torch.device(f'cuda:{{local_rank}}')",
    "local_rank = int(os.environ['LOCAL_RANK'])",
    "rank = int(os.environ.get('RANK', 0))",
    "world_size = int(os.environ.get('WORLD_SIZE', 1))",
    "dist.init_process_group('nccl')",
    "dist.init_process_group(backend='gloo', init_method='env://')",
    "torch.distributed.init_process_group(backend='nccl', rank=rank, world_size=world_size)",
    "torch.cuda.set_device(local_rank)",
    "rank = dist.get_rank()",
    "torch.manual_seed(0)",
    "logging.basicConfig(filename='train.log', level=logging.INFO)",
    "logger = logging.getLogger(__name__)",
    "writer = SummaryWriter('runs')",
    "wandb.init(project='demo')",
    "args = parse_args()",
]

MODEL = [
    "{model} = nn.Linear(4, 2)",
    "{model} = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))",
    "{model} = Net()",
    "{model} = Net().to({dev})",
    "{model} = {model}.to({dev})",
    "{model}.cuda()",
    "{model} = {model}.cuda(local_rank)",
    "{model} = DDP({model})",
    "{model} = DDP({model}, device_ids=[local_rank])",
    "{model} = DistributedDataParallel({model}, device_ids=[0], output_device=0)",
    "{model} = nn.DataParallel({model})",
    "{model} = nn.SyncBatchNorm.convert_sync_batchnorm({model})",
    "{model}.load_state_dict(torch.load('ckpt.pt'))",
    "{model}.load_state_dict(torch.load('ckpt.pt', map_location='cpu')['model'])",
    "{model}.train()",
    "{opt} = torch.optim.SGD({model}.parameters(), lr=0.1)",
    "{opt} = optim.Adam(params={model}.parameters(), lr=1e-3)",
    "{opt} = torch.optim.AdamW([p for p in {model}.parameters() if p.requires_grad])",
    "sched = torch.optim.lr_scheduler.StepLR({opt}, step_size=1)",
]

DATA = [
    "{ds} = TensorDataset(torch.randn(64, 4), torch.randn(64, 2))",
    "{loader} = DataLoader({ds}, batch_size=8, shuffle=True)",
    "{loader} = DataLoader({ds}, batch_size=8, shuffle=True, num_workers=2, drop_last=True)",
    "{loader} = DL({ds}, 8)",
    "sampler = DistributedSampler({ds})",
    "sampler = DistributedSampler({ds}, shuffle=True, seed=rank)",
    "{loader} = DataLoader({ds}, batch_size=8, sampler=sampler)",
    "{loader} = DataLoader({ds}, batch_size=8, sampler=sampler, shuffle=True)",
    "{loader} = torch.utils.data.DataLoader(dataset={ds}, batch_size=4)",
]

STEP = [
    "{opt}.zero_grad()",
    "{loss} = F.mse_loss({model}(x), y)",
    "{loss} = ({model}(x.to({dev})) - y.to({dev})).pow(2).mean()",
    "out = {model}.module(x)",
    "{loss}.backward()",
    "({loss} / 4).backward()",
    "{opt}.step()",
    "sched.step()",
    "print({loss}.item())",
    "print(f'loss {{{loss}.item():.3f}}')",
    "logger.info('loss %s', {loss}.item())",
    "logging.info('step')",
    "writer.add_scalar('loss', {loss}.item(), step)",
    "wandb.log({{'loss': {loss}.item()}})",
    "dist.all_reduce({loss})",
    "dist.barrier()",
    "total += {loss}.item()",
    "x, y = x.cuda(), y.cuda()",
    "if step % 10 == 0: print(step)",
    "if rank == 0: print('rank0')",
]

EPOCH_END = [
    "torch.save({model}.state_dict(), 'ckpt.pt')",
    "torch.save({model}.module.state_dict(), f'ckpt_{{epoch}}.pt')",
    "torch.save({{'model': {model}.state_dict(), 'opt': {opt}.state_dict()}}, 'ckpt.pt')",
    "sampler.set_epoch(epoch)",
    "print('epoch', epoch)",
    "open('log.txt', 'a').write('done\\n')",
    "dist.barrier()",
    "if rank == 0:\n    torch.save({model}.state_dict(), 'best.pt')",
    "if avg < best:\n    best = avg\n    torch.save({model}.state_dict(), 'best.pt')",
    "sys.exit(0)",
]

AFTER = [
    "dist.destroy_process_group()",
    "torch.save({model}.state_dict(), 'final.pt')",
    "print('done')",
    "writer.close()",
    "mp.spawn(main, nprocs=2)",
]

NET = """class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8)
        self.bn = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.bn(self.fc(x)))"""

NAMES = {
    "model": ["model", "net", "m", "model_2"],
    "opt": ["optimizer", "opt", "optim_g"],
    "loader": ["loader", "train_loader", "dl"],
    "ds": ["dataset", "ds", "train_set"],
    "dev": ["device", "dev"],
    "loss": ["loss", "l"],
}
BATCH_LOOPS = [
    "for x, y in {loader}:",
    "for step, (x, y) in enumerate({loader}):",
    "for x, y in tqdm({loader}):",
    "for batch in {loader}:",
]


def _lines(stmts: list[str], ind: str) -> list[str]:
    """Statements (written with 4-space indents) as lines in the script's indent."""
    return [line.replace("    ", ind) for s in stmts for line in s.split("\n")]


def _indent(lines: list[str], ind: str) -> list[str]:
    return [ind + line if line.strip() else line for line in (lines or ["pass"])]


@st.composite
def training_scripts(draw) -> str:
    container = draw(st.sampled_from(["module", "main", "main_guard", "trainer"]))
    names = {k: draw(st.sampled_from(v)) for k, v in NAMES.items()}
    if container == "trainer":  # state on the instance: self.model, self.optimizer, ...
        names.update({k: "self." + names[k] for k in ("model", "opt", "loader", "ds")})
    ind = draw(st.sampled_from(["    ", "  ", "\t"]))

    def pick(pool: list[str], lo: int, hi: int) -> list[str]:
        return _lines([s.format(**names) for s in draw(st.lists(st.sampled_from(pool), min_size=lo, max_size=hi))], ind)

    imports = draw(st.lists(st.sampled_from(IMPORTS), min_size=1, max_size=10, unique=True))
    setup = pick(SETUP, 0, 5)
    prep = draw(st.permutations(pick(MODEL + DATA, 1, 9)))
    loop = [draw(st.sampled_from(BATCH_LOOPS)).format(**names)] + _indent(pick(STEP, 1, 8), ind)
    if draw(st.booleans()):
        loop = ["for epoch in range(3):"] + _indent(pick(EPOCH_END, 0, 2) + loop + pick(EPOCH_END, 0, 2), ind)
    after = pick(AFTER, 0, 2)
    helper: list[str] = []
    if container != "trainer" and draw(st.booleans()):  # the training loop in a helper function
        helper = ["def train_one_epoch({model}, {loader}, {opt}):".format(**names)] + _indent(loop, ind) + [""]
        loop = ["train_one_epoch({model}, {loader}, {opt})".format(**names)]
    if container == "trainer":
        body = ["class Trainer:", f"{ind}def __init__(self):"] + _indent(_indent(setup + prep, ind), ind)
        body += ["", f"{ind}def fit(self):"] + _indent(_indent(loop + after, ind), ind)
        body += ["", "if __name__ == '__main__':", f"{ind}Trainer().fit()"]
    elif container == "module":
        body = setup + prep + loop + after
    else:
        body = ["def main():"] + _indent(setup + prep + loop + after, ind) + [""]
        body += ["if __name__ == '__main__':", f"{ind}main()"] if container == "main_guard" else ["main()"]
    net = NET.replace("    ", ind).split("\n") + [""] if draw(st.booleans()) else []
    parts = imports + [""] + net + helper + body
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), "# a comment")
    text = "\n".join(parts) + "\n"
    return text.replace("\n", "\r\n") if draw(st.integers(0, 3)) == 0 else text


@st.composite
def spliced(draw, programs) -> str:
    """A hypothesmith program with torch imports before it and training fragments after it (or in
    a function around it)."""
    program = draw(programs)
    script = draw(training_scripts()).replace("\r\n", "\n")
    where = draw(st.sampled_from(["after", "before", "def"]))
    if where == "before":
        return script + "\n" + program
    if where == "def":
        lines = program.splitlines() or ["pass"]
        return (
            script
            + "\ndef generated():\n"
            + "\n".join("    " + line if line.strip() else line for line in lines)
            + "\n    pass\n"
        )
    return program + ("\n" if not program.endswith("\n") else "") + script


# ------------------------------------------------------------------------------------ tests
@pytest.mark.slow
@FUZZ
@given(training_scripts(), st.booleans())
def test_fuzz_training_scripts(source, unsafe):
    assert_sound(source, unsafe_fixes=unsafe)


@pytest.mark.slow
@FUZZ
@given(training_scripts())
def test_fuzz_training_scripts_as_bytes(source):
    assert_sound(source.encode("utf-8"))


@pytest.mark.slow
@settings(FUZZ, max_examples=max(10, EXAMPLES // 2))
@given(hypothesmith.from_grammar())
def test_fuzz_hypothesmith_grammar(source):
    assert_sound(source)


@pytest.mark.slow
@settings(FUZZ, max_examples=max(10, EXAMPLES // 4))
@given(hypothesmith.from_node())
def test_fuzz_hypothesmith_nodes(source):
    assert_sound(source)


@pytest.mark.slow
@settings(FUZZ, max_examples=max(10, EXAMPLES // 2))
@given(spliced(hypothesmith.from_grammar()))
def test_fuzz_hypothesmith_with_torch_spliced_in(source):
    assert_sound(source, unsafe_fixes=True)


@pytest.mark.slow
@settings(FUZZ, max_examples=max(10, EXAMPLES // 2))
@given(st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node(), training_scripts()))
def test_fuzz_positions(source):
    assert_positions_agree(source)
