"""`flowstudio serve --workers N`: N server processes on one listening socket and one store.

The parent checks the flows, binds the socket and prints the URL, then starts N workers
(`python -m studio.serve.workers SETTINGS`), each a whole server (`create_app` under uvicorn)
accepting on the socket it inherits: the kernel hands each connection to one of them. Every
worker records its runs in the one store, so any worker answers for any run: a `GET` reads the
store, events of a run another worker drives are followed from the store, a cancel reaching the
wrong worker is passed on through the store (`studio.serve.manager`), and the background runs of
a worker that died are claimed and resumed by a sibling.

The parent only supervises: a worker that exits is replaced, unless it exits before it started
serving (it writes its pid to a pipe then): that is a setting or store that cannot work, and the
server stops with exit code 1. SIGTERM or SIGINT to the parent stops the workers gracefully. Each worker holds the read end of a pipe whose write end only the parent
keeps: when the parent dies, even by kill -9, the pipe closes and the worker stops.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from studio.serve.process import Settings, run

log = logging.getLogger("flowstudio.serve")
STOP_S = 20.0
"""How long the workers get to stop gracefully before they are killed."""
TICK_S = 0.2
"""How often the parent looks at its workers."""


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    started: float
    serving: bool = False
    """Whether it has started serving (else its exit stops the server)."""


class _Supervisor:
    """Starts, replaces and stops the workers of one listening socket."""

    def __init__(self, sock: socket.socket, settings: Settings) -> None:
        self.sock = sock
        self.settings = settings
        self.alive, self.keep = os.pipe()
        """The pipe whose closing tells the workers the parent is gone (they hold `alive`)."""
        self.ready, self.told = os.pipe()
        """The pipe each worker writes its pid to once it serves (they hold `told`)."""
        os.set_blocking(self.ready, False)
        self.workers: list[_Worker] = []
        self.stopping = False
        self.failed = False

    def spawn(self) -> None:
        given = {**asdict(self.settings), "fd": self.sock.fileno(), "alive": self.alive, "ready": self.told}
        command = [sys.executable, "-m", "studio.serve.workers", json.dumps(given)]
        fds = (self.sock.fileno(), self.alive, self.told)
        process = subprocess.Popen(command, pass_fds=fds, start_new_session=True)  # Ctrl+C reaches the parent only
        self.workers.append(_Worker(process, time.monotonic()))

    def stop(self, *_: Any) -> None:
        """Stop every worker (a signal handler too)."""
        if not self.stopping:
            self.stopping = True
            self._signal(signal.SIGTERM)

    def _signal(self, number: int) -> None:
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.process.send_signal(number)

    def tick(self) -> None:
        """Replace the workers that exited (or stop all when one failed to start)."""
        self._read_ready()
        for worker in list(self.workers):
            code = worker.process.poll()
            if code is None:
                continue
            self.workers.remove(worker)
            if self.stopping:
                continue
            pid, lived = worker.process.pid, time.monotonic() - worker.started
            if not worker.serving:
                print(f"flowstudio serve: worker {pid} exited with {code} while starting; stopping", file=sys.stderr)
                self.failed = True
                self.stop()
                continue
            log.warning("worker %s exited with %s after %.0f s; starting another", pid, code, lived)
            self.spawn()

    def _read_ready(self) -> None:
        try:
            told = os.read(self.ready, 4096)
        except BlockingIOError:
            return
        pids = {int(pid) for pid in told.split()}
        for worker in self.workers:
            worker.serving = worker.serving or worker.process.pid in pids

    def wait(self) -> None:
        """Tick until every worker is gone; after a stop, kill those still there after STOP_S."""
        deadline: float | None = None
        while self.workers:
            time.sleep(TICK_S)
            self.tick()
            if self.stopping and deadline is None:
                deadline = time.monotonic() + STOP_S
            if deadline is not None and time.monotonic() > deadline:
                self._signal(signal.SIGKILL)


def supervise(sock: socket.socket, settings: Settings, count: int) -> int:
    """Serve on `sock` with `count` worker processes until SIGTERM or SIGINT; returns the exit code
    (1 when a worker could not start)."""
    supervisor = _Supervisor(sock, settings)
    previous = {number: signal.signal(number, supervisor.stop) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        for _ in range(count):
            supervisor.spawn()
        supervisor.wait()
    finally:
        supervisor.stop()
        supervisor.wait()
        for number, handler in previous.items():
            signal.signal(number, handler)
        for fd in (supervisor.keep, supervisor.alive, supervisor.ready, supervisor.told):
            os.close(fd)
        sock.close()
    return 1 if supervisor.failed else 0


def _watch_parent(alive: int) -> None:
    """Stop this worker (as SIGTERM does) once the parent's end of the pipe closes."""

    def watch() -> None:
        while os.read(alive, 1):
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: list[str]) -> None:
    """A worker: the app on the inherited socket, until SIGTERM (or the parent is gone)."""
    given = json.loads(argv[0])
    fd, alive, ready = given.pop("fd"), given.pop("alive"), given.pop("ready")
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
    settings = Settings(**values)
    _watch_parent(alive)

    def started() -> None:
        os.write(ready, f"{os.getpid()}\n".encode())
        os.close(ready)

    run(settings.app(siblings=True), socket.socket(fileno=fd), started)


if __name__ == "__main__":
    main(sys.argv[1:])
