"""What every backend shares: where things appear inside a sandbox, the environment a bot gets, the host runtime
that is made visible to it, how a fatal signal names a limit, and the stand-in for a bot that never started.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from arena.resources import data_dir
from arena.sandbox import BotProcess, Exit, Stream

PROTOCOL_LIB = data_dir("protocol")
"""``protocol/`` holds ``arena_bot.py``, which every bot finds on its PYTHONPATH."""
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
BOT_DIR = "/bot"
"""Where the bot's own directory appears (read-only, the working directory) inside the sandbox."""
PROTOCOL_DIR = "/protocol"
SCRATCH_DIR = "/tmp"
"""The bot's size-capped private tmpfs inside the sandbox (also HOME and TMPDIR)."""
RUNTIME_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
RUNTIME_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime",
               *sorted(str(path) for path in Path("/etc").glob("java-*-openjdk")))
"""The few files of /etc that interpreters read; never the whole of the host's /etc. Debian's OpenJDK keeps its
``java.security`` and ``jvm.cfg`` in ``/etc/java-N-openjdk``, without which neither java nor javac starts."""
RUNTIME_EXTRA_ETC = ("/etc/ssl",)
"""Bound in the docker backend's containers besides :data:`RUNTIME_ETC`: CA certificates, harmless and wanted by TLS
libraries at import time."""
READ_CHUNK = 1 << 16
SIGNAL_LIMITS = {int(signal.SIGXCPU): "cpu time", int(signal.SIGXFSZ): "file size"}
"""The signals the kernel sends for an exceeded rlimit (soft below hard), as the limit's name in a fault."""


class Every:
    """True at most once per ``period_s`` (monotonic time), whichever thread asks: the pace of a sweep for what a
    killed runner left behind, which launches run because nothing else runs on every host."""

    def __init__(self, period_s: float) -> None:
        self.period_s = period_s
        self._last = float("-inf")
        self._lock = threading.Lock()

    def due(self) -> bool:
        with self._lock:
            now = time.monotonic()
            if now - self._last < self.period_s:
                return False
            self._last = now
            return True

    def reset(self) -> None:
        """The next :meth:`due` is true (for tests)."""
        with self._lock:
            self._last = float("-inf")


def bot_environment(scratch: Path | str, protocol: Path | str = PROTOCOL_LIB) -> dict[str, str]:
    """The whole environment a bot gets: nothing of the referee's own variables leaks through."""
    return {
        "PATH": SYSTEM_PATH,
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(protocol),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }


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

    def write(self, data: bytes | bytearray | memoryview) -> int:
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
