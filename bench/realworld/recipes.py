"""Offline data recipes for the real-script corpus: everything a script reads is made here, in its run
folder, from a fixed seed. Nothing is downloaded.

A manifest entry lists its data as steps, each a table with a ``kind`` (a function below) and that
function's keyword arguments; paths are relative to the entry's working folder::

    data = [{ kind = "mnist", root = "data", variant = "FashionMNIST" },
            { kind = "image_folder", root = "imgs/train", classes = 2, per_class = 4, size = 32 }]

Two kinds do not make data but stand in for something a run would fetch: ``shim`` writes a
``sitecustomize.py`` that the runner puts on ``PYTHONPATH`` (it lets torchvision's CIFAR classes
accept the synthetic archives, whose checksums cannot match the published ones), and ``stub_module``
writes a small stand-in module (a tokenizer that would download its vocabulary). Both are listed in
the manifest and in the report.
"""

from __future__ import annotations

import gzip
import json
import pickle
import random
import struct
from pathlib import Path

SEED = 1234
RECIPES: dict = {}

WORDS = (
    "the of and to in is was he for it with as his on be at by had are but from or have an they which one "
    "you were her all she there would their we him been has when who will more no if out so said what up "
    "its about into than them can only other new some could time these two may then do first any my now "
    "such like our over man me even most made after also did many before must through back years where much "
    "your way well down should because each just those people how too little state good very make world still"
).split()


def recipe(fn):
    RECIPES[fn.__name__] = fn
    return fn


def _rng(extra: str = "") -> random.Random:
    return random.Random(f"{SEED}:{extra}")


def _write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)


