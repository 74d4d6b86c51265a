"""A newcomer's first hour: every mistake caught before anything runs, and said plainly.

Each test drives the real `flowstudio` command in a subprocess.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
from pathlib import Path

from tests.conftest import CLI, FIXTURES, FLOWS, FLOWSTUDIO, ROOT, SCRIPTS

TRIAGE = str(FLOWS / "ticket-triage.yaml")
TRIAGE_SCRIPT = f"scripted/{SCRIPTS / 'triage.yaml'}"


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


# 1. A value for a `str` input is the text as typed.


def test_str_input_takes_the_text_as_typed_and_other_types_parse_as_json(cli: CLI, tmp_path: Path) -> None:
    flow = _write(
        tmp_path / "typed.yaml",
        "flowstudio: 1\nname: typed\n"
        "inputs: {ticket: {type: str}, n: {type: int}, maybe: {type: 'str | null', default: null}}\n"
        "outputs: {ticket: $inputs.ticket, n: $inputs.n, maybe: $inputs.maybe}\n"
        "nodes:\n  a: {type: text.template, config: {template: x}}\n",
    )
    result = cli("run", flow, "-i", "ticket=12345", "-i", "n=5", "-i", "maybe=true", "--json")
    assert result.code == 0, result.err
    assert result.json()["outputs"] == {"ticket": "12345", "n": 5, "maybe": "true"}
    refused = cli("run", flow, "-i", "ticket=x", "-i", "n=five")
    assert refused.code == 2 and "n" in refused.err and "Traceback" not in refused.err


# 2. A misspelt --model alias is refused, with the alias it was meant to be.


def test_unknown_model_alias_is_exit_2_with_did_you_mean(cli: CLI, tmp_path: Path) -> None:
    db = tmp_path / "flowstudio.db"
    result = cli("run", TRIAGE, "-i", "ticket=hi", "--model", f"defualt={TRIAGE_SCRIPT}")
    assert result.code == 2
    assert "did you mean 'default'?" in result.err and "--model" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not db.exists() or cli("runs", "--json").json() == []  # nothing ran
    data = str(FLOWS / "data" / "triage-labelled.jsonl")
    batch = cli("batch", TRIAGE, "--data", data, "--expect", "category=category", "--model", f"defualt={TRIAGE_SCRIPT}")
    assert batch.code == 2 and "did you mean 'default'?" in batch.err


# 3. Expressions are checked at compile time: every node, port and name they read.


WHEN_FLOW = """flowstudio: 1
name: guarded
inputs: {ticket: {type: str}}
models:
  default: {model: scripted, script: [{reply: billing}]}
nodes:
  classify:
    type: llm.classify
    inputs: {text: $inputs.ticket}
    config: {labels: [billing, bug, other]}
  reply:
    type: text.template
    when: WHEN
    config: {template: hi}
