"""How a flow names an MCP server, and which stdio commands the user lets flows start.

A stdio server is a program the run starts, so a flow file alone can never make it start:
the command must be allowlisted by the user, outside the flow, in `$FLOWSTUDIO_MCP_COMMANDS`
(entries separated by the OS path separator) or in `~/.config/flowstudio/mcp.toml`
(`commands = [...]`, honouring `$XDG_CONFIG_HOME`). An entry that is a bare program allows
it with any arguments; an entry with arguments allows exactly that command line.
Nothing here imports the MCP SDK or starts anything.
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

COMMANDS_ENV = "FLOWSTUDIO_MCP_COMMANDS"
"""The user's allowlist of stdio MCP server commands."""
_ENV_REF = re.compile(r"^\$env\.([A-Za-z_][A-Za-z0-9_]*)$")
_SECRET_NAME = re.compile(r"(auth|key|token|secret|password|cookie)", re.IGNORECASE)
_PREFIX = re.compile(r"^[A-Za-z0-9_]*$")


def env_name(value: str) -> str | None:
    """`NAME` for a `$env.NAME` reference, else None."""
    found = _ENV_REF.match(value)
    return found.group(1) if found else None


class McpServer(BaseModel):
    """One MCP server: streamable HTTP (`url`) or a local program over stdio (`command`)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    url: str | None = None
    """Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp."""
    headers: dict[str, str] = {}
    """HTTP headers; credentials only as `$env.NAME` (read from the environment at run time, masked in traces)."""
    command: str | None = None
    """Program to start over stdio; it must be allowlisted by the user (`$FLOWSTUDIO_MCP_COMMANDS` or ~/.config/flowstudio/mcp.toml)."""
    args: list[str] = []
    """Arguments of `command`."""
    env: dict[str, str] = {}
    """Extra environment of the stdio program; credentials only as `$env.NAME`."""
    tools: list[str] | None = None
    """Only these tools of the server (default: all it lists)."""
    prefix: str = Field(default="", pattern=_PREFIX.pattern)
    """Prepended to each tool's name as the agent sees it, e.g. `fs_` (avoids clashes between servers)."""
    timeout_s: float = Field(default=30.0, gt=0)
    """Give up on connecting, listing or one tool call after this many seconds."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        if (self.url is None) == (self.command is None):
            raise ValueError("give exactly one of `url` (streamable HTTP) or `command` (stdio)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("`url` must be an http:// or https:// URL")
        return self

    @field_validator("headers", "env")
    @classmethod
    def _secrets_from_env(cls, value: dict[str, str]) -> dict[str, str]:
        for name, item in value.items():
            if _SECRET_NAME.search(name) and env_name(item) is None:
                raise ValueError(f"{name}: credentials are only allowed as $env.NAME")
        return value

    @property
    def label(self) -> str:
        """How traces name the server: its URL or its command line."""
        return self.url or shlex.join([self.command or "", *self.args])

    def key(self) -> str:
        """Identity of the connection: one session per key per run."""
        return self.model_dump_json(include={"url", "headers", "command", "args", "env"})


def config_path() -> Path:
    """The user's MCP config file."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "flowstudio" / "mcp.toml"


def allowed_commands() -> list[list[str]]:
    """The user's allowlist, each entry split like a shell would."""
    entries = [e for e in os.environ.get(COMMANDS_ENV, "").split(os.pathsep) if e.strip()]
    path = config_path()
    if path.is_file():
        try:
            listed = tomllib.loads(path.read_text(encoding="utf-8")).get("commands", [])
        except (OSError, tomllib.TOMLDecodeError):
            listed = []
        entries += [e for e in listed if isinstance(e, str) and e.strip()]
    return [shlex.split(e) for e in entries]


def refuse_command(server: McpServer) -> str | None:
    """Why a stdio server may not start (None when the user allowlisted it, or it is HTTP)."""
    if server.command is None:
        return None
    line = [server.command, *server.args]
    for entry in allowed_commands():
        if entry == line or entry == [server.command]:
            return None
    return (
        f"stdio MCP command {shlex.join(line)!r} is not allowlisted; flows cannot start programs on their own. "
        f"If you trust it, add {server.command!r} (any arguments) or the whole command line to "
        f"${COMMANDS_ENV} (separated by {os.pathsep!r}) or to `commands = [...]` in {config_path()}"
    )


class McpTool(BaseModel):
    """A tool a server listed, as a node sees it."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The name the model uses: the server's `prefix` plus the tool's own name."""
    remote: str
    """The tool's name on its server."""
    description: str = ""
    """What the server says the tool does."""
    input_schema: dict[str, object] = {}
    """JSON Schema of the arguments."""
    server: str = ""
    """The server's label (URL or command line)."""
    source: McpServer
    """The server the tool is called on."""


class McpResult(BaseModel):
    """What one tool call returned, secrets masked."""

    text: str
    """The text content blocks, joined by newlines."""
    data: object = None
    """Structured content when the server sent it, else the text parsed as JSON, else the text."""
    is_error: bool = False
    """The server reported the call as failed (the text says why)."""
    latency_s: float = 0.0
    """Seconds the call took."""
