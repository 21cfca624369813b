"""In-process probe for ``ddpfix verify``.

Run as ``python ddpfix/verify/probe.py script.py ARGS...`` (the launcher gives torchrun this file's
path, so that the ``ddpfix`` package itself is never imported into the user's processes) or as
``python -m ddpfix.verify.probe script.py ARGS...``. It installs observation patches, then runs the
script with ``runpy.run_path(..., run_name="__main__")`` so that ``sys.argv``, ``__file__``,
``sys.path[0]`` and the working directory look like a plain ``python script.py ARGS...`` run. It writes
one JSON object per line to ``rank{RANK}.jsonl`` in the run folder named by the ``DDPFIX_VERIFY_PROBE``
environment variable, which the launcher sets for the probe only: the probe removes it before the
script starts.

What it records, per rank: the dataset indices every DataLoader pass draws (and, for a ``Subset``,
a digest of the underlying dataset's indices it holds), optimizer steps with a
digest of the parameters of every DDP-wrapped module and of those the stepping optimizer trains outside
every wrapper, files written (``torch.save``,
``logging.FileHandler``, TensorBoard writers, ``wandb.init``, write-mode ``open``, and the paths the
script deletes with ``os.remove``/``os.unlink``/``os.rmdir``/``shutil.rmtree``), collectives issued
(including DDP's gradient all-reduce, observed through a comm hook that delegates to the default
all-reduce hook), process-group set-up, training forwards (a digest of the inputs of the outermost
forward of a module in training mode, and which modules outside a DDP wrapper trained), backward
passes (which of those modules' parameters they reached) and how the script ended. The probe issues no collectives of its
own. On ``SIGUSR1`` (sent by the launcher at the time limit) and on ``SIGTERM`` (sent by torchrun
when another rank fails) it dumps every thread's Python stack with :mod:`faulthandler`.

Every trace line carries a sequence number ``i`` (a gap is a lost line); the ``end`` record counts
the lines that could not be written, and a ``patched`` record lists the torch patches installed.

This module runs inside the user's process: it imports only the standard library, and torch lazily
(when the script imports it). It also holds :func:`library_prefixes` and :func:`is_user_file`, the
one definition of "the script's own code" that the checks import from here.
"""

from __future__ import annotations

import builtins
import faulthandler
import functools
import io
import json
import os
import runpy
import signal
import sys
import sysconfig
import threading
import time
import weakref

# Imported lazily, to keep the start-up cost in every rank small: hashlib, inspect, datetime and
# traceback (when torch or an error needs them), logging (patched when the script imports it).

ENV = "DDPFIX_VERIFY_PROBE"
PRIVATE_NAME = "_ddpfix_verify_probe"
ALWAYS_DIGEST_STEPS = 20  # parameter digests after each of the first steps, then within a time budget:
DIGEST_BUDGET = 0.1  # digests may take at most this share of the time since the first step
INPUT_DIGESTS = 64  # training forwards whose inputs are digested, per rank (the rest are counted)
INPUT_DIGEST_BYTES = 16 << 20  # bytes of one input digested (a larger tensor: its first bytes, shape and sum)
GRAD_LOOKS = 20  # backward calls after which the probe looks which plain modules got gradients, then every 50th

_T0 = time.time()
_PROBE_FILE = os.path.abspath(__file__)
_ORIG_OPEN = builtins.open
_tls = threading.local()


def _depth() -> int:
    return getattr(_tls, "depth", 0)


class _Quiet:
    """Context: calls made inside are the probe's or torch's own, not the script's."""

    def __enter__(self):
        _tls.depth = _depth() + 1

    def __exit__(self, *exc):
        _tls.depth = _depth() - 1
        return False


_quiet = _Quiet()


class _State:
    def __init__(self) -> None:
        self.fd: int | None = None
        self.run_dir = ""
        self.rank = 0
        self.config: dict = {}
        self.script = ""
        self.script_dir = ""
        self.lib_prefixes: tuple[str, ...] = ()
        self.seq = 0  # sequence number of the next trace line: a gap in the file is a lost line
        self.lost = 0  # trace lines that could not be written
        self.torch_hooked = False  # _on_torch_imported ran
        self.joined = False  # the script joined a process group (its gloo threads may outlive it)
        self.steps = 0
        self.first_step_t = None
        self.digest_time = 0.0
        self.current_pass = None
        self.open_passes: dict = {}
        self.loaders: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self.loader_sites: dict[str, dict] = {}  # site -> {dataset fingerprint: ordinal}
        self.loader_keys: dict[str, dict] = {}  # loader key -> shared info (pass counter)
        self.ddps: list[dict] = []
        self.optimizers: dict = {}  # id(optimizer) -> (ordinal, optimizer), in the order of their first steps
        self.ddp_by_obj: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self.writes: set = set()
        self.coll_n = 0
        self.group_names: dict = {}
        self.keep: list = []  # file objects that must stay open for faulthandler
        self.trained: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # plain module -> info
        self.trained_infos: list = []  # the same records, kept after their modules are collected
        self.untrained: "weakref.WeakSet" = weakref.WeakSet()  # modules without trainable parameters
        self.train_forwards = 0  # outermost forwards in training mode with gradients enabled
        self.backwards = 0
        self.grad_allreduces = 0  # all_reduce calls on a gradient of a plain module's parameter
        self.reached_seen = False  # a backward reached a plain module's parameters (a "backward" record says so)


S = _State()


# --------------------------------------------------------------------------- trace output
def emit(ev: str, **fields) -> None:
    if S.fd is None:
        return
    seq = S.seq
    S.seq += 1
    fields = {"ev": ev, "i": seq, "t": round(time.time() - _T0, 4), **fields}
    try:
        data = (json.dumps(fields, default=str, separators=(",", ":")) + "\n").encode("utf-8", "replace")
        while data:
            data = data[os.write(S.fd, data) :]
    except Exception:  # never break the user's script because of the trace; the gap in "i" tells
        S.lost += 1


