"""The node API: all a node type (built-in or third-party) may import from flowstudio.

A node type is a `Node` subclass with a pydantic `Config`, `Inputs` and `Outputs` and one
`async def run(self, inputs, ctx)`. It reaches the world only through `NodeContext`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from studio import secrets
from studio.errors import NodeError, OutputError, TemplateError
from studio.flow import paths, templates
from studio.flow.template_vars import MISSING, optional_variables
from studio.mcp.spec import McpResult, McpServer, McpTool
from studio.mcp.spec import refuse_command as refuse_mcp_command
from studio.models.base import Completion, Message
from studio.tools import registered_tool
from studio.types import ANY, ChatTurn, Messages, PortType, expected, from_annotation, parse_type

__all__ = [
    "ANY",
    "LLM",
    "NO_VALUE",
    "CallPurpose",
    "CapableLLM",
    "CascadeOutcome",
    "ChatTurn",
    "Completion",
    "FlowCaller",
    "McpClient",
    "McpResult",
    "McpServer",
    "McpTool",
    "Memory",
    "Message",
    "Messages",
    "Node",
    "NodeContext",
    "NodeError",
    "OptionalVariables",
    "OutputError",
    "PortType",
    "Role",
    "SubFlowLookup",
    "SubFlowNode",
    "SubFlowSignature",
    "TeacherExample",
    "TemplateError",
    "TemplateInputs",
    "ToolCall",
    "ToolCallingLLM",
    "ToolReply",
    "Tunable",
    "WaitingForInput",
    "evaluate",
    "expression_problem",
    "from_annotation",
    "model_supports",
    "parse_type",
    "paths",
    "refuse_mcp_command",
    "registered_tool",
    "render",
    "secrets",
]

render = templates.render
evaluate = templates.evaluate
expression_problem = templates.expression_problem


OptionalVariables = Annotated[
    list[str],
    Field(
        description="Template variables that may stay unwired (or come from a skipped node): they render as\n"
        "\"\" (or as their `default` filter's value). A variable read as `{{ x | default('...') }}` is\n"
        "optional without being listed."
    ),
]
"""The `optional` config field of a template node (`optional: OptionalVariables = []`), read by
`Node.optional_inputs`."""

CallPurpose = Literal["answer", "probe"]
"""Why a node makes a model call: `answer`, a reply that is (or drafts) the node's answer, streamed
to whoever watches the run; `probe`, a call the node only measures (scores, a calibration), never
streamed and marked so in the trace."""


class LLM(Protocol):
    """The node's model, bound to its alias settings; every call is traced and budgeted."""

    async def complete(
        self,
        *,
        messages: list[Message] | None = None,
        prompt: str | None = None,
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra: dict[str, Any] | None = None,
        purpose: CallPurpose = "answer",
    ) -> Completion:
        """One model call: chat messages or a completion prompt; traced, cached and budgeted.
        `purpose="probe"`: a call whose reply is not shown as the answer (see `CallPurpose`)."""
        ...


@dataclass(frozen=True)
class ToolCall:
    """A tool call the provider's function calling asked for."""

    name: str
    arguments: dict[str, Any]
    id: str = ""


@dataclass(frozen=True)
class ToolReply:
    """A reply to `complete_with_tools`: text, or tool calls, or both."""

    text: str
    calls: list[ToolCall]
    completion: Completion


@runtime_checkable
class ToolCallingLLM(Protocol):
    """Optional capability of `ctx.llm`: the provider's function calling (`llm.agent` uses it)."""

    def supports_tools(self) -> bool:
        """Whether the model takes tools natively (litellm's `supports_function_calling`)."""
        ...

    async def complete_with_tools(
        self, *, messages: list[Message], tools: list[dict[str, Any]], max_tokens: int | None = None
    ) -> ToolReply:
        """One chat call offering `tools` (OpenAI function schemas); traced like `complete`."""
        ...


@runtime_checkable
class CapableLLM(Protocol):
    """Optional capability of `ctx.llm`: it says what its model supports (the engine's bound model
    does, from the model's `Capabilities`); read it through `model_supports`."""

    def supports(self, feature: str) -> bool | None:
        """Whether the model has `feature` (`logprobs`, `function_calling`, `constrained`,
        `prefill`, `streaming`); None when it cannot say."""
        ...


def model_supports(llm: LLM, feature: str) -> bool | None:
    """Whether `llm`'s model has `feature`; None when it cannot say (a model that is no `CapableLLM`)."""
    return llm.supports(feature) if isinstance(llm, CapableLLM) else None