"""


def test_misspelt_port_in_when_is_caught_by_validate_and_before_run(cli: CLI, tmp_path: Path) -> None:
    flow = _write(tmp_path / "guarded.yaml", WHEN_FLOW.replace("WHEN", "classify.lable != 'other'"))
    result = cli("validate", flow)
    assert result.code == 2
    assert "nodes.reply.when" in result.err and "'lable'" in result.err and "did you mean 'label'?" in result.err
    run = cli("run", flow, "-i", "ticket=x")
    assert run.code == 2 and cli("runs", "--json").json() == []  # no upstream node ran or paid
    inputs = _write(tmp_path / "inputs.yaml", WHEN_FLOW.replace("WHEN", "inputs.tiket == 'x'"))
    assert "did you mean 'ticket'?" in cli("validate", inputs).err
    fine = _write(tmp_path / "fine.yaml", WHEN_FLOW.replace("WHEN", "classify['label'] != 'other' and inputs.ticket"))
    assert cli("validate", fine).code == 0


def test_misspelt_name_in_until_is_caught_by_validate(cli: CLI, tmp_path: Path) -> None:
    text = (FLOWS / "draft-critique-revise.yaml").read_text(encoding="utf-8")
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "critique-revise.yaml").write_text(
        (FLOWS / "parts" / "critique-revise.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    good = _write(tmp_path / "good.yaml", text)
    assert cli("validate", good).code == 0
    bad = _write(tmp_path / "bad.yaml", text.replace("outputs.verdict", "outputs.verdikt"))
    result = cli("validate", bad)
    assert result.code == 2
    assert "nodes.improve.config.until" in result.err and "did you mean 'verdict'?" in result.err
    names = _write(tmp_path / "names.yaml", text.replace("outputs.verdict", "output.verdict"))
    assert "'output'" in cli("validate", names).err


# 4. fmt refuses a file that does not validate, and leaves it as it is.


def test_fmt_refuses_an_invalid_file_and_writes_nothing(cli: CLI, tmp_path: Path) -> None:
    text = "name: broken\nflowstudio: 1\nnodes:\n  a: {type: text.templat, config: {template: x}}\n"
    flow = _write(tmp_path / "broken.yaml", text)
    other = _write(
        tmp_path / "other.yaml",
        "name: other\nflowstudio: 1\nnodes: {a: {type: text.template, config: {template: x}}}\n",
    )
    before = Path(other).read_text(encoding="utf-8")
    result = cli("fmt", other, flow)
    assert result.code == 2 and "text.templat" in result.err
    assert Path(flow).read_text(encoding="utf-8") == text
    assert Path(other).read_text(encoding="utf-8") == before  # nothing is written when one file is refused
    assert cli("fmt", other).code == 0 and Path(other).read_text(encoding="utf-8") != before


# 5. A waiting run prints the question, the expected type and the exact resume command.


def test_waiting_run_prints_question_type_and_the_resume_command_that_works(cli: CLI, tmp_path: Path) -> None:
    result = cli("run", str(FIXTURES / "approval.yaml"), "-i", "topic=tea")
    assert result.code == 3
    assert "approve asks: Publish this? A short draft." in result.out
    assert "expects: bool" in result.out
    (command,) = [line.split("answer with: ", 1)[1] for line in result.out.splitlines() if "answer with:" in line]
    run_id = cli("runs", "--json").json()[0]["run_id"]
    assert command == f"flowstudio resume {run_id} --value approve=true"
    env = {**os.environ, "FLOWSTUDIO_DB": str(tmp_path / "flowstudio.db")}
    args = shlex.split(command)
    done = subprocess.run([FLOWSTUDIO, *args[1:]], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "PUBLISHED: A short draft." in done.stdout


def test_waiting_run_with_db_names_the_db_and_str_answers_are_text(cli: CLI, tmp_path: Path) -> None:
    flow = _write(
        tmp_path / "ask.yaml",
        "flowstudio: 1\nname: ask\noutputs: {answer: $ask.value}\n"
        "nodes:\n  ask: {type: human.input, config: {prompt: 'Your zip code?'}}\n",
    )
    db = str(tmp_path / "other.db")
    result = cli("run", flow, "--db", db)
    assert result.code == 3
    assert "expects: str" in result.out and f"--db {db} --value ask=" in result.out
    run_id = cli("runs", "--db", db, "--json").json()[0]["run_id"]
    done = cli("resume", run_id[:6], "--db", db, "--value", "ask=02134", "--json")
    assert done.code == 0, done.err
    assert done.json()["outputs"] == {"answer": "02134"}


# 6. Unique id prefixes everywhere; tables readable at 80 columns; trace --full.


def test_prefixes_work_in_trace_rerun_and_experiments(cli: CLI) -> None:
    first = cli("run", TRIAGE, "-i", "ticket=refund me", "--model", f"default={TRIAGE_SCRIPT}", "--json").json()
    prefix = first["run_id"][:6]
    trace = cli("trace", prefix, "--json")
    assert trace.code == 0, trace.err
    assert [s["node"] for s in trace.json()] == ["classify", "reply"]
    rerun = cli("rerun", prefix, "--from", "reply", "--json")
    assert rerun.code == 0, rerun.err
    ambiguous = cli("trace", "")
    assert ambiguous.code == 2 and "more than one run" in ambiguous.err and "give more characters" in ambiguous.err
    missing = cli("trace", "zzzz")
    assert missing.code == 2 and "no run 'zzzz'" in missing.err
    data = str(FLOWS / "data" / "triage-labelled.jsonl")
    batch = cli("batch", TRIAGE, "--data", data, "--limit", "2", "--expect", "category=category", "--model", f"default={TRIAGE_SCRIPT}", "--json")  # fmt: skip
    experiment = batch.json()["experiment_id"]
    shown = cli("experiments", experiment[:5], "--json")
    assert shown.code == 0, shown.err
    assert shown.json()["experiment_id"] == experiment


def test_tables_fit_80_columns_and_show_whole_ids(cli: CLI) -> None:
    env = {"COLUMNS": "80"}
    run = cli("run", TRIAGE, "-i", "ticket=refund me", "--model", f"default={TRIAGE_SCRIPT}", "--json").json()
    listed = cli("runs", env=env)
    assert run["run_id"] in listed.out  # the whole id, so it can be pasted into `trace`
    assert "ticket-triage" in listed.out and "succeeded" in listed.out
    traced = cli("trace", run["run_id"], env=env)
    for output in (listed.out, traced.out):
        assert max(len(line) for line in output.splitlines()) <= 80, output
    lines = traced.out.splitlines()
    assert any(line.startswith("classify") and "succeeded" in line and "billing" in line for line in lines), traced.out
    assert any(line.startswith("reply") and "succeeded" in line for line in lines), traced.out


def test_trace_full_shows_prompts_and_replies(cli: CLI) -> None:
    run = cli("run", TRIAGE, "-i", "ticket=refund me", "--model", f"default={TRIAGE_SCRIPT}", "--json").json()
    short = cli("trace", run["run_id"])
    full = cli("trace", run["run_id"], "--full")
    assert full.code == 0, full.err
    assert "Ticket (billing): refund me" in full.out
    assert "Sorry about that, we will refund you today." in full.out
    assert "Ticket (billing)" not in short.out
    assert "--full" in short.out


# 7. YAML and schema errors in the user's words.


def test_tab_in_indentation_is_named_as_a_tab(cli: CLI, tmp_path: Path) -> None:
    flow = _write(tmp_path / "tabs.yaml", "flowstudio: 1\nname: tabs\nnodes:\n\ta: {type: text.template}\n")
    result = cli("validate", flow)
    assert result.code == 2
    assert f"{flow}:4" in result.err and "tab" in result.err and "spaces" in result.err


def test_unknown_key_says_did_you_mean(cli: CLI, tmp_path: Path) -> None:
    text = Path(TRIAGE).read_text(encoding="utf-8")
    config = _write(tmp_path / "config.yaml", text.replace("labels:", "lables:"))
    result = cli("validate", config)
    assert result.code == 2
    assert "unknown config field 'lables' (did you mean 'labels'?)" in result.err
    assert "Field required" not in result.err
    spec = _write(tmp_path / "spec.yaml", text.replace("    when:", "    wehn:"))
    assert "unknown field 'wehn' (did you mean 'when'?)" in cli("validate", spec).err
    model = _write(tmp_path / "model.yaml", text.replace("temperature: 0", "temprature: 0"))
    assert "unknown field 'temprature' (did you mean 'temperature'?)" in cli("validate", model).err


# 15. Templates drop their final newline, as Jinja does by default.


def test_template_block_sends_no_trailing_newline(cli: CLI, tmp_path: Path) -> None:
    flow = _write(
        tmp_path / "block.yaml",
        "flowstudio: 1\nname: block\ninputs: {name: {type: str}}\noutputs: {text: $say.text}\n"
        "nodes:\n  say:\n    type: text.template\n    inputs: {name: $inputs.name}\n"
        "    config:\n      template: |\n        Hello {{ name }}.\n",
    )
    result = cli("run", flow, "-i", "name=Ada", "--json")
    assert result.code == 0, result.err
    assert result.json()["outputs"] == {"text": "Hello Ada."}


# 16. A scripted rule may answer in turn, and the cache does not hide it.


REPLIES_FLOW = """flowstudio: 1
name: turns
outputs: {first: $one.text, second: $two.text, third: $three.text}
models:
  default:
    model: scripted
    script: [{match: 'Is it done', replies: [no, not yet, done]}]
