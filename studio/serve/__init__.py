"""Every flow as a durable HTTP service: `flowstudio serve PATH` (FastAPI on uvicorn).

Runs go to the CLI's SQLite store; streaming is server-sent events relayed from the engine's
hooks and replayed from the store; background runs survive a killed server. Needs the `serve`
extra (fastapi, uvicorn); nothing below this package imports it.
"""

from __future__ import annotations

from studio.serve.app import create_app
from studio.serve.server import serve

__all__ = ["create_app", "serve"]
