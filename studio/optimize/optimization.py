"""An optimization run: the search within the budget, then the optimized flow and the report.

The best flow so far is written to `--out` whenever it changes, so a stopped search leaves its
best result behind; running the same command again replays every call it already made from the
LLM cache (free, and not counted). Every run it makes is in the store under its experiment.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from studio.errors import InputError
from studio.evaluate.live import tagged
from studio.evaluate.metrics import resolve_metric
from studio.flow.spec import Flow, load_flow, load_flow_text
from studio.optimize import pareto, report
from studio.optimize.candidates import Candidate, sets
from studio.optimize.evaluator import BudgetSpent, Evaluator, NothingSucceeds
from studio.optimize.meter import Meter, metering
from studio.optimize.options import Prepared
from studio.optimize.search import Progress, Search
from studio.reviews.dataset import reviewed
from studio.runtime import registry
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.engine import Engine, RunOptions
from studio.store.base import ExperimentRecord, Store, new_id

KIND = "optimize"
PROPOSER_TOKENS = 120


@dataclass
class OptimizeResult:
    experiment_id: str
    report: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        """The object `flowstudio optimize --json` prints."""
        r = self.report
        return {
            "experiment_id": r["experiment_id"],
            "flow_out": r["flow_out"],
            "calls": r["calls"],
            "tokens": r["tokens"],
            "cost_usd": r["cost_usd"],
            "reviewed_examples": r["reviewed_examples"],
            "before": {"dev": r["before"]["dev"], "test": r["before"]["test"]},
            "after": {"dev": r["after"]["dev"], "test": r["after"]["test"]},
            "pareto": [{k: p[k] for k in ("score", "cost_per_example", "candidate")} for p in r["pareto"]],
        }


def proposer_plan(flow: Flow, alias: str, models: dict[str, str]) -> Plan:
    """A one-node flow that sends a request to the proposer alias and returns its text."""
    settings = {k: v for k, v in flow.document.data["models"][alias].items() if k != "fallbacks"}
    data = {
        "flowstudio": 1,
        "name": "optimizer-proposer",
        "inputs": {"request": {"type": "str"}},
        "outputs": {"instructions": "$propose.text"},
        "models": {"default": settings},
        "nodes": {
            "propose": {
                "type": registry.with_role("completion"),
                "inputs": {"request": "$inputs.request"},
                "config": {"prompt": "{{ request }}", "max_tokens": PROPOSER_TOKENS},
            }
        },
    }
    overrides = {"default": models[alias]} if alias in models else {}
    return compile_flow(load_flow_text(json.dumps(data), file=f"<proposer {alias}>", path=flow.path), overrides)


def _write(path: Path, text: str) -> None:
    """Replace the file in one step, so an interrupted search never leaves half a flow."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


