"""A docker bot's stdin, stdout and stderr as named pipes on the host: its per-turn traffic off the engine's relay.

Through the attach socket every line a bot reads or writes passes dockerd and the container's shim (0.25-0.41 ms a
referee turn against 0.09 ms for a pipe; docs/PERFORMANCE.md, "Docker backend"). Where the engine sees this host's
files (a local dockerd in our mount namespace), each container of the runtime image instead gets a directory of
its own, :data:`IO_ROOT`/<runner's sandbox>/<container>, holding three FIFOs, ``in``, ``out`` and ``err``; it is
bind-mounted read-only at :data:`IO_DIR` into that container only, and a shell there (:data:`COLD_SCRIPT`,
:data:`WARM_SCRIPT`) opens them as the bot's stdin, stdout and stderr before it becomes the bot. stdout and
stderr on FIFOs of their own arrive as they do from the process backend's pipes, stderr not behind stdout (a
move's debug lines are logged at that move: docs/SITE.md). The attach socket still tells the container's end.

The directories: :data:`IO_ROOT` and each sandbox's directory in it are the runner's, mode 0700, so no other user
of the host reaches them; a container sees its own directory only, read-only (it can neither make nor replace
files there), with FIFOs only the container's user and the runner may open. A directory is removed with its
container, a sandbox's with the sandbox, and those of a runner that is gone by the next sweep
(:func:`sweep_stale`), from the owner each sandbox's directory names (:attr:`arena.procfs.Owner.tag`).

Two details make a FIFO read like the pipe the process backend gives. A reader of a FIFO that no writer has opened
yet reads end of file: the runner holds writers of ``out`` and ``err`` of its own (``placeholders``) until the
shell's first byte (:data:`MARKER`, written once it has opened all three, before the bot runs) shows the
container's writers are there, or the container ends. And the shell's open of ``in`` waits for a writer: the
runner opens ``in`` for reading and writing, which never waits; the bot sees end of file on its stdin when the
runner closes it.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from arena import procfs
from arena.sandbox.common import READ_CHUNK

LOGGER = logging.getLogger(__name__)

IO_ROOT = Path("/dev/shm/arena-io")
"""Where the runner makes each container's FIFO directory (beside :data:`arena.sandbox.views.VIEWS`)."""
IO_DIR = "/run/arena-io"
"""Where a container sees its own FIFO directory."""
MARKER = b"\n"
"""What the shell writes on ``out`` once it has opened it, before the bot runs: the runner drops it."""
BOT_UID = 65534
_OPEN = f"exec <{IO_DIR}/in >{IO_DIR}/out 2>{IO_DIR}/err || exit 126; echo; "
COLD_SCRIPT = _OPEN + 'exec "$@"'
"""What a container with FIFOs runs: open them as stdin, stdout and stderr, write :data:`MARKER`, become the
bot."""
WARM_SCRIPT = _OPEN + 'read -r _ || exit 0; exec "$@"'
"""The same for a warm container (arena/sandbox/warmpool.py): the bot starts only when one line comes on its
stdin, so that no process of a bot lives before its match (docs/SECURITY.md, "One deal at a time"). The end of
stdin before that line (the runner's death) ends it."""


@dataclass
class Fifos:
    """One container's FIFO directory and the runner's ends of its FIFOs."""

    directory: Path
    stdin: int | None
    """``in``, opened for reading and writing (see the module docstring): the bot's stdin."""
    stdout: int | None
    """``out``, opened for reading, without blocking: the bot's stdout."""
    stderr: int | None
    """``err``, the same for its stderr."""
    placeholders: list[int]
    """Writers of ``out`` and ``err`` held until the container's are open (see the module docstring)."""
    marked: bool = field(default=False)
    """Whether :data:`MARKER` has been read."""

    def read(self, fd: int) -> bytes | None:
        """What the bot wrote on :attr:`stdout` or :attr:`stderr` (``fd``), without blocking: None when nothing is
        there yet, ``b""`` at its end."""
        try:
            data = os.read(fd, READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return None
        if fd == self.stdout and not self.marked and data:
            self.marked = True
            self.release()  # the shell opened all three before it wrote the marker
            data = data.removeprefix(MARKER)
            if not data:
                return None
        return data

    def release(self) -> None:
        """Close :attr:`placeholders`: the container's writers are open, or the container has ended."""
        while self.placeholders:
            os.close(self.placeholders.pop())

    def close_stdin(self) -> None:
        if self.stdin is not None:
            os.close(self.stdin)
            self.stdin = None

    def close(self) -> None:
        """Close the runner's ends and remove the directory (its container is gone)."""
        self.close_stdin()
        self.release()
        for fd in (self.stdout, self.stderr):
            if fd is not None:
                os.close(fd)
        self.stdout = self.stderr = None
        shutil.rmtree(self.directory, ignore_errors=True)


class FifoRoom:
    """One sandbox's directory of FIFO directories, :data:`IO_ROOT`/``run-owner`` (its runner's tag)."""

    def __init__(self, run: str, owner: procfs.Owner) -> None:
        IO_ROOT.mkdir(mode=0o700, exist_ok=True)
        # Made by another runner as another user, or by hand: it must be the runner's own and closed to others.
        found = IO_ROOT.lstat()
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid():
            raise OSError(f"{IO_ROOT} is not a directory of this user's")
        os.chmod(IO_ROOT, 0o700)
        self.directory = IO_ROOT / f"{run}-{owner.tag}"
        self.directory.mkdir(mode=0o700)

    def make(self, name: str) -> Fifos:
        """The FIFOs of the container to be named ``name``, opened on the runner's side."""
        directory = self.directory / name
        directory.mkdir(mode=0o755)  # the container's user must pass through it; nobody else reaches its parent
        opened: list[int] = []

        def opening(fifo: str, flags: int) -> int:
            opened.append(os.open(directory / fifo, flags | os.O_NONBLOCK | os.O_CLOEXEC))
            return opened[-1]

        try:
            for fifo in ("in", "out", "err"):
                path = directory / fifo
                os.mkfifo(path, 0o600)
                if os.geteuid() == 0:
                    os.chown(path, BOT_UID, BOT_UID)
                else:  # an unprivileged runner cannot give it away: its parent keeps others out
                    os.chmod(path, 0o666)
            stdout, stderr = opening("out", os.O_RDONLY), opening("err", os.O_RDONLY)
            placeholders = [opening("out", os.O_WRONLY), opening("err", os.O_WRONLY)]
            stdin = opening("in", os.O_RDWR)
        except OSError:
            for fd in opened:
                os.close(fd)
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return Fifos(directory, stdin, stdout, stderr, placeholders)

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def usable() -> tuple[bool, str]:
    """Whether FIFO directories can be made here, and why not."""
    try:
        IO_ROOT.mkdir(mode=0o700, exist_ok=True)
        found = IO_ROOT.lstat()
    except OSError as error:
        return False, f"cannot make {IO_ROOT}: {error}"
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid():
        return False, f"{IO_ROOT} is not a directory of this user's"
    return True, "named pipes in a directory of each container's own"


def sweep_stale() -> list[str]:
    """Remove the sandbox directories of runners that are gone; return their names."""
    removed = []
    try:
        runs = list(IO_ROOT.iterdir())
    except OSError:
        return []
    for run in runs:
        owner = procfs.Owner.from_tag(run.name.partition("-")[2])
        if owner is not None and not procfs.owner_alive(owner):
            shutil.rmtree(run, ignore_errors=True)
            removed.append(run.name)
    if removed:
        LOGGER.info("removed the FIFO directories of %d runner(s) that are gone", len(removed))
    return removed