class FlowCaller(Protocol):
    """Runs a sub-flow inside the current run; returns its outputs or raises NodeError."""

    async def __call__(self, flow: str | dict[str, Any], inputs: dict[str, Any], label: str = "") -> dict[str, Any]: ...


async def _no_sub_flows(flow: str | dict[str, Any], inputs: dict[str, Any], label: str = "") -> dict[str, Any]:
    raise NodeError("sub-flows are not available here", kind="no_sub_flows")


class WaitingForInput(Exception):
    """Raised by a node that needs a person's value; the run stops with status `waiting`."""

    def __init__(self, prompt: str) -> None:
        super().__init__(prompt)
        self.prompt = prompt


NO_VALUE: Any = object()

OPTIONAL_ANY = PortType("any", optional=True)


class McpClient(Protocol):
    """The run's MCP sessions (`studio.mcp.sessions.McpSessions`): one per server per run."""

    async def tools(self, server: McpServer, cwd: Path) -> list[McpTool]: ...

    async def call(self, server: McpServer, tool: str, arguments: dict[str, Any], cwd: Path) -> McpResult: ...


class _NoMcp:
    async def tools(self, server: McpServer, cwd: Path) -> list[McpTool]:
        raise NodeError("MCP servers are only reachable inside a run", kind="no_mcp")

    async def call(self, server: McpServer, tool: str, arguments: dict[str, Any], cwd: Path) -> McpResult:
        raise NodeError("MCP servers are only reachable inside a run", kind="no_mcp")


@dataclass(frozen=True)
class TeacherExample:
    """A teacher's past answer kept for a node (`strategy: cascade`)."""

    query: str
    """The text retrieval matches on (the rendered question)."""
    inputs: dict[str, Any]
    """The node's input values for that answer."""
    output: str
    """The teacher's answer."""


@dataclass(frozen=True)
class CascadeOutcome:
    """One call of a cascade: the answer, who gave it and why, and what each model cost."""

    answer: str
    """The node's answer."""
    by: Literal["student", "teacher"]
    """`student` when it was sure enough, else `teacher`."""
    reason: str
    """Why, in words (`2 of 3 samples agreed (2 needed)`, `confidence 0.41 < 0.70`, `warming`)."""
    agreeing: int = 0
    """Student samples that gave the majority answer."""
    samples: int = 0
    """Student samples taken (0 when warming: the teacher alone)."""
    confidence: float | None = None
    """The student's confidence in its answer, where measured (a classifier's label share)."""
    student_cost_usd: float = 0.0
    """What the student's calls cost."""
    teacher_cost_usd: float = 0.0
    """What the teacher's call cost."""


class Memory(Protocol):
    """A node's teacher memory: its kept teacher answers, searchable by the current question."""

    warming: bool
    """True while a batch seeds the memory (`--warm-cascade`): the teacher answers every call."""

    def nearest(self, query: str, k: int) -> list[TeacherExample]:
        """Up to `k` kept examples closest to `query`, best first."""
        ...

    def remember(self, example: TeacherExample) -> None:
        """Keep one teacher answer."""
        ...

    def note(self, outcome: CascadeOutcome) -> None:
        """Record who answered one call and why (the cascade report reads these)."""
        ...


class _NoMemory:
    warming = False

    def nearest(self, query: str, k: int) -> list[TeacherExample]:
        return []

    def remember(self, example: TeacherExample) -> None:
        return None

    def note(self, outcome: CascadeOutcome) -> None:
        return None


def _no_other_models(alias: str, why: str = "") -> LLM:
    raise NodeError(f"model alias {alias!r} is not reachable here", kind="no_model")