def _warn(what: str, exc: BaseException) -> None:
    emit("probe_error", what=what, error=f"{type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------- library paths
# Shared with the checks (ddpfix.verify.checks imports these two from this module): which frames and
# files are the script's own and which are the standard library's, an installed package's or the probe's.
def library_prefixes() -> tuple:
    """Folders of library code: the standard library, installed packages and the probe's own folder."""
    out = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            out.add(os.path.abspath(p) + os.sep)
    for p in sys.path:
        if p and ("site-packages" in p or "dist-packages" in p):
            out.add(os.path.abspath(p) + os.sep)
    out.add(os.path.dirname(_PROBE_FILE) + os.sep)
    return tuple(sorted(out))


def is_user_file(path: str, prefixes: tuple) -> bool:
    """True for a file of the script's own code: not ``<string>``-like, not under ``prefixes`` and not
    in an installed package (also when the package lives under another interpreter's prefix)."""
    if not path or path.startswith("<"):
        return False
    if "/site-packages/" in path or "/dist-packages/" in path:
        return False
    return not path.startswith(prefixes)


def _is_user_file(filename: str) -> bool:
    return is_user_file(filename, S.lib_prefixes)


def _site(skip: int = 2) -> str | None:
    """file:line of the innermost frame of the user's code (outside torch, stdlib and the probe)."""
    try:
        f = sys._getframe(skip)
    except ValueError:
        return None
    fallback = None
    while f is not None:
        fn = f.f_code.co_filename
        if _is_user_file(fn):
            return f"{fn}:{f.f_lineno}"
        if fallback is None and fn != _PROBE_FILE and not fn.startswith("<"):
            fallback = f"{fn}:{f.f_lineno}"
        f = f.f_back
    return fallback


# --------------------------------------------------------------------------- files
_SKIP_PREFIXES = ("/dev/", "/proc/", "/sys/")
# compiler and library caches, written by design from every process
_CACHE_PARTS = ("__pycache__", "/torchinductor_", "/.triton/", "/.cache/")


def _record_write(api: str, path, extra: dict | None = None) -> None:
    if _depth():
        return
    try:
        if isinstance(path, int):
            return
        p = os.path.abspath(os.fspath(path))
        if isinstance(p, bytes):
            p = os.fsdecode(p)
    except Exception:
        return
    if p.startswith(_SKIP_PREFIXES) or (S.run_dir and p.startswith(S.run_dir + os.sep)):
        return
    if any(part in p for part in _CACHE_PARTS):
        return
    key = p
    if key in S.writes:
        return
    S.writes.add(key)
    emit("write", api=api, path=p, site=_site(3), **(extra or {}))


def _patched_open(file, mode="r", *args, **kwargs):
    f = _ORIG_OPEN(file, mode, *args, **kwargs)
    if not _depth() and isinstance(mode, str) and ("w" in mode or "a" in mode or "x" in mode or "+" in mode):
        # with an opener, `file` need not be the file: tempfile passes the folder and creates a unique name
        if not (isinstance(file, (str, bytes, os.PathLike)) and os.path.isdir(file)):
            _record_write("open", file)
    return f


def _patched_remover(module, name: str):
    """`module.name` (a deletion of a path) recording the path as written when the script's own code
    calls it: a file rank 0 saves and another rank deletes, or a folder every rank empties, has more
    than one writer. Deletions inside libraries (tempfile's clean-up, shutil.rmtree's own calls) are
    not the script's."""
    orig = getattr(module, name)

    @functools.wraps(orig)  # (shutil.rmtree.avoids_symlink_attacks is read by some libraries)
    def remover(path, *args, **kwargs):
        if not _depth() and _is_user_file(sys._getframe(1).f_code.co_filename):
            _record_write(f"{module.__name__}.{name}", path)
        return orig(path, *args, **kwargs)

    return remover


def _install_stdlib_patches() -> None:
    import shutil

    builtins.open = _patched_open
    io.open = _patched_open
    for module, name in ((os, "remove"), (os, "unlink"), (os, "rmdir"), (shutil, "rmtree")):
        setattr(module, name, _patched_remover(module, name))


def _patch_logging(logging) -> None:
    orig_fh_init = logging.FileHandler.__init__

    @functools.wraps(orig_fh_init)
    def fh_init(self, filename, *args, **kwargs):
        if _depth():
            return orig_fh_init(self, filename, *args, **kwargs)
        with _quiet:
            orig_fh_init(self, filename, *args, **kwargs)
        _record_write("logging.FileHandler", getattr(self, "baseFilename", filename))

    logging.FileHandler.__init__ = fh_init


# --------------------------------------------------------------------------- post-import hooks
class _HookLoader:
    def __init__(self, loader, hook):
        self._loader = loader
        self._hook = hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        # hand the real loader back to the module before it runs
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        try:
            self._hook(module)
        except Exception as exc:  # pragma: no cover - defensive
            _warn(f"patch {module.__name__}", exc)


class _PostImportFinder:
    """Runs a hook right after a given module has been executed."""

    def __init__(self, hooks: dict):
        self.hooks = hooks

    def find_spec(self, fullname, path, target=None):
        hook = self.hooks.get(fullname)
        if hook is None:
            return None
        after = False
        for finder in list(sys.meta_path):
            if finder is self:
                after = True
                continue
            if not after or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is None or not hasattr(spec.loader, "exec_module"):
                    return None
                del self.hooks[fullname]
                spec.loader = _HookLoader(spec.loader, hook)
                return spec
        return None


# --------------------------------------------------------------------------- torch patches
def _digest_params(named_params) -> dict:
    import hashlib

    import torch

    h = hashlib.sha1()
    total = 0.0
    numel = 0
    with torch.no_grad():
        for name, p in named_params:
            t = p.detach()
            if t.device.type != "cpu":
                t = t.cpu()
            t = t.contiguous().reshape(-1)
            h.update(name.encode())
            h.update(str(t.dtype).encode())
            raw = t.view(torch.uint8)
            try:
                h.update(raw.numpy())  # the buffer itself, no copy
            except Exception:  # numpy missing: slower, same digest
                h.update(bytes(raw.tolist()))
            if t.is_floating_point():
                total += float(t.sum(dtype=torch.float64))
            elif t.is_complex():
                total += float(t.abs().sum(dtype=torch.float64))
            numel += t.numel()
    return {"sha1": h.hexdigest()[:16], "sum": total, "numel": numel}


def _safe_digest(named) -> dict | None:
    try:
        with _quiet:
            return _digest_params(named)
    except Exception as exc:
        _warn("digest", exc)
        return None


def _ddp_digests() -> list:
    out = []
    for info in S.ddps:
        try:
            with _quiet:
                d = _digest_params(info["params"])
            d["ddp"] = info["id"]
            out.append(d)
        except Exception as exc:
            _warn("digest", exc)
    return out


def _outside_digests(optimizer) -> list:
    """A digest of the trainable parameters `optimizer` steps that no DDP wrapper holds (nothing keeps them
    in sync unless the script all-reduces their gradients itself); none when every one is inside a wrapper
    or the parameters are sharded by rank (FSDP's flat parameters, DTensors)."""
    try:
        with _quiet:
            k = S.optimizers.setdefault(id(optimizer), (len(S.optimizers), optimizer))[0]
            inside = {id(p) for info in S.ddps for _, p in info["params"]}
            params = [p for g in optimizer.param_groups for p in g["params"] if id(p) not in inside and p.requires_grad]
            if not params or any(type(p).__name__ in ("FlatParameter", "DTensor") for p in params):
                return []
            d = _digest_params([(str(i), p) for i, p in enumerate(params)])
    except Exception as exc:  # an optimizer of another shape: the step goes on, undigested
        _warn("digest", exc)
        return []
    return [{**d, "opt": k, "tensors": len(params)}]


def _describe_tensor(x):
    try:
        import torch

        if isinstance(x, torch.Tensor):
            return {"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", "")}
        if isinstance(x, (list, tuple)):
            return {"len": len(x)}
    except Exception:
        pass
    return None


