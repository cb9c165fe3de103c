"""How bots are launched: the small interface every sandbox backend implements, and the backends' registry.

The referee sees a bot only through :class:`BotProcess`: file descriptors to poll, non-blocking reads and writes,
and a kill that takes the whole process tree with it. Backends (``process``, ``docker``) know processes and
containers, never the rules or the protocol.

The package, one job per module: ``common`` (what every backend shares: paths inside the sandbox, the bot's
environment, signal-to-limit names, the stand-in for a bot that never started), ``rlimits``, ``uids`` (per-bot
uid leases), ``views`` (each sandbox's private mounts of the runtime and its bot), ``bwrap`` (command line and probe), ``seccomp`` (the rules of both backends: bwrap's filter, docker's
profile), ``cgroups``, ``reaper`` (tree kill), the backends ``process`` and ``docker``, and ``doctor`` (what this host guarantees). /proc is read through arena/procfs.py, which the store and
the site use too.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal

from arena.bots.manifest import BotSpec
from arena.extras import missing_extra

Stream = Literal["stdout", "stderr"]
BACKENDS = ("process", "docker")
"""The backends' names, as ``--sandbox`` and a config's ``sandbox:`` take them; the first is the default."""
GUARANTEES = ("filesystem", "network", "proc_and_signals", "environment", "scratch_cap", "processes", "per_bot_uid",
              "memory_limit_fault", "tree_kill", "keyrings", "user_namespaces", "no_shared_locks", "private_caches")
"""The keys of :meth:`Sandbox.guarantees`, in the order ``arena doctor`` prints them. ``no_shared_locks``: no lock,
watch or page-cache probe on a file they both see passes bits between two concurrently running bots.
``private_caches``: no bot times another's reads in the kernel's page cache or dentry cache, now or in a later
match: each sandbox reads everything through mounts of its own."""


class SandboxError(RuntimeError):
    """The host could not start or manage a bot (the machinery failed, not the bot): an infrastructure error."""


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one bot in one match; every field is a key of ``limits:`` in configs."""

    memory_mb: int = 512
    processes: int = 64
    file_mb: int = 16
    scratch_mb: int = 64
    open_files: int = 64
    cpu_seconds: int = 600


def limit_value(limit: str | None, limits: SandboxLimits, peak_bytes: int | None = None) -> str | None:
    """What :attr:`Exit.limit_value` says for ``limit`` under ``limits``: the value, and the peak when known."""
    if limit == "memory":
        return f"{limits.memory_mb} MiB" + ("" if peak_bytes is None else f", peak {peak_bytes / (1 << 20):.1f} MiB")
    return {"cpu time": f"{limits.cpu_seconds} s", "file size": f"{limits.file_mb} MiB"}.get(limit or "")


@dataclass(frozen=True)
class Exit:
    """How a bot's process ended: its exit code or signal, and the resource limit that killed it if known."""

    returncode: int | None
    signal: int | None = None
    limit: str | None = None
    limit_value: str | None = None
    """The limit as set, and what the bot reached when the sandbox can tell ("512 MiB, peak 512.0 MiB")."""

    def describe(self) -> str:
        if self.limit:
            return f"killed by the {self.limit} limit" + ("" if self.limit_value is None else f" ({self.limit_value})")
        if self.signal is not None:
            return f"killed by signal {self.signal}"
        return f"exited with status {self.returncode}"


@dataclass(frozen=True)
class Usage:
    """What a live bot holds between matches, as its sandbox measures it (None: this backend cannot tell)."""

    memory_bytes: int | None
    """Memory charged to the bot now (its cgroup's, page cache included)."""
    processes: int | None
    """The bot's own processes (not the sandbox's): more than one after a match is a child left behind."""


