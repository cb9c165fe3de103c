"""The ``process`` backend: each bot is a child process under rlimits, with a minimal environment and a private
scratch directory, and -- where the host allows it -- inside a bubblewrap sandbox.

Two variants, chosen by :class:`ProcessSandbox` (``isolate=None`` picks the best this host can do):

* **isolated** (bwrap works): every namespace unshared (mount, pid, net, ipc, uts, cgroup; user too when we are not
  root), a read-only view of the system runtime, the bot's own directory read-only at ``/bot`` (its cwd),
  ``protocol/`` read-only at ``/protocol`` (on PYTHONPATH), a size-capped tmpfs at ``/tmp`` as scratch, and -- when
  the runner is root -- a dedicated unprivileged uid per running bot, so RLIMIT_NPROC, kill permissions and file
  access are per bot; a seccomp filter (:mod:`~arena.sandbox.seccomp`) refuses kernel keyrings, new user
  namespaces and the calls that make a channel between concurrently running sandboxes through the host inodes
  they share (locks, inotify, io_uring, page-cache probes), and ``/proc/locks`` is hidden. Killing SIGKILLs
  bwrap's process group and the namespace's init (which takes every process in the namespace with it), then reaps
  the init, which the kernel allows only once the namespace is empty.
* **plain** (no bwrap): a child process in a new session under the same rlimits; killing signals its process
  group and its cgroup (without a cgroup, a walk over /proc finds its tree). No filesystem, network, /proc or signal
  isolation: for trusted bots only. A warning says so, once per run.

Starting and stopping a bot never reads every process on the host (docs/SECURITY.md, "Start and stop"): the
launch holds its child at a shell gate (:func:`gate`) while the runner puts it in its cgroup and sets its rlimits,
so no Python runs between fork and exec; the kill signals what names the bot's processes.

Where the host lets us create cgroups (v1 or v2), each bot also gets its own memory cgroup (an OOM kill there is
reported as the ``memory`` limit rather than a crash) and a pids cgroup (a process cap that holds even for root).

The pieces live beside this module: :mod:`~arena.sandbox.bwrap` (the command line and the probe),
:mod:`~arena.sandbox.uids` (per-bot uids), :mod:`~arena.sandbox.rlimits`, :mod:`~arena.sandbox.cgroups` and
:mod:`~arena.sandbox.reaper` (the tree kill).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    cgroups,
    limit_value,
    reaper,
    seccomp,
    views,
)
from arena.sandbox.bwrap import BASH, ORPHAN_SWEEPS, SH, bwrap_command, bwrap_status, shim, sweep_orphan_inits
from arena.sandbox.common import READ_CHUNK, SCRATCH_DIR, SIGNAL_LIMITS, SYSTEM_PATH, FailedBot, bot_environment
from arena.sandbox.reaper import ORPHANS
from arena.sandbox.rlimits import Rlimit, rlimits
from arena.sandbox.uids import UidLease

__all__ = ["Launch", "ProcessBot", "ProcessSandbox", "bwrap_status"]  # bwrap_status: callers asked here first

LOGGER = logging.getLogger(__name__)


_WARNED = False


def _warn_unisolated(reason: str) -> None:
    global _WARNED
    if not _WARNED:
        _WARNED = True
        LOGGER.warning(
            "SANDBOX NOT ISOLATING BOTS (%s): bots run as plain processes under rlimits only. They CAN read any "
            "file this user can (other bots, databases, logs, configs), reach the network, read /proc of the "
            "referee and signal processes of this user. Use only with trusted bots; run `arena doctor`.", reason)


@dataclass
class Launch:
    """What a sandbox launched, for the sweep and for tests that check nothing survived."""

    directory: Path
    pid: int
    uid: int | None = None
    ns_init: int | None = None
    cgroup: list[Path] = field(default_factory=list)
    view: Path | None = None
    """The directory of its private mounts (:class:`arena.sandbox.views.View`), when it has them."""
    released_at: float | None = None
    """CLOCK_BOOTTIME when its uid went back to the pool: a process of that uid started later is another bot's."""


