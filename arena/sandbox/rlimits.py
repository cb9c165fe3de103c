"""The rlimits a bot of the ``process`` backend runs under, derived from its :class:`~arena.sandbox.SandboxLimits`,
and which of them this host cannot grant (so that a config asking for one is refused when it is read, naming the
key, instead of every launch failing later)."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

from arena import procfs
from arena.sandbox import SandboxLimits, cgroups
from arena.sandbox.bwrap import BWRAP

MIB = 1 << 20
NAMES = {resource.RLIMIT_CPU: "RLIMIT_CPU", resource.RLIMIT_DATA: "RLIMIT_DATA", resource.RLIMIT_FSIZE:
         "RLIMIT_FSIZE", resource.RLIMIT_NOFILE: "RLIMIT_NOFILE", resource.RLIMIT_CORE: "RLIMIT_CORE",
         resource.RLIMIT_NPROC: "RLIMIT_NPROC"}


@dataclass(frozen=True)
class Rlimit:
    """One rlimit of a bot, and the ``limits:`` key it comes from (None for the fixed ones)."""

    key: str | None
    resource: int
    soft: int
    hard: int

    def __str__(self) -> str:
        return f"{NAMES.get(self.resource, self.resource)} to {self.soft}/{self.hard}"

    def apply(self, pid: int = 0) -> None:
        """Set it on process ``pid`` (0: this one): the launch sets a held child's before it execs the bot."""
        resource.prlimit(pid, self.resource, (self.soft, self.hard))


def rlimits(limits: SandboxLimits, per_bot_uid: bool, memory_cgroup: bool) -> tuple[Rlimit, ...]:
    # RLIMIT_DATA, not RLIMIT_AS: JIT runtimes (V8, the JVM) reserve gigabytes of address space they never touch.
    # With a memory cgroup the cgroup is the real cap (an OOM kill we can report as a limit); RLIMIT_DATA then
    # only stops address-space games far above it, instead of turning the cap into a MemoryError crash.
    data = limits.memory_mb * MIB * (2 if memory_cgroup else 1) + (256 * MIB if memory_cgroup else 0)
    result = [
        # Soft below hard, so an overrun first sends SIGXCPU, which we report as a limit rather than a crash.
        Rlimit("cpu_seconds", resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 2),
        Rlimit("memory_mb", resource.RLIMIT_DATA, data, data),
        Rlimit("file_mb", resource.RLIMIT_FSIZE, limits.file_mb * MIB, limits.file_mb * MIB),
        Rlimit("open_files", resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
        Rlimit(None, resource.RLIMIT_CORE, 0, 0),
    ]
    if per_bot_uid:
        # Counts the processes of the bot's own uid; meaningless (and not enforced) for a shared or root uid.
        result.append(Rlimit("processes", resource.RLIMIT_NPROC, limits.processes, limits.processes))
    return tuple(result)


def ceiling(which: int, inherited: bool = True) -> tuple[int, str] | None:
    """The highest hard value of rlimit ``which`` a bot can be given, and what sets it; None: no cap.

    Without CAP_SYS_RESOURCE a process can only lower its hard limits, so a child of ours (``inherited``) gets at
    most ours; with it, or in a container the engine sets up, open files still stop at the kernel's ``fs.nr_open``.
    """
    found: tuple[int, str] | None = None
    if inherited and not procfs.has_capability(procfs.CAP_SYS_RESOURCE):
        hard = resource.getrlimit(which)[1]
        if hard != resource.RLIM_INFINITY:
            found = (hard, "the runner's own hard limit")
    if which == resource.RLIMIT_NOFILE:
        nr_open = procfs.sysctl_int("fs.nr_open")
        if nr_open is not None and (found is None or nr_open < found[0]):
            found = (nr_open, "fs.nr_open")
    return found


def ungrantable(limits: SandboxLimits, backend: str = "process") -> dict[str, str]:
    """The ``limits:`` keys this host cannot grant a bot of ``backend``, each with what it can grant."""
    process = backend == "process"
    # The rlimits the process backend would really set here (per-bot uids need root and bwrap; RLIMIT_DATA is
    # larger with a memory cgroup), without running the bwrap probe just to read a config.
    per_bot_uid = process and os.geteuid() == 0 and os.access(BWRAP, os.X_OK)
    memory_cgroup = process and cgroups.detect()[0] is not None
    refused: dict[str, str] = {}
    for limit in rlimits(limits, per_bot_uid, memory_cgroup):
        cap = ceiling(limit.resource, inherited=process)
        if limit.key is not None and cap is not None and limit.hard > cap[0]:
            refused[limit.key] = (f"a value this host can grant (it needs {NAMES[limit.resource]} "
                                  f"{limit.hard}, above {cap[0]}, {cap[1]})")
    return refused
