"""Tests of `llm.classify`: text matching, logprob scoring, calibration, providers without logprobs."""

from __future__ import annotations

import math
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodes.llm_classify import (
    CONTENT_FREE,
    PRIORS,
    Classify,
    label_mass,
    labels_begun_by,
    nearest_label,
)
from studio.flow.spec import load_flow_text
from studio.models import local
from studio.models.base import Completion, Message, Request
from studio.node import NodeContext
from studio.runtime.compiler import compile_flow
from studio.runtime.engine import Engine
from studio.store import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
TRIAGE = ROOT / "flows" / "ticket-triage.yaml"
LABELS = ["billing", "bug", "other"]


def log(p: float) -> float:
    return math.log(p)


class FakeLLM:
    """A `ctx.llm` that answers every call with the next scripted Completion and keeps the calls."""

    def __init__(self, *replies: Completion) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []

    async def complete(self, **kwargs: Any) -> Completion:
        self.calls.append(kwargs)
        return self.replies[min(len(self.calls), len(self.replies)) - 1]


class PlainLLM:
    """A `ctx.llm` whose provider returns no logprobs, whatever it is asked."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.prompts: list[str | None] = []

    async def complete(
        self,
        *,
        messages: list[Message] | None = None,
        prompt: str | None = None,
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra: dict[str, Any] | None = None,
        purpose: str = "answer",
    ) -> Completion:
        self.prompts.append(prompt)
        return Completion(text=self.text, input_tokens=1, output_tokens=1)


class DirectLLM:
    """A `ctx.llm` sending requests, `extra` included, straight to a model client."""

    def __init__(self, client: local.LocalModel) -> None:
        self.client = client

    async def complete(
        self,
        *,
        messages: list[Message] | None = None,
        prompt: str | None = None,
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra: dict[str, Any] | None = None,
        purpose: str = "answer",
    ) -> Completion:
        request = Request(
            messages=tuple(messages or ()),
            prompt=prompt,
            temperature=temperature or 0.0,
            max_tokens=max_tokens or 64,
            stop=tuple(stop or ()),
            extra=extra or {},
        )
        return await self.client.complete(request)


def ctx(llm: object) -> NodeContext:
    return NodeContext(run_id="r", node_id="classify", flow_dir=ROOT, llm=llm)  # type: ignore[arg-type]


def node(**config: Any) -> Classify:
    return Classify(Classify.Config.model_validate({"labels": LABELS, **config}))


def scored(top: dict[str, float], text: str = " billing") -> Completion:
    return Completion(text=text, input_tokens=10, output_tokens=1, top_logprobs=[top])


def triage_config() -> dict[str, Any]:
    flow = yaml.safe_load(TRIAGE.read_text(encoding="utf-8"))
    config: dict[str, Any] = flow["nodes"]["classify"]["config"]
    return config


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("billing", "billing"),
        (" Bug", "bug"),
        ("other.", "other"),
        ("bug report", "bug"),
        ("It is a billing question", "billing"),
        ('"other"', "other"),
        ("bugs", "bug"),
        ("", "billing"),
    ],
)
def test_nearest_label(reply: str, label: str) -> None:
    assert nearest_label(reply, LABELS) == label


def test_nearest_label_keeps_the_configured_spelling() -> None:
    assert nearest_label("POSITIVE", ["Positive", "Negative"]) == "Positive"


@pytest.mark.parametrize(
    ("token", "owners"),
    [
        (" billing", ["billing"]),
        ("Bug", ["bug"]),
        (" b", ["billing", "bug"]),
        (" oth", ["other"]),
        (" refund", []),
        (" ", []),
    ],
)
def test_labels_begun_by(token: str, owners: list[str]) -> None:
    assert labels_begun_by(token, LABELS) == owners


def test_a_token_equal_to_a_label_is_not_shared_with_longer_labels() -> None:
    assert labels_begun_by(" bug", ["bug", "bugfix"]) == ["bug"]


def test_label_mass_adds_prefixes_and_splits_shared_tokens() -> None:
    mass = label_mass({" bug": log(0.4), " b": log(0.2), " bill": log(0.1), " refund": log(0.3)}, LABELS)
    assert mass["bug"] == pytest.approx(0.5)
    assert mass["billing"] == pytest.approx(0.2)
    assert mass["other"] == 0.0


async def test_logprobs_pick_the_most_probable_label_not_the_text() -> None:
    llm = FakeLLM(scored({" refund": log(0.6), " bug": log(0.3), " billing": log(0.1)}, text=" refund"))
    out = await node(calibrate=False).run(Classify.Inputs(text="it crashed"), ctx(llm))
    assert out.label == "bug"
    assert out.confidence == pytest.approx(0.75)
    (call,) = llm.calls
    assert call["extra"] == {"top_logprobs": 100}
    assert call["prompt"].endswith("Text: it crashed\nLabel:")


async def test_calibration_divides_by_the_content_free_prior_once_per_node() -> None:
    biased = {" other": log(0.6), " bug": log(0.2), " billing": log(0.2)}
    llm = FakeLLM(
        scored({" other": log(0.5), " bug": log(0.3), " billing": log(0.2)}),
        *(scored(biased) for _ in CONTENT_FREE),
    )
    classify = node()
    out = await classify.run(Classify.Inputs(text="the app froze"), ctx(llm))
    assert out.label == "bug"
    assert out.confidence == pytest.approx(0.3 / 0.2 / (0.5 / 0.6 + 0.3 / 0.2 + 0.2 / 0.2), abs=1e-4)
    assert [c["prompt"].rsplit("Text: ", 1)[1] for c in llm.calls[1:]] == [f"{t}\nLabel:" for t in CONTENT_FREE]
    await classify.run(Classify.Inputs(text="again"), ctx(llm))
    assert len(llm.calls) == 1 + len(CONTENT_FREE) + 1


class NamedLLM(FakeLLM):
    """A fake that names its model, as the engine's bound model does (`BoundLLM.identity`)."""

    def __init__(self, identity: str, *replies: Completion) -> None:
        super().__init__(*replies)
        self.identity = identity


