"""`llm.classify`: pick one label from a fixed set, reliably even on a tiny model.

Where the model gives log-probabilities (the embedded `local/smollm2` does), the label is not
read from generated text: each label's share of the first answer token's probability, divided
by the same prompt's for content-free texts (calibration, `nodes.calibration`), picks the label
and is its `confidence`. Elsewhere the reply's nearest label is taken and `confidence` is None.
Calls whose reply is only measured (priors, votes, a scored reply) are probes (`purpose="probe"`),
never streamed. Prompt, calls and votes: `nodes.labelling`; the cascade: `nodes.classify_cascade`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from nodes import classify_cascade, strategies
from nodes.calibration import CONTENT_FREE, PRIORS, label_mass, labels_begun_by
from nodes.labelling import Choice, Labeller, nearest_label
from nodes.prompting import Form
from nodes.strategies import Prompt, Strategy
from studio.node import Node, NodeContext, Role, Tunable

__all__ = ["CONTENT_FREE", "PRIORS", "Classify", "label_mass", "labels_begun_by", "nearest_label"]
FINAL_REQUEST = "Now answer with the label only."
FINAL_CUE = "Therefore, the label is:"
NEEDS = "scores labels by logprobs or a constrained answer; without either it reads the label from free text and confidence is null"


class Classify(Node):
    """Pick one label from a fixed set."""

    uses_model = True
    tunable = Tunable(
        fields=("instructions", "demos", "form", "strategy", "samples", "list_labels", "teacher", "agree"),
        output="label",
        labels=True,
        default_form="completion",
        logprobs=("local/",),
    )
    starter = {"labels": ["yes", "no"]}
    roles: ClassVar[frozenset[Role]] = frozenset({"classify"})

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        labels: list[str] = Field(min_length=2)
        """The allowed answers."""
        instructions: str = ""
        """What the model is told before the input."""
        demos: list[dict[str, str]] = []
        """Labelled examples: `text` and its `label`."""
        form: Form = "completion"
        """`completion` (best on small models) or `chat`."""
        list_labels: bool | None = None
        """Name the labels after the instructions; by default only when the prompt shows them no
        other way (chat form, or demos that leave a label out). Naming them biases a tiny model."""
        calibrate: bool = True
        """Where the model gives logprobs, divide each label's probability by the one the same prompt
        gives content-free texts (asked once per compiled node); corrects a bias toward one label."""
        strategy: Strategy = "single"
        """`single` call; `reasoning` (think, then label); `ensemble` (`samples` votes, each with the
        demos in another order); `reflect` (draft label, critique, final label); `cascade` (the
        student's label stands when its samples agree and it is confident enough, else the `teacher`
        alias labels, and its label is kept as a demo)."""
        samples: int = Field(default=3, ge=1, le=15)
        """How many votes an `ensemble` takes (a `cascade`: student samples)."""
        teacher: str = ""
        """`cascade`: the teacher's model alias (the node's own model is the student)."""
        agree: int = Field(default=2, ge=1, le=15)
        """`cascade`: how many student samples must give the same label for it to stand."""
        recall: int = Field(default=4, ge=0, le=20)
        """`cascade`: how many of the teacher's past labels (nearest texts) the student gets as demos."""
        threshold: float = Field(default=0.0, ge=0.0, le=1.0)
        """`cascade`: the lowest confidence (the label's share, on models that score labels) at which
        the student's label stands; below it the teacher labels."""

    class Inputs(BaseModel):
        text: str
        """The text to classify."""

    class Outputs(BaseModel):
        label: str
        """One of the configured labels."""
        confidence: float | None = None
        """The chosen label's share of the label probability (0-1); None when the label was read
        from the reply text because the model gave no logprobs."""
        method: str = "text"
        """How the label was chosen: `logprobs` (scored), `constrained` (an answer the provider
        constrained to the labels, for models without logprobs) or `text` (the reply's nearest label)."""

    config: Config

    def model_calls(self) -> float:
        return strategies.calls(self.config.strategy, self.config.samples)

    def setup_calls(self, model: str) -> int:
        """The content-free calibration calls, once per prompt variant, on models that give logprobs."""
        if not (self.config.calibrate and self.tunable and model.startswith(self.tunable.logprobs)):
            return 0
        ensemble = self.config.strategy == "ensemble" and len(self.config.demos) > 1
        return len(CONTENT_FREE) * (self.config.samples if ensemble else 1)

    def model_needs(self) -> list[tuple[tuple[str, ...], str]]:
        """Logprobs or a constrained answer; without either the label is read from free text."""
        return [(("logprobs", "constrained"), NEEDS)]

    def check(self) -> list[tuple[str, str]]:
        problems = strategies.check_cascade(self.config.strategy, self.config.teacher)
        if len(set(self.config.labels)) != len(self.config.labels):
            problems.append(("labels", "labels must be distinct"))
        for i, demo in enumerate(self.config.demos):
            if demo.get("label") not in self.config.labels:
                problems.append((f"demos.{i}.label", f"demo label {demo.get('label')!r} is not one of the labels"))
        return problems

    def model_aliases(self) -> list[tuple[str, str]]:
        return [("teacher", self.config.teacher)] if self.config.strategy == "cascade" else []

    @property
    def labeller(self) -> Labeller:
        """How this node asks for a label (`nodes.labelling`)."""
        return Labeller(self.config)

    def preamble(self) -> str:
        """Instructions, then the label list where `list_labels` says so."""
        return self.labeller.preamble()

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        labeller = self.labeller
        if self.config.strategy == "ensemble":
            return self._outputs(await labeller.vote(inputs.text, ctx))
        if self.config.strategy == "cascade":
            return self._outputs(await classify_cascade.cascade(self.config, inputs.text, ctx))

        async def ask(prompt: Prompt, **options: Any) -> str:
            return (await labeller.complete(prompt, ctx, **options)).text

        prompt = await strategies.deliberate(
            self.config.strategy, labeller.prompt(inputs.text), ask, FINAL_REQUEST, FINAL_CUE
        )
        return self._outputs(await labeller.choose(prompt, ctx))

    def cascade_query(self, values: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """What a cascade's memory keeps a label under: the text, and the `text` input."""
        return classify_cascade.question(values)

    def _outputs(self, choice: Choice) -> Outputs:
        return self.Outputs(label=choice.label, confidence=choice.confidence, method=choice.method)