@dataclass
class NodeContext:
    """What a running node may use."""

    run_id: str
    node_id: str
    """The node's id, prefixed by its parents' inside sub-flows (`map[2].summarise`)."""
    flow_dir: Path
    """Directory of the flow file; relative paths in config resolve against it."""
    llm: LLM
    """The node's model (its alias, settings, cache, retries, budget)."""
    attempt: int = 1
    call_flow: FlowCaller = _no_sub_flows
    """Run a sub-flow (a path relative to `flow_dir`, or an inline mapping) in this run."""
    supplied: Any = NO_VALUE
    """A value a person supplied on resume (`--value NODE=VALUE`), else NO_VALUE."""
    extra: dict[str, Any] = field(default_factory=dict)
    tools: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """The flow's `tools:` section, resolved (`studio.tools.resolve_tools`)."""
    mcp: McpClient = field(default_factory=_NoMcp)
    """The run's MCP sessions; nodes use `mcp_tools` and `mcp_call`."""
    llm_for: Callable[..., LLM] = _no_other_models
    """`llm_for(alias, why="")`: another alias of the flow as a model, traced and budgeted like
    `llm` (a cascade's teacher; `why` is kept in its calls' trace); only the aliases the node
    names in `model_aliases()` are reachable."""
    memory: Memory = field(default_factory=_NoMemory)
    """The node's teacher memory (`strategy: cascade`)."""

    async def mcp_tools(self, server: McpServer) -> list[McpTool]:
        """The tools of `server` (connected on first use in the run, listed once per run)."""
        return await self.mcp.tools(server, self.flow_dir)

    async def mcp_call(self, server: McpServer, tool: str, arguments: dict[str, Any]) -> McpResult:
        """Call one tool of `server` by its name there; failures to call raise NodeError."""
        return await self.mcp.call(server, tool, arguments, self.flow_dir)

    def tool(self, name: str) -> Callable[..., Any]:
        """The tool `name`: from the flow's `tools:` section, else the `flowstudio.tools` entry points."""
        found = self.tools.get(name) or registered_tool(name)
        if found is None:
            raise NodeError(
                f"unknown tool {name!r}: list it under the flow's `tools:` or register it in the "
                f"`flowstudio.tools` entry-point group (flow tools: {sorted(self.tools)})",
                kind="unknown_tool",
            )
        return found


class TemplateInputs(BaseModel):
    """Inputs of template nodes: any names, each one a template variable."""

    model_config = ConfigDict(extra="allow")
    _optional: frozenset[str] = PrivateAttr(default=frozenset())

    def values(self) -> dict[str, Any]:
        """The values to render with; an optional variable that is unwired or null renders as its default."""
        found = dict(self.model_extra or {})
        for name in self._optional:
            if found.get(name) is None:
                found[name] = MISSING
        return found


SubFlowSignature = tuple[dict[str, PortType], set[str], dict[str, PortType]]
"""A sub-flow's input ports, required inputs and output ports."""


class SubFlowLookup(Protocol):
    """Reads a sub-flow's signature without running it (raises FlowError); the compiler hands it to nodes."""

    def __call__(self, source: str | dict[str, Any], base_dir: Path) -> SubFlowSignature: ...


def _no_sub_flow_lookup(source: str | dict[str, Any], base_dir: Path) -> SubFlowSignature:
    raise NodeError("sub-flows are not available here (construct the node with sub_flows=...)", kind="no_sub_flows")


@dataclass(frozen=True)
class Tunable:
    """A node type's tunable surface: all the optimizer knows of a node (it never reads type names)."""

    fields: tuple[str, ...]
    """Config fields the optimizer may edit (`instructions`, `demos`, `form`, `strategy`, `samples`, ...)."""
    output: str
    """The output port that carries the node's answer; demos hold it under this name."""
    labels: bool = False
    """Whether the node picks one of `config.labels` (demos carry a `label`; one demo per label first)."""
    default_form: Literal["chat", "completion"] = "chat"
    """The prompt form when the config names none."""
    strategies: tuple[str, ...] = ("single", "reasoning", "ensemble", "reflect", "cascade")
    """The `strategy` values the node runs (the optimizer proposes only these)."""
    logprobs: tuple[str, ...] = ()
    """Model-string prefixes (`local/`) on which the node scores its labels by logprobs."""
    drafts: bool = False
    """Whether the node writes a free-text answer from the `prompt` template in its config
    (`llm.generate`): the optimizer's topology moves may tidy or rewrite that answer after it,
    turn it into an arithmetic expression, or remove the node when it only passes text on."""

    def demo(self, inputs: Mapping[str, Any], answer: Any) -> dict[str, Any]:
        """A worked example in the shape the node reads demos: its inputs and its answer (as text)
        under `output`; a classifier's demo is its `text` and `label`, both strings."""
        if self.labels:
            return {"text": _as_text(inputs.get("text", "")), "label": _as_text(answer)}
        return {**inputs, self.output: _as_text(answer)}


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


