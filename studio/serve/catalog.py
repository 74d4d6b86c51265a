"""The flows a server serves: one file or every `*.yaml` of a folder, re-read on each request.

A file's content hash decides whether it changed: an edited flow is compiled again on the next
request, an unchanged one is reused. Runs record the version id of the files as compiled (the flow
and what it reads, `studio.versions.snapshot`). Files that do not load are left out (and logged once).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from studio.errors import FlowError, InputError
from studio.flow.paths import PathRefused, confine
from studio.flow.spec import Flow, load_flow_text
from studio.models import client_for
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.io_schema import flow_schema, inputs_schema, output_types
from studio.types import PortType

log = logging.getLogger("flowstudio.serve")
MAX_OVERRIDE_PLANS = 64


class NotFound(LookupError):
    """No flow or run of that name: 404."""


@dataclass(frozen=True)
class ServedFlow:
    """One flow file as compiled for serving."""

    name: str
    path: Path
    hash: str
    plan: Plan
    """Compiled with the flow's own models; requests with `models` compile their own."""
    version: str | None = None
    """The version its runs record: the published version served (`studio.serve.published`), else
    the working files' content hash (the id `flowstudio publish` would give them); None when the
    files cannot be read as a snapshot."""

    @property
    def flow(self) -> Flow:
        return self.plan.flow

    @functools.cached_property
    def inputs_schema(self) -> dict[str, Any]:
        """The JSON Schema a request's inputs are checked against (built once per flow version; never changed)."""
        return inputs_schema(self.plan)

    def listing(self) -> dict[str, object]:
        """One entry of `GET /flows`."""
        contract = flow_schema(self.plan)
        return {
            "name": self.name,
            "description": self.flow.spec.description,
            "inputs": contract.inputs,
            "outputs": contract.outputs,
        }

    def chat_ports(self) -> tuple[str, str] | None:
        """(input, output) when the flow has one `str` or `messages` input and one `str` output, else
        None. A `messages` input gets the whole conversation; a `str` one its last user message."""
        if len(self.plan.inputs) != 1 or len(self.plan.outputs) != 1:
            return None
        (input_name,) = self.plan.inputs
        (output_name,) = self.plan.outputs
        port = output_types(self.plan)[output_name]
        if self.plan.input_types[input_name].name not in ("str", "messages") or port.name != "str":
            return None
        return input_name, output_name

    def takes_conversation(self, input_name: str) -> bool:
        """Whether the chat input is a `messages` port (the whole conversation)."""
        return self.plan.input_types[input_name].name == "messages"

    def output_port(self, name: str) -> PortType:
        return output_types(self.plan)[name]