def _group_name(group) -> str:
    if group is None:
        return "world"
    key = id(group)
    name = S.group_names.get(key)
    if name is not None:
        return name
    try:
        import torch.distributed as dist

        if group is dist.GroupMember.WORLD:
            name = "world"
        else:
            ranks = dist.get_process_group_ranks(group)
            name = "world" if list(ranks) == list(range(dist.get_world_size())) else "ranks" + ",".join(map(str, ranks))
    except Exception:
        name = f"group@{key:x}"
    S.group_names[key] = name
    return name


# op name -> (parameter described by shape/dtype or None, point-to-point?)
_COLLECTIVES = {
    "all_reduce": ("tensor", False),
    "all_reduce_coalesced": ("tensors", False),
    "broadcast": ("tensor", False),
    "reduce": ("tensor", False),
    "all_gather": ("tensor", False),
    "all_gather_into_tensor": ("input_tensor", False),
    "all_gather_object": (None, False),
    "gather": ("tensor", False),
    "gather_object": (None, False),
    "scatter": ("tensor", False),
    "scatter_object_list": (None, False),
    "broadcast_object_list": ("object_list", False),
    "reduce_scatter": ("output", False),
    "reduce_scatter_tensor": ("output", False),
    "all_to_all": ("input_tensor_list", False),
    "all_to_all_single": (None, False),
    "barrier": (None, False),
    "monitored_barrier": (None, False),
    "send": ("tensor", True),
    "recv": ("tensor", True),
    "isend": ("tensor", True),
    "irecv": ("tensor", True),
    "send_object_list": (None, True),
    "recv_object_list": (None, True),
    "batch_isend_irecv": (None, True),
}


def _record_collective(op: str, *, group="world", p2p=False, desc=None, reduce_op=None, extra=None) -> None:
    S.coll_n += 1
    fields = {"n": S.coll_n, "op": op, "group": group}
    if p2p:
        fields["p2p"] = True
    if desc:
        fields.update(desc)
    if reduce_op is not None:
        fields["reduce_op"] = getattr(reduce_op, "name", None) or str(reduce_op).split(".")[-1]
    if extra:
        fields.update(extra)
    fields["site"] = _site(3)
    emit("coll", **fields)


def _wrap_collective(name: str, orig, arg_name, p2p: bool):
    import inspect

    try:
        params = list(inspect.signature(orig).parameters)
    except (TypeError, ValueError):
        params = []

    def _arg(args, kwargs, pname):
        if pname in kwargs:
            return kwargs[pname]
        if pname in params:
            i = params.index(pname)
            if i < len(args):
                return args[i]
        return None

    @functools.wraps(orig)
    def wrapper(*args, **kwargs):
        if _depth():
            return orig(*args, **kwargs)
        with _quiet:
            try:
                desc = _describe_tensor(_arg(args, kwargs, arg_name)) if arg_name else None
                group = _group_name(_arg(args, kwargs, "group"))
                rop = (
                    _arg(args, kwargs, "op")
                    if name
                    in ("all_reduce", "reduce", "reduce_scatter", "reduce_scatter_tensor", "all_reduce_coalesced")
                    else None
                )
                extra = None
                if name in ("all_reduce", "all_reduce_coalesced") and S.trained:
                    if _is_gradient(_arg(args, kwargs, arg_name)):
                        S.grad_allreduces += 1
                        extra = {"grad": True}
                _record_collective(name, group=group, p2p=p2p, desc=desc, reduce_op=rop, extra=extra)
            except Exception as exc:
                _warn(f"record {name}", exc)
            return orig(*args, **kwargs)

    wrapper.__ddpfix_probe__ = True
    return wrapper


def _patch_distributed() -> None:
    import torch.distributed as dist

    if not dist.is_available():
        return
    import torch.distributed.distributed_c10d as c10d

    for name, (arg_name, p2p) in _COLLECTIVES.items():
        orig = getattr(c10d, name, None)
        if orig is None or getattr(orig, "__ddpfix_probe__", False):
            continue
        w = _wrap_collective(name, orig, arg_name, p2p)
        setattr(c10d, name, w)
        if getattr(dist, name, None) is orig:
            setattr(dist, name, w)

    orig_init = c10d.init_process_group

    @functools.wraps(orig_init)
    def init_process_group(*args, **kwargs):
        if _depth():
            return orig_init(*args, **kwargs)
        args = list(args)
        requested = kwargs.get("backend", args[0] if args else None)
        forced = S.config.get("backend")
        if forced:
            if args:
                args[0] = forced
            else:
                kwargs["backend"] = forced
        timeout = kwargs.get("timeout", args[2] if len(args) > 2 else None)
        injected = None
        pg_timeout = S.config.get("pg_timeout")
        if timeout is None and pg_timeout:
            import datetime

            kwargs["timeout"] = datetime.timedelta(seconds=float(pg_timeout))
            injected = float(pg_timeout)
        site = _site(2)
        with _quiet:
            result = orig_init(*args, **kwargs)
        S.joined = True
        try:
            backend = str(dist.get_backend())
        except Exception:
            backend = None
        emit(
            "init_pg",
            requested=None if requested is None else str(requested),
            forced=forced or None,
            backend=backend,
            timeout_s=(timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout)
            if injected is None
            else injected,
            timeout_injected=injected is not None,
            world_size=dist.get_world_size(),
            rank=dist.get_rank(),
            site=site,
        )
        return result

    c10d.init_process_group = init_process_group
    if getattr(dist, "init_process_group", None) is orig_init:
        dist.init_process_group = init_process_group

    orig_destroy = c10d.destroy_process_group

    @functools.wraps(orig_destroy)
    def destroy_process_group(*args, **kwargs):
        if not _depth() and not args and kwargs.get("group") is None:
            emit("destroy_pg", site=_site(2))
        with _quiet:
            return orig_destroy(*args, **kwargs)

    c10d.destroy_process_group = destroy_process_group
    if getattr(dist, "destroy_process_group", None) is orig_destroy:
        dist.destroy_process_group = destroy_process_group


