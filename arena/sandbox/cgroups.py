"""Per-bot control groups: a memory cap that reports itself (an OOM kill we can tell from a crash) and a cap on
processes, where the host lets us create cgroups.

Both cgroup v2 (``memory.max``, ``pids.max``, ``memory.events``) and v1 (a ``memory`` and a ``pids`` hierarchy,
``memory.limit_in_bytes``, ``memory.oom_control``) are handled. Each bot gets a child of the runner's own cgroup,
joined by the bot's first process before it execs, so everything it spawns is inside. Where nothing can be
created (no write access, no controllers), :func:`available` says why and bots run without.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
_COUNTER = itertools.count()


@dataclass(frozen=True)
class Layout:
    """Where the runner's own cgroups are: one directory per controller (the same one on v2)."""

    version: int
    memory: Path
    pids: Path | None


def _own_paths() -> dict[str, str]:
    """Controller -> our cgroup path, from /proc/self/cgroup ("" is the v2 unified entry)."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _probe(directory: Path) -> bool:
    """Can we create (and remove) a child cgroup under ``directory``?"""
    probe = directory / f"arena-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
        return True
    except OSError:
        return False


@lru_cache(maxsize=1)
def detect() -> tuple[Layout | None, str]:
    """The usable layout, or None and the reason there is none."""
    paths = _own_paths()
    v1_memory = ROOT / "memory" / paths.get("memory", "/").lstrip("/")
    if "memory" in paths and (v1_memory / "memory.limit_in_bytes").exists():
        if not _probe(v1_memory):
            return None, f"cannot create a cgroup under {v1_memory}"
        v1_pids = ROOT / "pids" / paths.get("pids", "/").lstrip("/")
        pids = v1_pids if "pids" in paths and (v1_pids / "cgroup.procs").exists() and _probe(v1_pids) else None
        return Layout(1, v1_memory, pids), f"cgroup v1 memory{' and pids' if pids else ''} at {v1_memory}"
    if "" in paths:
        unified = ROOT / paths[""].lstrip("/")
        if not (unified / "cgroup.controllers").exists():
            unified = ROOT / "unified" / paths[""].lstrip("/")
        try:
            controllers = (unified / "cgroup.controllers").read_text().split()
        except OSError:
            return None, "no cgroup filesystem at /sys/fs/cgroup"
        if "memory" not in controllers:
            return None, f"the memory controller is not delegated to {unified}"
        # v2 allows controllers for children only if the parent has no processes of its own (or is the root).
        try:
            subtree = unified / "cgroup.subtree_control"
            wanted = " ".join(f"+{name}" for name in ("memory", "pids") if name in controllers)
            subtree.write_text(wanted)
        except OSError as error:
            return None, f"cannot enable memory in {unified}/cgroup.subtree_control: {error.strerror}"
        if not _probe(unified):
            return None, f"cannot create a cgroup under {unified}"
        return Layout(2, unified, unified if "pids" in controllers else None), f"cgroup v2 at {unified}"
    return None, "no memory cgroup controller"


def remove_stale(layout: Layout) -> None:
    """Remove the empty cgroups of runners that died without cleaning up (``arena-<their pid>-...``)."""
    for parent in {layout.memory, layout.pids} - {None}:
        assert parent is not None
        for directory in parent.glob("arena-*-*-*"):
            owner = directory.name.split("-")[1]
            if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                try:
                    directory.rmdir()
                except OSError:
                    pass  # still has processes, or not ours to remove


class BotCgroup:
    """One bot's cgroups. Create before launching; the child calls :meth:`join` (in preexec); :meth:`close`."""

    def __init__(self, layout: Layout, name: str, memory_bytes: int, processes: int) -> None:
        self.layout = layout
        leaf = f"arena-{os.getpid()}-{next(_COUNTER)}-{name}"
        self.dirs: list[Path] = [layout.memory / leaf]
        if layout.pids is not None and layout.pids != layout.memory:
            self.dirs.append(layout.pids / leaf)
        for directory in self.dirs:
            directory.mkdir()
        memory = self.dirs[0]
        if layout.version == 1:
            (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
            _try_write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))  # no swapping past the cap
            if layout.pids is not None:
                (self.dirs[-1] / "pids.max").write_text(str(processes))
        else:
            (memory / "memory.max").write_text(str(memory_bytes))
            _try_write(memory / "memory.swap.max", "0")
            if layout.pids is not None:
                (memory / "pids.max").write_text(str(processes))
        # Opened now: preexec functions should not allocate or look things up.
        self._procs = [str(directory / "cgroup.procs") for directory in self.dirs]

    def join(self) -> None:
        """Move the calling process in (runs in the child between fork and exec)."""
        for path in self._procs:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def oom_kills(self) -> int:
        """How many processes the kernel killed for exceeding the memory cap."""
        name = "memory.oom_control" if self.layout.version == 1 else "memory.events"
        try:
            text = (self.dirs[0] / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def pids(self) -> list[int]:
        found: set[int] = set()
        for directory in self.dirs:
            try:
                found.update(int(pid) for pid in (directory / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return sorted(found)

    def kill_all(self) -> None:
        if self.layout.version == 2:
            _try_write(self.dirs[0] / "cgroup.kill", "1")
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def close(self) -> None:
        """Kill what is left and remove the cgroups (they must be empty; dying processes take a moment)."""
        for _ in range(200):
            self.kill_all()
            remaining = []
            for directory in self.dirs:
                try:
                    directory.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    remaining.append(directory)
            self.dirs = remaining
            if not remaining:
                return
            time.sleep(0.005)


def _try_write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError:
        pass
