"""The bad-input matrix, end to end through the `ddpfix` command: every awkward file gets either a
correct result or one clear line on stderr (exit 2), and a file that cannot be rewritten safely is
left exactly as it was."""

from __future__ import annotations

import ast
import errno
import io
import os
import stat
import subprocess
import sys
import textwrap
import time
import tokenize
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ddpfix
from ddpfix import engine
from ddpfix.cli import app
from ddpfix.engine import write_atomic
from ddpfix.errors import DdpfixError

TRAIN = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    def main():
        model = nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            loss = model(torch.randn(8, 4)).sum()
            loss.backward()
            opt.step()
            print(epoch, loss.item())
            torch.save(model.state_dict(), "ckpt.pt")


    if __name__ == "__main__":
        main()
    """
)
COMMANDS = ["check", "diff", "apply"]


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def put(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def snapshot(path: Path) -> tuple[bytes, int, int]:
    st = path.stat()
    return path.read_bytes(), st.st_mtime_ns, stat.S_IMODE(st.st_mode)


def one_error_line(result, *needles: str) -> str:
    """stderr holds exactly one line, `ddpfix: error: ...`, naming what went wrong; no traceback."""
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("ddpfix: error:")]
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def no_temp_files(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".ddpfix-")]


def applied(path: Path) -> bytes:
    result = run("apply", str(path))
    assert result.exit_code == 0, result.output
    out = path.read_bytes()
    assert b"init_process_group" in out, out.decode("utf-8", "replace")
    return out


# ------------------------------------------------------------------------------------ refused input
REFUSED = {
    "syntax error": (b"import torch\ndef broken(:\n    pass\n", "syntax.py:2:", "syntax error"),
    "syntax error, no torch": (b"x = (1,\n", "plain.py:1:", "syntax error"),
    "undecodable bytes": (b"import torch\nname = '\xff\xfe\xfa'\n", "undecodable.py", "cannot decode"),
    "wrong coding cookie": (b"# -*- coding: utf-8 -*-\nimport torch\ns = '\xe9t\xe9'\n", "cookie.py", "cannot decode"),
    "unknown coding cookie": (b"# -*- coding: klingon -*-\nimport torch\n", "klingon.py", "cannot decode"),
    "binary file": (bytes(range(256)) * 4, "binary.py", "binary file"),
    "binary file mentioning torch": (b"\x7fELF\x02\x01\x01\x00torch\x00\x00", "elf.py", "binary file"),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_input_one_line_exit_2_untouched(work, command, case):
    data, where, what = REFUSED[case]  # `where` starts with the file name
    p = put(work / where.split(":")[0], data)
    before = snapshot(p)
    result = run(command, p.name)
    assert result.exit_code == 2, result.output
    one_error_line(result, where, what)
    assert snapshot(p) == before
    no_temp_files(work)


def test_refused_file_does_not_stop_the_others(work):
    bad = put(work / "a.py", REFUSED["syntax error"][0])
    good = put(work / "b.py", TRAIN)
    result = run("apply", "a.py", "b.py")
    assert result.exit_code == 2
    one_error_line(result, "a.py:2:", "syntax error")
    assert bad.read_bytes() == REFUSED["syntax error"][0]
    assert b"init_process_group" in good.read_bytes()


DEEP = {  # shapes LibCST's native parser overflows its stack on, or parses in super-linear time
    "1500 nested brackets (not Python: CPython allows 200)": "x = " + "[" * 1500 + "]" * 1500,
    "1000 nested calls (not Python)": "x = " + "f(" * 1000 + ")" * 1000,
    "a 10,000-term `and` chain": "ok = " + " and ".join(["a"] * 10_000),
    "a 2,000-term sum": "total = " + " + ".join(["1"] * 2_000),
    "a 5,000-term sum": "total = " + " + ".join(["1"] * 5_000),
    "a 5,000-link attribute chain": "x = a" + ".b" * 5_000,
    "10,000 nested lambdas": "f = " + "lambda: " * 10_000 + "0",
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(DEEP))
def test_too_deeply_nested(work, case):
    """Refused with one line (exit 2) or analysed; never a crash or a hang. In a subprocess, so that a
    crash of the parser shows up as a failure instead of taking the test run down."""
    p = put(work / "deep.py", "import torch\n" + DEEP[case] + "\n")
    before = snapshot(p)
    for command in ("check", "apply"):
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "ddpfix", command, "deep.py"], cwd=work, capture_output=True, text=True, timeout=300
        )
        assert result.returncode in (0, 2), (command, result.returncode, result.stderr[-500:])
        assert time.perf_counter() - start < 60
        if result.returncode == 2:
            lines = result.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith("ddpfix: error: deep.py"), result.stderr[-500:]
        assert snapshot(p) == before


# ------------------------------------------------------------------------------------ encodings, line endings, layout
def test_bom_is_kept(work):
    p = put(work / "bom.py", b"\xef\xbb\xbf" + TRAIN.encode())
    assert run("check", "bom.py").exit_code == 1
    out = applied(p)
    assert out.startswith(b"\xef\xbb\xbf") and out.count(b"\xef\xbb\xbf") == 1
    assert out[3:].decode() == ddpfix.fix_source(TRAIN).code
    assert run("diff", "bom.py").exit_code == 0  # applying again: nothing left to change


def test_crlf_is_kept(work):
    p = put(work / "crlf.py", TRAIN.replace("\n", "\r\n"))
    out = applied(p)
    assert out.count(b"\n") == out.count(b"\r\n")
    assert out.replace(b"\r\n", b"\n").decode() == ddpfix.fix_source(TRAIN).code
    assert run("diff", "crlf.py").exit_code == 0


def test_mixed_line_endings(work):
    lines = TRAIN.splitlines(keepends=True)
    mixed = "".join(line.replace("\n", "\r\n") if i % 2 else line for i, line in enumerate(lines))
    p = put(work / "mixed.py", mixed)
    assert run("check", "mixed.py").exit_code == 1
    out = applied(p).decode()
    ast.parse(out)
    assert "\r" not in out.replace("\r\n", "")
    endings = {}
    for line in out.splitlines(keepends=True):
        endings.setdefault(line.strip(), set()).add(line[len(line.rstrip("\r\n")) :])
    kept = [line for line in mixed.splitlines(keepends=True) if line.strip() in endings and line.strip()]
    assert len(kept) > 10
    for line in kept:  # every original line keeps its own ending (guards re-indent it, fixes rewrite a few)
        assert line[len(line.rstrip("\r\n")) :] in endings[line.strip()], repr(line)
    assert run("diff", "mixed.py").exit_code == 0


def test_old_mac_line_endings(work):
    p = put(work / "cr.py", TRAIN.replace("\n", "\r"))
    result = run("apply", "cr.py")
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        one_error_line(result, "cr.py")
    else:
        ast.parse(p.read_bytes())


def test_tab_indentation(work):
    p = put(work / "tabs.py", TRAIN.replace("    ", "\t"))
    out = applied(p).decode()
    compile(out, "tabs.py", "exec")  # no TabError: inserted code is indented with tabs too
    body = [line for line in out.splitlines() if line[:1] in (" ", "\t")]
    assert all(line.startswith("\t") for line in body), [line for line in body if not line.startswith("\t")]
    assert run("diff", "tabs.py").exit_code == 0


def test_two_space_indentation(work):
    p = put(work / "two.py", TRAIN.replace("    ", "  "))
    out = applied(p)
    widths = [0]
    for tok in tokenize.tokenize(io.BytesIO(out).readline):  # every block, inserted ones too, indents by two
        if tok.type == tokenize.INDENT:
            assert len(tok.string) - widths[-1] == 2, tok
            widths.append(len(tok.string))
        elif tok.type == tokenize.DEDENT:
            widths.pop()


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("data", [b"", b"\n", b"   \n\n", b"# only a comment\n", b"\xef\xbb\xbf", b"\n\r\n"])
def test_empty_files(work, command, data):
    p = put(work / "empty.py", data)
    before = snapshot(p)
    result = run(command, "empty.py")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert snapshot(p) == before


def test_no_trailing_newline(work):
    p = put(work / "noeol.py", TRAIN.rstrip("\n"))
    out = applied(p)
    ast.parse(out)
    assert not out.endswith(b"\n\n")
    assert run("diff", "noeol.py").exit_code == 0


def test_latin1_with_cookie(work):
    data = ("# -*- coding: latin-1 -*-\n" + TRAIN.replace("print(epoch,", "print('époque', epoch,")).encode("latin-1")
    p = put(work / "latin.py", data)
    out = applied(p)
    assert "époque".encode("latin-1") in out
    out.decode("latin-1")


# ------------------------------------------------------------------------------------ size
@pytest.mark.slow
def test_fifty_thousand_lines(work):
    filler = "".join(f"def helper_{i}(x):\n    return x * {i} + {i % 7}\n\n\n" for i in range(12_500))
    source = TRAIN.replace('if __name__ == "__main__":', filler + 'if __name__ == "__main__":')
    assert source.count("\n") >= 50_000
    p = put(work / "big.py", source)
    start = time.perf_counter()
    result = run("check", "big.py")
    assert result.exit_code == 1, result.output
    assert "DDP401" in result.stdout
    out = applied(p)
    assert out.count(b"\n") > 50_000
    assert time.perf_counter() - start < 300


# ------------------------------------------------------------------------------------ files and folders
@pytest.mark.parametrize("command", COMMANDS)
def test_missing_path(work, command):
    result = run(command, "nope.py")
    assert result.exit_code == 2
    one_error_line(result, "nope.py", "no such file or directory")


def test_missing_path_among_others(work):
    good = put(work / "good.py", TRAIN)
    result = run("apply", "nope.py", "good.py")
    assert result.exit_code == 2
    one_error_line(result, "nope.py", "no such file or directory")
    assert good.read_bytes() in (TRAIN.encode(), ddpfix.fix_source(TRAIN).code.encode())  # never half-done


def test_read_only_file(work):
    p = put(work / "ro.py", TRAIN)
    os.chmod(p, 0o444)
    before = snapshot(p)
    assert run("check", "ro.py").exit_code == 1  # reading is fine
    result = run("apply", "ro.py")
    assert result.exit_code == 2
    one_error_line(result, "ro.py", "read-only")
    assert snapshot(p) == before
    no_temp_files(work)


def test_read_only_folder(work):
    p = put(work / "locked" / "train.py", TRAIN)
    os.chmod(work / "locked", 0o555)
    try:
        before = snapshot(p)
        result = run("apply", str(p))
        if os.geteuid() == 0:  # root may write anyway: then the rewrite must simply be right
            assert result.exit_code in (0, 2)
        else:
            assert result.exit_code == 2
            one_error_line(result, "train.py", "cannot write")
            assert snapshot(p) == before
    finally:
        os.chmod(work / "locked", 0o755)
    no_temp_files(work / "locked")


def test_unreadable_file(work):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    p = put(work / "secret.py", TRAIN)
    os.chmod(p, 0)
    result = run("check", "secret.py")
    assert result.exit_code == 2
    one_error_line(result, "secret.py", "cannot read")


def test_directory_named_like_a_file(work):
    (work / "pkg.py").mkdir()
    put(work / "pkg.py" / "train.py", TRAIN)
    result = run("check", "pkg.py")
    assert result.exit_code == 1  # a folder is walked, whatever its name
    assert "train.py" in result.stdout


@pytest.mark.slow
def test_folder_with_thousands_of_files(work):
    root = work / "many"
    for i in range(3000):
        put(root / f"pkg{i // 100}" / f"mod_{i}.py", f"import os\n\nVALUE_{i} = {i}\n")
    for i in range(20):
        put(root / f"pkg{i}" / f"train_{i}.py", TRAIN)
    put(root / "pkg3" / "broken.py", "def (:\n")
    start = time.perf_counter()
    result = run("check", "many")
    took = time.perf_counter() - start
    assert result.exit_code == 2  # the broken file
    one_error_line(result, "broken.py", "syntax error")
    assert len({line.split(":")[0] for line in result.stdout.splitlines()}) == 20
    assert took < 120, took
    result = run("apply", "many")
    assert result.exit_code == 2
    assert all(b"init_process_group" in (root / f"pkg{i}" / f"train_{i}.py").read_bytes() for i in range(20))
    assert (root / "pkg7" / "mod_777.py").read_text() == "import os\n\nVALUE_777 = 777\n"


def test_symlink_to_a_file_is_followed_and_kept(work):
    target = put(work / "real" / "train.py", TRAIN)
    link = work / "link.py"
    link.symlink_to(target)
    out = applied(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == out


def test_dangling_symlink(work):
    (work / "dangling.py").symlink_to(work / "gone.py")
    for command in COMMANDS:
        result = run(command, "dangling.py")
        assert result.exit_code == 2
        one_error_line(result, "dangling.py")


def test_symlink_loop_in_a_folder(work):
    put(work / "proj" / "train.py", TRAIN)
    (work / "proj" / "loop").symlink_to(work / "proj")
    (work / "proj" / "self.py").symlink_to(work / "proj" / "self.py")
    result = run("check", "proj")
    assert "Traceback" not in result.output
    assert result.exit_code in (1, 2)
    assert result.stdout.count("train.py:") >= 1


# ------------------------------------------------------------------------------------ writing safely
def test_changed_on_disk_between_read_and_write(work, monkeypatch):
    p = put(work / "train.py", TRAIN)
    someone_else = TRAIN.replace("lr=0.1", "lr=0.2").encode()
    real = engine.fix_source

    def edit_meanwhile(*args, **kwargs):  # the editor saves while ddpfix is thinking
        result = real(*args, **kwargs)
        p.write_bytes(someone_else)
        return result

    monkeypatch.setattr(engine, "fix_source", edit_meanwhile)
    result = run("apply", "train.py")
    assert result.exit_code == 2
    one_error_line(result, "train.py", "changed on disk since it was read")
    assert p.read_bytes() == someone_else
    no_temp_files(work)


def test_changed_on_disk_through_the_engine(work):
    p = put(work / "train.py", TRAIN)
    res = engine.run_path(str(p), engine.Options())
    assert res.result is not None and res.result.changed
    p.write_text(TRAIN + "# edited\n")
    with pytest.raises(DdpfixError, match="train.py: changed on disk since it was read; not rewritten"):
        write_atomic(str(p), res.result.data, expected=res.original)
    assert p.read_text() == TRAIN + "# edited\n"
    no_temp_files(work)


@pytest.mark.parametrize("step", ["replace", "write", "fsync"])
def test_interrupted_write_leaves_the_original(work, monkeypatch, step):
    p = put(work / "train.py", TRAIN)
    before = snapshot(p)

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    target = {"replace": (engine.os, "replace"), "fsync": (engine.os, "fsync")}.get(step)
    if target is not None:
        monkeypatch.setattr(*target, disk_full)
    else:
        real_fdopen = os.fdopen

        class Failing:
            def __init__(self, f):
                self.f = f

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.f.close()

            def write(self, data):
                self.f.write(data[: len(data) // 2])  # half the file reaches the disk, then the disk is full
                disk_full()

            def __getattr__(self, name):
                return getattr(self.f, name)

        monkeypatch.setattr(engine.os, "fdopen", lambda *a, **k: Failing(real_fdopen(*a, **k)))
    result = run("apply", "train.py")
    assert result.exit_code == 2
    one_error_line(result, "train.py", "cannot write", "No space left on device")
    assert snapshot(p) == before
    no_temp_files(work)


def test_interrupted_by_ctrl_c_leaves_the_original(work, monkeypatch):
    p = put(work / "train.py", TRAIN)
    before = snapshot(p)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(engine.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(str(p), b"x = 1\n", expected=TRAIN.encode())
    assert snapshot(p) == before
    no_temp_files(work)