class _RecordingHook:
    """A DDP comm hook that records each bucket's all-reduce, then runs the default all-reduce hook or
    the script's own. A class at module level (the probe runs under an importable name), so that a DDP
    wrapper the script pickles whole, which keeps its comm hooks, pickles as it would without the probe."""

    def __init__(self, info: dict, user_hook=None) -> None:
        self.info, self.user_hook = info, user_hook
        self.__name__ = self.__qualname__ = "ddpfix_allreduce_hook"  # (DDP logs the hook's name)
        if user_hook is not None:
            functools.update_wrapper(self, user_hook)

    def __call__(self, state, bucket):
        with _quiet:
            try:
                buf = bucket.buffer()
                _record_collective(
                    "ddp.allreduce",
                    group=self.info.get("group", "world"),
                    desc={"shape": [buf.numel()], "dtype": str(buf.dtype).replace("torch.", "")},
                    extra={"ddp": self.info["id"], "bucket": bucket.index()},
                )
            except Exception as exc:
                _warn("record ddp.allreduce", exc)
            if self.user_hook is not None:
                return self.user_hook(state, bucket)
            from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

            return allreduce_hook(state, bucket)


def _patch_ddp() -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    if getattr(DDP.__init__, "__ddpfix_probe__", False):
        return
    orig_init = DDP.__init__
    orig_register = DDP.register_comm_hook
    orig_builtin = getattr(DDP, "_register_builtin_comm_hook", None)

    def first_forward(module):
        info = S.ddp_by_obj.get(module)
        if info is None:
            return None
        info["forwards"] += 1
        if not info["hooked"]:
            info["hooked"] = "ddpfix"
            try:
                orig_register(module, module.process_group, _RecordingHook(info))
                # the reducer runs it; DDP's own list of hooks (read by its Python reducer only) keeps the
                # process group as the hook's state, which would make a wrapper the script pickles whole fail
                hooks = getattr(module, "_comm_hooks", None)
                if isinstance(hooks, list):
                    hooks[:] = [(h, st) for h, st in hooks if not isinstance(h, _RecordingHook)]
            except Exception as exc:
                info["hooked"] = "failed"
                _warn("register comm hook", exc)
        return None

    @functools.wraps(orig_init)
    def __init__(self, module, *args, **kwargs):
        site = _site(2)
        with _quiet:
            orig_init(self, module, *args, **kwargs)
        try:
            ignored = set(getattr(self, "parameters_to_ignore", ()) or ())
            named = [
                (n, p) for n, p in self.module.named_parameters() if n not in ignored and f"module.{n}" not in ignored
            ]
            first = named[0][1] if named else None
            info = {
                "id": len(S.ddps),
                "module": type(self.module).__name__,
                "params": named,
                "forwards": 0,
                "hooked": None,
                "group": _group_name(getattr(self, "process_group", None)),
            }
            S.ddps.append(info)
            S.ddp_by_obj[self] = info
            emit(
                "ddp",
                id=info["id"],
                module=info["module"],
                module_path=f"{type(self.module).__module__}.{type(self.module).__qualname__}",
                site=site,
                n_params=len(named),
                numel=sum(p.numel() for _, p in named),
                device=str(first.device) if first is not None else None,
                device_ids=[str(d) for d in (getattr(self, "device_ids", None) or [])] or None,
                find_unused_parameters=bool(getattr(self, "find_unused_parameters", False)),
                broadcast_buffers=bool(getattr(self, "broadcast_buffers", False)),
                static_graph=bool(getattr(self, "static_graph", False)),
                group=info["group"],
                digest=_safe_digest(named),
            )
        except Exception as exc:
            _warn("record DDP", exc)

    __init__.__ddpfix_probe__ = True

    @functools.wraps(orig_register)
    def register_comm_hook(self, state, hook):
        info = S.ddp_by_obj.get(self)
        if info is None or info["hooked"]:
            return orig_register(self, state, hook)
        info["hooked"] = "user"
        emit("ddp_comm_hook", ddp=info["id"], hook=getattr(hook, "__qualname__", repr(hook)))
        return orig_register(self, state, _RecordingHook(info, hook))

    DDP.__init__ = __init__
    DDP.register_comm_hook = register_comm_hook
    # forward itself, not a forward pre-hook: `ddp.forward(x)` syncs gradients as `ddp(x)` does
    DDP.forward = _observed_forward(DDP.forward, first_forward)

    if orig_builtin is not None:

        @functools.wraps(orig_builtin)
        def _register_builtin_comm_hook(self, comm_hook_type):
            info = S.ddp_by_obj.get(self)
            if info is not None and not info["hooked"]:
                info["hooked"] = "builtin"
                emit("ddp_comm_hook", ddp=info["id"], hook=str(comm_hook_type), builtin=True)
            return orig_builtin(self, comm_hook_type)

        DDP._register_builtin_comm_hook = _register_builtin_comm_hook


# --------------------------------------------------------------------------- training forwards, backward
def _module_of_ddp(module) -> bool:
    return any(getattr(w, "module", None) is module for w in list(S.ddp_by_obj.keys()))


def _trainable(module) -> bool:
    return any(p.requires_grad for p in module.parameters())


def _plain_info(module) -> dict | None:
    """The record of a module that is not a DDP wrapper and ran an outermost training forward (None: it
    has no trainable parameters)."""
    info = S.trained.get(module)
    if info is not None or module in S.untrained:
        return info
    if not _trainable(module):
        S.untrained.add(module)
        return None
    info = {
        "id": len(S.trained_infos),
        "module": type(module).__name__,
        "site": _site(4),
        "ddp_inner": _module_of_ddp(module),
        "reached": 0,
        "params": 0,
    }
    S.trained[module] = info
    S.trained_infos.append(info)
    emit("train_module", **{k: v for k, v in info.items() if k not in ("reached", "params")})
    return info


def _tensors(args):
    import torch

    for a in args:
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (t for t in a if isinstance(t, torch.Tensor))
        elif isinstance(a, dict):
            yield from (t for t in a.values() if isinstance(t, torch.Tensor))


