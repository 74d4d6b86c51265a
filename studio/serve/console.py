"""`PACKAGE serve`: an exported flow package serves its embedded flow with `flowstudio serve`'s
contract. Packages written by `flowstudio export` call `console` from their console script:
keep its name and signature stable.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from studio.errors import FlowError
from studio.export.runtime import package_root
from studio.flow import paths
from studio.flow.spec import DURABILITIES
from studio.serve import DEFAULT_HOST, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_RUNS, DEFAULT_PORT

EXIT_BAD_INPUT = 2


def console(flow_file: str | Path, *, prog: str, argv: Sequence[str] | None = None) -> int:
    """Serve `flow_file` until interrupted; returns the exit code (2 on bad input)."""
    try:
        from studio.serve.server import serve
    except ImportError as err:
        print(f"error: {err.name} is missing: pip install 'flowstudio[serve]'", file=sys.stderr)
        return EXIT_BAD_INPUT

    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve the embedded flow over HTTP (POST /flows/NAME/runs, /v1/chat/completions, ...).",
        epilog=f"Example: {prog} --port 8000",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help="Address to bind (a non-loopback one needs --token-env).")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="Port (0: any free one).")
    parser.add_argument(
        "--db",
        metavar="PATH|URL",
        help="SQLite file or postgresql:// URL (default: $FLOWSTUDIO_DB or .flowstudio/flowstudio.db).",
    )
    parser.add_argument("--token-env", metavar="NAME", help="Require `Authorization: Bearer $NAME`.")
    parser.add_argument("--max-concurrency", type=int, default=DEFAULT_MAX_RUNS, help="Runs executing at once.")
    parser.add_argument(
        "--allow-host", action="append", default=[], metavar="NAME", help="Also answer requests with this Host."
    )
    parser.add_argument(
        "--allow-model", action="append", default=[], metavar="PATTERN", help="Models a request may swap in."
    )
    parser.add_argument(
        "--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES, help="Largest request body (413 above)."
    )
    parser.add_argument(
        "--durability",
        choices=DURABILITIES,
        help="When a run's finished steps reach the store: sync (default; each before its dependents),"
        " async (in the background, all before the run ends) or exit (all at the end).",
    )
    args = parser.parse_args(argv)
    if args.max_concurrency < 1 or args.max_body_bytes < 1:
        parser.error("--max-concurrency and --max-body-bytes must be at least 1")
    try:
        with paths.rooted(package_root(Path(flow_file).resolve()), force=True):  # sub-flows stay in the package
            serve(
                flow_file,
                host=args.host,
                port=args.port,
                db=args.db,
                token_env=args.token_env,
                max_concurrency=args.max_concurrency,
                allow_hosts=tuple(args.allow_host),
                allow_models=tuple(args.allow_model),
                max_body_bytes=args.max_body_bytes,
                announce=lambda line: print(line, flush=True),
                durability=args.durability,
            )
    except FlowError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0
