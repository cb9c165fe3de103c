"""The ``docker`` backend: each bot of a match runs in its own container, through the Python ``docker`` SDK.

For tournaments of untrusted submissions on a server. A container gets no network (``network_mode=none``), a
memory limit with swap equal to it (an OOM kill is reported as the ``memory`` limit), a pids limit, one CPU, a
read-only root filesystem with a size-capped tmpfs at ``/tmp`` (also HOME and TMPDIR), no capabilities,
``no-new-privileges``, an unprivileged uid (65534), the container init as pid 1, no log driver (a flood never
reaches the host's disk), the bot's directory read-only at ``/bot`` (its working directory), ``protocol/``
read-only at ``/protocol`` (on PYTHONPATH) and an explicit minimal environment. The other limits of
:class:`~arena.sandbox.SandboxLimits` are ulimits (``fsize``, ``nofile``, ``cpu``).

Where the host allows private views (:mod:`arena.sandbox.views`: root, erofs, an engine in this mount namespace),
each container binds ``/usr``, the ``/etc`` files, ``/bot`` and ``/protocol`` from mounts of its own, made before it
is created and unmounted when it is removed: a page cache and dentry cache no other container shares. Otherwise
every container shares the host's ``/usr`` (and ``/protocol``, and a bot's copies their ``/bot``): the same inodes,
on which locks and inotify watches pass bits between concurrently running bots. Either way containers get arena's own
seccomp profile (:func:`arena.sandbox.seccomp.docker_profile`: the process backend's rules, locks, watches,
io_uring and page-cache probes refused, plus what the engine's default profile refuses that a container without
capabilities could still reach), which replaces the engine's default, and ``/proc/locks`` joins the engine's
masked paths (:data:`MASKED_PATHS`).

Images: a bot may name its own ``image:`` in bot.yaml, and a runner may map languages to images
(``DockerSandbox(images={"python": "..."})``). Otherwise bots run in the local *runtime image*
(:data:`RUNTIME_IMAGE`, made by ``arena sandbox build-image`` with no registry at all): an image holding only
empty mount points and the host's top-level symlinks, into which the host's ``/usr`` (and the ``/lib*``, ``/bin``
directories that are not symlinks) and a handful of ``/etc`` files are bind-mounted read-only, so bots use the
host's interpreters exactly as under the ``process`` backend. That needs the engine on the same host as the runner.

Where the engine is a dockerd in this mount namespace, a runtime-image bot's stdin, stdout and stderr are FIFOs
in a directory of its container's own (:mod:`arena.sandbox.fifos`, :class:`FifoBot`): a referee turn then costs
what a pipe's does (81-93 us against 252-256 us through the engine, ``bench/docker.py``), where every line through
the attach socket passes dockerd and the container's shim. The container's end still comes through the attach
socket. Elsewhere (a remote engine, a bot's own image, which may have no shell) stdin, stdout and stderr all go
through it: stdin raw, stdout and stderr multiplexed in frames of an 8-byte header (stream type, three zero
bytes, big-endian length) and a payload, which :class:`Demux` splits incrementally, because frames arrive cut
anywhere across reads.

A failure of the engine (down, timing out, refusing a container) raises :class:`~arena.sandbox.SandboxError`: an
infrastructure error, never a fault of the bot.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import socket
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import docker  # type: ignore[import-untyped]
import docker.errors  # type: ignore[import-untyped]
from docker.models.containers import Container  # type: ignore[import-untyped]
from docker.types import LogConfig, Mount, Ulimit  # type: ignore[import-untyped]

from arena import procfs
from arena.bots.manifest import BotSpec
from arena.sandbox import (
    BotProcess,
    Exit,
    Sandbox,
    SandboxError,
    SandboxLimits,
    Stream,
    Usage,
    fifos,
    limit_value,
    seccomp,
    views,
)
from arena.sandbox.cgroups import Watched, cgroup_of
from arena.sandbox.common import (
    BOT_DIR,
    PROTOCOL_DIR,
    PROTOCOL_LIB,
    READ_CHUNK,
    SCRATCH_DIR,
    SIGNAL_LIMITS,
    Every,
    FailedBot,
    bot_environment,
)
from arena.sandbox.docker_image import (
    API_TIMEOUT_S,
    ENGINE_ERRORS,
    RUNTIME_IMAGE,
    build_runtime_image,
    connect,
    runtime_mounts,
)
from arena.sandbox.fifos import IO_DIR, FifoRoom, Fifos
from arena.sandbox.warmpool import WARM_CONTAINERS, WARM_LABEL, WarmPool

LOGGER = logging.getLogger(__name__)

LABEL = "arena.bot"
"""Every container we create carries ``arena.bot=1``, so that stale ones can be found and removed."""
RUN_LABEL = "arena.run"
RUNNER_LABEL = "arena.runner"
"""The runner that created the container, as :class:`arena.procfs.Owner`'s ``host:pid:start time``: the stale sweep
removes the containers of a runner that no longer runs."""
STALE_SWEEP_PERIOD_S = 30.0
"""How often launches look for containers of runners that are gone (one listing call to the engine)."""
BOT_USER = "65534:65534"
WARM_SCRIPT = 'read -r _ || exit 0; exec "$@"'
"""What a warm container runs until its bot is wanted: wait for one line on stdin, then become the bot's command
(the same process, as a cold start would have it). The end of stdin before that line, which is what the runner's
death makes of its attach socket, ends the container."""
STREAMS: dict[int, Stream] = {1: "stdout", 2: "stderr"}
SIGKILL = int(signal.SIGKILL)
EXIT_WAIT_S = 0.5
"""How long the end of a FIFO bot's stdout waits for its container's end (:meth:`FifoBot._await_end`)."""
MASKED_PATHS = ("/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
                "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/proc/locks")
"""What the runtime hides (binds /dev/null over): the engine's defaults, which a container's own list replaces,
and ``/proc/locks``, which lists the open-file-description locks of every namespace on the host."""


GUARANTEES: dict[str, tuple[bool, str]] = {
    "filesystem": (True, "read-only root; only /usr, a few /etc files, /protocol, its own /bot and FIFOs"),
    "network": (True, "network mode none: no interface but its own loopback"),
    "proc_and_signals": (True, "own pid namespace: cannot see or signal the referee or other bots"),
    "environment": (True, "explicit minimal environment"),
    "scratch_cap": (True, "size-capped tmpfs scratch"),
    "processes": (True, "pids_limit"),
    "per_bot_uid": (False, "every container runs as uid 65534; containers, not uids, keep bots apart"),
    "memory_limit_fault": (True, "memory limit with no extra swap: an OOM kill is a `limit` fault"),
    "tree_kill": (True, "the container is killed and removed with everything in it"),
    "keyrings": (True, "arena's seccomp profile refuses add_key, request_key and keyctl"),
    "user_namespaces": (True, "arena's seccomp profile refuses clone/unshare with CLONE_NEWUSER"),
    "no_shared_locks": (True, ("arena's seccomp profile refuses fcntl locks, leases and dnotify, inotify, fanotify, "
                               "io_uring and page-cache probes, and makes flock a no-op; /proc/locks masked")),
    "private_caches": (True, ("a page cache and dentry cache of its own: /usr, /bot and /protocol bound from erofs "
                              "images mounted anew per container (a bot's own image: its layers are shared)")),
}
"""What this backend guarantees about a hostile bot, wherever an engine answers (see :data:`arena.sandbox.GUARANTEES`)."""


class Demux:
    """Splits the attach stream into (stream, bytes) chunks as bytes arrive, frames cut anywhere.

    Payload bytes are handed out as soon as they arrive, not when their frame is complete: a bot sending one
    byte at a time must reach the referee's deadline and line-cap logic byte by byte, like a pipe would.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._stream: Stream = "stdout"
        self._remaining = 0

    def feed(self, data: bytes) -> list[tuple[Stream, bytes]]:
        self._buffer += data
        buffer = memoryview(self._buffer)
        parts: list[tuple[Stream, list[bytes]]] = []
        position = 0  # consumed once at the end: deleting from the front per frame would be quadratic
        try:
            while position < len(buffer):
                if self._remaining == 0:
                    if len(buffer) - position < 8:
                        break
                    # Type 0 would be stdin echoed back, which the engine does not do; anything unknown goes to
                    # stderr, whose content the referee only keeps, never parses.
                    self._stream = STREAMS.get(buffer[position], "stderr")
                    self._remaining = int.from_bytes(buffer[position + 4 : position + 8], "big")
                    position += 8
                    continue
                take = min(self._remaining, len(buffer) - position)
                payload = bytes(buffer[position : position + take])
                position += take
                self._remaining -= take
                if parts and parts[-1][0] == self._stream:
                    parts[-1][1].append(payload)
                else:
                    parts.append((self._stream, [payload]))
        finally:
            buffer.release()
        del self._buffer[:position]
        return [(stream, b"".join(chunks)) for stream, chunks in parts]