def _digest_inputs(args) -> str | None:
    """SHA-1 of the tensors handed to a forward (dtype, shape and bytes; of a large one its first bytes
    and its sum), or None when it got no tensor."""
    import hashlib

    import torch

    h = hashlib.sha1()
    seen = False
    with torch.no_grad():
        for t in _tensors(args):
            seen = True
            t = t.detach()
            if t.device.type != "cpu":
                t = t.cpu()
            t = t.contiguous().reshape(-1)
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            raw = t.view(torch.uint8) if t.numel() else t
            if raw.numel() > INPUT_DIGEST_BYTES:
                raw = raw[:INPUT_DIGEST_BYTES]
                h.update(repr(float(t.double().sum()) if not t.is_complex() else 0.0).encode())
            try:
                h.update(raw.numpy())  # the buffer itself, no copy
            except Exception:  # numpy missing: slower, same digest
                h.update(bytes(raw.tolist()))
    return h.hexdigest()[:16] if seen else None


def _on_training_forward(module, args) -> None:
    ddp = S.ddp_by_obj.get(module)
    if ddp is None:
        plain = _plain_info(module)
        if plain is None:
            return
        name = plain["module"]
    else:
        name = ddp["module"]
    S.train_forwards += 1
    if S.train_forwards > INPUT_DIGESTS:
        return
    digest = _digest_inputs(args)
    if digest is not None:
        emit("input", n=S.train_forwards, module=name, ddp=ddp is not None, sha1=digest, site=_site(4))


def _forward_pre(module, args):
    _tls.called = module  # the forward that runs next came through `module(...)`
    depth = getattr(_tls, "fwd", 0)
    _tls.fwd = depth + 1
    if depth or _depth() or not module.training:
        return None
    try:
        import torch

        if torch.is_grad_enabled():
            with _quiet:
                _on_training_forward(module, args)
    except Exception as exc:
        _warn("record forward", exc)
    return None


def _forward_post(module, args, output):
    _tls.called = None
    _tls.fwd = max(0, getattr(_tls, "fwd", 1) - 1)
    return None


def _observed_forward(orig, before=None):
    """``orig`` (a forward function) that, called directly (``model.forward(x)``, which runs no module
    hook), does what the global forward hooks do for ``model(x)``; called through ``model(x)``, where
    those hooks ran already, it only runs ``orig``. ``before(module)`` runs ahead of every forward.

    The wrapper reads nothing from the probe's globals (what it uses it closes over) and takes
    ``orig``'s globals and metadata: ``torch.jit.script`` compiles ``orig``'s source and resolves the
    names in it through the globals and closure of the function it finds on the class."""
    import types

    tls, pre, post, tracing = _tls, _forward_pre, _forward_post, _fx_tracing()

    def forward(self, *args, **kwargs):
        direct = getattr(tls, "called", None) is not self and not tracing()  # torch.fx traces, runs nothing
        tls.called = None
        if direct:
            pre(self, args)
            tls.called = None
        try:
            if before is not None:
                before(self)
            return orig(self, *args, **kwargs)
        finally:
            if direct:
                post(self, args, None)

    owner_globals = getattr(orig, "__globals__", forward.__globals__)
    out = types.FunctionType(forward.__code__, owner_globals, orig.__name__, None, forward.__closure__)
    functools.update_wrapper(out, orig)
    out.__ddpfix_probe__ = True
    return out


def _fx_tracing():
    """torch.fx's "a symbolic trace is running" test (a function; one that says no when torch lacks it)."""
    try:
        from torch.fx import _symbolic_trace as fx
    except Exception:
        return lambda: False
    return getattr(fx, "is_fx_symbolic_tracing", None) or (lambda: bool(getattr(fx, "_is_fx_tracing_flag", False)))


def _observe_direct_forwards(cls) -> None:
    """Wrap the forward that ``cls`` (a module class) defines in the script's own code."""
    import types

    fn = cls.__dict__.get("forward")
    if isinstance(fn, types.FunctionType) and not getattr(fn, "__ddpfix_probe__", False):
        if _is_user_file(fn.__code__.co_filename):
            cls.forward = _observed_forward(fn)


def _patch_forward() -> None:
    import torch.nn as nn
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

    register_module_forward_pre_hook(_forward_pre)
    register_module_forward_hook(_forward_post, always_call=True)
    # `model.forward(x)` runs no hook: the forwards of the script's module classes (seen as they are
    # defined) and of nn.Sequential observe such calls themselves
    if not getattr(nn.Sequential.forward, "__ddpfix_probe__", False):
        nn.Sequential.forward = _observed_forward(nn.Sequential.forward)
    orig_subclass = nn.Module.__dict__.get("__init_subclass__")
    if getattr(orig_subclass, "__ddpfix_probe__", False):
        return

    def __init_subclass__(cls, **kwargs):
        if orig_subclass is not None:
            orig_subclass.__get__(None, cls)(**kwargs)
        else:
            super(nn.Module, cls).__init_subclass__(**kwargs)
        try:
            _observe_direct_forwards(cls)
        except Exception as exc:
            _warn("observe forward", exc)

    __init_subclass__.__ddpfix_probe__ = True
    nn.Module.__init_subclass__ = classmethod(__init_subclass__)


def _is_gradient(tensors) -> bool:
    """Whether ``tensors`` (a tensor or a list) is the gradient of a parameter of a plain trained module."""
    import torch

    ts = [tensors] if isinstance(tensors, torch.Tensor) else [t for t in tensors or () if isinstance(t, torch.Tensor)]
    if not ts:
        return False
    ptrs = set()
    for module in list(S.trained.keys()):
        for p in module.parameters():
            if p.grad is not None:
                ptrs.add(p.grad.data_ptr())
    return any(t.data_ptr() in ptrs for t in ts)


def _after_backward(site) -> None:
    S.backwards += 1
    n = S.backwards
    if n > GRAD_LOOKS and n % 50:
        return
    reached = []
    for module, info in list(S.trained.items()):
        k = sum(1 for p in module.parameters() if p.grad is not None)
        if k:
            info["reached"] += 1
            info["params"] = max(info["params"], k)
            reached.append(info["id"])
    if n == 1 or (reached and not S.reached_seen):
        S.reached_seen = S.reached_seen or bool(reached)
        emit("backward", n=n, site=site, plain=reached)


def _patch_backward() -> None:
    import torch.autograd as autograd

    orig = autograd.backward
    if getattr(orig, "__ddpfix_probe__", False):
        return

    @functools.wraps(orig)
    def backward(*args, **kwargs):
        if _depth():
            return orig(*args, **kwargs)
        site = _site(2)
        out = orig(*args, **kwargs)
        try:
            with _quiet:
                _after_backward(site)
        except Exception as exc:
            _warn("record backward", exc)
        return out

    backward.__ddpfix_probe__ = True
    autograd.backward = backward


