"""The flowstudio wheel an exported package installs with, built beside it in `wheels/`.

An exported package depends on `flowstudio`, which need not be on any package index the user
can reach; with the engine's wheel beside it, `pip install --find-links DIR/wheels DIR` works in
a fresh virtualenv. The wheel is built from the source tree this flowstudio runs from.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import studio

WHEELS = "wheels"
PARTS = ("studio", "nodes", "pyproject.toml", "README.md")
MIN_SETUPTOOLS = 77
"""The setuptools that reads pyproject.toml's `license = "Apache-2.0"`; older ones build in isolation."""


def source_tree() -> Path | None:
    """The checkout flowstudio is installed from (an editable install), or None."""
    root = Path(studio.__file__).resolve().parent.parent
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return None
    try:
        name = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("name")
    except tomllib.TOMLDecodeError:
        return None
    return root if name == "flowstudio" and all((root / part).exists() for part in PARTS) else None


def build_engine_wheel(out: Path) -> Path | None:
    """Build the flowstudio wheel into `out/wheels`; None when there is no source tree to build from.

    Raises RuntimeError with pip's message when the build fails.
    """
    root = source_tree()
    if root is None:
        return None
    target = out / WHEELS
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("flowstudio-*.whl"):
        old.unlink()
    cache = _cache_dir() / _source_hash(root)
    built = sorted(cache.glob("flowstudio-*.whl"))
    if not built:
        _build(root, cache)
        built = sorted(cache.glob("flowstudio-*.whl"))
    if not built:
        return None
    shutil.copy(built[-1], target / built[-1].name)
    return target / built[-1].name


def _build(root: Path, into: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="flowstudio-wheel-") as scratch:
        copy = _copy_source(root, Path(scratch) / "src")
        wheels = Path(scratch) / "wheels"
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(copy)]
        if _setuptools_major() >= MIN_SETUPTOOLS:
            command.insert(4, "--no-build-isolation")  # this environment's setuptools: no download
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode:
            raise RuntimeError(f"building the flowstudio wheel failed: {done.stderr.strip() or done.stdout.strip()}")
        into.mkdir(parents=True, exist_ok=True)
        for wheel in wheels.glob("flowstudio-*.whl"):
            shutil.copy(wheel, into / wheel.name)


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "flowstudio" / "engine-wheels"


def _source_hash(root: Path) -> str:
    """Content hash of what goes into the wheel: a changed source builds a new one."""
    digest = hashlib.sha256()
    for part in PARTS:
        path = root / part
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            if "__pycache__" in file.parts or "node_modules" in file.parts or file.suffix == ".pyc":
                continue
            digest.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def _setuptools_major() -> int:
    try:
        return int(metadata.version("setuptools").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        return 0


def _copy_source(root: Path, into: Path) -> Path:
    """The distribution's files only, so the build writes nothing into the checkout."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules")
    for part in PARTS:
        source = root / part
        if source.is_dir():
            shutil.copytree(source, into / part, ignore=ignore)
        else:
            into.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, into / part)
    return into


def install_command(out: Path, wheel: Path | None, *, extras: Sequence[str] = (), then: Sequence[str] = ()) -> str:
    """What the user runs, in a fresh virtualenv, to install the exported package so that its flow
    runs as written: with the `extras` its models need, then the `then` commands (model weights).

    Without the engine's wheel, flowstudio comes from the source tree this one runs from when there
    is one (no package index has a checkout's version), else from the user's package index."""
    # `pip install out` would fetch the project called `out` from an index: name the folder as a path.
    folder = str(out) if out.is_absolute() or str(out).startswith(("./", "../")) else f"./{out}"
    where = shlex.quote(f"{folder}[{','.join(extras)}]" if extras else folder)
    if wheel is not None:
        line = f"pip install --find-links {shlex.quote(str(out / WHEELS))} {where}"
    else:
        source = source_tree()
        line = f"pip install {shlex.quote(str(source))} {where}" if source is not None else f"pip install {where}"
    return " && ".join([line, *then])