@pytest.mark.parametrize(
    ("model", "labels", "asks_again"),
    [
        ("a", LABELS, False),  # same model and prompt, another node instance: shared
        ("b", LABELS, True),  # another model: its own prior
        ("a", ["bug", "billing", "other"], True),  # another prompt: its own prior
    ],
)
async def test_priors_live_outside_the_node_keyed_by_model_and_prompt(
    model: str, labels: list[str], asks_again: bool
) -> None:
    top = {" other": log(0.5), " bug": log(0.3), " billing": log(0.2)}
    prefix = uuid.uuid4().hex  # models no other test has primed
    first = NamedLLM(prefix + "a", *(scored(top) for _ in range(4)))
    await node().run(Classify.Inputs(text="x"), ctx(first))
    assert len(first.calls) == 1 + len(CONTENT_FREE)
    later = NamedLLM(prefix + model, *(scored(top) for _ in range(4)))
    fresh = node(labels=labels)
    await fresh.run(Classify.Inputs(text="y"), ctx(later))
    assert len(later.calls) == (1 + len(CONTENT_FREE) if asks_again else 1)
    assert not any("prior" in name for name in vars(fresh))  # the instance keeps nothing


async def test_cleared_priors_are_asked_again_as_in_a_fresh_process() -> None:
    top = {" other": log(0.5), " bug": log(0.3), " billing": log(0.2)}
    llm = NamedLLM(uuid.uuid4().hex, *(scored(top) for _ in range(8)))
    await node().run(Classify.Inputs(text="x"), ctx(llm))
    PRIORS.clear()
    await node().run(Classify.Inputs(text="y"), ctx(llm))
    assert len(llm.calls) == 2 * (1 + len(CONTENT_FREE))


def test_a_bound_model_identity_names_what_shapes_its_answers() -> None:
    from studio.flow.spec import ModelSpec
    from studio.runtime.budget import Budget
    from studio.runtime.llm import BoundLLM

    def identity(**spec: Any) -> str:
        models = {"m": ModelSpec.model_validate(spec)}
        return BoundLLM("n", "m", models, lambda _: None, [], Budget(), None).identity  # type: ignore[arg-type,return-value]

    base = identity(model="local/smollm2", temperature=0)
    assert base == identity(model="local/smollm2", temperature=0, retries=5)
    assert base != identity(model="local/smollm2", temperature=0.7)
    assert base != identity(model="openai/gpt-4o-mini", temperature=0)


