"""A real studio server and a real browser (Debian's chromium driven by Playwright), for tests and bench."""

from __future__ import annotations

import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from studio.cli.launch import LOOPBACK, free_port, streamlit_command

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]  # fmt: skip
_URL = re.compile(r"http://127\.0\.0\.1:(\d+)")


def _wait_for_url(log: Path, process: subprocess.Popen[bytes], deadline: float) -> str:
    while time.monotonic() < deadline:
        match = _URL.search(log.read_text(errors="replace"))
        if match:
            return match.group(0)
        if process.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError(f"the studio printed no address:\n{log.read_text(errors='replace')}")


def _wait_healthy(url: str, process: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the studio did not become healthy")


@contextmanager
def _process(command: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A subprocess writing to `log`; stopped by its pid (terminate, then kill) however the block ends."""
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def studio_server(
    flowstudio: str, flows: Path, db: Path, log: Path, timeout_s: float = 60
) -> Iterator[tuple[str, int]]:
    """`flowstudio studio FLOWS --db DB` in a subprocess; yields (url, pid) and stops it by its pid."""
    with _process([flowstudio, "studio", str(flows), "--db", str(db)], log) as process:
        deadline = time.monotonic() + timeout_s
        url = _wait_for_url(log, process, deadline)
        _wait_healthy(url, process, deadline)
        yield url, process.pid


@contextmanager
def script_server(script: Path, log: Path, env: dict[str, str], timeout_s: float = 60) -> Iterator[str]:
    """`streamlit run SCRIPT` on 127.0.0.1 and a free port (a test harness); yields its url."""
    port = free_port()
    with _process(streamlit_command(port, script=script), log, env) as process:
        url = f"http://{LOOPBACK}:{port}"
        _wait_healthy(url, process, time.monotonic() + timeout_s)
        yield url


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's chromium, driven by Playwright, with the flags that keep it off the network."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def settled(page: Any, timeout_ms: int = 30_000) -> None:
    """Wait until the page's Streamlit script has finished its run (a rerun re-renders the widgets)."""
    page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]", timeout=timeout_ms)


def choose(page: Any, label: str, option: str, *, tries: int = 4) -> None:
    """Pick `option` in the visible Streamlit selectbox labelled `label`.

    A rerun that lands while the list is open closes it, so this waits for the script to settle
    and opens the list again when the option did not show within a few seconds.
    """
    box = page.locator("[data-testid=stSelectbox]:visible", has_text=label).first
    for _ in range(tries):
        settled(page)
        box.click()
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=5_000)
            return
        except Exception:  # Playwright's TimeoutError: the list closed or never opened
            page.keyboard.press("Escape")
    raise AssertionError(f"the selectbox {label!r} offered no option {option!r} in {tries} tries")


def listening_addresses(port: int) -> set[str]:
    """Local IPv4/IPv6 addresses (hex, as /proc shows them) with a socket listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.add(address)
    return found