def _on_optimizer_step(optimizer, args, kwargs) -> None:
    if _depth():
        return
    S.steps += 1
    n = S.steps
    cur = S.current_pass
    if cur is not None:
        cur["steps"] += 1
    fields = {"n": n, "opt": type(optimizer).__name__, "site": _site(2)}
    if cur is not None:
        fields["loader"] = cur["loader"]
        fields["pass"] = cur["pass"]
    if S.ddps and _digest_due(n):
        t0 = time.perf_counter()
        fields["digests"] = _ddp_digests()
        fields["outside"] = _outside_digests(optimizer)
        S.digest_time += time.perf_counter() - t0
    emit("step", **fields)


def _digest_due(n: int) -> bool:
    """Digest the first steps, then as often as DIGEST_BUDGET of the run time allows."""
    now = time.perf_counter()
    if S.first_step_t is None:
        S.first_step_t = now
    if n <= ALWAYS_DIGEST_STEPS:
        return True
    return S.digest_time <= DIGEST_BUDGET * (now - S.first_step_t)


def _loader_info(loader) -> dict:
    info = S.loaders.get(loader)
    if info is not None:
        return info
    site = getattr(loader, "_ddpfix_site", None) or _site(4) or "?"
    # A loader rebuilt at the same place every epoch continues the same key (its passes are epochs);
    # loaders over different datasets built at the same place (a helper) get keys of their own.
    try:
        size = len(loader.dataset)
    except Exception:
        size = None
    fingerprint = (type(loader.dataset).__name__, size)
    ordinals = S.loader_sites.setdefault(site, {})
    nth = ordinals.setdefault(fingerprint, len(ordinals))
    key = site if nth == 0 else f"{site}#{nth}"
    info = S.loader_keys.get(key)
    if info is None:
        info = {"key": key, "site": site, "passes": 0}
        S.loader_keys[key] = info
        emit("loader", **_describe_loader(loader, key, site))
    S.loaders[loader] = info
    return info


def _class_name(obj) -> str | None:
    return None if obj is None else type(obj).__name__


def _describe_loader(loader, key, site) -> dict:
    from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler
    from torch.utils.data.dataloader import _DatasetKind

    d: dict = {"key": key, "site": site}
    ds = loader.dataset
    d["dataset"] = _class_name(ds)
    try:
        d["dataset_len"] = len(ds)
    except Exception:
        d["dataset_len"] = None
    d["iterable"] = getattr(loader, "_dataset_kind", None) == _DatasetKind.Iterable
    d["subset"] = _subset_digest(ds)
    sampler = getattr(loader, "sampler", None)
    batch_sampler = getattr(loader, "batch_sampler", None)
    d["sampler"] = _class_name(sampler)
    d["batch_sampler"] = _class_name(batch_sampler)
    d["batch_size"] = getattr(loader, "batch_size", None)
    d["drop_last"] = bool(getattr(loader, "drop_last", False))
    d["num_workers"] = getattr(loader, "num_workers", 0)
    inner = sampler
    if batch_sampler is not None and getattr(loader, "batch_size", None) is None:  # a user-given batch_sampler
        inner = getattr(batch_sampler, "sampler", None)
        if inner is not None:
            d["sampler"] = _class_name(inner)
        bs = getattr(batch_sampler, "batch_size", None)
        if bs is not None:
            d["batch_size"] = bs
        d["drop_last"] = bool(getattr(batch_sampler, "drop_last", d["drop_last"]))
    shuffle = None
    full = False
    if isinstance(inner, DistributedSampler):
        shuffle = bool(inner.shuffle)
        full = True
        d["dist_sampler"] = {
            "num_replicas": inner.num_replicas,
            "rank": inner.rank,
            "total_size": inner.total_size,
            "num_samples": inner.num_samples,
            "drop_last": bool(inner.drop_last),
            "seed": inner.seed,
            "shuffle": bool(inner.shuffle),
        }
    elif isinstance(inner, RandomSampler):
        shuffle = True
        full = (not inner.replacement) and inner._num_samples is None
        d["replacement"] = bool(inner.replacement)  # independent draws: the ranks' streams overlap by chance
    elif isinstance(inner, SequentialSampler):
        shuffle = False
        full = True
    elif inner is not None and "Random" in type(inner).__name__:
        shuffle = True
    d["shuffle"] = shuffle
    d["full_coverage"] = full
    return d


def _subset_digest(ds) -> str | None:
    """For a `Subset` (what `random_split` returns), a digest of the indices of the underlying dataset
    it holds, through nested subsets: ranks that split the data differently have different digests,
    and their shards overlap however disjoint the positions each rank draws. None for other datasets."""
    import hashlib

    from torch.utils.data import Subset

    if not isinstance(ds, Subset):
        return None
    try:
        idx = [int(i) for i in ds.indices]
        inner = ds.dataset
        while isinstance(inner, Subset):
            idx = [int(inner.indices[i]) for i in idx]
            inner = inner.dataset
        return hashlib.sha1(",".join(map(str, idx)).encode()).hexdigest()[:16]
    except Exception as exc:
        _warn("digest subset", exc)
        return None


def _index_value(x):
    try:
        return int(x)
    except Exception:
        return str(x)


def _flush_pass(rec) -> None:
    if rec.get("flushed"):
        return
    rec["flushed"] = True
    if S.open_passes.get(rec["loader"]) is rec:
        del S.open_passes[rec["loader"]]
    idx = rec.pop("indices")
    emit(
        "pass",
        loader=rec["loader"],
        n=rec["pass"],
        epoch=rec["epoch"],
        complete=rec["complete"],
        steps=rec["steps"],
        indices=[_index_value(i) for i in idx] if not rec["iterable"] else None,
        count=len(idx),
    )


def _start_pass(it, loader) -> None:
    if _depth():
        return
    try:
        info = _loader_info(loader)
        old = S.open_passes.get(info["key"])
        if old is not None:
            _flush_pass(old)
        sampler = getattr(loader, "sampler", None)
        bs = getattr(loader, "batch_sampler", None)
        epoch = getattr(sampler, "epoch", None)
        if epoch is None and bs is not None:
            epoch = getattr(getattr(bs, "sampler", None), "epoch", None)
        from torch.utils.data.dataloader import _DatasetKind

        rec = {
            "loader": info["key"],
            "pass": info["passes"],
            "epoch": epoch if isinstance(epoch, int) else None,
            "indices": [],
            "complete": False,
            "steps": 0,
            "iterable": getattr(loader, "_dataset_kind", None) == _DatasetKind.Iterable,
        }
        info["passes"] += 1
        S.open_passes[info["key"]] = rec
        it._ddpfix_pass = rec
        emit("pass_start", loader=rec["loader"], n=rec["pass"], epoch=rec["epoch"], site=_site(3))
    except Exception as exc:
        _warn("start pass", exc)


