"""Killing a bot's whole process tree and reaping what it leaves: the ``process`` backend's kill.

The runner makes itself a child subreaper, so a bot's double-forked daemons are reparented to us rather than to
init. Such orphans -- and the namespace's init under bwrap, once bwrap itself is gone -- become our children; we
reap exactly those we killed (:data:`ORPHANS`), never another child of ours (a multiprocessing helper, say).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import time

from arena import procfs

LOGGER = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make orphans of our descendants our children (Linux); False where the kernel refuses."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


class Orphans:
    """Processes of bots, reparented to this process, that we killed and must reap.

    One per process, like the parenthood it tracks: every sandbox of the runner shares :data:`ORPHANS`.
    """

    def __init__(self) -> None:
        self.pids: set[int] = set()

    def adopt(self, *pids: int) -> None:
        self.pids.update(pids)

    def reap(self) -> None:
        for pid in list(self.pids):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    self.pids.discard(pid)
            except ChildProcessError:
                if not os.path.exists(f"/proc/{pid}"):
                    self.pids.discard(pid)  # gone; while its dying parent lives it is not ours yet, so keep it

    def wait(self, attempts: int = 200, pause_s: float = 0.002) -> None:
        """Reap until none is left, briefly: an orphan is reparented to us only once its parent is reaped."""
        for _ in range(attempts):
            self.reap()
            if not any(os.path.exists(f"/proc/{pid}") for pid in self.pids):
                return
            time.sleep(pause_s)


ORPHANS = Orphans()


def kill(pid: int) -> None:
    """SIGKILL ``pid`` if it is there and ours to kill."""
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def sweep_uid(uid: int) -> bool:
    """SIGKILL every process of ``uid`` until there are none (a bot's uid is its own while it runs)."""
    for _ in range(400):
        live = procfs.pids_of_uid(uid)
        if not live:
            return True
        for pid in live:
            kill(pid)
        ORPHANS.reap()
        time.sleep(0.005)
    LOGGER.error("processes of uid %d survive SIGKILL (%s); the uid stays locked until this runner exits",
                 uid, procfs.pids_of_uid(uid))
    return False


def kill_tree(root: int, marker: bytes | None = None) -> None:
    """SIGKILL ``root``, its process group and session, and every descendant, including orphans reparented to us
    that carry ``marker`` in their environment (under bwrap there are none: the pid namespace holds them).

    Repeated until nothing is found, because a fork bomb can fork between our scan and our kill.
    """
    me = os.getpid()
    session = root  # the bot was started with start_new_session, so its pid is its session and group id
    for _ in range(50):
        found = []
        parents: dict[int, int] = {}
        for pid in procfs.all_pids():
            info = procfs.stat(pid)
            if info is None or pid == me:
                continue
            parents[pid] = info.ppid
            if pid == root or info.pgid == session or info.session == session:
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
        orphans = [pid for pid, ppid in parents.items()
                   if ppid == me and pid not in marked and marker is not None and procfs.carries(pid, marker)]
        ORPHANS.adopt(*orphans)
        live = [pid for pid in (marked | set(orphans)) - {me} if procfs.running(pid)]
        for pid in live:
            kill(pid)
        ORPHANS.reap()
        if not live:
            return
        time.sleep(0.005)
