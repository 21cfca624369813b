"""Files a script reads back, and how two spellings of a path are told to name the same files.

`READERS` are the common readers of images, arrays, audio and tables, with the argument that names
the file (the writers are DDP401's `WRITERS`). `path_shapes` gives the texts a path is compared by: its
source, and where it is built from literal parts around computed ones, the literals with each computed
part as `*`, the names followed to the value they were assigned in the same scope:

    p = "results/fixed/GAN_" + str(epoch + 1) + ".png"     ->  'results/fixed/GAN_' * '.png'
    img = "results/fixed/GAN_" + str(e + 1) + ".png"        ->  'results/fixed/GAN_' * '.png'

so a file saved per epoch under one loop variable and read back under another is the same file."""

from __future__ import annotations

import string

import libcst as cst

from ..syntax import assigned_value, code_of, dotted

READERS = {
    "torch.load": (0, "f"),
    "numpy.load": (0, "file"),
    "numpy.loadtxt": (0, "fname"),
    "matplotlib.pyplot.imread": (0, "fname"),
    "imageio.imread": (0, "uri"),
    "imageio.mimread": (0, "uri"),
    "imageio.v2.imread": (0, "uri"),
    "imageio.v3.imread": (0, "uri"),
    "PIL.Image.open": (0, "fp"),
    "cv2.imread": (0, "filename"),
    "torchvision.io.read_image": (0, "path"),
    "torchaudio.load": (0, "uri"),
    "soundfile.read": (0, "file"),
    "pandas.read_csv": (0, "filepath_or_buffer"),
    "joblib.load": (0, "filename"),
}


def path_shapes(facts, expr: cst.BaseExpression) -> set[str]:
    """The texts `expr`, a path, is compared by (see the module's docstring); at least its source."""
    out = {path_text(expr)}
    value = _followed(facts, expr)
    parts = _parts(value)
    if parts is not None and "*" in parts and any(p != "*" and any(c.isalnum() for c in p) for p in parts):
        out.add(" ".join(parts))  # a literal word in it: `* '/' *` (any two joined names) says nothing
    return out


def _followed(facts, expr: cst.BaseExpression) -> cst.BaseExpression:
    """A name's value where its scope assigns it exactly once (`fixed_p = "..." + str(epoch) + ".png"`)."""
    if type(expr) is not cst.Name:
        return expr
    sites = facts.names.assignments(facts.index.scope_of(expr), expr.value)
    if len(sites) != 1:
        return expr
    value = assigned_value(sites[0].stmt)
    return value if value is not None else expr


def _parts(expr: cst.BaseExpression) -> list[str] | None:
    """`expr` as its literal parts and `*` for each computed one: string concatenation, an f-string,
    a literal template's `.format(...)`, `os.path.join`; None for anything else."""
    if type(expr) is cst.SimpleString:
        return [repr(expr.evaluated_value)]
    if type(expr) is cst.BinaryOperation and type(expr.operator) is cst.Add:
        left, right = _parts(expr.left), _parts(expr.right)
        if left is None and right is None:
            return None
        return _merged((left or ["*"]) + (right or ["*"]))
    if type(expr) is cst.FormattedString:
        out = []
        for part in expr.parts:
            out.append(repr(part.value) if type(part) is cst.FormattedStringText else "*")
        return _merged(out)
    if (
        type(expr) is cst.Call
        and type(expr.func) is cst.Attribute
        and expr.func.attr.value == "format"
        and type(expr.func.value) is cst.SimpleString
    ):  # `"{}.pkl".format(epoch)`: the template's text around its fields
        try:
            fields = list(string.Formatter().parse(expr.func.value.evaluated_value))
        except ValueError:
            return None
        out = []
        for text, field, _, _ in fields:
            out += ([repr(text)] if text else []) + (["*"] if field is not None else [])
        return _merged(out)
    if type(expr) is cst.Call and (dotted(expr.func) or "").endswith("path.join"):
        out = []
        for i, arg in enumerate(expr.args):
            if i:
                out.append("'/'")
            out.extend(_parts(arg.value) or ["*"])
        return _merged(out)
    return None


def _merged(parts: list[str]) -> list[str]:
    """Adjacent computed parts as one `*`."""
    out: list[str] = []
    for p in parts:
        if p == "*" and out and out[-1] == "*":
            continue
        out.append(p)
    return out


def path_text(expr: cst.BaseExpression) -> str:
    """How a path is compared: a string by its value (either quotes), anything else by its source."""
    if isinstance(expr, cst.SimpleString):
        return repr(expr.evaluated_value)
    return code_of(expr)


__all__ = ["READERS", "path_shapes", "path_text"]
