#!/usr/bin/env python
"""How long `ddpfix lsp` takes to publish diagnostics after an edit of a 1,000-line training script,
and to list the code actions at a cursor position.

    python bench/lsp_latency.py                 # 1,000 lines, 7 timed edits, 5 code action runs
    python bench/lsp_latency.py --lines 2000 --runs 11 --save /tmp/big_train.py
    python bench/lsp_latency.py --profile /tmp/server.prof   # the server under cProfile

The script starts the server over stdio, opens a generated training script (the first parse is timed
separately), then types into it: each run sends one incremental didChange and waits for the
publishDiagnostics of that version, the next change following at once (as when typing). Reported per
run and as the median: wall time from sending the change to receiving the diagnostics (debounce
included), and the server's CPU time over the same span (read from /proc, so it hardly moves when
other processes share the machine).

Then the code actions, as VS Code asks for them when the user invokes them (Ctrl+.): each run types
one character, waits for the diagnostics, and at once lists the actions at a cursor position on a
finding (DDP401's start, triggerKind Invoked) and resolves the quick-fix; then it waits for the server
to go idle (the fixes it computes ahead are done) and lists and resolves again. Wall times, median of
the runs. The last lines time the engine alone (`check_source` in this process) on the same text.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HEAD = '''\
"""Train an image classifier on synthetic data: one GPU, many helpers (benchmark input)."""
import argparse
import logging
import math
import os
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

logging.basicConfig(filename="train.log", level=logging.INFO)
logger = logging.getLogger(__name__)
'''

BLOCK = '''


class Block{i}(nn.Module):
    """Residual block {i}: conv, norm, activation, squeeze-excite."""

    def __init__(self, width: int = 16, reduction: int = 4):
        super().__init__()
        self.conv = nn.Conv2d(width, width, 3, padding=1)
        self.norm = nn.BatchNorm2d(width)
        self.fc1 = nn.Linear(width, max(width // reduction, 1))
        self.fc2 = nn.Linear(max(width // reduction, 1), width)

    def forward(self, x):
        y = F.relu(self.norm(self.conv(x)))
        w = torch.sigmoid(self.fc2(F.relu(self.fc1(y.mean(dim=(2, 3))))))
        return x + y * w[:, :, None, None]


def augment_{i}(images, p={p}):
    """Random flips and noise, probability {p}."""
    if random.random() < p:
        images = torch.flip(images, dims=[3])
    noise = torch.randn_like(images) * 0.01 * {i}
    return images + noise


def running_mean_{i}(values, window={w}):
    out, total = [], 0.0
    for k, v in enumerate(values):
        total += float(v)
        if k >= window:
            total -= float(values[k - window])
        out.append(total / min(k + 1, window))
    return out
'''

TAIL = """


class Net(nn.Module):
    def __init__(self, depth: int = 4, width: int = 16, num_classes: int = 10):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.blocks = nn.Sequential(*[Block0(width) for _ in range(depth)])
        self.head = nn.Linear(width, num_classes)

    def forward(self, x):
        return self.head(self.blocks(F.relu(self.stem(x))).mean(dim=(2, 3)))