def _patch_dataloader() -> None:
    from torch.utils.data import DataLoader
    from torch.utils.data import dataloader as dl

    base = dl._BaseDataLoaderIter
    if getattr(base.__init__, "__ddpfix_probe__", False):
        return

    orig_dl_init = DataLoader.__init__

    @functools.wraps(orig_dl_init)
    def dl_init(self, *args, **kwargs):
        orig_dl_init(self, *args, **kwargs)
        try:
            object.__setattr__(self, "_ddpfix_site", _site(2))
        except Exception:
            pass

    DataLoader.__init__ = dl_init

    orig_init = base.__init__
    orig_reset = base._reset
    orig_next_index = base._next_index

    @functools.wraps(orig_init)
    def it_init(self, loader, *args, **kwargs):
        orig_init(self, loader, *args, **kwargs)
        _start_pass(self, loader)

    it_init.__ddpfix_probe__ = True

    @functools.wraps(orig_reset)
    def it_reset(self, loader, first_iter=False, *args, **kwargs):
        orig_reset(self, loader, first_iter, *args, **kwargs)
        if not first_iter:
            _start_pass(self, loader)

    @functools.wraps(orig_next_index)
    def it_next_index(self):
        rec = getattr(self, "_ddpfix_pass", None)
        try:
            idx = orig_next_index(self)
        except StopIteration:
            if rec is not None:
                rec["complete"] = True
                S.current_pass = rec
                _flush_pass(rec)
            raise
        if rec is not None and not rec.get("flushed"):
            S.current_pass = rec
            if not rec["iterable"]:
                if isinstance(idx, (list, tuple)):
                    rec["indices"].extend(idx)
                elif hasattr(idx, "tolist") and not isinstance(idx, (int, str)):
                    v = idx.tolist()
                    rec["indices"].extend(v if isinstance(v, list) else [v])
                else:
                    rec["indices"].append(idx)
        return idx

    base.__init__ = it_init
    base._reset = it_reset
    base._next_index = it_next_index


def _patch_save() -> None:
    import torch
    import torch.serialization as ser

    orig_save = ser.save
    if getattr(orig_save, "__ddpfix_probe__", False):
        return

    @functools.wraps(orig_save)
    def save(obj, f, *args, **kwargs):
        if not _depth():
            if isinstance(f, (str, bytes, os.PathLike)):
                _record_write("torch.save", f)
            else:
                name = getattr(f, "name", None)
                if isinstance(name, str):
                    _record_write("torch.save", name)
        with _quiet:
            return orig_save(obj, f, *args, **kwargs)

    save.__ddpfix_probe__ = True
    ser.save = save
    if torch.save is orig_save:
        torch.save = save


def _patch_summary_writer(module) -> None:
    cls = getattr(module, "SummaryWriter", None)
    if cls is None or getattr(cls.__init__, "__ddpfix_probe__", False):
        return
    orig = cls.__init__

    @functools.wraps(orig)
    def __init__(self, *args, **kwargs):
        given = kwargs.get("log_dir", kwargs.get("logdir", args[0] if args else None))
        orig(self, *args, **kwargs)
        log_dir = getattr(self, "log_dir", None) or getattr(self, "logdir", None) or given
        if given is None:
            # the default folder is runs/<date>_<host><comment>: the same place on every rank
            _record_write("SummaryWriter", os.path.join("runs", "<default log_dir>"), {"default": True})
        elif log_dir is not None:
            _record_write("SummaryWriter", log_dir)

    __init__.__ddpfix_probe__ = True
    cls.__init__ = __init__


def _patch_wandb(module) -> None:
    orig = getattr(module, "init", None)
    if orig is None or getattr(orig, "__ddpfix_probe__", False):
        return

    @functools.wraps(orig)
    def init(*args, **kwargs):
        _record_write("wandb.init", os.path.join(os.getcwd(), "wandb", "<run>"))
        return orig(*args, **kwargs)

    init.__ddpfix_probe__ = True
    module.init = init


def _register_step_hook() -> None:
    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(_on_optimizer_step)


TORCH_PATCHES = (
    ("torch.save", _patch_save),
    ("DataLoader", _patch_dataloader),
    ("torch.distributed", _patch_distributed),
    ("DistributedDataParallel", _patch_ddp),
    ("optimizer hook", _register_step_hook),
    ("module forward", _patch_forward),
    ("autograd.backward", _patch_backward),
)


def _on_torch_imported(torch_module) -> None:
    torch_dir = os.path.dirname(os.path.abspath(torch_module.__file__)) + os.sep
    S.lib_prefixes = tuple(sorted(set(S.lib_prefixes + (torch_dir,))))
    S.torch_hooked = True
    installed, failed = [], []
    for name, fn in TORCH_PATCHES:
        try:
            fn()
            installed.append(name)
        except Exception as exc:
            failed.append(name)
            _warn(f"patch {name}", exc)
    emit("patched", installed=installed, failed=failed)


def _install_import_hooks() -> None:
    hooks = {}
    if "torch" in sys.modules:
        _on_torch_imported(sys.modules["torch"])
    else:
        hooks["torch"] = _on_torch_imported
    for mod in ("torch.utils.tensorboard.writer", "tensorboardX.writer"):
        if mod in sys.modules:
            _patch_summary_writer(sys.modules[mod])
        else:
            hooks[mod] = _patch_summary_writer
    if "wandb" in sys.modules:
        _patch_wandb(sys.modules["wandb"])
    else:
        hooks["wandb"] = _patch_wandb
    if "logging" in sys.modules:
        _patch_logging(sys.modules["logging"])
    else:
        hooks["logging"] = _patch_logging
    if hooks:
        sys.meta_path.insert(0, _PostImportFinder(hooks))


# --------------------------------------------------------------------------- set-up and run
def _load_config() -> dict:
    raw = os.environ.pop(ENV, None)
    cfg = {}
    if raw:
        try:
            cfg = json.loads(raw)
        except ValueError:
            cfg = {}
    return cfg