def _png(width: int, height: int, rng: random.Random, mode: str = "RGB") -> bytes:
    """A small random PNG (zlib-compressed rows), written without PIL so that the recipes import nothing heavy."""
    import zlib

    channels = {"RGB": 3, "L": 1}[mode]
    color = {"RGB": 2, "L": 0}[mode]
    rows = b"".join(b"\x00" + bytes(rng.randrange(256) for _ in range(width * channels)) for _ in range(height))

    def chunk(tag: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _image(path: Path, size, rng: random.Random, mode: str = "RGB") -> None:
    w, h = (size, size) if isinstance(size, int) else size
    data = _png(w, h, rng, mode)
    if path.suffix.lower() in (".jpg", ".jpeg", ".tif", ".gif", ".bmp"):
        # other formats go through PIL, which every image script imports anyway
        import io

        from PIL import Image

        img = Image.open(io.BytesIO(data))
        buf = io.BytesIO()
        img.save(
            buf,
            format={".jpg": "JPEG", ".jpeg": "JPEG", ".tif": "TIFF", ".gif": "GIF", ".bmp": "BMP"}[path.suffix.lower()],
        )
        data = buf.getvalue()
    _write(path, data)


@recipe
def mnist(
    base: Path, root: str = "data", variant: str = "MNIST", n_train: int = 64, n_test: int = 32, gz: bool = False
):
    """torchvision's MNIST layout: ``ROOT/VARIANT/raw/*-ubyte`` (what the class checks before downloading)."""
    rng = _rng(variant)
    raw = base / root / variant / "raw"
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = struct.pack(">IIII", 2051, n, 28, 28) + bytes(rng.randrange(256) for _ in range(n * 28 * 28))
        labels = struct.pack(">II", 2049, n) + bytes(i % 10 for i in range(n))
        for name, data in ((f"{prefix}-images-idx3-ubyte", images), (f"{prefix}-labels-idx1-ubyte", labels)):
            _write(raw / name, data)
            if gz:
                _write(raw / f"{name}.gz", gzip.compress(data))


@recipe
def cifar(base: Path, root: str = "data", variant: str = "cifar10", n_train: int = 64, n_test: int = 32):
    """torchvision's CIFAR-10/100 pickles (needs the ``shim`` step: the checksums cannot match)."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    if variant == "cifar10":
        folder = base / root / "cifar-10-batches-py"
        per = -(-n_train // 5)
        for i in range(5):
            n = min(per, n_train - i * per)
            data = rng.integers(0, 256, (max(n, 0), 3072), dtype=np.uint8)
            _write(
                folder / f"data_batch_{i + 1}",
                pickle.dumps({"data": data, "labels": [j % 10 for j in range(len(data))]}),
            )
        data = rng.integers(0, 256, (n_test, 3072), dtype=np.uint8)
        _write(folder / "test_batch", pickle.dumps({"data": data, "labels": [j % 10 for j in range(n_test)]}))
        _write(folder / "batches.meta", pickle.dumps({"label_names": [f"class{i}" for i in range(10)]}))
    else:
        folder = base / root / "cifar-100-python"
        for name, n in (("train", n_train), ("test", n_test)):
            data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
            _write(
                folder / name,
                pickle.dumps(
                    {
                        "data": data,
                        "fine_labels": [j % 100 for j in range(n)],
                        "coarse_labels": [j % 20 for j in range(n)],
                    }
                ),
            )
        _write(folder / "meta", pickle.dumps({"fine_label_names": [f"c{i}" for i in range(100)]}))


SHIM = '''"""Run-folder shim written by the corpus runner: torchvision's CIFAR classes accept synthetic archives."""
import importlib.abc
import importlib.util
import sys


class _Patch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torchvision.datasets.cifar":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def patched(module):
            exec_module(module)
            module.check_integrity = lambda fpath, md5=None: __import__("os").path.isfile(fpath)

        loader.exec_module = patched
        return spec


sys.meta_path.insert(0, _Patch())
'''


@recipe
def shim(base: Path, folder: str = "_shim"):
    """``sitecustomize.py`` for PYTHONPATH: CIFAR integrity checks pass (the runner adds FOLDER to PYTHONPATH)."""
    _write(base / folder / "sitecustomize.py", SHIM)


STUBS = {
    "tiktoken": '''"""Stand-in for tiktoken written by the corpus runner (the real one downloads its vocabulary)."""


class Encoding:
    n_vocab = 50257
    eot_token = 50256
    _special_tokens = {"<|endoftext|>": 50256}

    def encode(self, text, allowed_special=(), **kwargs):
        return [b % 256 for b in text.encode("utf-8")]

    def encode_ordinary(self, text):
        return self.encode(text)

    def decode(self, tokens):
        return "".join(chr(32 + int(t) % 95) for t in tokens)


def get_encoding(name):
    return Encoding()
''',
    "wandb": '''"""Stand-in for wandb written by the corpus runner (the real one logs in over the network): each
`wandb.init()` writes a run folder under ./wandb as the real one does, and what needs a run (`log`,
`watch`, `save`, `config.update`) raises before `init()` in that process, as wandb's own calls do."""

import json
import os
import time

run = None


class Error(Exception):
    pass


class Run:
    def __init__(self, folder):
        self.dir = folder

    def log(self, data, step=None, **kwargs):
        log(data, step=step, **kwargs)

    def finish(self):
        finish()


def _need(what):
    if run is None:
        raise Error(f"You must call wandb.init() before {what}()")


def _write(name, text, mode="w"):
    with open(os.path.join(run.dir, name), mode) as f:
        f.write(text)


class _Config(dict):
    def update(self, values=None, **kwargs):
        _need("wandb.config.update")
        if values is not None and not isinstance(values, dict):
            values = vars(values)
        super().update(values or {}, **kwargs)
        _write("config.json", json.dumps(self, default=str))


config = _Config()


def init(project=None, name=None, **kwargs):
    global run
    folder = os.path.join("wandb", f"run-{time.strftime('%Y%m%d_%H%M%S')}-{os.getpid()}")
    os.makedirs(folder, exist_ok=True)
    run = Run(folder)
    _write("wandb-metadata.json", json.dumps({"project": project, "name": name}))
    return run


def log(data, step=None, **kwargs):
    _need("wandb.log")
    _write("history.jsonl", json.dumps(data, default=str) + "\\n", "a")


def watch(model, *args, **kwargs):
    _need("wandb.watch")


def save(path, *args, **kwargs):
    _need("wandb.save")
    _write("saved.txt", str(path) + "\\n", "a")


def finish():
    global run
    run = None
''',
    "tensorflow": '''"""Stand-in for tensorflow written by the corpus runner (not in the corpus environment): only
tf.summary's file writer. Like TensorFlow's, each writer creates its own event file in its folder,
named by time, host and process; each summary written under `as_default()` appends a line to it."""

import os
import socket
import time


class _Writer:
    def __init__(self, logdir):
        os.makedirs(logdir, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}.0.v2"
        self.path = os.path.join(logdir, name)
        with open(self.path, "w"):
            pass

    def as_default(self):
        return _Default(self)

    def flush(self):
        pass

    def close(self):
        pass


class _Default:
    def __init__(self, writer):
        self.writer = writer

    def __enter__(self):
        summary.stack.append(self.writer)
        return self.writer

    def __exit__(self, *exc):
        summary.stack.pop()
        return False


class summary:
    stack = []

    @staticmethod
    def create_file_writer(logdir, **kwargs):
        return _Writer(logdir)

    @staticmethod
    def _write(kind, name, step):
        if summary.stack:
            with open(summary.stack[-1].path, "a") as f:
                f.write(f"{kind}\\t{name}\\t{step}\\n")

    @staticmethod
    def scalar(name, data=None, step=None, **kwargs):
        summary._write("scalar", name, step)

    @staticmethod
    def image(name, data=None, step=None, **kwargs):
        summary._write("image", name, step)

    @staticmethod
    def histogram(name, data=None, step=None, **kwargs):
        summary._write("histogram", name, step)
''',
    "tensorboard_logger": '''"""Stand-in for tensorboard_logger written by the corpus runner (not in the corpus environment; logs nothing)."""


def configure(logdir, flush_secs=2):
    pass


def log_value(name, value, step=None):
    pass
''',
}


@recipe
def stub_module(base: Path, name: str, folder: str = "_shim"):
    """A stand-in module NAME (see STUBS) in FOLDER, which the runner puts on PYTHONPATH."""
    _write(base / folder / f"{name}.py", STUBS[name])


@recipe
def image_folder(
    base: Path,
    root: str,
    classes: int = 2,
    per_class: int = 4,
    size=32,
    ext: str = "png",
    names: list | None = None,
    mode: str = "RGB",
):
    """ImageFolder layout ROOT/CLASS/img_K.EXT."""
    rng = _rng(root)
    names = names or [f"class{i}" for i in range(classes)]
    for name in names:
        for k in range(per_class):
            _image(base / root / name / f"img_{k}.{ext}", size, rng, mode)


@recipe
def images(
    base: Path, root: str, count: int = 8, size=32, ext: str = "png", pattern: str = "img_{i}", mode: str = "RGB"
):
    """COUNT images ROOT/PATTERN.EXT (PATTERN formatted with i)."""
    rng = _rng(root + pattern)
    for i in range(count):
        _image(base / root / f"{pattern.format(i=i)}.{ext}", size, rng, mode)


def _english(path: str, chars: int, line_words: int) -> str:
    """Deterministic English-like text of about CHARS characters, seeded by PATH."""
    rng = _rng(path)
    out, n = [], 0
    while n < chars:
        line = " ".join(rng.choice(WORDS) for _ in range(line_words)).capitalize() + "."
        out.append(line)
        n += len(line) + 1
    return "\n".join(out) + "\n"


@recipe
def text(base: Path, path: str, chars: int = 4000, line_words: int = 12):
    """Deterministic English-like text of about CHARS characters."""
    _write(base / path, _english(path, chars, line_words))


@recipe
def file(base: Path, path: str, content: str = ""):
    """A file with the given content."""
    _write(base / path, content)


@recipe
def names(base: Path, path: str, count: int = 200):
    """One made-up lowercase name a line."""
    rng = _rng(path)
    syll = ["an", "el", "ma", "ri", "jo", "sa", "li", "ne", "ta", "ko", "mi", "ra", "de", "lu"]
    lines = ["".join(rng.choice(syll) for _ in range(rng.randint(2, 4))) for _ in range(count)]
    _write(base / path, "\n".join(lines) + "\n")


@recipe
def csv_table(
    base: Path, path: str, rows: int = 64, cols: int = 8, label: str = "binary", gz: bool = False, header=None
):
    """Numeric CSV, last column the label (binary 0/1 or a category name); gzip with gz."""
    rng = _rng(path)
    lines = [",".join(header)] if header else []
    for i in range(rows):
        xs = [f"{rng.uniform(-1, 1):.4f}" for _ in range(cols)]
        lines.append(",".join(xs + [str(i % 2)]))
    data = ("\n".join(lines) + "\n").encode()
    _write(base / path, gzip.compress(data) if gz else data)


@recipe
def name_country_csv(base: Path, path: str, rows: int = 64, gz: bool = True):
    """ "name","country" rows (gzip)."""
    rng = _rng(path)
    countries = ["Czech", "German", "Arabic", "Japanese", "Chinese", "Vietnamese", "Russian", "French"]
    syll = ["an", "el", "ma", "ri", "jo", "sa", "li", "ne", "ta", "ko"]
    lines = [
        f'"{"".join(rng.choice(syll) for _ in range(3)).capitalize()}","{countries[i % len(countries)]}"'
        for i in range(rows)
    ]
    data = ("\n".join(lines) + "\n").encode()
    _write(base / path, gzip.compress(data) if gz else data)


@recipe
def llama2c_pretok(
    base: Path, root: str = "data/TinyStories_all_data", shards: int = 2, tokens: int = 20000, vocab: int = 32000
):
    """llama2.c's pretokenized TinyStories shards: uint16 token files data*.bin (BOS=1 starts each story)."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    for s in range(shards):
        toks = rng.integers(3, vocab, tokens, dtype=np.uint16)
        toks[::200] = 1
        _write(base / root / f"data{s:02d}.bin", toks.tobytes())


@recipe
def llmc_tokens(base: Path, path: str, tokens: int = 4096, vocab: int = 50257):
    """llm.c's token file: a 256-int32 header (magic 20240520, version 1, count) then uint16 tokens."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    header = np.zeros(256, dtype=np.int32)
    header[0], header[1], header[2] = 20240520, 1, tokens
    _write(base / path, header.tobytes() + rng.integers(0, vocab, tokens, dtype=np.uint16).tobytes())


@recipe
def coco_detection(base: Path, root: str = "coco", n_train: int = 4, n_val: int = 2, size: int = 64):
    """COCO 2017 layout: ROOT/{train2017,val2017}/*.jpg and ROOT/annotations/instances_*.json (boxes, no masks)."""
    rng = _rng(root)
    for split, n in (("train2017", n_train), ("val2017", n_val)):
        imgs, anns = [], []
        for i in range(n):
            fname = f"{i:012d}.jpg"
            _image(base / root / split / fname, size, rng)
            imgs.append({"id": i + 1, "file_name": fname, "width": size, "height": size})
            for j in range(2):
                x, y = rng.randint(0, size // 2), rng.randint(0, size // 2)
                w, h = rng.randint(8, size // 2), rng.randint(8, size // 2)
                anns.append(
                    {
                        "id": len(anns) + 1,
                        "image_id": i + 1,
                        "category_id": 1 + j,
                        "bbox": [x, y, w, h],
                        "area": w * h,
                        "iscrowd": 0,
                    }
                )
        cats = [{"id": 1, "name": "thing", "supercategory": "x"}, {"id": 2, "name": "stuff", "supercategory": "x"}]
        doc = {"images": imgs, "annotations": anns, "categories": cats}
        _write(base / root / "annotations" / f"instances_{split}.json", json.dumps(doc))


@recipe
def csv_detection(base: Path, root: str = "csv", count: int = 8, classes: tuple = ("cat", "dog")):
    """Box annotations in the CSV layout of keras-retinanet and its ports: ROOT/images/*.png of a few shapes
    (so that their aspect ratios differ), ROOT/train.csv with `path,x1,y1,x2,y2,class_name` rows (two boxes
    an image, paths relative to the folder the script runs in) and ROOT/classes.csv with `class_name,id`."""
    rng = _rng(root)
    rows = []
    for i in range(count):
        w, h = ((64, 48), (48, 64), (64, 64))[i % 3]
        rel = f"{root}/images/{i:04d}.png"
        _image(base / rel, (w, h), rng)
        for j in range(2):
            x1, y1 = rng.randint(0, w // 2), rng.randint(0, h // 2)
            x2, y2 = x1 + rng.randint(8, w // 2), y1 + rng.randint(8, h // 2)
            rows.append(f"{rel},{x1},{y1},{x2},{y2},{classes[(i + j) % len(classes)]}")
    _write(base / root / "train.csv", "\n".join(rows) + "\n")
    _write(base / root / "classes.csv", "".join(f"{name},{k}\n" for k, name in enumerate(classes)))


@recipe
def text_lmdb(base: Path, root: str = "lmdb", count: int = 16, width: int = 100, height: int = 32, max_len: int = 8):
    """A scene-text recognition LMDB at ROOT (the layout of clovaai's create_lmdb_dataset.py): num-samples, then
    image-%09d (a grayscale PNG) and label-%09d (lowercase letters and digits) from 1. Needs lmdb in the runner's
    interpreter."""
    import lmdb

    rng = _rng(root)
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
    (base / root).mkdir(parents=True, exist_ok=True)
    env = lmdb.open(str(base / root), map_size=1 << 26)
    with env.begin(write=True) as txn:
        for i in range(1, count + 1):
            label = "".join(rng.choice(alphabet) for _ in range(rng.randint(3, max_len)))
            txn.put(b"image-%09d" % i, _png(width, height, rng, "L"))
            txn.put(b"label-%09d" % i, label.encode())
        txn.put(b"num-samples", str(count).encode())
    env.close()


@recipe
def drive(base: Path, root: str = "DRIVE", n_train: int = 2, n_test: int = 2, size: int = 64):
    """The DRIVE retina layout: {training,test}/{images/*_training.tif, 1st_manual/*.gif, mask/*_mask.gif}."""
    rng = _rng(root)
    for split, n, tag in (("training", n_train, "training"), ("test", n_test, "test")):
        for i in range(n):
            stem = f"{21 + i if split == 'training' else 1 + i:02d}"
            _image(base / root / split / "images" / f"{stem}_{tag}.tif", size, rng)
            _mask(base / root / split / "1st_manual" / f"{stem}_manual1.gif", size, rng)
            _mask(base / root / split / "mask" / f"{stem}_{tag}_mask.gif", size, rng, full=True)


def _mask(path: Path, size: int, rng: random.Random, full: bool = False) -> None:
    import io

    from PIL import Image

    img = Image.new("L", (size, size), 255 if full else 0)
    if not full:
        px = img.load()
        for _ in range(size * size // 4):
            px[rng.randrange(size), rng.randrange(size)] = 255
    buf = io.BytesIO()
    img.save(buf, format={".gif": "GIF", ".png": "PNG"}[path.suffix])
    _write(path, buf.getvalue())


@recipe
def duts(base: Path, root: str = "DUTS", n_train: int = 4, n_test: int = 2, size: int = 64):
    """The DUTS saliency layout: DUTS-TR/DUTS-TR-{Image/*.jpg,Mask/*.png}, DUTS-TE likewise."""
    rng = _rng(root)
    for split, n in (("TR", n_train), ("TE", n_test)):
        for i in range(n):
            _image(base / root / f"DUTS-{split}" / f"DUTS-{split}-Image" / f"img_{i}.jpg", size, rng)
            _mask(base / root / f"DUTS-{split}" / f"DUTS-{split}-Mask" / f"img_{i}.png", size, rng)


@recipe
def paired_images(
    base: Path, root: str, gt_root: str, count: int = 4, size: int = 64, gt_pattern: str = "{stem}_segmentation.png"
):
    """Images ROOT/ISIC_K.jpg with masks GT_ROOT/GT_PATTERN (ISIC-style segmentation pairs)."""
    rng = _rng(root)
    for i in range(count):
        stem = f"ISIC_{i:07d}"
        _image(base / root / f"{stem}.jpg", size, rng)
        _mask(base / gt_root / gt_pattern.format(stem=stem), size, rng)


def build(base: Path, steps: list[dict]) -> None:
    """Run the data steps of one entry in folder BASE."""
    for step in steps:
        step = dict(step)
        kind = step.pop("kind")
        RECIPES[kind](base, **step)


def validate_step(step) -> list[str]:
    """Problems with one data step (unknown kind, unknown or missing arguments)."""
    import inspect

    if not isinstance(step, dict) or "kind" not in step:
        return [f"data step {step!r} has no kind"]
    fn = RECIPES.get(step["kind"])
    if fn is None:
        return [f"unknown data kind {step['kind']!r}"]
    params = inspect.signature(fn).parameters
    errors = [f"data kind {step['kind']!r} takes no argument {k!r}" for k in step if k != "kind" and k not in params]
    for name, p in list(params.items())[1:]:
        if p.default is inspect.Parameter.empty and name not in step:
            errors.append(f"data kind {step['kind']!r} needs {name!r}")
    return errors


@recipe
def b5a_label_maps(base: Path, root: str, count: int = 4, size=32, classes: int = 12, pattern: str = "img_{i}"):
    """COUNT 8-bit grayscale PNG label maps ROOT/PATTERN.png whose pixels are class indices below CLASSES
    (segmentation targets read as class ids, e.g. CamVid's *annot folders); written without PIL."""
    import zlib

    rng = _rng(root + pattern)
    w, h = (size, size) if isinstance(size, int) else size

    def chunk(tag: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    for i in range(count):
        rows = b"".join(b"\x00" + bytes(rng.randrange(classes) for _ in range(w)) for _ in range(h))
        png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
        _write(base / root / f"{pattern.format(i=i)}.png", png)


@recipe
def b5b_gzip_text(base: Path, path: str, chars: int = 4000, line_words: int = 12):
    """Deterministic English-like text of about CHARS characters, gzip-compressed (a byte corpus read with gzip.open)."""
    _write(base / path, gzip.compress(_english(path, chars, line_words).encode("utf-8"), mtime=0))


@recipe
def text_label_csv(
    base: Path,
    path: str,
    rows: int = 64,
    text_column: str = "text",
    label_column: str = "label",
    labels: tuple = (0, 1),
    line_words: int = 12,
):
    """A CSV with a header, TEXT_COLUMN made-up English sentences (quoted) and LABEL_COLUMN cycling through LABELS."""
    rng = _rng(path)
    lines = [f"{label_column},{text_column}"]
    for i in range(rows):
        sentence = " ".join(rng.choice(WORDS) for _ in range(line_words)).capitalize() + "!"
        lines.append(f'{labels[i % len(labels)]},"{sentence}"')
    _write(base / path, "\n".join(lines) + "\n")
