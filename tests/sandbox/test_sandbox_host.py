"""The process backend and the host: a limit the host cannot grant, the probe's leftovers after a kill, /proc."""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from arena import procfs
from arena.bots.manifest import load_bot
from arena.game.rules import Rules
from arena.match import protocol
from arena.sandbox import SandboxError, SandboxLimits, cgroups
from arena.sandbox.bwrap import bwrap_command, bwrap_status, sweep_probes
from arena.sandbox.process import ProcessSandbox
from arena.sandbox.rlimits import ceiling, ungrantable
from arena.sandbox.uids import UidLease

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]
GREEDY = ROOT / "sample_bots" / "greedy"


def too_many_open_files() -> int:
    cap = ceiling(resource.RLIMIT_NOFILE)
    if cap is None:
        pytest.skip("this host caps no child's open files")
    return cap[0] + 1


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("isolate", [None, False], ids=["best", "plain"])
def test_a_limit_the_host_refuses_is_an_infrastructure_error_with_its_cause(isolate: bool | None) -> None:
    limits = SandboxLimits(open_files=too_many_open_files())
    sandbox = ProcessSandbox(isolate=isolate)
    before = open_fds()
    with pytest.raises(SandboxError) as caught:
        sandbox.launch(load_bot(GREEDY), limits)
    message = str(caught.value)
    # The cause from inside the child, not Popen's "Exception occurred in preexec_fn".
    assert "RLIMIT_NOFILE" in message and "limits.open_files" in message and "preexec_fn" not in message
    assert "not allowed" in message or "not permitted" in message, message
    # No descriptor that was not open before: the worker's others (an earlier test's, closed by the garbage
    # collector meanwhile) may go, which is not this launch's business.
    assert open_fds() - before == set(), "every pipe of the failed launch is closed"
    bot = sandbox.launch(load_bot(GREEDY), SandboxLimits())  # the next launch works (its uid was released)
    assert bot.kill() is not None


def test_the_ungrantable_limit_is_named_and_grantable_ones_pass() -> None:
    refused = ungrantable(SandboxLimits(open_files=too_many_open_files()))
    assert list(refused) == ["open_files"] and "RLIMIT_NOFILE" in refused["open_files"]
    assert ungrantable(SandboxLimits()) == {}


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_probe_directories_of_a_runner_killed_mid_probe_are_swept(tmp_path: Path) -> None:
    if not os.access("/usr/bin/bwrap", os.X_OK):
        pytest.skip("no bwrap: there is no probe")
    # A real runner, killed while its probe runs (its bwrap made to hang so that the kill lands mid-probe).
    runner = subprocess.Popen(
        [sys.executable, "-c",
         ("import subprocess, time\n"
          "subprocess.run = lambda *a, **k: time.sleep(60)\n"
          "from arena.sandbox.bwrap import bwrap_status\n"
          "bwrap_status()\n")],
        env={**os.environ, "TMPDIR": str(tmp_path)}, cwd=ROOT)
    try:
        for _ in range(1000):
            left = list(tmp_path.glob(f"arena-probe-{runner.pid}-*"))
            if left:
                break
            time.sleep(0.01)
        assert left, "the runner never started its probe"
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
    (left[0] / "something").write_text("left behind")
    alive = tmp_path / f"arena-probe-{os.getpid()}-inuse"  # a live runner's probe is not touched
    alive.mkdir()
    other = tmp_path / f"arena-probe-{dead_pid()}-x"
    other.mkdir()
    unrelated = tmp_path / "arena-probes-of-something-else"
    unrelated.mkdir()
    assert sorted(sweep_probes(tmp_path)) == sorted([left[0], other])
    assert not left[0].exists() and not other.exists() and alive.exists() and unrelated.exists()


def test_a_new_probe_sweeps_first_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    leftover = tmp_path / f"arena-probe-{dead_pid()}-abc"
    leftover.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # forget the cached temporary directory
    bwrap_status.__wrapped__()
    assert list(tmp_path.iterdir()) == []


