"""Per-bot uids: when the runner is root, each running bot of the ``process`` backend gets an unprivileged uid of
its own (so RLIMIT_NPROC, kill permissions and file access are per bot), leased from a fixed range and locked so
that no other bot -- of this runner or of any other runner on the host -- gets it until it is released.

A lease is a lock file per uid under :data:`UID_LOCKS` (a tmpfs: it starts empty at boot), held with ``flock``
while the bot runs, and what the file says decides whether the uid is clean, without reading any process:

* ``free``: its last bot was released once nothing of it was left (the usual case): leased as it is.
* ``held PID``: a runner leased it; if we got the lock, that runner died before it released it (kill -9), so
  processes of the uid may survive: they are swept once (one walk over /proc), then the uid is leased.
* empty (a new file: no arena runner has used the uid since boot): the uid is checked once (one walk over /proc)
  for processes of anyone else -- a real user, another program -- and if it has any it is marked ``foreign`` and
  never leased (until a reboot clears the marks), so a bot never shares a uid with something not ours.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from arena import procfs
from arena.sandbox import SandboxError, reaper

LOGGER = logging.getLogger(__name__)

UID_BASE = 60000
UID_COUNT = 1000
"""Per-bot uids (when the runner is root) are taken from [UID_BASE, UID_BASE + UID_COUNT), one per running bot."""
UID_LOCKS = Path("/run/arena-uids")
FREE, HELD, FOREIGN = b"free", b"held", b"foreign"
RECORD = 24
"""Every state is written as one record of this many bytes (padded), so a write never needs a truncate."""


def _write(fd: int, data: bytes) -> None:
    os.pwrite(fd, data.ljust(RECORD - 1) + b"\n", 0)


class UidLease:
    """An unprivileged uid held by one running bot until :meth:`release`."""

    def __init__(self) -> None:
        try:
            os.mkdir(UID_LOCKS, 0o700)
        except FileExistsError:
            pass
        except OSError as error:
            raise SandboxError(f"cannot create {UID_LOCKS} for per-bot uids: {error}") from error
        for uid in range(UID_BASE, UID_BASE + UID_COUNT):
            try:
                fd = os.open(f"{UID_LOCKS}/{uid}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as error:
                raise SandboxError(f"cannot open the lease of uid {uid} in {UID_LOCKS}: {error}") from error
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue  # another bot's, now
            if self._usable(uid, fd):
                _write(fd, HELD + f" {os.getpid()}".encode())
                self.uid, self._fd = uid, fd
                return
            os.close(fd)
        raise SandboxError(f"no free per-bot uid in {UID_BASE}..{UID_BASE + UID_COUNT - 1}")

    @staticmethod
    def _usable(uid: int, fd: int) -> bool:
        state = os.pread(fd, RECORD, 0).strip()
        if state == FREE:
            return True
        if state == FOREIGN:
            return False
        if state.startswith(HELD):
            LOGGER.info("uid %d: its lease was abandoned (%s); sweeping its processes once", uid,
                        state.decode(errors="replace").strip())
            return reaper.sweep_uid(uid)  # a dead runner's bot: ours to kill
        if procfs.pids_of_uid(uid):
            _write(fd, FOREIGN)  # someone else's: never ours to kill or to share
            return False
        return True

    def release(self, clean: bool = True) -> None:
        """Give the uid back; ``clean``: nothing of the bot is left (else the next holder sweeps it first)."""
        if self._fd >= 0:
            if clean:
                _write(self._fd, FREE)
            os.close(self._fd)
            self._fd = -1
