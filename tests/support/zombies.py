"""Zombie processes, counted from /proc (state Z, by parent pid), and the test process's duty as a subreaper.

A test process that runs sandboxes in-process is a child subreaper (arena/sandbox/reaper.py), so when a test kills
a runner (``kill -9``, a chaos kill, a stop), the runner's match workers and sandboxes become the test process's
children; nothing in the test waits for them, and each would stay a zombie for the rest of the session (a pytest
worker once held 114). :func:`reap_unowned` reaps exactly those: the zombie children that no ``subprocess.Popen``
or ``multiprocessing`` process object of this process is waiting for.
"""

from __future__ import annotations

import gc
import multiprocessing.process
import os
import subprocess
import time
from typing import Any

from arena import procfs
from arena.sandbox import reaper


def zombies(parent: int | None = None) -> list[int]:
    """The zombie children of ``parent`` (default: this process)."""
    parent = os.getpid() if parent is None else parent
    return [pid for pid in procfs.children(parent) if getattr(procfs.stat(pid), "state", None) == "Z"]


def zombies_under(root: int) -> list[int]:
    """The zombies whose parent is ``root`` or one of its descendants: what a server or runner left unreaped."""
    return [pid for parent in procfs.descendants(root) for pid in zombies(parent)]


def _owned() -> set[int]:
    """The pids a process object of this process will wait for (it owns their exit status)."""
    pids = {pid for obj in gc.get_objects()
            if isinstance(obj, subprocess.Popen | multiprocessing.process.BaseProcess) and (pid := _pid(obj)) is not None}
    return pids | reaper.LAUNCHED | reaper.ORPHANS.pids


def _pid(process: subprocess.Popen[Any] | multiprocessing.process.BaseProcess) -> int | None:
    try:
        return process.pid
    except ValueError:
        return None  # a closed process object (a stopped pool closes its workers'): it waits for nothing


def reap_unowned() -> list[int]:
    """Reap the zombie children of this process that nothing here owns (orphans of processes a test killed); the
    pids reaped. The scan of the heap for owners runs only when there is a zombie."""
    found = zombies()
    if not found:
        return []
    owned = _owned()
    reaped = []
    for pid in found:
        if pid not in owned:
            try:
                os.waitpid(pid, os.WNOHANG)
                reaped.append(pid)
            except ChildProcessError:
                pass
    return reaped


def settled(parent: int | None = None, seconds: float = 10.0) -> list[int]:
    """The zombie children of ``parent`` still there after up to ``seconds`` for their owners to reap them (a
    hang guard, not a timing assertion: an owner that waits reaps at once)."""
    deadline = time.monotonic() + seconds
    while (found := zombies(parent)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def left_at_the_end(seconds: float = 10.0) -> list[int]:
    """The zombie children of this process that are still there after up to ``seconds`` of reaping the unowned
    ones as they come (a runner's worker killed at the end of a test may take a while to exit) and of waiting for
    owners to reap theirs."""
    deadline = time.monotonic() + seconds
    while True:
        reap_unowned()
        found = zombies()
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)
