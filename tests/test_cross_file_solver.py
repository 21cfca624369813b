"""A class of the script's own modules that builds its models and optimizers itself (golden
gan_solver_module: `Solver(data_loader, config).train()` with G, D and their optimizers in solver.py).
The script names no training word itself, yet is analysed; the loader it hands the constructor is
sharded where it is built; the wrap of each model, the set_epoch where the class remakes its
iterator, the rank-0 guards and the unwrapped state_dict() saves go into the module, each reported at
the script's call with the module's file and line. Where the class cannot be wrapped, nothing is
converted and every finding is reported."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_files import by_code, edit, golden_project

import ddpfix

CASE = Path(__file__).parent / "golden" / "gan_solver_module"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return golden_project(CASE, tmp_path, "solver.py")


def test_the_solver_is_converted_in_its_module(project):
    result = ddpfix.fix_project("main.py")
    found = by_code(result)
    [wrap] = found["DDP301"]
    assert wrap.applied and wrap.line == 35
    assert "self.G at solver.py:56, self.D at solver.py:57" in wrap.message and "the fix wraps each" in wrap.message
    [sampler] = found["DDP201"]
    assert sampler.applied and "sampler=sampler" in result.code
    [group] = found["DDP001"]
    assert group.applied and "dist.init_process_group(" in result.code
    [unwrap] = found["DDP402"]
    assert unwrap.applied and "solver.py:100, solver.py:101" in unwrap.message
    [files] = found["DDP405"]
    assert files.applied and "opens a file for writing on every rank (solver.py:38)" in files.message
    assert result.incomplete == []
    [solver] = result.others.values()
    text = solver.code
    # each model wrapped right after it is built, before the optimizer over its parameters
    assert text.index("self.G = DDP(self.G") < text.index("self.D = Discriminator(") < text.index("self.D = DDP(")
    assert text.index("self.D = DDP(self.D") < text.index("self.g_optimizer = ")
    assert "if dist.is_initialized():\n            self.G = DDP(" in text
    # the sampler's epoch set where the iterator is made, from a count of the passes
    assert "epoch = 0\n" in text and "                epoch += 1\n" in text
    assert text.count(".sampler.set_epoch(epoch)") == 2
    assert 'torch.save(getattr(self.G, "module", self.G).state_dict()' in text
    assert '    if not dist.is_initialized() or dist.get_rank() == 0:\n        with open(path, "wb") as f:' in text


def test_a_script_that_names_no_training_word_is_still_read_through_its_modules(project):
    text = (project / "main.py").read_text()
    assert not any(word in text for word in ("parameters", "backward", "init_process_group"))
    assert [d.code for d in ddpfix.check_source(text, path="main.py", cross_file=True)] == [
        "DDP201",
        "DDP001",
        "DDP301",
        "DDP401",
        "DDP402",
        "DDP405",
        "DDP406",
    ]
    assert ddpfix.check_source(text) == []  # no file to read the modules from: nothing to say
    (project / "solver.py").write_text("import torch\n\n\nclass Solver:\n    pass\n")
    assert ddpfix.check_source(text, path="main.py", cross_file=True) == []  # the module trains nothing


RESTORE = "\n    def restore(self, path):\n        self.G.load_state_dict(torch.load(path))\n"
OPTIMIZERS = (
    "        self.build_optimizers(lr)\n\n    def build_optimizers(self, lr):\n"
    "        self.g_optimizer = torch.optim.Adam(self.G.parameters(), lr, betas=(0.5, 0.999))\n"
)
SAMPLE = "    def sample(self, n):\n        return self(torch.randn(n, self.main[0].in_features))\n\n"
NOISE = "    def noise(self, n):\n        return torch.randn(n, self.main[0].in_features)\n\n"
EARLY_LOAD = (
    "        self.G = Generator(self.z_dim, image_size)\n"
    '        if os.path.exists("pretrained_G.pt"):\n            self.G.load_state_dict(torch.load("pretrained_G.pt"))\n'
)


@pytest.mark.parametrize(
    ("edits", "routed", "said"),
    [
        (
            [("samples = self.G(self.fixed_z)", "samples = self.G(self.fixed_z)[:, : self.G.image_size]")],
            ['self.G(self.fixed_z)[:, : getattr(self.G, "module", self.G).image_size]'],
            "(self.G.image_size at solver.py:98)",
        ),
        (
            [("    def reset_grad(self):", RESTORE.lstrip("\n") + "\n    def reset_grad(self):")],
            ['        getattr(self.G, "module", self.G).load_state_dict(torch.load(path))\n'],
            "(self.G.load_state_dict at solver.py:62)",
        ),
        (
            [
                ("        self.G = Generator(self.z_dim, image_size)\n", EARLY_LOAD),
                ("    def reset_grad(self):", RESTORE.lstrip("\n") + "\n    def reset_grad(self):"),
            ],
            [
                '        getattr(self.G, "module", self.G).load_state_dict(torch.load(path))\n',
            ],
            "(self.G.load_state_dict at solver.py:64)",
        ),
        (
            [
                ("    def forward(self, z):", SAMPLE + "    def forward(self, z):"),
                ("samples = self.G(self.fixed_z)", "samples = self.G.sample(8)"),
            ],
            ['samples = getattr(self.G, "module", self.G).sample(8)'],
            "(self.G.sample at solver.py:101)",
        ),
        (
            [
                ("    def forward(self, z):", NOISE + "    def forward(self, z):"),
                ("z = torch.randn(real.size(0), self.z_dim)", "z = self.G.noise(real.size(0))"),
            ],
            ['z = getattr(self.G, "module", self.G).noise(real.size(0))'],
            "(self.G.noise at solver.py:",
        ),
        (
            [("    def reset_grad(self):", "    def show(self):\n        print(self.G)\n\n    def reset_grad(self):")],
            ['        print(getattr(self.G, "module", self.G))\n'],
            "(self.G at solver.py:62)",
        ),
    ],
    ids=["attribute", "load", "load-before-the-wrap", "method-after-the-step", "no-forward-in-the-step", "printed"],
)
def test_what_the_wrapper_lacks_goes_to_the_plain_module(project, edits, routed, said):
    """A load into the model or what only the model has, after the wrap, reaches the plain module through
    `getattr(self.G, "module", self.G)` (the model itself in a plain run), and so does the model printed
    (it prints as in a plain run); a load before the wrap needs nothing. The class is converted and the
    script distributed."""
    for old, new in edits:
        edit(project / "solver.py", old, new)
    result = ddpfix.fix_project("main.py")
    found = by_code(result)
    [wrap] = found["DDP301"]
    assert wrap.applied and "reaches the plain module" in wrap.message and said in wrap.message, wrap.message
    assert found["DDP001"][0].applied and found["DDP201"][0].applied and result.incomplete == []
    [unwrap] = found["DDP402"]  # the saves write the plain module's keys, which the routed loads read
    assert unwrap.applied
    [solver] = result.others.values()
    text = solver.code
    for spelled in routed:
        assert spelled in text, text
    assert text.count('getattr(self.G, "module", self.G)') == len(routed) + 1  # and the one save
    if "pretrained_G.pt" in text:  # the load before the wrap is the model's own: left as it is, the wrap after it
        assert text.index('self.G.load_state_dict(torch.load("pretrained_G.pt"))') < text.index("self.G = DDP(self.G")


@pytest.mark.parametrize(
    ("edits", "why"),
    [
        (
            [
                ("    def forward(self, z):", SAMPLE + "    def forward(self, z):"),
                ("out_fake = self.D(self.G(z))", "out_fake = self.D(self.G.sample(real.size(0)))"),
            ],
            "self.G.sample(...) (solver.py:91) runs in the training step",
        ),
        (
            [
                (
                    "    def reset_grad(self):",
                    '    def to_cpu(self):\n        self.G.to("cpu")\n\n    def reset_grad(self):',
                )
            ],
            "self.G.to (solver.py:62) is not served by the DDP wrapper",
        ),
        (
            [
                ("        self.g_optimizer = torch.optim.Adam(self.G.parameters(), lr, betas=(0.5, 0.999))\n", ""),
                ("        self.d_optimizer = ", OPTIMIZERS + "        self.d_optimizer = "),
            ],
            "the optimizer over self.G.parameters() is not built in the block that builds self.G",
        ),
        (
            [
                (
                    "    def reset_grad(self):",
                    "    def show(self):\n        return vars(self.G)\n\n    def reset_grad(self):",
                )
            ],
            "self.G is handed on at solver.py:62",
        ),
    ],
    ids=["forward-in-the-step", "moved", "optimizer-elsewhere", "handed-on"],
)
def test_no_half_conversion_where_the_class_cannot_be_wrapped(project, edits, why):
    """Where the wrap cannot be placed in the class, nothing is distributed: no process group, no
    sampler, no edit of the module; every finding is reported incomplete."""
    for old, new in edits:
        edit(project / "solver.py", old, new)
    result = ddpfix.fix_project("main.py")
    found = by_code(result)
    [wrap] = found["DDP301"]
    assert wrap.fix == "none" and why in wrap.message, wrap.message
    [group] = found["DDP001"]
    assert group.fix == "none" and "the fix cannot wrap them there" in group.message and why in group.message
    [sampler] = found["DDP201"]
    assert not sampler.applied and "Solver in solver.py builds the models it trains" in sampler.message
    assert result.code == (project / "main.py").read_text() and not result.others
    assert {"DDP001", "DDP201", "DDP301"} <= {b.code for b in result.incomplete}


def test_a_class_that_wraps_its_models_itself_is_not_reported(project):
    solver = project / "solver.py"
    edit(
        solver,
        "import torch.nn.functional as F\n",
        "import torch.nn.functional as F\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n",
    )
    edit(
        solver,
        "        self.D = Discriminator(image_size)\n",
        "        self.D = Discriminator(image_size)\n        if torch.distributed.is_initialized():\n"
        "            self.G, self.D = DDP(self.G), DDP(self.D)\n",
    )
    assert "DDP301" not in by_code(ddpfix.fix_project("main.py"))


def test_models_handed_to_the_class_are_wrapped_by_the_script(project):
    """The trainer_module shape: the class gets the model and optimizer, so the script wraps them."""
    result = ddpfix.fix_project(str(Path(__file__).parent / "golden" / "trainer_module" / "input.py"))
    [wrap] = by_code(result)["DDP301"]
    assert wrap.applied and wrap.line == 14


@pytest.mark.parametrize(
    ("call", "reported"),
    [
        ('open(path, "wb")', True),
        ('open(path, mode="a")', True),
        ("open(path)", False),
        ('open(f"{path}.rank{rank}", "wb")', False),
    ],
)
def test_files_the_module_opens(project, call, reported):
    edit(project / "solver.py", 'open(path, "wb")', call)
    edit(project / "solver.py", "def save_pgm(images, path):", "def save_pgm(images, path, rank=0):")
    assert ("DDP405" in by_code(ddpfix.fix_project("main.py"))) is reported


def test_a_loader_the_constructor_keeps_and_a_method_iterates(project):
    """`for (real,) in self.data_loader:` inside an epoch loop: the loader is still seen as trained on, and
    with the models unwrapped in the class nothing is edited."""
    solver = project / "solver.py"
    text = solver.read_text()
    start = text.index("        data_iter = iter(self.data_loader)\n")
    end = text.index("            # train the discriminator")
    loop = "        for i in range(self.num_iters):\n            for (real,) in self.data_loader:\n"
    body = text[end:].replace("\n            ", "\n                ")
    solver.write_text(text[:start] + loop + "    " + body)
    result = ddpfix.fix_project("main.py", select=["DDP204"])  # the loader's epochs are seen there
    found = ddpfix.check_source((project / "main.py").read_text(), path=str(project / "main.py"), cross_file=True)
    assert "DDP201" in {d.code for d in found}
    assert not result.others


def test_a_class_handed_the_model_it_trains_is_left_to_the_script(project):
    """`Solver(data_loader, config, G)` with `self.G = G`: the script built G, so it is the script's to wrap."""
    edit(
        project / "solver.py", "def __init__(self, data_loader, config):", "def __init__(self, data_loader, config, G):"
    )
    edit(project / "solver.py", "        self.G = Generator(self.z_dim, image_size)\n", "")
    edit(
        project / "solver.py",
        "        self.data_loader = data_loader\n",
        "        self.data_loader = data_loader\n        self.G = G\n",
    )
    result = ddpfix.fix_project("main.py")
    [wrap] = by_code(result)["DDP301"]
    assert "(self.D at solver.py:57)" in wrap.message and "self.G at" not in wrap.message
    # G is the caller's to wrap, and this script builds none: the class is left as it is, and so is the script
    assert wrap.fix == "none" and "Solver also trains self.G, which it is handed" in wrap.message
    assert not result.others and result.code == (project / "main.py").read_text()


