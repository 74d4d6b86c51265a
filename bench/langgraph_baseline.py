"""LangGraph engine-overhead baseline (the LangGraph side of the flowstudio benchmark).

Measures, in one process, with no checkpointer:
  * chain_1000        - 1000 no-op nodes in a chain (best of 5 after a warm-up)
  * fanout_100        - start -> 100 parallel no-op nodes -> join (best of 5)
  * fanout_100_sleep  - same shape, each branch does ``await asyncio.sleep(0.2)`` (best of 3)
Nodes are ``async def`` like flowstudio's (LangGraph runs sync nodes in a thread pool under
``ainvoke``, which is slower). Graph build + compile time is reported separately as ``compile_s``.
Prints ONE JSON object to stdout.

Run (uses its own venv, standard library + langgraph only):
    bash bench/setup_langgraph.sh
    bench/.venv-langgraph/bin/python bench/langgraph_baseline.py
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import itertools
import json
import operator
import platform
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

CHAIN_LEN = 1000
FANOUT = 100
SLEEP_S = 0.2


class ChainState(TypedDict):
    count: int


class FanState(TypedDict):
    hits: Annotated[list[int], operator.add]


async def _chain_node(state: ChainState) -> dict[str, int]:
    return {"count": state["count"] + 1}


def build_chain(n: int = CHAIN_LEN) -> CompiledStateGraph:
    g = StateGraph(ChainState)
    names = [f"n{i}" for i in range(n)]
    for name in names:
        g.add_node(name, _chain_node)
    g.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile()


def _branch(i: int, sleep_s: float) -> Callable[[FanState], Any]:
    if sleep_s > 0:

        async def anode(state: FanState) -> dict[str, list[int]]:
            await asyncio.sleep(sleep_s)
            return {"hits": [i]}

        return anode

    async def node(state: FanState) -> dict[str, list[int]]:
        return {"hits": [i]}

    return node


def _marker(value: int) -> Callable[[FanState], Any]:
    async def node(state: FanState) -> dict[str, list[int]]:
        return {"hits": [value]}

    return node


def build_fanout(n: int = FANOUT, sleep_s: float = 0.0) -> CompiledStateGraph:
    g = StateGraph(FanState)
    g.add_node("start", _marker(-1))
    g.add_node("join", _marker(-2))
    branches = [f"b{i}" for i in range(n)]
    for i, name in enumerate(branches):
        g.add_node(name, _branch(i, sleep_s))
        g.add_edge("start", name)
    g.add_edge(START, "start")
    g.add_edge(branches, "join")  # barrier: join runs once, after all branches
    g.add_edge("join", END)
    return g.compile()


async def _best_of(
    runs: int, call: Callable[[], Awaitable[dict[str, Any]]], check: Callable[[dict[str, Any]], bool]
) -> float:
    if not check(await call()):  # warm-up + correctness check
        raise RuntimeError("graph produced an unexpected result")
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        out = await call()
        best = min(best, time.perf_counter() - t0)
        if not check(out):
            raise RuntimeError("graph produced an unexpected result")
    return best


def _compile(builder: Callable[[], CompiledStateGraph]) -> tuple[CompiledStateGraph, float]:
    t0 = time.perf_counter()
    graph = builder()
    return graph, time.perf_counter() - t0


async def main() -> dict[str, Any]:
    result: dict[str, Any] = {
        "langgraph_version": importlib.metadata.version("langgraph"),
        "python_version": platform.python_version(),
    }

    chain, c_s = _compile(build_chain)
    cfg = {"recursion_limit": CHAIN_LEN + 10}
    t = await _best_of(5, lambda: chain.ainvoke({"count": 0}, cfg), lambda o: o["count"] == CHAIN_LEN)
    result["chain_1000"] = {
        "nodes": CHAIN_LEN,
        "total_s": round(t, 6),
        "per_node_ms": round(t / CHAIN_LEN * 1e3, 4),
        "compile_s": round(c_s, 4),
        "runs": "best of 5 after 1 warm-up",
    }

    expected_hits = FANOUT + 2
    fan, c_s = _compile(build_fanout)
    t = await _best_of(5, lambda: fan.ainvoke({"hits": []}), lambda o: len(o["hits"]) == expected_hits)
    result["fanout_100"] = {
        "nodes": expected_hits,
        "total_s": round(t, 6),
        "per_node_ms": round(t / expected_hits * 1e3, 4),
        "compile_s": round(c_s, 4),
        "runs": "best of 5 after 1 warm-up",
    }

    fan_sleep, c_s = _compile(lambda: build_fanout(sleep_s=SLEEP_S))
    t = await _best_of(3, lambda: fan_sleep.ainvoke({"hits": []}), lambda o: len(o["hits"]) == expected_hits)
    result["fanout_100_sleep"] = {
        "nodes": expected_hits,
        "sleep_s": SLEEP_S,
        "wall_s": round(t, 4),
        "overhead_s": round(t - SLEEP_S, 4),
        "compile_s": round(c_s, 4),
        "runs": "best of 3 after 1 warm-up",
    }
    return result


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main()), indent=2))
