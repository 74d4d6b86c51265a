"""Path confinement: every path a flow names stays under the project root.

The project root is the top flow's folder, unless the user passes `--root DIR` (the
environment variable FLOWSTUDIO_ROOT). A path is resolved, symlinks included, before it is
compared with the root; NUL bytes, directories where a file is wanted, devices, FIFOs and
sockets are refused by kind; files are read through `read_capped`, which counts the bytes
it reads instead of trusting `stat` (`/dev/zero` has size 0).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Literal

ROOT_ENV = "FLOWSTUDIO_ROOT"
Kind = Literal["file", "dir"]

_ROOT: ContextVar[tuple[Path, bool] | None] = ContextVar("flowstudio_project_root", default=None)
"""The root of the current run and whether it wins over FLOWSTUDIO_ROOT (an exported package's own)."""


class PathRefused(ValueError):
    """A path a flow names is outside the project root, of the wrong kind, or too large."""


def project_root(flow_dir: Path) -> Path:
    """The root paths must stay under: the run's top flow folder (else `flow_dir`), or --root when
    that folder is inside it (a --root that does not hold the flow does not apply to it)."""
    current = _ROOT.get()
    if current is not None and current[1]:
        return current[0]
    base = current[0] if current is not None else flow_dir.resolve()
    given = os.environ.get(ROOT_ENV)
    if given:
        root = Path(given).resolve()
        if root == base or root in base.parents:
            return root
    return base


@contextmanager
def rooted(flow_dir: Path, *, force: bool = False) -> Iterator[None]:
    """Within: `flow_dir` is the root (a run's top flow folder) unless one is set already, or `force`."""
    root = _resolved(flow_dir) if flow_dir.is_absolute() else flow_dir.resolve()  # a relative one follows the cwd
    token = _ROOT.set((root, force)) if force or _ROOT.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _ROOT.reset(token)


@functools.lru_cache(maxsize=256)
def _resolved(folder: Path) -> Path:
    """An absolute root folder with its links resolved, once per process (a served flow's runs share it)."""
    return folder.resolve()


def _kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def confine(base: Path, name: str | Path, root: Path, kind: Kind = "file", what: str = "path") -> Path:
    """`base / name` resolved; raises PathRefused when it leaves `root`, is missing or of the wrong kind."""
    text = str(name)
    if "\x00" in text:
        raise PathRefused(f"{what} {text!r} contains a NUL byte")
    try:
        path = (base / text).resolve()
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise PathRefused(f"{what} {text!r} does not exist") from None
    except (OSError, RuntimeError) as err:
        raise PathRefused(f"{what} {text!r} cannot be read: {getattr(err, 'strerror', None) or err}") from None
    root = root.resolve()
    if path != root and root not in path.parents:
        raise PathRefused(f"{what} {text!r} resolves to {path}, outside the project root {root} (see --root)")
    wanted = stat.S_ISDIR(mode) if kind == "dir" else stat.S_ISREG(mode)
    if not wanted:
        need = "a directory" if kind == "dir" else "a regular file"
        raise PathRefused(f"{what} {text!r} is {_kind_of(mode)}, not {need}")
    return path


def read_capped(path: Path, limit: int, what: str = "file") -> bytes:
    """A regular file's bytes, at most `limit` of them (counted while reading); raises PathRefused."""
    if "\x00" in str(path):
        raise PathRefused(f"{what} {str(path)!r} contains a NUL byte")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise PathRefused(f"cannot read {what} {path}: {err.strerror}") from None
    with os.fdopen(fd, "rb", buffering=0) as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise PathRefused(f"{what} {path} is {_kind_of(mode)}, not a regular file")
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while chunk := handle.read(min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise PathRefused(f"{what} {path} is larger than {limit} bytes")
    return b"".join(chunks)


def files_under(directory: Path, root: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    """Regular files with these suffixes under `directory`, sorted; a link leaving `root` is refused."""
    root = root.resolve()
    for path in sorted(directory.rglob("*")):
        if path.suffix.lower() not in suffixes:
            continue
        real = path.resolve()
        if real != root and root not in real.parents:
            raise PathRefused(f"{path} links to {real}, outside the project root {root} (see --root)")
        if real.is_file():
            yield path
