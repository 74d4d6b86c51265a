"""The flow file, schema version 1, as strict pydantic models.

Field docstrings become descriptions in `flowstudio schema` and help text in the studio.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from studio.errors import SpecError
from studio.flow.loader import Document, PathKey, load_file, loads
from studio.flow.suggest import first_problem, unknown_key

SCHEMA_VERSION = 1
NODE_ID = r"^[a-z][a-z0-9_]*$"
FLOW_NAME = r"^[a-z0-9-]+$"
_ENV_REF = re.compile(r"^\$env\.[A-Za-z_][A-Za-z0-9_]*$")
_KEY_LIKE = re.compile(r"^(sk-|sk_|sk-ant-|xox[bp]-|AKIA|AIza|ghp_|hf_)[A-Za-z0-9_\-]{8,}")
_SECRET_NAME = re.compile(r"(key|token|secret|password)", re.IGNORECASE)
_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TOOL_TARGET = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")
Durability = Literal["sync", "async", "exit"]
"""When a run's finished steps reach the store (`studio.runtime.durability`)."""
DURABILITIES: tuple[Durability, ...] = ("sync", "async", "exit")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)


class InputSpec(_Strict):
    """A flow input."""

    type: str = "str"
    """Port type: str, int, float, bool, any, dict, list or list[T]."""
    description: str = ""
    """What the input means, shown in run forms."""
    default: Any = None
    """Value used when the input is not given; without one the input is required."""

    @property
    def required(self) -> bool:
        return "default" not in self.model_fields_set


class ScriptError(_Strict):
    """A failure the scripted model raises instead of answering."""

    kind: Literal["rate_limit", "server", "auth", "timeout", "bad_json"]
    """Which provider failure to imitate."""
    times: int | None = None
    """Fail this many times, then fall through to the next rule; omitted means always."""
    retry_after_s: float | None = None
    """A Retry-After hint sent with rate-limit errors."""


class ScriptRule(_Strict):
    """One rule of a scripted model; the first rule that matches answers."""

    match: str | None = None
    """Regular expression searched in the rendered prompt; omitted matches everything."""
    reply: str | None = None
    """The text the model answers."""
    replies: list[str] | None = None
    """Texts answered in turn, one per call that reaches this rule (the last one repeats); calls of a
    model with such a rule are never served from the LLM cache."""
    tool_calls: list[dict[str, Any]] | None = None
    """Function calls to answer with (`{name, arguments}` each), imitating function calling."""
    error: ScriptError | None = None
    """Fail instead of answering."""
    delay_s: float = 0.0
    """Seconds to wait before answering, to imitate latency."""
    word_delay_s: float = Field(default=0.0, ge=0)
    """Seconds between the words of a streamed reply, to imitate a model that streams slowly."""
    chance: float | None = Field(default=None, ge=0, le=1)
    """At temperature > 0, the share of samples this rule answers (drawn from the prompt and the
    request's `seed`), else the next rule is tried; at temperature 0 it always answers."""


