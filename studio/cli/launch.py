"""Starting the studio: a free port on 127.0.0.1 and the Streamlit command line."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import click

from studio.cli.common import EXIT_BAD_INPUT, db_option

LOOPBACK = "127.0.0.1"
MAIN = Path(__file__).parents[1] / "app" / "main.py"
"""The script Streamlit runs (read as a path: the command line never imports the app)."""
DIR_ENV = "FLOWSTUDIO_STUDIO_DIR"
"""The folder of flows the studio shows."""


def free_port(address: str = LOOPBACK) -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((address, 0))
        return int(probe.getsockname()[1])


def streamlit_command(port: int, address: str = LOOPBACK, script: Path = MAIN) -> list[str]:
    """`streamlit run` on the app (or another script), headless, without usage statistics or file watching."""
    return [
        sys.executable, "-m", "streamlit", "run", str(script),
        "--server.address", address,
        "--server.port", str(port),
        "--server.headless", "true",
        "--server.fileWatcherType", "none",
        "--browser.gatherUsageStats", "false",
        "--client.toolbarMode", "minimal",
        # no full garbage collection after every script run: it holds the GIL 0.1-0.4 s with a
        # 200-node flow open, delaying the run's last deltas (the canvas) and each redraw of a run
        "--runner.postScriptGC", "false",
    ]  # fmt: skip


def studio_env(db: Path | str, flows_dir: Path) -> dict[str, str]:
    """The environment the app reads its settings from."""
    where = db if isinstance(db, str) else str(db.resolve())
    return {**os.environ, "FLOWSTUDIO_DB": where, DIR_ENV: str(flows_dir.resolve())}


@click.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False, exists=True))
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="Port to listen on (default: a free one).")
@click.option(
    "--address",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on: a loopback one (the studio has no login; share it through an SSH tunnel or "
    "an authenticating reverse proxy).",
)
@db_option
def studio(directory: str, port: int | None, address: str, db: str | None) -> None:
    """Open the studio: runs, traces, experiments, and running the flows in DIRECTORY.

    Prints the address, then serves until Ctrl-C. Example: flowstudio studio flows/
    """
    import importlib.util

    from studio.serve.listen import is_loopback

    if not is_loopback(address):
        click.echo(
            f"error: refusing to open the studio on {address}: it edits, saves and runs flows and has no login. "
            "Keep --address 127.0.0.1 and reach it through an SSH tunnel or a reverse proxy that authenticates.",
            err=True,
        )
        sys.exit(EXIT_BAD_INPUT)
    if importlib.util.find_spec("streamlit") is None:
        click.echo("error: the studio needs its extra: pip install 'flowstudio[studio]'", err=True)
        sys.exit(EXIT_BAD_INPUT)
    from studio.store import db_location, shown

    chosen = port or free_port(address)
    db_path = db_location(db)
    click.echo(f"Flowstudio studio on http://{address}:{chosen}  (flows: {directory}, store: {shown(db_path)})")
    sys.stdout.flush()
    command = streamlit_command(chosen, address)
    os.execve(command[0], command, studio_env(db_path, Path(directory)))
