"""OpenTelemetry export: the spans of a run (live and from the store), their attributes, and a collector that is down."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from studio.flow.spec import load_flow
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine, RunResult
from studio.store import MemoryStore
from studio.telemetry.hook import OtelHook
from studio.telemetry.provider import make_provider
from studio.telemetry.stored import gather
from tests.conftest import FIXTURES, FLOWS, SCRIPTS
from tests.mcp.conftest import free_port

AGENT = FLOWS / "calculator-agent.yaml"
SCRIPT = f"scripted/{SCRIPTS / 'calculator-agent.yaml'}"


async def _run(hook: OtelHook, store: MemoryStore, experiment_id: str | None = None) -> RunResult:
    plan = compile_flow(load_flow(AGENT), {"default": SCRIPT})
    return await Engine(store, hooks=[hook]).run(plan, {"question": "What is 12 times 7?"}, experiment_id=experiment_id)


def _by_name(spans: Any) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


async def test_a_run_exports_run_step_model_and_tool_spans_with_semantic_conventions() -> None:
    memory, store = InMemorySpanExporter(), MemoryStore()
    hook = OtelHook("memory", exporter=memory)
    result = await _run(hook, store, experiment_id="exp1")
    hook.close()
    assert result.status == "succeeded", result.error
    spans = _by_name(memory.get_finished_spans())
    (run,) = spans["run calculator-agent"]
    (step,) = spans["invoke_agent agent"]
    models = spans[f"text_completion {SCRIPT}"]
    (tool,) = spans["execute_tool calculator"]
    assert run.attributes is not None and step.attributes is not None and tool.attributes is not None
    assert run.attributes["flowstudio.run_id"] == result.run_id
    assert run.attributes["flowstudio.experiment_id"] == "exp1"
    assert run.attributes["flowstudio.flow"] == "calculator-agent"
    assert run.attributes["openinference.span.kind"] == "CHAIN"
    assert step.parent is not None and step.parent.span_id == run.context.span_id
    assert step.attributes["openinference.span.kind"] == "AGENT"
    assert step.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert len(models) == 2
    stored_calls = store.calls(result.run_id)
    for span, call in zip(sorted(models, key=lambda s: s.start_time or 0), stored_calls, strict=True):
        attributes = span.attributes or {}
        assert span.parent is not None and span.parent.span_id == step.context.span_id
        assert attributes["gen_ai.operation.name"] == "text_completion"
        assert attributes["gen_ai.provider.name"] == "flowstudio.scripted"
        assert attributes["gen_ai.request.model"] == SCRIPT
        assert attributes["gen_ai.usage.input_tokens"] == call.input_tokens > 0
        assert attributes["gen_ai.usage.output_tokens"] == call.output_tokens > 0
        assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
        assert attributes["openinference.span.kind"] == "LLM"
        assert "input.value" not in attributes and "output.value" not in attributes  # content capture is off
    assert tool.attributes["gen_ai.tool.name"] == "calculator"
    assert tool.attributes["openinference.span.kind"] == "TOOL"
    assert tool.parent is not None and tool.parent.span_id == step.context.span_id


async def test_content_capture_puts_prompts_inputs_and_outputs_on_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWSTUDIO_OTEL_CAPTURE_CONTENT", "true")
    memory = InMemorySpanExporter()
    hook = OtelHook("memory", exporter=memory)
    await _run(hook, MemoryStore())
    hook.close()
    spans = _by_name(memory.get_finished_spans())
    attributes = spans["run calculator-agent"][0].attributes or {}
    assert attributes["input.value"] == '{"question": "What is 12 times 7?"}'
    assert "84" in str(attributes["output.value"])
    model = spans[f"text_completion {SCRIPT}"][0].attributes or {}
    assert "Question: What is 12 times 7?" in str(model["input.value"])
    tool = spans["execute_tool calculator"][0].attributes or {}
    assert (tool["input.value"], tool["output.value"]) == ("12 * 7", "84")


async def test_a_stored_run_exports_the_same_spans_as_the_live_one() -> None:
    live, store = InMemorySpanExporter(), MemoryStore()
    hook = OtelHook("memory", exporter=live)
    result = await _run(hook, store)
    hook.close()
    stored = InMemorySpanExporter()
    provider, _ = make_provider("memory", stored)
    from studio.telemetry.spans import SpanWriter

    found = gather(store, result.run_id)
    assert found is not None
    run, steps, calls, nodes = found
    SpanWriter(provider.get_tracer("t"), content=False, node_types=nodes).run(run, steps, calls)
    provider.shutdown()

    def shape(exporter: InMemorySpanExporter) -> list[tuple[str, int, int, dict[str, Any]]]:
        return sorted(
            (s.name, s.start_time or 0, s.end_time or 0, dict(s.attributes or {}))
            for s in exporter.get_finished_spans()
        )

    assert shape(stored) == shape(live)


class Refusing(SpanExporter):
    """A collector that is down."""

    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Any) -> SpanExportResult:
        self.calls += 1
        raise ConnectionError("connection refused")


async def test_a_failing_collector_never_fails_a_run_and_is_reported_once(capsys: pytest.CaptureFixture[str]) -> None:
    refusing = Refusing()
    hook = OtelHook("http://127.0.0.1:9/v1/traces", exporter=refusing)
    for _ in range(3):
        result = await _run(hook, MemoryStore())
        assert result.status == "succeeded"
        time.sleep(0.3)  # let the batch processor try
    hook.close()
    assert refusing.calls == 1  # later batches are dropped at once, never retried in the run's way
    assert capsys.readouterr().err.count("cannot export traces to http://127.0.0.1:9/v1/traces") == 1


def test_run_with_a_missing_collector_succeeds_and_says_so_once(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url = f"http://127.0.0.1:{free_port()}"
    start = time.perf_counter()
    result = cli(
        "run", str(AGENT), "-i", "question=What is 12 times 7?", "--model", f"default={SCRIPT}", "--otlp", url, "--json"
    )
    seconds = time.perf_counter() - start
    assert result.code == 0, result.err
    assert result.json()["outputs"]["answer"] == "84"
    assert result.err.count("cannot export traces") == 1, result.err
    assert seconds < 60
    exported = cli("trace", "export", result.json()["run_id"], "--otlp", url)
    assert exported.code == 1 and "cannot export traces" in exported.err
    assert cli("trace", "export", result.json()["run_id"], env={"OTEL_EXPORTER_OTLP_ENDPOINT": ""}).code == 2
    shown = cli("trace", result.json()["run_id"], "--json")
    assert shown.code == 0 and shown.json()[0]["node"] == "agent"


class Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector that decodes what it receives."""

    spans: ClassVar[list[Any]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                Collector.spans.extend(scope.spans)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    Collector.spans = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.slow  # a collector server on 127.0.0.1
def test_a_batch_exports_its_runs_over_otlp_with_the_experiment_id(cli, collector: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "topics.jsonl"
    data.write_text('{"topic": "cats"}\n{"topic": "dogs"}\n')
    result = cli(
        "batch",
        str(FIXTURES / "chain.yaml"),
        "--data",
        str(data),
        "--json",
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": collector},
    )
    assert result.code == 0, result.err
    experiment = result.json()["experiment_id"]

    def attributes(span: Any) -> dict[str, Any]:
        return {a.key: a.value.string_value or a.value.int_value for a in span.attributes}

    runs = [attributes(s) for s in Collector.spans if s.name == "run chain"]
    assert len(runs) == 2 and {r["flowstudio.experiment_id"] for r in runs} == {experiment}
    models = [attributes(s) for s in Collector.spans if s.name.endswith(" scripted")]
    assert models, sorted({s.name for s in Collector.spans})
    assert len(models) == 2 and all(m["gen_ai.provider.name"] == "flowstudio.scripted" for m in models)
    assert all(m["gen_ai.usage.input_tokens"] > 0 for m in models)
