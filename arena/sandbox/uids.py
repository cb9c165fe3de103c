"""Per-bot uids: when the runner is root, each running bot of the ``process`` backend gets an unprivileged uid of
its own (so RLIMIT_NPROC, kill permissions and file access are per bot), leased from a fixed range and locked so
that no other bot -- of this runner or of any other runner on the host -- gets it until it is released."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from arena import procfs
from arena.sandbox import SandboxError

UID_BASE = 60000
UID_COUNT = 1000
"""Per-bot uids (when the runner is root) are taken from [UID_BASE, UID_BASE + UID_COUNT), one per running bot."""
UID_LOCKS = Path("/run/arena-uids")


class UidLease:
    """An unprivileged uid held by one running bot until :meth:`release`."""

    def __init__(self) -> None:
        try:
            UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
        except OSError as error:
            raise SandboxError(f"cannot create {UID_LOCKS} for per-bot uids: {error}") from error
        busy = {procfs.uid_of(pid) for pid in procfs.all_pids()}
        for uid in range(UID_BASE, UID_BASE + UID_COUNT):
            if uid in busy:
                continue  # a process of a crashed runner, or a real user: never share it
            fd = os.open(UID_LOCKS / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise SandboxError(f"no free per-bot uid in {UID_BASE}..{UID_BASE + UID_COUNT - 1}")

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
