"""The studio's server process warms what the first page visit would otherwise import."""

from __future__ import annotations

import subprocess
import sys

from studio.app.server import LIBRARIES, PAGES
from studio.cli.launch import streamlit_command
from studio.runtime import registry

CHECK = """
import sys
from studio.app.server import preload
from studio.plugins import plugins
before = set(sys.modules)
preload()
nodes = {ep.value.split(":")[0] for ep in plugins("flowstudio.nodes").values()}
print(sorted(name for name in {*sys.argv[1:], *nodes} if name not in sys.modules))
print(sorted(name for name in {*sys.argv[1:], *nodes} if name in before))
"""


def test_preload_imports_the_pages_their_libraries_and_every_node_type() -> None:
    wanted = [*LIBRARIES, *PAGES]
    done = subprocess.run([sys.executable, "-c", CHECK, *wanted], capture_output=True, text=True, check=True)
    missing, already = done.stdout.splitlines()
    assert missing == "[]", done.stdout
    assert already == "[]", "nothing was imported before preload ran: the check would prove nothing"
    assert len(registry.keys()) > 10


def test_the_studio_starts_through_the_preloading_server() -> None:
    command = streamlit_command(8501)
    assert command[1:5] == ["-m", "studio.app.server", "run", command[4]]
    assert command[4].endswith("main.py")
