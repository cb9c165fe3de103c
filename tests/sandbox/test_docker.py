"""The docker backend against a real Docker engine: whole matches, every fault kind, the sandbox attacks, and no
container left behind.

Without a reachable engine these tests skip, saying why; with ``ARENA_REQUIRE_DOCKER=1`` (CI) they fail instead,
so a CI machine whose engine did not come up cannot pass by skipping.
"""

from __future__ import annotations

import gzip
import os
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena import procfs
from arena.bots.manifest import load_bot
from arena.bots.scaffold import scaffold
from arena.game.results import FaultKind
from arena.game.rules import Rules
from arena.match.protocol import Limits
from arena.match.referee import InfrastructureError, MatchResult, play_match
from arena.registry.check import check_bot
from arena.sandbox import SandboxError, SandboxLimits, get_sandbox
from arena.sandbox.docker import (
    LABEL,
    RUN_LABEL,
    RUNNER_LABEL,
    WARM_LABEL,
    Demux,
    DockerSandbox,
    FifoBot,
    describe_state,
)
from arena.sandbox.fifos import IO_DIR, IO_ROOT
from arena.sandbox.process import ProcessSandbox
from tests.hostile import SEE_ALL, make_bot
from tests.support.docker import require_docker

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"
FAST = Limits(hello_ms=5000, move_ms=400, bank_ms=300)
SHORT = Rules(threshold=30)
SMALL = SandboxLimits(memory_mb=160, processes=16, file_mb=4, scratch_mb=8, open_files=64, cpu_seconds=20)

pytestmark = pytest.mark.slow  # the docker backend's own tests: CI runs them; the fast profile leaves them out


@pytest.fixture(scope="module")
def sandbox() -> Iterator[DockerSandbox]:
    require_docker()
    chosen = DockerSandbox()
    yield chosen
    chosen.close()


def play(bots: list[Path], sandbox: DockerSandbox, tmp_path: Path, limits: Limits = FAST,
         sandbox_limits: SandboxLimits = SMALL, seed: int = 1) -> MatchResult:
    result = play_match([load_bot(b) for b in bots], seed, sandbox, SHORT, limits, sandbox_limits,
                        log_path=tmp_path / "match.jsonl.gz", caps=SEE_ALL)
    assert sandbox.containers() == [], "a bot container outlived its match"
    return result


# -- the attach stream, without an engine -------------------------------------------------------------------------

def frame(stream: int, payload: bytes) -> bytes:
    return bytes([stream, 0, 0, 0]) + len(payload).to_bytes(4, "big") + payload


def test_demux_reassembles_frames_cut_at_every_byte() -> None:
    stream = frame(1, b'{"type": "ready"}\n') + frame(2, b"debug\n") + frame(1, b"") + frame(1, b"x" * 300)
    for cut in range(1, len(stream)):
        demux = Demux()
        chunks = demux.feed(stream[:cut]) + demux.feed(stream[cut:])
        assert all(data for _, data in chunks), "an empty chunk would read as end of file"
        out = b"".join(data for name, data in chunks if name == "stdout")
        err = b"".join(data for name, data in chunks if name == "stderr")
        assert (out, err) == (b'{"type": "ready"}\n' + b"x" * 300, b"debug\n")


def test_demux_hands_out_a_frame_before_it_is_complete() -> None:
    demux = Demux()
    assert demux.feed(frame(1, b"abcdef")[:10]) == [("stdout", b"ab")]
    assert demux.feed(b"cd") == [("stdout", b"cd")]


def test_container_states_map_to_exits() -> None:
    assert describe_state({"ExitCode": 137, "OOMKilled": True}).limit == "memory"
    assert describe_state({"ExitCode": 152}).limit == "cpu time"  # 128 + SIGXCPU, from the init
    assert describe_state({"ExitCode": 3}).returncode == 3
    assert describe_state({"ExitCode": 137}, killed=True).signal == 9


# -- whole matches ------------------------------------------------------------------------------------------------