def _open_run_files(cfg: dict) -> None:
    run_dir = cfg.get("run_dir")
    if not run_dir:
        import tempfile

        run_dir = os.path.join(
            tempfile.gettempdir(), f"ddpfix-probe-{os.environ.get('TORCHELASTIC_RUN_ID', os.getppid())}"
        )
        os.makedirs(run_dir, exist_ok=True)
        if S.rank == 0:
            print(f"ddpfix probe: writing traces to {run_dir}", file=sys.stderr)
    S.run_dir = os.path.abspath(run_dir)
    S.fd = os.open(
        os.path.join(S.run_dir, f"rank{S.rank}.jsonl"),
        os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0),
        0o644,
    )
    stack = _ORIG_OPEN(os.path.join(S.run_dir, f"stack{S.rank}.txt"), "w")
    term = _ORIG_OPEN(os.path.join(S.run_dir, f"term{S.rank}.txt"), "w")
    crash = _ORIG_OPEN(os.path.join(S.run_dir, f"crash{S.rank}.txt"), "w")
    S.keep += [stack, term, crash]
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=stack, all_threads=True, chain=False)
        faulthandler.register(signal.SIGTERM, file=term, all_threads=True, chain=True)
        if hasattr(os, "register_at_fork"):
            # forked children (DataLoader workers) keep the default signal behaviour and dump nothing
            os.register_at_fork(after_in_child=_forget_signals)
    faulthandler.enable(file=crash, all_threads=True)


def _forget_signals() -> None:
    try:
        faulthandler.unregister(signal.SIGUSR1)
        faulthandler.unregister(signal.SIGTERM)
    except Exception:
        pass


def _env_int(name: str, default=None):
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return default


def _exception_site(tb) -> str | None:
    import traceback

    best = None
    for fs in traceback.extract_tb(tb):
        if _is_user_file(fs.filename):
            best = f"{fs.filename}:{fs.lineno}"
    return best


def _finish(status: str, **fields) -> None:
    for rec in list(S.open_passes.values()):
        _flush_pass(rec)
    if "torch" in sys.modules and not S.torch_hooked:  # imported past the import hook: nothing patched
        emit("probe_error", what="patch torch", error="torch was imported without the probe's import hook")
    digests = _ddp_digests() if S.ddps else []
    cuda = None
    if "torch" in sys.modules:
        try:
            cuda = bool(sys.modules["torch"].cuda.is_available())
        except Exception:
            cuda = None
    emit(
        "end",
        status=status,
        steps=S.steps,
        digests=digests,
        ddp_forwards={str(i["id"]): i["forwards"] for i in S.ddps},
        ddp_hooks={str(i["id"]): i["hooked"] for i in S.ddps},
        backwards=S.backwards,
        train_forwards=S.train_forwards,
        grad_allreduces=S.grad_allreduces,
        plain_trained=[dict(i) for i in S.trained_infos],
        cuda_available=cuda,
        lost=S.lost,
        **fields,
    )


class _KeepArgv0:
    """Stand-in for runpy's argv[0] switch: keep sys.argv[0] as typed, like ``python script.py``."""

    def __init__(self, value):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _run_script(path: str) -> None:
    """``runpy.run_path(path, run_name="__main__")`` with ``__file__`` absolute and ``sys.argv[0]`` as typed."""
    saved = getattr(runpy, "_ModifiedArgv0", None)
    if saved is not None:
        runpy._ModifiedArgv0 = _KeepArgv0
    try:
        runpy.run_path(path, run_name="__main__")
    finally:
        if saved is not None:
            runpy._ModifiedArgv0 = saved


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:  # torchrun hands on the `--` that keeps the script's options from its own parser
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m ddpfix.verify.probe SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    script, args = argv[0], argv[1:]
    S.config = _load_config()
    S.rank = _env_int("RANK", 0)
    S.script = os.path.abspath(script)
    S.script_dir = os.path.dirname(S.script)
    S.lib_prefixes = library_prefixes()
    _open_run_files(S.config)
    emit(
        "start",
        rank=S.rank,
        local_rank=_env_int("LOCAL_RANK"),
        group_rank=_env_int("GROUP_RANK"),
        world_size=_env_int("WORLD_SIZE"),
        local_world_size=_env_int("LOCAL_WORLD_SIZE"),
        pid=os.getpid(),
        script=S.script,
        argv=[script, *args],
        cwd=os.getcwd(),
        python=sys.version.split()[0],
    )
    _install_stdlib_patches()
    _install_import_hooks()

    sys.argv = [script, *args]
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) in (os.getcwd(), os.path.dirname(_PROBE_FILE)):
        sys.path[0] = S.script_dir
    else:
        sys.path.insert(0, S.script_dir)
    try:
        _run_script(S.script)
    except SystemExit as exc:
        code = exc.code
        ok = code is None or code == 0
        _finish("ok" if ok else "exit", code=code if isinstance(code, int) or code is None else str(code))
        if ok:
            _leave()
        raise
    except BaseException as exc:
        import traceback

        _finish(
            "error",
            error=type(exc).__name__,
            message=str(exc)[:2000],
            site=_exception_site(exc.__traceback__),
            traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])[-4000:],
        )
        raise
    _finish("ok", code=0)
    _leave()
    return 0


def _leave() -> None:
    """With DDPFIX_PROBE_SKIP_TEARDOWN=1 (the test suite sets it), after a distributed script's end: run
    the exit handlers (the script's, logging's, the probe's), flush every open file, and leave without
    the interpreter's teardown. torch keeps a DDP model's gloo threads alive after
    `destroy_process_group()`, and at teardown they race the interpreter's exit ("terminate called
    without an active exception"): a crash that is torch's, after the script's last line, which makes a
    finished run look like a crashed one now and then. `ddpfix verify` itself does not skip it: a crash
    at exit is part of what a user's run does, and is reported as one. A run of one process that joins
    a group itself (`init_process_group(..., world_size=1)`) has those threads too."""
    if os.environ.get("DDPFIX_PROBE_SKIP_TEARDOWN") != "1" or (_env_int("WORLD_SIZE", 1) <= 1 and not S.joined):
        return  # the real exit; or a plain run that joined no process group: no threads to race
    exit_without_teardown()


def exit_without_teardown() -> None:
    """Run the exit handlers, flush every open file, and leave the process with status 0 without the
    interpreter's teardown (`os._exit`). The suite's own runner of scripts under torchrun
    (tests/exit_without_teardown.py) leaves the same way."""
    import atexit
    import gc

    try:
        atexit._run_exitfuncs()
    finally:
        for obj in gc.get_objects():
            if isinstance(obj, io.IOBase):
                try:
                    if not obj.closed and obj.writable():
                        obj.flush()
                except Exception:
                    pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(0)


if __name__ == "__main__":
    # Run under an importable module name (so that the hooks and wrappers pickle by reference) without
    # importing the ddpfix package: the launcher starts this file by path, not with -m.
    if __package__:
        from ddpfix.verify import probe as _probe
    else:
        import importlib.util

        _spec = importlib.util.spec_from_file_location(PRIVATE_NAME, _PROBE_FILE)
        _probe = importlib.util.module_from_spec(_spec)
        sys.modules[PRIVATE_NAME] = _probe
        _spec.loader.exec_module(_probe)
    sys.exit(_probe.main())