class ProcessBot(BotProcess):
    def __init__(self, popen: subprocess.Popen[bytes], stdin_fd: int, stdout_fd: int, scratch: Path | None,
                 limits: SandboxLimits, launch: Launch, isolated: bool = False, lease: UidLease | None = None,
                 cgroup: cgroups.BotCgroup | None = None, info_fd: int | None = None,
                 view: views.View | None = None) -> None:
        self.popen = popen
        self.view = view
        self.pid = popen.pid
        self._group = popen.pid  # started in a session of its own: its pid names its process group
        self.scratch = scratch
        self.limits = limits
        self.launch = launch
        self.isolated = isolated
        self.lease = lease
        self.cgroup = cgroup
        self._info_fd = info_fd
        self._info = b""
        assert popen.stderr
        self._stdin: int | None = stdin_fd
        self._stdout: int | None = stdout_fd
        self._streams: dict[int, Stream] = {stdout_fd: "stdout", popen.stderr.fileno(): "stderr"}
        for fd in (self._stdin, *self._streams):
            os.set_blocking(fd, False)
        self._exit: Exit | None = None
        self._killed = False
        # In the plain variant a bot's orphans are told from our other children (a multiprocessing helper,
        # say) by the environment they inherit: HOME is the bot's own scratch directory, unique per launch.
        self.marker = None if scratch is None else f"HOME={scratch}".encode() + b"\0"
        started = None if isolated else procfs.stat(popen.pid)
        self._born = None if started is None else started.start_time
        """When a plain bot started: its orphans that die unwaited start after it (:func:`reaper.dead_orphans`)."""

    def read_fds(self) -> list[int]:
        return list(self._streams)

    def read(self, fd: int) -> list[tuple[Stream, bytes]]:
        stream = self._streams[fd]
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return []
        except OSError:
            data = b""
        if not data:
            del self._streams[fd]
        return [(stream, data)]

    def write_fd(self) -> int | None:
        return self._stdin

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if self._stdin is None:
            raise BrokenPipeError("stdin closed")
        try:
            return os.write(self._stdin, data)
        except BlockingIOError:
            return 0

    def close_stdin(self) -> None:
        if self._stdin is not None:
            os.close(self._stdin)  # unflushed bytes of a bot that stopped reading do not matter now
            self._stdin = None

    def poll(self) -> Exit | None:
        if self._exit is None and self.popen.poll() is not None:
            self._exit = self._describe(self.popen.returncode)
        return self._exit

    def _describe(self, returncode: int) -> Exit:
        if self.isolated and returncode > 128:
            returncode = -(returncode - 128)  # bwrap reports a child killed by signal N as status 128 + N
        if returncode >= 0:
            return Exit(returncode)
        signum = -returncode
        if signum == signal.SIGKILL and self.cgroup is not None and self.cgroup.oom_kills() > 0:
            return Exit(None, signum, "memory", limit_value("memory", self.limits, self.cgroup.peak_bytes()))
        limit = SIGNAL_LIMITS.get(signum)
        return Exit(None, signum, limit, limit_value(limit, self.limits))

    def _ns_init(self) -> int | None:
        """The host pid of the sandbox's pid 1, from bwrap's --info-fd (written once the namespace exists)."""
        if self._info_fd is not None:
            try:
                while chunk := os.read(self._info_fd, 4096):
                    self._info += chunk
            except BlockingIOError:
                pass
            except OSError:
                pass
            try:
                pid = int(json.loads(self._info)["child-pid"])
            except (ValueError, KeyError, TypeError):
                return None
            self.launch.ns_init = pid
            return pid
        return None

    def _kill_init(self) -> None:
        init = self._ns_init()
        # Only while it is bwrap's child or ours (unreaped once bwrap is gone): once bwrap has reaped it, its pid
        # may name another process.
        if init is not None and getattr(procfs.stat(init), "ppid", None) in (self._group, os.getpid()):
            reaper.kill(init)
            ORPHANS.adopt(init)

    def _kill_unreported_init(self) -> None:
        """A kill between bwrap's clone and its report of the init's pid (a kill during start-up): all bwrap wrote
        is there now that it is reaped; if it never reported the init, the bot's cgroup holds it (else, on a host
        without cgroups, a walk over /proc finds it: a namespace init that is now our child)."""
        self._kill_init()
        if self.launch.ns_init is not None:
            return
        if self.cgroup is not None:
            ORPHANS.adopt(*self.cgroup.kill_all())
        else:
            me = os.getpid()
            ORPHANS.adopt(*(pid for pid in sweep_orphan_inits() if getattr(procfs.stat(pid), "ppid", None) == me))

    def usage(self) -> Usage | None:
        if self.cgroup is None or self._killed:
            return None
        # Under bwrap its own two processes (outside, and the namespace's init) share the bot's cgroup.
        return Usage(self.cgroup.memory_bytes(), self.cgroup.processes() - (2 if self.isolated else 0))

    def kill(self) -> Exit:
        if not self._killed:
            self._killed = True
            exit_before = self.poll()
            # What names the bot's processes, never a walk over /proc: its process group (the gate, then bwrap or
            # the bot), under bwrap the namespace's init (bwrap reports its pid; its death takes every process of
            # the namespace with it), and its cgroup, which holds even what left the group (setsid, double fork).
            reaper.kill_group(self._group)
            if self.isolated:
                self._kill_init()
            elif self.cgroup is not None:
                ORPHANS.adopt(*(pid for pid in self.cgroup.kill_all() if pid != self.pid))  # ours as they die
            else:
                reaper.kill_tree(self._group, self.marker)  # no cgroup names a plain bot's escaped daemons
            self.popen.wait()
            reaper.LAUNCHED.discard(self.pid)
            if not self.isolated and self._born is not None:
                ORPHANS.adopt(*reaper.dead_orphans(self._born))  # its children are ours now, zombies or not
            self._exit = exit_before or self._describe(self.popen.returncode)
            if self.isolated and self.launch.ns_init is None:
                self._kill_unreported_init()
            # A plain bot's children left in its group, and the namespace's init (ours once bwrap is reaped, and
            # reaped only once the kernel has emptied its namespace).
            gone = reaper.reap_group(self._group)
            gone = ORPHANS.wait() and gone
            if self.cgroup is not None:
                gone = self.cgroup.close() and gone
            if self.view is not None:
                self.view.close()  # its page cache and dentries go with its mounts
            if self.lease is not None:
                # Only once nothing of the bot is left is the uid marked clean for the next bot; else the next
                # holder sweeps it first.
                if gone:
                    self.launch.released_at = time.clock_gettime(time.CLOCK_BOOTTIME)
                self.lease.release(clean=gone)
            if self._info_fd is not None:
                os.close(self._info_fd)
                self._info_fd = None
            self.close_stdin()
            self._streams.clear()  # closed just below
            if self._stdout is not None:
                os.close(self._stdout)
                self._stdout = None
            if self.popen.stderr is not None:
                self.popen.stderr.close()
            if self.scratch is not None:
                shutil.rmtree(self.scratch, ignore_errors=True)
        assert self._exit is not None
        return self._exit


