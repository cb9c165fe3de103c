"""``arena run --live`` writes each match's spectators' feed, and ``arena watch`` follows a match from it while it
is played (issue 43): a real run in a subprocess, real sandboxed bots, and a second process watching.

The match is held by a bot that waits, before it says ready, for a file to appear in its own directory
(tests/support/gate.py): the watcher is started while the match is held, so it cannot have read the match after the
fact, and the test races no clock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from arena.match.livefeed import FEEDS, ended_path, feed_path, in_play
from arena.match.matchlog import load, log_dir_for, log_path_for
from arena.match.spectator import public_event, public_line
from tests.support.gate import gate_bot, open_gate

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"


def arena(*args: str | Path) -> subprocess.Popen[str]:
    # The gate bot sees its directory change while it plays: no private copy of it (arena/sandbox/views.py).
    return subprocess.Popen([sys.executable, "-m", "arena", *map(str, args)], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=os.environ | {"ARENA_PRIVATE_VIEWS": "0"})


def wait_for(condition: object, what: str, runner: subprocess.Popen[str], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert runner.poll() is None, f"the run ended before {what}: {runner.communicate()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("live", [True, False])
def test_arena_watch_follows_a_match_of_arena_run_live_move_by_move(tmp_path: Path, live: bool) -> None:
    gate = gate_bot(tmp_path / "gate")
    config = {"name": "followed", "bots": [str(SAMPLES / "greedy"), str(gate)], "players": 2, "repeats": 1,
              "seed": 4, "rules": {"threshold": 20}, "workers": 1, "limits": {"hello_ms": 600_000}}
    path = tmp_path / "followed.yaml"
    path.write_text(yaml.safe_dump(config))
    db = tmp_path / "results" / "arena.db"
    log_dir = log_dir_for(db.parent, "followed")
    runner = arena("run", path, "--db", db, *(["--live"] if live else ["--no-site"]), "--json")
    try:
        # Match 0 is held at the gate's hello: begun (its log being written), not one move made.
        wait_for(lambda: any(log_dir.glob("000000.jsonl.gz.*.tmp")), "match 0 to begin", runner)
        if not live:
            assert in_play(log_dir) == [] and not feed_path(log_path_for(log_dir, 0)).exists()
            open_gate(gate, 0, 1)
            assert runner.wait(timeout=240) == 0, runner.communicate()
            assert not (log_dir / FEEDS).exists()  # no spectator asked for: no feed written
            return
        wait_for(lambda: in_play(log_dir) == [0], "match 0's feed", runner)
        watcher = arena("watch", "--db", db, "--wait", "60")
        assert watcher.stdout is not None
        assert watcher.stdout.readline() == "followed, match 0 (its place in the schedule):\n"
        assert watcher.poll() is None  # following a match that cannot have moved yet: the gate holds it
        open_gate(gate, 0, 1)
        out, err = watcher.communicate(timeout=240)
        assert watcher.returncode == 0, err
        assert runner.wait(timeout=240) == 0, runner.communicate()
    finally:
        open_gate(gate, 0, 1)
        if runner.poll() is None:
            runner.kill()
        runner.communicate()
    log = load(log_path_for(log_dir, 0))
    names = [bot["name"] for bot in log.header["bots"]]
    assert out.splitlines() == [public_line(public_event(event), names) for event in log.events]
    assert any("drew" in event for event in log.events) and out.splitlines()[-1].startswith("Match over:")
    # The ended feed is kept (a spectator a poll behind still reads the end); --json gives the events themselves.
    assert ended_path(feed_path(log_path_for(log_dir, 0))).is_file()
    again = arena("watch", "--db", db, "--match", "0", "--wait", "0", "--json")
    lines, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert [json.loads(line) for line in lines.splitlines()] == [public_event(event) for event in log.events]
    nothing = arena("watch", "--db", db, "--match", "5", "--wait", "0")
    _, err = nothing.communicate(timeout=60)
    assert nothing.returncode == 1 and "match 5 of followed in play after 0 s" in err