class BotProcess(abc.ABC):
    """A running bot. All I/O is non-blocking; the referee polls :meth:`read_fds` and :meth:`write_fd`."""

    pid: int | None = None

    @abc.abstractmethod
    def read_fds(self) -> list[int]:
        """Descriptors to watch for reading while they are open."""

    @abc.abstractmethod
    def read(self, fd: int) -> list[tuple[Stream, bytes]]:
        """Read what is available on ``fd``; an empty ``bytes`` for a stream means it reached end of file."""

    @abc.abstractmethod
    def write_fd(self) -> int | None:
        """The descriptor of the bot's stdin, or None once it is closed."""

    @abc.abstractmethod
    def write(self, data: bytes | bytearray | memoryview) -> int:
        """Write without blocking; return how many bytes went. Raises ``BrokenPipeError`` when stdin is gone."""

    @abc.abstractmethod
    def close_stdin(self) -> None: ...

    @abc.abstractmethod
    def poll(self) -> Exit | None:
        """The bot's exit, once its main process has ended."""

    @abc.abstractmethod
    def kill(self) -> Exit:
        """Kill the whole tree, reap it and release everything; safe to call twice. Returns how it ended."""

    def usage(self) -> Usage | None:
        """What the bot holds now, for deciding whether a live bot may play another match; None if unknown."""
        return None


class Sandbox(abc.ABC):
    """A backend: launches bots under its isolation."""

    name: str = "abstract"

    @property
    def variant(self) -> str:
        """Which isolation this backend gives on this host (the process backend: ``bwrap`` or ``plain``)."""
        return self.name

    @abc.abstractmethod
    def guarantees(self) -> dict[str, tuple[bool, str]]:
        """What this sandbox guarantees about a hostile bot here: every key of :data:`GUARANTEES`, each with
        whether it holds and a one-line reason."""

    @abc.abstractmethod
    def launch(self, bot: BotSpec, limits: SandboxLimits) -> BotProcess:
        """Start ``bot``. Raises :class:`SandboxError` for host failures; a bot that cannot start is a crash later."""

    def launch_all(self, bots: list[BotSpec], limits: SandboxLimits) -> list[BotProcess]:
        """Start every bot of a match, in seat order. Backends whose start-up is slow (containers) start them
        concurrently. On a :class:`SandboxError` the bots already started are killed before it propagates."""
        return launch_in_order([partial(self.launch, bot, limits) for bot in bots])

    def expect(self, bots: Sequence[BotSpec], limits: SandboxLimits) -> None:
        """``bots`` will be launched again under ``limits`` (the lanes of a chain, with more chains of the same
        bots to come): a backend that starts bots ahead of their launch (docker's warm pool) may do so from their
        next launch on, not only from their second."""

    def ready(self, bots: Sequence[BotSpec], limits: SandboxLimits) -> None:
        """``bots`` will be launched soon under ``limits`` (the lanes of a chain that waits for another worker's to
        end): a backend that starts bots ahead of their launch (docker's warm pool) starts one of each now, so
        that the chain does not wait for them. Best effort; the default does nothing."""

    def close(self) -> None:
        """Release what the backend holds across matches."""


def launch_in_order(starts: Sequence[Callable[[], BotProcess]]) -> list[BotProcess]:
    """Call each of ``starts`` in order; if one raises, kill what the others started before it propagates."""
    started: list[BotProcess] = []
    try:
        for start in starts:
            started.append(start())
    except BaseException:
        for process in started:
            process.kill()
        raise
    return started


def get_sandbox(name: str) -> Sandbox:
    """The backend called ``name``. ``process`` isolates bots with bubblewrap where it works here and falls back,
    with a warning, to plain processes under rlimits (trusted bots only): see docs/SECURITY.md and ``arena doctor``.
    ``docker`` runs each bot in its own container; it raises :class:`SandboxError` when no engine answers.
    """
    if name == "process":
        from arena.sandbox.process import ProcessSandbox

        return ProcessSandbox()
    if name == "docker":
        problem = missing_extra("docker", "the docker sandbox")
        if problem is not None:
            raise SandboxError(problem)
        from arena.sandbox.docker import DockerSandbox

        return DockerSandbox()
    raise SandboxError(f"unknown sandbox backend {name!r} (expected one of: {', '.join(BACKENDS)})")


def docker_engine_status() -> tuple[bool, str]:
    """Whether the docker backend can run here, and the engine's version or why not (the Docker SDK, which the
    docker extra brings, not installed; or no engine answering)."""
    problem = missing_extra("docker", "the docker sandbox")
    if problem is not None:
        return False, problem
    from arena.sandbox.docker import engine_status

    return engine_status()