def test_sample_bots_in_both_languages_play_the_same_match_as_under_the_process_backend(sandbox, tmp_path):
    bots = [SAMPLES / "greedy", SAMPLES / "random", SAMPLES / "js-greedy"]
    result = play(bots, sandbox, tmp_path, Limits(), SandboxLimits())
    assert all(player.fault is None for player in result.players), result.to_dict()
    assert result.turns > 10
    reference = play_match([load_bot(b) for b in bots], 1, ProcessSandbox(), SHORT, Limits())
    assert result.events == reference.events


def test_get_sandbox_and_the_cli_choose_docker(sandbox, tmp_path):
    chosen = get_sandbox("docker")
    assert isinstance(chosen, DockerSandbox)
    chosen.close()
    done = subprocess.run([sys.executable, "-m", "arena", "match", "--sandbox", "docker", "--json", "--log",
                           str(tmp_path / "m.jsonl.gz"), str(SAMPLES / "greedy"), str(SAMPLES / "js-greedy")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    assert '"termination"' in done.stdout


# The resource and escape attacks run over docker in the adversarial suite (tests/sandbox/test_sandbox.py); these are the
# protocol faults, which reach the referee through the attach socket's demultiplexer rather than a pipe.
# attack -> (expected fault kind or None, text the fault detail must contain)
FAULTS: dict[str, tuple[FaultKind | None, str]] = {
    "not_json": (FaultKind.INVALID, ""),
    "long_line": (FaultKind.INVALID, "longer than"),
    "card_not_in_hand": (FaultKind.ILLEGAL, ""),
    "wrong_shape": (FaultKind.INVALID, ""),
    "bad_ready": (FaultKind.INVALID, ""),
}


@pytest.mark.parametrize("attack", sorted(FAULTS))
def test_each_misbehaviour_is_its_fault_and_no_container_survives(sandbox, tmp_path, attack):
    hostile = make_bot(tmp_path / "bots", attack)
    before = sorted(p.name for p in hostile.iterdir())
    started = time.monotonic()
    result = play([SAMPLES / "greedy", hostile, SAMPLES / "random"], sandbox, tmp_path)
    elapsed = time.monotonic() - started
    bad = result.players[1]
    kind, detail = FAULTS[attack]
    if kind is None:
        assert bad.fault is None, bad.fault
    else:
        assert bad.fault is not None and bad.fault.kind == kind, bad.fault
        assert detail in bad.fault.detail, bad.fault
        assert bad.place == 3
    assert all(p.fault is None for p in (result.players[0], result.players[2])), result.to_dict()
    assert sorted(p.name for p in hostile.iterdir()) == before, "the bot wrote into its own directory"
    assert elapsed < 20


def test_host_files_and_the_referees_environment_are_out_of_reach(sandbox, tmp_path):
    secret = "s3cret-" + secrets.token_hex(8)
    victim = make_bot(tmp_path / "bots", "polite", "victim")
    (victim / "secret.txt").write_text(secret)
    (tmp_path / "results.sqlite").write_text(secret)
    os.environ["ARENA_TEST_REFEREE_SECRET"] = secret
    try:
        paths = [str(victim / "secret.txt"), str(tmp_path / "results.sqlite"), "/etc/shadow", "/etc/hostname",
                 "/var/run/docker.sock", f"/proc/{os.getpid()}/environ"]
        hostile = make_bot(tmp_path / "bots", "read_files", params={"paths": paths})
        result = play([SAMPLES / "greedy", hostile, victim], sandbox, tmp_path)
        env_bot = make_bot(tmp_path / "bots", "read_environment", params={"referee_pid": os.getpid()})
        env_result = play([SAMPLES / "greedy", env_bot], sandbox, tmp_path / "env")
    finally:
        os.environ.pop("ARENA_TEST_REFEREE_SECRET", None)
    tail = result.players[1].stderr_tail
    assert result.players[1].fault is None and tail.count("UNREADABLE=") == len(paths) - 1, tail[-500:]
    for outcome in (result, env_result):
        assert outcome.log_path is not None
        with gzip.open(outcome.log_path, "rt", errors="replace") as handle:
            log = handle.read()
        for text in [p.stderr_tail for p in outcome.players] + [log]:
            assert secret not in text
            assert "root:" not in text
    env_tail = env_result.players[1].stderr_tail
    assert "ARENA_TEST" not in env_tail and "DOCKER" not in env_tail and "ENV={" in env_tail


def test_a_bot_whose_image_or_command_is_missing_crashes(sandbox, tmp_path):
    missing_image = tmp_path / "no-image"
    missing_image.mkdir()
    (missing_image / "bot.yaml").write_text("name: no-image\ncommand: python3 bot.py\nimage: arena-no-such:0\n")
    missing_command = tmp_path / "no-command"
    missing_command.mkdir()
    (missing_command / "bot.yaml").write_text("name: no-command\ncommand: no-such-interpreter bot.py\n")
    result = play([SAMPLES / "greedy", missing_image, missing_command], sandbox, tmp_path)
    for player in result.players[1:]:
        assert player.fault is not None and player.fault.kind == FaultKind.CRASH, player


def test_stale_containers_of_a_dead_runner_are_removed_at_start(sandbox):
    container = sandbox.client.containers.create(
        sandbox.runtime_image, ["/bin/true"], labels={LABEL: "1", RUN_LABEL: "stale", RUNNER_LABEL:
                                                      f"{socket.gethostname()}:{2 ** 22 + 1}:0"})  # no such pid
    DockerSandbox().close()
    remaining = sandbox.client.containers.list(all=True, filters={"label": f"{RUN_LABEL}=stale"})
    assert container.id not in [c.id for c in remaining]


RUNNER = """
import sys
from pathlib import Path
from arena.bots.manifest import load_bot
from arena.sandbox import SandboxLimits
from arena.sandbox.docker import DockerSandbox
sandbox = DockerSandbox()
sandbox.launch(load_bot(Path(sys.argv[1])), SandboxLimits())
print(sandbox.run_id, flush=True)
sys.stdin.readline()
"""


def test_the_containers_of_a_killed_runner_are_removed_by_a_later_launch_of_a_live_one(sandbox, tmp_path):
    """A Dask worker killed with -9 cannot remove its containers, and a bot that ignores the end of its stdin
    lives on; the sandboxes of the host's other workers, which live as long as their worker, remove them at a
    later launch (every 30 s at most)."""
    stubborn = make_bot(tmp_path, "never_reads_stdin")  # sleeps a minute before it reads a byte
    started = int(time.time()) - 1
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(stubborn)], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert runner.stdout is not None
    run_id = runner.stdout.readline().strip()
    assert run_id, "the runner did not start its bot"
    os.killpg(runner.pid, 9)
    runner.wait()
    time.sleep(1)
    left = sandbox.client.containers.list(filters={"label": f"{RUN_LABEL}={run_id}"})
    if not left:
        # Another test worker's sandbox may have launched a bot in that second and swept the container first:
        # that is the behaviour under test, and the sweep's forced removal ends it with SIGKILL (137). Any other
        # end would be the bot dying with its runner, which leaves the sweep nothing to prove.
        ends = sandbox.client.events(since=started, until=int(time.time()) + 1, decode=True,
                                     filters={"label": f"{RUN_LABEL}={run_id}", "event": "die"})
        codes = [end["Actor"]["Attributes"].get("exitCode") for end in ends]
        assert codes == ["137"], f"the bot died with its runner (exit codes {codes}): nothing for the sweep to do"
        return
    sandbox.stale_sweeps.reset()
    bot = sandbox.launch(load_bot(SAMPLES / "greedy"), SMALL)
    try:
        assert sandbox.client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_id}"}) == []
    finally:
        bot.kill()


