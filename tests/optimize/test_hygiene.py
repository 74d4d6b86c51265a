"""Only well-formed candidates race, and a win must be real: proposals are parsed (preambles,
quotes, markdown and commentary go; empty, restating and near-duplicate ones are dropped and
reported), demos show no empty or cut-off field, and a one-example win on dev is a tie (as is a
one-example loss on a race's rung)."""

from __future__ import annotations

from typing import Any

import pytest

from studio.evaluate.datasets import Example
from studio.flow.refs import Ref
from studio.flow.spec import load_flow
from studio.optimize import demos as demo_pools
from studio.optimize import prepare
from studio.optimize.candidates import Candidate, TunableNode
from studio.optimize.demos import Trace
from studio.optimize.instructions import parse
from studio.optimize.optimization import Optimization
from studio.optimize.paired import compare
from studio.optimize.proposers import proposed
from studio.optimize.search import going_on, ranking
from studio.store import MemoryStore
from studio.store.base import CallRecord, StepRecord
from tests.optimize.conftest import HALF_RULES, MakeTask, options, rows, write_jsonl
from tests.optimize.test_search import optimize

REQUEST = "You improve the instructions of one step of an AI workflow.\nStep: answer (llm.generate)\nWrite better instructions for this step, so that it gets such inputs right."


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            "To improve the instructions, I'll rephrase them to be clearer. Here's the revised instructions:\n"
            "Answer with positive or negative only.",
            "Answer with positive or negative only.",
        ),
        (
            "To improve the instructions, I'll rephrase them.\n\nAnswer with the label that fits the review.",
            "Answer with the label that fits the review.",
        ),
        ('Here is the new instruction: "Name the topic in one word."', "Name the topic in one word."),
        ("**Instructions:** Reply with the number only, in digits.", "Reply with the number only, in digits."),
        ("- Say `positive` or `negative`, nothing else.", "Say positive or negative, nothing else."),
        (
            "Classify the review by its sentiment.\n\nThis change makes the step clearer and shorter.",
            "Classify the review by its sentiment.",
        ),
        ("\u201cKeep the answer to one word.\u201d", "Keep the answer to one word."),
        ("Sure! Here are the improved instructions:\n\n> Decide whether the review praises.", None),
    ],
)
def test_an_instruction_is_the_instruction_text_only(reply: str, expected: str | None) -> None:
    parsed = parse(reply, request=REQUEST, current="", raced=[])
    if expected is None:
        assert parsed.reason is None and parsed.text.endswith("Decide whether the review praises.")
    else:
        assert (parsed.text, parsed.reason) == (expected, None)


@pytest.mark.parametrize(
    ("reply", "current", "raced", "reason"),
    [
        ("", "", [], "empty"),
        ("Here's the revised instructions:", "", [], "meta-text, not an instruction"),
        ("Sure, I'll rewrite them for you:", "", [], "meta-text, not an instruction"),
        ("ok", "", [], "too short to be an instruction"),
        ("Use {{ review }} to decide.", "", [], "template syntax"),
        ("Answer with the label only.", "Answer with the label only!", [], "the current instructions again"),
        ("Write better instructions for this step, so that it gets such inputs right.", "", [], "restates the request"),
        ("Answer with positive or negative, only.", "", ["Answer with positive or negative only"], "near-duplicate"),
    ],
)
def test_unusable_proposals_are_dropped_with_the_reason(
    reply: str, current: str, raced: list[str], reason: str
) -> None:
    parsed = parse(reply, request=REQUEST, current=current, raced=raced)
    assert parsed.reason is not None and parsed.reason.startswith(reason)


NODE = TunableNode("answer", "llm.generate", {"prompt": "Text: {{ review }}\nLabel:"}, "default", {})


async def test_a_scripted_proposer_with_preambles_duplicates_and_empty_text() -> None:
    replies = iter(
        [
            "Here's the revised instructions:\nAnswer with positive or negative only.",
            "Here are the new instructions: Answer with positive or negative only!",  # the same again
            "",
            "Certainly! I will improve them.",
            "Reply with one word: positive or negative.",
        ]
    )

    async def ask(request: str) -> str | None:
        return next(replies)

    rewrites, dropped = await proposed(NODE, {"instructions": ""}, [], ask, 5)
    assert [r.config["instructions"] for r in rewrites] == [
        "Answer with positive or negative only.",
        "Reply with one word: positive or negative.",
    ]
    assert [d.reason for d in dropped] == [
        "near-duplicate of one already raced",
        "empty",
        "meta-text, not an instruction",
    ]


