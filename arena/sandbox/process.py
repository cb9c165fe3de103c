"""The ``process`` backend: each bot is a child process under rlimits, with a minimal environment and a private
scratch directory, and -- where the host allows it -- inside a bubblewrap sandbox.

Two variants, chosen by :class:`ProcessSandbox` (``isolate=None`` picks the best this host can do):

* **isolated** (bwrap works): every namespace unshared (mount, pid, net, ipc, uts, cgroup; user too when we are not
  root), a read-only view of the system runtime, the bot's own directory read-only at ``/bot`` (its cwd),
  ``protocol/`` read-only at ``/protocol`` (on PYTHONPATH), a size-capped tmpfs at ``/tmp`` as scratch, and -- when
  the runner is root -- a dedicated unprivileged uid per running bot, so RLIMIT_NPROC, kill permissions and file
  access are per bot. Killing SIGKILLs the namespace's init (which takes every process in the namespace with it),
  then sweeps the bot's uid and cgroup, then reaps.
* **plain** (no bwrap): a child process in a new session under the same rlimits; killing sweeps the process tree.
  No filesystem, network, /proc or signal isolation: for trusted bots only. A warning says so, once per run.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena import procfs
from arena.manifest import BotSpec
from arena.sandbox import BotProcess, Exit, Sandbox, SandboxError, SandboxLimits, Stream, cgroups, reaper
from arena.sandbox.bwrap import ORPHAN_SWEEPS, bwrap_command, bwrap_status, shim, sweep_orphan_inits
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
    released_at: float | None = None
    """CLOCK_BOOTTIME when its uid went back to the pool: a process of that uid started later is another bot's."""