def test_an_engine_that_is_gone_is_an_infrastructure_error(sandbox, tmp_path):
    with pytest.raises(SandboxError, match="no Docker engine"):
        DockerSandbox(base_url=f"unix://{tmp_path}/no-engine.sock")
    broken = DockerSandbox()
    import docker  # type: ignore[import-untyped]

    # The engine "goes away" between matches: a client of a socket nobody listens on.
    broken.client = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.41", timeout=5)
    with pytest.raises(InfrastructureError):
        play_match([load_bot(SAMPLES / "greedy"), load_bot(SAMPLES / "random")], 1, broken, SHORT, FAST)


class EngineGoesAway(DockerSandbox):
    """The engine connection of seat 1 breaks once the match is under way (a real client of a dead socket)."""

    def __init__(self, dead_socket: Path) -> None:
        super().__init__()
        self.dead_socket = dead_socket

    def launch_all(self, bots, limits):
        import docker  # type: ignore[import-untyped]

        started = super().launch_all(bots, limits)
        started[1].container.client = docker.DockerClient(base_url=f"unix://{self.dead_socket}", version="1.41",
                                                          timeout=5)
        return started


def test_an_engine_failing_mid_match_voids_the_match_and_the_other_seats_are_still_removed(sandbox, tmp_path):
    failing = EngineGoesAway(tmp_path / "dead.sock")
    hostile = make_bot(tmp_path, "exit_mid_match")  # its exit makes the referee ask the (broken) engine how it ended
    try:
        with pytest.raises(InfrastructureError, match="sandbox failed during the match"):
            play_match([load_bot(SAMPLES / "greedy"), load_bot(hostile), load_bot(SAMPLES / "random")], 1, failing,
                       SHORT, FAST, SMALL)
        left = failing.containers()
        assert [c.labels[f"{LABEL}.name"] for c in left] == ["exit-mid-match"], "the healthy seats were not removed"
    finally:
        failing.close()
    # close() removed the broken seat's container too (its client is closed now: ask through the fixture's).
    assert sandbox.client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={failing.run_id}"}) == []


def test_bots_start_concurrently(sandbox, tmp_path):
    bots = [load_bot(make_bot(tmp_path, "polite", f"p{n}")) for n in range(4)]
    started = time.monotonic()
    running = sandbox.launch_all(bots, SMALL)
    elapsed = time.monotonic() - started
    try:
        assert len(running) == 4
    finally:
        for process in running:
            process.kill()
    assert sandbox.containers() == []
    single = time.monotonic()
    sandbox.launch(load_bot(make_bot(tmp_path, "polite", "p4")), SMALL).kill()  # not warm: never launched before
    one = time.monotonic() - single
    assert elapsed < 4 * one, (elapsed, one)


@pytest.mark.parametrize("language", ["c", "java"])
def test_a_compiled_bot_is_built_in_the_process_sandbox_and_checked_in_docker(sandbox, tmp_path, language):
    # The build runs under bubblewrap with the host's compilers; the docker backend then runs what it built.
    report = check_bot(scaffold("compiled", language, tmp_path / "compiled"), sandbox)
    assert report.fit, report.to_dict()
    assert report.sandbox == "docker" and [step.name for step in report.steps][2] == "build"


# -- the warm pool: containers started ahead of their bot's next launch -------------------------------------------

def outcome(result: MatchResult) -> list[tuple[object, ...]]:
    return [(player.name, player.place, player.score, player.fault, player.stats) for player in result.players]


def test_a_warm_container_becomes_its_bot_and_plays_as_a_cold_start_would(tmp_path):
    bots = [load_bot(SAMPLES / "greedy"), load_bot(SAMPLES / "random")]
    cold = DockerSandbox(warm=0)
    try:
        expected = play_match(bots, 7, cold, SHORT, FAST, SMALL, log_path=tmp_path / "cold.jsonl.gz")
        cold.pool.settle()
        assert cold.pool.waiting() == 0 and cold.containers() == []
    finally:
        cold.close()
    warm = DockerSandbox(warm=4)
    try:
        for bot in bots:
            warm.launch(bot, SMALL).kill()
        warm.pool.settle()
        assert warm.pool.waiting() == 0  # launched once: nothing is warmed for a bot that may not come back
        for bot in bots:
            second = warm.launch(bot, SMALL)
            assert WARM_LABEL not in second.container.labels  # cold, but it leaves one waiting
            second.kill()
        warm.pool.settle()
        assert warm.pool.waiting() == 2 and warm.containers() == []  # waiting ones are not a match's leftovers
        again = warm.launch(bots[0], SMALL)
        assert again.container.labels[WARM_LABEL] == "1"
        again.kill()
        warm.pool.settle()
        result = play_match(bots, 7, warm, SHORT, FAST, SMALL, log_path=tmp_path / "warm.jsonl.gz")
        assert outcome(result) == outcome(expected) and result.turns == expected.turns
        assert warm.containers() == []
    finally:
        warm.close()
    left = DockerSandbox(warm=0)
    try:
        assert left.client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={warm.run_id}"}) == []
    finally:
        left.close()