class ProcessSandbox(Sandbox):
    """Child processes under rlimits, inside bubblewrap where it works (see the module docstring).

    ``isolate``: None picks bwrap when it works here and falls back loudly otherwise; True requires it (a
    :class:`SandboxError` if it does not work); False never uses it (trusted bots only). ``close_channels=False``
    leaves out the filter's rules against channels between sandboxes (locks, watches, io_uring, page-cache
    probes: :data:`arena.sandbox.seccomp.CHANNEL_RULES`); only the channel tests' controls ask for that.
    ``private_views``: each bwrap sandbox reads the runtime and its bot from mounts of its own
    (:mod:`arena.sandbox.views`): None where the host can (else a warning), True requires it, False never (the
    page-cache channel's controls).
    """

    name = "process"

    def __init__(self, isolate: bool | None = None, use_cgroups: bool = True, close_channels: bool = True,
                 private_views: bool | None = None) -> None:
        reaper.become_subreaper()
        works, reason = bwrap_status() if isolate is not False else (False, "isolation turned off")
        if isolate and not works:
            raise SandboxError(f"bubblewrap isolation was asked for but is not available: {reason}")
        self.isolated = works
        self.reason = reason
        self.per_bot_uid = works and os.geteuid() == 0
        self.cgroups = cgroups.detect()[0] if use_cgroups else None
        if self.cgroups is not None:
            cgroups.sweep_stale(self.cgroups)
        self.close_channels = close_channels
        self.filter = seccomp.host_program(close_channels) if works else None
        self.launched: list[Launch] = []
        if not works:
            _warn_unisolated(reason)
        if not works or private_views is False:
            can_view, self.views_reason = False, no_views(works, reason)
        else:  # asked for: built if need be; else only where the organiser built the runtime image
            can_view, self.views_reason = views.status() if private_views else views.ready()
        if private_views and not can_view:
            raise SandboxError(f"private views were asked for but are not available: {self.views_reason}")
        self.views = can_view
        if can_view:
            views.sweep_stale()

    @property
    def variant(self) -> str:
        return "bwrap" if self.isolated else "plain"

    def guarantees(self) -> dict[str, tuple[bool, str]]:
        """What this sandbox guarantees about a hostile bot, each with a one-line reason."""
        iso, uid, cg, kf = self.isolated, self.per_bot_uid, self.cgroups is not None, self.filter is not None
        closed = iso and kf and self.close_channels
        no_iso = f"no bwrap ({self.reason})"
        return {
            "filesystem": (iso, "only /usr, a few /etc files, /protocol and its own /bot, read-only" if iso
                           else no_iso + ": reads all this user can"),
            "network": (iso, "empty network namespace, no loopback peer" if iso else no_iso),
            "proc_and_signals": (iso, "own pid namespace: cannot see or signal the referee or other bots" if iso
                                 else no_iso + ": sees /proc and can signal this user's processes"),
            "environment": (True, "explicit minimal environment"),
            "scratch_cap": (iso, f"tmpfs at {SCRATCH_DIR} with a size cap" if iso
                            else no_iso + ": scratch is a host directory, only RLIMIT_FSIZE per file"),
            "processes": (uid or cg, "RLIMIT_NPROC on a per-bot uid" if uid else "pids cgroup" if cg
                          else "RLIMIT_NPROC would count every process of a shared uid (not enforced for root)"),
            "per_bot_uid": (uid, "a dedicated unprivileged uid per running bot" if uid
                            else "runner is not root or bwrap is missing: bots share the runner's uid"),
            "memory_limit_fault": (cg, "memory cgroup: an OOM kill is a `limit` fault" if cg
                                   else "RLIMIT_DATA only: running out is a MemoryError, reported as a crash"),
            "tree_kill": (True, ("process group (the namespace's init: the kernel kills the namespace)"
                                 + (" + cgroup" if cg else "") if iso
                                 else "process group + cgroup" if cg
                                 else "session and descendant sweep (a walk over /proc)") + ", reaped as subreaper"),
            "keyrings": (iso and kf, "seccomp: add_key, request_key and keyctl refused" if iso and kf
                         else no_iso if not iso else "no seccomp filter for this architecture"),
            "user_namespaces": (iso and kf, "seccomp: clone/unshare with CLONE_NEWUSER refused" if iso and kf
                                else no_iso if not iso else "no seccomp filter for this architecture"),
            "no_shared_locks": (closed,
                                "seccomp: fcntl locks, leases and dnotify, inotify, fanotify, io_uring and page-cache "
                                "probes refused, flock a no-op; /proc/locks hidden" if closed
                                else no_iso + ": bots share this user's files" if not iso
                                else "no seccomp filter for this architecture" if not kf
                                else "the channel rules are turned off (close_channels=False)"),
            "private_caches": (self.views, ("a page cache and dentry cache of its own: erofs images of the runtime and "
                                            "of its bot, mounted anew per launch") if self.views
                               else self.views_reason),
        }

    def launch(self, bot: BotSpec, limits: SandboxLimits, writable: bool = False) -> BotProcess:
        """Start ``bot`` (see :meth:`Sandbox.launch`); ``writable``: its directory is writable inside, which only a
        build in a scratch copy asks for (:mod:`arena.registry.build`)."""
        lease = UidLease() if self.per_bot_uid else None
        scratch: Path | None = None
        cgroup = None
        info_read = info_write = filter_fd = -1
        view: views.View | None = None
        try:
            if self.cgroups is not None:
                # Under bwrap, its own two processes (outside and the namespace's init) count in the cgroup too.
                extra = 2 if self.isolated else 0
                cgroup = cgroups.BotCgroup(self.cgroups, bot.name, limits.memory_mb << 20, limits.processes + extra)
            if ORPHAN_SWEEPS.due():
                self._sweep_orphans()
            if self.isolated:
                info_read, info_write = os.pipe()
                os.set_blocking(info_read, False)
                if self.filter is not None:
                    filter_fd = seccomp.program_fd(self.filter)
                if self.views:
                    view = views.open_view(bot.directory, bot.files_hash)
                command = bwrap_command(bot.directory, [], limits, lease.uid if lease else None, info_write, writable,
                                        filter_fd if filter_fd >= 0 else None, view)
                cwd: Path = Path("/")
                env = {"PATH": SYSTEM_PATH}
            else:
                scratch = Path(tempfile.mkdtemp(prefix=f"arena-{bot.name}-"))
                command, cwd, env = list(bot.command), bot.directory, bot_environment(scratch)
        except (OSError, SandboxError) as error:
            self._cleanup(lease, cgroup, scratch, view, info_read, info_write, filter_fd)
            if isinstance(error, SandboxError):
                raise
            raise SandboxError(f"cannot prepare the sandbox: {error}") from error
        # Our own pipes for stdin and stdout: under bwrap they reach the bot as extra descriptors that the shim
        # moves to 0 and 1, so that bwrap's own two processes never hold them and a bot closing its stdout is
        # an end of file we see at once. (bwrap closes inherited descriptors in itself, not in its child.)
        in_read, in_write = os.pipe()
        out_read, out_write = os.pipe()
        gate_read, gate_write = os.pipe()
        if self.isolated:
            command = [*gate(None), *command, *shim(in_read, out_write), *bot.command]
            stdio: dict[str, Any] = {"stdin": gate_read, "stdout": subprocess.DEVNULL,
                                     "pass_fds": tuple(fd for fd in (in_read, out_write, info_write, filter_fd)
                                                       if fd >= 0)}
        else:
            command = [*gate(gate_read), *command]
            stdio = {"stdin": in_read, "stdout": out_write, "pass_fds": (gate_read,)}
        pipes = (info_read, info_write, in_read, in_write, out_read, out_write, gate_read, gate_write, filter_fd)
        try:
            # No preexec_fn: nothing of Python runs in the child, so subprocess forks with vfork and a launch is
            # safe beside threads (the league server checks uploads from threads). The child waits at the gate
            # while we put it in its cgroup and set its rlimits, from here.
            popen = subprocess.Popen(command, cwd=cwd, env=env, stderr=subprocess.PIPE, start_new_session=True,
                                     close_fds=True, **stdio)
        except OSError as error:
            self._cleanup(lease, cgroup, scratch, view, *pipes)
            if self.isolated:
                raise SandboxError(f"cannot start bwrap: {error}") from error
            return FailedBot(f"could not start {' '.join(bot.command)!r}: {error.strerror or error}")
        reaper.LAUNCHED.add(popen.pid)  # before it leaves the gate: reap_adopted leaves it to us
        for fd in (info_write, in_read, out_write, gate_read, filter_fd):
            if fd >= 0:
                os.close(fd)
        try:
            _set_up(popen.pid, cgroup, rlimits(limits, self.per_bot_uid, cgroup is not None))
        except SandboxError as error:
            # Our set-up failed, not the bot (an rlimit the host refuses, a cgroup that went away): the host's
            # failure, with its cause. The child never passed the gate.
            reaper.kill_group(popen.pid)
            popen.wait()
            reaper.LAUNCHED.discard(popen.pid)
            assert popen.stderr is not None
            popen.stderr.close()
            self._cleanup(lease, cgroup, scratch, view, info_read, in_write, out_read, gate_write)
            raise SandboxError(f"cannot start {bot.name}: {error}") from error
        os.write(gate_write, GO)
        os.close(gate_write)
        record = Launch(bot.directory, popen.pid, lease.uid if lease else None,
                        cgroup=list(cgroup.dirs) if cgroup else [], view=view.directory if view else None)
        self.launched = [*self.launched[-200:], record]
        return ProcessBot(popen, in_write, out_read, scratch, limits, record, self.isolated, lease, cgroup,
                          info_read if info_read >= 0 else None, view)

    def _sweep_orphans(self) -> None:
        """Sandboxes left by runners killed as they started them: found in their stale cgroups where the host has
        cgroups, else by a walk over /proc (which grows with every process on the host; paced by
        :data:`ORPHAN_SWEEPS`)."""
        if self.cgroups is not None:
            cgroups.sweep_stale(self.cgroups)
        elif self.isolated:
            sweep_orphan_inits()
        reaper.reap_adopted()  # what the sweeps killed is ours to reap when its runner was our child
        if self.views:
            views.sweep_stale()  # after the inits: a dead runner's sandboxes held its mounts

    @staticmethod
    def _cleanup(lease: UidLease | None, cgroup: cgroups.BotCgroup | None, scratch: Path | None,
                 view: views.View | None, *fds: int) -> None:
        if lease is not None:
            lease.release()
        if cgroup is not None:
            cgroup.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        if view is not None:
            view.close()
        for fd in fds:
            if fd >= 0:
                os.close(fd)