def test_a_file_the_call_names_per_rank_is_not_reported(project):
    """The module opens the path it is handed; the script's call names it per rank."""
    solver = project / "solver.py"
    edit(
        solver,
        "    def train(self):",
        "    def write_samples(self, path):\n        save_pgm(self.G(self.fixed_z), path)\n\n    def train(self):",
    )
    script = project / "main.py"
    edit(script, "    solver.train()\n", '    solver.train()\n    solver.write_samples(f"samples_rank{rank}.pgm")\n')
    edit(script, "    torch.manual_seed(0)\n", '    rank = int(os.environ.get("RANK", 0))\n    torch.manual_seed(0)\n')
    edit(script, "import argparse\n", "import argparse\nimport os\n")
    reported = [d.line for d in ddpfix.fix_project("main.py").diagnostics if d.code == "DDP405"]
    assert reported == [37]  # solver.train()'s sample images only, not the per-rank file of line 38


def test_nothing_is_converted_when_the_wrap_is_not_fixed(project):
    """With DDP301 ignored the class keeps its plain models: no process group, no sampler, and no
    unwrapped save either (there is no wrapper to unwrap)."""
    result = ddpfix.fix_project("main.py", ignore=["DDP301"])
    found = by_code(result)
    [group] = found["DDP001"]
    assert group.fix == "none" and "(DDP301 is not fixed)" in group.message
    assert "DDP402" not in found and not result.others
    assert result.code == (project / "main.py").read_text()


