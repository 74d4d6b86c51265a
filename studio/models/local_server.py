"""The embedded model as an HTTP server: llama.cpp's OpenAI (`/v1/chat/completions`,
`/v1/completions`) and Anthropic (`/v1/messages`) APIs on 127.0.0.1.

    python -m studio.models.local_server --port 8080

Then any flow can reach it as a provider, e.g. `model: openai/smollm2` with
`api_base: http://127.0.0.1:8080/v1`, or `model: anthropic/smollm2` with
`api_base: http://127.0.0.1:8080`. Tests and `bench/providers.py` start it with `start()`.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass

from studio.models.local import _import_runtime, _require_model_path, _thread_count

HOST = "127.0.0.1"
N_CTX = 4096
STARTUP_S = 120.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def serve(port: int, n_ctx: int = N_CTX) -> None:
    """Load the model and serve it on 127.0.0.1:`port` until the process is stopped."""
    runtime = _import_runtime()
    params = runtime.CommonParams()
    params.model.path = str(_require_model_path())
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = _thread_count()
    params.cpuparams_batch.n_threads = _thread_count()
    params.hostnames = [HOST]
    params.port = port
    params.verbosity = -1
    params.ui = False
    params.use_jinja = True
    server = runtime.Server(params)
    print(f"serving on http://{HOST}:{port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        del server


@dataclass
class Running:
    """A server started by `start`: its process and base URL; `stop()` ends it by its PID."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        """The base URL (Anthropic style); OpenAI clients want `url + "/v1"`."""
        return f"http://{HOST}:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def start(port: int | None = None, n_ctx: int = N_CTX, timeout_s: float = STARTUP_S) -> Running:
    """Start the server in a subprocess and wait until it answers `/health`."""
    chosen = port or free_port()
    command = [sys.executable, "-m", "studio.models.local_server", "--port", str(chosen), "--n-ctx", str(n_ctx)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ})
    running = Running(process, chosen)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the local model server exited with code {process.returncode}")
        if _healthy(running.url):
            return running
        time.sleep(0.2)
    running.stop()
    raise RuntimeError(f"the local model server did not answer on {running.url} within {timeout_s} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--n-ctx", type=int, default=N_CTX)
    args = parser.parse_args()
    serve(args.port, args.n_ctx)


if __name__ == "__main__":
    main()
