"""Per-bot control groups: a memory cap that reports itself (an OOM kill we can tell from a crash) and a cap on
processes, where the host lets us create cgroups.

Both cgroup v2 (``memory.max``, ``pids.max``, ``memory.events``) and v1 (a ``memory`` and a ``pids`` hierarchy,
``memory.limit_in_bytes``, ``memory.oom_control``) are handled. Each bot gets a child of the runner's own cgroup,
which the runner puts the bot's first process into before it execs (the launch holds it at a gate until then),
so everything it spawns is inside: the cgroup names the bot's processes, and the kill reads them from
``cgroup.procs`` (v2 also has ``cgroup.kill``) instead of walking /proc. Where nothing can be created (no write
access, no controllers), :func:`detect` says why and bots run without.
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


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


PID_NAMESPACE = _pid_namespace()
"""A runner's cgroups name it by its pid and its pid namespace (``arena-PID.NAMESPACE-...``), since a pid means
nothing in another namespace that shares the cgroup tree (a container beside us): only cgroups of our own namespace
are judged stale here."""


def sweep_stale(layout: Layout) -> list[int]:
    """Kill what is left in the cgroups of runners that died (``arena-<their pid>.<pid namespace>-...``) and remove
    them; return the pids killed.

    A runner killed while it starts a sandbox can leave bwrap's namespace init behind, holding the sandbox (see
    :func:`arena.sandbox.bwrap.sweep_orphan_inits`): it is in the dead runner's cgroup, so this finds it by
    listing the runner's cgroup directory, whatever else runs on the host. Cgroups named by a pid alone (older
    runners) are only removed when empty.
    """
    killed: list[int] = []
    for parent in {layout.memory, layout.pids} - {None}:
        assert parent is not None
        try:
            entries = os.listdir(parent)
        except OSError:
            continue
        for name in entries:
            parts = name.split("-")
            if len(parts) < 4 or parts[0] != "arena":
                continue
            pid, _, owner_namespace = parts[1].partition(".")
            if not pid.isdigit() or os.path.exists(f"/proc/{pid}"):
                continue
            stale = parent / name
            if owner_namespace == PID_NAMESPACE:
                killed += kill_procs(f"{stale}/cgroup.procs")
            try:
                stale.rmdir()
            except OSError:
                pass  # its processes are still dying, or not ours to remove: the next sweep tries again
    return killed


def memory_now(directory: str, version: int) -> int | None:
    """Memory charged to the cgroup at ``directory`` now (page cache included); None if it cannot be read."""
    try:
        return int(_read(f"{directory}/{'memory.current' if version == 2 else 'memory.usage_in_bytes'}"))
    except ValueError:
        return None


@dataclass(frozen=True)
class Watched:
    """A cgroup that another made and we only read (a container's, made by its engine)."""

    version: int
    directory: str
    """Its directory in the memory hierarchy (v1) or the unified one (v2)."""

    def memory_bytes(self) -> int | None:
        return memory_now(self.directory, self.version)

    def processes(self) -> int | None:
        """How many processes (not threads, which ``pids.current`` would count too) it holds now; None if its
        list cannot be read (a cgroup with processes in it never lists none)."""
        listed = set(read_procs(f"{self.directory}/cgroup.procs"))  # v1 may list a process twice
        return len(listed) or None


def cgroup_of(pid: int, marker: str) -> Watched | None:
    """The cgroup process ``pid`` is in, from ``/proc/<pid>/cgroup``, if its path holds ``marker`` and it can be
    read here; else None.

    ``marker`` is what the owner names it by (an engine's container id, in whatever path its cgroup driver makes:
    ``/docker/<id>``, ``/system.slice/docker-<id>.scope``): a pid an engine reports may name another process here
    (an engine on another host, or in another pid namespace), whose cgroup never holds that name."""
    try:
        with open(f"/proc/{pid}/cgroup") as file:
            lines = file.read().splitlines()
    except OSError:
        return None
    paths: dict[str, str] = {}
    for line in lines:
        controllers, _, path = line.partition(":")[2].partition(":")
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    if "memory" in paths:
        found = Watched(1, f"{ROOT}/memory{paths['memory']}")
    elif "" in paths:
        unified = f"{ROOT}{paths['']}"
        if not os.path.exists(f"{unified}/cgroup.controllers"):
            unified = f"{ROOT}/unified{paths['']}"
        found = Watched(2, unified)
    else:
        return None
    if marker not in found.directory or found.memory_bytes() is None or found.processes() is None:
        return None
    return found


def _read(path: str) -> bytes:
    """A small control file's bytes (b"" if it cannot be read): os-level, as a launch or a kill reads a few."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return b""
    try:
        return os.read(fd, 1 << 16)
    except OSError:
        return b""
    finally:
        os.close(fd)


def read_procs(path: str) -> list[int]:
    return [int(pid) for pid in _read(path).split()]


def kill_procs(path: str, rounds: int = 100) -> list[int]:
    """SIGKILL every process listed in ``path`` (a ``cgroup.procs``) until it lists none we have not killed;
    return them.

    Repeated because a process may fork between the read and the kill (the pids cap bounds how often); a killed
    process is listed until it is reaped, but forks no more."""
    killed: list[int] = []
    done: set[int] = set()
    for _ in range(rounds):
        new = [pid for pid in read_procs(path) if pid not in done]
        if not new:
            break
        for pid in new:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        done.update(new)
        killed += new
    return killed


class BotCgroup:
    """One bot's cgroups. Create before launching, :meth:`add` the bot's first process before it execs,
    :meth:`close` after the kill."""

    def __init__(self, layout: Layout, name: str, memory_bytes: int, processes: int) -> None:
        self.layout = layout
        leaf = f"arena-{os.getpid()}.{PID_NAMESPACE}-{next(_COUNTER)}-{name}"  # the pid now: pool workers fork
        self.dirs: list[Path] = [layout.memory / leaf]
        if layout.pids is not None and layout.pids != layout.memory:
            self.dirs.append(layout.pids / leaf)
        # Plain strings from here on: a launch builds these paths every time, and pathlib costs more than the
        # system calls.
        names = [str(directory) for directory in self.dirs]
        for directory in names:
            os.mkdir(directory)
        memory, pids = names[0], names[-1]
        if layout.version == 1:
            _write(f"{memory}/memory.limit_in_bytes", str(memory_bytes))
            if _SWAP_ACCOUNTING[0]:  # no swapping past the cap, where the kernel accounts swap
                _SWAP_ACCOUNTING[0] = _try_write(f"{memory}/memory.memsw.limit_in_bytes", str(memory_bytes))
        else:
            _write(f"{memory}/memory.max", str(memory_bytes))
            if _SWAP_ACCOUNTING[0]:
                _SWAP_ACCOUNTING[0] = _try_write(f"{memory}/memory.swap.max", "0")
        if layout.pids is not None:
            _write(f"{pids}/pids.max", str(processes))
        self._events = f"{memory}/{'memory.oom_control' if layout.version == 1 else 'memory.events'}"
        self._procs = [f"{directory}/cgroup.procs" for directory in names]

    def add(self, pid: int) -> None:
        """Move process ``pid`` in (the bot's first process, held before it execs)."""
        for path in self._procs:
            _write(path, str(pid))

    def oom_kills(self) -> int:
        """How many processes the kernel killed for exceeding the memory cap."""
        text = _read(self._events)
        start = text.find(b"\noom_kill ")  # never the first line in either file
        return 0 if start < 0 else int(text[start + 10 :].split(b"\n", 1)[0])

    def peak_bytes(self) -> int | None:
        """The most memory the bot's processes held at once, where the kernel keeps it (v2's ``memory.peak``, from
        Linux 5.19; v1's ``memory.max_usage_in_bytes``), else None."""
        name = "memory.max_usage_in_bytes" if self.layout.version == 1 else "memory.peak"
        return self._read_int(name)

    def memory_bytes(self) -> int | None:
        """Memory charged to the bot now; None if the file cannot be read."""
        return memory_now(str(self.dirs[0]), self.layout.version)

    def _read_int(self, name: str) -> int | None:
        try:
            return int(_read(f"{self.dirs[0]}/{name}"))
        except (OSError, ValueError):
            return None

    def processes(self) -> int:
        """How many processes (not threads) the bot's cgroup holds now."""
        return len(read_procs(self._procs[0]))

    def kill_all(self) -> list[int]:
        """SIGKILL every process of the bot (``cgroup.kill`` where v2 has it, which no fork can race, then the
        listed ones until none is listed); return the pids seen. The first directory lists them all: every one of
        the bot's processes is in each of its cgroups."""
        if self.layout.version == 2:
            _try_write(f"{self.dirs[0]}/cgroup.kill", "1")
        return kill_procs(self._procs[0])

    def close(self) -> bool:
        """Remove the cgroups, killing what is left in them first if they are not empty (dying processes take a
        moment); False if some could not be removed (then nothing says the bot is gone)."""
        for _ in range(200):
            remaining = []
            for directory in self.dirs:
                try:
                    os.rmdir(directory)
                except FileNotFoundError:
                    pass
                except OSError:
                    remaining.append(directory)
            self.dirs = remaining
            if not remaining:
                return True
            for directory in remaining:
                kill_procs(f"{directory}/cgroup.procs")
            time.sleep(0.005)
        return False


_SWAP_ACCOUNTING = [True]
"""Whether the swap cap could be written (once it could not, later cgroups do not try: the kernel lacks it)."""


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _try_write(path: str, value: str) -> bool:
    try:
        _write(path, value)
        return True
    except OSError:
        return False
