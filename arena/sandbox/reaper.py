"""Killing a bot's whole process tree and reaping what it leaves: the ``process`` backend's kill.

The runner makes itself a child subreaper, so a bot's double-forked daemons are reparented to us rather than to
init. Such orphans -- and the namespace's init under bwrap, once bwrap itself is gone -- become our children; we
reap exactly those we killed (:data:`ORPHANS`), never another child of ours (a multiprocessing helper, say). A
process of ours that dies with sandboxes running (a match worker killed -9) hands them to us too: they die with it,
and :func:`reap_adopted` reaps them, told from our own launches (:data:`LAUNCHED`) by what they are.
"""

from __future__ import annotations

import ctypes
import logging
import os
import select
import signal
import threading
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
        # A chain's lanes end side by side (arena.match.live), each kill adopting and reaping: a loop over the set
        # while another thread removes from it fails ("Set changed size during iteration"; a whole run lost once).
        self._lock = threading.Lock()

    def adopt(self, *pids: int) -> None:
        with self._lock:
            self.pids.update(pids)

    def snapshot(self) -> list[int]:
        """The pids still to reap, as they are now."""
        with self._lock:
            return list(self.pids)

    def _discard(self, pid: int) -> None:
        with self._lock:
            self.pids.discard(pid)

    def reap(self) -> None:
        for pid in self.snapshot():
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    self._discard(pid)
            except ChildProcessError:
                if not os.path.exists(f"/proc/{pid}"):
                    self._discard(pid)  # gone; while its dying parent lives it is not ours yet, so keep it

    def _until_exited(self, timeout_s: float) -> None:
        """Block (no CPU) until each of them has exited or ``timeout_s`` has passed, on a pidfd per process."""
        deadline = time.monotonic() + timeout_s
        for pid in self.snapshot():
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue  # gone already, or a kernel without pidfds: the polling below does
            try:
                select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            finally:
                os.close(fd)

    def wait(self, attempts: int = 200, pause_s: float = 0.002) -> bool:
        """Reap until none is left, briefly: an orphan is reparented to us only once its parent is reaped. False if
        some are still there."""
        self._until_exited(attempts * pause_s)
        for _ in range(attempts):
            self.reap()
            if not any(os.path.exists(f"/proc/{pid}") for pid in self.snapshot()):
                return True
            time.sleep(pause_s)
        return False


ORPHANS = Orphans()

LAUNCHED: set[int] = set()
"""The pids of the sandboxes this process started (a bot's gate shell, then its bwrap) and has not reaped yet:
their parent's to wait for, never :func:`reap_adopted`'s. Added before a launch leaves its gate, removed once
reaped."""

SANDBOX_NAMES = frozenset({"bwrap", "sh", "bash"})
"""What a sandbox's own processes are called: its gate shell, bwrap outside and the namespace's init."""


def reap_adopted() -> int:
    """Kill and reap the sandboxes of another process of ours that died (a match worker killed -9 or ended by a
    pool's terminate) and that the kernel reparented to us, a subreaper; the number reaped.

    Such a sandbox's gate or bwrap was its starter's child: it is a session leader (every launch starts one) that
    is neither in :data:`LAUNCHED` nor anyone else's here. It dies by itself (bwrap's ``--die-with-parent``, a gate
    whose pipe closed) or of our kill, and is then a zombie that nothing else would ever reap."""
    me = os.getpid()
    found = [pid for pid in procfs.children(me) if pid not in LAUNCHED
             and (info := procfs.stat(pid)) is not None and info.ppid == me and info.name in SANDBOX_NAMES
             and info.session == pid]
    for pid in found:
        kill(pid)
    ORPHANS.adopt(*found)
    ORPHANS.wait()
    return sum(pid not in ORPHANS.pids for pid in found)


def dead_orphans(born_after: int) -> list[int]:
    """Our zombie children that are session leaders we did not launch and that started no earlier than
    ``born_after`` (clock ticks after boot, as :attr:`procfs.Stat.start_time`): what a plain bot's daemon leaves
    when its middle process exits unwaited in a session of its own and the bot dies (they are ours then, a
    subreaper). Nothing else names such a zombie (its group and session are its own, it has left every cgroup and a
    zombie shows no environment), and nothing else of ours is a session leader: every launch's is in
    :data:`LAUNCHED` until its owner reaps it. Read from our own children, never a walk over /proc."""
    me = os.getpid()
    return [pid for pid in procfs.children(me) if pid not in LAUNCHED
            and (info := procfs.stat(pid)) is not None and info.state == "Z" and info.ppid == me
            and info.session == pid and info.start_time >= born_after]


def kill(pid: int) -> None:
    """SIGKILL ``pid`` if it is there and ours to kill."""
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(pgid: int) -> None:
    """SIGKILL process group ``pgid`` (a bot's: it was started in a session of its own). The kernel delivers a group
    kill so that no fork in progress escapes it."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def reap_group(pgid: int, attempts: int = 500, pause_s: float = 0.002) -> bool:
    """Reap our children in process group ``pgid`` (killed already) until none is left; False if some outlive
    the attempts. Under bwrap that is the namespace's init, ours once bwrap is reaped, which the kernel lets die
    only once every process of its namespace is gone: so True there means nothing of the sandbox is left."""
    for _ in range(attempts):
        try:
            while os.waitpid(-pgid, os.WNOHANG)[0] != 0:
                pass
        except ChildProcessError:
            return True
        time.sleep(pause_s)
    return False


def sweep_uid(uid: int) -> bool:
    """SIGKILL every process of ``uid`` until there are none: a walk over /proc, only for a uid whose lease was
    abandoned (see :mod:`arena.sandbox.uids`)."""
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
    """The kill of a plain (no bwrap) bot on a host without cgroups, which nothing else names: a walk over /proc,
    whose cost grows with every process on the host. SIGKILL ``root``, its process group and session, and every descendant, including orphans reparented to us
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
