"""The flow canvas: a Streamlit component on React Flow for editing a flow's graph.

The component draws the graph Python gives it and sends back what the user did as a queue of
events; it holds no flow logic. The built frontend is committed in `assets/`; rebuild it with
`cd studio/app/canvas/frontend && npm ci && npm run build`, which also writes
`assets/SOURCES.sha256` (see `sources_digest`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import streamlit.components.v1 as components

__all__ = ["assets_dir", "flow_canvas", "sources_digest"]

_HERE = Path(__file__).parent
_FRONTEND = _HERE / "frontend"
_SOURCES = ("package.json", "package-lock.json", "build.mjs", "tsconfig.json", "src")
"""What the build is made from (frontend-relative); build.mjs lists the same."""


def assets_dir() -> Path:
    """The built frontend: index.html, main.js, main.css and SOURCES.sha256."""
    return _HERE / "assets"


def flow_canvas(
    graph: dict[str, Any], *, key: str, height: int = 640, fill: bool = False, readonly: bool = False
) -> dict[str, Any] | None:
    """Draw `graph`; returns `{"session": id, "events": [...]}` (the events not yet acked), or None before any.

    `fill`: the frame reaches down to the bottom of the browser window (`height` is then the least).
    `readonly`: no palette, toolbar, dragging, wiring or deleting; a click on a node is the only
    event (`select`), as on the Traces page.

    Declared on each call, inside the script run, so it registers with the running server
    (cheap: a directory check and a dict entry).
    """
    component = components.declare_component("flow_canvas", path=str(assets_dir()))
    value = component(graph=graph, height=height, fill=fill, readonly=readonly, key=key, default=None)
    return value if isinstance(value, dict) else None


def _source_files(frontend: Path) -> list[Path]:
    found: list[Path] = []
    for name in _SOURCES:
        path = frontend / name
        if path.is_dir():
            found.extend(p for p in path.rglob("*") if p.is_file())
        else:
            found.append(path)
    return sorted(found, key=lambda p: p.relative_to(frontend).as_posix())


def sources_digest(frontend: Path = _FRONTEND) -> str:
    """sha256 over lines `<sha256 of file> <path>\\n` for the frontend sources, sorted by path, as build.mjs writes it."""
    lines = [
        f"{hashlib.sha256(p.read_bytes()).hexdigest()} {p.relative_to(frontend).as_posix()}\n"
        for p in _source_files(frontend)
    ]
    return hashlib.sha256("".join(lines).encode()).hexdigest()
