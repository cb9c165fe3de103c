"""A docker bot's stdin and stdout as named pipes on the host: its per-turn traffic off the engine's attach relay.

Through the attach socket every line a bot reads or writes passes dockerd and the container's shim (0.28-0.41 ms a
referee turn against 0.09 ms for a pipe; docs/PERFORMANCE.md, "Docker backend"). Where the engine sees this host's
files (a local dockerd in our mount namespace), each container of the runtime image instead gets a directory of
its own, :data:`IO_ROOT`/<runner's sandbox>/<container>, holding two FIFOs, ``in`` and ``out``; it is bind-mounted
read-only at :data:`IO_DIR` into that container only, and a shell there (:data:`COLD_SCRIPT`, :data:`WARM_SCRIPT`)
opens them as the bot's stdin and stdout before it becomes the bot. stderr and the container's end still come through the attach
socket.

The directories: :data:`IO_ROOT` and each sandbox's directory in it are the runner's, mode 0700, so no other user
of the host reaches them; a container sees its own directory only, read-only (it can neither make nor replace
files there), with FIFOs only the container's user and the runner may open. A directory is removed with its
container, a sandbox's with the sandbox, and those of a runner that is gone by the next sweep
(:func:`sweep_stale`), from the owner each sandbox's directory names (:attr:`arena.procfs.Owner.tag`).

Two details make a FIFO read like the pipe the process backend gives. A reader of a FIFO that no writer has opened
yet reads end of file: the runner holds a writer of ``out`` of its own (``placeholder``) until the shell's first
byte (:data:`MARKER`, written as soon as it has opened ``out``, before the bot runs) shows the container's writer
is there, or the container ends. And the shell's open of ``in`` waits for a writer: the runner opens ``in`` for
reading and writing, which never waits; the bot sees end of file on its stdin when the runner closes it.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from arena import procfs

LOGGER = logging.getLogger(__name__)

IO_ROOT = Path("/dev/shm/arena-io")
"""Where the runner makes each container's FIFO directory (beside :data:`arena.sandbox.views.VIEWS`)."""
IO_DIR = "/run/arena-io"
"""Where a container sees its own FIFO directory."""
MARKER = b"\n"
"""What the shell writes on ``out`` once it has opened it, before the bot runs: the runner drops it."""
BOT_UID = 65534
_OPEN = f"exec <{IO_DIR}/in >{IO_DIR}/out || exit 126; echo; "
COLD_SCRIPT = _OPEN + 'exec "$@"'
"""What a container with FIFOs runs: open them as stdin and stdout, write :data:`MARKER`, become the bot."""
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
    placeholder: int | None
    """A writer of ``out`` held until the container's is open (see the module docstring)."""
    marked: bool = field(default=False)
    """Whether :data:`MARKER` has been read."""

    def read(self) -> bytes | None:
        """What the bot wrote on stdout, without blocking: None when nothing is there yet, ``b""`` at its end."""
        assert self.stdout is not None
        try:
            data = os.read(self.stdout, 65536)
        except (BlockingIOError, InterruptedError):
            return None
        if not self.marked and data:
            self.marked = True
            self.release()
            data = data.removeprefix(MARKER)
            if not data:
                return None
        return data

    def release(self) -> None:
        """Close :attr:`placeholder`: the container's writer is open, or the container has ended."""
        if self.placeholder is not None:
            os.close(self.placeholder)
            self.placeholder = None

    def close_stdin(self) -> None:
        if self.stdin is not None:
            os.close(self.stdin)
            self.stdin = None

    def close(self) -> None:
        """Close the runner's ends and remove the directory (its container is gone)."""
        self.close_stdin()
        self.release()
        if self.stdout is not None:
            os.close(self.stdout)
            self.stdout = None
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
        try:
            for fifo in ("in", "out"):
                path = directory / fifo
                os.mkfifo(path, 0o600)
                if os.geteuid() == 0:
                    os.chown(path, BOT_UID, BOT_UID)
                else:  # an unprivileged runner cannot give it away: its parent keeps others out
                    os.chmod(path, 0o666)
            stdout = os.open(directory / "out", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            opened.append(stdout)
            placeholder = os.open(directory / "out", os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            opened.append(placeholder)
            stdin = os.open(directory / "in", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            for fd in opened:
                os.close(fd)
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return Fifos(directory, stdin, stdout, placeholder)

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
