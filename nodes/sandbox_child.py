"""The child process of `code.python`: sets its own limits, then runs the user's code.

Run as `python -I -S sandbox_child.py LIMITS_JSON OUTCOME_FD` with `{"code", "inputs"}` on
stdin, inside the bubblewrap sandbox (`sandbox.py`) or, when the user trusts the code, as a
plain child process. Only the standard library is imported before the limits are in place.
The outcome (`{"ok": true, "result": ...}` or `{"ok": false, "limit" | "error": ..., "message": ...}`)
is written to the pipe OUTCOME_FD; stdout and stderr are the user's.

Kernel limits (setrlimit): CPU seconds, address space, file size, processes, open files. An
audit hook (the second layer; the namespaces are the first) refuses sockets and DNS, new
processes, signals to others, ctypes, and the ways back into the hook itself (gc walks, frame
and code tampering). It holds everything it uses in default arguments bound at definition,
so rebinding this module's globals changes nothing; a refused operation ends the process.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import sys
import traceback
from typing import Any

_REFUSED = (
    ("network", ("socket.",)),
    ("processes", ("os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system", "subprocess.Popen")),
    ("signals", ("os.kill", "os.killpg", "signal.pthread_kill")),
    ("native code", ("ctypes.",)),
    ("introspection", ("gc.get_", "sys._current_frames", "sys.settrace", "sys.setprofile")),
)
MAX_DEPTH = 64
_REFUSED_IMPORTS = (("_posixsubprocess", "processes"), ("_ctypes", "native code"), ("_socket", "network"))


def main() -> None:
    limits = json.loads(sys.argv[1])
    outcome_fd = int(sys.argv[2])
    payload = json.loads(sys.stdin.read())
    _limit(limits)

    def finish(body: dict[str, Any], code: int = 0) -> None:
        data = json.dumps(body).encode()
        while data:
            data = data[os.write(outcome_fd, data) :]
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    def hook(
        event: str,
        args: tuple[Any, ...],
        _refused: tuple[tuple[str, tuple[str, ...]], ...] = _REFUSED,
        _imports: tuple[tuple[str, str], ...] = _REFUSED_IMPORTS,
        _fd: int = outcome_fd,
        _write: Any = os.write,
        _exit: Any = os._exit,
        _str: Any = str,
        _tamper: frozenset[str] = frozenset({"__code__", "__defaults__", "__kwdefaults__"}),
    ) -> None:
        name = _str(args[0]) if event == "import" and args else ""
        if event == "object.__setattr__" and len(args) > 1 and args[1] in _tamper:
            event = "introspection " + _str(args[1])
        for limit, prefixes in _refused:
            if event.startswith(prefixes) or (name, limit) in _imports or event.startswith(limit + " "):
                message = (event + " " + name).strip().replace("\\", "").replace('"', "")
                _write(_fd, ('{"ok": false, "limit": "' + limit + '", "message": "' + message + '"}').encode())
                _exit(3)

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
        result = json.loads(json.dumps(scope.get("result")))
        _check_depth(result)
        finish({"ok": True, "result": result})
    except RecursionError:
        finish({"ok": False, "error": "not_json", "message": f"`result` is nested deeper than {MAX_DEPTH} levels"}, 1)
    except (TypeError, ValueError) as err:
        finish({"ok": False, "error": "not_json", "message": f"`result` is not JSON data: {err}"}, 1)


def _check_depth(value: Any) -> None:
    """Raise RecursionError for JSON data nested deeper than MAX_DEPTH (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                raise RecursionError
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))


def _user_traceback(err: BaseException) -> str:
    """The traceback from the user's code on, without this runner's frame."""
    tb = err.__traceback__.tb_next if err.__traceback__ else None
    return "".join(traceback.format_exception(type(err), err, tb, limit=-8))


def _limit(limits: dict[str, int]) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"], limits["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["output_bytes"], limits["output_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # ignored for root; seccomp and the audit hook cover that


if __name__ == "__main__":
    main()
