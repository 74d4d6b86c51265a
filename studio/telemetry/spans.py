"""Spans from flowstudio's records: a run, its steps, their model calls and tool calls.

Attributes follow the OpenTelemetry GenAI semantic conventions (`gen_ai.*`) and the
OpenInference ones (`openinference.span.kind`, `llm.*`, `tool.*`); prompts, inputs and
outputs (`input.value`, `output.value`), and error text on failed spans, only when content
capture is on (else a failed span says its error kind and a fixed sentence). Times come from the
records, so a stored run exports with the timing it had.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from studio.plugins import NODES, plugins

if TYPE_CHECKING:
    from studio.store.base import CallRecord, RunRecord, StepRecord

NodeTypes = Mapping[str, Mapping[str, Any]]
"""Node id → its spec (`type`, `config`), from the flow, and `span_kind` when the caller knows the
node's class (else the kind its type declares is looked up)."""
_TEXT_LIMIT = 32_000
WITHHELD = "error text withheld (content capture is off)"
"""The fixed description of a failed span when FLOWSTUDIO_OTEL_CAPTURE_CONTENT is off."""


def nanos(timestamp: str | None) -> int | None:
    """ISO 8601 (as the store writes it) → nanoseconds since the epoch."""
    if not timestamp:
        return None
    return int(dt.datetime.fromisoformat(timestamp).timestamp() * 1_000_000_000)