def test_the_pool_keeps_the_bots_launched_last(tmp_path):
    bots = [load_bot(make_bot(tmp_path, "polite", name)) for name in ("a", "b", "c")]
    pool = DockerSandbox(warm=2)
    try:
        for bot in bots + bots:
            pool.launch(bot, SMALL).kill()
        pool.pool.settle()
        assert pool.pool.waiting() == 2
        first = pool.launch(bots[0], SMALL)  # launched longest ago: evicted, so cold
        last = pool.launch(bots[2], SMALL)
        try:
            assert WARM_LABEL not in first.container.labels and last.container.labels[WARM_LABEL] == "1"
        finally:
            first.kill()
            last.kill()
    finally:
        pool.close()


def test_bots_expected_again_leave_one_waiting_from_their_first_launch(tmp_path):
    bots = [load_bot(make_bot(tmp_path, "polite", name)) for name in ("a", "b")]
    pool = DockerSandbox(warm=2)
    try:
        pool.expect(bots[:1], SMALL)  # a chain's lanes: more chains of the bot come
        for bot in bots:
            pool.launch(bot, SMALL).kill()
        pool.pool.settle()
        assert pool.pool.waiting() == 1  # the expected bot's, none for the other one's first launch
        again = pool.launch(bots[0], SMALL)
        try:
            assert again.container.labels[WARM_LABEL] == "1"
        finally:
            again.kill()
    finally:
        pool.close()


WARM_RUNNER = """
import sys
from pathlib import Path
from arena.bots.manifest import load_bot
from arena.sandbox import SandboxLimits
from arena.sandbox.docker import DockerSandbox
sandbox = DockerSandbox(warm=2)
for _ in range(2):
    sandbox.launch(load_bot(Path(sys.argv[1])), SandboxLimits()).kill()
sandbox.pool.settle()
print(sandbox.run_id, sandbox.pool.waiting(), flush=True)
sys.stdin.readline()
"""


def test_the_warm_containers_of_a_killed_runner_end_and_a_later_sweep_removes_them(sandbox, tmp_path):
    runner = subprocess.Popen([sys.executable, "-c", WARM_RUNNER, str(SAMPLES / "greedy")], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert runner.stdout is not None
    run_id, waiting = runner.stdout.readline().split()
    assert waiting == "1"
    os.killpg(runner.pid, 9)
    runner.wait()
    # Its attach socket closed with it, so the waiting shell's stdin ended: the container stops by itself.
    deadline = time.monotonic() + 60
    while sandbox.client.containers.list(filters={"label": f"{RUN_LABEL}={run_id}"}):
        assert time.monotonic() < deadline, "a warm container outlived its runner"
        time.sleep(0.2)
    sandbox.stale_sweeps.reset()
    sandbox.launch(load_bot(SAMPLES / "random"), SMALL).kill()
    assert sandbox.client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_id}"}) == []


# -- stdin and stdout as FIFOs (arena/sandbox/fifos.py) ---------------------------------------------------------------

