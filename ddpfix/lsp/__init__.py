"""`ddpfix lsp`: a language server over stdio (diagnostics, quick-fixes, "Convert to DDP").

Import is cheap; the server and the engine load when `main()` or `create_server()` runs.
"""

from __future__ import annotations


def create_server():
    from .server import create_server as _create

    return _create()


def main() -> None:
    from .server import main as _main

    _main()


__all__ = ["create_server", "main"]