async def test_proposals_already_raced_in_an_earlier_round_are_dropped() -> None:
    async def ask(request: str) -> str | None:
        return "Answer with positive or negative only."

    rewrites, dropped = await proposed(NODE, {}, [], ask, 1, raced=["Answer with positive or negative only."])
    assert rewrites == [] and dropped[0].reason == "near-duplicate of one already raced"


PROPOSER_RULES = r"""      - {match: "You improve the instructions", reply: "To improve the instructions, I'll rephrase them.\n\nHere's the revised instructions:\n\"Answer with positive or negative only.\"\n\nThis keeps the step short."}
      - {match: "(?s)positive or negative only.*\\bgood\\b[^\\n]*\\nLabel:$", reply: positive}
      - {match: "(?s)positive or negative only.*\\bbad\\b[^\\n]*\\nLabel:$", reply: negative}
      - {reply: unsure}"""
"""Right only under the proposer's instruction; the proposer wraps it in a preamble, quotes and commentary."""


async def test_the_search_races_the_parsed_instruction_and_reports_what_it_dropped(make_task: MakeTask) -> None:
    task = make_task(PROPOSER_RULES)
    result, optimization = await optimize(task, 200)
    report = result.report
    assert report["after"]["dev"] == 1.0
    written = load_flow(report["flow_out"]).spec.nodes["answer"].config
    assert written["instructions"] == "Answer with positive or negative only."  # no preamble, quotes or commentary
    reasons = {row["reason"] for row in report["dropped_proposals"]}
    assert "near-duplicate of one already raced" in reasons  # the second proposal of the round
    accepted = report["accepted"]
    assert accepted and all(row["confidence"] > 0.9 for row in accepted)
    search = optimization.search
    assert search is not None
    raced = [c for c in search.candidates if c.kind == "instructions" and "proposed" in c.move]
    assert len(raced) == 1  # the duplicates never raced
    markdown = (task.folder / "flow.optimized.report.md").read_text()
    assert "## Dropped proposals" in markdown and "## Accepted changes" in markdown


def _trace(index: int, text: Any, label: str, score: float = 1.0, cut: frozenset[str] = frozenset()) -> Trace:
    steps = {
        "extract": StepRecord("extract", "succeeded", inputs={"message": f"m{index}"}, outputs={"text": text}),
        "classify": StepRecord("classify", "succeeded", inputs={"text": text}, outputs={"label": label}),
    }
    return Trace(
        Example(index, index + 1, {"label": label}, {"message": f"m{index}"}, {"label": label}),
        score,
        {"label": label},
        None,
        steps,
        cut,
    )


CLASSIFY = TunableNode(
    "classify", "llm.classify", {"labels": ["weather", "set_temperature"]}, "default", {"text": Ref("extract", "text")}
)


def test_bootstrapped_demos_show_no_empty_or_cut_off_field() -> None:
    traces = [
        _trace(0, "what is the forecast", "weather"),
        _trace(1, "", "weather"),  # the intermediate text is empty
        _trace(2, "   ", "weather"),
        _trace(
            3, "Good morning! So, set the thermostat to 18 degrees. I'm", "set_temperature", cut=frozenset({"extract"})
        ),
        _trace(4, "set the heating to 20", "set_temperature"),
        _trace(5, "turn it up", "set_temperature", cut=frozenset({"classify"})),
    ]
    demos = demo_pools.bootstrapped(CLASSIFY, traces)
    assert demos == [
        {"text": "what is the forecast", "label": "weather"},
        {"text": "set the heating to 20", "label": "set_temperature"},
    ]


def test_a_call_that_used_its_whole_token_cap_marks_its_node_truncated() -> None:
    def call(node: str, out: int, cap: int) -> CallRecord:
        return CallRecord(node, "scripted", {"max_tokens": cap}, "x", output_tokens=out)

    assert demo_pools.truncated([call("extract", 16, 16), call("classify", 1, 16), call("reply", 3, 64)]) == {"extract"}


def test_labelled_demos_with_an_empty_field_are_dropped() -> None:
    assert demo_pools.well_formed({"review": "good film", "text": "positive"})
    assert not demo_pools.well_formed({"review": "good film", "text": ""})
    assert not demo_pools.well_formed({"review": None, "text": "positive"})
    assert not demo_pools.well_formed({"review": [], "text": "positive"})


def test_a_paired_comparison_counts_wins_losses_and_confidence() -> None:
    one = compare({0: 1.0, 1: 1.0, 2: 0.0}, {0: 0.0, 1: 1.0, 2: 0.0}, [0, 1, 2])
    assert (one.wins, one.losses, one.ties, one.margin) == (1, 0, 2, 1.0)
    assert not one.resolved_win and one.at_least_tie  # one example's worth is a tie
    many = compare(dict.fromkeys(range(8), 1.0), dict.fromkeys(range(8), 0.0), list(range(8)))
    assert many.resolved_win and many.confidence == pytest.approx(1 - 1 / 256)


