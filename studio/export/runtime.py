"""What an exported flow package runs: its embedded flow on the engine, in memory by default.

Packages written by `flowstudio export` import only this module from flowstudio, so it is the
surface they rely on: keep its names and signatures stable.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import functools
import json
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from studio import secrets
from studio.errors import FlowError, InputError
from studio.flow import paths
from studio.flow.spec import DURABILITIES, Durability, load_flow
from studio.runtime.compiler import Plan, compile_flow
from studio.runtime.engine import Engine, RunOptions, RunResult
from studio.store import MemoryStore, open_store
from studio.store.base import Store
from studio.types import value_from_text

__all__ = ["Durability", "FlowFailed", "RunResult", "check_models", "console", "outputs_of", "run_embedded"]

EXIT_CODES = {"succeeded": 0, "failed": 1, "waiting": 3}
EXIT_BAD_INPUT = 2


class FlowFailed(Exception):
    """The flow ran but did not succeed: a node failed, or it is waiting for human input."""

    def __init__(self, result: RunResult) -> None:
        super().__init__(f"run {result.run_id} {result.status}: {result.error}")
        self.result = result
        """The whole run record: status, error, tokens, cost and steps."""

    @property
    def status(self) -> str:
        """`failed` or `waiting`."""
        return self.result.status


@functools.lru_cache(maxsize=32)
def _plan(flow_file: str, models: tuple[tuple[str, str], ...]) -> Plan:
    """Compiled once per process and model choice; a plan holds no run state."""
    with paths.rooted(package_root(Path(flow_file)), force=True):
        return compile_flow(load_flow(flow_file), dict(models))


def package_root(flow_file: Path) -> Path:
    """The package's `flows` folder: the project root its embedded flows stay under."""
    for parent in flow_file.parents:
        if parent.name == "flows" and (parent.parent / "__init__.py").is_file():
            return parent
    return flow_file.parent


async def run_embedded(
    flow_file: str | Path,
    inputs: Mapping[str, Any],
    *,
    models: Mapping[str, str] | None = None,
    db: str | Path | None = None,
    durability: Durability | None = None,
) -> RunResult:
    """Run a flow file and return its run record; a failing node fails the run, not the call.

    `models` swaps model aliases (ALIAS → model string), like `flowstudio run --model`.
    The run is recorded in memory unless `db` names a SQLite file (then `flowstudio runs`,
    `trace` and `resume --db` can read it); `durability` is when its steps reach that file
    (`sync`, `async` or `exit`, like `flowstudio run --durability`; default: the flow's, else
    `sync`). Raises FlowError for inputs the flow refuses.
    """
    if durability is not None and durability not in DURABILITIES:
        raise InputError(f"durability must be one of {', '.join(DURABILITIES)}, not {durability!r}", field="durability")
    overrides = dict(models or {})
    check_models(flow_file, overrides)
    plan = _plan(str(Path(flow_file).resolve()), tuple(sorted(overrides.items())))
    store: Store = open_store(db) if db is not None else MemoryStore()
    try:
        with paths.rooted(package_root(Path(flow_file).resolve()), force=True):
            options = RunOptions(models=overrides, durability=durability)
            return await Engine(store).run(plan, dict(inputs), options=options)
    finally:
        store.close()


