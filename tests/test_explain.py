"""`ddpfix explain`: error texts and logs map to the rules behind them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from ddpfix.cli import app
from ddpfix.explain import GATES, explain_text, likely_codes

CASES = [
    ("ValueError: sampler option is mutually exclusive with shuffle", "DDP203"),
    (
        'RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "conv.weight", '
        '"conv.bias".\n\tUnexpected key(s) in state_dict: "module.conv.weight", "module.conv.bias".',
        "DDP402",  # the checkpoint came from the wrapper's state_dict()
    ),
    (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 8000ms for recv operation to complete",
        "DDP101",
    ),
    (
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.",
        "DDP101",
    ),
    (
        "ValueError: Default process group has not been initialized, please make sure to call init_process_group.",
        "DDP001",
    ),
    (
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your module has parameters that were not used in producing loss.",
        "DDP310",
    ),
    ("ValueError: SyncBatchNorm expected input tensor to be on GPU or XPU or privateuseone", "DDP306"),
    ("ncclInvalidUsage: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000", "DDP006"),
    ("ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!", "DDP002"),
    ("AttributeError: 'DistributedDataParallel' object has no attribute 'generate'", "DDP308"),
    ("TypeError: main_noarg() takes 1 positional argument but 2 were given", "DDP004"),
    ("FileExistsError: [Errno 17] File exists: 'runs/exp1'", "DDP420"),
    ("zipfile.BadZipFile: File is not a zip file", "DDP208"),
    ("EOFError: Compressed file ended before the end-of-stream marker was reached", "DDP208"),
]


SHUFFLE_AND_SAMPLER = (
    "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
    "from torch.utils.data.distributed import DistributedSampler\n"
    "import torch.distributed as dist\n"
    "dist.init_process_group('gloo')\n"
    "ds = TensorDataset(torch.randn(8, 2))\n"
    "sampler = DistributedSampler(ds)\n"
    "loader = DataLoader(ds, shuffle=True, sampler=sampler)\n"
    "model = torch.nn.Linear(2, 1)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for epoch in range(2):\n"
    "    sampler.set_epoch(epoch)\n"
    "    for (x,) in loader:\n"
    "        model(x).sum().backward()\n"
    "        opt.step()\n"
)


@pytest.mark.parametrize("text,code", CASES)
def test_error_text_names_the_rule(text, code):
    codes = likely_codes(explain_text(text))
    assert codes and codes[0] == code, codes


def test_specific_pattern_hides_the_generic_one():
    matches = explain_text(CASES[1][0])
    assert len(matches) == 1


def test_unknown_text_matches_nothing():
    assert explain_text("everything went fine") == []


def test_log_file_and_script(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("W1129 starting\n" + CASES[0][0] + "\nexiting\n")
    script = tmp_path / "train.py"
    script.write_text(SHUFFLE_AND_SAMPLER)
    result = CliRunner().invoke(app, ["explain", str(log), "--script", str(script)])
    assert result.exit_code == 0, result.output
    assert "matched line 2" in result.output
    assert f"{script}:8:" in result.output and "DDP203" in result.output


def test_rule_code_prints_docs():
    result = CliRunner().invoke(app, ["explain", "DDP204"])
    assert result.exit_code == 0
    assert "set_epoch" in result.output and "## Why" in result.output


def test_nothing_matched_exits_1():
    result = CliRunner().invoke(app, ["explain", "all good"])
    assert result.exit_code == 1


# ---------------------------------------------------------------- full PyTorch texts as users paste them
MANY_KEYS = ", ".join(f'"encoder.layers.{i}.{p}"' for i in range(12) for p in ("weight", "bias"))
FROM_WRAPPER = (  # a checkpoint saved from the wrapper, loaded into the plain model: one line, well over 255 bytes
    "RuntimeError: Error(s) in loading state_dict for Transformer: "
    f"Missing key(s) in state_dict: {MANY_KEYS}. "
    f"Unexpected key(s) in state_dict: {MANY_KEYS.replace(chr(34) + 'encoder', chr(34) + 'module.encoder')}. "
)
INTO_WRAPPER = (
    "RuntimeError: Error(s) in loading state_dict for DistributedDataParallel:\n"
    f"\tMissing key(s) in state_dict: {MANY_KEYS.replace(chr(34) + 'encoder', chr(34) + 'module.encoder')}.\n"
    f"\tUnexpected key(s) in state_dict: {MANY_KEYS}."
)
MISMATCH = (
    "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
    "CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE, TensorShape=[1], TensorDtypes=Float, "
    "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), "
    "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))), but Rank 1 is "
    "running collective: CollectiveFingerPrint(SequenceNumber=12, OpType=BROADCAST, TensorShape=[64, 3, 7, 7], "
    "TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided "
    "(default), requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))). "
    "Collectives differ in the following aspects: \t Op type: ALLREDUCEvs BROADCAST"
)
WATCHDOG = (
    "[rank1]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=3241, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
    "1800064 milliseconds before timing out."
)

PYTORCH_TEXTS = [
    (FROM_WRAPPER, "DDP402"),
    (INTO_WRAPPER, "DDP403"),
    ('Missing key(s) in state_dict: "epoch", "module.fc.weight".', "DDP403"),  # 'module.' not first
    (MISMATCH, "DDP101"),
    (WATCHDOG, "DDP101"),
    ("WorkNCCL(SeqNum=8898, OpType=ALLREDUCE) ran for 600236 milliseconds before timing out", "DDP101"),
    ("RuntimeError: [Rank 1]: Ranks 1 failed to pass monitoredBarrier in 30000 ms", "DDP101"),
    ("RuntimeError: Rank 1 timed out in monitoredBarrier after 30000 ms.", "DDP101"),
    (
        "[Rank 0] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, "
        "subsequent GPU operations might run on corrupted/incomplete data.",
        "DDP101",
    ),
    (
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
        "DDP101",
    ),
    (
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
        "DDP003",
    ),
    (
        "torch.distributed.DistNetworkError: The client socket has timed out after 900000ms while trying to "
        "connect to (10.0.0.1, 29500).",
        "DDP003",
    ),
    (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use",
        "DDP003",
    ),
    ("KeyError: 'LOCAL_RANK'", "DDP001"),
    (
        "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable "
        "MASTER_PORT expected, but not set",
        "DDP001",
    ),
    (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:1 and cuda:0! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)",
        "DDP007",
    ),
    ("RuntimeError: No backend type associated with device type cpu", "DDP002"),
    ("RuntimeError: Distributed package doesn't have NCCL built in", "DDP002"),
    (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
        "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5",
        "DDP006",
    ),
]


@pytest.mark.parametrize("text,code", PYTORCH_TEXTS)
def test_full_pytorch_text_names_the_rule(text, code):
    codes = likely_codes(explain_text(text))
    assert codes and codes[0] == code, codes


def test_port_in_use_is_not_a_hang():
    (match,) = explain_text(PYTORCH_TEXTS[12][0])
    assert "port is taken" in match.meaning


# ------------------------------------------------------------------------------ what users write
FORUM = [
    ("I get an unexpected collective error after the first epoch", "DDP101"),
    ("barrier hangs", "DDP101"),
    ("Training hangs at dist.barrier() forever", "DDP101"),
    ("all_reduce is stuck on 2 GPUs", "DDP101"),
    ("DDP training freezes after a few hundred steps", "DDP101"),
    ("stuck at init_process_group with 2 nodes", "DDP003"),
    ("torchrun hangs at rendezvous", "DDP003"),
    ("DDP training hangs at the end of the epoch", "DDP104"),
    ("multi-gpu run hangs during validation on rank 0", "DDP103"),
    ("all processes run on GPU 0 in nvidia-smi", "DDP006"),
    ("every GPU gets the same data", "DDP201"),
    ("the sampler gives the same order in every epoch", "DDP204"),
    ("the loss is printed 4 times", "DDP406"),
    ("saved weights have a 'module.' prefix", "DDP402"),
    # in other languages, with the PyTorch names inside
    ("训练在 dist.barrier() 处卡住了", "DDP101"),
    ("学習が dist.barrier() で止まってしまいます", "DDP101"),
    ("обучение зависает на init_process_group", "DDP003"),
    ("Das Training hängt bei all_reduce", "DDP101"),
    ("el entrenamiento se bloquea en dist.barrier()", "DDP101"),
]


@pytest.mark.parametrize("text,code", FORUM)
def test_forum_wording_names_the_rule(text, code):
    codes = likely_codes(explain_text(text))
    assert codes and codes[0] == code, codes


@pytest.mark.parametrize(
    "text",
    [
        "I changed the barrier timeout",  # 'change' is no hang
        "print the loss 10 times per epoch",
        "I have the same problem on every machine",
        "how do I use dist.barrier()?",
    ],
)
def test_near_misses_match_nothing(text):
    assert explain_text(text) == [], text


NON_ASCII = [
    (f"加载模型时报错：{INTO_WRAPPER}。请问怎么解决？", "DDP403"),
    (f"Ошибка при запуске на двух GPU: {MISMATCH} Что делать?", "DDP101"),
    (f"夜中に止まりました 😭 {WATCHDOG} どうすればいいですか", "DDP101"),
    ("🔥" * 40 + " ValueError: sampler option is mutually exclusive with shuffle " + "🔥" * 40, "DDP203"),
]


@pytest.mark.parametrize("text,code", NON_ASCII)
def test_pytorch_text_inside_another_language(text, code):
    codes = likely_codes(explain_text(text))
    assert codes and codes[0] == code, codes


def test_text_from_a_web_page_or_a_coloured_terminal():
    nbsp = "Missing key(s) in state_dict:\u00a0\u201cmodule.fc.weight\u201d, \u201cmodule.fc.bias\u201d."
    assert likely_codes(explain_text(nbsp))[0] == "DDP403"
    escaped = "Unexpected key(s) in state_dict: &quot;module.fc.weight&quot;."
    assert likely_codes(explain_text(escaped))[0] == "DDP402"
    (match,) = explain_text("\x1b[31mRuntimeError: Detected mismatch between collectives on ranks.\x1b[0m")
    assert match.codes[0] == "DDP101" and "\x1b" not in match.line


# ------------------------------------------------------------------------------------ long logs
@pytest.mark.parametrize("text", [t for t, _ in FORUM + PYTORCH_TEXTS + NON_ASCII])
def test_gates_let_through_every_line_their_pattern_matches(text):
    """A gate only skips lines: wherever its pattern matches, the gate does too."""
    low = text.lower()
    for pattern, gate in GATES.items():
        if re.search(pattern.lower(), low, re.MULTILINE):
            assert re.search(gate, low), (gate, text)


def test_long_log_is_read_in_one_pass():
    noise = "".join(f"[rank{i % 8}]: step {i} loss 0.{i % 97:02d} lr 1e-4 grad_norm 0.3\n" for i in range(100_000))
    keys = ", ".join(f'"blocks.{i}.weight"' for i in range(20_000))
    log = noise + f'Unexpected key(s) in state_dict: {keys}, "module.head.weight".\n' + noise + WATCHDOG + "\n"
    start = time.perf_counter()
    matches = explain_text(log)
    assert [(m.codes[0], m.line_no) for m in matches] == [("DDP402", 100_001), ("DDP101", 200_002)]
    assert time.perf_counter() - start < 30  # seconds, for an 11 MB log


# ------------------------------------------------------------------- the command: arguments and output
def ddpfix(*args, env=None, **kwargs):
    """The real command in a subprocess: what the shell hands it, and the bytes it writes."""
    return subprocess.run(
        [sys.executable, "-m", "ddpfix", *args],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})},
        **kwargs,
    )


def one_line_error(stderr: str) -> bool:
    return stderr.startswith("ddpfix: error: ") and stderr.count("\n") == 1 and "Traceback" not in stderr


def test_long_one_line_message_as_argument():
    assert "\n" not in FROM_WRAPPER and len(FROM_WRAPPER.encode()) > 1000
    proc = ddpfix("explain", FROM_WRAPPER)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"DDP402 (wrapped-state-dict)" in proc.stdout and proc.stderr == b""
    result = CliRunner().invoke(app, ["explain", FROM_WRAPPER])
    assert result.exit_code == 0 and result.exception is None, result.output
    assert "DDP402" in result.stdout and "Unexpected key(s)" in result.stdout  # the matched part is shown


@pytest.mark.parametrize("text,code", NON_ASCII)
def test_non_ascii_message_as_argument(text, code):
    assert len(text.encode()) > 255
    proc = ddpfix("explain", text)
    assert proc.returncode == 0, proc.stderr.decode()
    assert f"{code} (".encode() in proc.stdout and proc.stderr == b""
    result = CliRunner().invoke(app, ["explain", text])
    assert result.exit_code == 0 and code in result.stdout, result.output


def test_message_too_long_for_any_path():
    text = MISMATCH * 40  # over PATH_MAX as well as NAME_MAX
    result = CliRunner().invoke(app, ["explain", text])
    assert result.exit_code == 0 and "DDP101" in result.stdout, result.output


def test_undecodable_bytes_on_the_command_line():
    """Bytes that are not UTF-8 reach Python as lone surrogates; they are printed escaped."""
    proc = ddpfix(
        "explain", b"Detected mismatch between collectives \xff\xfe " + b"x" * 300, env={"PYTHONIOENCODING": "utf-8"}
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"DDP101" in proc.stdout and b"\\udcff\\udcfe" in proc.stdout and proc.stderr == b""


@pytest.mark.parametrize(
    "text", ["Duplicate GPU detected \ud800", "Duplicate GPU detected\x00 on rank 1", "Duplicate GPU detected \x1b[2J"]
)
def test_odd_characters_in_a_message(text):
    result = CliRunner().invoke(app, ["explain", text])
    assert result.exit_code == 0 and result.exception is None, result.output
    assert "DDP006" in result.stdout and "\x1b" not in result.stdout and "\x00" not in result.stdout


@pytest.mark.parametrize("encoding", ["latin-1", "ascii", "cp1252"])
def test_output_to_a_stdout_that_is_not_utf8(encoding):
    text = f"报错了 🙁 {MISMATCH} — что делать?"
    proc = ddpfix("explain", text, env={"PYTHONIOENCODING": encoding})
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode(encoding)
    assert "DDP101" in out and "\\u62a5" in out and proc.stderr == b""
    docs = ddpfix("explain", "DDP101", env={"PYTHONIOENCODING": encoding})
    assert docs.returncode == 0 and b"DDP101" in docs.stdout, docs.stderr.decode()


def test_error_naming_a_path_a_latin1_stderr_cannot_write(tmp_path):
    proc = ddpfix("explain", WATCHDOG, "--script", str(tmp_path / "训练.py"), env={"PYTHONIOENCODING": "latin-1"})
    err = proc.stderr.decode("latin-1")
    assert proc.returncode == 2 and one_line_error(err), err
    assert "\\u8bad\\u7ec3.py: cannot read" in err and b"DDP101" in proc.stdout


def test_message_that_names_an_existing_file_is_read(work):
    (work / "Duplicate GPU detected").write_text("ValueError: sampler option is mutually exclusive with shuffle\n")
    result = CliRunner().invoke(app, ["explain", "Duplicate GPU detected"])
    assert result.exit_code == 0 and "DDP203" in result.stdout and "DDP006" not in result.stdout
    result = CliRunner().invoke(app, ["explain", str(work / "missing" / "Duplicate GPU detected")])
    assert result.exit_code == 0 and "DDP006" in result.stdout  # no such file: the text itself


def test_log_file_in_utf16_with_a_byte_order_mark(tmp_path):
    log = tmp_path / "run.log"
    log.write_bytes(("PS> torchrun train.py\r\n" + WATCHDOG + "\r\n").encode("utf-16"))
    result = CliRunner().invoke(app, ["explain", str(log)])
    assert result.exit_code == 0 and "DDP101" in result.stdout and "matched line 2" in result.stdout


def test_whole_log_pasted_as_one_argument():
    log = "W1129 12:00:01 starting\n" + "step 1 loss 0.5\n" * 50 + WATCHDOG + "\nChildFailedError\n"
    proc = ddpfix("explain", log)
    assert proc.returncode == 0 and b"matched line 52: [rank1]:" in proc.stdout, proc.stderr.decode()


def test_standard_input_dash_and_no_argument():
    for args in (["explain", "-"], ["explain"]):
        result = CliRunner().invoke(app, args, input="noise\n" + MISMATCH + "\n")
        assert result.exit_code == 0 and "matched line 2" in result.stdout and "DDP101" in result.stdout, args
    proc = ddpfix("explain", input="日志：\n".encode() + WATCHDOG.encode() + b"\n\xff\xfe broken bytes\n")
    assert proc.returncode == 0 and b"DDP101" in proc.stdout, proc.stderr.decode()


def test_standard_input_with_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SHUFFLE_AND_SAMPLER)
    result = CliRunner().invoke(
        app, ["explain", "--script", str(script)], input="ValueError: sampler option is mutually exclusive with shuffle"
    )
    assert result.exit_code == 0, result.output
    assert f"{script}:8:" in result.stdout and "DDP203" in result.stdout


def test_empty_input_and_nothing_piped(monkeypatch):
    for args, what in ((["explain", "-"], "standard input is empty"), (["explain", "  "], "the message is empty")):
        result = CliRunner().invoke(app, args, input="")
        assert result.exit_code == 2 and one_line_error(result.stderr) and what in result.stderr, args
    monkeypatch.setattr("ddpfix.explain.reading._interactive", lambda stream: True)  # a terminal: nothing was piped in
    result = CliRunner().invoke(app, ["explain"])
    assert result.exit_code == 2 and one_line_error(result.stderr) and "nothing to explain" in result.stderr


def test_folder_and_unreadable_file(tmp_path):
    result = CliRunner().invoke(app, ["explain", str(tmp_path)])
    assert result.exit_code == 2 and one_line_error(result.stderr) and "is a folder" in result.stderr
    if os.path.exists("/proc/self/mem"):  # a file that exists and fails to read, even as root
        result = CliRunner().invoke(app, ["explain", "/proc/self/mem"])
        assert result.exit_code == 2 and one_line_error(result.stderr) and "cannot read" in result.stderr


def test_unreadable_script_is_one_line():
    result = CliRunner().invoke(app, ["explain", WATCHDOG, "--script", "train\x00.py"])
    assert result.exit_code == 2 and one_line_error(result.stderr), result.output


def test_unknown_text_says_so_and_exits_1():
    proc = ddpfix("explain", "Epoch 3: loss 0.12, accuracy 97%. " * 20)
    assert proc.returncode == 1 and proc.stderr == b""
    assert proc.stdout.decode().startswith("No known DDP error in this text.")


def test_unknown_rule_code_exits_2():
    result = CliRunner().invoke(app, ["explain", "DDP999"])
    assert result.exit_code == 2 and one_line_error(result.stderr) and "unknown rule: DDP999" in result.stderr
