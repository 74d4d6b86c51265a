"""The `flowstudio` command line: click commands, each a few lines over the library."""

from studio.cli.commands import main

__all__ = ["main"]
