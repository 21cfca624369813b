"""`--help` as a person reads it: `-j, --jobs N` and `[PATH]...`, no type labels, within the terminal.

Typer labels every value with its Python type (`<list[str]>`, `<int range> [x>=1]`); the command
classes here write each option with its metavar instead (the one given, else its choices, else its
name in capitals), and click's formatter wraps the whole page to the terminal (at most 80 columns).
"""

from __future__ import annotations

from enum import Enum

from typer.core import TyperCommand, TyperGroup


def _choices(param) -> list[str] | None:
    """The values an option takes, when it takes one of a fixed set (typer's descriptor or click's Choice)."""
    desc = getattr(param, "type_descriptor", None)
    choices = getattr(desc, "choices", None) if desc is not None else None
    if choices is None:
        choices = getattr(getattr(param, "type", None), "choices", None)
    if not choices:
        return None
    return [str(c.value if isinstance(c, Enum) else c) for c in choices]


def metavar(param) -> str:
    if param.metavar:
        return param.metavar
    choices = _choices(param)
    if choices:
        return "[" + "|".join(choices) + "]"
    return (param.name or "value").upper()


def _is_flag(param) -> bool:
    return bool(getattr(param, "is_flag", False) or getattr(param, "count", False))


def usage_piece(param) -> str:
    """An argument as the usage line shows it: `SCRIPT`, `[CODE]`, `[PATH]...`."""
    name = metavar(param)
    if param.nargs == -1:
        return f"{name}..." if param.required else f"[{name}]..."
    return name if param.required else f"[{name}]"


def _default(param) -> str | None:
    if _is_flag(param) or param.default is None or not getattr(param, "show_default", True):
        return None
    if callable(param.default) or isinstance(param.default, (list, tuple)):
        return None
    value = param.default.value if isinstance(param.default, Enum) else param.default
    return str(value)


def help_record(param) -> tuple[str, str]:
    """One row of the Options or Arguments list: the names (with the metavar) and the help text."""
    text = param.help or ""
    if param.param_type_name == "argument":
        name = metavar(param) + ("..." if param.nargs == -1 else "")
        return name, text
    short = [o for o in param.opts if not o.startswith("--")]
    names = ", ".join(short + [o for o in param.opts if o.startswith("--")])
    if not _is_flag(param):
        names += " " + metavar(param)
    if param.secondary_opts:
        names += " / " + ", ".join(param.secondary_opts)
    default = _default(param)
    if default is not None:
        text = f"{text}  [default: {default}]" if text else f"[default: {default}]"
    return names, text


def format_params(command, ctx, formatter) -> None:
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    arguments = [help_record(p) for p in params if p.param_type_name == "argument"]
    options = [help_record(p) for p in params if p.param_type_name == "option"]
    if arguments:
        with formatter.section("Arguments"):
            formatter.write_dl(arguments)
    if options:
        with formatter.section("Options"):
            formatter.write_dl(options)


class Command(TyperCommand):
    """A command whose `--help` names values by their metavars."""

    def collect_usage_pieces(self, ctx) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        return pieces + [usage_piece(p) for p in self.get_params(ctx) if p.param_type_name == "argument"]

    def format_options(self, ctx, formatter) -> None:
        format_params(self, ctx, formatter)


class Group(TyperGroup):
    """The `ddpfix` group: its own options the same way, then the commands."""

    def format_options(self, ctx, formatter) -> None:
        format_params(self, ctx, formatter)
        self.format_commands(ctx, formatter)


__all__ = ["Command", "Group", "help_record", "metavar", "usage_piece"]