def describe_state(state: Mapping[str, Any], killed: bool = False, limits: SandboxLimits | None = None) -> Exit:
    """An :class:`Exit` from a container's ``State``: the init reports a child killed by signal N as 128 + N."""
    code = int(state.get("ExitCode") or 0)
    if state.get("OOMKilled"):
        return Exit(None, SIGKILL, "memory", None if limits is None else limit_value("memory", limits))
    if killed or code > 128:
        signum = SIGKILL if killed else code - 128
        limit = None if killed else SIGNAL_LIMITS.get(signum)
        return Exit(None, signum, limit, None if limits is None else limit_value(limit, limits))
    return Exit(code)


class DockerBot(BotProcess):
    """One bot's container and its attach socket."""

    def __init__(self, client: docker.DockerClient, container: Container, attached: Any,
                 limits: SandboxLimits | None = None, view: views.View | None = None) -> None:
        self.client = client
        self.view = view
        self.container = container
        self.limits = limits
        self._attached = attached  # the SDK's socket file object; holds its HTTP response alive
        self._sock: socket.socket = attached._sock
        self._sock.setblocking(False)
        self._fd = self._sock.fileno()
        # The referee registers stdin for writing and stdout for reading separately and unregisters stdin once its
        # buffer is empty: one descriptor for both would lose the read registration. A duplicate gives stdin its own.
        self._write_fd: int | None = os.dup(self._fd)
        self._stdin_open = True
        self._demux = Demux()
        self._eof = False
        self._exit: Exit | None = None
        self._killed = False
        self.name = container.name
        self._cgroup: Watched | None | bool = False  # False: not looked for yet

    def wake(self) -> bool:
        """Send a warm container (:data:`WARM_SCRIPT`) the line that makes it its bot; False when it is gone or
        has written anything while it waited (its shell writes nothing)."""
        try:
            self._sock.recv(1, socket.MSG_PEEK)
            return False
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return False
        try:
            return self.write(b"go\n") == 3
        except OSError:
            return False

    def read_fds(self) -> list[int]:
        return [] if self._eof or self._killed else [self._fd]

    def read(self, fd: int) -> list[tuple[Stream, bytes]]:
        if fd != self._fd or self._eof or self._killed:
            return []
        try:
            data = self._sock.recv(READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:
            data = b""
        if data:
            return self._demux.feed(data)
        # The engine ends the attach stream when the container's output ends; it has no end of file per stream.
        self._eof = True
        return [("stderr", b""), ("stdout", b"")]

    def write_fd(self) -> int | None:
        return self._write_fd if self._stdin_open else None

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if not self._stdin_open or self._write_fd is None:
            raise BrokenPipeError("stdin closed")
        try:
            return os.write(self._write_fd, data)
        except BlockingIOError:
            return 0

    def close_stdin(self) -> None:
        if self._stdin_open:
            self._stdin_open = False
            try:
                # The container was created with StdinOnce: the bot sees end of file on its stdin.
                self._sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def poll(self) -> Exit | None:
        # While the attach stream is open the container runs: no need to ask the engine on every call.
        if self._exit is None and self._eof and not self._killed:
            state = self._state()
            if state is not None and not state.get("Running"):
                self._exit = describe_state(state, limits=self.limits)
        return self._exit

    def usage(self) -> Usage | None:
        # Read from the container's cgroup files on this host: two small reads, where the engine's stats call
        # takes a second or more; asked after every match of every kept bot.
        if self._killed:
            return None
        if self._cgroup is False:
            self._cgroup = self._find_cgroup()
        if not isinstance(self._cgroup, Watched):
            return None
        processes = self._cgroup.processes()
        # The container's init (created with "init": True) is the sandbox's, not the bot's; a warm container's shell
        # has become the bot (it execs).
        return Usage(self._cgroup.memory_bytes(), None if processes is None else processes - 1)

    def _find_cgroup(self) -> Watched | None:
        """The container's cgroup, found once from its init's pid (which only the engine knows); None where it
        cannot be read here (an engine on another host, a cgroup tree not mounted), and then no usage is told."""
        try:
            state = self._state()
        except SandboxError as error:
            LOGGER.debug("no usage for %s: %s", self.name, error)
            return None
        pid = int((state or {}).get("Pid") or 0)
        found = cgroup_of(pid, str(self.container.id)) if pid > 0 else None
        if found is None:
            LOGGER.debug("no usage for %s: the cgroup of its init (pid %d) cannot be read here", self.name, pid)
        return found

    def _state(self) -> dict[str, Any] | None:
        try:
            self.container.reload()
        except docker.errors.NotFound:
            return None
        except ENGINE_ERRORS as error:
            raise SandboxError(f"the Docker engine failed while inspecting {self.name}: {error}") from error
        return dict(self.container.attrs.get("State") or {})

    def _close_socket(self) -> None:
        # Shut the socket down first: an engine still pushing a flood into it makes removal hang.
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if self._write_fd is not None:
            os.close(self._write_fd)
            self._write_fd = None
        self._stdin_open = False
        response = getattr(self._attached, "_response", None)
        for closable in (response, self._attached, self._sock):
            try:
                if closable is not None:
                    closable.close()
            except (OSError, ValueError, AttributeError):
                pass

    def kill(self) -> Exit:
        if self._killed:
            assert self._exit is not None
            return self._exit
        self._killed = True
        self._close_socket()
        try:
            state = self._state()
            killed = False
            if state is not None and state.get("Running"):
                try:
                    self.container.kill()  # SIGKILL to the init: the kernel kills the whole pid namespace
                    killed = True
                except docker.errors.APIError as error:
                    if error.status_code != 409:  # 409: it stopped by itself in the meantime
                        raise
                self.container.wait(timeout=API_TIMEOUT_S)
                state = self._state()
            if self._exit is None and state is not None:
                self._exit = describe_state(state, killed and not state.get("OOMKilled"), self.limits)
            self.container.remove(force=True)
        except docker.errors.NotFound:
            pass
        except ENGINE_ERRORS as error:
            self._exit = self._exit or Exit(None, SIGKILL)
            raise SandboxError(f"the Docker engine failed while removing {self.name}: {error}") from error
        finally:
            if self.view is not None:
                self.view.close()  # once its container is gone: the container's binds held the mounts
        if self._exit is None:
            self._exit = Exit(None, SIGKILL)
        return self._exit

    def discard(self) -> None:
        """Remove a container whose end nobody will ask about (a warm one never taken): one call to the engine,
        where :meth:`kill` makes four to learn how it ended."""
        if self._killed:
            return
        self._killed = True
        self._exit = Exit(None, SIGKILL)
        self._close_socket()
        try:
            self.container.remove(force=True)
        except docker.errors.NotFound:
            pass
        except ENGINE_ERRORS as error:
            raise SandboxError(f"the Docker engine failed while removing {self.name}: {error}") from error
        finally:
            if self.view is not None:
                self.view.close()


class FifoBot(DockerBot):
    """A bot whose stdin, stdout and stderr are FIFOs in a directory of its container's own
    (:mod:`arena.sandbox.fifos`); the container's end comes through the attach socket."""

    def __init__(self, client: docker.DockerClient, container: Container, attached: Any, fifos: Fifos,
                 limits: SandboxLimits | None = None, view: views.View | None = None) -> None:
        super().__init__(client, container, attached, limits, view)
        assert self._write_fd is not None and fifos.stdout is not None and fifos.stderr is not None
        os.close(self._write_fd)  # the attach socket carries no stdin here
        self._write_fd = fifos.stdin
        fifos.stdin = None  # the bot's now: closed by close_stdin or with the socket
        self.fifos = fifos
        self._pipes: dict[int, Stream] = {fifos.stdout: "stdout", fifos.stderr: "stderr"}
        self._ended: set[int] = set()
        """The FIFOs read to their end."""
        self._end_told = False

    def wake(self) -> bool:
        # Its shell writes nothing but the marker (fifos.WARM_SCRIPT), here or on the socket (the base's check).
        if self._ended or any(self.fifos.read(fd) is not None for fd in self._pipes):
            return False
        return super().wake()

    def read_fds(self) -> list[int]:
        if self._killed:
            return []
        return [*([] if self._eof else [self._fd]), *(fd for fd in self._pipes if fd not in self._ended)]

    def read(self, fd: int) -> list[tuple[Stream, bytes]]:
        if self._killed:
            return []
        stream = self._pipes.get(fd)
        if stream is None:  # the attach socket: the container's end, and what its init may say
            if self._eof:  # seen by the read of stdout's end (below): told once here, for its descriptor
                told, self._end_told = self._end_told, True
                return [] if told else [("stderr", b"")]
            found = self._read_attached()
            if self._eof:
                self._end_told = True
                found.append(("stderr", b""))
            return found
        if fd in self._ended:
            return []
        data = self.fifos.read(fd)
        if data is None:
            return []
        if data:
            return [(stream, data)]
        self._ended.add(fd)
        return [*self._await_end(), ("stdout", b"")] if stream == "stdout" else [("stderr", b"")]

    def _read_attached(self) -> list[tuple[Stream, bytes]]:
        """What the attach socket has (whatever the container's init says, as stderr), its end noted in ``_eof``
        but not handed out."""
        found: list[tuple[Stream, bytes]] = [("stderr", data) for _, data in super().read(self._fd) if data]
        if self._eof:
            # The container has ended: all its writers of the FIFOs are gone, and without the runner's own each
            # reads its end.
            self.fifos.release()
        return found

    def _await_end(self) -> list[tuple[Stream, bytes]]:
        """stdout ended, which a bot's exit does before its container's end reaches the attach socket: wait up to
        :data:`EXIT_WAIT_S` for that end, so that how the bot ended is known when the referee asks (:meth:`poll`)
        as it was with one stream for all; returns what the socket said meanwhile. A bot that closed its stdout and
        runs on costs the whole wait, once."""
        found: list[tuple[Stream, bytes]] = []
        deadline = time.monotonic() + EXIT_WAIT_S
        while not self._eof and (left := deadline - time.monotonic()) > 0:
            if select.select([self._fd], [], [], left)[0]:
                found += self._read_attached()
        return found

    def close_stdin(self) -> None:
        if self._stdin_open:
            self._stdin_open = False
            if self._write_fd is not None:
                os.close(self._write_fd)
                self._write_fd = None

    def kill(self) -> Exit:
        try:
            return super().kill()
        finally:
            self.fifos.close()  # after its container: no SIGPIPE to a bot that still writes before its kill

    def discard(self) -> None:
        try:
            super().discard()
        finally:
            self.fifos.close()


def remove_stale(client: docker.DockerClient) -> list[str]:
    """Remove labelled containers whose runner process is gone (it crashed mid-match); return their names."""
    removed = []
    try:
        # ignore_removed: the listing inspects each container after listing them all, and another runner may
        # remove one in between (a 404 then failed the whole sweep).
        for container in client.containers.list(all=True, filters={"label": f"{LABEL}=1"}, ignore_removed=True):
            if procfs.owner_alive(procfs.Owner.parse(container.labels.get(RUNNER_LABEL, ""))):
                continue
            try:
                container.remove(force=True)
            except docker.errors.APIError as error:
                # Another runner starting at the same moment may be removing it already (404, or 409: removal
                # in progress): gone either way.
                if error.status_code not in (404, 409):
                    raise
                continue
            removed.append(container.name)
    except ENGINE_ERRORS as error:
        raise SandboxError(f"cannot list or remove stale bot containers: {error}") from error
    if removed:
        LOGGER.warning("removed %d stale bot container(s) of a runner that is gone: %s", len(removed),
                       ", ".join(removed))
    return removed


class DockerSandbox(Sandbox):
    """Bots in containers (see the module docstring).

    ``images`` maps a bot's ``language`` to an image (a bot's own ``image:`` wins); bots of other languages use
    ``runtime_image``, which is built on first use when missing. ``cpus`` is each container's CPU quota.
    ``close_channels=False`` gives containers the engine's default seccomp profile instead of arena's, which leaves
    the channels between containers open; only the channel tests' controls ask for that. ``fifo_io``: the bots'
    stdin, stdout and stderr as FIFOs (:mod:`arena.sandbox.fifos`) where the engine sees them (None), always
    (True: an error where it cannot) or never (False: through the attach socket).
    """

    name = "docker"

    def __init__(self, images: Mapping[str, str] | None = None, runtime_image: str = RUNTIME_IMAGE,
                 base_url: str | None = None, cpus: float = 1.0, warm: int = WARM_CONTAINERS,
                 close_channels: bool = True, private_views: bool | None = None, fifo_io: bool | None = None) -> None:
        self.profile = seccomp.docker_security_opt() if close_channels else None
        self.client = connect(base_url)
        self.pool: WarmPool[DockerBot] = WarmPool(warm)
        self.images = dict(images or {})
        self.runtime_image = runtime_image
        self.cpus = cpus
        self.run_id = uuid.uuid4().hex[:12]
        self.identity = str(procfs.owner())
        self._runtime_ready = False
        self._lock = threading.Lock()
        self._serial = 0
        # Not only now: on a Dask worker this sandbox lives as long as the worker, and a worker killed next to it
        # leaves containers that only a later sweep on this host removes.
        self.stale_sweeps = Every(STALE_SWEEP_PERIOD_S)
        self.stale_sweeps.due()
        remove_stale(self.client)
        can_view, reason = views_status(base_url, built=not private_views) if private_views is not False else (
            False, "turned off (private_views=False)")
        if private_views and not can_view:
            raise SandboxError(f"private views were asked for but are not available: {reason}")
        self.views, self.views_reason = can_view, reason
        self.open_views: list[views.View] = []
        if can_view:
            views.sweep_stale()
        self.fifo_room = self._fifo_room(base_url, fifo_io)

    def _fifo_room(self, base_url: str | None, wanted: bool | None) -> FifoRoom | None:
        """Where this sandbox's containers get their FIFOs (:mod:`arena.sandbox.fifos`), or None where the engine
        would not see them (then stdin, stdout and stderr go through the attach socket)."""
        works, reason = fifos.usable() if wanted is not False else (False, "turned off (fifo_io=False)")
        if works and (base_url is not None or not _engine_shares_our_mounts()):
            works, reason = False, "the engine is not a dockerd in this mount namespace"
        if wanted and not works:
            raise SandboxError(f"FIFOs were asked for but cannot be used: {reason}")
        if not works:
            LOGGER.debug("bots' stdio goes through the attach socket: %s", reason)
            return None
        fifos.sweep_stale()
        try:
            return FifoRoom(self.run_id, procfs.owner())
        except OSError as error:
            if wanted:
                raise SandboxError(f"FIFOs were asked for but cannot be used: {error}") from error
            LOGGER.debug("bots' stdio goes through the attach socket: %s", error)
            return None

    per_bot_uid = False

    def guarantees(self) -> dict[str, tuple[bool, str]]:
        found = dict(GUARANTEES)
        if not self.views:
            found["private_caches"] = shared_caches(self.views_reason)
        if self.profile is not None:
            return found
        default = "the engine's default seccomp profile (arena's has no numbers for this architecture, or it was "
        return found | {
            "keyrings": (True, default + "turned off); it refuses the keyring calls"),
            "user_namespaces": (True, default + "turned off); it refuses new user namespaces"),
            "no_shared_locks": (False, default + "turned off): locks and inotify on the shared /usr pass bits "
                                               "between containers")}

    def image_for(self, bot: BotSpec) -> str:
        if bot.image:
            return bot.image
        if bot.language and bot.language in self.images:
            return self.images[bot.language]
        return self.runtime_image

    def _ensure_runtime_image(self) -> None:
        with self._lock:
            if self._runtime_ready:
                return
            try:
                self.client.images.get(self.runtime_image)
            except docker.errors.ImageNotFound:
                LOGGER.info("building the runtime image %s (no registry needed)", self.runtime_image)
                build_runtime_image(self.client, self.runtime_image)
            except ENGINE_ERRORS as error:
                raise SandboxError(f"cannot inspect the runtime image {self.runtime_image}: {error}") from error
            self._runtime_ready = True

    def container_options(self, bot: BotSpec, limits: SandboxLimits, image: str,
                          view: views.View | None = None) -> dict[str, Any]:
        """Everything a bot's container is created with: the whole of its isolation in one place; ``view``: its
        private mounts, which its binds come from."""
        mib = 1 << 20
        mounts = runtime_mounts(str(view.runtime) if view else "") if image == self.runtime_image else []
        bot_dir, protocol = (view.bot / "bot", view.bot / "protocol") if view else (bot.directory, PROTOCOL_LIB)
        mounts += [Mount(BOT_DIR, str(bot_dir), type="bind", read_only=True),
                   Mount(PROTOCOL_DIR, str(protocol), type="bind", read_only=True)]
        with self._lock:
            self._serial += 1
            serial = self._serial
        return {
            "image": image,
            "command": list(bot.command),
            "name": f"arena-{self.run_id}-{serial}-{bot.name}",
            "labels": {LABEL: "1", RUN_LABEL: self.run_id, RUNNER_LABEL: self.identity, f"{LABEL}.name": bot.name},
            # Not detached, with stdin open: the SDK then sets StdinOnce, so closing our side ends the bot's stdin.
            "detach": False, "stdin_open": True, "tty": False,
            "user": BOT_USER,
            "working_dir": BOT_DIR,
            "environment": bot_environment(SCRATCH_DIR, PROTOCOL_DIR),
            "hostname": "bot",
            "network_mode": "none",
            "ipc_mode": "none",  # no /dev/shm: it would be writable memory outside the scratch cap
            "mem_limit": limits.memory_mb * mib,
            "memswap_limit": limits.memory_mb * mib,  # equal: no swap, so running out is an OOM kill we can report
            "pids_limit": limits.processes + 1,  # the init counts too
            "nano_cpus": int(self.cpus * 1e9),
            "read_only": True,
            "tmpfs": {SCRATCH_DIR: f"size={limits.scratch_mb}m,mode=1777,nosuid,nodev"},
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges", *([self.profile] if self.profile else [])],
            "init": True,
            "log_config": LogConfig(type="none"),
            "mounts": mounts,
            "ulimits": [
                # Soft below hard, so an overrun first sends SIGXCPU, which we report as a limit, not a crash.
                Ulimit(name="cpu", soft=limits.cpu_seconds, hard=limits.cpu_seconds + 2),
                Ulimit(name="fsize", soft=limits.file_mb * mib, hard=limits.file_mb * mib),
                Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
                Ulimit(name="core", soft=0, hard=0),
            ],
        }

    def launch(self, bot: BotSpec, limits: SandboxLimits) -> BotProcess:
        if self.stale_sweeps.due():
            remove_stale(self.client)
            if self.fifo_room is not None:
                fifos.sweep_stale()
        image = self.image_for(bot)
        if image == self.runtime_image:
            self._ensure_runtime_image()
        key = WarmPool.key(bot, limits, image)
        warm = self.pool.take(key)
        if warm is not None:
            self.pool.refill(key, lambda: self._warm(bot, limits, image))
            return warm
        process = self._start(bot, limits, image)
        if isinstance(process, DockerBot) and image == self.runtime_image:  # other images may have no shell
            self.pool.refill(key, lambda: self._warm(bot, limits, image))
        return process

    def expect(self, bots: Sequence[BotSpec], limits: SandboxLimits) -> None:
        for bot in bots:
            image = self.image_for(bot)
            if image == self.runtime_image:  # as launch: other images may have no shell to wait in
                self.pool.expect(WarmPool.key(bot, limits, image))

    def ready(self, bots: Sequence[BotSpec], limits: SandboxLimits) -> None:
        self.expect(bots, limits)
        for bot in bots:
            image = self.image_for(bot)
            key = WarmPool.key(bot, limits, image)
            if image == self.runtime_image and self.pool.lacks(key):
                # One after another on the pool's thread, not all at once: another worker is likely starting its
                # own chain's containers right now, and the engine's work is CPU on the same cores.
                self.pool.refill(key, partial(self._warm, bot, limits, image))

    def _warm(self, bot: BotSpec, limits: SandboxLimits, image: str) -> DockerBot | None:
        """A container of ``bot`` that waits for its launch (:class:`~arena.sandbox.warmpool.WarmPool`), or None
        when the bot cannot start."""
        process = self._start(bot, limits, image, warm=True)
        return process if isinstance(process, DockerBot) else None

    def _start(self, bot: BotSpec, limits: SandboxLimits, image: str, warm: bool = False) -> BotProcess:
        """Create, attach and start one container of ``bot``; ``warm``: one that waits for a line on stdin before
        it becomes the bot (:data:`WARM_SCRIPT`)."""
        view = self._view(bot)
        try:
            return self._create_and_start(bot, limits, image, warm, view)
        except BaseException:
            if view is not None:
                view.close()
            raise

    def _view(self, bot: BotSpec) -> views.View | None:
        """A new private view for one container of ``bot``, where this sandbox makes them."""
        if not self.views:
            return None
        with self._lock:
            self.open_views = [view for view in self.open_views if view.mounted]
        view = views.open_view(bot.directory, bot.files_hash)
        with self._lock:
            self.open_views.append(view)
        return view

    def _create_and_start(self, bot: BotSpec, limits: SandboxLimits, image: str, warm: bool,
                          view: views.View | None) -> BotProcess:
        options = self.container_options(bot, limits, image, view)
        if warm:
            options["labels"] = options["labels"] | {WARM_LABEL: "1"}
        # Only the runtime image is known to have the shell that opens the FIFOs; other images keep the socket.
        pipes = self.fifo_room.make(options["name"]) if self.fifo_room is not None and image == self.runtime_image \
            else None
        try:
            if pipes is not None:
                script = fifos.WARM_SCRIPT if warm else fifos.COLD_SCRIPT
                options["command"] = ["/bin/sh", "-c", script, "arena-io", *bot.command]
                options["mounts"] = [*options["mounts"], Mount(IO_DIR, str(pipes.directory), type="bind",
                                                                read_only=True)]
                options["stdin_open"] = False
            elif warm:
                options["command"] = ["/bin/sh", "-c", WARM_SCRIPT, "arena-warm", *bot.command]
            process = self._create_and_attach(bot, image, options, pipes, limits, view)
        except BaseException:
            if pipes is not None:
                pipes.close()
            raise
        if isinstance(process, FailedBot):
            if pipes is not None:
                pipes.close()
            return process
        container = process.container
        try:
            container.start()
        except docker.errors.APIError as error:
            process.kill()
            message = str(error.explanation or error)
            # Only the bot's own command: any other exec failure (the engine's init, say) is the host's.
            if f'exec: "{bot.command[0]}"' in message:
                return FailedBot(f"could not start {' '.join(bot.command)!r} in {image}: {message}")
            raise SandboxError(f"cannot start the container of {bot.name}: {message}") from error
        except ENGINE_ERRORS as error:
            _discard(container)
            if pipes is not None:
                pipes.close()
            raise SandboxError(f"cannot start the container of {bot.name}: {error}") from error
        return process

    def _create_and_attach(self, bot: BotSpec, image: str, options: dict[str, Any], pipes: Fifos | None,
                           limits: SandboxLimits, view: views.View | None) -> DockerBot | FailedBot:
        """Create ``bot``'s container with ``options`` and attach to it (not started yet)."""
        try:
            container = _create(self.client, options)
        except docker.errors.ImageNotFound as error:
            # The bot asked for an image this host does not have: like a command that is not installed.
            if view is not None:
                view.close()
            return FailedBot(f"image {image!r} is not available on this host: {error.explanation}")
        except ENGINE_ERRORS as error:
            raise SandboxError(f"cannot create a container for {bot.name}: {error}") from error
        try:
            # Attach before start, so that not a byte of output is missed.
            attached = container.attach_socket(params={"stdin": int(pipes is None), "stdout": 1, "stderr": 1,
                                                       "stream": 1})
        except ENGINE_ERRORS as error:
            _discard(container)
            raise SandboxError(f"cannot attach to the container of {bot.name}: {error}") from error
        if pipes is not None:
            return FifoBot(self.client, container, attached, pipes, limits, view)
        return DockerBot(self.client, container, attached, limits, view)

    def launch_all(self, bots: list[BotSpec], limits: SandboxLimits) -> list[BotProcess]:
        """Start the match's containers concurrently: a container start costs about a quarter of a second of
        waiting on the engine, so a match pays for one start instead of one per seat."""
        if not bots:
            return []
        if any(self.image_for(bot) == self.runtime_image for bot in bots):
            self._ensure_runtime_image()
        with ThreadPoolExecutor(max_workers=len(bots), thread_name_prefix="arena-launch") as pool:
            futures = [pool.submit(self.launch, bot, limits) for bot in bots]
            outcomes: list[BotProcess | BaseException] = []
            for future in futures:
                try:
                    outcomes.append(future.result())
                except BaseException as error:  # noqa: BLE001 - every started bot must be killed first
                    outcomes.append(error)
        failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
        if failures:
            for outcome in outcomes:
                if isinstance(outcome, BotProcess):
                    try:
                        outcome.kill()
                    except SandboxError:
                        pass
            raise failures[0]
        return [outcome for outcome in outcomes if isinstance(outcome, BotProcess)]

    def containers(self) -> list[Container]:
        """This sandbox's containers that still exist but the idle warm ones (for tests and for :meth:`close`)."""
        return [container for container in self._all_containers() if not self.pool.idle(container)]

    def _all_containers(self) -> list[Container]:
        try:
            return list(self.client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={self.run_id}"},
                                                    ignore_removed=True))
        except ENGINE_ERRORS as error:
            raise SandboxError(f"cannot list bot containers: {error}") from error

    def close(self) -> None:
        self.pool.close()
        for container in self._all_containers():
            _discard(container)
        for view in self.open_views:
            view.close()  # bots never killed: their containers are gone now
        if self.fifo_room is not None:
            self.fifo_room.remove()
        self.client.close()


