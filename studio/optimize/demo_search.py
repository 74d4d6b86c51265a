"""Searched demos: answers for an inner node, found by re-running a failing train run downstream.

An inner LLM node (one whose answer is not a flow output) has no labelled demos, and a tiny
model that is wrong zero-shot leaves no good run to bootstrap from. But the final label of a
failing train run says which answers of that node would have made the run right: replace the
node's stored output with a candidate value, re-run the nodes downstream of it from the stored
run (upstream reused, the LLM cache shared: `studio.evaluate.blame`'s counterfactual machinery)
and score the final outputs. A value that makes the metric right becomes a demo of the node:
its stored inputs and that value, beside the bootstrapped and labelled ones. The right re-run is a
whole trace that scored, so it gives the tunable nodes downstream demos too (DSPy's bootstrap
rule, applied to the counterfactual trace).

Candidate values are cheap: the node's current output, and spans of its own text inputs (quoted
passages, numbers, clauses, sentences; never a whole input, which would make the node a no-op). Downstream nodes that call no model
(templates, tools) make the re-runs free; every model call they do make is counted by the
optimizer's meter, and the search stops at its share of the budget. Sibling nodes that feed the
same output (none downstream of another) are searched jointly, over the product of their
candidate sets (capped).

A control comes first: the run re-run with the group's outputs empty. When that is right too (a
two-label classifier that says `positive` to anything, on an example labelled positive), a right
value would prove nothing, and the run gives no demo.

Order and tie-break: assignments are tried closest first to what the nodes wrote (word overlap
with their current outputs: the smallest correction of the model's own attempt), then fewest
words. Where the re-runs call a model, the first right one (with those ranked equal) ends the
search of the run, and at most `MAX_TRIES` such re-runs are made, since further down the ranking a
value is mostly right by chance. Where they are free, every assignment is tried: closeness to a
wrong attempt is no evidence of which sibling plays which role (an extractor asked for the
quantity that wrote the price). Of the right ones, those with the fewest words are kept (a demo
shows no more than the answer needs). Assignments still tied are alternatives the metric cannot tell apart (e.g. two
factors of a product); they are kept in input order (earliest span first, nodes in flow order),
and the search races a pool resolved each way (`alternative`), so dev decides between them
rather than a rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from studio.evaluate.blame import Score, Scratch, top_node
from studio.evaluate.datasets import Example
from studio.optimize.candidates import TunableNode
from studio.optimize.demos import as_demo, expressible, well_formed
from studio.optimize.meter import Meter
from studio.runtime.compiler import Plan
from studio.runtime.engine import Engine, RunOptions
from studio.store.base import StepRecord, Store

MAX_VALUES = 10
"""Candidate values per node and run."""
MAX_ASSIGNMENTS = 40
"""Joint assignments tried per group and run (the product of the nodes' candidates is cut to this)."""
MAX_TRIES = 3
"""Re-runs that call a model tried per group and run: fishing further down the ranking mostly finds
values right by chance (a two-label classifier is right half the time whatever it reads)."""
NULL = ""
"""The control value: a run the downstream gets right with the group's outputs empty is no evidence."""
MAX_WORDS = 60
"""Longer spans are not offered (a demo is an answer, not a document)."""
WORD = re.compile(r"\w+")
QUOTED = re.compile(r"\"([^\"]+)\"|\u201c([^\u201d]+)\u201d")
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
SENTENCE = re.compile(r"(?<=[.!?])\s+")
CLAUSE = re.compile(r"\s*[,;:()]\s*|\s+-\s+")


@dataclass
class Found:
    """One failing train run a searched assignment makes right."""

    example: Example
    choices: list[dict[str, dict[str, Any]]]
    """Alternatives the tie-break could not separate, in input order; each: node id → demo (the
    group's nodes, and the tunable nodes downstream as they ran in the right re-run)."""


@dataclass
class Searched:
    """What the search found per group of sibling nodes, and what it cost."""

    groups: list[tuple[str, ...]]
    found: dict[tuple[str, ...], list[Found]] = field(default_factory=dict)
    runs: int = 0
    """Failing runs searched."""
    reruns: int = 0
    """Downstream re-runs made."""
    uninformative: int = 0
    """Runs skipped because the downstream got them right with the group's outputs empty."""
    calls: int = 0
    """Model calls those re-runs made (cache hits not counted)."""

    def pool(self, group: tuple[str, ...], alternative: int = 0) -> list[dict[str, dict[str, Any]]]:
        """The group's demos per example (node id → demo), ambiguous ones resolved by `alternative`
        (0: the first in input order, -1: the last)."""
        return [f.choices[alternative] for f in self.found.get(group, [])]

    def ambiguous(self, group: tuple[str, ...]) -> bool:
        """Whether some example's right answer could not be told apart from another."""
        return any(len(f.choices) > 1 for f in self.found.get(group, []))


def searchable(node: TunableNode, labelled: list[dict[str, Any]]) -> bool:
    """Whether the node's answer is free text with no labelled demos: the nodes searched demos are for."""
    return not node.surface.labels and expressible(node) and not labelled


def groups(plan: Plan, nodes: list[str]) -> list[tuple[str, ...]]:
    """The nodes in sibling groups: none in a group is downstream of another (plan order)."""
    ordered = [n for n in plan.order if n in nodes]
    found: list[list[str]] = []
    for node in ordered:
        for group in found:
            if not any(node in plan.downstream(other) or other in plan.downstream(node) for other in group):
                group.append(node)
                break
        else:
            found.append([node])
    return [tuple(group) for group in found]


def spans(text: str) -> list[str]:
    """Candidate answers taken from one input text: quoted passages, numbers, clauses, sentences,
    the whole text; stripped, deduplicated, in that order."""
    found = [a or b for a, b in QUOTED.findall(text)]
    found += NUMBER.findall(text)
    found += [part for sentence in SENTENCE.split(text) for part in CLAUSE.split(sentence)]
    found += SENTENCE.split(text)
    found.append(text)
    seen: dict[str, None] = {}
    for value in found:
        value = value.strip()
        if value and len(WORD.findall(value)) <= MAX_WORDS:
            seen.setdefault(value, None)
    return list(seen)


def values(step: StepRecord, port: str) -> list[str]:
    """Candidate answers of a node in one run: its current output, then spans of its text inputs,
    never a whole input (a node that only passes its input on teaches nothing: removing it is
    the topology move's business)."""
    current = str((step.outputs or {}).get(port) or "").strip()
    found = [current] if current else []
    whole = {value.strip() for value in (step.inputs or {}).values() if isinstance(value, str)}
    for value in (step.inputs or {}).values():
        if isinstance(value, str):
            found += [span for span in spans(value) if span not in found and span not in whole]
    return found[:MAX_VALUES]


def overlap(value: str, current: str) -> float:
    """Word overlap (Jaccard, case-insensitive) of a candidate with the node's current output."""
    a, b = set(WORD.findall(value.lower())), set(WORD.findall(current.lower()))
    return len(a & b) / len(a | b) if a | b else 0.0


def _capped(options: list[list[str]]) -> Iterator[tuple[str, ...]]:
    """The product of the nodes' candidates, each list cut so the product stays within the cap."""
    lists = [list(o) for o in options]
    while len(lists) > 1 and _size(lists) > MAX_ASSIGNMENTS:
        longest = max(lists, key=len)
        longest.pop()
    if len(lists) == 1:
        lists[0] = lists[0][:MAX_ASSIGNMENTS]
    return product(*lists)


def _size(lists: list[list[str]]) -> int:
    size = 1
    for values_ in lists:
        size *= len(values_)
    return size


class DemoSearch:
    """Searches failing train runs for answers of inner nodes that make the final output right."""

    def __init__(
        self,
        store: Store,
        plan: Plan,
        nodes: dict[str, TunableNode],
        meter: Meter,
        share: int,
        downstream: dict[str, TunableNode] | None = None,
    ) -> None:
        self.store, self.plan, self.nodes, self.meter = store, plan, nodes, meter
        self.downstream = downstream or {}
        """Other tunable nodes whose demos a right re-run also gives (their inputs and answers in it)."""
        self.share = share
        """Model calls the search may spend at most."""
        self.start = meter.calls
        self.result = Searched(groups(plan, list(nodes)))

    @property
    def spent(self) -> bool:
        return self.meter.spent or self.meter.calls - self.start >= self.share

    async def run(self, failing: list[tuple[Example, str]], score: Callable[[Example], Score]) -> Searched:
        """Search each failing run in turn until the share of the budget is spent."""
        for example, run_id in failing:
            if self.spent:
                break
            record = self.store.get_run(run_id)
            if record is None:
                continue
            steps = {s.node: s for s in self.store.steps(run_id)}
            self.result.runs += 1
            for group in self.result.groups:
                if self.spent:
                    break
                choices = await self._group(group, record.inputs, record.options, steps, score(example))
                if choices:
                    self.result.found.setdefault(group, []).append(Found(example, choices))
        self.result.calls = self.meter.calls - self.start
        return self.result

    async def _group(
        self,
        group: tuple[str, ...],
        inputs: dict[str, Any],
        options: dict[str, Any],
        steps: dict[str, StepRecord],
        score: Score,
    ) -> list[dict[str, dict[str, Any]]]:
        """The group's right assignments that the tie-break keeps, as demos; [] when none is right."""
        if any(n not in steps or steps[n].status != "succeeded" for n in group):
            return []
        ports = {n: self.nodes[n].port for n in group}
        current = {n: str((steps[n].outputs or {}).get(ports[n]) or "") for n in group}
        control = tuple(NULL for _ in group)
        if await self._right(group, control, inputs, options, steps, score) is not None:
            self.result.uninformative += 1
            return []  # right whatever the group says: a right value would prove nothing
        tried = list(_capped([values(steps[n], ports[n]) for n in group]))
        order = {a: i for i, a in enumerate(tried)}

        def rank(assignment: tuple[str, ...]) -> tuple[float, int]:
            closeness = sum(overlap(v, current[n]) for n, v in zip(group, assignment, strict=True))
            return -closeness, sum(len(WORD.findall(v)) for v in assignment)

        right: list[tuple[str, ...]] = []
        after: dict[tuple[str, ...], dict[str, dict[str, Any]]] = {}
        costly = 0
        for assignment in sorted(tried, key=lambda a: (rank(a), order[a])):
            if right and costly and rank(assignment) != rank(right[0]):
                break  # re-runs cost calls, and every assignment the tie-break prefers has been tried
            if self.spent or costly >= MAX_TRIES:
                break
            if all(v == current[n] for n, v in zip(group, assignment, strict=True)):
                continue  # the run as it was: wrong
            before = self.meter.calls
            found = await self._right(group, assignment, inputs, options, steps, score)
            if found is not None:
                right.append(assignment)
                after[assignment] = found
            costly += self.meter.calls > before
        fewest = min((rank(a)[1] for a in right), default=0)
        right = [a for a in right if rank(a)[1] == fewest]
        right.sort(key=lambda a: [_position(v, steps[n]) for n, v in zip(group, a, strict=True)])
        distinct: dict[tuple[tuple[str, ...], ...], tuple[str, ...]] = {}
        for assignment in right:
            distinct.setdefault(_words(assignment), assignment)  # `"x."` and `x.` are one answer
        right = list(distinct.values())
        demos = []
        for assignment in right:
            made = {
                n: as_demo(self.nodes[n], dict(steps[n].inputs or {}), v)
                for n, v in zip(group, assignment, strict=True)
            }
            if all(well_formed(d) for d in made.values()):
                demos.append({**made, **after[assignment]})
        return demos

    async def _right(
        self,
        group: tuple[str, ...],
        assignment: tuple[str, ...],
        inputs: dict[str, Any],
        options: dict[str, Any],
        steps: dict[str, StepRecord],
        score: Score,
    ) -> dict[str, dict[str, Any]] | None:
        """Re-run downstream of the group with its outputs replaced; None unless the final metric is 1,
        else the demos the re-run gives the tunable nodes downstream (node id → demo)."""
        again = set().union(*(self.plan.downstream(n) for n in group))
        finished = {
            path: step
            for path, step in steps.items()
            if step.status in ("succeeded", "skipped") and top_node(path) not in again
        }
        for node, value in zip(group, assignment, strict=True):
            step = steps[node]
            outputs = {**(step.outputs or {}), self.nodes[node].port: value}
            finished[node] = StepRecord(node, "succeeded", inputs=step.inputs, outputs=outputs)
        run_options = RunOptions.from_json(options)
        run_options.cache = True
        self.result.reruns += 1
        scratch = Scratch(self.store)
        result = await Engine(scratch).run(self.plan, inputs, options=run_options, finished=finished)
        if result.status != "succeeded" or await score(result.outputs or {}) < 1 - 1e-9:
            return None
        demos = {}
        for step in scratch.steps(result.run_id):
            tunable = self.downstream.get(step.node)
            if tunable is not None and step.node in again and step.status == "succeeded" and step.outputs:
                demo = as_demo(tunable, dict(step.inputs or {}), step.outputs.get(tunable.port, ""))
                if well_formed(demo):
                    demos[step.node] = demo
        return demos


def _words(assignment: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """An assignment's words, lowercased: spans that differ only in quotes or punctuation are one answer."""
    return tuple(tuple(WORD.findall(value.lower())) for value in assignment)


def _position(value: str, step: StepRecord) -> int:
    """Where a value first appears in the node's text inputs (large when it is in none)."""
    text = " ".join(v for v in (step.inputs or {}).values() if isinstance(v, str))
    found = text.find(value)
    return found if found >= 0 else len(text) + 1
