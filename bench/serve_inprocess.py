"""The serving path without the network: `wait`-mode POSTs made as raw ASGI calls to the app
`flowstudio serve` runs, one after another, store on disk (SQLite, `synchronous=FULL`).

What it isolates: the app, the engine and the store's commits per request, with neither uvicorn
nor a client process sharing the CPU, so a change on the request path shows here before it shows
in `bench/serve.py`'s end-to-end figures. Prints milliseconds per request, the transactions the
group-commit writer made per run and the milliseconds each took on its thread (SQLite's work and
the fsync), for each durability mode in turns (A B C A B C ...); `--profile MODE` prints a
cProfile of that mode instead. `--db-dir /dev/shm` puts the stores in memory: what the disk costs
is the difference.

Run:
    .venv/bin/python bench/serve_inprocess.py [--requests 2000] [--rounds 2] [--modes exit,async,sync] [--db-dir DIR]
    .venv/bin/python bench/serve_inprocess.py --profile exit [--sort tottime]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.serve import EXPECTED, FLOW, add_db_dir  # noqa: E402
from studio.serve.app import create_app  # noqa: E402

PATH = "/flows/serve-three/runs"
BODY = json.dumps({"inputs": {"topic": "cats"}}).encode()
WARM_UP = 200


async def post(app: Any) -> None:
    """One `wait` run through the whole ASGI app (middleware included); fails unless it answers
    200 and the flow's expected output."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": PATH,
        "raw_path": PATH.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(BODY)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    delivered = False
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": BODY, "more_body": False}
        await asyncio.Event().wait()  # the client never disconnects
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    answer = json.loads(b"".join(message.get("body", b"") for message in sent[1:]))
    assert sent[0]["status"] == 200 and answer["outputs"]["headline"] == EXPECTED, sent


async def measure(mode: str, requests: int, folder: Path, profile: cProfile.Profile | None) -> dict[str, float]:
    """Milliseconds per request, transactions per run and milliseconds per transaction (the
    writer thread's: SQLite's work and the fsync), for `requests` runs after a warm-up."""
    app = create_app(FLOW, db=folder / f"{mode}-{time.monotonic_ns()}.db", durability=mode)  # type: ignore[arg-type]
    async with app.router.lifespan_context(app):
        for _ in range(WARM_UP):
            await post(app)
        writer = app.state.manager.store.writer
        transactions, busy_s = writer.transactions, writer.busy_s
        if profile is not None:
            profile.enable()
        started = time.perf_counter()
        for _ in range(requests):
            await post(app)
        elapsed = time.perf_counter() - started
        if profile is not None:
            profile.disable()
        transactions, busy_s = writer.transactions - transactions, writer.busy_s - busy_s
    return {
        "ms_per_request": elapsed / requests * 1000,
        "transactions_per_run": transactions / requests,
        "ms_per_transaction": busy_s / max(transactions, 1) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="Requests per mode and round.")
    parser.add_argument("--rounds", type=int, default=2, help="Rounds of every mode in turns.")
    parser.add_argument("--modes", default="exit,async,sync", help="Durability modes, measured in turns.")
    parser.add_argument("--profile", metavar="MODE", help="Profile one mode instead (cProfile).")
    parser.add_argument("--sort", default="cumulative", help="The profile's sort key.")
    add_db_dir(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-inprocess-", dir=args.db_dir) as tmp:
        if args.profile:
            profile = cProfile.Profile()
            uvloop.run(measure(args.profile, args.requests, Path(tmp), profile))
            pstats.Stats(profile).sort_stats(args.sort).print_stats(45)
            return
        figures: dict[str, list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for mode in args.modes.split(","):
                figures.setdefault(mode, []).append(uvloop.run(measure(mode, args.requests, Path(tmp), None)))
        stores = str(Path(tmp).parent)
    report = {
        mode: {
            "ms_per_request_each_round": [round(each["ms_per_request"], 3) for each in rounds],
            **{key: round(statistics.median(each[key] for each in rounds), 3) for key in rounds[0]},
        }
        for mode, rounds in figures.items()
    }
    print(
        json.dumps({"requests": args.requests, "rounds": args.rounds, "stores_in": stores, "modes": report}, indent=1)
    )


if __name__ == "__main__":
    main()