nodes:
  one: {type: llm.generate, config: {prompt: 'Is it done?'}}
  two: {type: llm.generate, after: [one], config: {prompt: 'Is it done?'}}
  three: {type: llm.generate, after: [two], config: {prompt: 'Is it done?'}}
"""


def test_scripted_replies_are_answered_in_turn_past_the_cache(cli: CLI, tmp_path: Path) -> None:
    flow = _write(tmp_path / "turns.yaml", REPLIES_FLOW)
    for _ in range(2):  # the second run starts again at the first turn: no cached reply hides a turn
        result = cli("run", flow, "--json")
        assert result.code == 0, result.err
        assert result.json()["outputs"] == {"first": "no", "second": "not yet", "third": "done"}
    db = sqlite3.connect(tmp_path / "flowstudio.db")
    assert db.execute("SELECT count(*) FROM cache").fetchone()[0] == 0
    db.close()


def test_scripted_replies_carry_through_loop_iterations(cli: CLI, tmp_path: Path) -> None:
    flow = {
        "flowstudio": 1,
        "name": "until-done",
        "outputs": {"rounds": "$loop.iterations", "last": "$loop.answer"},
        "nodes": {
            "loop": {
                "type": "control.loop",
                "config": {
                    "until": "outputs.answer == 'done'",
                    "max_iterations": 5,
                    "flow": {
                        "flowstudio": 1,
                        "name": "ask",
                        "outputs": {"answer": "$ask.text"},
                        "models": {"default": {"model": "scripted", "script": [{"replies": ["no", "no", "done"]}]}},
                        "nodes": {"ask": {"type": "llm.generate", "config": {"prompt": "Is it done?"}}},
                    },
                },
            }
        },
    }
    path = _write(tmp_path / "loop.yaml", json.dumps(flow))
    result = cli("run", path, "--json")
    assert result.code == 0, result.err
    assert result.json()["outputs"] == {"rounds": 3, "last": "done"}


# 10. A batch shows why its score is low: the first mismatches.


def test_batch_summary_shows_the_first_mismatches(cli: CLI) -> None:
    data = str(FLOWS / "data" / "triage-labelled.jsonl")
    result = cli("batch", TRIAGE, "--data", data, "--expect", "category=category", "--model", f"default={TRIAGE_SCRIPT}", env={"COLUMNS": "200"})  # fmt: skip
    assert result.code == 0, result.err
    assert "first mismatches:" in result.out
    shown = [line.strip() for line in result.out.splitlines() if line.strip().startswith("row ")]
    assert 1 <= len(shown) <= 3
    rows = [json.loads(line) for line in Path(data).read_text(encoding="utf-8").splitlines()]
    first_wrong = next(i for i, row in enumerate(rows, 1) if row["category"] != "billing")  # the script says billing
    assert shown[0].startswith(f"row {first_wrong} ")
    assert json.dumps(rows[first_wrong - 1]["ticket"]) in shown[0]
    assert f'expected {{"category": "{rows[first_wrong - 1]["category"]}"}}' in shown[0]
    assert 'got {"category": "billing"}' in shown[0]


# 11. When nothing succeeds, batch and optimize stop early, print the first error and exit 1.


AUTH_SCRIPT = "script:\n  - {error: {kind: auth}}\n"


def test_batch_whose_first_examples_all_fail_stops_and_exits_1(cli: CLI, tmp_path: Path) -> None:
    script = _write(tmp_path / "auth.yaml", AUTH_SCRIPT)
    ledger = tmp_path / "ledger.jsonl"
    data = str(FLOWS / "data" / "triage-labelled.jsonl")
    result = cli("batch", TRIAGE, "--data", data, "--expect", "category=category", "--model", f"default=scripted/{script}", "--concurrency", "2", env={"FLOWSTUDIO_SCRIPTED_LEDGER": str(ledger), "COLUMNS": "200"})  # fmt: skip
    assert result.code == 1
    assert "stopped: all of the first 4 examples failed" in result.out
    assert "auth" in result.out and "error:" in result.out
    assert len(ledger.read_text(encoding="utf-8").splitlines()) <= 4 + 2  # the first 4, and what was in flight
    as_json = cli("batch", TRIAGE, "--data", data, "--limit", "2", "--model", f"default=scripted/{script}", "--json")
    assert as_json.code == 1 and "auth" in as_json.err
    assert as_json.json()["succeeded"] == 0


def test_optimize_stops_after_a_first_minibatch_with_no_success(cli: CLI, tmp_path: Path) -> None:
    script = _write(tmp_path / "auth.yaml", AUTH_SCRIPT)
    ledger = tmp_path / "ledger.jsonl"
    data = str(FLOWS / "data" / "triage-labelled.jsonl")
    result = cli(
        "optimize", TRIAGE, "--train", data, "--dev", data, "--metric", "exact", "--expect", "category=category",
        "--budget-calls", "300", "--minibatch", "4", "--proposer", "none", "--out", str(tmp_path / "better.yaml"),
        "--model", f"default=scripted/{script}", "--json",
        env={"FLOWSTUDIO_SCRIPTED_LEDGER": str(ledger)},
    )  # fmt: skip
    assert result.code == 1
    assert "all 4 runs of the first dev minibatch failed" in result.err and "auth" in result.err
    assert "note: train and dev are the same examples: 15 of them (every third) are dev and 30" in result.err
    assert len(ledger.read_text(encoding="utf-8").splitlines()) == 4  # not the 300-call budget
