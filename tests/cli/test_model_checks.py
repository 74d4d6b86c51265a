"""Keys and local models checked before anything runs (issue 45, item 3): `validate` warns
(exit 0), `run`, `batch` and `optimize` refuse (exit 2) naming the file, line and variable."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CLI, FLOWS

FLOW = """flowstudio: 1
name: keyed
inputs: {question: {type: str}}
outputs: {answer: $answer.text}
models:
  default: MODEL
nodes:
  answer:
    type: llm.generate
    inputs: {question: $inputs.question}
    config: {prompt: "Answer: {{ question }}"}
"""
NO_KEYS = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "", "FLOWSTUDIO_TEST_KEY": ""}


def _flow(folder: Path, model: str) -> str:
    path = folder / "keyed.yaml"
    path.write_text(FLOW.replace("MODEL", model), encoding="utf-8")
    return str(path)


def _no_run_recorded(cli: CLI) -> bool:
    return cli("runs", "--json").json() == []


def test_an_empty_env_key_warns_on_validate_and_refuses_the_run(cli: CLI, tmp_path: Path) -> None:
    flow = _flow(tmp_path, "{model: openai/gpt-4o-mini, api_key: $env.FLOWSTUDIO_TEST_KEY}")
    checked = cli("validate", flow, env=NO_KEYS)
    assert checked.code == 0, checked.err
    assert f"warning: {flow}:6 at models.default.api_key" in checked.err
    assert "FLOWSTUDIO_TEST_KEY is empty" in checked.err
    ran = cli("run", flow, "-i", "question=hi", env=NO_KEYS)
    assert ran.code == 2 and "Traceback" not in ran.err
    assert f"{flow}:6 at models.default.api_key" in ran.err and "FLOWSTUDIO_TEST_KEY is empty" in ran.err
    assert _no_run_recorded(cli)
    ready = cli("validate", flow, env={**NO_KEYS, "FLOWSTUDIO_TEST_KEY": "a-test-key-0123"})
    assert ready.code == 0 and "warning" not in ready.err


def test_a_provider_key_is_needed_when_the_alias_names_none(cli: CLI, tmp_path: Path) -> None:
    for model, variable in (("openai/gpt-4o-mini", "OPENAI_API_KEY"), ("anthropic/claude-3-5-haiku-latest", "ANTHROPIC_API_KEY")):  # fmt: skip
        flow = _flow(tmp_path, f"{{model: {model}}}")
        checked = cli("validate", flow, env=NO_KEYS)
        assert checked.code == 0 and f"{flow}:6 at models.default.model" in checked.err and variable in checked.err
        ran = cli("run", flow, "-i", "question=hi", env=NO_KEYS)
        assert ran.code == 2 and variable in ran.err and f"{flow}:6" in ran.err, ran.err
    served = _flow(tmp_path, "{model: openai/smollm2, api_base: 'http://127.0.0.1:9/v1'}")
    assert "warning" not in cli("validate", served, env=NO_KEYS).err  # a self-hosted server needs no key


def test_a_misspelt_local_model_says_did_you_mean(cli: CLI, tmp_path: Path) -> None:
    flow = _flow(tmp_path, "{model: local/smolm2}")
    checked = cli("validate", flow)
    assert checked.code == 0
    assert f"{flow}:6 at models.default.model" in checked.err and "did you mean 'local/smollm2'?" in checked.err
    ran = cli("run", flow, "-i", "question=hi")
    assert ran.code == 2 and "did you mean 'local/smollm2'?" in ran.err
    assert _no_run_recorded(cli)


def test_batch_and_optimize_refuse_a_missing_key_before_any_run(cli: CLI, tmp_path: Path) -> None:
    data = str(FLOWS / "data" / "triage-labelled.jsonl")
    flow = str(FLOWS / "ticket-triage.yaml")
    model = "default=openai/gpt-4o-mini"
    batch = cli("batch", flow, "--data", data, "--expect", "category=category", "--model", model, env=NO_KEYS)
    assert batch.code == 2 and "OPENAI_API_KEY" in batch.err and "(set by --model)" in batch.err, batch.err
    search = cli(
        "optimize", flow, "--train", data, "--dev", data, "--metric", "exact", "--expect", "category=category",
        "--budget-calls", "300", "--proposer", "none", "--model", model, "--out", str(tmp_path / "o.yaml"), env=NO_KEYS,
    )  # fmt: skip
    assert search.code == 2 and "OPENAI_API_KEY" in search.err, search.err
    assert _no_run_recorded(cli)
    scripted = cli("validate", flow)
    assert scripted.code == 0 and "warning" not in scripted.err
