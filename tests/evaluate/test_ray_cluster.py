"""`batch --executor ray --ray-address` on a real local Ray cluster: a head started with
`ray start --head` on 127.0.0.1 and a second node joined with `ray start --address`, each its own
process tree (stopped by its process group, never by `ray stop`, which would stop every Ray on
the machine). The batch scores like a local one, and a repeated batch is served from the
driver's cache: 0 model calls."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from studio.evaluate.batch import BatchOptions, batch
from studio.store import SQLiteStore
from tests.conftest import FIXTURES, ROOT

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'flowstudio[ray]')")
pytestmark = pytest.mark.slow

QA = str(FIXTURES / "qa.yaml")
DATA = str(ROOT / "tests" / "data" / "qa.jsonl")
RAY = str(Path(sys.executable).with_name("ray"))
START_S = 90


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _node(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """One `ray start ... --block` process tree in its own session (HOME is the fixture's, see `cluster`)."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    command = [RAY, "start", *args, "--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats", "--block"]
    with log.open("wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _stop(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=5)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def _started(process: subprocess.Popen[bytes], log: Path, deadline: float) -> None:
    """Wait until `ray start --block` says its node runs."""
    while "Ray runtime started" not in log.read_text(errors="replace"):
        assert process.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of a 2-node local cluster (head + one worker node), 1 CPU each."""
    folder = tmp_path_factory.mktemp("ray")
    home = os.environ.get("HOME")
    os.environ["HOME"] = str(folder)  # no ~/.ray/auth_token of an earlier Ray here: the nodes and the driver agree
    port = _free_port()
    address = f"127.0.0.1:{port}"
    head = _node(
        ["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={folder / 't'}"], folder / "head.log"
    )
    worker: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + START_S
        _started(head, folder / "head.log", deadline)
        worker = _node([f"--address={address}"], folder / "worker.log")
        _started(worker, folder / "worker.log", deadline)
        yield address
    finally:
        for process in (worker, head):
            if process is not None:
                _stop(process)
        if home is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = home


def _made_calls(store: SQLiteStore, experiment_id: str) -> int:
    calls = [c for run in store.runs_of_experiment(experiment_id) for c in store.calls(run.run_id) if not c.error]
    return sum(not c.cache_hit for c in calls)


async def test_a_batch_on_a_two_node_cluster_scores_like_local_and_repeats_from_the_cache(
    cluster: str, tmp_path: Path
) -> None:
    ray.init(address=cluster, log_to_driver=False)
    try:
        assert sum(node["Alive"] for node in ray.nodes()) == 2  # a head and a worker node
    finally:
        ray.shutdown()
    store = SQLiteStore(tmp_path / "cluster.db")
    try:
        local = await batch(BatchOptions(flow=QA, data=DATA, cache=False), store)  # the local executor
        options = BatchOptions(flow=QA, data=DATA, cache=True, executor="ray", ray_address=cluster, concurrency=4)
        first = await batch(options, store)
        assert not ray.is_initialized()  # the executor joined the cluster and left it
        assert [(r.outcome.status, r.outcome.outputs) for r in first.results] == [
            (r.outcome.status, r.outcome.outputs) for r in local.results
        ]
        assert first.summary["score"] == local.summary["score"] == 0.5
        assert _made_calls(store, first.experiment_id) > 0
        again = await batch(options, store)
        assert _made_calls(store, again.experiment_id) == 0  # the cluster's tasks read the driver's cache
        assert again.summary["score"] == 0.5
    finally:
        store.close()