def check_models(flow_file: str | Path, models: Mapping[str, str], option: str = "models") -> None:
    """Refuse a model swap whose alias the flow (sub-flows included) does not have: a misspelt
    alias would leave the flow's own model to run. Raises InputError with the alias meant."""
    from studio.export.writer import model_aliases

    resolved = Path(flow_file).resolve()
    with paths.rooted(package_root(resolved), force=True):
        known = model_aliases(_plan(str(resolved), ()))
    for alias in models:
        if alias in known:
            continue
        close = difflib.get_close_matches(alias, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        where = f"--model {alias}=..." if option == "--model" else option
        defined = ", ".join(known) or "none"
        raise InputError(f"{where}: the flow has no model alias {alias!r}; {hint}its aliases: {defined}", field=option)


def outputs_of(result: RunResult) -> dict[str, Any]:
    """The outputs of a run that succeeded; raises FlowFailed for any other status."""
    if result.status != "succeeded" or result.outputs is None:
        raise FlowFailed(result)
    return result.outputs


def console(
    flow_file: str | Path, inputs_model: type[BaseModel], *, prog: str, argv: Sequence[str] | None = None
) -> int:
    """The console script of an exported flow; returns the exit code.

    0 ok, 1 the flow failed, 2 bad input, 3 the run is waiting for human input.
    """
    parser = _parser(prog, inputs_model)
    args = parser.parse_args(argv)
    try:
        given = _given_inputs(parser, args, inputs_model)
        values = inputs_model.model_validate(given).model_dump(exclude_defaults=True)
        models = dict(_pairs(parser, args.model, "--model"))
        check_models(flow_file, models, "--model")
        run = run_embedded(flow_file, values, models=models, db=args.db, durability=args.durability)
        result = asyncio.run(run)
    except ValidationError as err:
        print(f"error: {_first_problem(err)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except FlowError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:
        print(json.dumps(secrets.mask(result.as_json()), indent=2, ensure_ascii=False))
    elif result.outputs is not None:
        for name, value in secrets.mask(result.outputs).items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            print(f"{secrets.escape_controls(name)}: {secrets.escape_controls(text)}")
    if result.status != "succeeded" and not args.json:
        error = secrets.escape_controls(secrets.mask(str(result.error)))
        print(f"error: run {result.run_id} {result.status}: {error}", file=sys.stderr)
    return EXIT_CODES.get(result.status, EXIT_CODES["failed"])


def _parser(prog: str, inputs_model: type[BaseModel]) -> argparse.ArgumentParser:
    names = ", ".join(inputs_model.model_fields) or "none"
    parser = argparse.ArgumentParser(
        prog=prog,
        description=f"Run the embedded flow. Inputs: {names}.",
        epilog=(
            f"Example: {prog} --input NAME=VALUE --json\n\n"
            f"{prog} serve [--port N] [--host H] ...: serve the flow over HTTP (see {prog} serve --help)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-i",
        "--input",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="A flow input; VALUE is JSON if it parses (text inputs take it as written).",
    )
    parser.add_argument("--inputs", metavar="FILE.json", help="A JSON object of inputs.")
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="ALIAS=MODEL",
        help="Swap a model alias, e.g. default=scripted/s.yaml.",
    )
    parser.add_argument("--db", metavar="PATH", help="Record the run in this SQLite file (default: in memory).")
    parser.add_argument(
        "--durability",
        choices=DURABILITIES,
        help="When finished steps reach --db: sync (each before its dependents), async (in the background,"
        " all before the run ends) or exit (all at the end). Default: the flow's, else sync.",
    )
    parser.add_argument("--json", action="store_true", help="Print the run as JSON for scripts.")
    return parser


def _given_inputs(parser: argparse.ArgumentParser, args: argparse.Namespace, model: type[BaseModel]) -> dict[str, Any]:
    given: dict[str, Any] = {}
    if args.inputs:
        try:
            loaded = json.loads(Path(args.inputs).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            parser.error(f"--inputs {args.inputs}: {err}")
        if not isinstance(loaded, dict):
            parser.error("--inputs must hold a JSON object")
        given.update(loaded)
    for name, text in _pairs(parser, args.input, "--input"):
        field = model.model_fields.get(name)
        given[name] = text if field is not None and _is_text(field.annotation) else value_from_text(text)
    return given


def _pairs(parser: argparse.ArgumentParser, items: list[str], option: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            parser.error(f"{option}: expected NAME=VALUE, got {item!r}")
        pairs.append((name, value))
    return pairs


def _is_text(annotation: Any) -> bool:
    """`str` and `str | None` inputs take the text as written: `--input zip=02134` stays text."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return members == [str]
    return annotation is str


def _first_problem(err: ValidationError) -> str:
    problems = err.errors(include_url=False)
    first = problems[0]
    where = ".".join(str(p) for p in first["loc"]) or "inputs"
    message = "unknown input" if first["type"] == "extra_forbidden" else first["msg"]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"input {where}: {message}{more}"