def test_proc_stat_survives_a_command_name_with_spaces_and_parentheses(tmp_path: Path) -> None:
    program = tmp_path / "a b) (c"
    program.symlink_to(sys.executable)
    child = subprocess.Popen([str(program), "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        info = procfs.stat(child.pid)
        assert info is not None and info.running
        assert (info.ppid, info.pgid, info.session) == (os.getpid(), child.pid, child.pid)
        assert info.start_time >= procfs.stat(os.getpid()).start_time  # type: ignore[union-attr]
    finally:
        child.kill()
        child.wait()
    assert procfs.stat(child.pid) is None and not procfs.running(child.pid)


def test_every_backend_answers_every_guarantee_and_names_its_variant() -> None:
    from arena.sandbox import GUARANTEES
    from arena.sandbox.docker import GUARANTEES as DOCKER_GUARANTEES

    plain = ProcessSandbox(isolate=False)
    assert list(plain.guarantees()) == list(GUARANTEES) and plain.variant == "plain"
    assert list(DOCKER_GUARANTEES) == list(GUARANTEES)
    assert ProcessSandbox().variant == ("bwrap" if bwrap_status()[0] else "plain")


def orphan_inits() -> set[int]:
    """Namespace inits of arena sandboxes whose parent is not a bwrap, found independently of the code under test."""
    found = set()
    for pid in procfs.all_pids():
        info = procfs.stat(pid)
        if info is None or not info.running or not procfs.namespace_init(pid):
            continue
        parent = procfs.stat(info.ppid)
        command = procfs.command_line(pid)
        if command.startswith(b"/usr/bin/bwrap\0") and b"\0/protocol\0" in command \
                and (parent is None or parent.name != "bwrap"):
            found.add(pid)
    return found


def orphan_of_a_start_cut_short(bot_dir: Path, uid: int | None, cgroup_procs: list[Path]) -> int:
    """The namespace init that a runner killed as it starts a sandbox leaves behind, made on purpose.

    Such an init was cloned by bwrap but had not yet asked (with bwrap's ``--die-with-parent``) to die with it when
    the kill came. The same sandbox's command line without that flag is exactly such an init from the start: once
    its init is up, its bwrap is killed, and the init lives on, reparented, holding the sandbox. It is in the
    cgroups whose ``cgroup.procs`` are given, as a sandbox of the runner is. Returns its pid.
    """
    command = bwrap_command(bot_dir, ["/bin/sleep", "300"], SandboxLimits(), uid)
    command.remove("--die-with-parent")

    def join() -> None:
        for path in cgroup_procs:
            path.write_text("0")

    try:
        outer = subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True,
                                 preexec_fn=join)  # noqa: PLW1509 (a test's own child, no threads)
    except subprocess.SubprocessError:
        return 0  # a concurrent launch swept the dead runner's cgroups before the child could join them
    try:
        # A concurrent launch (another test process) may sweep the dead runner's cgroups, and this init in them,
        # before it is seen: its bwrap then ends, and 0 tells the caller to make another.
        init = wait_until("bwrap's namespace init to start, or its bwrap to end", lambda: next(
            (pid for pid in procfs.all_pids() if procfs.namespace_init(pid)
             and getattr(procfs.stat(pid), "ppid", None) == outer.pid), None) or (outer.poll() is not None and -1))
    finally:
        outer.kill()
        outer.wait()
    if init == -1:
        return 0
    wait_until("the init to outlive its bwrap", lambda: init in orphan_inits() or not procfs.running(init))
    return init


def wait_until(what: str, found: Callable[[], T | None], seconds: float = 60) -> T:
    """``found()`` once it is truthy: a wait on a condition (the deadline only guards against a hang)."""
    deadline = time.monotonic() + seconds
    while not (value := found()):
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)
    return value


def dead_runner_cgroups(layout: cgroups.Layout | None) -> list[Path]:
    """Cgroups named as a runner's that has exited (the pid of a finished ``true``), as a kill -9 leaves them."""
    if layout is None:
        return []
    dead = subprocess.Popen(["/bin/true"])
    dead.wait()
    made = []
    for parent in dict.fromkeys(p for p in (layout.memory, layout.pids) if p is not None):
        directory = parent / f"arena-{dead.pid}.{os.stat('/proc/self/ns/pid').st_ino}-0-orphan"
        directory.mkdir()
        made.append(directory)
    return made


@pytest.mark.skipif(not bwrap_status()[0], reason="needs bubblewrap")
@pytest.mark.parametrize("use_cgroups", [True, False], ids=["cgroups", "no-cgroups"])
def test_sandboxes_of_a_runner_killed_as_it_starts_them_are_swept_by_the_next_launch(
        tmp_path: Path, use_cgroups: bool) -> None:
    """kill -9 of a runner (a tournament, a Dask worker) while its sandboxes start often leaves a namespace init
    behind that nothing would ever kill (a quarter of such kills did, measured); the next launch on the host
    sweeps every one of them, and nothing else: from the dead runner's cgroups where the host has cgroups, else
    by a walk over /proc."""
    from arena.sandbox import bwrap

    layout = cgroups.detect()[0] if use_cgroups else None
    if use_cgroups and layout is None:
        pytest.skip(f"no cgroups here: {cgroups.detect()[1]}")
    stale: list[Path] = []

    # Other orphans may be about: the test files run side by side (xdist), and a kill -9 test elsewhere leaves
    # some for the next launch. Only this test's own orphan is followed.
    bot_dir = tmp_path / "bot"
    bot_dir.mkdir()
    bot_dir.chmod(0o755)
    lease = UidLease() if os.geteuid() == 0 else None
    orphan = 0
    try:
        for _ in range(5):  # a concurrent launch (another test process) may sweep it first: then make another
            made = dead_runner_cgroups(layout)  # afresh each time: that sweep removes the cgroups too
            stale += made
            orphan = orphan_of_a_start_cut_short(bot_dir, lease.uid if lease else None,
                                                 [directory / "cgroup.procs" for directory in made])
            if orphan and orphan in orphan_inits():  # still there: no other launch has swept it meanwhile
                break
        assert orphan in orphan_inits()
        live = ProcessSandbox(isolate=True, use_cgroups=use_cgroups).launch(load_bot(GREEDY), SandboxLimits())
        try:
            bwrap.ORPHAN_SWEEPS.reset()  # a launch of this process sweeps at most every 2 s
            bot = ProcessSandbox(isolate=True, use_cgroups=use_cgroups).launch(load_bot(GREEDY), SandboxLimits())
            try:
                wait_until("the orphan to be swept", lambda: not procfs.running(orphan))
                assert live.poll() is None, "the sweep killed a live sandbox"
            finally:
                bot.kill()
        finally:
            live.kill()
    finally:
        if orphan and procfs.running(orphan):
            os.kill(orphan, signal.SIGKILL)
        if lease is not None:
            lease.release()
        for directory in stale:
            wait_until(f"{directory} to be removed", lambda gone=directory: _removed(gone))


def _removed(directory: Path) -> bool:
    try:
        directory.rmdir()
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


@pytest.fixture
def own_uid_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[int, int], Path]:
    """Point the uid leases at a range above the one runners use, with lock files of this test's own."""
    from arena.sandbox import uids

    if os.geteuid() != 0:
        pytest.skip("per-bot uids need root")

    def use(base: int, count: int) -> Path:
        monkeypatch.setattr(uids, "UID_LOCKS", tmp_path / "uids")
        monkeypatch.setattr(uids, "UID_BASE", base)
        monkeypatch.setattr(uids, "UID_COUNT", count)
        return tmp_path / "uids"

    return use


def process_of_uid(uid: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                             "/bin/sleep", "300"])


def test_an_abandoned_lease_is_swept_once_and_a_uid_of_another_program_is_never_leased(
        own_uid_range: Callable[[int, int], Path]) -> None:
    from arena.sandbox import uids

    locks = own_uid_range(61500, 3)
    locks.mkdir()
    (locks / "61500").write_text("held 1")  # a runner that died holding it: its bot's process lives on
    survivor, stranger = process_of_uid(61500), process_of_uid(61501)
    try:
        wait_until("both to run as their uids", lambda: procfs.uid_of(survivor.pid) == 61500
                   and procfs.uid_of(stranger.pid) == 61501)
        first = uids.UidLease()
        assert first.uid == 61500 and survivor.wait(timeout=30) == -signal.SIGKILL
        second = uids.UidLease()  # 61501 is another program's (a new lock file): marked, skipped, not killed
        assert second.uid == 61502 and stranger.poll() is None
        assert (locks / "61501").read_text().strip() == "foreign"
        first.release()
        assert (locks / "61500").read_text().strip() == "free"
        assert uids.UidLease().uid == 61500  # free again; its lock file says so, nothing is read
        second.release()
    finally:
        for process in (survivor, stranger):
            process.kill()
            process.wait()


@pytest.mark.skipif(not bwrap_status()[0], reason="needs bubblewrap")
@pytest.mark.parametrize("use_cgroups", [True, False], ids=["cgroups", "no-cgroups"])
def test_a_launch_and_a_kill_read_no_other_process(own_uid_range: Callable[[int, int], Path],
                                                   monkeypatch: pytest.MonkeyPatch, use_cgroups: bool) -> None:
    """Their cost must not grow with the host's processes: neither may list /proc (a uid's clean lease is
    trusted; the sweep for dead runners' sandboxes is not due). Only a kill within the first moments of a start,
    before bwrap has reported its namespace's init, may walk /proc, and only on a host without cgroups."""
    from arena.sandbox import bwrap

    locks = own_uid_range(61600, 2)
    locks.mkdir()
    for uid in (61600, 61601):
        (locks / str(uid)).write_text("free")
    sandbox = ProcessSandbox(isolate=True, use_cgroups=use_cgroups)
    bwrap.ORPHAN_SWEEPS.reset()
    assert bwrap.ORPHAN_SWEEPS.due()  # and now not due for 2 s

    def refuse(*args: object) -> list[int]:
        raise AssertionError("a launch or a kill listed every process")

    monkeypatch.setattr(procfs, "all_pids", refuse)
    monkeypatch.setattr(os, "listdir", lambda path=".": refuse() if str(path) == "/proc" else LISTDIR(path))
    bot = sandbox.launch(load_bot(GREEDY), SandboxLimits())
    hello = protocol.hello(0, ["greedy", "other"], Rules(), protocol.Limits())
    assert bot.write(json.dumps(hello).encode() + b"\n") > 0
    answer = b""
    while b"ready" not in answer:  # a bot that is up: bwrap has reported its namespace's init
        fds = bot.read_fds()
        assert fds, f"the bot ended before it was ready: {answer!r}"
        select.select(fds, [], [])
        answer += b"".join(data for fd in fds for stream, data in bot.read(fd) if stream == "stdout")
    exit_ = bot.kill()
    assert exit_.signal == signal.SIGKILL or exit_.returncode is not None
    monkeypatch.undo()
    launch = sandbox.launched[-1]
    assert launch.released_at is not None and launch.uid == 61600


LISTDIR = os.listdir


def test_the_gate_starts_nothing_unless_the_runner_says_go(tmp_path: Path) -> None:
    """A runner that dies (or whose set-up fails) before it opens the gate leaves no bot running."""
    from arena.sandbox.process import GATE_STATUS, GO, gate

    marker = tmp_path / "started"
    for stdin in (b"", b"stop\n", GO):
        done = subprocess.run([*gate(None), "/usr/bin/touch", str(marker)], input=stdin, check=False)
        assert (done.returncode, marker.exists()) == ((0, True) if stdin == GO else (GATE_STATUS, False))


@pytest.mark.skipif(not bwrap_status()[0], reason="needs bubblewrap")
def test_launches_from_many_threads_at_once_each_get_their_own_bot() -> None:
    """No Python runs between fork and exec, so threads may launch side by side (the league server does)."""
    from concurrent.futures import ThreadPoolExecutor

    sandbox = ProcessSandbox(isolate=True)

    def one(_: int) -> int | None:
        bot = sandbox.launch(load_bot(GREEDY), SandboxLimits())
        pid = bot.pid
        bot.kill()
        return pid

    with ThreadPoolExecutor(4) as pool:
        pids = list(pool.map(one, range(8)))
    assert len(set(pids)) == 8
    assert all(not os.path.exists(f"/proc/{pid}") for pid in pids if pid is not None)
    assert all(launch.released_at is not None or launch.uid is None for launch in sandbox.launched)
