"""The README's shell examples, run as written, in a scratch copy of the example files."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

NOT_RUN = {
    "make ": "`make test` is what runs this test; `make demo` reinstalls the virtualenv",
    "flowstudio studio ": "a server that runs until stopped; tests/app drive the studio",
}
PLACEHOLDERS = {"RUN_ID": "the newest run's id, shortened to a prefix"}
COPIED = ("flows", "bench/flows", "tests/scripts")


def readme_commands() -> list[str]:
    """Every command of the README's ```sh blocks, continuation lines joined, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands: list[str] = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE):
        pending = ""
        for line in block.splitlines():
            if not line.strip() or (not pending and line.lstrip().startswith("#")):
                continue
            pending += line
            if line.rstrip().endswith("\\"):
                pending += "\n"
                continue
            commands.append(pending)
            pending = ""
    return commands


def test_the_readme_blocks_parse_into_commands() -> None:
    commands = readme_commands()
    assert commands[0].startswith("make demo") and any(c.startswith(". .venv/bin/activate") for c in commands)
    assert any(c.startswith("flowstudio trace RUN_ID") for c in commands)
    runnable = [c for c in commands if not c.startswith(tuple(NOT_RUN))]
    assert len(runnable) >= 10 and all(c.split()[0] in {".", "flowstudio", "python"} for c in runnable)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_readme_examples_run_as_written(tmp_path: Path) -> None:
    for part in COPIED:
        shutil.copytree(ROOT / part, tmp_path / part)
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    newest = "$(flowstudio runs --limit 1 --json | python -c 'import json,sys; print(json.load(sys.stdin)[0][\"run_id\"][:8])')"
    lines = ["set -eo pipefail", "trap 'echo \"README command failed: $BASH_COMMAND\" >&2' ERR"]
    for command in readme_commands():
        if command.startswith(tuple(NOT_RUN)):
            continue
        for name in PLACEHOLDERS:
            command = command.replace(name, newest)
        lines += [f"echo {shlex.quote('+ ' + command.splitlines()[0])} >&2", command]
    env = {k: v for k, v in os.environ.items() if k not in ("FLOWSTUDIO_DB", "VIRTUAL_ENV")}
    done = subprocess.run(
        ["bash", "-c", "\n".join(lines)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=1500
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert '"status": "succeeded"' in done.stdout
    assert (tmp_path / "bench" / "flows" / "sentiment.optimized.yaml").is_file()
    assert (tmp_path / "dist" / "ticket-triage" / "pyproject.toml").is_file()
    install = "install it with: pip install --find-links dist/ticket-triage/wheels './dist/ticket-triage[local]'"
    assert f"{install} && flowstudio models install smollm2" in done.stdout  # the flow runs on the embedded model