async def test_a_label_missing_from_the_prior_gets_the_least_listed_probability() -> None:
    llm = FakeLLM(
        scored({" other": log(0.5), " bug": log(0.4), " billing": log(0.1)}),
        *(scored({" other": log(0.9), " billing": log(0.05)}) for _ in CONTENT_FREE),
    )
    out = await node().run(Classify.Inputs(text="x"), ctx(llm))
    assert out.label == "bug"
    assert out.confidence is not None and 0 < out.confidence < 1


async def test_without_logprobs_the_reply_text_is_matched() -> None:
    llm = FakeLLM(Completion(text=" Bug report", input_tokens=3, output_tokens=2))
    out = await node().run(Classify.Inputs(text="x"), ctx(llm))
    assert (out.label, out.confidence) == ("bug", None)
    assert len(llm.calls) == 1


async def test_top_tokens_without_any_label_fall_back_to_the_text() -> None:
    llm = FakeLLM(scored({" refund": log(0.7), " payment": log(0.2)}, text=" other"))
    out = await node().run(Classify.Inputs(text="x"), ctx(llm))
    assert (out.label, out.confidence) == ("other", None)


async def test_a_provider_without_logprobs_falls_back_to_the_reply_text() -> None:
    llm = PlainLLM(" billing")
    out = await node().run(Classify.Inputs(text="charged twice"), ctx(llm))
    assert (out.label, out.confidence) == ("billing", None)
    assert llm.prompts and llm.prompts[0] is not None


def test_labels_are_named_only_when_the_prompt_does_not_show_them() -> None:
    demos = [{"text": "a", "label": "billing"}, {"text": "b", "label": "bug"}, {"text": "c", "label": "other"}]
    assert "billing, bug, other" not in node(instructions="Sort it.", demos=demos).preamble()
    assert "billing, bug, other" in node(instructions="Sort it.", demos=demos[:2]).preamble()
    assert "billing, bug, other" in node(demos=demos, form="chat").preamble()
    assert "billing, bug, other" in node(demos=demos, list_labels=True).preamble()
    assert node(instructions="Sort it.", list_labels=False).preamble() == "Sort it."


async def test_chat_form_asks_with_messages() -> None:
    llm = FakeLLM(scored({"bug": log(0.9), "billing": log(0.1)}, text="bug"))
    out = await node(form="chat", calibrate=False).run(Classify.Inputs(text="it broke"), ctx(llm))
    assert out.label == "bug"
    (call,) = llm.calls
    assert call["messages"][-1].content == "it broke"


def test_scripted_model_through_the_engine() -> None:
    config = triage_config()
    flow = {
        "flowstudio": 1,
        "name": "classify-scripted",
        "inputs": {"ticket": {"type": "str"}},
        "outputs": {"category": "$classify.label", "confidence": "$classify.confidence"},
        "models": {
            "default": {"model": "scripted", "script": [{"match": "refund", "reply": " Billing."}, {"reply": "bug"}]}
        },
        "nodes": {"classify": {"type": "llm.classify", "inputs": {"text": "$inputs.ticket"}, "config": config}},
    }
    plan = compile_flow(load_flow_text(yaml.safe_dump(flow)))
    engine = Engine(MemoryStore())
    refund = engine.run_sync(plan, {"ticket": "please refund me"})
    assert refund.status == "succeeded", refund.error
    assert refund.outputs == {"category": "billing", "confidence": None}
    crash = engine.run_sync(plan, {"ticket": "it crashes"})
    assert crash.outputs == {"category": "bug", "confidence": None}


def test_local_body_asks_for_logprobs_in_each_api() -> None:
    text = local._body(Request(prompt="p", extra={"top_logprobs": 5, "seed": 1}))
    assert (text["logprobs"], text["seed"], "top_logprobs" in text) == (5, 1, False)
    chat = local._body(Request(messages=(Message("user", "hi"),), extra={"top_logprobs": 5}))
    assert (chat["logprobs"], chat["top_logprobs"]) == (True, 5)
    assert "logprobs" not in local._body(Request(prompt="p"))


