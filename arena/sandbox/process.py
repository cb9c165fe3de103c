"""The ``process`` backend: each bot is a child process in its own session, under rlimits, with a minimal
environment and a private scratch directory; killing it sweeps every process that descends from it.

The runner makes itself a child subreaper, so a bot's double-forked daemons are reparented to us rather than to
init, where the sweep finds and reaps them.
"""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from arena.manifest import BotSpec
from arena.sandbox import PROTOCOL_LIB, BotProcess, Exit, Sandbox, SandboxError, SandboxLimits, Stream

PR_SET_CHILD_SUBREAPER = 36
READ_CHUNK = 1 << 16
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def become_subreaper() -> bool:
    """Make orphans of our descendants our children (Linux); False where the kernel refuses."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, pgid, session) of a live process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    return int(fields[1]), int(fields[2]), int(fields[3])


def _all_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def bot_environment(scratch: Path) -> dict[str, str]:
    """The whole environment a bot gets: nothing of the referee's own variables leaks through."""
    return {
        "PATH": SYSTEM_PATH,
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(PROTOCOL_LIB),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }


def _rlimits(limits: SandboxLimits) -> list[tuple[int, tuple[int, int]]]:
    mib = 1 << 20
    return [
        # Soft below hard, so an overrun first sends SIGXCPU, which we report as a limit rather than a crash.
        (resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 2)),
        # RLIMIT_DATA, not RLIMIT_AS: JIT runtimes (V8, the JVM) reserve gigabytes of address space they never touch.
        (resource.RLIMIT_DATA, (limits.memory_mb * mib, limits.memory_mb * mib)),
        (resource.RLIMIT_FSIZE, (limits.file_mb * mib, limits.file_mb * mib)),
        (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),
        (resource.RLIMIT_CORE, (0, 0)),
    ]


class ProcessBot(BotProcess):
    def __init__(self, popen: subprocess.Popen[bytes], scratch: Path, limits: SandboxLimits) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.scratch = scratch
        self.limits = limits
        assert popen.stdin and popen.stdout and popen.stderr
        self._stdin: int | None = popen.stdin.fileno()
        self._streams: dict[int, Stream] = {popen.stdout.fileno(): "stdout", popen.stderr.fileno(): "stderr"}
        for fd in (self._stdin, *self._streams):
            os.set_blocking(fd, False)
        self._exit: Exit | None = None
        self._killed = False

    def read_fds(self) -> list[int]:
        return list(self._streams)

    def read(self, fd: int) -> list[tuple[Stream, bytes]]:
        stream = self._streams[fd]
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return []
        except OSError:
            data = b""
        if not data:
            del self._streams[fd]
        return [(stream, data)]

    def write_fd(self) -> int | None:
        return self._stdin

    def write(self, data: bytes | memoryview) -> int:
        if self._stdin is None:
            raise BrokenPipeError("stdin closed")
        try:
            return os.write(self._stdin, data)
        except BlockingIOError:
            return 0

    def close_stdin(self) -> None:
        if self._stdin is not None:
            assert self.popen.stdin
            try:
                self.popen.stdin.close()
            except OSError:
                pass  # a bot that stopped reading leaves unflushed bytes behind; they do not matter now
            self._stdin = None

    def poll(self) -> Exit | None:
        if self._exit is None and self.popen.poll() is not None:
            self._exit = self._describe(self.popen.returncode)
        return self._exit

    def _describe(self, returncode: int) -> Exit:
        if returncode >= 0:
            return Exit(returncode)
        signum = -returncode
        limit = {signal.SIGXCPU: "cpu time", signal.SIGXFSZ: "file size"}.get(signal.Signals(signum))
        return Exit(None, signum, limit)

    def kill(self) -> Exit:
        if not self._killed:
            self._killed = True
            exit_before = self.poll()
            _kill_tree(self.pid or 0)
            self.popen.wait()
            _OUR_CHILDREN.discard(self.popen.pid)
            self._exit = exit_before or self._describe(self.popen.returncode)
            self.close_stdin()
            self._streams.clear()  # the pipe objects below own these descriptors
            for pipe in (self.popen.stdout, self.popen.stderr):
                if pipe is not None:
                    pipe.close()
            shutil.rmtree(self.scratch, ignore_errors=True)
        assert self._exit is not None
        return self._exit