def test_a_model_the_script_reads_through_the_solver_is_not_wrapped(project):
    """`solver.G.state_dict()` in the script would be the wrapper's: the class is left unwrapped and
    nothing is converted."""
    edit(
        project / "main.py",
        "    solver.train()\n",
        '    solver.train()\n    torch.save(solver.G.state_dict(), "G.pt")\n',
    )
    result = ddpfix.fix_project("main.py")
    [wrap] = by_code(result)["DDP301"]
    assert wrap.fix == "none" and "the script reads solver.G at line 36" in wrap.message, wrap.message
    assert not result.others and "init_process_group" not in result.code


def test_a_load_is_not_routed_where_the_saves_keep_the_wrappers_keys(project):
    """Without DDP402 the class's saves stay the wrapper's ('module.' keys): a load routed to the plain
    module would not read them back, so nothing is converted; with DDP402 both sides are the plain module's."""
    edit(project / "solver.py", "    def reset_grad(self):", RESTORE.lstrip("\n") + "\n    def reset_grad(self):")
    result = ddpfix.fix_project("main.py", ignore=["DDP402"])
    [wrap] = by_code(result)["DDP301"]
    assert not wrap.applied and "self.G.load_state_dict (solver.py:62) would read the 'module.' keys" in wrap.message
    assert result.code == (project / "main.py").read_text() and not result.others
    assert by_code(ddpfix.fix_project("main.py"))["DDP301"][0].applied