def _create(client: docker.DockerClient, options: dict[str, Any]) -> Container:
    """``client.containers.create(**options)`` with :data:`MASKED_PATHS`, which the SDK's keywords cannot express:
    the engine's API takes them in the host config (``MaskedPaths``, API 1.30 and later)."""
    from docker.models.containers import _create_container_args

    arguments = _create_container_args(options | {"version": client.api.api_version})
    arguments["host_config"]["MaskedPaths"] = list(MASKED_PATHS)
    created = client.api.create_container(**arguments)
    return client.containers.get(created["Id"])


def views_status(base_url: str | None = None, built: bool = True) -> tuple[bool, str]:
    """Whether containers can get private views here (:func:`arena.sandbox.views.status`, and an engine that sees
    the mounts made here: the local one, in our mount namespace), and why not; ``built``: only if the runtime image
    is built already (:func:`arena.sandbox.views.ready`)."""
    works, reason = views.ready() if built else views.status()
    if works and (base_url is not None or not _engine_shares_our_mounts()):
        return False, "the engine is not a dockerd in this mount namespace: it would not see the views mounted here"
    return works, reason


def shared_caches(reason: str) -> tuple[bool, str]:
    """The ``private_caches`` guarantee where containers share the host's files."""
    return False, f"containers bind the host's /usr and bot directory, one cache for all ({reason})"


def _engine_shares_our_mounts() -> bool:
    """Whether the local engine (dockerd) is in our mount namespace, so that it sees the views mounted here."""
    mine = os.readlink("/proc/self/ns/mnt")
    for pid in procfs.all_pids():
        info = procfs.stat(pid)
        if info is not None and info.name == "dockerd":
            try:
                return os.readlink(f"/proc/{pid}/ns/mnt") == mine
            except OSError:
                return False
    return False


def _discard(container: Container) -> None:
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except ENGINE_ERRORS as error:
        LOGGER.error("could not remove container %s: %s", container.name, error)


def engine_status(base_url: str | None = None) -> tuple[bool, str]:
    """Whether a Docker engine answers here, and its version or why not."""
    try:
        client = connect(base_url)
    except SandboxError as error:
        return False, str(error)
    try:
        version = client.version().get("Version", "?")
    except ENGINE_ERRORS as error:
        return False, f"the engine answers ping but not version: {error}"
    finally:
        client.close()
    return True, f"Docker engine {version}"
