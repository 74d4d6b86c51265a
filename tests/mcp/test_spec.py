"""Which stdio MCP commands a user allowlisted: the environment, the config file, exact lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from studio.mcp.spec import McpServer, refuse_command


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("FLOWSTUDIO_MCP_COMMANDS", raising=False)
    (tmp_path / "flowstudio").mkdir()
    return tmp_path / "flowstudio" / "mcp.toml"


def test_nothing_is_allowed_by_default_and_the_refusal_names_the_fix(config: Path) -> None:
    refusal = refuse_command(McpServer(command="uvx", args=["mcp-server-time"]))
    assert refusal is not None
    assert "'uvx mcp-server-time' is not allowlisted" in refusal
    assert "$FLOWSTUDIO_MCP_COMMANDS" in refusal and str(config) in refusal


def test_a_bare_program_allows_any_arguments_a_full_line_only_itself(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWSTUDIO_MCP_COMMANDS", "uvx:/opt/bin/server --read-only")
    assert refuse_command(McpServer(command="uvx", args=["anything", "--at", "all"])) is None
    assert refuse_command(McpServer(command="/opt/bin/server", args=["--read-only"])) is None
    assert refuse_command(McpServer(command="/opt/bin/server", args=["--write"])) is not None
    assert refuse_command(McpServer(command="/opt/bin/server")) is not None
    assert refuse_command(McpServer(command="npx", args=["uvx"])) is not None


def test_the_config_file_allows_too_and_http_servers_need_no_allowlist(config: Path) -> None:
    config.write_text('commands = ["node /srv/mcp.js"]\n')
    assert refuse_command(McpServer(command="node", args=["/srv/mcp.js"])) is None
    assert refuse_command(McpServer(command="node", args=["/srv/other.js"])) is not None
    assert refuse_command(McpServer(url="http://127.0.0.1:1/mcp")) is None


def test_server_settings_are_checked() -> None:
    with pytest.raises(ValidationError, match="exactly one of"):
        McpServer(url="http://127.0.0.1:1/mcp", command="x")
    with pytest.raises(ValidationError, match="exactly one of"):
        McpServer()
    with pytest.raises(ValidationError, match="credentials are only allowed"):
        McpServer(command="x", env={"API_KEY": "abc"})
    assert McpServer(url="http://h/mcp", headers={"Authorization": "$env.T"}).headers == {"Authorization": "$env.T"}