class Optimization:
    """One run of the optimizer over a prepared input, recorded as an experiment."""

    def __init__(self, prepared: Prepared, store: Store, progress: Progress | None = None) -> None:
        self.prepared = prepared
        self.store = store
        self.progress = progress
        self.options = prepared.options
        self.experiment_id = new_id()
        self.meter = Meter(self.options.budget_calls, self.options.budget_usd)
        self.search: Search | None = None
        """The search, once `run` has started it (tests and the studio read its candidates)."""

    def config(self) -> dict[str, Any]:
        p = self.prepared
        return {
            **asdict(self.options),
            "flow_hash": p.flow.hash,
            "flow_out": str(p.out),
            "proposer": p.proposer,
            "datasets": {
                name: {"path": str(d.path), "sha256": d.sha256, "examples": len(d.examples)}
                for name, d in (("train", p.train), ("dev", p.dev), ("test", p.test))
                if d is not None
            },
        }

    async def run(self) -> OptimizeResult:
        p = self.prepared
        record = ExperimentRecord(self.experiment_id, KIND, p.flow.spec.name, config=self.config())
        self.store.create_experiment(record)
        with metering(self.meter):
            metric = resolve_metric(
                self.options.metric,
                expect=p.dev.expect,
                plan=p.plan,
                judge=self.options.judge,
                rubric=self.options.rubric,
            )
            evaluator = Evaluator(
                self.store,
                metric,
                self.meter,
                experiment_id=self.experiment_id,
                models=self.options.models,
                concurrency=self.options.concurrency,
            )
            search = self.search = Search(
                flow=p.flow,
                plan=p.plan,
                train=p.train,
                dev=p.dev,
                evaluator=evaluator,
                meter=self.meter,
                models=self.options.models,
                settings=self.options.settings(),
                propose=self._ask if p.proposer else None,
                proposer_alias=p.proposer,
                progress=self.progress,
                on_best=self._keep,
            )
            try:
                await search.run()
            except BudgetSpent:
                raise InputError(
                    f"--budget-calls {self.options.budget_calls} ran out before the flow was evaluated on the dev set",
                    field="--budget-calls",
                ) from None
            except NothingSucceeds:
                self._summary("failed", search.best)
                raise
            except (asyncio.CancelledError, KeyboardInterrupt):
                self._summary("interrupted", search.best)
                raise
        chosen = self._choose(search)
        _write(p.out, chosen.text)
        compile_flow(load_flow(p.out), self.options.models)  # the written flow must load and compile
        with metering(Meter()) as report_meter:
            before_test, after_test = await self._test(evaluator, search.candidates[0], chosen)
        result = self._report(search, chosen, before_test, after_test, report_meter)
        self.store.finish_experiment(
            self.experiment_id, tagged({**result, "status": "finished", "scores": self._scores(search)})
        )
        return OptimizeResult(self.experiment_id, result)

    async def _ask(self, request: str) -> str | None:
        p = self.prepared
        if self.meter.spent or p.proposer is None:
            return None
        plan = proposer_plan(p.flow, p.proposer, self.options.models)
        options = RunOptions(cache=True, models=dict(self.options.models))
        result = await Engine(self.store).run(
            plan, {"request": request}, options=options, experiment_id=self.experiment_id
        )
        if result.status != "succeeded" or not result.outputs:
            return None
        text = result.outputs.get("instructions")
        return text if isinstance(text, str) else None

    def _keep(self, candidate: Candidate) -> None:
        """The best so far goes to --out at once, so a stopped search keeps it."""
        _write(self.prepared.out, candidate.text)
        self._summary("running", candidate)

    def _summary(self, status: str, best: Candidate) -> None:
        summary = {
            "status": status,
            "flow_out": str(self.prepared.out),
            "best": best.id,
            "best_dev": round(best.score, 6) if best.scores else None,
            "calls": self.meter.calls,
            "tokens": self.meter.tokens,
            "cost_usd": round(self.meter.cost_usd, 10),
        }
        stored = self.store.get_experiment(self.experiment_id) if status == "running" else None
        live = (stored.summary or {}) if stored is not None else {}  # keep the progress fields written meanwhile
        self.store.finish_experiment(self.experiment_id, tagged({**live, **summary}))

    def _choose(self, search: Search) -> Candidate:
        """The search's best where it is fully evaluated and within the cost limit: it is the one
        that won by more than the margin rule's one example (a smaller dev lead is a tie, decided on
        held-out train examples), so a higher dev score by one example never overrides it. Else the
        best dev score among fully evaluated candidates within the limit, else the cheapest."""
        full = [c for c in search.candidates if c.examples == len(self.prepared.dev.examples)]
        limit = self.options.max_cost_per_example
        within = [c for c in full if limit is None or c.cost_per_example <= limit]
        if not within:
            return min(full, key=lambda c: c.cost_per_example)
        if search.best in within:
            return search.best
        return min(within, key=lambda c: (-c.score, *c.thrift, c.id != "c0"))

    async def _test(
        self, evaluator: Evaluator, before: Candidate, after: Candidate
    ) -> tuple[float | None, float | None]:
        test = self.prepared.test
        if test is None:
            return None, None
        scores: dict[str, float] = {}
        for candidate in (before, after):
            if candidate.id not in scores:
                assert candidate.plan is not None
                if self.progress is not None:
                    message = f"scoring {candidate.id} on the test set"
                    self.progress(event="test", message=message, best=None, calls=self.meter.calls)
                done = await evaluator.run(candidate.plan, test.examples)
                scores[candidate.id] = sum(d.score for d in done) / len(done)
        return scores[before.id], scores[after.id]

    def _report(
        self, search: Search, chosen: Candidate, before_test: float | None, after_test: float | None, spent: Meter
    ) -> dict[str, Any]:
        p = self.prepared
        baseline = search.candidates[0]
        by_id = {c.id: c for c in search.candidates}
        full = [c for c in search.candidates if c.examples == len(p.dev.examples)]
        points = [pareto.Point.of(c) for c in full]
        edge = pareto.front(points)
        stem = str(p.out.with_suffix(""))
        plots = pareto.write_plots(points, chosen.id, f"{p.flow.spec.name}: dev score vs cost", f"{stem}.pareto")

        def side(candidate: Candidate, test: float | None) -> dict[str, Any]:
            return {
                "candidate": candidate.id,
                "move": candidate.described,
                "dev": round(candidate.score, 6),
                "test": None if test is None else round(test, 6),
                "cost_per_example": round(candidate.cost_per_example, 10),
                "tokens_per_example": round(candidate.tokens_per_example, 3),
                "calls_per_example": round(candidate.calls_per_example, 3),
            }

        result: dict[str, Any] = {
            "experiment_id": self.experiment_id,
            "flow": str(p.flow.path or p.flow.file),
            "flow_out": str(p.out),
            "metric": self.options.metric,
            "seed": self.options.seed,
            "budget": {"calls": self.options.budget_calls, "usd": self.options.budget_usd},
            "stopped": search.stopped,
            "dev_examples": len(p.dev.examples),
            "reviewed_examples": {
                name: reviewed(e.row for e in d.examples) for name, d in (("train", p.train), ("dev", p.dev))
            },
            "notes": list(p.notes),
            "calls": self.meter.calls,
            "tokens": self.meter.tokens,
            "cost_usd": round(self.meter.cost_usd, 10),
            "report_calls": spent.calls,
            "report_tokens": spent.tokens,
            "report_cost_usd": round(spent.cost_usd, 10),
            "before": side(baseline, before_test),
            "after": side(chosen, after_test),
            "pareto": [
                {
                    **point.as_json(),
                    "tokens_per_example": round(point.tokens_per_example, 3),
                    "calls_per_example": round(point.calls_per_example, 3),
                }
                for point in edge
            ],
            "candidates": [
                {**c.row(), "sets": sets(c, by_id.get(c.parent or ""))} for c in search.candidates if c.scores
            ],
            "accepted": [
                {"candidate": c.id, "move": c.move, "node": search.touched.get(c.id), **c.accepted}
                for c in search.candidates
                if c.accepted
            ],
            "blamed": dict(search.blamed),
            "dropped_proposals": [d.as_json() for d in search.dropped],
            "plots": [str(path) for path in plots],
            "diff": report.diff(p.flow.text, chosen.text, str(p.flow.path or p.flow.file), str(p.out)),
        }
        result["reports"] = [str(path) for path in report.write(result, f"{stem}.report")]
        return result

    def _scores(self, search: Search) -> dict[str, float]:
        """Run id → score of every dev run, for the studio's experiment page."""
        return {run: c.scores[i] for c in search.candidates for i, run in c.runs.items()}


async def optimize(prepared: Prepared, store: Store, *, progress: Progress | None = None) -> OptimizeResult:
    """Run a prepared optimization to the end; see the module docstring."""
    return await Optimization(prepared, store, progress).run()
