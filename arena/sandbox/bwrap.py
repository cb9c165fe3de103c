"""Bubblewrap for the ``process`` backend: the command line that puts a bot in its sandbox, the shim that hands it
its pipes inside, the probe that says whether bwrap works on this host at all, and the sweep of sandboxes whose
runner was killed while they started.

The probe runs a throw-away sandbox over an empty directory, ``$TMPDIR/arena-probe-PID-*``; a runner killed during
the probe leaves that directory behind, so the next probe first sweeps those of runners that are gone.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from arena import procfs
from arena.sandbox import SandboxLimits
from arena.sandbox.common import (
    BOT_DIR,
    PROTOCOL_DIR,
    PROTOCOL_LIB,
    RUNTIME_DIRS,
    RUNTIME_ETC,
    SCRATCH_DIR,
    SYSTEM_PATH,
    Every,
    bot_environment,
)
from arena.sandbox.uids import UID_BASE, UID_COUNT
from arena.sandbox.views import MOUNTS, View

BWRAP = "/usr/bin/bwrap"
SETPRIV = "/usr/bin/setpriv"
BASH = "/bin/bash"
SH = "/bin/sh"
PROBE_PREFIX = "arena-probe-"
PROBE_NAME = re.compile(r"arena-probe-(?:(\d+)-)?[A-Za-z0-9_]+")
BUILD_SOURCE = "/src"
"""Where a build (``writable``) finds the bot's sources, read-only: its ``/bot`` is a size-capped tmpfs that the
build fills from there (arena.registry.build), so what a build writes is bounded and never touches the host's disk."""
UNOWNED_PROBE_AGE_S = 600
"""A probe directory without a pid in its name (made before names carried one) is swept once this old: no probe
lasts longer than its 20 s timeout."""


@lru_cache(maxsize=8)
def _runtime_binds(root: str = "") -> tuple[str, ...]:
    """Read-only binds of the system runtime, from the host or from ``root`` (a sandbox's private mount of the
    runtime image, :mod:`arena.sandbox.views`); symlinked top-level dirs (merged /usr) are recreated as symlinks.
    Looked up once per runner: the host's runtime does not move under a running tournament."""
    args: list[str] = []
    for path in RUNTIME_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", root + path, path]
    args += ["--perms", "0755", "--dir", "/etc"]  # else bwrap makes it root-only and lookups fail with EACCES
    for path in RUNTIME_ETC:
        args += ["--ro-bind-try", root + path, path]
    return tuple(args)


MASKED_PROC = ("/proc/locks",)
"""Files of the sandbox's own /proc that show more than its own namespace: ``/proc/locks`` lists the
open-file-description locks of every namespace on the host (with pid -1), a view of other sandboxes' locks.
Each gets ``/dev/null`` bound over it, read-only: it reads as empty."""


def _masked_proc() -> list[str]:
    return [arg for path in MASKED_PROC for arg in ("--ro-bind", "/dev/null", path)]


def bwrap_command(bot_dir: Path, command: list[str], limits: SandboxLimits, uid: int | None,
                  info_fd: int | None = None, writable: bool = False, seccomp_fd: int | None = None,
                  view: View | None = None) -> list[str]:
    """The bwrap command line that runs ``command`` for a bot in ``bot_dir`` (``uid`` when we are root).

    ``writable`` is for a build: ``bot_dir`` is bound read-only at ``BUILD_SOURCE`` and ``/bot`` is a size-capped
    tmpfs that the build copies it into and writes its result to (see :mod:`arena.registry.build`);
    ``seccomp_fd`` holds the filter bwrap installs before it execs ``command`` (:mod:`arena.sandbox.seccomp`);
    ``view``: the runtime, ``bot_dir`` and ``protocol/`` come from the sandbox's private mounts of their images
    instead of the host's files (:mod:`arena.sandbox.views`)."""
    protocol = PROTOCOL_LIB
    if view is not None:
        bot_dir, protocol = view.bot / "bot", view.bot / "protocol"
    args = [BWRAP]
    if uid is None:
        args += ["--unshare-all"]  # includes the user namespace: we are unprivileged anyway
    else:
        # As root, a user namespace would map the bot back to root outside; we drop to a real unprivileged uid
        # instead, so every other namespace of --unshare-all, but not the user one.
        args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    args += ["--die-with-parent", "--new-session", *_runtime_binds(str(view.runtime) if view else ""),
             "--proc", "/proc", *_masked_proc(),
             "--dev", "/dev",
             "--perms", "1777", "--size", str(limits.scratch_mb << 20), "--tmpfs", SCRATCH_DIR,
             "--ro-bind", str(protocol), PROTOCOL_DIR,
             *(["--ro-bind", str(bot_dir), BUILD_SOURCE, "--perms", "0777", "--size", str(limits.scratch_mb << 20),
                "--tmpfs", BOT_DIR] if writable else ["--ro-bind", str(bot_dir), BOT_DIR]),
             "--chdir", BOT_DIR, "--clearenv"]
    for key, value in bot_environment(SCRATCH_DIR, PROTOCOL_DIR).items():
        args += ["--setenv", key, value]
    if info_fd is not None:
        args += ["--info-fd", str(info_fd)]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    if uid is not None:
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                 SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all", "--no-new-privs"]
    return [*args, "--", *command]


def shim(stdin_fd: int, stdout_fd: int) -> list[str]:
    """Inside the sandbox, move our pipes to the bot's stdin and stdout and exec its command (PATH lookup)."""
    return [BASH, "-c", f'exec 0<&{stdin_fd} 1>&{stdout_fd} {stdin_fd}<&- {stdout_fd}>&-; exec "$@"', "bot"]


def sweep_probes(directory: Path | None = None) -> list[Path]:
    """Remove the probe directories of runners that are gone (killed during their probe); return them."""
    root = Path(directory or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = PROBE_NAME.fullmatch(entry.name)
        if match is None or not entry.is_dir() or entry.is_symlink():
            continue
        if match.group(1) is not None:
            stale = not procfs.running(int(match.group(1)))
        else:
            try:
                stale = time.time() - entry.stat().st_mtime > UNOWNED_PROBE_AGE_S
            except OSError:
                continue
        if stale:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def sweep_orphan_inits() -> list[int]:
    """SIGKILL the namespace inits of arena sandboxes whose bwrap is gone; return their pids.

    A runner killed while a sandbox starts (kill -9 of a tournament, of a Dask worker) often leaves one behind:
    bwrap's ``--die-with-parent`` reaches the namespace's init only once the init has asked for it, and a kill
    between bwrap's clone and that request leaves the init waiting forever, holding the bot's pipes. Nothing else
    ever kills it, so launches sweep them: where the host has cgroups, from the dead runner's cgroups
    (:func:`arena.sandbox.cgroups.sweep_stale`); else with this walk over /proc, whose cost grows with every process
    on the host (paced by :data:`ORPHAN_SWEEPS`). Such an init is recognised as a process named bwrap that is
    pid 1 of its own pid namespace, whose parent is not a bwrap (a live sandbox's init is always its bwrap's child),
    and whose command line binds arena's ``protocol/`` (another program's sandboxes are not ours to kill). From our
    namespace, the parent's, a SIGKILL reaches a namespace init, and takes every process inside with it.
    """
    table = {pid: info for pid in procfs.all_pids() if (info := procfs.stat(pid)) is not None}
    # protocol/ bound from the host, or from a view's mount of its bot image
    markers = (f"\0--ro-bind\0{PROTOCOL_LIB}\0{PROTOCOL_DIR}\0".encode(), f"\0--ro-bind\0{MOUNTS}/".encode())
    killed: list[int] = []
    for pid, info in table.items():
        if info.name != "bwrap" or not info.running:
            continue
        parent = table.get(info.ppid)
        if parent is not None and parent.name == "bwrap":
            continue
        if procfs.namespace_init(pid) and any(marker in procfs.command_line(pid) for marker in markers):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue
            killed.append(pid)
    return killed


ORPHAN_SWEEPS = Every(2.0)
"""How often a launch sweeps for sandboxes of runners that died: the stale cgroups where the host has cgroups
(a directory listing), else :func:`sweep_orphan_inits` (it reads every process's stat: about 5 ms on a host of 100
processes, 50-100 ms with 2,000)."""


@lru_cache(maxsize=1)
def bwrap_status() -> tuple[bool, str]:
    """Whether bwrap can run a bot here exactly as the ``process`` backend would, and why not."""
    if not os.access(BWRAP, os.X_OK):
        return False, f"{BWRAP} is not installed"
    root = os.geteuid() == 0
    if not os.access(BASH, os.X_OK):
        return False, f"{BASH} is missing; it hands the bot its pipes inside the sandbox"
    if root and not os.access(SETPRIV, os.X_OK):
        return False, f"{SETPRIV} (util-linux) is missing; it drops bots to their own uid"
    sweep_probes()
    sweep_orphan_inits()
    with tempfile.TemporaryDirectory(prefix=f"{PROBE_PREFIX}{os.getpid()}-") as probe:
        os.chmod(probe, 0o755)
        command = bwrap_command(Path(probe), [BASH, "-c", "test -w /tmp && test -r /bot && echo ok"],
                                SandboxLimits(), UID_BASE + UID_COUNT - 1 if root else None)
        try:
            done = subprocess.run(command, capture_output=True, timeout=20, env={"PATH": SYSTEM_PATH},
                                  stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            return False, f"bwrap did not run: {error}"
    if done.returncode != 0 or done.stdout.strip() != b"ok":
        err = done.stderr.decode(errors="replace").strip().splitlines()
        return False, f"bwrap fails here: {err[-1] if err else f'status {done.returncode}'}"
    return True, f"bwrap works ({'root: a dedicated uid per bot' if root else 'unprivileged: user namespace'})"