def test_a_one_example_loss_on_a_rung_is_a_tie_too_and_goes_on() -> None:
    subset = list(range(8))
    best = Candidate("c0", {}, "the flow as given", scores={i: float(i < 7) for i in subset})  # 7 of 8
    lost_one = Candidate("c1", {}, "one example worse", scores={i: float(i < 6) for i in subset})
    lost_two = Candidate("c2", {}, "two examples worse", scores={i: float(i < 5) for i in subset})
    assert compare(lost_one.scores, best.scores, subset).holds
    assert not compare(lost_two.scores, best.scores, subset).holds
    assert going_on([lost_one, lost_two], best, subset, eta=3) == [lost_one]
    assert going_on([lost_two], best, subset, eta=3) == []  # a clear loss is still dropped at once


def test_ties_on_score_are_not_decided_by_a_prompts_one_time_calibration_calls() -> None:
    """A candidate that changes a classify prompt asks that prompt's calibration during its first
    example: its mean calls per example are higher, but a typical example costs the same."""
    subset = list(range(8))
    scores = dict.fromkeys(subset, 1.0)
    recalibrated = Candidate("c1", {}, "joint demos", scores=dict(scores), calls={0: 5} | dict.fromkeys(subset[1:], 2))
    same_prompt = Candidate("c2", {}, "searched demos", scores=dict(scores), calls=dict.fromkeys(subset, 2))
    dearer = Candidate("c3", {}, "an ensemble", scores=dict(scores), calls=dict.fromkeys(subset, 4))
    assert recalibrated.calls_per_example > same_prompt.calls_per_example
    assert recalibrated.typical_calls == same_prompt.typical_calls == 2
    assert ranking([dearer, recalibrated, same_prompt], subset) == [recalibrated, same_prompt, dearer]


async def test_a_one_example_win_on_dev_is_a_tie_decided_on_held_out_train(make_task: MakeTask) -> None:
    task = make_task(HALF_RULES)
    dev = [r for r in rows(16, 1) if r["label"] == "positive"][:7] + [
        r for r in rows(16, 1) if r["label"] == "negative"
    ][:1]
    write_jsonl(task.dev, dev)  # zero-shot gets 7 of 8; a demo fixes the one negative review
    result, _ = await optimize(task, 300, proposer="none")
    report = result.report
    assert report["before"]["dev"] == 0.875 and report["after"]["dev"] == 1.0
    first = report["accepted"][0]
    assert first["decided_on"] == "held-out train"  # not on dev, where it won by one example
    assert first["versus"] == "c0"


ZEBRA_RULES = r"""      - {match: "(?s)Label: \\w+\\n.*\\bzebra\\b[^\\n]*\\nLabel:$", reply: positive}
      - {reply: unsure}"""
"""Right only about the one dev review that mentions a zebra, and only with a demo in the prompt."""


async def test_a_one_example_dev_lead_that_ties_on_held_out_train_is_not_the_written_flow(
    make_task: MakeTask,
) -> None:
    task = make_task(ZEBRA_RULES)
    write_jsonl(task.dev, [*rows(8, 1), {"text": "the zebra 1 was good", "label": "positive"}])
    result, _ = await optimize(task, 300, proposer="none")
    report = result.report
    leads = [c for c in report["candidates"] if c["examples"] == 9 and c["score"] > report["before"]["dev"]]
    assert leads, "some candidate leads on dev by the zebra review"
    assert report["after"]["candidate"] == "c0"  # a one-example lead is a tie; held-out train ties too
    assert load_flow(report["flow_out"]).spec.nodes["answer"].config.get("demos") is None


async def test_a_one_example_dev_lead_with_no_budget_left_for_a_tie_break_is_not_the_written_flow(
    make_task: MakeTask,
) -> None:
    task = make_task(ZEBRA_RULES)
    write_jsonl(task.dev, [*rows(8, 1), {"text": "the zebra 1 was good", "label": "positive"}])
    events: list[str] = []
    optimization = Optimization(
        prepare(options(task, 24, proposer="none")), MemoryStore(), progress=lambda **kw: events.append(kw["event"])
    )
    report = (await optimization.run()).report
    leads = [c for c in report["candidates"] if c["examples"] == 9 and c["score"] > report["before"]["dev"]]
    assert leads, "some candidate leads on dev by the zebra review"
    assert "tie" not in events and "budget" in report["stopped"]  # the tie could not be broken
    assert report["after"]["candidate"] == "c0"  # so the input flow stays
    assert not report["accepted"]
