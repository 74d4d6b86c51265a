"""Secrets stay out of flows, stores and screens; what a user sees is one escaped line, never a traceback."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from studio.cli import main
from tests.nodes.runner import HEADER
from tests.security.conftest import SECRET, SECRET_ENV, Canary


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _runs(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return int(conn.execute("select count(*) from runs").fetchone()[0])


def _one_line_error(result: Result, *needles: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert all(n in lines[0] for n in needles), lines[0]


LITERALS = {
    "tool.http header": "nodes:\n  h: {type: tool.http, inputs: {url: 'http://x'}, config: {headers: {Authorization: 'Bearer abcdefghijklmnopqrstuvwx'}}}\n",
    "nested model params": "models: {default: {model: scripted, params: {extra: {deep: [sk-proj-abcdefghijklmnopqrstuvwx]}}}}\n"
    "nodes:\n  t: {type: text.template, config: {template: hi}}\n",
    "node input": "nodes:\n  t: {type: text.template, inputs: {k: ghp_abcdefghijklmnopqrstuvwxyz0123}, config: {template: hi}}\n",
    "template text": "nodes:\n  t: {type: text.template, config: {template: 'key AKIAABCDEFGHIJKLMNOP'}}\n",
    "description": "description: 'our key is xoxb-1234567890-abcdefghij'\nnodes:\n  t: {type: text.template, config: {template: hi}}\n",
}


@pytest.mark.parametrize("name", sorted(LITERALS))
def test_literal_credentials_are_refused_with_the_env_fix(name: str, canary: Canary) -> None:
    flow = canary.root / "flow.yaml"
    flow.write_text(HEADER + LITERALS[name])
    db = canary.root / "runs.db"
    result = _cli("run", str(flow), "--db", str(db))
    _one_line_error(result, "literal API key or token", "$env.NAME")
    assert _runs(db) == 0 and canary.untouched()


class _Echo(BaseHTTPRequestHandler):
    """Answers with the request's X-Token header in the body: 500 on /fail, 200 elsewhere."""

    def do_GET(self) -> None:
        body = json.dumps({"echo": self.headers.get("X-Token", "")}).encode()
        if self.path == "/deep":
            body = b"[" * 100_000 + b"]" * 100_000
        self.send_response(500 if self.path == "/fail" else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def echo() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


HTTP = """
inputs: {url: {type: str}}
outputs: {text: $h.text}
nodes:
  h: {type: tool.http, inputs: {url: $inputs.url}, config: {allow_hosts: [127.0.0.1], headers: {X-Token: $env.ENV}}}
""".replace("ENV", SECRET_ENV)


@pytest.mark.parametrize("path", ["/fail", "/ok"])
def test_an_env_secret_reflected_by_a_server_is_masked_everywhere(path: str, canary: Canary, echo: str) -> None:
    flow = canary.root / "flow.yaml"
    flow.write_text(HEADER + HTTP)
    db = canary.root / "runs.db"
    shown = [_cli("run", str(flow), "-i", f"url={echo}{path}", "--db", str(db))]
    shown.append(_cli("run", str(flow), "-i", f"url={echo}{path}", "--db", str(db), "--json"))
    assert json.loads(shown[-1].stdout)["run_id"]
    run_id = json.loads(shown[-1].stdout)["run_id"]
    shown += [_cli("trace", run_id, "--db", str(db)), _cli("trace", run_id, "--db", str(db), "--json")]
    assert "***" in shown[-1].output, shown[-1].output
    for result in shown:
        assert SECRET not in result.output
    assert SECRET.encode() not in db.read_bytes() and canary.untouched()


def test_terminal_escapes_and_markup_from_data_are_printed_escaped(canary: Canary) -> None:
    flow = canary.root / "flow.yaml"
    text = "\\x1b]0;pwned\\x07\\x1b[2J[bold red]boom[/] \\u202e"
    flow.write_text(
        HEADER + f'outputs: {{text: $t.text}}\nnodes:\n  t: {{type: text.template, config: {{template: "{text}"}}}}\n'
    )
    result = _cli("run", str(flow), "--db", str(canary.root / "runs.db"))
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output and "\u202e" not in result.output
    assert "\\x1b]0;pwned" in result.output and "[bold red]boom[/]" in result.output


def test_a_failing_node_message_with_markup_is_not_interpreted(canary: Canary) -> None:
    flow = canary.root / "flow.yaml"
    flow.write_text(
        HEADER + "inputs: {e: {type: str}}\noutputs: {v: $c.result}\n"
        "nodes:\n  c: {type: tool.python, inputs: {expression: $inputs.e}, config: {tool: calculator}}\n"
    )
    result = _cli(
        "run", str(flow), "-i", "e=[red]x[/red] [link=file:///etc/passwd]y[/link]", "--db", str(canary.root / "r.db")
    )
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "[red]x[/red] [link=file:///etc/passwd]y[/link]" in result.output.replace("\n", "")


@pytest.mark.parametrize(
    ("flow_text", "needles"),
    [
        ("inputs: {n: {type: int, default: three}}\nnodes:\n  t: {type: text.template, config: {template: hi}}\n",
         ("inputs.n.default", "is not a int")),
        ("nodes:\n  c: {type: flow.call, config: {flow: sub}}\n", ("is a directory, not a regular file",)),
        ("nodes:\n  c: {type: flow.call, config: {flow: flow.yaml}}\n", ("in a loop", "flow.yaml -> ")),
        ("nodes:\n  c: {type: flow.call, config: {flow: /dev/zero}}\n", ("outside the project root",)),
    ],
)  # fmt: skip
def test_bad_flows_get_one_line_and_exit_2(flow_text: str, needles: tuple[str, ...], canary: Canary) -> None:
    (canary.root / "sub").mkdir()
    flow = canary.root / "flow.yaml"
    flow.write_text(HEADER + flow_text)
    db = canary.root / "runs.db"
    _one_line_error(_cli("run", str(flow), "--db", str(db)), *needles)
    assert _runs(db) == 0 and canary.untouched()


@pytest.mark.parametrize("target", ["/dev/zero", "nul\x00.yaml"])
def test_flow_paths_of_the_wrong_kind_get_one_line(target: str, canary: Canary) -> None:
    result = _cli("run", target, "--db", str(canary.root / "runs.db"))
    assert result.exit_code == 2 and "Traceback" not in result.output and "\x00" not in result.output, result.output


def test_deep_json_inputs_get_one_line(canary: Canary) -> None:
    flow = canary.root / "flow.yaml"
    flow.write_text(HEADER + "inputs: {x: {type: any}}\nnodes:\n  t: {type: text.template, config: {template: hi}}\n")
    deep = "[" * 100_000 + "]" * 100_000
    (canary.root / "deep.json").write_text(json.dumps({"x": 1})[:-1] + ', "y": ' + deep + "}")
    db = canary.root / "runs.db"
    _one_line_error(
        _cli("run", str(flow), "--inputs", str(canary.root / "deep.json"), "--db", str(db)), "nested deeper"
    )
    result = _cli("run", str(flow), "-i", "x=" + "[" * 5000 + "]" * 5000, "--db", str(db))
    assert result.exit_code == 2 and "nested deeper" in result.output and "Traceback" not in result.output
    data = canary.root / "rows.jsonl"
    data.write_text(json.dumps({"x": 1}) + "\n" + '{"x": ' + deep + "}\n")
    batch = _cli("batch", str(flow), "--data", str(data), "--db", str(db))
    assert batch.exit_code == 2 and "nested deeper" in batch.output and "Traceback" not in batch.output
    assert _runs(db) == 0


async def test_deep_json_from_a_server_or_from_code_is_refused_without_a_traceback(echo: str, canary: Canary) -> None:
    from tests.nodes.runner import run_flow

    http = "inputs: {url: {type: str}}\noutputs: {data: $h.data, size: $h.status}\nnodes:\n  h: {type: tool.http, inputs: {url: $inputs.url}, config: {allow_hosts: [127.0.0.1], max_bytes: 1000000}}\n"
    result, _ = await run_flow(http, {"url": f"{echo}/deep"})
    assert result.status == "succeeded" and result.outputs == {"data": None, "size": 200}, result.error
    code = "x = []\nfor _ in range(5000): x = [x]\nresult = x"
    flow = f"outputs: {{r: $c.result}}\nnodes:\n  c: {{type: code.python, config: {{code: {json.dumps(code)}}}}}\n"
    deep, _ = await run_flow(flow)
    assert deep.status == "failed" and "nested deeper than 64 levels" in str(deep.error)
    assert "Traceback" not in str(deep.error) and canary.untouched()
