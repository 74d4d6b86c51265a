"""The Home page's cards: each flow of the folder with its description, size and last run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from studio.errors import FlowError
from studio.flow.loader import loads
from studio.store.base import RunFilter, RunRecord, Store


@dataclass(frozen=True)
class FlowCard:
    """One flow file as the Home page shows it."""

    path: Path
    name: str
    """The flow's `name:` (the file's stem when it has none)."""
    description: str
    nodes: int
    last_run_id: str | None
    last_status: str | None
    last_started: str | None
    """ISO time, UTC, to the second."""
    problem: str | None = None
    """Why the file could not be read, when it could not."""


def flow_card(path: Path, store: Store) -> FlowCard:
    """What a card says about `path`: read with the safe loader (never compiled), and its newest run."""
    name, description, nodes, problem = path.stem, "", 0, None
    try:
        data = loads(path.read_text(encoding="utf-8"), file=str(path)).data
    except (FlowError, OSError, UnicodeDecodeError) as err:
        problem = str(err)
    else:
        if isinstance(data, dict):
            name = str(data.get("name") or path.stem)
            description = str(data.get("description") or "")
            nodes = len(data["nodes"]) if isinstance(data.get("nodes"), dict) else 0
    last = _last_run(path, name, store)
    return FlowCard(
        path=path,
        name=name,
        description=description,
        nodes=nodes,
        last_run_id=last.run_id if last else None,
        last_status=last.status if last else None,
        last_started=last.started_at[:19].replace("T", " ") if last else None,
        problem=problem,
    )


RUNS_SEEN = 200
"""How many of a flow name's newest runs are searched for one made from the card's file."""


def _last_run(path: Path, name: str, store: Store) -> RunRecord | None:
    """The newest run of the flow's name made from a file of this file's name (or recorded without
    one), so that two files sharing a `name:`, such as a flow and the optimizer's copy of it, each
    show their own last run."""
    for limit in (1, RUNS_SEEN):  # the newest is usually this file's: one row, then look further
        runs = store.query_runs(RunFilter(flow=name), limit=limit)
        mine = next((r for r in runs if r.flow_path is None or Path(r.flow_path).name == path.name), None)
        if mine is not None or len(runs) < limit:
            return mine
    return None