class ModelSpec(_Strict):
    """A named model alias. Any litellm model string works; `local/smollm2` and `scripted` are built in."""

    model: str
    """Provider model string, e.g. local/smollm2, scripted, openai/gpt-4o-mini."""
    temperature: float | None = None
    """Sampling temperature; 0 is deterministic where the provider allows."""
    max_tokens: int | None = None
    """Upper bound on generated tokens per call."""
    stop: list[str] | None = None
    """Stop sequences added to every call."""
    api_key: str | None = None
    """Only as $env.NAME: a literal key in a flow is refused."""
    api_base: str | None = None
    """Base URL of an OpenAI-compatible server."""
    fallbacks: list[str] = []
    """Other aliases tried in order when this one fails."""
    retries: int = Field(default=2, ge=0, le=10)
    """Extra attempts after a rate limit, timeout, server error or malformed reply."""
    retry_backoff_s: float = Field(default=0.5, ge=0)
    """First retry delay in seconds (doubles, with full jitter); Retry-After wins when sent."""
    rate_limit_wait_s: float = Field(default=300.0, ge=0)
    """Longest a call waits out rate limits (429s), over all its attempts, before it fails; rate
    limits do not count against `retries`."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Longest one attempt may take; a hung call is ended and retried as a timeout."""
    rpm: int | None = Field(default=None, gt=0)
    """Requests per minute this process sends to the model (all runs together); None: adaptive,
    slowing down on the provider's 429s and speeding up again while calls succeed."""
    tpm: int | None = Field(default=None, gt=0)
    """Tokens (prompt plus reply) per minute this process sends to the model; None: no token limit."""
    max_concurrency: int | None = Field(default=None, gt=0)
    """Most calls to the model in flight at once in this process; None: no limit."""
    script: list[ScriptRule] | None = None
    """Rules of an inline scripted model (model: scripted)."""
    input_cost_per_token: float | None = None
    """Price of one prompt token in USD, overriding the provider's."""
    output_cost_per_token: float | None = None
    """Price of one generated token in USD, overriding the provider's."""
    params: dict[str, Any] = {}
    """Other provider parameters passed through to litellm."""

    @field_validator("api_key")
    @classmethod
    def _env_only(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_REF.match(value):
            raise ValueError("a literal API key is not allowed; write $env.NAME and set NAME in the environment")
        return value

    @field_validator("params")
    @classmethod
    def _no_secret_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name, item in value.items():
            if isinstance(item, str) and _SECRET_NAME.search(name) and not _ENV_REF.match(item):
                raise ValueError(f"{name}: secrets are only allowed as $env.NAME")
        return value


class RetrySpec(_Strict):
    """How often a failing node is tried again."""

    attempts: int = Field(default=3, ge=1, le=20)
    """Total attempts, the first included."""
    backoff_s: float = Field(default=1.0, ge=0)
    """Base delay before the second attempt; doubles each time, with jitter."""


class NodeSpec(_Strict):
    """One node of the graph."""

    type: str
    """Registry key of the node type, e.g. llm.generate."""
    description: str = ""
    """What this node is for, in the flow's own words."""
    inputs: dict[str, Any] = {}
    """Input values: a reference ($node.port, $inputs.name) or a literal."""
    config: dict[str, Any] = {}
    """Settings of the node type (see its Config)."""
    model: str | None = None
    """Model alias for LLM nodes; `default` when omitted."""
    when: str | None = None
    """Guard: a sandboxed Jinja2 expression over upstream outputs; false skips the node."""
    after: list[str] = []
    """Nodes that must finish first, without a data wire."""
    retry: RetrySpec | None = None
    """Retry policy for this node's failures."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Fail the node when one attempt takes longer than this."""
    cache: bool = True
    """Whether model calls of this node may be served from the LLM cache."""


class FlowSpec(_Strict):
    """A flow: typed inputs, a graph of nodes, and outputs read from it."""

    flowstudio: Literal[1]
    """Schema version of the file."""
    name: str = Field(pattern=FLOW_NAME)
    """Flow name: lowercase letters, digits and dashes."""
    description: str = ""
    """What the flow does."""
    inputs: dict[str, InputSpec] = {}
    """Named, typed inputs of the flow."""
    outputs: dict[str, Any] = {}
    """Named outputs: references into the graph (or literals)."""
    models: dict[str, ModelSpec] = {}
    """Model aliases used by the nodes."""
    tools: dict[str, str] = {}
    """Python functions nodes may call by name (`tool.python`, `llm.agent`): name → `module:function`,
    the module a file beside the flow or allowlisted in $FLOWSTUDIO_TOOL_MODULES. Imported when a run
    starts, never on validate."""
    nodes: dict[str, NodeSpec]
    """The nodes, by id ([a-z][a-z0-9_]*)."""
    durability: Durability | None = None
    """When finished steps are written to the store: `sync` (each step before its dependents
    start; a crash loses only the steps in flight), `async` (in the background, all of them
    before the run ends; a crash may lose a few more finished steps, never a finished run's
    record) or `exit` (all at the end; a crash loses every step and a resume starts over).
    Omitted: the server's `--durability`, else `sync`; a run's `--durability` wins over it."""

    @field_validator("tools")
    @classmethod
    def _tool_targets(cls, value: dict[str, str]) -> dict[str, str]:
        for name, target in value.items():
            if not _TOOL_NAME.match(name):
                raise ValueError(f"tool name {name!r} must be a Python identifier")
            if not _TOOL_TARGET.match(target):
                raise ValueError(f"tool {name!r}: write module:function, not {target!r}")
        return value

    @field_validator("nodes")
    @classmethod
    def _node_ids(cls, value: dict[str, NodeSpec]) -> dict[str, NodeSpec]:
        bad = [n for n in value if not re.match(NODE_ID, n) or n == "inputs"]
        if bad:
            raise ValueError(f"node id {bad[0]!r} must match [a-z][a-z0-9_]* and not be 'inputs'")
        return value


@dataclass(frozen=True)
class Flow:
    """A validated flow and where it came from."""

    spec: FlowSpec
    document: Document
    path: Path | None
    text: str

    @property
    def file(self) -> str:
        return self.document.file

    @property
    def hash(self) -> str:
        """Content hash of the file text; a run refuses to resume on a changed flow."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def line_of(self, *path: str | int) -> int | None:
        return self.document.line_of(tuple(path))

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()


def _check_version(document: Document) -> None:
    data = document.data
    if not isinstance(data, dict):
        raise SpecError("a flow file must be a mapping", file=document.file, line=1)
    if "flowstudio" not in data:
        raise SpecError("missing `flowstudio: 1` (the schema version)", file=document.file, line=1, field="flowstudio")
    version = data["flowstudio"]
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise SpecError(
            f"unknown schema version {version!r}; this flowstudio reads version {SCHEMA_VERSION}",
            file=document.file,
            line=document.line_of(("flowstudio",)),
            field="flowstudio",
        )


def _check_node_ids(document: Document) -> None:
    nodes = document.data.get("nodes")
    for node_id in nodes if isinstance(nodes, dict) else {}:
        problem = None
        if not re.match(NODE_ID, node_id):
            problem = f"node id {node_id!r} must match [a-z][a-z0-9_]* (lowercase, digits, underscores)"
        elif node_id == "inputs":
            problem = "'inputs' is reserved for flow inputs and cannot be a node id"
        if problem:
            line = document.line_of(("nodes", node_id))
            raise SpecError(problem, file=document.file, line=line, node=node_id, field=f"nodes.{node_id}")


def _spec_error(err: ValidationError, document: Document) -> SpecError:
    problems = err.errors(include_url=False)
    first = first_problem(problems)
    path: PathKey = tuple(p for p in first["loc"] if isinstance(p, (str, int)))
    field = ".".join(str(p) for p in path)
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = unknown_key(FlowSpec, path)
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    node = str(path[1]) if len(path) > 1 and path[0] == "nodes" else None
    return SpecError(message, file=document.file, line=document.line_of(path), node=node, field=field)


def parse(document: Document, text: str, path: Path | None = None) -> Flow:
    """Validate a loaded document against the schema (and `checks`: credentials, defaults)."""
    from studio.flow import checks

    _check_version(document)
    _check_node_ids(document)
    checks.check_document(document)
    try:
        spec = FlowSpec.model_validate(document.data)
    except ValidationError as err:
        raise _spec_error(err, document) from None
    checks.check_defaults(document, spec.inputs)
    return Flow(spec=spec, document=document, path=path, text=text)


def load_flow(path: str | Path) -> Flow:
    """Load and validate a flow file. Executes nothing."""
    path = Path(path)
    document = load_file(path)
    return parse(document, path.read_text(encoding="utf-8"), path)


def load_flow_text(text: str, file: str = "<string>", path: Path | None = None) -> Flow:
    """Load and validate flow text (the studio's YAML tab, tests)."""
    return parse(loads(text, file=file), text, path)
