"""DDP411 on the shapes logging set-up takes: the root logger configured for the console at INFO or
DEBUG (a constant, a name, a string, a number) is quietened on the ranks other than 0; a log file, the
script's own handlers, a level already per rank, WARNING, and an already distributed script are left
alone."""

from __future__ import annotations

import textwrap

import pytest

from ddpfix import check_source, fix_source

SCRIPT = """
{imports}
import torch
import torch.nn as nn

{config}
log = logging.getLogger(__name__)

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
    log.info("step %d", step)
"""


def script(config: str, imports: str = "import logging") -> str:
    return textwrap.dedent(SCRIPT).lstrip("\n").format(imports=imports, config=config)


def found(src: str) -> list:
    return [d for d in check_source(src) if d.code == "DDP411"]


@pytest.mark.parametrize(
    "level",
    ["logging.INFO", "logging.DEBUG", '"INFO"', "'debug'", "20", "logging.NOTSET"],
)
def test_a_verbose_console_level_is_kept_on_rank_zero(level):
    src = script(f'logging.basicConfig(level={level}, format="%(message)s")')
    (d,) = found(src)
    assert d.fix == "safe" and d.message.startswith("logging to the console at INFO on every rank")
    out = fix_source(src).code
    assert f'logging.basicConfig(level={level} if RANK == 0 else logging.WARNING, format="%(message)s")' in out
    assert fix_source(out).code == out


def test_names_imported_from_logging_and_an_import_added_for_warning():
    src = script(
        "basicConfig(level=INFO)",
        imports="from logging import INFO, basicConfig, getLogger as _g\nimport logging as lg",
    ).replace("logging.getLogger", "lg.getLogger")
    out = fix_source(src).code
    assert "basicConfig(level=INFO if RANK == 0 else lg.WARNING)" in out


@pytest.mark.parametrize(
    "config",
    [
        "logging.basicConfig(level=logging.WARNING)",
        "logging.basicConfig(level=40)",
        'logging.basicConfig(level=logging.INFO, filename="train.log")',
        "logging.basicConfig(level=logging.INFO, handlers=[logging.StreamHandler()])",
        "logging.basicConfig(format='%(message)s')",
        "logging.basicConfig(level=logging.INFO if int(os.environ.get('RANK', 0)) == 0 else logging.WARN)",
    ],
    ids=["warning", "forty", "file", "handlers", "no-level", "per-rank"],
)
def test_left_alone(config):
    assert found(script(config, imports="import logging\nimport os")) == []


def test_an_already_distributed_script_keeps_its_logging():
    src = script("logging.basicConfig(level=logging.INFO)", imports="import logging\nimport torch.distributed as dist")
    src = src.replace("model = nn.Linear(4, 1)\n", 'dist.init_process_group("gloo")\nmodel = nn.Linear(4, 1)\n')
    assert found(src) == []


def test_a_rank_zero_configuration_is_left_alone():
    src = script(
        "if int(os.environ.get('RANK', 0)) == 0:\n    logging.basicConfig(level=logging.INFO)",
        imports="import logging\nimport os",
    )
    assert found(src) == []
