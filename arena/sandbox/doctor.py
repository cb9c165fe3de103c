"""``arena doctor``: what this host can guarantee about hostile bots, each check with yes/no and a reason."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass

from arena.sandbox import cgroups, docker_engine_status, views
from arena.sandbox.bwrap import BWRAP, bwrap_status
from arena.sandbox.common import SYSTEM_PATH


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    reason: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _run(command: list[str], timeout: float = 10) -> tuple[bool, str]:
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, str(error)
    lines = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
    return done.returncode == 0, (lines[-1] if lines else f"status {done.returncode}")


def _namespace(flag: str, what: str) -> Check:
    if os.access(BWRAP, os.X_OK):
        ok, detail = _run([BWRAP, flag, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "/bin/true"])
        tool = "bwrap"
    elif shutil.which("unshare"):
        short = {"--unshare-user": "-U", "--unshare-net": "-n", "--unshare-pid": "-pf"}[flag]
        ok, detail = _run(["unshare", short, "/bin/true"])
        tool = "unshare"
    else:
        return Check(f"{what} namespace", False, "neither bwrap nor unshare is installed to try")
    return Check(f"{what} namespace", ok, f"{tool} {flag} works" if ok else f"{tool} {flag} fails: {detail}")


def _program(name: str, flag: str) -> Check:
    path = shutil.which(name, path=SYSTEM_PATH)
    if path is None:
        return Check(name, False, f"not on the bots' PATH ({SYSTEM_PATH})")
    ok, detail = _run([path, flag])
    version = (subprocess.run([path, flag], capture_output=True, timeout=10, check=False).stdout.decode().strip()
               if ok else "")
    return Check(name, ok, f"{path} {version}".strip() if ok else f"{path} fails: {detail}")


def _docker_engine() -> Check:
    """Asked through the SDK the backend itself uses, not the docker command line, which the backend never needs."""
    ok, reason = docker_engine_status()
    return Check("docker", ok, reason)


def checks() -> list[Check]:
    """Every check, in the order ``arena doctor`` prints them."""
    works, reason = bwrap_status()
    layout, cgroup_reason = cgroups.detect()
    root = os.geteuid() == 0
    result = [
        Check("bwrap installed", os.access(BWRAP, os.X_OK), BWRAP if os.access(BWRAP, os.X_OK)
              else f"{BWRAP} missing (Debian/Ubuntu: apt-get install bubblewrap)"),
        Check("bwrap sandbox works", works, reason),
        _namespace("--unshare-user", "user"),
        _namespace("--unshare-net", "network"),
        _namespace("--unshare-pid", "pid"),
        Check("running as root (per-bot uids)", root,
              "a dedicated unprivileged uid per running bot" if root
              else "not root: bots share this user's uid (processes capped by cgroup only, if any)"),
        Check("memory cgroup (memory limit fault)", layout is not None, cgroup_reason),
        Check("pids cgroup", layout is not None and layout.pids is not None,
              "per-bot pids.max" if layout is not None and layout.pids is not None else "no pids controller"),
        Check("private views (page and dentry caches)", *views.status()),
        _docker_engine(),
        _program("python3", "--version"),
        _program("node", "--version"),
    ]
    return result


def sandbox_guarantees() -> dict[str, tuple[bool, str]]:
    """What ``get_sandbox("process")`` would guarantee here (without its warning, which doctor replaces)."""
    from arena.sandbox.process import ProcessSandbox

    logger = logging.getLogger("arena.sandbox.process")
    level, logger.disabled = logger.disabled, True
    try:
        return ProcessSandbox().guarantees()
    finally:
        logger.disabled = level


def docker_guarantees() -> dict[str, tuple[bool, str]] | None:
    """What ``get_sandbox("docker")`` guarantees, or None when no engine answers here."""
    if not docker_engine_status()[0]:
        return None
    from arena.sandbox.docker import GUARANTEES, shared_caches, views_status

    works, reason = views_status()
    return GUARANTEES | ({} if works else {"private_caches": shared_caches(reason)})