Role = Literal[
    "template", "completion", "tool_call", "join", "python_code", "merge", "map", "extract", "agent", "classify",
    "structured", "retrieve", "http_request",
]  # fmt: skip
"""A part a node type can play when flowstudio adds a node to a flow, with the config it then takes:
`template`: renders `config.template` (Jinja2) over its inputs into output `text` (the optimizer's
tidy move); `completion`: one model call on `config.prompt` (with `form`, `stop`, `instructions`,
`max_tokens`) into output `text` (the optimizer's answer move and proposer); `tool_call`: calls the
tool `config.tool` with its inputs as arguments into output `result` (the calculate move); `join`:
gathers the wires listed in input `options` that ran into output `values` (`flowstudio fmt --fix`).
The importers (`studio.importers`) translate another tool's nodes into these and: `python_code`
(runs `config.code` on its inputs in the OS sandbox, output `result`), `merge` (the first of input
`options` that ran, as `value`), `map` (the sub-flow `config.flow` once per item, as `config.item`),
`extract` (the value at `config.path` of input `data`), `agent` (a model loop that may call
`config.tools`, output `answer`), `classify` (one of `config.labels` for input `text`), `structured`
(a JSON object of `config.fields`, output `data`), `retrieve` (passages of `config.documents` for
input `query`) and `http_request` (one request with the SSRF checks, outputs `status` and `text`)."""


class Node:
    """Base of every node type."""

    Config: ClassVar[type[BaseModel]]
    Inputs: ClassVar[type[BaseModel]]
    Outputs: ClassVar[type[BaseModel]]
    uses_model: ClassVar[bool] = False
    """Whether the node calls a model (gets `ctx.llm` for its alias)."""
    gathers: ClassVar[str | None] = None
    """A list input whose options may come from skipped nodes (`control.merge`, `control.join`):
    the node runs when any option is available and receives only the available ones."""
    gathers_none: ClassVar[bool] = False
    """With `gathers`: whether the node still runs when every option is gone, on an empty list
    (`control.join` gives `[]`); otherwise such a node is skipped (`control.merge`)."""
    routes: ClassVar[bool] = False
    """Whether an output the node leaves out of its result is a branch not taken
    (`control.switch`): the consumers of that port are skipped."""
    tunable: ClassVar[Tunable | None] = None
    """What the optimizer may tune in this node type; None: it leaves the node alone."""
    waits_for_person: ClassVar[bool] = False
    """Whether the node stops the run (status `waiting`) until a person supplies a value
    (`human.input`): a caller that cannot answer, such as a chat client, must not start such a flow."""
    reshapes: ClassVar[bool] = False
    """Whether the node only reshapes its inputs into its output, with no model call and no
    effect outside the run (`text.template`): the optimizer looks through such a node to find
    where a flow output's answer comes from, and may remove one that passes its only wire on."""
    starter: ClassVar[Mapping[str, Any]] = {}
    """The config the node gets when it is added from the studio's palette: the smallest one that
    compiles (empty: the node's defaults)."""
    span_kind: ClassVar[Literal["CHAIN", "TOOL"]] = "CHAIN"
    """The OpenInference span kind of the node's steps: `TOOL` for a node that calls one tool
    (its span names `config.tool`, and `config.server` for an MCP server)."""
    scripted_replies: ClassVar[str | None] = None
    """What the scripted model must answer for the node to succeed, when its default `Answer: ok`
    will not do (`llm.structured`: "a JSON object the fields validate"); an exported package's
    test is skipped without a script of its own."""
    roles: ClassVar[frozenset[Role]] = frozenset()
    """What the node can stand in for when another part of flowstudio adds one (see `Role`); the
    registry finds a node type by its role, never by its type name."""
    flow_dir: Path
    """Directory of the flow the node belongs to; the compiler passes it at construction."""

    def __init__(
        self, config: BaseModel, *, flow_dir: Path = Path("."), sub_flows: SubFlowLookup = _no_sub_flow_lookup
    ) -> None:
        self.config = config
        self.flow_dir = flow_dir
        self._sub_flows = sub_flows

    def sub_flow_signature(self, source: str | dict[str, Any]) -> SubFlowSignature:
        """Ports of a sub-flow (a path relative to this node's flow, or an inline mapping)."""
        return self._sub_flows(source, self.flow_dir)

    async def run(self, inputs: Any, ctx: NodeContext) -> BaseModel:
        """Run the node once on validated inputs; returns its Outputs (raise NodeError to fail the step)."""
        raise NotImplementedError

    def model_calls(self) -> float:
        """Model calls one run of the node makes (sub-flows not counted)."""
        return 1.0 if self.uses_model else 0.0

    def model_aliases(self) -> list[tuple[str, str]]:
        """(config field, alias) pairs: other model aliases the node calls through `ctx.llm_for`;
        the compiler checks that each is defined."""
        return []

    def model_needs(self) -> list[tuple[tuple[str, ...], str]]:
        """Model capabilities the node needs, as (any one of these `Capabilities` fields, what
        for) pairs; `flowstudio validate` warns when the node's model and its fallbacks lack one."""
        return []

    def setup_calls(self, model: str) -> int:
        """Model calls a freshly compiled node makes once on `model` (the model string), e.g. a calibration."""
        return 0

    def templates(self) -> list[tuple[str, str]]:
        """(config field, template source) pairs whose variables are the node's inputs."""
        return []

    def check(self) -> list[tuple[str, str]]:
        """Compile-time problems with the config, as (field, message) pairs."""
        return []

    def input_ports(self) -> dict[str, PortType]:
        """Named input ports and their types."""
        if issubclass(self.Inputs, TemplateInputs):
            optional = self.optional_inputs()
            return {
                name: OPTIONAL_ANY if name in optional else ANY
                for _, source in self.templates()
                for name in templates.variables(source)
            }
        return {name: from_annotation(f.annotation) for name, f in self.Inputs.model_fields.items()}

    def ready_ports(self, tools: Mapping[str, Callable[..., Any]]) -> dict[str, PortType]:
        """Input ports as the readiness rule reads them during a run, once the flow's `tools:` are
        resolved (a node typed by a flow tool's signature knows its optional inputs only then);
        by default `input_ports()`."""
        return self.input_ports()

    def required_inputs(self) -> set[str]:
        """Inputs that must be wired or given a literal."""
        if issubclass(self.Inputs, TemplateInputs):
            return set(self.input_ports()) - self.optional_inputs()
        return {name for name, f in self.Inputs.model_fields.items() if f.is_required()}

    def optional_inputs(self) -> set[str]:
        """Template variables that may stay unwired: read through a `default` filter, or listed in
        the config's `optional`. They render as their default when unwired or null."""
        if not issubclass(self.Inputs, TemplateInputs):
            return set()
        declared = set(getattr(self.config, "optional", None) or [])
        return declared | {name for _, source in self.templates() for name in optional_variables(source)}

    def parse_inputs(self, values: dict[str, Any]) -> BaseModel:
        """Validate input values into `Inputs` (raises pydantic's ValidationError). Template inputs
        take any names; those with a declared type (`messages`) are checked against it (NodeError
        `bad_input` naming the port and what it takes)."""
        parsed = self.Inputs.model_validate(values)
        if isinstance(parsed, TemplateInputs):
            parsed._optional = frozenset(self.optional_inputs())
            _check_typed(self.input_ports(), values)
        return parsed

    def gather_order(self) -> Literal["wiring", "arrival"]:
        """The order of the `gathers` options: as wired, or as their nodes finished."""
        return "wiring"

    def refuse_value(self, value: Any) -> str | None:
        """Why a value supplied on resume is not acceptable (None when it is)."""
        return None

    def output_ports(self) -> dict[str, PortType]:
        """Named output ports and their types."""
        return {name: from_annotation(f.annotation) for name, f in self.Outputs.model_fields.items()}


