"""`mcp serve --durability`: a call's run records the server's mode unless its flow names one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from studio.serve import mcp_server
from studio.store import SQLiteStore

FLOWS = Path(__file__).with_name("flows")


async def _progress(done: float, total: float, message: str) -> None:
    return None


async def test_a_call_runs_in_the_servers_mode_and_a_flows_own_mode_wins(tmp_path: Path) -> None:
    tools = mcp_server.load_tools(FLOWS)
    db = str(tmp_path / "runs.db")
    modes: dict[str, Any] = {}
    for mode in ("exit", None):
        result = await mcp_server.call_flow(tools["chain"], {"topic": "cats"}, db, _progress, durability=mode)
        assert not result.is_error, result.content
        modes[str(mode)] = result.meta[mcp_server.RUN_ID_META] if result.meta else None
    store = SQLiteStore(db)
    recorded = {mode: store.get_run(run_id).options["durability"] for mode, run_id in modes.items()}  # type: ignore[union-attr]
    store.close()
    assert recorded == {"exit": "exit", "None": "sync"}
    named = tmp_path / "named.yaml"
    named.write_text((FLOWS / "chain.yaml").read_text().replace("name: chain", "name: chain\ndurability: async"))
    tool = mcp_server.load_tools(named)["chain"]
    result = await mcp_server.call_flow(tool, {"topic": "cats"}, db, _progress, durability="exit")
    store = SQLiteStore(db)
    run = store.get_run(result.meta[mcp_server.RUN_ID_META])  # type: ignore[index]
    store.close()
    assert run is not None and run.options["durability"] == "async"
