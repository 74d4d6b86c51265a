"""The OS sandbox of `code.python`: a bubblewrap command line, a seccomp filter, the trust switch.

The child runs in new user, network, PID, IPC, UTS and mount namespaces as uid/gid 65534,
with an empty environment, a fresh /proc of its own PID namespace, a minimal /dev, a private
size-capped tmpfs as its working directory, and read-only binds of only what the interpreter
needs: its prefix (or, for a system Python, the interpreter and its standard library) and
the shared-library directories. The project, the store, home directories and the host's
/proc are not in its view. A seccomp filter refuses new processes (fork, vfork, clone
without CLONE_THREAD) in the kernel, whatever user the engine runs as; the child sets its
own rlimits before any user code runs, and an audit hook inside is a second layer.

Where bubblewrap is missing or cannot create namespaces, code.python refuses to run unless
the user trusts the code (`--trust-code` on run/batch, or FLOWSTUDIO_TRUST_CODE=1); a flow
file can never choose that.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path

TRUST_ENV = "FLOWSTUDIO_TRUST_CODE"
BWRAP_ENV = "FLOWSTUDIO_BWRAP"
"""Where bubblewrap is, when not on the usual path (tests point it at a missing file)."""
CHILD = Path(__file__).with_name("sandbox_child.py")
INSIDE_CHILD = "/flowstudio/child.py"
SANDBOX_UID = 65534
TMPFS_BYTES = 64 << 20
INSTALL_HINT = (
    "code.python needs bubblewrap for its sandbox: install the Debian package `bubblewrap` "
    "(apt-get install bubblewrap), or trust this flow's code with `--trust-code` / FLOWSTUDIO_TRUST_CODE=1"
)
_LIBRARY_DIRS = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib")

# seccomp BPF: (syscall numbers of fork, vfork, clone, clone3 or None, audit arch) per machine.
_ARCH = {"x86_64": (57, 58, 56, 435, 0xC000003E), "aarch64": (None, None, 220, 435, 0xC00000B7)}
_CLONE_THREAD = 0x00010000
_X32_BIT = 0x40000000
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38


class SandboxUnavailable(Exception):
    """bubblewrap is missing or cannot create namespaces here."""


def trusted() -> bool:
    """Whether the user chose to run code.python without the OS sandbox."""
    return os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes")


def interpreter() -> str:
    """The real Python binary (a virtualenv's python is a link to it; the child needs no venv)."""
    return os.path.realpath(sys.executable)


def _binds() -> list[str]:
    """Read-only binds (and links) for the interpreter, its standard library and shared libraries."""
    args: list[str] = []
    for directory in _LIBRARY_DIRS:
        path = Path(directory)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), directory]
        elif path.is_dir():
            args += ["--ro-bind", directory, directory]
    if Path("/etc/ld.so.cache").is_file():
        args += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    prefix = os.path.realpath(sys.base_prefix)
    exe = interpreter()
    if prefix not in ("/", "/usr", "/usr/local") and exe.startswith(prefix + os.sep):
        return [*args, "--ro-bind", prefix, prefix]
    paths = sysconfig.get_paths()
    needed = {exe, os.path.realpath(paths["stdlib"]), os.path.realpath(paths["platstdlib"])}
    for needed_path in sorted(needed):
        if not any(needed_path.startswith(d + os.sep) for d in _LIBRARY_DIRS if Path(d).is_dir()):
            args += ["--ro-bind", needed_path, needed_path]
    return args


def bwrap_path() -> str | None:
    """The bubblewrap binary: $FLOWSTUDIO_BWRAP when set, else `bwrap` on the system or user PATH."""
    given = os.environ.get(BWRAP_ENV)
    if given:
        return given if os.access(given, os.X_OK) and os.path.isfile(given) else None
    return shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin:" + os.environ.get("PATH", ""))


def command(limits_json: str, outcome_fd: int, filter_fd: int | None) -> list[str]:
    """The full bwrap command line; the child writes its outcome to `outcome_fd`."""
    return [*_launcher(filter_fd), "-B", INSIDE_CHILD, limits_json, str(outcome_fd)]


def _launcher(filter_fd: int | None) -> list[str]:
    """bwrap and its options, up to and including the interpreter with -I -S."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise SandboxUnavailable(INSTALL_HINT)
    args = [bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--clearenv"]
    args += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox"]
    args += _binds()
    args += ["--ro-bind", str(CHILD), INSIDE_CHILD, "--proc", "/proc", "--dev", "/dev"]
    args += ["--size", str(TMPFS_BYTES), "--tmpfs", "/tmp", "--remount-ro", "/", "--chdir", "/tmp"]
    if filter_fd is not None:
        args += ["--seccomp", str(filter_fd)]
    return [*args, "--", interpreter(), "-I", "-S"]


@functools.cache
def seccomp_filter() -> bytes:
    """A BPF program refusing new processes (threads stay allowed); empty on unknown machines."""
    numbers = _ARCH.get(platform.machine())
    if numbers is None:
        return b""
    fork, vfork, clone, clone3, arch = numbers
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    refuse = ret, 0, 0, _RET_ERRNO | _EPERM
    # Another ABI (i386 through int 0x80, x32 numbers) is refused whole: Python never uses one.
    program: list[tuple[int, int, int, int]] = [(ld, 0, 0, 4), (jeq, 1, 0, arch), refuse]
    program += [(ld, 0, 0, 0), (jge, 0, 1, _X32_BIT), refuse]
    if fork is not None and vfork is not None:
        program += [(jeq, 0, 1, fork), refuse, (jeq, 0, 1, vfork), refuse]
    program += [(jeq, 0, 1, clone3), (ret, 0, 0, _RET_ERRNO | _ENOSYS)]
    program += [(jeq, 0, 3, clone), (ld, 0, 0, 16), (jset, 1, 0, _CLONE_THREAD), refuse]
    program += [(ret, 0, 0, _RET_ALLOW)]
    return b"".join(struct.pack("<HBBI", *instruction) for instruction in program)


def seccomp_fd() -> int | None:
    """A memfd holding the filter, for bwrap to read; the caller closes it."""
    program = seccomp_filter()
    if not program:
        return None
    fd = os.memfd_create("flowstudio-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def check() -> str | None:
    """Why the sandbox cannot run here (probed once per process and bwrap), or None when it can."""
    return _probe(bwrap_path())


@functools.cache
def _probe(bwrap: str | None) -> str | None:
    if bwrap is None:
        return INSTALL_HINT
    fd = seccomp_fd()
    try:
        probe = [*_launcher(fd), "-c", "pass"]
        done = subprocess.run(probe, env={}, capture_output=True, timeout=30, pass_fds=() if fd is None else (fd,))
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bubblewrap cannot start here ({err}); {INSTALL_HINT}"
    finally:
        if fd is not None:
            os.close(fd)
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        reason = lines[-1] if lines else f"exit code {done.returncode}"
        return f"bubblewrap cannot create its namespaces here ({reason}); {INSTALL_HINT}"
    return None