def _kill_tree(root: int) -> None:
    """SIGKILL ``root``, its process group and session, and every descendant, including orphans reparented to us.

    Repeated until nothing is found, because a fork bomb can fork between our scan and our kill.
    """
    me = os.getpid()
    session = root  # the bot was started with start_new_session, so its pid is its session and group id
    for _ in range(50):
        found = []
        parents: dict[int, int] = {}
        for pid in _all_pids():
            info = _stat(pid)
            if info is None or pid == me:
                continue
            ppid, pgid, sid = info
            parents[pid] = ppid
            if pid == root or pgid == session or sid == session:
                found.append(pid)
        # Descendants that left the session (setsid) are still descendants, or orphans now parented to us.
        marked = set(found)
        changed = True
        while changed:
            changed = False
            for pid, ppid in parents.items():
                if pid not in marked and ppid in marked:
                    marked.add(pid)
                    changed = True
        orphans = [pid for pid, ppid in parents.items() if ppid == me and pid not in marked and _is_orphan(pid)]
        targets = (marked | set(orphans)) - {me}
        live = [pid for pid in targets if _stat(pid) is not None and not _is_zombie(pid)]
        for pid in live:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        _reap_orphans(exclude=root)
        if not live:
            return
        time.sleep(0.005)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return True
    return data[data.rindex(b")") + 2 : data.rindex(b")") + 3] == b"Z"


_OUR_CHILDREN: set[int] = set()
"""Pids of bots this process launched itself (their Popen objects reap them); anything else parented to us is an
orphan that a bot left behind."""


def _is_orphan(pid: int) -> bool:
    return pid not in _OUR_CHILDREN


def _reap_orphans(exclude: int) -> None:
    me = os.getpid()
    for pid in _all_pids():
        info = _stat(pid)
        if info and info[0] == me and pid != exclude and pid not in _OUR_CHILDREN:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


class ProcessSandbox(Sandbox):
    """Plain child processes under rlimits (no namespaces yet: for trusted bots only)."""

    name = "process"

    def __init__(self) -> None:
        self.subreaper = become_subreaper()

    def launch(self, bot: BotSpec, limits: SandboxLimits) -> BotProcess:
        try:
            scratch = Path(tempfile.mkdtemp(prefix=f"arena-{bot.name}-"))
        except OSError as error:
            raise SandboxError(f"cannot create a scratch directory: {error}") from error
        rlimits = _rlimits(limits)

        def in_child() -> None:
            for which, values in rlimits:
                resource.setrlimit(which, values)

        try:
            popen = subprocess.Popen(
                list(bot.command),
                cwd=bot.directory,
                env=bot_environment(scratch),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=in_child,
                close_fds=True,
            )
        except (FileNotFoundError, PermissionError, OSError) as error:
            shutil.rmtree(scratch, ignore_errors=True)
            return FailedBot(f"could not start {' '.join(bot.command)!r}: {error.strerror or error}")
        _OUR_CHILDREN.add(popen.pid)
        return ProcessBot(popen, scratch, limits)


class FailedBot(BotProcess):
    """A bot whose command could not even start: it reads as a process that exited at once, with the reason on
    stderr, so the referee reports a ``crash`` fault like any other."""

    def __init__(self, reason: str) -> None:
        self.reason = reason.encode() + b"\n"
        self._read, self._write = os.pipe()
        os.write(self._write, self.reason)
        os.close(self._write)
        self._open = True

    def read_fds(self) -> list[int]:
        return [self._read] if self._open else []

    def read(self, fd: int) -> list[tuple[Stream, bytes]]:
        data = os.read(fd, READ_CHUNK)
        if not data:
            self._open = False
            return [("stderr", b""), ("stdout", b"")]
        return [("stderr", data)]

    def write_fd(self) -> int | None:
        return None

    def write(self, data: bytes | memoryview) -> int:
        raise BrokenPipeError("bot never started")

    def close_stdin(self) -> None:
        pass

    def poll(self) -> Exit | None:
        return Exit(127)

    def kill(self) -> Exit:
        if self._open:
            os.close(self._read)
            self._open = False
        return Exit(127)
