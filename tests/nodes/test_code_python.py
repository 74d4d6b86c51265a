"""code.python: results and output; hostile code stopped by its limit, named, quickly; other runs unaffected."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from tests.nodes.runner import run_flow

FLOW = """
inputs: {n: {type: int, default: 3}}
outputs: {result: $code.result, stdout: $code.stdout}
nodes:
  code:
    type: code.python
    inputs: {n: $inputs.n}
    config: CONFIG
"""


def _config(code: str, **limits: object) -> str:
    return json.dumps({"code": code, "cpu_s": 1, "wall_s": 5, "memory_mb": 256, "output_kb": 64, **limits})


async def test_inputs_in_result_and_stdout_out() -> None:
    code = "import math\nprint('squaring', n)\nresult = {'square': n * n, 'root': math.sqrt(inputs['n'])}"
    result, _ = await run_flow(FLOW.replace("CONFIG", _config(code)), {"n": 4})
    assert result.outputs == {"result": {"square": 16, "root": 2.0}, "stdout": "squaring 4\n"}, result.error


@pytest.mark.parametrize(
    ("name", "code", "limits", "message"),
    [
        ("fork bomb", "import os\nwhile True: os.fork()", {}, "processes not allowed in code.python (os.fork)"),
        ("subprocess", "import subprocess\nsubprocess.run(['sh', '-c', 'echo hi'])", {}, "processes not allowed"),
        ("while True", "while True: pass", {}, "CPU time limit (1 s) exceeded"),
        ("10 GB allocation", "x = bytearray(10 * 1024 ** 3)", {}, "memory limit (256 MiB) exceeded"),
        ("socket connection", "import socket\nsocket.create_connection(('10.0.0.1', 80))", {}, "network not allowed"),
        (
            "socket caught and ignored",
            "import socket\ntry:\n    socket.socket()\nexcept Exception:\n    pass",
            {},
            "network not allowed",
        ),
        (
            "100 MB of output",
            "import sys\nfor _ in range(1000): sys.stdout.write('x' * 100_000)",
            {},
            "output limit (64 KiB) exceeded",
        ),
        ("a large file", "open('big', 'w').write('x' * 10_000_000)", {}, "output limit (64 KiB) exceeded (file write)"),
        (
            "sleeping past the wall time",
            "import time\ntime.sleep(30)",
            {"wall_s": 0.5},
            "wall time limit (0.5 s) exceeded",
        ),
        ("killing the parent", "import os\nos.kill(os.getppid(), 9)", {}, "signals not allowed"),
    ],
)
async def test_hostile_code_is_stopped_by_its_limit(
    name: str, code: str, limits: dict[str, object], message: str
) -> None:
    start = time.perf_counter()
    result, store = await run_flow(FLOW.replace("CONFIG", _config(code, **limits)))
    assert result.status == "failed" and message in str(result.error), result.error
    assert store.steps(result.run_id)[0].error_kind == "limit"
    assert time.perf_counter() - start < 10


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("result = 1 / 0", "ZeroDivisionError: division by zero"),
        ("result = object()", "`result` is not JSON data"),
        ("import os\nresult = os.environ['HOME']", "KeyError: 'HOME'"),
    ],
)
async def test_errors_in_the_code(code: str, message: str) -> None:
    result, store = await run_flow(FLOW.replace("CONFIG", _config(code)))
    assert result.status == "failed" and message in str(result.error), result.error
    assert 'File "<code>", line' in str(result.error) or "JSON" in message
    assert store.steps(result.run_id)[0].error_kind == "code_error"


async def test_a_hostile_run_leaves_other_runs_alone() -> None:
    bomb = run_flow(FLOW.replace("CONFIG", _config("import os\nwhile True: os.fork()")))
    spin = run_flow(FLOW.replace("CONFIG", _config("while True: pass")))
    good = run_flow(FLOW.replace("CONFIG", _config("result = n + 1")), {"n": 41})
    (bombed, _), (spun, _), (fine, _) = await asyncio.gather(bomb, spin, good)
    assert bombed.status == spun.status == "failed"
    assert fine.outputs == {"result": 42, "stdout": ""}