class ProcessBot(BotProcess):
    def __init__(self, popen: subprocess.Popen[bytes], stdin_fd: int, stdout_fd: int, scratch: Path | None,
                 limits: SandboxLimits, launch: Launch, isolated: bool = False, lease: UidLease | None = None,
                 cgroup: cgroups.BotCgroup | None = None, info_fd: int | None = None) -> None:
        self.popen = popen
        self.pid = popen.pid
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
            return Exit(None, signum, "memory")
        return Exit(None, signum, SIGNAL_LIMITS.get(signum))

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

    def kill(self) -> Exit:
        if not self._killed:
            self._killed = True
            exit_before = self.poll()
            if self.isolated:
                init = self._ns_init()
                # Killing the namespace's init makes the kernel kill every process in the namespace.
                init_stat = None if init is None else procfs.stat(init)
                if init is not None and init_stat is not None and init_stat.ppid in (self.pid, os.getpid()):
                    reaper.kill(init)
                    ORPHANS.adopt(init)  # once bwrap itself is gone, the namespace's init is our child to reap
            # Then bwrap and its whole tree in one sweep: killed on its own first, bwrap would orphan an init it
            # had not reported yet (a kill during start-up), which would then wait forever.
            reaper.kill_tree(self.pid or 0, self.marker)
            if self.lease is not None:
                reaper.sweep_uid(self.lease.uid)
            if self.cgroup is not None:
                self.cgroup.kill_all()
            self.popen.wait()
            self._exit = exit_before or self._describe(self.popen.returncode)
            ORPHANS.wait()  # the namespace's init is reparented to us only once bwrap is reaped
            if self.cgroup is not None:
                self.cgroup.close()
            if self.lease is not None and reaper.sweep_uid(self.lease.uid):
                self.launch.released_at = time.clock_gettime(time.CLOCK_BOOTTIME)
                self.lease.release()  # only once nothing of the bot is left, so the next bot starts clean
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
    :class:`SandboxError` if it does not work); False never uses it (trusted bots only).
    """

    name = "process"

    def __init__(self, isolate: bool | None = None, use_cgroups: bool = True) -> None:
        reaper.become_subreaper()
        works, reason = bwrap_status() if isolate is not False else (False, "isolation turned off")
        if isolate and not works:
            raise SandboxError(f"bubblewrap isolation was asked for but is not available: {reason}")
        self.isolated = works
        self.reason = reason
        self.per_bot_uid = works and os.geteuid() == 0
        self.cgroups = cgroups.detect()[0] if use_cgroups else None
        if self.cgroups is not None:
            cgroups.remove_stale(self.cgroups)
        self.launched: list[Launch] = []
        if not works:
            _warn_unisolated(reason)

    @property
    def variant(self) -> str:
        return "bwrap" if self.isolated else "plain"

    def guarantees(self) -> dict[str, tuple[bool, str]]:
        """What this sandbox guarantees about a hostile bot, each with a one-line reason."""
        iso, uid, cg = self.isolated, self.per_bot_uid, self.cgroups is not None
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
            "tree_kill": (True, "namespace init + uid + session/descendant sweep, reaped as subreaper" if iso
                          else "session and descendant sweep, reaped as subreaper"),
        }

    def launch(self, bot: BotSpec, limits: SandboxLimits, writable: bool = False) -> BotProcess:
        """Start ``bot`` (see :meth:`Sandbox.launch`); ``writable``: its directory is writable inside, which only a
        build in a scratch copy asks for (:mod:`arena.build`)."""
        lease = UidLease() if self.per_bot_uid else None
        scratch: Path | None = None
        cgroup = None
        info_read = info_write = -1
        try:
            if self.cgroups is not None:
                # Under bwrap, its own two processes (outside and the namespace's init) count in the cgroup too.
                extra = 2 if self.isolated else 0
                cgroup = cgroups.BotCgroup(self.cgroups, bot.name, limits.memory_mb << 20, limits.processes + extra)
            if self.isolated:
                if ORPHAN_SWEEPS.due():
                    sweep_orphan_inits()  # sandboxes left by runners killed as they started them
                info_read, info_write = os.pipe()
                os.set_blocking(info_read, False)
                command = bwrap_command(bot.directory, [], limits, lease.uid if lease else None, info_write, writable)
                cwd: Path = Path("/")
                env = {"PATH": SYSTEM_PATH}
            else:
                scratch = Path(tempfile.mkdtemp(prefix=f"arena-{bot.name}-"))
                command, cwd, env = list(bot.command), bot.directory, bot_environment(scratch)
        except OSError as error:
            self._cleanup(lease, cgroup, scratch, info_read, info_write)
            raise SandboxError(f"cannot prepare the sandbox: {error}") from error
        in_child, cause = _child_setup(cgroup, rlimits(limits, self.per_bot_uid, cgroup is not None))
        # Our own pipes for stdin and stdout: under bwrap they reach the bot as extra descriptors that the shim
        # moves to 0 and 1, so that bwrap's own two processes never hold them and a bot closing its stdout is
        # an end of file we see at once. (bwrap closes inherited descriptors in itself, not in its child.)
        in_read, in_write = os.pipe()
        out_read, out_write = os.pipe()
        if self.isolated:
            command += [*shim(in_read, out_write), *bot.command]
            stdio: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
                                     "pass_fds": (in_read, out_write, info_write)}
        else:
            stdio = {"stdin": in_read, "stdout": out_write}
        pipes = (info_read, info_write, in_read, in_write, out_read, out_write)
        try:
            popen = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stderr=subprocess.PIPE,
                start_new_session=True,
                # Not safe where other threads run (the league server checks uploads from threads): a known
                # risk, kept small by what it runs (a cgroup write, setrlimit calls); the way out is a setup
                # step after exec (the shim), not yet built.
                preexec_fn=in_child,  # noqa: PLW1509
                close_fds=True,
                **stdio,
            )
        except subprocess.SubprocessError as error:
            # Our own set-up failed in the child (an rlimit the host refuses, a cgroup that went away): the
            # host's failure, with the cause the child wrote back, since Popen reports only that one happened.
            self._cleanup(lease, cgroup, scratch, *pipes)
            raise SandboxError(f"cannot start {bot.name}: {cause.read() or error}") from error
        except OSError as error:
            self._cleanup(lease, cgroup, scratch, *pipes)
            if self.isolated:
                raise SandboxError(f"cannot start bwrap: {error}") from error
            return FailedBot(f"could not start {' '.join(bot.command)!r}: {error.strerror or error}")
        finally:
            cause.close()
        for fd in (info_write, in_read, out_write):
            if fd >= 0:
                os.close(fd)
        record = Launch(bot.directory, popen.pid, lease.uid if lease else None,
                        cgroup=list(cgroup.dirs) if cgroup else [])
        self.launched = [*self.launched[-200:], record]
        return ProcessBot(popen, in_write, out_read, scratch, limits, record, self.isolated, lease, cgroup,
                          info_read if info_read >= 0 else None)

    @staticmethod
    def _cleanup(lease: UidLease | None, cgroup: cgroups.BotCgroup | None, scratch: Path | None,
                 *fds: int) -> None:
        if lease is not None:
            lease.release()
        if cgroup is not None:
            cgroup.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        for fd in fds:
            if fd >= 0:
                os.close(fd)


class _ChildCause:
    """A pipe on which the child, between fork and exec, writes why its set-up failed."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()  # close-on-exec: after a successful exec the child holds neither

    def report(self, text: str) -> None:
        try:
            os.write(self.write_fd, text.encode(errors="replace")[:4096])
        except OSError:
            pass

    def read(self) -> str:
        """What the child wrote (it has exited or exec'd by now, so this never blocks for long)."""
        os.close(self.write_fd)
        self.write_fd = -1
        return os.read(self.read_fd, 4096).decode(errors="replace")

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                os.close(fd)
        self.read_fd = self.write_fd = -1


def _child_setup(cgroup: cgroups.BotCgroup | None, limits: tuple[Rlimit, ...]) -> tuple[Callable[[], None],
                                                                                      _ChildCause]:
    """What the bot's first process does before it execs (join its cgroup, set its rlimits), and the pipe on
    which it says what failed."""
    cause = _ChildCause()

    def in_child() -> None:
        step = "joining the bot's cgroup"
        try:
            if cgroup is not None:
                cgroup.join()
            for limit in limits:
                step = f"setting {limit} (limits.{limit.key})" if limit.key else f"setting {limit}"
                limit.apply()
        except BaseException as error:
            cause.report(f"{step} failed in the child: {error}")
            raise

    return in_child, cause