def _check_typed(ports: Mapping[str, PortType], values: Mapping[str, Any]) -> None:
    for name, port in ports.items():
        if port.name == "any" or values.get(name) is None:
            continue
        try:
            port.adapter().validate_python(values[name])
        except ValidationError as err:
            problem = err.errors(include_url=False)[0]
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem["loc"])
            raise NodeError(
                f"input {name!r} takes {expected(port)}; {name}{where}: {problem['msg']}", kind="bad_input"
            ) from None


class SubFlowNode(Node):
    """A node whose ports are a sub-flow's (`config.flow`): `flow.call`, `control.loop`."""

    def sub_flow(self) -> SubFlowSignature:
        """The sub-flow's input ports, required inputs and output ports."""
        config: Any = self.config
        flow: str | dict[str, Any] = config.flow
        return self.sub_flow_signature(flow)

    def check(self) -> list[tuple[str, str]]:
        """Compile the sub-flow, so that a bad one is a compile error of this node."""
        self.sub_flow()
        return []

    def input_ports(self) -> dict[str, PortType]:
        """The sub-flow's inputs."""
        return self.sub_flow()[0]

    def required_inputs(self) -> set[str]:
        """The sub-flow's required inputs."""
        return self.sub_flow()[1]

    def output_ports(self) -> dict[str, PortType]:
        """The sub-flow's outputs."""
        return self.sub_flow()[2]
