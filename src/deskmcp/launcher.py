"""The `deskmcp` entry point: `--version` answers before anything else is imported."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from deskmcp import __version__

        print(f"deskmcp {__version__}")
        return
    from deskmcp.cli import app

    app()
