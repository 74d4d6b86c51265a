"""code.python is hostile: every escape is refused or contained, and the canary says nothing ran.

Each case runs real code in the real sandbox (bubblewrap); each asserts the refusal or the
containment, then that the parent's secret did not come back, that no file outside changed
or appeared, and that the listener on 127.0.0.1 was never reached.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from nodes import sandbox
from studio.errors import FlowError
from studio.runtime.engine import RunResult
from studio.store import MemoryStore
from tests.nodes.runner import run_flow
from tests.security.conftest import SECRET, Canary, Listener

pytestmark = pytest.mark.skipif(sandbox.check() is not None, reason=f"no sandbox here: {sandbox.check()}")

FLOW = """
inputs:
  pid: {type: int}
  port: {type: int}
  secret_file: {type: str}
  store: {type: str}
  target: {type: str}
outputs: {result: $code.result, stdout: $code.stdout}
nodes:
  code:
    type: code.python
    inputs: {pid: $inputs.pid, port: $inputs.port, secret_file: $inputs.secret_file, store: $inputs.store, target: $inputs.target}
    config: CONFIG
"""


async def _attack(code: str, canary: Canary, listener: Listener, **limits: Any) -> tuple[RunResult, MemoryStore]:
    config = json.dumps({"code": code, "cpu_s": 2, "wall_s": 10, "memory_mb": 256, "output_kb": 64, **limits})
    inputs = {
        "pid": os.getpid(),
        "port": listener.port,
        "secret_file": str(canary.secret_file),
        "store": str(canary.store),
        "target": str(canary.target),
    }
    return await run_flow(FLOW.replace("CONFIG", config), inputs, path=canary.root / "flow.yaml")


def _nothing_leaked(result: RunResult, store: MemoryStore, canary: Canary, listener: Listener) -> None:
    seen = json.dumps([result.outputs, result.error, [s.outputs for s in store.steps(result.run_id)]])
    assert SECRET not in seen
    assert canary.untouched()
    assert listener.connections == 0


def _tried(body: str) -> str:
    """Code that runs `body` and reports what came of it as `result` (never raising)."""
    indented = "\n".join("    " + line for line in body.splitlines())
    return f"try:\n{indented}\nexcept BaseException as err:\n    got = f'{{type(err).__name__}}: {{err}}'\nresult = {{'got': str(got)[:2000]}}\n"


# Each: what the code tries; what must have come of it (in `result.got`, or the node's refusal).
CONTAINED = {
    "parent environ": ("got = open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace')", "Error"),
    "init environ": ("got = open('/proc/1/environ', 'rb').read().decode(errors='replace') or 'EMPTY'", "EMPTY"),
    "own environment": ("import os\ngot = dict(os.environ)", "'PWD'"),
    "secret file by path": ("got = open(secret_file).read()", "FileNotFoundError"),
    "store with sqlite3": (
        "import sqlite3\ngot = sqlite3.connect(f'file:{store}?mode=ro', uri=True).execute('select * from secrets').fetchall()",
        "OperationalError",
    ),
    "write a canary outside": ("open(target, 'w').write('pwned')\ngot = 'wrote'", "Error"),
    "write the interpreter's prefix": (
        "import os, sys\nopen(os.path.join(sys.base_prefix, 'pwned'), 'w').write('x')\ngot = 'wrote'",
        "Read-only file system",
    ),
    "/etc/passwd": ("got = open('/etc/passwd').read()", "FileNotFoundError"),
    "home and project folders": (
        "import os\ngot = [p for p in ('/home', '/work', os.path.dirname(secret_file), os.path.dirname(store)) if os.path.exists(p)]",
        "[]",
    ),
    "host processes in /proc": ("import os\ngot = sorted(p for p in os.listdir('/proc') if p.isdigit())", "['1', '2']"),
    "uid": ("import os\ngot = (os.getuid(), os.getgid())", "(65534, 65534)"),
    "hostname": ("import os\ngot = os.uname().nodename", "sandbox"),
}


@pytest.mark.parametrize("name", sorted(CONTAINED))
async def test_escapes_are_contained(name: str, canary: Canary, listener: Listener) -> None:
    body, expected = CONTAINED[name]
    result, store = await _attack(_tried(body), canary, listener)
    assert result.status == "succeeded", result.error
    got = result.outputs["result"]["got"] if result.outputs else ""
    assert expected in got, got
    _nothing_leaked(result, store, canary, listener)


REFUSED = {
    "socket to the listener": (
        "import socket\nsocket.create_connection(('127.0.0.1', port), timeout=1)",
        "network not allowed",
    ),
    "os.system writes a canary": ("import os\nos.system(f'touch {target}')", "processes not allowed"),
    "fork bomb": ("import os\nwhile True: os.fork()", "processes not allowed"),
    "subprocess": ("import subprocess\nsubprocess.run(['/bin/sh', '-c', f'touch {target}'])", "processes not allowed"),
    "kill the engine": ("import os, signal\nos.kill(pid, signal.SIGKILL)", "signals not allowed"),
    "ctypes": ("import ctypes\nctypes.CDLL(None).system(b'true')", "native code not allowed"),
    "clear the hook's lists, then os.system": (
        "import sys\nm = sys.modules['__main__']\n"
        "for name in [n for n in vars(m) if n.startswith('_REFUSED')]:\n    setattr(m, name, ())\n"
        "import os\nos.system(f'touch {target}')",
        "processes not allowed",
    ),
    "find the hook with gc": ("import gc\n[o for o in gc.get_objects() if callable(o)]", "introspection not allowed"),
    "swap the hook's code": (
        "import sys\nf = sys._getframe(1)\nhook = f.f_locals.get('hook') or (lambda: None)\nhook.__code__ = (lambda e, a: None).__code__",
        "introspection not allowed",
    ),
    "swap the hook's defaults": (
        "import sys\nhook = sys._getframe(1).f_locals['hook']\nhook.__defaults__ = ((), (), 1, print, print, str, frozenset())",
        "introspection not allowed",
    ),
    "trace the hook": ("import sys\nsys.settrace(lambda *a: None)", "introspection not allowed"),
    "memory bomb": ("x = bytearray(8 * 1024 ** 3)", "memory limit (256 MiB) exceeded"),
    "CPU burn": ("while True: pass", "CPU time limit (1 s) exceeded"),
    "disk fill": ("open('/tmp/fill', 'wb').write(b'x' * 50_000_000)", "output limit (64 KiB) exceeded (file write)"),
    "sleep past the wall time": ("import time\ntime.sleep(60)", "wall time limit (1 s) exceeded"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
async def test_escapes_are_refused(name: str, canary: Canary, listener: Listener) -> None:
    code, message = REFUSED[name]
    limits = {"wall_s": 1} if "wall time" in message else {"cpu_s": 1, "wall_s": 60} if "CPU" in message else {}
    result, store = await _attack(code, canary, listener, **limits)
    assert result.status == "failed" and message in str(result.error), result.error
    assert store.steps(result.run_id)[0].error_kind == "limit"
    _nothing_leaked(result, store, canary, listener)


async def test_a_flow_cannot_lower_its_own_sandbox(canary: Canary, listener: Listener) -> None:
    config = json.dumps({"code": f"open({str(canary.target)!r}, 'w').write('x')", "trusted": True})
    with pytest.raises(FlowError, match=r"trusted"):
        await run_flow(FLOW.replace("CONFIG", config), {}, path=canary.root / "flow.yaml")
    assert canary.untouched() and listener.connections == 0


async def test_without_bubblewrap_code_python_refuses_naming_the_package(
    canary: Canary, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sandbox.BWRAP_ENV, str(canary.root / "no-bwrap"))
    result, store = await _attack(f"open({str(canary.target)!r}, 'w').write('x')", canary, listener)
    assert result.status == "failed" and "install the Debian package `bubblewrap`" in str(result.error)
    assert store.steps(result.run_id)[0].error_kind == "sandbox_unavailable"
    _nothing_leaked(result, store, canary, listener)


async def test_trusted_mode_is_the_users_choice_and_still_limited(
    canary: Canary, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sandbox.BWRAP_ENV, str(canary.root / "no-bwrap"))
    monkeypatch.setenv(sandbox.TRUST_ENV, "1")
    result, _ = await _attack("import os\nresult = sorted(os.environ)", canary, listener)
    assert result.outputs and result.outputs["result"] == ["LC_ALL"], result.error
    bomb, bomb_store = await _attack("import os\nos.fork()", canary, listener)
    assert "processes not allowed" in str(bomb.error)
    _nothing_leaked(bomb, bomb_store, canary, listener)


def _bare(code: str) -> tuple[int, str]:
    """Run `code` in the bare OS layer (bubblewrap + seccomp, no audit hook, no rlimits)."""
    import subprocess

    fd = sandbox.seccomp_fd()
    try:
        args = [*sandbox._launcher(fd), "-c", code]
        done = subprocess.run(args, env={}, capture_output=True, text=True, timeout=30, pass_fds=(fd,) if fd else ())
    finally:
        if fd is not None:
            os.close(fd)
    return done.returncode, done.stdout + done.stderr


OS_LAYER = {
    "fork": (
        "import os\ntry:\n    os.fork(); print('forked')\nexcept OSError as e: print(e)",
        "Operation not permitted",
    ),
    "exec a shell": ("import os\nos.execv('/bin/sh', ['sh', '-c', 'echo shell'])", "No such file"),
    "connect to the listener": (
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', PORT), timeout=1); print('connected')\nexcept OSError as e: print(e)",
        "[Errno",
    ),
    "parent environ": ("import os\nprint(os.path.exists('/proc/PID'))", "False"),
    "store": ("import os\nprint(os.path.exists('STORE'))", "False"),
    "write outside": ("try:\n    open('TARGET', 'w')\nexcept OSError as e: print(e)", "No such file"),
    "write the root": ("try:\n    open('/pwned', 'w')\nexcept OSError as e: print(e)", "Read-only file system"),
}


@pytest.mark.parametrize("name", sorted(OS_LAYER))
def test_the_os_layer_alone_contains_code_the_audit_hook_never_saw(
    name: str, canary: Canary, listener: Listener
) -> None:
    code, expected = OS_LAYER[name]
    code = code.replace("PORT", str(listener.port)).replace("PID", str(os.getpid()))
    code = code.replace("STORE", str(canary.store)).replace("TARGET", str(canary.target))
    _, output = _bare(code)
    assert expected in output and "forked" not in output and "connected" not in output, output
    assert SECRET not in output
    assert canary.untouched() and listener.connections == 0


def test_the_sandbox_sees_only_the_interpreter_and_libraries() -> None:
    _, output = _bare("import os\nprint(sorted(os.listdir('/')))")
    allowed = {"dev", "etc", "flowstudio", "lib", "lib64", "proc", "tmp", "usr", "root", "opt", "bin", "sbin"}
    top = set(json.loads(output.strip().replace("'", '"')))
    assert top <= allowed, top
    prefix = Path(os.path.realpath(__import__("sys").base_prefix))
    if str(prefix).startswith("/root/"):
        _, listing = _bare("import os\nprint(os.listdir('/root'))")
        assert listing.strip() == f"[{prefix.parts[2]!r}]"