def _json(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text[:_TEXT_LIMIT]


def provider_of(model: str) -> str:
    """`openai/gpt-4o-mini` → `openai`; the built-in models name themselves."""
    if model.startswith("scripted"):
        return "flowstudio.scripted"
    if model.startswith("local/"):
        return "flowstudio.local"
    return model.split("/", 1)[0] if "/" in model else "openai"


def declared_kind(node_type: str) -> str:
    """The span kind a node type declares (`Node.span_kind`), read through its entry point;
    `CHAIN` for a type that is not installed."""
    point = plugins(NODES).get(node_type)
    try:
        return str(getattr(point.load(), "span_kind", "CHAIN")) if point is not None else "CHAIN"
    except Exception:
        return "CHAIN"


def _top(node_path: str) -> str:
    return node_path.split(".", 1)[0].split("[", 1)[0]


class SpanWriter:
    """Writes the spans of one run through `tracer`."""

    def __init__(self, tracer: Tracer, *, content: bool, node_types: NodeTypes | None = None) -> None:
        self.tracer = tracer
        self.content = content
        self.node_types = node_types or {}

    def error_text(self, text: str | None, kind: str) -> str:
        """A span's error description: the error itself with content capture on; otherwise its kind
        and a fixed sentence, since error text can quote inputs, prompts and replies."""
        if self.content:
            return (text or "")[:500]
        return f"{kind}: {WITHHELD}"

    def start_run(self, run: RunRecord) -> Span:
        attributes: dict[str, Any] = {
            "openinference.span.kind": "CHAIN",
            "gen_ai.operation.name": "invoke_workflow",
            "flowstudio.run_id": run.run_id,
            "flowstudio.flow": run.flow,
            "flowstudio.flow_hash": run.flow_hash,
            "session.id": run.run_id,
        }
        if run.experiment_id:
            attributes["flowstudio.experiment_id"] = run.experiment_id
        if run.parent_run_id:
            attributes["flowstudio.parent_run_id"] = run.parent_run_id
        if self.content:
            attributes["input.value"] = _json(run.inputs)
            attributes["input.mime_type"] = "application/json"
        return self.tracer.start_span(
            f"run {run.flow}", kind=SpanKind.INTERNAL, start_time=nanos(run.started_at), attributes=attributes
        )

    def end_run(self, span: Span, run: RunRecord) -> None:
        span.set_attribute("flowstudio.status", run.status)
        span.set_attribute("llm.token_count.total", run.tokens)
        span.set_attribute("flowstudio.cost_usd", run.cost_usd)
        if self.content and run.outputs is not None:
            span.set_attribute("output.value", _json(run.outputs))
            span.set_attribute("output.mime_type", "application/json")
        if run.status == "failed":
            span.set_status(Status(StatusCode.ERROR, self.error_text(run.error, "run_failed")))
        span.end(end_time=nanos(run.ended_at))

    def step(self, parent: Span, run: RunRecord, step: StepRecord, calls: list[CallRecord]) -> None:
        """A step's span, with a child per model call and per tool call it made."""
        spec = self.node_types.get(_top(step.node), {})
        node_type = str(spec.get("type", ""))
        kind, operation = "CHAIN", "invoke_node"
        if (spec.get("span_kind") or declared_kind(node_type)) == "TOOL":
            kind, operation = "TOOL", "execute_tool"
        elif step.outputs and isinstance(step.outputs.get("turns"), list):
            kind, operation = "AGENT", "invoke_agent"
        attributes: dict[str, Any] = {
            "openinference.span.kind": kind,
            "gen_ai.operation.name": operation,
            "flowstudio.run_id": run.run_id,
            "flowstudio.flow": run.flow,
            "flowstudio.node": step.node,
            "flowstudio.node_type": node_type,
            "flowstudio.status": step.status,
            "flowstudio.attempt": step.attempt,
            "flowstudio.cached": step.cached,
            "llm.token_count.total": step.tokens,
            "flowstudio.cost_usd": step.cost_usd,
        }
        if run.experiment_id:
            attributes["flowstudio.experiment_id"] = run.experiment_id
        if kind == "TOOL":
            config = spec.get("config") or {}
            name = str(config.get("tool", step.node)) if isinstance(config, dict) else step.node
            attributes.update({"gen_ai.tool.name": name, "tool.name": name})
            server = config.get("server") if isinstance(config, dict) else None
            if isinstance(server, dict):
                attributes["flowstudio.mcp.server"] = str(server.get("url") or server.get("command") or "")
        if self.content:
            attributes["input.value"] = _json(step.inputs or {})
            attributes["output.value"] = _json(step.outputs or {})
        span = self.tracer.start_span(
            f"{operation} {step.node}",
            context=trace.set_span_in_context(parent),
            start_time=nanos(step.started_at),
            attributes=attributes,
        )
        if step.status == "failed":
            span.set_status(Status(StatusCode.ERROR, self.error_text(step.error, step.error_kind or "node_failed")))
            if step.error_kind:
                span.set_attribute("error.type", step.error_kind)
        context = trace.set_span_in_context(span)
        for call in calls:
            self._model_call(context, call)
        self._tool_turns(context, step, calls)
        span.end(end_time=nanos(step.ended_at))

    def _model_call(self, context: Context, call: CallRecord) -> None:
        request = call.request or {}
        operation = "chat" if request.get("messages") else "text_completion"
        attributes: dict[str, Any] = {
            "openinference.span.kind": "LLM",
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": provider_of(call.model),
            "gen_ai.request.model": call.model,
            "gen_ai.response.model": call.model,
            "gen_ai.usage.input_tokens": call.input_tokens,
            "gen_ai.usage.output_tokens": call.output_tokens,
            "gen_ai.response.finish_reasons": ["error"] if call.error else ["stop"],
            "llm.model_name": call.model,
            "llm.provider": provider_of(call.model),
            "llm.token_count.prompt": call.input_tokens,
            "llm.token_count.completion": call.output_tokens,
            "llm.token_count.total": call.input_tokens + call.output_tokens,
            "flowstudio.cache_hit": call.cache_hit,
            "flowstudio.cost_usd": call.cost_usd,
        }
        for name in ("temperature", "max_tokens"):
            if isinstance(request.get(name), int | float):
                attributes[f"gen_ai.request.{name}"] = request[name]
        if self.content:
            prompt = request.get("messages") or request.get("prompt") or ""
            attributes["input.value"] = _json(prompt)
            attributes["output.value"] = _json(call.response or "")
        start = nanos(call.started_at) or 0
        span = self.tracer.start_span(
            f"{operation} {call.model}",
            context=context,
            kind=SpanKind.CLIENT,
            start_time=start,
            attributes=attributes,
        )
        if call.error:
            kind = error_kind(call.error)
            span.set_status(Status(StatusCode.ERROR, self.error_text(call.error, kind)))
            span.set_attribute("error.type", kind)
        span.end(end_time=start + int(call.latency_s * 1_000_000_000))

    def _tool_turns(self, context: Context, step: StepRecord, calls: list[CallRecord]) -> None:
        """An agent's tool calls, each placed right after the model reply that asked for it."""
        turns = (step.outputs or {}).get("turns")
        if not isinstance(turns, list):
            return
        for turn in turns:
            if not isinstance(turn, dict) or "tool" not in turn:
                continue
            number = int(turn.get("turn", 1))
            asked = calls[min(number, len(calls)) - 1] if calls else None
            start = (
                (nanos(asked.started_at) or 0) + int(asked.latency_s * 1e9) if asked else nanos(step.started_at) or 0
            )
            name = str(turn["tool"])
            attributes: dict[str, Any] = {
                "openinference.span.kind": "TOOL",
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "tool.name": name,
                "flowstudio.node": step.node,
            }
            if turn.get("server"):
                attributes["flowstudio.mcp.server"] = str(turn["server"])
            if self.content:
                attributes["input.value"] = _json(turn.get("input", ""))
                attributes["output.value"] = _json(turn.get("observation", ""))
            span = self.tracer.start_span(
                f"execute_tool {name}", context=context, start_time=start, attributes=attributes
            )
            if turn.get("error"):
                span.set_status(Status(StatusCode.ERROR, self.error_text(str(turn["error"]), "tool_error")))
            span.end(end_time=start + int(float(turn.get("latency_s") or 0) * 1e9))

    def run(self, run: RunRecord, steps: list[StepRecord], calls: list[CallRecord]) -> None:
        """A whole stored run."""
        span = self.start_run(run)
        for step in steps:
            self.step(span, run, step, [c for c in calls if c.node == step.node and _within(c, step)])
        self.end_run(span, run)


def error_kind(text: str) -> str:
    """`rate_limit: slow down` → `rate_limit`; text without a plain kind word → `model_error`."""
    head = text.split(":", 1)[0].strip()
    return head if re.fullmatch(r"[a-z][a-z0-9_]{0,39}", head) else "model_error"


def _within(call: CallRecord, step: StepRecord) -> bool:
    """Whether a call belongs to this execution of its node (a resumed run has several)."""
    return step.started_at <= call.started_at <= (step.ended_at or call.started_at)
