"""Prompt flow Python tools that take a connection → `tool.python`, the connection read from the environment.

A parameter typed as a Prompt flow connection (`AzureOpenAIConnection`, `CustomConnection`, ...)
means the tool calls a service with the connection's keys, which code.python's sandbox (no
network, standard library only) cannot do. Such a tool keeps its code, unsandboxed, as a module
written beside the flow and named in the flow's `tools:`; a `tool.python` node calls a wrapper
that builds the connection from the environment: connection `my_conn` reads every `MY_CONN_*`
variable (`MY_CONN_API_KEY` is the field `api_key`), through `studio.secrets.reveal` so the
values are masked wherever a run is kept or shown.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from studio.importers.build import slug
from studio.importers.report import NodeReport
from studio.importers.sources import REQUIRED, Function
from studio.runtime.registry import with_role

if TYPE_CHECKING:
    from studio.importers.promptflow_ctx import Ctx

KNOWN_FIELDS = {
    "AzureOpenAIConnection": ["api_key", "api_base", "api_version", "api_type"],
    "OpenAIConnection": ["api_key", "base_url", "organization"],
    "AzureContentSafetyConnection": ["api_key", "endpoint", "api_version"],
    "SerpConnection": ["api_key"],
}
"""Fields of Prompt flow's typed connections (a CustomConnection's are those the code reads)."""

SHIM = '''import os

from studio.secrets import reveal


class PromptflowConnection(dict):
    """Stands in for a Prompt flow connection: NAME_FIELD environment variables are its fields."""

    def __init__(self, name):
        prefix = name.upper() + "_"
        super().__init__({k[len(prefix):].lower(): reveal(k) for k in os.environ if k.startswith(prefix)})
        self.secrets = self
        self.configs = self

    def __getattr__(self, field):
        try:
            return self[field]
        except KeyError:
            raise AttributeError(f"{field}: set the environment variable for it") from None


'''
"""Top of a tool module: the connection stand-in."""


def env_prefix(connection: str) -> str:
    """The environment variables' prefix for connection `connection` (`my-conn` → `MY_CONN`)."""
    return re.sub(r"[^A-Za-z0-9]+", "_", connection).strip("_").upper() or "CONNECTION"


def connection_tool(ctx: Ctx, node: dict[str, Any], func: Function, path: str, entry: NodeReport) -> dict[str, Any]:
    """A tool.python node calling `func` (kept in a module beside the flow) with its connections."""
    module = slug(f"{ctx.b.name}_{Path(path).stem}", "tools")
    file = f"{module}.py"
    given = node.get("inputs") or {}
    connections = {p: str(given.get(p) or p) for p, a in func.annotations.items() if a.endswith("Connection")}
    if file not in ctx.b.files:
        ctx.b.files[file] = _module(ctx.b.name, path, func, {func.annotations[p] for p in connections})
    tool = slug(f"{func.name}_tool", "tool")
    if f"def {tool}(" not in ctx.b.files[file]:
        ctx.b.files[file] += _wrapper(tool, func, connections)
    ctx.b.tools[tool] = f"{module}:{tool}"
    for param, name in connections.items():
        variables = ", ".join(f"{env_prefix(name)}_{f.upper()}" for f in _fields(func, param))
        entry.approximate(
            f"connection {name} ({func.annotations[param]}) is read from the environment: set {variables or env_prefix(name) + '_*'}"
        )
    local = sorted({m for m in func.foreign if _local(ctx.folder, m)})
    installed = sorted({m.split(".")[0] for m in func.foreign if m not in local})
    entry.approximate(
        f"the tool runs unsandboxed as tool.python from {file} (written beside the flow)"
        + (f"; copy its module(s) {', '.join(local)} from the Prompt flow folder beside it" if local else "")
        + (f"; it needs {', '.join(installed)} installed" if installed else "")
    )
    inputs = {k: ctx.wire(v) for k, v in given.items() if k in func.params and k not in connections}
    return {"type": with_role("tool_call"), "inputs": inputs, "config": {"tool": tool}}


def _module(flow: str, path: str, func: Function, types: set[str]) -> str:
    """The tool module: the connection stand-in, the tool's code (`from __future__` lines first)."""
    future = [line for line in func.code.splitlines() if line.startswith("from __future__")]
    code = "\n".join(line for line in func.code.splitlines() if not line.startswith("from __future__"))
    aliases = "".join(f"{t.rsplit('.', 1)[-1]} = PromptflowConnection\n" for t in sorted(types) if t.isidentifier())
    head = f'"""Python tools of the Prompt flow {flow} ({path}), imported as they were."""\n\n'
    return head + "".join(f"{line}\n" for line in future) + SHIM + aliases + "\n\n" + code + "\n"


def _local(folder: Path, module: str) -> bool:
    """Whether `module` is a file or package of the Prompt flow folder (not an installed package)."""
    stem = folder.joinpath(*module.split("."))
    return stem.with_suffix(".py").is_file() or (stem / "__init__.py").is_file()


def _wrapper(tool: str, func: Function, connections: dict[str, str]) -> str:
    """`def TOOL(params...)`: calls the function with its connections built from the environment."""
    params = []
    for name, default in func.params.items():
        if name in connections:
            params.append(f"{name}={connections[name]!r}")
        else:
            params.append(name if default is REQUIRED else f"{name}={default!r}")
    params.sort(key=lambda p: "=" in p)
    args = ", ".join(f"{n}=PromptflowConnection({n})" if n in connections else f"{n}={n}" for n in func.params)
    doc = f'"""{func.name}, its connections read from the environment."""'
    return f"\n\ndef {tool}({', '.join(params)}):\n    {doc}\n    return {func.name}({args})\n"


def _fields(func: Function, param: str) -> list[str]:
    """The connection's fields: a typed connection's own, else those the code reads."""
    known = KNOWN_FIELDS.get(func.annotations[param].rsplit(".", 1)[-1])
    if known:
        return known
    read = re.findall(rf"\b{param}\.(?:secrets|configs)\[\s*['\"](\w+)['\"]", func.code)
    read += re.findall(rf"\b{param}\[\s*['\"](\w+)['\"]", func.code)
    read += [
        a
        for a in re.findall(rf"\b{param}\.(\w+)\b", func.code)
        if a not in ("secrets", "configs", "items", "get", "keys", "values")
    ]
    return sorted(set(read))