def check_overrides(flow: Flow, models: dict[str, str], allowed: Iterable[str] = ()) -> None:
    """Refuse a client's model override unless its alias is the flow's and its model is one of the
    flow's own model strings or matches an operator's `--allow-model` pattern: a request chooses
    among the models the operator allows, never a file or a provider of its own."""
    aliases = flow.spec.models
    own = sorted({spec.model for spec in aliases.values()})
    patterns = list(allowed)
    for alias, model in models.items():
        if alias not in aliases:
            close = difflib.get_close_matches(alias, sorted(aliases), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            known = ", ".join(sorted(aliases)) or "none"
            raise InputError(
                f"the flow has no model alias {alias!r}; {hint}its aliases: {known}", field=f"models.{alias}"
            )
        if model not in own and not any(fnmatchcase(model, p) for p in patterns):
            more = (
                f"; allowed patterns: {', '.join(patterns)}"
                if patterns
                else " (the operator allows more with --allow-model)"
            )
            raise InputError(
                f"model {model!r} is not allowed here: the flow's own models are {', '.join(own)}{more}",
                field=f"models.{alias}",
            )
        if model.startswith("scripted/"):
            _confined_script(flow, alias, model.removeprefix("scripted/"))


def _confined_script(flow: Flow, alias: str, name: str) -> None:
    """A client's `scripted/PATH` must name a file under the flow's folder (checked before the
    compiler sees it, since overrides are otherwise the caller's own paths)."""
    try:
        confine(flow.base_dir, name, flow.base_dir, what="scripted model file")
    except PathRefused:
        raise InputError(
            f"scripted model file {name!r} is not a file in the flow's folder", field=f"models.{alias}"
        ) from None


def _stamp(status: os.stat_result) -> tuple[int, int, int]:
    return status.st_ino, status.st_size, status.st_mtime_ns


class Catalog:
    """Finds flows by name under a file or folder, compiling each version of a file once."""

    def __init__(self, path: str | Path, allow_models: Iterable[str] = ()) -> None:
        self.path = Path(path).resolve()
        self.allow_models = tuple(allow_models)
        """The operator's `--allow-model` patterns: models a request may swap in besides the flow's own."""
        self._by_file: dict[Path, ServedFlow] = {}
        self._broken: dict[Path, str] = {}
        self._plans: dict[tuple[Path, str, tuple[tuple[str, str], ...]], Plan] = {}
        self._stamps: dict[Path, tuple[int, int, int]] = {}
        """Each file's inode, size and modification time when it was last read."""

    def files(self) -> list[Path]:
        if self.path.is_file():
            return [self.path]
        return sorted([*self.path.glob("*.yaml"), *self.path.glob("*.yml")])

    def flows(self) -> dict[str, ServedFlow]:
        """Every loadable flow by name (the first file wins a name clash)."""
        found: dict[str, ServedFlow] = {}
        for file in self.files():
            served = self._load(file)
            if served is not None:
                found.setdefault(served.name, served)
        return found

    def get(self, name: str) -> ServedFlow:
        """The flow called `name`; raises NotFound naming the flows there are."""
        flows = self.flows()
        if name not in flows:
            raise NotFound(f"no flow named {name!r}; flows: {sorted(flows)}")
        return flows[name]

    def plan(self, served: ServedFlow, models: dict[str, str]) -> Plan:
        """The flow compiled with model overrides (cached per file version and overrides)."""
        if not models:
            return served.plan
        check_overrides(served.flow, models, self.allow_models)
        key = (served.path, served.hash, tuple(sorted(models.items())))
        if key not in self._plans:
            if len(self._plans) >= MAX_OVERRIDE_PLANS:
                self._plans.clear()
            try:
                plan = compile_flow(served.flow, models)
            except FlowError as err:
                raise InputError(f"models: {err.message}", field="models") from None
            for alias in sorted(models):
                try:
                    client_for(plan.models[alias], plan.flow.base_dir)
                except FlowError as err:
                    raise InputError(f"models.{alias}: {err.message}", field=f"models.{alias}") from None
            self._plans[key] = plan
        return self._plans[key]

    def relative(self, text: str) -> str:
        """`text` with the served folder's absolute path left out: clients see paths relative to it."""
        folder = self.path if self.path.is_dir() else self.path.parent
        return text.replace(f"{folder}/", "").replace(str(folder), ".")

    def _load(self, file: Path) -> ServedFlow | None:
        try:
            stamp = _stamp(file.stat())
            known = self._by_file.get(file)
            if known is not None and self._stamps.get(file) == stamp:
                return known  # unchanged since it was read: no read and hash per request
            text = file.read_text(encoding="utf-8")
        except OSError:
            return None
        self._stamps[file] = stamp
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if known is not None and known.hash == digest:
            return known
        if self._broken.get(file) == digest:
            return None
        try:
            plan = compile_flow(load_flow_text(text, file=str(file), path=file))
        except FlowError as err:
            log.warning("not serving %s: %s", file, err)
            self._broken[file] = digest
            self._by_file.pop(file, None)
            return None
        from studio.versions.snapshot import working_id  # loaded when a flow is served, not on import

        served = ServedFlow(plan.flow.spec.name, file, digest, plan, working_id(plan.flow))
        self._by_file[file] = served
        return served