def test_the_loader_the_class_builds_itself_is_sharded_there_with_the_wrap(project):
    """The class builds its own loader from the dataset it is handed and draws from it with next(): the
    fix shards it where it is built (class_loaders.py), with the epoch counted where the iterator is
    remade, and wraps the models there; the script only joins the process group."""
    edit(
        project / "main.py",
        "    data_loader = DataLoader(dataset, batch_size=config.batch_size, shuffle=True, drop_last=True)\n"
        "    solver = Solver(data_loader, config)\n",
        "    solver = Solver(dataset, config)\n",
    )
    edit(
        project / "solver.py",
        "        self.data_loader = data_loader\n",
        "        self.data_loader = torch.utils.data.DataLoader(data_loader, batch_size=16, shuffle=True)\n",
    )
    result = ddpfix.fix_project("main.py")
    found = by_code(result)
    [wrap] = found["DDP301"]
    assert wrap.applied
    [sampler] = found["DDP201"]
    assert (
        sampler.applied
        and "trains on a DataLoader Solver builds itself (self.data_loader at solver.py:" in sampler.message
    )
    assert result.incomplete == []
    text = result.others["solver.py"].code
    assert "sampler = DistributedSampler(data_loader) if dist.is_initialized() else None\n" in text
    assert text.count(".sampler.set_epoch(epoch)") == 2


def test_no_conversion_when_the_loader_the_class_builds_cannot_be_sharded(project):
    """Built from a dict of arguments, the class's own loader cannot be sharded: wrapping the models
    would leave every rank training the same batches while looking done. Nothing is converted, and the
    finding says why."""
    edit(
        project / "main.py",
        "    data_loader = DataLoader(dataset, batch_size=config.batch_size, shuffle=True, drop_last=True)\n"
        "    solver = Solver(data_loader, config)\n",
        "    solver = Solver(dataset, config)\n",
    )
    edit(
        project / "solver.py",
        "        self.data_loader = data_loader\n",
        "        self.data_loader = torch.utils.data.DataLoader(**dict(dataset=data_loader, batch_size=16))\n",
    )
    result = ddpfix.fix_project("main.py")
    [wrap] = by_code(result)["DDP301"]
    assert wrap.fix == "none" and "takes its arguments from a dict" in wrap.message
    assert result.code == (project / "main.py").read_text() and not result.others
    assert {"DDP001", "DDP301"} <= {b.code for b in result.incomplete}
