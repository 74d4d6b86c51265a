"""Options only the user can give (never the flow file): trusting code, the project root."""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

TRUST_ENV = "FLOWSTUDIO_TRUST_CODE"
ROOT_ENV = "FLOWSTUDIO_ROOT"

F = TypeVar("F", bound=Callable[..., Any])


class GuardedGroup(click.Group):
    """The `flowstudio` group: an argument with a NUL byte is one line and exit 2, never a traceback.
    (click's Path type hands such a name to `os.stat`, which raises ValueError before any command runs.)

    Its commands are `lazy`: NAME → `MODULE:ATTRIBUTE` under `studio.cli`, each module imported
    when its command is called or listed.
    """

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command's name, sorted (as click lists them)."""
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command `cmd_name`, importing its module the first time."""
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, attribute = self.lazy[cmd_name].split(":")
            command = getattr(importlib.import_module(f"studio.cli.{module}"), attribute)
            assert isinstance(command, click.Command), self.lazy[cmd_name]
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ValueError as err:
            if "null byte" not in str(err) and "null character" not in str(err):
                raise
            click.echo("error: an argument contains a NUL byte", err=True)
            sys.exit(2)


def user_options(command: F) -> F:
    """`--trust-code` and `--root DIR` (run, batch)."""
    return trust_option(root_option(command))


def trust_option(command: F) -> F:
    """`--trust-code`: code.python runs without the OS sandbox (sets FLOWSTUDIO_TRUST_CODE)."""

    @functools.wraps(command)
    def wrapper(*args: Any, trust_code: bool, **kwargs: Any) -> Any:
        with _env(TRUST_ENV, "1" if trust_code else None):
            return command(*args, **kwargs)

    help_text = f"Run code.python without the OS sandbox (in a plain child process); same as {TRUST_ENV}=1."
    return click.option("--trust-code", is_flag=True, help=help_text)(wrapper)  # type: ignore[return-value]


def root_option(command: F) -> F:
    """`--root DIR`: the project root paths must stay under (sets FLOWSTUDIO_ROOT)."""

    @functools.wraps(command)
    def wrapper(*args: Any, root: str | None, **kwargs: Any) -> Any:
        with _env(ROOT_ENV, None if root is None else str(Path(root).resolve())):
            return command(*args, **kwargs)

    return click.option(
        "--root",
        type=click.Path(file_okay=False, exists=True),
        default=None,
        help="Project root every path a flow names must stay under (default: the flow's folder).",
    )(wrapper)  # type: ignore[return-value]


@contextmanager
def _env(name: str, value: str | None) -> Iterator[None]:
    """Set `name` for the command (nothing when `value` is None), restoring it after (in-process callers)."""
    if value is None:
        yield
        return
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
