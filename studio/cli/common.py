"""What the commands share: exit codes, the friendly error wrapper, store and output options."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from studio.flow.values import MAX_DEPTH, json_depth
from studio.types import value_from_text

EXIT_FAILED, EXIT_BAD_INPUT, EXIT_WAITING = 1, 2, 3


F = TypeVar("F", bound=Callable[..., Any])


def friendly(command: F) -> F:
    """Turn FlowError (bad input) into a one-paragraph message and exit code 2."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from studio.errors import FlowError

        try:
            return command(*args, **kwargs)
        except FlowError as err:
            from studio.secrets import escape_controls, mask

            click.echo(f"error: {escape_controls(mask(str(err)))}", err=True)
            sys.exit(EXIT_BAD_INPUT)

    return wrapper  # type: ignore[return-value]


def pairs(values: tuple[str, ...], option: str, parse_json: bool) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint=option)
        if parse_json and json_depth(value) > MAX_DEPTH:
            raise click.BadParameter(f"{name}: JSON nested deeper than {MAX_DEPTH} levels", param_hint=option)
        result[name] = value_from_text(value) if parse_json else value
    return result


def print_json(data: Any) -> None:
    """JSON for scripts; `$env` values masked (control characters come out escaped by JSON)."""
    from studio.secrets import mask

    click.echo(json.dumps(mask(data), indent=2, ensure_ascii=False))


def open_store(db: str | None) -> Any:
    """The store `--db` (else FLOWSTUDIO_DB) names; one it cannot open is bad input (exit 2)."""
    from studio.store import open_store as open_at

    return friendly(open_at)(db)


def full_run_id(given: str, db: str | None) -> str:
    """The run id that `given` is or uniquely begins (exit 2 when none or several)."""
    from studio.store.base import resolve_id

    store = open_store(db)
    try:
        return resolve_id(store, "run", given)
    finally:
        store.close()


db_option = click.option(
    "--db",
    type=click.Path(dir_okay=False),
    help="SQLite file or postgresql:// URL (default: $FLOWSTUDIO_DB, .flowstudio/flowstudio.db).",
)


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def durability_option(help_text: str) -> Callable[[F], F]:
    """`--durability sync|async|exit` (`studio.runtime.durability`), None when not given."""
    return click.option("--durability", type=click.Choice(["sync", "async", "exit"]), default=None, help=help_text)


def run_options(command: F) -> F:
    """The options `run`, `resume` and `rerun` share: store, output, budgets, cache."""
    decorators = [
        click.option(
            "--max-concurrency", type=click.IntRange(1), default=None, help="Nodes running at once (default 100)."
        ),
        click.option(
            "--max-cost",
            type=click.FloatRange(0),
            default=None,
            help="Stop before a model call once this many USD are spent.",
        ),
        click.option(
            "--max-tokens",
            type=click.IntRange(0),
            default=None,
            help="Stop before a model call once this many tokens are used.",
        ),
        click.option(
            "--max-steps", type=click.IntRange(0), default=None, help="Stop before a node once this many steps ran."
        ),
        click.option(
            "--cache/--no-cache", default=None, help="Serve repeated model calls from the LLM cache (default on)."
        ),
        durability_option(
            "When finished steps reach the store: sync (each before its dependents), async (in the background,"
            " all before the run ends) or exit (all at the end). Default: the flow's `durability:`, else sync;"
            " a resume keeps the run's."
        ),
        db_option,
        json_option,
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def options_from(base: Any, flags: dict[str, Any]) -> Any:
    """Stored or default RunOptions, with the flags that were given on top."""
    from studio.runtime.engine import RunOptions

    options = base or RunOptions()
    for name in ("max_cost", "max_tokens", "max_steps", "cache", "max_concurrency", "durability"):
        if flags.get(name) is not None:
            setattr(options, name, flags[name])
    return options


def stored_options(run_id: str, db: str | None, flags: dict[str, Any]) -> Any:
    from studio.runtime.engine import RunOptions

    store = open_store(db)
    record = store.get_run(run_id)
    store.close()
    return options_from(RunOptions.of_run(record) if record else None, flags)


def report(result: Any, as_json: bool, db: str | None = None) -> None:
    from studio.cli.reports import print_run

    if as_json:
        print_json(result.as_json())
    else:
        print_run(result)
    if result.status == "waiting" and not as_json:
        from studio.cli.waiting import explain

        store = open_store(db)
        try:
            click.echo("\n".join(explain(store, result.run_id, db)))
        finally:
            store.close()
    if result.status == "failed":
        sys.exit(EXIT_FAILED)
    if result.status == "waiting":
        sys.exit(EXIT_WAITING)


def http_client_options(*, within: str = "", token_scope: str = "every request") -> Callable[[F], F]:
    """`--token-env`, `--allow-host` and `--max-body-bytes`: what an HTTP client must pass (`serve`,
    `mcp serve`). `within` starts each help text (`With http: `); `token_scope` says which requests
    need the token."""
    from studio.serve import DEFAULT_MAX_BODY_BYTES

    def say(text: str) -> str:
        return f"{within}{text}" if within else text[:1].upper() + text[1:]

    options = [
        click.option(
            "--token-env",
            metavar="NAME",
            default=None,
            help=say(f"require `Authorization: Bearer $NAME` on {token_scope}."),
        ),
        click.option(
            "--allow-host",
            "allow_hosts",
            multiple=True,
            metavar="NAME",
            help=say("also answer requests whose Host (or Origin) is NAME; besides loopback and --host. Repeatable."),
        ),
        click.option(
            "--max-body-bytes",
            type=click.IntRange(1),
            default=DEFAULT_MAX_BODY_BYTES,
            show_default=True,
            help=say("the largest request body; a larger one is refused with 413."),
        ),
    ]

    def decorate(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate
