"""No zombie is left by any path that starts processes (issue 44): the bwrap probe, a failing check, a failing build,
a match with a crashing bot in this process, a plain bot's daemon grandchild, and a real ``arena serve`` that
rejects uploads and plays its league through a worker killed with -9. Zombies are counted from /proc (state Z, by
parent pid) before and after.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from arena import procfs
from arena.bots.manifest import load_bot
from arena.game.rules import Rules
from arena.match.protocol import Limits
from arena.match.referee import play_match
from arena.registry.check import check_bot
from arena.registry.client import pack
from arena.sandbox.bwrap import bwrap_status
from arena.sandbox.process import ProcessSandbox
from arena.sandbox.reaper import Orphans
from tests import hostile
from tests.support.server import ROOT, SAMPLES, Server, free_port, make_bot
from tests.support.zombies import settled, zombies, zombies_under

needs_bwrap = pytest.mark.skipif(not bwrap_status()[0], reason="needs bubblewrap")

CRASH_AT_HELLO = "import sys\nsys.exit(3)\n"
CRASH_AT_TURN = """\
import json, sys
for line in sys.stdin:
    if json.loads(line)["type"] == "hello":
        print(json.dumps({"type": "ready"}), flush=True)
    else:
        raise SystemExit("fell over at the first turn")
"""


def failing_build(where: Path, name: str) -> Path:
    bot = make_bot(where, name, code="print(1)\n")
    (bot / "bot.yaml").write_text(f"name: {name}\ncommand: python3 bot.py\nbuild: sh -c 'echo nope >&2; exit 2'\n")
    return bot


@needs_bwrap
def test_the_bwrap_probe_reaps_its_namespace_init() -> None:
    ProcessSandbox()  # a subreaper, as every runner of bots is: the probe's init comes back to it
    before = zombies()
    assert bwrap_status.__wrapped__()[0]
    assert zombies() == before


@needs_bwrap
def test_a_failing_check_a_failing_build_and_a_crash_in_a_match_leave_no_zombie(tmp_path: Path) -> None:
    sandbox = ProcessSandbox(isolate=True)
    before = zombies()
    crash = check_bot(make_bot(tmp_path, "crasher", code=CRASH_AT_HELLO), sandbox)
    assert [step.ok for step in crash.steps if step.name == "hello"] == [False]
    assert zombies() == before
    built = check_bot(failing_build(tmp_path, "unbuilt"), sandbox)
    assert [step.ok for step in built.steps if step.name == "build"] == [False]
    assert zombies() == before
    faller = load_bot(make_bot(tmp_path, "faller", code=CRASH_AT_TURN))
    result = play_match([load_bot(SAMPLES / "greedy"), faller], 1, sandbox, Rules(threshold=30),
                        Limits(hello_ms=60_000, move_ms=60_000, bank_ms=0))
    assert result.players[1].fault is not None
    assert zombies() == before


def match_workers(server: int) -> list[int]:
    """The server's match workers: its children that multiprocessing spawned (not its resource tracker)."""
    return [pid for pid in procfs.children(server) if b"spawn_main" in procfs.command_line(pid)]


def done(server: Server) -> int:
    return int(httpx.get(f"{server.url}/api/league", timeout=30).json()["matches"].get("done", 0))


@needs_bwrap
@pytest.mark.slow
def test_a_server_that_rejects_uploads_and_loses_a_worker_leaves_no_zombie(tmp_path: Path) -> None:
    config = tmp_path / "league.yaml"
    config.write_text(f"league: {{name: z, bots: ['registry:*', {SAMPLES / 'greedy'}, {SAMPLES / 'random'}], "
                      "players: 2, seed: 3, rules: {threshold: 30}, workers: 2}\n")
    with Server(tmp_path, config, tmp_path / "arena.db", free_port()).running() as server:
        assert server.process is not None
        pid = server.process.pid
        token = server.add_author("zoe")
        for bot in (make_bot(tmp_path / "up", "crasher", code=CRASH_AT_HELLO), failing_build(tmp_path / "up", "unbuilt")):
            reply = server.upload(token, pack(bot))
            assert reply.status_code == 422, reply.text
        server.wait_for("a few league matches", lambda: done(server) >= 4, 120)
        [victim, *_] = match_workers(pid)
        os.kill(victim, signal.SIGKILL)
        # The batch that lost the worker stops, and the league goes on with a new pool: without that it would wait
        # for the lost match forever.
        server.wait_for("the killed worker to be replaced", lambda: victim not in procfs.children(pid), 60)
        after_kill = done(server)
        server.wait_for("matches after the worker's death", lambda: done(server) >= after_kill + 4, 120)
        # A bot that has just exited is a zombie until its match reaps it: only one that outlives every match in
        # flight now (at most one per worker) is left behind.
        seen = {(z, procfs.stat(z)) for z in zombies_under(pid)}
        now = done(server)
        server.wait_for("the matches in flight to end", lambda: done(server) >= now + 3, 120)
        assert settled(pid) == []
        left = [(z, info) for z, info in seen if info is not None and procfs.stat(z) == info]
        assert left == []



