"""Serving flows to other programs: the HTTP API (`flowstudio serve PATH`, FastAPI on uvicorn)
and the MCP server (`flowstudio mcp serve PATH`, `studio.serve.mcp_server`).

Runs go to the CLI's SQLite store; streaming is server-sent events relayed from the engine's
hooks and replayed from the store; background runs survive a killed server. The app is
`studio.serve.app.create_app`, the command `studio.serve.server.serve`; both need the `serve`
extra (fastapi, uvicorn), so this package imports neither on its own.
"""

from __future__ import annotations

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_RUNS = 64
"""Runs executing at once (`--max-concurrency`); more wait for a slot."""
DEFAULT_MAX_BODY_BYTES = 1_000_000
"""The largest request body a server reads (`--max-body-bytes`); a larger one is refused with 413."""