def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            correct += (model(x).argmax(1) == y).sum().item()
            total += y.numel()
    return correct / max(total, 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--resume", default="")
    args = parser.parse_args()

    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    images, labels = torch.randn(512, 3, 16, 16), torch.randint(0, 10, (512,))
    train_loader = DataLoader(TensorDataset(images, labels), batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(TensorDataset(images[:64], labels[:64]), batch_size=args.batch_size)

    model = Net().to(device)
    if args.resume:
        model.load_state_dict(torch.load(args.resume))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)

    for epoch in range(args.epochs):
        model.train()
        for x, y in train_loader:
            x, y = augment_0(x.to(device)), y.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        scheduler.step()
        acc = evaluate(model, val_loader, device)
        logger.info("epoch %d loss %.4f acc %.3f", epoch, loss.item(), acc)
        print(f"epoch {epoch}: loss {loss.item():.4f} acc {acc:.3f}")  # progress
        torch.save(model.state_dict(), "checkpoint.pt")


if __name__ == "__main__":
    main()
"""


def training_script(lines: int = 1000) -> str:
    """A deterministic single-GPU training script of about `lines` lines (many helpers, one loop)."""
    body, i = HEAD, 0
    tail_lines = TAIL.count("\n")
    while True:
        block = BLOCK.format(i=i, p=round(0.1 + (i % 5) * 0.1, 1), w=3 + i % 7)
        if body.count("\n") + block.count("\n") + tail_lines > lines:
            break
        body += block
        i += 1
    pad = lines - body.count("\n") - tail_lines
    body += "".join(f"\nSETTING_{k} = {k}  # tunable" for k in range(max(pad, 0)))
    return body + TAIL


class Client:
    """A minimal JSON-RPC client over the server's stdio, timestamping every message it receives."""

    def __init__(self, cmd: list[str]) -> None:
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.inbox: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = out.read(length)
            self.inbox.put((time.perf_counter(), json.loads(body)))

    def send(self, message: dict) -> float:
        data = json.dumps({"jsonrpc": "2.0", **message}).encode()
        at = time.perf_counter()  # before writing: an answer may come before the write returns
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
        self.proc.stdin.flush()
        return at

    def request(self, method: str, params: dict) -> tuple[float, dict]:
        self.next_id += 1
        sent = self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            at, msg = self.inbox.get(timeout=120)
            if msg.get("id") == self.next_id and "method" not in msg:
                return at - sent, msg
            self._answer(msg)

    def notify(self, method: str, params: dict) -> float:
        return self.send({"method": method, "params": params})

    def _answer(self, msg: dict) -> None:
        if "id" in msg and "method" in msg:  # a request from the server (registerCapability...): accept it
            self.send({"id": msg["id"], "result": None})

    def wait_diagnostics(self, uri: str, version: int) -> tuple[float, list]:
        while True:
            at, msg = self.inbox.get(timeout=120)
            if msg.get("method") == "textDocument/publishDiagnostics":
                p = msg["params"]
                if p["uri"] == uri and p.get("version") == version:
                    return at, p["diagnostics"]
            else:
                self._answer(msg)

    def close(self) -> None:
        try:
            self.request("shutdown", None)  # type: ignore[arg-type]
            self.notify("exit", None)  # type: ignore[arg-type]
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (Linux); NaN elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def idle(pid: int, quiet: float = 0.3, limit: float = 60.0) -> None:
    """Wait until the server has used no CPU for `quiet` seconds (its fixes computed ahead are done)."""
    end = time.perf_counter() + limit
    last, still = cpu_seconds(pid), time.perf_counter()
    while time.perf_counter() < end:
        time.sleep(0.05)
        now = cpu_seconds(pid)
        if now != last:
            last, still = now, time.perf_counter()
        elif time.perf_counter() - still >= quiet:
            return


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7, help="timed edits, each waiting for its diagnostics")
    ap.add_argument("--action-runs", type=int, default=5, help="edits after which code actions are listed")
    ap.add_argument("--save", help="also write the generated script here")
    ap.add_argument("--profile", help="run the server under cProfile, writing its profile here")
    args = ap.parse_args()

    text = training_script(args.lines)
    if args.save:
        Path(args.save).write_text(text, encoding="utf-8")
    uri = Path("/tmp/ddpfix-bench/train.py").as_uri()
    client = Client(
        [sys.executable, *(["-m", "cProfile", "-o", args.profile] if args.profile else []), "-m", "ddpfix.lsp"]
    )
    caps = {  # the parts of VS Code's capabilities that matter here
        "general": {"positionEncodings": ["utf-16"]},
        "textDocument": {
            "publishDiagnostics": {"versionSupport": True, "codeDescriptionSupport": True},
            "codeAction": {
                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["", "quickfix", "source"]}},
                "isPreferredSupport": True,
                "dataSupport": True,
                "resolveSupport": {"properties": ["edit"]},
            },
        },
        "workspace": {"workspaceEdit": {"documentChanges": True}},
    }
    client.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": caps})
    client.notify("initialized", {})

    sent = client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}
    )
    at, diags = client.wait_diagnostics(uri, 1)
    print(f"script: {text.count(chr(10))} lines, {len(diags)} diagnostics")
    print(f"open (first parse, imports warm): {(at - sent) * 1000:.0f} ms")

    # each run types one character into the comment on the print line: the text changes every time
    lines = text.splitlines()
    row = next(i for i, l in enumerate(lines) if l.endswith("# progress"))
    col = len(lines[row])
    walls, cpus = [], []
    for run in range(args.runs):
        version = run + 2
        change = {
            "range": {"start": {"line": row, "character": col + run}, "end": {"line": row, "character": col + run}},
            "text": ".",
        }
        cpu0 = cpu_seconds(client.proc.pid)
        sent = client.notify(
            "textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
        )
        at, diags = client.wait_diagnostics(uri, version)
        walls.append(at - sent)
        cpus.append(cpu_seconds(client.proc.pid) - cpu0)
        print(
            f"  change {run + 1}: {walls[-1] * 1000:6.0f} ms wall, {cpus[-1] * 1000:6.0f} ms server CPU, {len(diags)} diagnostics"
        )

    # code actions at a cursor position, the way VS Code asks when the user invokes them (Ctrl+.):
    # each run types one character, waits for its diagnostics, then lists the actions at a finding
    # (the fixes of that version not computed yet), resolves the quick-fix, waits for the server to go
    # idle (the fixes computed ahead) and lists and resolves again
    at_once, at_once_resolve, known, known_resolve, at_once_cpu, ahead_cpu = [], [], [], [], [], []
    for run in range(args.action_runs):
        version = args.runs + 2 + run
        change = {
            "range": {
                "start": {"line": row, "character": col + version - 2},
                "end": {"line": row, "character": col + version - 2},
            },
            "text": ".",
        }
        client.notify(
            "textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
        )
        _, diags = client.wait_diagnostics(uri, version)
        d = next(x for x in diags if x["code"] == "DDP401")
        cursor = {"start": d["range"]["start"], "end": d["range"]["start"]}
        ask = {"textDocument": {"uri": uri}, "range": cursor, "context": {"diagnostics": [d], "triggerKind": 1}}
        cpu0 = cpu_seconds(client.proc.pid)
        t, res = client.request("textDocument/codeAction", ask)
        at_once_cpu.append(cpu_seconds(client.proc.pid) - cpu0)
        at_once.append(t)
        fix = next(a for a in res.get("result") or [] if a["title"].startswith("DDP401"))
        t, resolved = client.request("codeAction/resolve", fix)
        at_once_resolve.append(t)
        if "edit" not in (resolved.get("result") or {}):
            print(f"resolve failed: {json.dumps(resolved)[:300]}")
        cpu0 = cpu_seconds(client.proc.pid)
        idle(client.proc.pid)
        ahead_cpu.append(cpu_seconds(client.proc.pid) - cpu0)
        t, res = client.request("textDocument/codeAction", ask)
        known.append(t)
        fix = next(a for a in res.get("result") or [] if a["title"].startswith("DDP401"))
        t, resolved = client.request("codeAction/resolve", fix)
        known_resolve.append(t)
        print(
            f"  actions {run + 1}: list {at_once[-1] * 1000:4.0f} ms ({at_once_cpu[-1] * 1000:.0f} ms server CPU), "
            f"resolve {at_once_resolve[-1] * 1000:4.0f} ms; fixes known: list {known[-1] * 1000:4.0f} ms, "
            f"resolve {known_resolve[-1] * 1000:4.0f} ms; {ahead_cpu[-1] * 1000:.0f} ms server CPU computing ahead"
        )
    client.close()

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.0f}"

    med_wall, med_cpu = statistics.median(walls), statistics.median(cpus)
    print(
        f"median didChange -> publishDiagnostics over {args.runs} runs: {med_wall * 1000:.0f} ms wall "
        f"(min {min(walls) * 1000:.0f}), {med_cpu * 1000:.0f} ms server CPU"
    )
    print(
        f"median over {args.action_runs} runs, code actions at a cursor position right after the diagnostics: "
        f"{ms(at_once)} ms to list (max {max(at_once) * 1000:.0f}, {ms(at_once_cpu)} ms server CPU), "
        f"{ms(at_once_resolve)} ms to resolve the quick-fix; once the fixes are computed ahead: "
        f"{ms(known)} ms to list, {ms(known_resolve)} ms to resolve; the fixes computed ahead after the resolve: "
        f"{ms(ahead_cpu)} ms server CPU"
    )
    print(f"code actions at a finding: {ms(at_once)} ms to list, {ms(known_resolve)} ms to resolve the quick-fix")

    from ddpfix import check_source

    engine, engine_cpu = [], []
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        check_source(text)
        engine.append(time.perf_counter() - t0)
        engine_cpu.append(time.process_time() - c0)
    print(
        f"engine alone (check_source, same text, this process): median {statistics.median(engine) * 1000:.0f} ms wall, "
        f"{statistics.median(engine_cpu) * 1000:.0f} ms CPU"
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