PLAIN_MATCH = """\
import json, sys
from pathlib import Path
from arena.bots.manifest import load_bot
from arena.game.rules import Rules
from arena.match.protocol import Limits
from arena.match.referee import play_match
from arena.sandbox.process import ProcessSandbox
from arena.sandbox.reaper import Orphans
from tests.support.zombies import zombies

greedy, hostile, cgroups = sys.argv[1], sys.argv[2], sys.argv[3] == "cgroups"
sandbox = ProcessSandbox(isolate=False, use_cgroups=cgroups)
result = play_match([load_bot(Path(greedy)), load_bot(Path(hostile))], 1, sandbox, Rules(threshold=30),
                    Limits(hello_ms=60_000, move_ms=60_000, bank_ms=0))
print(json.dumps({"faults": [seat.fault is not None for seat in result.players], "zombies": zombies()}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("cgroups", ["cgroups", "no-cgroups"])
def test_a_plain_bots_daemon_grandchild_leaves_no_zombie(tmp_path: Path, cgroups: str) -> None:
    """A plain (no bwrap) bot that double-forks a daemon in a session of its own: the middle process exits
    unwaited, a zombie of the bot, and is ours (a subreaper) once the bot is gone; the sandbox's kill must reap it,
    not leave it to whoever reaps the runner's orphans (the test harness did). The match runs in a process of its
    own, so that nothing another test left to this one is counted."""
    daemon = hostile.make_bot(tmp_path, "daemon_grandchild")
    done = subprocess.run([sys.executable, "-c", PLAIN_MATCH, str(SAMPLES / "greedy"), str(daemon), cgroups],
                          check=False, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"faults": [False, False], "zombies": []}


def test_orphans_adopted_reaped_and_waited_for_by_threads_at_once_are_all_reaped() -> None:
    # A chain's lanes end side by side (arena.match.live), each kill adopting, reaping and waiting on the one set of
    # orphans of its process. Eight threads do that at once, each with 20 real exited children, then 30 times with
    # 20 pids no process can have (above Linux's highest pid_max: gone for good, never reused), so that every wait
    # loops over the set while other threads take pids out of it. Before the set had a lock, that failed with
    # "Set changed size during iteration" (a whole run lost once).
    orphans = Orphans()
    batches = [[os.posix_spawn("/bin/true", ["true"], {}) for _ in range(20)] for _ in range(8)]
    everyone = [pid for batch in batches for pid in batch]
    # Exited before the threads start, so that a loaded machine cannot make a wait's short budget run out.
    deadline = time.monotonic() + 60
    while any(getattr(procfs.stat(pid), "state", "Z") != "Z" for pid in everyone) and time.monotonic() < deadline:
        time.sleep(0.01)
    errors: list[BaseException] = []
    start = threading.Barrier(len(batches))

    def end_lanes(thread: int, children: list[int]) -> None:
        try:
            start.wait()
            orphans.adopt(*children)
            assert orphans.wait()
            for round_ in range(30):
                orphans.adopt(*(NO_PID + 1_000 * (30 * thread + round_) + i for i in range(20)))
                assert orphans.wait()
        except BaseException as error:  # noqa: BLE001 - reported below, with the thread's own traceback lost
            errors.append(error)

    threads = [threading.Thread(target=end_lanes, args=(thread, batch)) for thread, batch in enumerate(batches)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert orphans.snapshot() == []
    assert not [pid for pid in everyone if os.path.exists(f"/proc/{pid}")]


NO_PID = 1 << 22
"""Above the highest pid_max Linux allows (2**22): no process ever has such a pid."""
