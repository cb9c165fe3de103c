"""The adversarial suite: one hostile bot per attack, against every variant of the sandbox this host has.

Each test plays a whole match (a hostile bot between two sample bots) and checks the exact fault (or none), that
the other bots' match finished, that nothing of the hostile bot survives, that the host was not touched and that
no secret it went for shows up in any stderr tail or the match log. A guarantee a variant does not give (see
``ProcessSandbox.guarantees``) is an expected failure for that variant (strict: it must really fail), never a
silent skip; attacks that would harm the machine without a sandbox are skipped for that variant, with a reason.
"""

from __future__ import annotations

import errno
import fcntl
import gzip
import os
import re
import secrets
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from arena.bots.manifest import load_bot
from arena.game.results import FaultKind
from arena.game.rules import Rules
from arena.match.protocol import Limits
from arena.match.referee import MatchResult, play_match
from arena.sandbox import SandboxLimits, get_sandbox
from arena.sandbox.process import ProcessSandbox, bwrap_status
from tests.hostile import LIMIT_FIRST, SEE_ALL, leftovers, make_bot
from tests.support.docker import require_docker

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"
FAST = Limits(hello_ms=3000, move_ms=400, bank_ms=300)
SHORT = Rules(threshold=30)
SMALL = SandboxLimits(memory_mb=160, processes=16, file_mb=4, scratch_mb=8, open_files=64, cpu_seconds=20)
SECRET_ENV = "ARENA_TEST_REFEREE_SECRET"


# The docker and plain variants repeat the bwrap attack matrix on other isolation: CI runs them all, the fast
# profile (-m "not slow") keeps bwrap, the default. docker-attach: the bots' stdin and stdout through the engine's
# attach socket, as where the engine does not see this host's FIFOs (arena/sandbox/fifos.py).
@pytest.fixture(scope="module", params=["bwrap", pytest.param("plain", marks=pytest.mark.slow),
                                        pytest.param("docker", marks=pytest.mark.slow),
                                        pytest.param("docker-attach", marks=pytest.mark.slow)])
def sandbox(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param.startswith("docker"):
        from arena.sandbox.docker import DockerSandbox

        require_docker()
        docker_sandbox = DockerSandbox(fifo_io=request.param == "docker")
        yield docker_sandbox
        docker_sandbox.close()
        return
    if request.param == "bwrap":
        works, reason = bwrap_status()
        if not works:
            pytest.skip(f"this host cannot run bwrap: {reason}")
        yield ProcessSandbox(isolate=True)
        return
    yield ProcessSandbox(isolate=False)


@dataclass
class Case:
    """An attack, what the referee should make of it, and what the test must check besides."""

    fault: FaultKind | None
    needs: tuple[str, ...] = ()
    """Guarantees (keys of ``ProcessSandbox.guarantees``) without which the attack succeeds: xfail."""
    dangerous: str = ""
    """Why running this attack without the guarantees would harm the host: skip instead."""
    limits: SandboxLimits = SMALL
    clocks: Limits = FAST
    """The match's clocks: an attack that must hit a resource limit gets ``LIMIT_FIRST``, never a race with them."""
    detail: str = ""
    check: Callable[[MatchResult, str, Env], None] | None = None
    variants: dict[str, tuple[FaultKind | None, str]] = field(default_factory=dict)
    """Where a variant reports the attack differently (and still contains it): its (fault, detail)."""


@dataclass
class Env:
    """What a test planted for the attack: secrets, paths, a listener."""

    tmp: Path
    secret: str
    params: dict[str, Any] = field(default_factory=dict)
    forbidden: list[Path] = field(default_factory=list)
    listener: socket.socket | None = None
    standin: subprocess.Popen[bytes] | None = None
    held: int | None = None
    """A descriptor holding an open-file-description lock on the host while the attack runs."""


def revealed(tail: str, label: str) -> list[str]:
    return re.findall(rf"^{label}=(.*)$", tail, re.MULTILINE)


def at_most(label: str, bound: int) -> Callable[[MatchResult, str, Env], None]:
    def check(result: MatchResult, tail: str, env: Env) -> None:
        values = revealed(tail, label)
        assert values, f"the attack did not report {label}: {tail[-500:]!r}"
        assert all(int(value) <= bound for value in values), f"{label}={values}, bound {bound}"
    return check


def no_connection(result: MatchResult, tail: str, env: Env) -> None:
    assert env.listener is not None
    try:
        conn, _ = env.listener.accept()
    except BlockingIOError:
        conn = None
    assert conn is None, "the bot connected to a listener on the host's loopback"
    assert not revealed(tail, "CONNECTED")


def nothing_signalled(result: MatchResult, tail: str, env: Env) -> None:
    # Pid 1 is the init of the bot's own pid namespace (a container's docker-init runs as the bot's user); the
    # kernel drops signals sent to it from inside its namespace, and it is not the referee in any case.
    assert [pid for pid in revealed(tail, "SIGNALLED") if pid != "1"] == [], tail[-500:]


def refused(done: str, refused_label: str) -> Callable[[MatchResult, str, Env], None]:
    """The attack ran (it reported ``refused_label``) and never managed ``done``."""
    def check(result: MatchResult, tail: str, env: Env) -> None:
        assert not revealed(tail, done), tail[-500:]
        assert revealed(tail, refused_label) or revealed(tail, "KEYSKIPPED"), f"the attack did not run: {tail[-500:]!r}"
    return check


def no_note_across_sandboxes(result: MatchResult, tail: str, env: Env) -> None:
    """No key was added (so none can reach a later bot of the uid), and none of an earlier bot was found."""
    refused("KEYADDED", "KEYREFUSED")(result, tail, env)
    assert not revealed(tail, "KEYFOUND"), tail[-500:]


def channels_refused(result: MatchResult, tail: str, env: Env) -> None:
    """Every call that makes a channel between sandboxes was refused with the errno a program can handle (and the
    bot, which caught them, played its match to the end: the test's other checks), and /proc/locks showed none
    of the lock the test holds on the host."""
    # preadv2 is refused with ENOSYS, which glibc turns into EOPNOTSUPP for flags it cannot emulate (RWF_NOWAIT);
    # flock succeeds and does nothing (tests/sandbox/test_channels.py shows that nothing passes).
    expected: dict[str, object] = {
        "FLOCK": "ok", "LOCKF": errno.ENOLCK, "OFDLOCK": errno.ENOLCK, "NOTIFY": errno.EINVAL,
        "NOWAIT": errno.EOPNOTSUPP, "EVICT": errno.EINVAL, "HIGHCMD": errno.ENOLCK, "CACHESTAT": errno.ENOSYS,
        "INOTIFY": errno.ENOSYS, "IOURING": errno.ENOSYS, "PROCLOCKS": 0}
    assert {label: revealed(tail, label) for label in expected} == {
        label: [str(value)] for label, value in expected.items()}, tail[-800:]


CASES: dict[str, Case] = {
    # resources
    "fork_bomb": Case(None, needs=("processes",), dangerous="an uncapped fork bomb as this user",
                      check=at_most("FORKS", SMALL.processes)),
    "memory_balloon": Case(FaultKind.LIMIT, needs=("memory_limit_fault",), detail="memory", clocks=LIMIT_FIRST),
    "cpu_spin": Case(FaultKind.TIMEOUT, detail="no move within"),
    "sigterm_spin": Case(FaultKind.TIMEOUT, detail="no move within"),
    "huge_file": Case(None, check=at_most("WROTE", SMALL.file_mb << 20)),
    "many_files": Case(None, needs=("scratch_cap",), check=at_most("WROTE", SMALL.scratch_mb << 20)),
    "write_outside": Case(None, needs=("filesystem",)),
    # the protocol channel
    "flood_no_newline": Case(FaultKind.INVALID),
    "line_100mb": Case(FaultKind.INVALID),
    "stderr_flood": Case(None),
    "binary_garbage": Case(FaultKind.INVALID),
    # Docker's attach stream has no end of file per stream: a bot that closes stdout and lives on times out there;
    # its stdout as a FIFO (arena/sandbox/fifos.py) ends as a pipe does.
    "close_stdout": Case(FaultKind.CRASH, detail="closed its stdout",
                         variants={"docker-attach": (FaultKind.TIMEOUT, "no move within")}),
    "exit_mid_match": Case(FaultKind.CRASH, detail="exited with status 3"),
    "sleep_past_deadline": Case(FaultKind.TIMEOUT),
    "slow_loris": Case(FaultKind.TIMEOUT),
    "never_reads_stdin": Case(FaultKind.TIMEOUT),
    # escapes
    "connect_loopback": Case(None, needs=("network",), check=no_connection),
    "read_files": Case(None, needs=("filesystem",)),
    "read_environment": Case(None, needs=("proc_and_signals",)),
    "symlink_escape": Case(None, needs=("filesystem",)),
    "daemon_grandchild": Case(None),
    "keyring_note": Case(None, needs=("keyrings",), dangerous="add_key to this user's kernel keyrings",
                         check=no_note_across_sandboxes),
    "user_namespace": Case(None, needs=("user_namespaces",), check=refused("USERNS", "USERNSREFUSED")),
    "kill_everyone": Case(None, needs=("proc_and_signals",), dangerous="kill(-1, SIGKILL) as this user"),
    "signal_referee": Case(None, needs=("proc_and_signals",), dangerous="SIGSTOP and SIGKILL to the test runner",
                           check=nothing_signalled),
    "shared_locks": Case(None, needs=("no_shared_locks",), check=channels_refused),
}


def plant(tmp: Path, attack: str) -> Env:
    """Secrets and traps for ``attack``: a file in another bot's directory, one in the 'referee's data', an
    environment variable of ours, a listener on 127.0.0.1."""
    env = Env(tmp, "s3cret-" + secrets.token_hex(8))
    victim = make_bot(tmp / "bots", "polite", "victim")
    (victim / "secret.txt").write_text(env.secret)
    data = tmp / "referee-data"
    data.mkdir()
    (data / "results.sqlite").write_text(env.secret)
    os.environ[SECRET_ENV] = env.secret
    env.params["referee_pid"] = os.getpid()
    if attack == "read_files":
        env.params["paths"] = [str(victim / "secret.txt"), str(data / "results.sqlite"), "/etc/shadow",
                               f"/proc/{os.getpid()}/environ"]
    elif attack == "symlink_escape":
        env.params["targets"] = [str(data / "results.sqlite"), str(victim / "secret.txt"), "/etc/shadow"]
    elif attack == "write_outside":
        env.forbidden = [data / "planted.txt", victim / "planted.txt", tmp / "outside.bin"]
        env.params["paths"] = [str(path) for path in env.forbidden]
    elif attack == "many_files":
        env.params["max_mb"] = 4 * SMALL.scratch_mb  # enough to overrun the cap, bounded where there is none
    elif attack == "read_environment":
        # /proc/PID/environ shows the environment a process was started with, so a stand-in for the referee's
        # own process (or a database server beside it) is started with the secret in it.
        env.standin = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                       env={**os.environ, SECRET_ENV: env.secret})
        env.params["pids"] = [env.standin.pid]
    elif attack == "shared_locks":
        # A host lock of ours, which an unmasked /proc/locks would show inside the sandbox.
        env.held = os.open(tmp / "held.lock", os.O_RDWR | os.O_CREAT)
        fcntl.fcntl(env.held, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 1, 0))
        env.params["shared"] = "/usr/bin/env"  # the same inode in every sandbox
    elif attack == "keyring_note":
        env.params["note"] = env.secret
    elif attack == "connect_loopback":
        env.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        env.listener.bind(("127.0.0.1", 0))
        env.listener.listen(8)
        env.listener.setblocking(False)
        env.params["port"] = env.listener.getsockname()[1]
    return env


# A bot that never reads its hello waits out the hello clock (3 s): the referee's fast test has the same case.
@pytest.mark.parametrize("attack", [pytest.param(attack, marks=pytest.mark.slow) if attack == "never_reads_stdin"
                                    else attack for attack in sorted(CASES)])
def test_attack(sandbox: ProcessSandbox, tmp_path: Path, attack: str, request: pytest.FixtureRequest) -> None:
    case = CASES[attack]
    missing = [key for key in case.needs if not sandbox.guarantees()[key][0]]
    if missing and case.dangerous:
        pytest.skip(f"{sandbox.variant}: would run {case.dangerous} on this host (missing: {', '.join(missing)})")
    if missing:
        reasons = "; ".join(f"{key}: {sandbox.guarantees()[key][1]}" for key in missing)
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"{sandbox.variant} lacks it: {reasons}"))
    env = plant(tmp_path, attack)
    try:
        hostile = make_bot(tmp_path / "bots", attack, params=env.params)
        before = sorted(p.name for p in hostile.iterdir())
        started = time.monotonic()
        result = play_match([load_bot(SAMPLES / "greedy"), load_bot(hostile), load_bot(SAMPLES / "random")], 1,
                            sandbox, SHORT, case.clocks, case.limits, log_path=tmp_path / "match.jsonl.gz",
                            caps=SEE_ALL)
        elapsed = time.monotonic() - started
    finally:
        os.environ.pop(SECRET_ENV, None)
        if env.held is not None:
            os.close(env.held)
        if env.standin is not None:
            env.standin.kill()
            env.standin.wait()
        if env.listener is not None and attack != "connect_loopback":
            env.listener.close()
    bad = result.players[1]
    tail = bad.stderr_tail
    # Nothing of the bot survives, whatever else happened.
    assert leftovers(sandbox, hostile) == []
    # The other bots' match finished.
    others = [result.players[0], result.players[2]]
    assert all(p.fault is None for p in others), result.to_dict()
    assert result.termination in ("last_standing", "forfeits") and result.rounds >= 1
    # The exact fault, or none.
    attached = getattr(sandbox, "fifo_room", "") is None  # a docker sandbox whose bots talk through the socket
    expected, detail = case.variants.get(sandbox.variant + ("-attach" if attached else ""), (case.fault, case.detail))
    if expected is None:
        assert bad.fault is None, bad.fault
    else:
        assert bad.fault is not None and bad.fault.kind == expected, bad.fault
        assert detail in bad.fault.detail
        assert bad.place == 3
    # No secret anywhere the bot's output ends up, and nothing written outside its scratch.
    log_text = ""
    if result.log_path:
        with gzip.open(result.log_path, "rt", errors="replace") as handle:
            log_text = handle.read()
    for text in [p.stderr_tail for p in result.players] + [log_text]:
        assert env.secret not in text
        assert "root:" not in text  # /etc/shadow
    assert sorted(p.name for p in hostile.iterdir()) == before, "the bot wrote into its own directory"
    for path in env.forbidden:
        assert not path.exists(), f"the bot wrote {path}"
    if case.check is not None:
        case.check(result, tail, env)
    if env.listener is not None:
        env.listener.close()
    assert elapsed < 15


def test_cpu_limit_is_a_limit_fault(sandbox: ProcessSandbox, tmp_path: Path) -> None:
    hostile = make_bot(tmp_path, "cpu_spin")
    result = play_match([load_bot(SAMPLES / "greedy"), load_bot(hostile)], 1, sandbox, SHORT, LIMIT_FIRST,
                        SandboxLimits(cpu_seconds=1))
    fault = result.players[1].fault
    assert fault is not None and fault.kind == FaultKind.LIMIT and "cpu time" in fault.detail, fault
    assert leftovers(sandbox, hostile) == []


def test_concurrent_bots_get_distinct_uids(sandbox: ProcessSandbox, tmp_path: Path) -> None:
    if not sandbox.per_bot_uid:
        pytest.skip(f"{sandbox.variant}: {sandbox.guarantees()['per_bot_uid'][1]}")
    bots = [load_bot(make_bot(tmp_path, "polite", f"p{n}")) for n in range(4)]
    running = [sandbox.launch(bot, SMALL) for bot in bots]
    try:
        uids = [process.lease.uid for process in running]  # type: ignore[attr-defined]
        assert len(set(uids)) == 4
    finally:
        for process in running:
            process.kill()
    assert all(leftovers(sandbox, Path(bot.directory)) == [] for bot in bots)


def test_get_sandbox_picks_bwrap_when_it_works() -> None:
    chosen = get_sandbox("process")
    assert isinstance(chosen, ProcessSandbox)
    assert chosen.isolated == bwrap_status()[0]


def test_the_unisolated_variant_says_so_loudly(caplog: pytest.LogCaptureFixture) -> None:
    from arena.sandbox import process

    process._WARNED = False
    with caplog.at_level("WARNING"):
        ProcessSandbox(isolate=False)
        ProcessSandbox(isolate=False)
    warnings = [r for r in caplog.records if "NOT ISOLATING" in r.getMessage()]
    assert len(warnings) == 1, "once per run, not once per sandbox"
