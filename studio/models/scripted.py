"""The `scripted` model: deterministic rules for tests, demos and fault drills.

Set FLOWSTUDIO_SCRIPTED_LEDGER to a file path and every call is appended to it as one JSON
line, a record kept outside the store (crash drills count calls with it).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from studio.errors import SpecError
from studio.flow.loader import load_file
from studio.flow.paths import PathRefused, confine, project_root
from studio.flow.spec import ModelSpec, ScriptRule
from studio.models.base import Completion, ModelError, Request, TokenSink
from studio.models.capabilities import Capabilities, scripted

LEDGER_ENV = "FLOWSTUDIO_SCRIPTED_LEDGER"
_USER_SCRIPTS: set[str] = set()
"""The `scripted/PATH` names the user gave as overrides (see `trust_user_models`): process-wide,
since a compiled plan is cached and reused outside the context that compiled it."""
_RULES = TypeAdapter(list[ScriptRule])


def count_tokens(text: str) -> int:
    """Scripted models count tokens by whitespace."""
    return len(text.split())


class ScriptedModel:
    """Answers by the first rule whose regex matches the rendered prompt."""

    def __init__(
        self,
        rules: list[ScriptRule],
        name: str = "scripted",
        input_cost_per_token: float = 0.0,
        output_cost_per_token: float = 0.0,
    ) -> None:
        self.name = name
        self.rules = rules
        self.input_cost = input_cost_per_token
        self.output_cost = output_cost_per_token
        self._failures: dict[int, int] = {}
        self._turns: dict[int, int] = {}
        self.cacheable = not any(rule.replies for rule in rules)
        """False when a rule answers in turn: a cached reply would hide the next turn."""
        self._patterns = [re.compile(r.match) if r.match else None for r in rules]

    @functools.cached_property
    def fingerprint(self) -> str:
        """What the LLM cache keys on besides the prompt: editing a script invalidates it (made
        once, on the first cached call: a model is built per run)."""
        rules_json = json.dumps([r.model_dump(mode="json") for r in self.rules], sort_keys=True)
        return f"{rules_json}|{self.input_cost}|{self.output_cost}"

    async def complete(self, request: Request) -> Completion:
        return (await self._answer(request))[0]

    async def _answer(self, request: Request) -> tuple[Completion, ScriptRule]:
        """The completion of the first rule that answers, and that rule."""
        text = request.text
        for index, rule in enumerate(self.rules):
            pattern = self._patterns[index]
            if pattern is not None and not pattern.search(text):
                continue
            if not _drawn(rule, request, index):
                continue
            if rule.delay_s:
                await asyncio.sleep(rule.delay_s)
            if rule.error is not None and self._should_fail(index, rule):
                _ledger(self.name, text, error=rule.error.kind)
                raise ModelError(rule.error.kind, f"scripted {rule.error.kind} error", rule.error.retry_after_s)
            reply = self._next_reply(index, rule)
            if reply is None and rule.tool_calls is None:
                continue
            _ledger(self.name, text, reply=reply or json.dumps(rule.tool_calls))
            completion = self._completion(text, reply or "")
            completion = replace(completion, tool_calls=_calls(rule.tool_calls)) if rule.tool_calls else completion
            return completion, rule
        raise ModelError("server", "scripted model: no rule matched the prompt")

    async def stream(self, request: Request, on_text: TokenSink) -> Completion:
        """The reply `complete` gives, handed to `on_text` word by word (each with its spacing), the
        rule's `word_delay_s` apart."""
        completion, rule = await self._answer(request)
        for number, piece in enumerate(words(completion.text)):
            await asyncio.sleep(rule.word_delay_s if number else 0)
            on_text(piece)
        return completion

    def supports_tools(self) -> bool:
        """Whether the script imitates function calling (some rule answers with tool calls)."""
        return any(rule.tool_calls for rule in self.rules)

    def capabilities(self) -> Capabilities:
        """Text and (where scripted) tool calls; never logprobs."""
        return scripted(self.supports_tools())

    def _next_reply(self, index: int, rule: ScriptRule) -> str | None:
        """`reply`, or the next of `replies` (the last one once all were given)."""
        if not rule.replies:
            return rule.reply
        turn = self._turns.get(index, 0)
        self._turns[index] = turn + 1
        return rule.replies[min(turn, len(rule.replies) - 1)]

    def _should_fail(self, index: int, rule: ScriptRule) -> bool:
        assert rule.error is not None
        if rule.error.times is None:
            return True
        done = self._failures.get(index, 0)
        if done >= rule.error.times:
            return False
        self._failures[index] = done + 1
        return True

    def _completion(self, prompt: str, reply: str) -> Completion:
        tokens_in, tokens_out = count_tokens(prompt), count_tokens(reply)
        cost = tokens_in * self.input_cost + tokens_out * self.output_cost
        return Completion(text=reply, input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost)


def words(text: str) -> list[str]:
    """`text` cut into words that keep their following spacing; they join back to `text`."""
    return re.findall(r"\s*\S+\s*|\s+", text) if text.strip() else ([text] if text else [])


def _drawn(rule: ScriptRule, request: Request, index: int) -> bool:
    """Whether a rule with a `chance` answers this sample: a hash of prompt, seed and rule."""
    if rule.chance is None or request.temperature <= 0:
        return True
    seed = request.extra.get("seed", 0)
    digest = hashlib.sha256(f"{seed}|{index}|{request.text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rule.chance


def _calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": f"call_{i}", "name": c["name"], "arguments": c.get("arguments", {})} for i, c in enumerate(calls)]


def _ledger(name: str, prompt: str, **fields: str) -> None:
    path = os.environ.get(LEDGER_ENV)
    if not path:
        return
    line = json.dumps({"model": name, "prompt": prompt, **fields})
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def from_spec(spec: ModelSpec, base_dir: Path) -> ScriptedModel:
    """Build a scripted model from an alias: inline `script:` or `scripted/PATH`."""
    prices = {
        "input_cost_per_token": spec.input_cost_per_token or 0.0,
        "output_cost_per_token": spec.output_cost_per_token or 0.0,
    }
    if spec.model == "scripted":
        return ScriptedModel(spec.script or [], name="scripted", **prices)
    path = _script_path(spec.model.removeprefix("scripted/"), base_dir)
    document = load_file(path)
    data = document.data
    if isinstance(data, dict):
        prices = {k: float(data.get(k, v)) for k, v in prices.items()}
        data = data.get("script", [])
    try:
        rules = _RULES.validate_python(data)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        loc = tuple(p for p in first["loc"] if isinstance(p, (str, int)))
        raise SpecError(first["msg"], file=str(path), line=document.line_of(("script", *loc))) from None
    return ScriptedModel(rules, name=spec.model, **prices)


def trust_user_models(models: Iterable[str]) -> None:
    """Mark `scripted/PATH` models the user named on the command line (`--model`) or in a Python
    call: they are the user's own paths, found from the current folder too. Every other one (a
    flow file's, a server client's) is resolved under the project root only."""
    names = {model.removeprefix("scripted/") for model in models if model.startswith("scripted/")}
    _USER_SCRIPTS.update(names)


def _script_path(name: str, base_dir: Path) -> Path:
    if name in _USER_SCRIPTS:
        for candidate in (base_dir / name, Path(name)):
            if candidate.is_file():
                return candidate
    if not (base_dir / name).exists():
        raise SpecError(f"scripted model file {name!r} not found next to the flow", field="model")
    try:
        return confine(base_dir, name, project_root(base_dir), what="scripted model file")
    except PathRefused as err:
        raise SpecError(str(err), field="model") from None
