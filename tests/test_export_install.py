"""An exported package installs in a fresh virtualenv by its own printed instructions, nothing else known,
and its flow then runs as written: `ticket-triage` on the embedded model, the extra and weights it needs
named by the install line (and by the package's README)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, FLOWS, FLOWSTUDIO, ROOT, SCRIPTS


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_export_then_the_printed_install_command_in_a_fresh_venv(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    exported = subprocess.run(
        [FLOWSTUDIO, "export", str(FLOWS / "ticket-triage.yaml"), "--out", "dist/ticket-triage"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    (install,) = [line.split(": ", 1)[1] for line in exported.stdout.splitlines() if line.startswith("install it with")]
    assert install.startswith("pip install ") and "[local]" in install
    assert install.endswith(" && flowstudio models install smollm2")

    subprocess.run([sys.executable, "-m", "venv", "venv"], cwd=tmp_path, check=True, timeout=300)
    # Exactly what a user does: activate the virtualenv, paste the printed command.
    shell = f". venv/bin/activate && {install}"
    done = subprocess.run(["bash", "-c", shell], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    # The README's install block, run where it says (the package's folder): all there already.
    package = tmp_path / "dist" / "ticket-triage"
    readme = (package / "README.md").read_text(encoding="utf-8").split("## Install", 1)[1]
    block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [line.split("   #", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert lines == ["pip install --find-links wheels '.[local]'", "flowstudio models install smollm2"]
    shell = f". {tmp_path / 'venv' / 'bin' / 'activate'} && " + " && ".join(lines)
    again = subprocess.run(["bash", "-c", shell], cwd=package, capture_output=True, text=True, env=env, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]

    script = tmp_path / "venv" / "bin" / "ticket-triage"
    embedded = subprocess.run(
        [script, "--input", "ticket=I was charged twice, please refund me", "--json"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert embedded.returncode == 0, embedded.stderr[-3000:]
    ran_local = json.loads(embedded.stdout)
    assert ran_local["status"] == "succeeded" and ran_local["outputs"]["category"] in ("billing", "bug", "other")
    assert ran_local["tokens"] > 0, "the embedded model answered"
    model = f"default=scripted/{SCRIPTS / 'triage.yaml'}"
    ran = subprocess.run(
        [script, "--input", "ticket=12345", "--model", model, "--json"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    body = json.loads(ran.stdout)
    assert body["status"] == "succeeded" and body["outputs"]["category"] == "billing"
    where = subprocess.run(
        [tmp_path / "venv" / "bin" / "python", "-c", "import studio; print(studio.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(tmp_path / "venv"), "flowstudio came from the wheel, not the tree"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_without_the_engine_wheel_the_printed_line_gets_flowstudio_from_the_checkout(tmp_path: Path) -> None:
    """`--no-engine-wheel` prints a line that resolves where nothing is installed: no index has the
    checkout's flowstudio, so the line names the checkout (a copy here, so nothing is built in the tree)."""
    checkout = tmp_path / "checkout"
    for part in ("studio", "nodes"):
        shutil.copytree(ROOT / part, checkout / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, checkout / part)
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    exported = subprocess.run(
        [sys.executable, "-m", "studio", "export", str(FIXTURES / "structural.yaml"), "--out", "out", "--no-engine-wheel"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    (install,) = [line.split(": ", 1)[1] for line in exported.stdout.splitlines() if line.startswith("install it with")]
    assert install == f"pip install {checkout} ./out"  # `out` alone would be the project of that name on an index
    # The printed line as pip resolves it with nothing installed (a dry run: no second install).
    resolve = install.replace("pip install", "--dry-run --ignore-installed --quiet --report report.json", 1)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", *resolve.split()],
        cwd=tmp_path, capture_output=True, text=True, env={**env, "PYTHONPATH": ""}, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    sources = {item["metadata"]["name"]: item["download_info"]["url"] for item in report["install"]}
    assert sources["flowstudio"] == checkout.as_uri() and sources["structural"] == (tmp_path / "out").as_uri()
