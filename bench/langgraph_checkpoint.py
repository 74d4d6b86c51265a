"""LangGraph's SqliteSaver on a chain of no-op nodes: checkpoint cost per step.

`durability="sync"` writes each checkpoint before the next step, the guarantee flowstudio
gives; LangGraph's default ("async") overlaps the write with the next step and is also shown.

Run (LangGraph's own venv):  bench/.venv-langgraph/bin/python bench/langgraph_checkpoint.py
Prints one JSON object: seconds per step with and without the checkpointer, and the difference.
"""

from __future__ import annotations

import importlib.metadata
import json
import sqlite3
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

STEPS = 300


class State(TypedDict):
    count: int


def _node(state: State) -> dict[str, int]:
    return {"count": state["count"] + 1}


def build(checkpointer: Any = None) -> Any:
    graph = StateGraph(State)
    names = [f"n{i}" for i in range(STEPS)]
    for name in names:
        graph.add_node(name, _node)
    graph.add_edge(START, names[0])
    for a, b in pairwise(names):
        graph.add_edge(a, b)
    graph.add_edge(names[-1], END)
    return graph.compile(checkpointer=checkpointer)


def timed(graph: Any, thread: str, durability: str | None = "sync") -> float:
    config = {"recursion_limit": STEPS + 10, "configurable": {"thread_id": thread}}
    extra = {"durability": durability} if durability else {}
    start = time.perf_counter()
    assert graph.invoke({"count": 0}, config, **extra)["count"] == STEPS
    return time.perf_counter() - start


def main() -> dict[str, Any]:
    plain = min(timed(build(), "x", None) for _ in range(3))
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "lg.db", check_same_thread=False)
        saver = SqliteSaver(conn)
        graph = build(saver)
        saved = min(timed(graph, f"t{i}") for i in range(3))
        background = min(timed(graph, f"a{i}", "async") for i in range(3))
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
    return {
        "langgraph_version": importlib.metadata.version("langgraph"),
        "steps": STEPS,
        "plain_ms_per_step": round(plain / STEPS * 1e3, 4),
        "sqlite_saver_ms_per_step": round(saved / STEPS * 1e3, 4),
        "checkpoint_ms_per_step": round((saved - plain) / STEPS * 1e3, 4),
        "async_durability_ms_per_step": round(background / STEPS * 1e3, 4),
        "journal_mode": journal,
        "synchronous": synchronous,
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