def no_views(isolated: bool, reason: str) -> str:
    """Why a sandbox without private views has none."""
    return "turned off (private_views=False)" if isolated else f"no bwrap ({reason}): bots share this user's files"


GO = b"go\n"


def gate(fd: int | None) -> list[str]:
    """The command that holds a launched child until the runner has set it up, then execs the rest of the line.

    It reads ``go`` from descriptor ``fd`` (None: its stdin, then /dev/null for what it execs); anything else --
    the runner died, or its set-up failed -- ends it before the bot starts. A shell, so that no Python runs in
    the child: dash where the gate is stdin, bash (which takes descriptors above 9) otherwise.
    """
    if fd is None:
        return [SH, "-c", f'read -r go && [ "$go" = go ] || exit {GATE_STATUS}; exec "$@" </dev/null', "arena-gate"]
    return [BASH, "-c", f'read -r go <&{fd} && [ "$go" = go ] || exit {GATE_STATUS}; exec {fd}<&-; exec "$@"',
            "arena-gate"]


GATE_STATUS = 125


def _set_up(pid: int, cgroup: cgroups.BotCgroup | None, limits: tuple[Rlimit, ...]) -> None:
    """Put the held child ``pid`` in its cgroup and set its rlimits; a :class:`SandboxError` names what failed."""
    step = "joining the bot's cgroup"
    try:
        if cgroup is not None:
            cgroup.add(pid)
        for limit in limits:
            step = f"setting {limit} (limits.{limit.key})" if limit.key else f"setting {limit}"
            limit.apply(pid)
    except (OSError, ValueError) as error:
        raise SandboxError(f"{step} failed: {error}") from error
