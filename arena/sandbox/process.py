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

The runner makes itself a child subreaper, so a bot's double-forked daemons are reparented to us rather than to
init, where the sweep finds and reaps them.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import logging
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from arena.manifest import BotSpec
from arena.sandbox import PROTOCOL_LIB, BotProcess, Exit, Sandbox, SandboxError, SandboxLimits, Stream
from arena.sandbox import cgroups

LOGGER = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36
READ_CHUNK = 1 << 16
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
BWRAP = "/usr/bin/bwrap"
SETPRIV = "/usr/bin/setpriv"
BOT_DIR = "/bot"
"""Where the bot's own directory appears (read-only, the working directory) inside the sandbox."""
PROTOCOL_DIR = "/protocol"
SCRATCH_DIR = "/tmp"
"""The bot's size-capped private tmpfs inside the sandbox (also HOME and TMPDIR)."""
RUNTIME_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
RUNTIME_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
"""The few files of /etc that interpreters read; never the whole of the host's /etc."""
UID_BASE = 60000
UID_COUNT = 1000
"""Per-bot uids (when the runner is root) are taken from [UID_BASE, UID_BASE + UID_COUNT), one per running bot."""
UID_LOCKS = Path("/run/arena-uids")


def become_subreaper() -> bool:
    """Make orphans of our descendants our children (Linux); False where the kernel refuses."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, pgid, session) of a live process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    return int(fields[1]), int(fields[2]), int(fields[3])


def _all_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


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
    return [pid for pid in _all_pids() if uid_of(pid) == uid]


def bot_environment(scratch: Path | str, protocol: Path | str = PROTOCOL_LIB) -> dict[str, str]:
    """The whole environment a bot gets: nothing of the referee's own variables leaks through."""
    return {
        "PATH": SYSTEM_PATH,
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(protocol),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }


def _rlimits(limits: SandboxLimits, per_bot_uid: bool, memory_cgroup: bool) -> list[tuple[int, tuple[int, int]]]:
    mib = 1 << 20
    # RLIMIT_DATA, not RLIMIT_AS: JIT runtimes (V8, the JVM) reserve gigabytes of address space they never touch.
    # With a memory cgroup the cgroup is the real cap (an OOM kill we can report as a limit); RLIMIT_DATA then
    # only stops address-space games far above it, instead of turning the cap into a MemoryError crash.
    data = limits.memory_mb * mib * (2 if memory_cgroup else 1) + (256 * mib if memory_cgroup else 0)
    result = [
        # Soft below hard, so an overrun first sends SIGXCPU, which we report as a limit rather than a crash.
        (resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 2)),
        (resource.RLIMIT_DATA, (data, data)),
        (resource.RLIMIT_FSIZE, (limits.file_mb * mib, limits.file_mb * mib)),
        (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),
        (resource.RLIMIT_CORE, (0, 0)),
    ]
    if per_bot_uid:
        # Counts the processes of the bot's own uid; meaningless (and not enforced) for a shared or root uid.
        result.append((resource.RLIMIT_NPROC, (limits.processes, limits.processes)))
    return result