def test_local_parse_reads_top_logprobs() -> None:
    def alt(token: str, logprob: float) -> dict[str, Any]:
        return {"id": 1, "token": token, "bytes": [], "logprob": logprob}

    response = {
        "choices": [
            {
                "text": " bug",
                "finish_reason": "stop",
                "logprobs": {
                    "content": [
                        {**alt(" bug", -0.5), "top_logprobs": [alt(" bug", -0.5), alt(" b", -2.0), alt(" b", -2.0)]},
                    ]
                },
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 1},
    }
    completion = local._parse(response, chat=False)
    assert completion.top_logprobs is not None
    (top,) = completion.top_logprobs
    assert top[" bug"] == -0.5
    assert top[" b"] == pytest.approx(-2.0 + math.log(2))
    assert local._parse({**response, "choices": [{"text": "x"}]}, chat=False).top_logprobs is None


CLEAR_TICKETS = [
    ("I was billed twice for my subscription this month, please refund one charge.", "billing"),
    ("My invoice shows the wrong amount for my plan.", "billing"),
    ("The app crashes every time I open the settings screen.", "bug"),
    ("Clicking the export button shows an error and nothing downloads.", "bug"),
    ("Do you have an office in Berlin?", "other"),
    ("Are you hiring designers at the moment?", "other"),
]


@pytest.mark.slow
@pytest.mark.skipif(not local.is_installed(), reason="flowstudio models install smollm2")
async def test_ticket_triage_classify_on_the_embedded_model() -> None:
    classify = Classify(Classify.Config.model_validate(triage_config()))
    llm = DirectLLM(local.LocalModel())
    correct = 0
    for text, gold in CLEAR_TICKETS:
        out = await classify.run(Classify.Inputs(text=text), ctx(llm))
        assert out.confidence is not None and 0 < out.confidence <= 1
        correct += out.label == gold
    assert correct / len(CLEAR_TICKETS) >= 5 / 6


class ScoringClient:
    """A model client that gives logprobs (as the embedded model does) and records whether it streamed."""

    def __init__(self) -> None:
        self.streamed = 0

    def capabilities(self) -> Any:
        from studio.models.capabilities import LOCAL

        return LOCAL

    async def complete(self, request: Request) -> Completion:
        top = {" bug": log(0.6), " billing": log(0.3), " other": log(0.1)}
        text = " bug" if "crash" in str(request.prompt) else " no"
        return Completion(text=text, input_tokens=1, output_tokens=1, top_logprobs=[top])

    async def stream(self, request: Request, on_text: Any) -> Completion:
        self.streamed += 1
        completion = await self.complete(request)
        on_text(completion.text)
        return completion


async def test_scoring_calls_are_probes_never_streamed_as_the_answer() -> None:
    """`[classify] bug no error error` was the priors' replies streamed after the label's."""
    from studio.flow.spec import ModelSpec
    from studio.runtime.budget import Budget
    from studio.runtime.llm import BoundLLM
    from studio.store.base import CallRecord

    PRIORS.clear()
    client, tokens, calls = ScoringClient(), list[str](), list[CallRecord]()
    models = {"default": ModelSpec(model="local/smollm2")}
    bound = BoundLLM("classify", "default", models, lambda _: client, calls, Budget(), None, tokens.append)  # type: ignore[arg-type,return-value]
    out = await node().run(Classify.Inputs(text="it crashes"), ctx(bound))
    assert out.method == "logprobs"
    assert tokens == [] and client.streamed == 0
    assert len(calls) == 1 + len(CONTENT_FREE)
    assert all(c.purpose == "probe" for c in calls)
    assert all(c.request["purpose"] == "probe" for c in calls)
    await bound.complete(prompt="an answer")  # a call that is the node's answer still streams
    assert tokens == [" no"] and calls[-1].purpose == "answer"
    assert "purpose" not in calls[-1].request


@pytest.mark.slow
@pytest.mark.skipif(not local.is_installed(), reason="flowstudio models install smollm2")
def test_stream_shows_no_probe_and_trace_full_marks_them(cli: Any) -> None:
    ran = cli("run", str(TRIAGE), "-i", "ticket=The app crashes when I open it", "--stream", "--json", timeout=300)
    assert ran.code == 0, ran.err
    assert "[classify]" not in ran.err and "[reply] " in ran.err
    run_id = ran.json()["run_id"]
    trace = cli("trace", run_id, "--full")
    assert trace.out.count("purpose: probe") == 1 + len(CONTENT_FREE), trace.out
    assert trace.out.count("model call to local/smollm2") == 2 + len(CONTENT_FREE)
