"""The child process of `code.python`: sets its own limits, then runs the user's code.

Run as `python -I -S sandbox_child.py LIMITS_JSON OUTCOME_PATH` with `{"code", "inputs"}` on
stdin. Only the standard library is imported before the limits are in place. The outcome
(`{"ok": true, "result": ...}` or `{"ok": false, "limit" | "error": ..., "message": ...}`)
is written to OUTCOME_PATH; stdout and stderr are the user's.

Kernel limits (setrlimit): CPU seconds, address space, file size, processes. An audit hook
refuses what needs no counting: sockets and DNS, new processes, signals to others, ctypes.
A refused operation ends the process at once, so user code cannot catch and ignore it.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import sys
import traceback
from typing import Any

_REFUSED = {
    "network": ("socket.",),
    "processes": ("os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system", "subprocess.Popen"),
    "signals": ("os.kill", "os.killpg", "signal.pthread_kill"),
    "native code": ("ctypes.",),
}
_REFUSED_IMPORTS = {"_posixsubprocess": "processes", "_ctypes": "native code", "_socket": "network"}


def main() -> None:
    limits = json.loads(sys.argv[1])
    outcome = open(sys.argv[2], "w", encoding="utf-8")  # noqa: SIM115 - opened before the hook, written at the end
    payload = json.loads(sys.stdin.read())
    _limit(limits)

    def finish(body: dict[str, Any], code: int = 0) -> None:
        outcome.write(json.dumps(body))
        outcome.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        name = str(args[0]) if event == "import" and args else None
        for limit, prefixes in _REFUSED.items():
            if event.startswith(prefixes) or (name is not None and _REFUSED_IMPORTS.get(name) == limit):
                finish({"ok": False, "limit": limit, "message": f"{event} {name or ''}".strip()}, 3)

    sys.addaudithook(hook)
    inputs = payload["inputs"]
    scope: dict[str, Any] = {"__name__": "__main__", "inputs": inputs, **inputs}
    try:
        exec(compile(payload["code"], "<code>", "exec"), scope)
    except MemoryError:
        finish({"ok": False, "limit": "memory", "message": "MemoryError"}, 2)
    except OSError as err:
        if err.errno == errno.EFBIG:
            finish({"ok": False, "limit": "file size", "message": str(err)}, 2)
        finish({"ok": False, "error": "exception", "message": _user_traceback(err)}, 1)
    except BaseException as err:
        finish({"ok": False, "error": "exception", "message": _user_traceback(err)}, 1)
    try:
        finish({"ok": True, "result": json.loads(json.dumps(scope.get("result")))})
    except (TypeError, ValueError) as err:
        finish({"ok": False, "error": "not_json", "message": f"`result` is not JSON data: {err}"}, 1)


def _user_traceback(err: BaseException) -> str:
    """The traceback from the user's code on, without this runner's frame."""
    tb = err.__traceback__.tb_next if err.__traceback__ else None
    return "".join(traceback.format_exception(type(err), err, tb, limit=-8))


def _limit(limits: dict[str, int]) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"], limits["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["output_bytes"], limits["output_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # ignored for root; the audit hook covers that


if __name__ == "__main__":
    main()