def test_a_bot_reaches_its_own_fifos_only_and_they_go_with_its_container(sandbox, tmp_path):
    assert sandbox.fifo_room is not None, "this host's engine sees our FIFOs: they must be used"
    victim = sandbox.launch(load_bot(SAMPLES / "greedy"), SMALL)
    try:
        assert isinstance(victim, FifoBot)
        theirs = victim.fifos.directory
        assert sorted(p.name for p in theirs.iterdir()) == ["err", "in", "out"]
        for path in (IO_ROOT, sandbox.fifo_room.directory):  # no other user of the host passes through these
            assert stat.S_IMODE(path.stat().st_mode) == 0o700 and path.stat().st_uid == os.geteuid()
        params = {"listed": [IO_DIR, str(IO_ROOT), str(theirs), "/dev/shm"],
                  "opened": [f"{IO_DIR}/in", f"{IO_DIR}/out", str(theirs / "in"), str(theirs / "out")],
                  "made": f"{IO_DIR}/more"}
        hostile = make_bot(tmp_path / "bots", "fifo_snoop", params=params)
        result = play_match([load_bot(b) for b in (SAMPLES / "random", hostile, SAMPLES / "greedy")], 1, sandbox,
                            SHORT, FAST, SMALL, log_path=tmp_path / "match.jsonl.gz", caps=SEE_ALL)
        assert all(player.fault is None for player in result.players), result.to_dict()
        assert [c.id for c in sandbox.containers()] == [victim.container.id]
        tail = result.players[1].stderr_tail
        # Its own directory: its FIFOs (its own stdin, stdout and stderr), nothing it can add to; nothing else.
        assert "LISTED=['err', 'in', 'out']" in tail and tail.count("UNLISTED=2") == 3, tail[-800:]
        assert tail.count("OPENED=/run/arena-io/") == 2 and tail.count("UNOPENED=2") == 2, tail[-800:]
        assert "UNMADE=30" in tail, tail[-800:]  # EROFS
        assert theirs.exists()
    finally:
        victim.kill()
    assert not theirs.exists()
    sandbox.pool.settle()
    # What is left is the warm pool's: a directory for each container that lives, none for those removed.
    left = sorted(path.name for path in sandbox.fifo_room.directory.iterdir())
    assert left == sorted(container.name for container in sandbox._all_containers()), left


def test_the_fifo_directories_of_a_runner_that_is_gone_are_swept_and_a_closed_sandboxs_removed(tmp_path):
    require_docker()
    gone = IO_ROOT / f"stale-{procfs.Owner(socket.gethostname(), 2 ** 22 + 1, 0).tag}"  # no such pid
    alive = IO_ROOT / f"alive-{procfs.owner().tag}"
    for room in (gone, alive):
        (room / "arena-x-1-bot").mkdir(parents=True)
        os.mkfifo(room / "arena-x-1-bot" / "in")
    try:
        fresh = DockerSandbox()
        assert fresh.fifo_room is not None
        bot = fresh.launch(load_bot(SAMPLES / "greedy"), SMALL)
        assert isinstance(bot, FifoBot) and bot.fifos.directory.exists()
        fresh.close()  # a bot never killed: its container and its directory go with the sandbox
        assert not gone.exists() and alive.exists() and not fresh.fifo_room.directory.exists()
    finally:
        shutil.rmtree(alive, ignore_errors=True)
        shutil.rmtree(gone, ignore_errors=True)



def test_bots_made_ready_wait_in_the_pool_before_their_first_launch(tmp_path):
    """A worker idle while the next chain waits for another's (arena/run/players.py) has its bots started ahead."""
    require_docker()
    bots = [load_bot(make_bot(tmp_path, "polite", name)) for name in ("a", "b")]
    pool = DockerSandbox(warm=4)
    try:
        pool.ready(bots, SMALL)
        pool.pool.settle()
        assert pool.pool.waiting() == 2 and pool.containers() == []
        first = pool.launch(bots[0], SMALL)
        assert first.container.labels[WARM_LABEL] == "1"  # its very first launch: warm
        first.kill()
        pool.pool.settle()  # a's launch left one of a waiting again
        pool.ready(bots, SMALL)  # the same again: none more, one of each waits
        pool.pool.settle()
        assert pool.pool.waiting() == 2
    finally:
        pool.close()
