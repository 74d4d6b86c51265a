"""The optimizer's parts on their own: edits written back as YAML, the meter, the Pareto front,
the rewrite library and demo picking."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from studio.flow.spec import ScriptRule, load_flow_text
from studio.models.base import Completion, ModelError, Request
from studio.models.scripted import ScriptedModel
from studio.optimize.candidates import REMOVE, TunableNode, render
from studio.optimize.demos import pick, topped_up
from studio.optimize.meter import Meter, MeteredClient, metering
from studio.optimize.moves import NodeMoves, demo_moves
from studio.optimize.pareto import Point, front, svg
from studio.optimize.proposers import clean, output_shape

ROOT = Path(__file__).resolve().parents[2]
TOPIC = (ROOT / "bench" / "flows" / "topic.yaml").read_text()


def test_edits_are_written_into_the_file_keeping_everything_else() -> None:
    text = "# a comment at the top\n" + TOPIC
    demos = [{"text": "The striker scored.", "label": "sports"}, {"text": "72", "label": "science"}]
    edits = {
        ("nodes", "classify", "config", "demos"): demos,
        ("nodes", "classify", "config", "instructions"): "Line one.\nLine two: {{ not a var }}",
        ("models", "default", "temperature"): 0.7,
    }
    written = render(text, edits)
    assert written.startswith("# a comment at the top\n")
    flow = load_flow_text(written)
    config = flow.spec.nodes["classify"].config
    assert config["demos"] == demos  # '72' stays a string
    assert config["instructions"] == "Line one.\nLine two: {{ not a var }}"
    assert flow.spec.models["default"].temperature == 0.7
    assert flow.spec.nodes["classify"].config["labels"] == ["sports", "business", "science", "politics"]


def test_an_edit_can_remove_a_key() -> None:
    with_demos = render(TOPIC, {("nodes", "classify", "config", "demos"): [{"text": "a", "label": "sports"}]})
    without = render(with_demos, {("nodes", "classify", "config", "demos"): REMOVE})
    assert "demos" not in load_flow_text(without).spec.nodes["classify"].config


def test_no_edits_round_trip_unchanged() -> None:
    assert render(TOPIC, {}) == TOPIC


async def test_the_meter_refuses_calls_past_the_limit() -> None:
    meter = Meter(max_calls=2)
    client = MeteredClient(ScriptedModel([ScriptRule(reply="ok")]), meter, "scripted")
    request = Request(prompt="hello")
    await client.complete(request)
    await client.complete(request)
    with pytest.raises(ModelError) as refused:
        await client.complete(request)
    assert refused.value.kind == "budget"
    assert (meter.calls, meter.refused, meter.remaining, meter.tokens) == (2, 1, 0, 4)


async def test_a_failed_attempt_counts_as_a_call() -> None:
    meter = Meter(max_calls=5)
    failing = ScriptedModel([ScriptRule(error={"kind": "server", "times": 1}), ScriptRule(reply="ok")])  # type: ignore[arg-type]
    client = MeteredClient(failing, meter, "scripted")
    with pytest.raises(ModelError):
        await client.complete(Request(prompt="x"))
    reply: Completion = await client.complete(Request(prompt="x"))
    assert reply.text == "ok" and meter.calls == 2


def test_clients_are_metered_only_inside_metering() -> None:
    import studio.runtime.engine
    from studio.flow.spec import ModelSpec

    spec = ModelSpec(model="scripted", script=[ScriptRule(reply="ok")])
    with metering(Meter()):
        client_for = getattr(studio.runtime.engine, "client_for")  # noqa: B009 - the name the engine looks up
        assert isinstance(client_for(spec, ROOT), MeteredClient)
    assert not isinstance(client_for(spec, ROOT), MeteredClient)


def test_the_pareto_front_keeps_only_undominated_points() -> None:
    points = [
        Point("c0", 0.5, 0.0, 10, 1),
        Point("c1", 0.7, 0.0, 30, 1),
        Point("c2", 0.6, 0.0, 40, 1),  # dearer than c1 and worse
        Point("c3", 0.9, 0.0, 90, 3),
        Point("c4", 0.4, 0.0, 5, 1),
    ]
    assert [p.candidate for p in front(points)] == ["c4", "c0", "c1", "c3"]
    picture = svg(points, "c3", "test <plot>")
    assert picture.count("<circle") == len(points) + 1 and "test &lt;plot&gt;" in picture
    assert "tokens per example" in picture


def test_usd_orders_the_front_when_anything_costs() -> None:
    points = [Point("a", 0.9, 0.002, 10, 1), Point("b", 0.8, 0.001, 90, 1)]
    assert [p.candidate for p in front(points)] == ["b", "a"]
    assert "USD per example" in svg(points, "a", "t")


@pytest.mark.parametrize(
    ("values", "shape"),
    [
        (["12", "7", "104"], "number only"),
        ([{"name": "Ann", "age": 3}, '{"name": "Bo", "age": 4}'], 'keys "name", "age"'),
        (["yes", "no", "yes", "no", "no"], "one of: no, yes"),
        (["a red car", "the blue sky", "seven tall trees"], "a few words"),
        ([], None),
    ],
)
def test_the_library_infers_the_output_format(values: list[object], shape: str | None) -> None:
    found = output_shape(values)
    assert (found is None) if shape is None else (found is not None and shape in found)


def test_proposals_are_cleaned_or_refused() -> None:
    assert clean('Instructions: "Name the topic in one word."\n\nExtra talk.', "") == "Name the topic in one word."
    assert clean("ok", "") is None
    assert clean("Use {{ text }} carefully please.", "") is None
    assert clean("Same as now.", "Same as now.") is None


def test_demos_are_spread_over_the_answers() -> None:
    pool = [{"text": str(i), "label": "a"} for i in range(10)] + [{"text": "x", "label": "b"}]
    chosen = pick(pool, 4, random.Random(0), "label")
    assert len(chosen) == 4 and {"a", "b"} == {d["label"] for d in chosen}


@pytest.mark.parametrize(
    ("labels", "first"),
    [
        (["sports", "business", "science", "politics"], "4 labelled demos"),
        (["positive", "negative"], "2 labelled demos"),
        (["a", "b", "c", "d", "e", "f", "g", "h", "i"], "2 labelled demos"),
    ],
)
def test_a_classify_node_first_tries_one_demo_per_label(labels: list[str], first: str) -> None:
    node = TunableNode("classify", "llm.classify", {"labels": labels}, "default", {})
    pool = [{"text": f"{label} {i}", "label": label} for label in labels for i in range(3)]
    moves = demo_moves(NodeMoves(node, {}, "default", [], pool, []), random.Random(0))
    assert moves[0].description == first
    shown = {d["label"] for d in moves[0].edits[("nodes", "classify", "config", "demos")]}
    assert len(shown) == int(first.split()[0])  # every demo shows a different label


def test_bootstrapped_classify_demos_are_topped_up_with_labels_no_good_run_shows() -> None:
    node = TunableNode("classify", "llm.classify", {"labels": ["a", "b", "c"]}, "default", {})
    labelled = [{"text": f"{label} {i}", "label": label} for label in "abc" for i in range(2)]
    bootstrapped = labelled[:4]  # a and b only
    pool = topped_up(node, bootstrapped, labelled)
    assert pool == [*bootstrapped, *labelled[4:]]
    assert {d["label"] for d in pick(pool, 3, random.Random(0), "label")} == {"a", "b", "c"}
    assert topped_up(node, labelled, labelled) == labelled
    generate = TunableNode("answer", "llm.generate", {}, "default", {})
    assert topped_up(generate, bootstrapped, labelled) == bootstrapped