class UidLease:
    """An unprivileged uid held by one running bot, locked so that no other bot (in this or any other runner
    process on the host) gets it until it is released."""

    def __init__(self) -> None:
        try:
            UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
        except OSError as error:
            raise SandboxError(f"cannot create {UID_LOCKS} for per-bot uids: {error}") from error
        busy = {uid_of(pid) for pid in _all_pids()}
        for uid in range(UID_BASE, UID_BASE + UID_COUNT):
            if uid in busy:
                continue  # a process of a crashed runner, or a real user: never share it
            fd = os.open(UID_LOCKS / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise SandboxError(f"no free per-bot uid in {UID_BASE}..{UID_BASE + UID_COUNT - 1}")

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _runtime_binds() -> list[str]:
    """Read-only binds of the system runtime; symlinked top-level dirs (merged /usr) are recreated as symlinks."""
    args: list[str] = []
    for path in RUNTIME_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--perms", "0755", "--dir", "/etc"]  # else bwrap makes it root-only and lookups fail with EACCES
    for path in RUNTIME_ETC:
        args += ["--ro-bind-try", path, path]
    return args


def bwrap_command(bot_dir: Path, command: list[str], limits: SandboxLimits, uid: int | None,
                  info_fd: int | None = None) -> list[str]:
    """The bwrap command line that runs ``command`` for a bot in ``bot_dir`` (``uid`` when we are root)."""
    args = [BWRAP]
    if uid is None:
        args += ["--unshare-all"]  # includes the user namespace: we are unprivileged anyway
    else:
        # As root, a user namespace would map the bot back to root outside; we drop to a real unprivileged uid
        # instead, so every other namespace of --unshare-all, but not the user one.
        args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    args += ["--die-with-parent", "--new-session", *_runtime_binds(), "--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(limits.scratch_mb << 20), "--tmpfs", SCRATCH_DIR,
             "--ro-bind", str(PROTOCOL_LIB), PROTOCOL_DIR, "--ro-bind", str(bot_dir), BOT_DIR, "--chdir", BOT_DIR,
             "--clearenv"]
    for key, value in bot_environment(SCRATCH_DIR, PROTOCOL_DIR).items():
        args += ["--setenv", key, value]
    if info_fd is not None:
        args += ["--info-fd", str(info_fd)]
    if uid is not None:
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                 SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all", "--no-new-privs"]
    return [*args, "--", *command]


BASH = "/bin/bash"


def shim(stdin_fd: int, stdout_fd: int) -> list[str]:
    """Inside the sandbox, move our pipes to the bot's stdin and stdout and exec its command (PATH lookup)."""
    return [BASH, "-c", f'exec 0<&{stdin_fd} 1>&{stdout_fd} {stdin_fd}<&- {stdout_fd}>&-; exec "$@"', "bot"]


@lru_cache(maxsize=1)
def bwrap_status() -> tuple[bool, str]:
    """Whether bwrap can run a bot here exactly as :class:`ProcessSandbox` would, and why not."""
    if not os.access(BWRAP, os.X_OK):
        return False, f"{BWRAP} is not installed"
    root = os.geteuid() == 0
    if not os.access(BASH, os.X_OK):
        return False, f"{BASH} is missing; it hands the bot its pipes inside the sandbox"
    if root and not os.access(SETPRIV, os.X_OK):
        return False, f"{SETPRIV} (util-linux) is missing; it drops bots to their own uid"
    with tempfile.TemporaryDirectory(prefix="arena-probe-") as probe:
        os.chmod(probe, 0o755)
        command = bwrap_command(Path(probe), [BASH, "-c", "test -w /tmp && test -r /bot && echo ok"],
                                SandboxLimits(), UID_BASE + UID_COUNT - 1 if root else None)
        try:
            done = subprocess.run(command, capture_output=True, timeout=20, env={"PATH": SYSTEM_PATH},
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as error:
            return False, f"bwrap did not run: {error}"
    if done.returncode != 0 or done.stdout.strip() != b"ok":
        err = done.stderr.decode(errors="replace").strip().splitlines()
        return False, f"bwrap fails here: {err[-1] if err else f'status {done.returncode}'}"
    return True, f"bwrap works ({'root: a dedicated uid per bot' if root else 'unprivileged: user namespace'})"


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

    def write(self, data: bytes | memoryview) -> int:
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
        limit = {signal.SIGXCPU: "cpu time", signal.SIGXFSZ: "file size"}.get(signal.Signals(signum))
        return Exit(None, signum, limit)

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
                init_stat = None if init is None else _stat(init)
                if init is not None and init_stat is not None and init_stat[0] in (self.pid, os.getpid()):
                    _signal(init)
                    _ADOPTED.add(init)  # once bwrap itself is gone, the namespace's init is our child to reap
                if self.popen.returncode is None:
                    _signal(self.pid or 0)
            _kill_tree(self.pid or 0, self.marker)
            if self.lease is not None:
                _sweep_uid(self.lease.uid)
            if self.cgroup is not None:
                self.cgroup.kill_all()
            self.popen.wait()
            self._exit = exit_before or self._describe(self.popen.returncode)
            # The namespace's init is reparented to us only once bwrap is reaped: wait for it briefly.
            for _ in range(200):
                _reap_orphans()
                if not any(os.path.exists(f"/proc/{pid}") for pid in _ADOPTED):
                    break
                time.sleep(0.002)
            if self.cgroup is not None:
                self.cgroup.close()
            if self.lease is not None and _sweep_uid(self.lease.uid):
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


def _signal(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _sweep_uid(uid: int) -> bool:
    """SIGKILL every process of ``uid`` until there are none (a bot's uid is its own while it runs)."""
    for _ in range(400):
        live = pids_of_uid(uid)
        if not live:
            return True
        for pid in live:
            _signal(pid)
        _reap_orphans()
        time.sleep(0.005)
    LOGGER.error("processes of uid %d survive SIGKILL (%s); the uid stays locked until this runner exits",
                 uid, pids_of_uid(uid))
    return False


def _kill_tree(root: int, marker: bytes | None = None) -> None:
    """SIGKILL ``root``, its process group and session, and every descendant, including orphans reparented to us
    that carry ``marker`` in their environment (under bwrap there are none: the pid namespace holds them).

    Repeated until nothing is found, because a fork bomb can fork between our scan and our kill.
    """
    me = os.getpid()
    session = root  # the bot was started with start_new_session, so its pid is its session and group id
    for _ in range(50):
        found = []
        parents: dict[int, int] = {}
        for pid in _all_pids():
            info = _stat(pid)
            if info is None or pid == me:
                continue
            ppid, pgid, sid = info
            parents[pid] = ppid
            if pid == root or pgid == session or sid == session:
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
                   if ppid == me and pid not in marked and _carries(pid, marker)]
        _ADOPTED.update(orphans)
        targets = (marked | set(orphans)) - {me}
        live = [pid for pid in targets if _stat(pid) is not None and not _is_zombie(pid)]
        for pid in live:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        _reap_orphans()
        if not live:
            return
        time.sleep(0.005)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return True
    return data[data.rindex(b")") + 2 : data.rindex(b")") + 3] == b"Z"


_ADOPTED: set[int] = set()
"""Orphans of bots, reparented to us, that we killed and must reap; no other child of ours is ever reaped here."""


def _carries(pid: int, marker: bytes | None) -> bool:
    if marker is None:
        return False
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return marker in b"\0" + handle.read()
    except OSError:
        return False


def _reap_orphans() -> None:
    for pid in list(_ADOPTED):
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                _ADOPTED.discard(pid)
        except ChildProcessError:
            if not os.path.exists(f"/proc/{pid}"):
                _ADOPTED.discard(pid)  # gone; while its dying parent lives it is not ours yet, so keep it


class ProcessSandbox(Sandbox):
    """Child processes under rlimits, inside bubblewrap where it works (see the module docstring).

    ``isolate``: None picks bwrap when it works here and falls back loudly otherwise; True requires it (a
    :class:`SandboxError` if it does not work); False never uses it (trusted bots only).
    """

    name = "process"

    def __init__(self, isolate: bool | None = None, use_cgroups: bool = True) -> None:
        self.subreaper = become_subreaper()
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

    def launch(self, bot: BotSpec, limits: SandboxLimits) -> BotProcess:
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
                info_read, info_write = os.pipe()
                os.set_blocking(info_read, False)
                command = bwrap_command(bot.directory, [], limits, lease.uid if lease else None, info_write)
                cwd: Path = Path("/")
                env = {"PATH": SYSTEM_PATH}
            else:
                scratch = Path(tempfile.mkdtemp(prefix=f"arena-{bot.name}-"))
                command, cwd, env = list(bot.command), bot.directory, bot_environment(scratch)
        except OSError as error:
            self._cleanup(lease, cgroup, scratch, info_read, info_write)
            raise SandboxError(f"cannot prepare the sandbox: {error}") from error
        rlimits = _rlimits(limits, self.per_bot_uid, cgroup is not None)

        def in_child() -> None:
            if cgroup is not None:
                cgroup.join()
            for which, values in rlimits:
                resource.setrlimit(which, values)

        # Our own pipes for stdin and stdout: under bwrap they reach the bot as extra descriptors that the shim
        # moves to 0 and 1, so that bwrap's own two processes never hold them and a bot closing its stdout is
        # an end of file we see at once. (bwrap closes inherited descriptors in itself, not in its child.)
        in_read, in_write = os.pipe()
        out_read, out_write = os.pipe()
        if self.isolated:
            command += [*shim(in_read, out_write), *bot.command]
            stdio = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         pass_fds=(in_read, out_write, info_write))
        else:
            stdio = dict(stdin=in_read, stdout=out_write)
        try:
            popen = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=in_child,
                close_fds=True,
                **stdio,  # type: ignore[call-overload]
            )
        except (FileNotFoundError, PermissionError, OSError) as error:
            self._cleanup(lease, cgroup, scratch, info_read, info_write, in_read, in_write, out_read, out_write)
            if self.isolated:
                raise SandboxError(f"cannot start bwrap: {error}") from error
            return FailedBot(f"could not start {' '.join(bot.command)!r}: {error.strerror or error}")
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


class FailedBot(BotProcess):
    """A bot whose command could not even start: it reads as a process that exited at once, with the reason on
    stderr, so the referee reports a ``crash`` fault like any other."""

    def __init__(self, reason: str) -> None:
        self.reason = reason.encode() + b"\n"
        self._read, self._write = os.pipe()
        os.write(self._write, self.reason)
        os.close(self._write)
        self._open = True

    def read_fds(self) -> list[int]:
        return [self._read] if self._open else []

    def read(self, fd: int) -> list[tuple[Stream, bytes]]:
        data = os.read(fd, READ_CHUNK)
        if not data:
            self._open = False
            return [("stderr", b""), ("stdout", b"")]
        return [("stderr", data)]

    def write_fd(self) -> int | None:
        return None

    def write(self, data: bytes | memoryview) -> int:
        raise BrokenPipeError("bot never started")

    def close_stdin(self) -> None:
        pass

    def poll(self) -> Exit | None:
        return Exit(127)

    def kill(self) -> Exit:
        if self._open:
            os.close(self._read)
            self._open = False
        return Exit(127)
