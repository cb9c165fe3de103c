"""Reading /proc: the one parser of ``/proc/PID/stat`` and the few other process facts the sandboxes, the stale
sweeps, the store's lease and the runner need (uids, environments, capabilities, whether a pid still runs), and the
one check of whether the process that left something behind (a lease, a container) still runs: :func:`owner` and
:func:`owner_alive`."""

from __future__ import annotations

import os
from dataclasses import dataclass

CAP_SYS_RESOURCE = 24
"""The capability that lets a process raise its hard rlimits (``fs.nr_open`` still caps open files)."""


@dataclass(frozen=True)
class Stat:
    """The fields of ``/proc/PID/stat`` we use."""

    name: str
    """The command name (``comm``): the first 15 bytes of the executable's name."""
    state: str
    """R, S, D, Z (a zombie: finished, waiting to be reaped), ..."""
    ppid: int
    pgid: int
    session: int
    start_time: int
    """Clock ticks after boot: with the pid, it names a process even once the pid is reused."""

    @property
    def running(self) -> bool:
        return self.state != "Z"


def stat(pid: int) -> Stat | None:
    """The stat of ``pid``, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces and parentheses: split after the
    # last one.
    close = data.rindex(b")")
    fields = data[close + 2 :].split()
    try:
        return Stat(data[data.index(b"(") + 1 : close].decode(errors="replace"), fields[0].decode(),
                    int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie has finished: it only waits to be reaped)."""
    info = stat(pid)
    return info is not None and info.running


@dataclass(frozen=True)
class Owner:
    """A process named so that a reused pid does not pass for it: its host, its pid and its start time."""

    host: str
    pid: int
    start_time: int | None
    """Clock ticks after boot (:attr:`Stat.start_time`); None when the record that named it did not keep one (then
    the pid alone is checked)."""

    def __str__(self) -> str:
        """``host:pid:start`` (what :meth:`parse` reads back)."""
        return f"{self.host}:{self.pid}:{'gone' if self.start_time is None else self.start_time}"

    @classmethod
    def parse(cls, text: str) -> Owner:
        """:meth:`__str__`'s text back; a pid that is not a number names no process (pid 0)."""
        host, _, rest = text.partition(":")
        pid, _, started = rest.partition(":")
        return cls(host, int(pid) if pid.isdigit() else 0, int(started) if started.isdigit() else None)

    @property
    def tag(self) -> str:
        """``pid-start``: the owner in the name of a file it leaves on this host (a stage beside a site)."""
        return f"{self.pid}-{'gone' if self.start_time is None else self.start_time}"

    @classmethod
    def from_tag(cls, text: str) -> Owner | None:
        """:attr:`tag`'s text back as an owner of this host (a bare pid, as names had them before, has no start
        time); None when it names no process."""
        import socket

        pid, _, started = text.partition("-")
        if not pid.isdigit():
            return None
        return cls(socket.gethostname(), int(pid), int(started) if started.isdigit() else None)


def owner(pid: int | None = None) -> Owner:
    """This process (or ``pid``, of this host) as an :class:`Owner`."""
    import socket  # here: only what leaves something behind (a runner, a sandbox) names its owner

    pid = os.getpid() if pid is None else pid
    info = stat(pid)
    return Owner(socket.gethostname(), pid, None if info is None else info.start_time)


def owner_alive(who: Owner) -> bool:
    """Whether the process ``who`` names still runs: a process of another host cannot be checked from here (it is
    taken as alive: its record's other means, an expiry, decide); one of this host runs when its pid is a live
    process that started when ``who`` says (a reused pid started later)."""
    import socket

    if who.host != socket.gethostname():
        return True
    if who.pid <= 0:
        return False
    info = stat(who.pid)
    return info is not None and info.running and (who.start_time is None or info.start_time == who.start_time)


def all_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def children(pid: int | None = None) -> list[int]:
    """The child processes of ``pid`` (default: this process), from each of its threads' lists: orphans reparented
    to a subreaper are listed under one of its threads."""
    pid = os.getpid() if pid is None else pid
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                found.extend(int(child) for child in handle.read().split())
        except OSError:
            continue  # a thread that ended meanwhile
    return found


def descendants(root: int) -> list[int]:
    """``root`` and every process below it (zombies included), by :func:`children`."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children(pid))
    return found


def uid_of(pid: int) -> int | None:
    """The real uid of a live (non-zombie) process, or None."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            status = handle.read()
    except OSError:
        return None
    if b"\nState:\tZ" in status:
        return None
    start = status.index(b"\nUid:\t") + 6
    return int(status[start : status.index(b"\t", start)])


def pids_of_uid(uid: int) -> list[int]:
    return [pid for pid in all_pids() if uid_of(pid) == uid]


def namespace_init(pid: int) -> bool:
    """Whether ``pid`` is pid 1 of a pid namespace below ours (its ``NSpid`` line ends in 1)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"NSpid:"):
                    ids = line.split()[1:]
                    return len(ids) > 1 and ids[-1] == b"1"
    except OSError:
        pass
    return False


def command_line(pid: int) -> bytes:
    """The NUL-separated arguments ``pid`` was started with (empty for a zombie or a process that is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def carries(pid: int, marker: bytes) -> bool:
    """Whether ``marker`` (``KEY=VALUE\\0``) is one of the variables in the environment ``pid`` started with."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return marker in b"\0" + handle.read()
    except OSError:
        return False


def has_capability(bit: int, pid: int | str = "self") -> bool:
    """Whether ``pid`` holds capability number ``bit`` in its effective set."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"CapEff:"):
                    return bool(int(line.split()[1], 16) >> bit & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def sysctl_int(name: str) -> int | None:
    """An integer kernel setting such as ``fs.nr_open``, or None where /proc/sys does not have it."""
    try:
        with open("/proc/sys/" + name.replace(".", "/"), "rb") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
