"""`arena play`: a person's seat, played as a person would, through a real pseudo-terminal (one key per choice,
no Enter) and through a pipe; the match refereed, logged and stored as any other."""

from __future__ import annotations

import os
import random
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.game.rules import Rules, legal_discards
from arena.match.matchlog import load, verify
from arena.play.seat import PERSON_LANGUAGE
from arena.store import Store
from tests.support.runs import stored_play
from tests.support.server import make_bot

ROOT = Path(__file__).resolve().parents[2]
QUICK = ["--threshold", "30", "--seed", "5"]
CRASH_ON_TURN = '''\
import json, sys
for line in sys.stdin:
    if json.loads(line)["type"] == "hello":
        print(json.dumps({"type": "ready"}), flush=True)
    elif json.loads(line)["type"] == "turn":
        sys.exit(4)
'''


def arena_play(args: list[str], cwd: Path, keys: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena", "play", *args], check=False, input=keys,
                          capture_output=True, text=True, cwd=cwd, timeout=240,
                          env=os.environ | {"PYTHONPATH": str(ROOT)})


class Terminal:
    """``arena play`` on the slave side of a pseudo-terminal: what it writes is read back from the master side,
    and keys go in as a person types them."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.master, slave = os.openpty()
        self.process = subprocess.Popen([sys.executable, "-m", "arena", "play", *args], stdin=slave, stdout=slave,
                                        stderr=slave, cwd=cwd, start_new_session=True,
                                        env=os.environ | {"PYTHONPATH": str(ROOT), "COLUMNS": "120"})
        os.close(slave)
        self.screen = ""
        self.cursor = 0

    def expect(self, *texts: str, timeout: float = 120) -> str:
        """Read until one of ``texts`` appears after the last text expected; the one that did."""
        deadline = time.monotonic() + timeout
        while True:
            found = [(at, text) for text in texts if (at := self.screen.find(text, self.cursor)) >= 0]
            if found:
                at, text = min(found)
                self.cursor = at + len(text)
                return text
            left = deadline - time.monotonic()
            assert left > 0, f"none of {texts} within {timeout} s; the screen ends:\n{self.screen[-2000:]}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: the other side closed
                    chunk = b""
                assert chunk, f"the program ended; none of {texts}; the screen ends:\n{self.screen[-2000:]}"
                self.screen += chunk.decode(errors="replace")

    def press(self, key: str) -> None:
        os.write(self.master, key.encode())

    def close(self) -> int:
        try:
            return self.process.wait(60)
        finally:
            if self.master >= 0:
                os.close(self.master)
                self.master = -1


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(QUICK, tmp_path)
    try:
        yield term
    finally:
        if term.process.poll() is None:
            term.process.kill()
        term.close()


@pytest.mark.slow
def test_a_person_plays_a_whole_match_in_a_terminal_one_key_at_a_time(terminal: Terminal, tmp_path: Path) -> None:
    terminal.expect("Throw [")
    terminal.press("z")  # no such throw: refused, asked again
    terminal.expect("No throw has the key 'z'")
    terminal.expect("Throw [")
    terminal.press("!")  # the first turn of a round: the rules say no, in their words
    terminal.expect("first turn of a round (RULES.md")
    terminal.expect("Throw [")
    turns = 0
    while True:
        terminal.press("1")
        terminal.expect("Take: d the deck")
        terminal.press("d")
        turns += 1
        if terminal.expect("Throw [", "stored as match") == "stored as match":
            break
    assert terminal.close() == 0
    assert "Traceback" not in terminal.screen
    match, seats = stored_play(tmp_path / "results" / "arena.db")
    assert match.status == "done"
    assert [seat["name"] for seat in seats] == ["you", "planner", "greedy"]
    assert PERSON_LANGUAGE in str(seats[0]["manifest"])
    # The stored log replays to the stored outcome, the person's moves included.
    assert match.log_path is not None
    log = load(tmp_path / match.log_path)  # written relative to where arena play ran, as arena run's are
    assert verify(log) == []
    assert sum(1 for event in log.events if event["type"] == "play" and event["seat"] == 0) == turns


def test_wrong_input_of_every_kind_never_ends_in_a_traceback_or_loses_the_match(tmp_path: Path) -> None:
    rng = random.Random(42)
    junk = "".join(rng.choice("0123456789abcdefghijklmnopqrstuvwxyz!?~ \t") + "\n" for _ in range(3000))
    done = arena_play(QUICK, tmp_path, junk.replace("q", "x"))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    match, _ = stored_play(tmp_path / "results" / "arena.db")
    assert match.status == "done"


def test_a_person_who_leaves_forfeits_and_the_bots_play_it_out(tmp_path: Path) -> None:
    left = arena_play(QUICK, tmp_path, "1\nd\nq\n")
    assert left.returncode == 0, left.stderr
    assert "You leave the table" in left.stdout
    match, _ = stored_play(tmp_path / "results" / "arena.db")
    assert match.status == "done"
    store = Store(tmp_path / "results" / "arena.db")
    try:
        (seat,) = store.db.execute("SELECT place, fault_kind FROM seats WHERE seat = 0").fetchall()
    finally:
        store.close()
    assert seat["fault_kind"] is not None and seat["place"] == 3


def test_a_bot_that_crashes_while_the_person_plays_forfeits_and_the_match_goes_on(tmp_path: Path) -> None:
    crasher = make_bot(tmp_path / "bots", "crasher", code=CRASH_ON_TURN)
    done = arena_play([str(crasher), "sample:greedy", "--seat", "2", *QUICK], tmp_path, "1\nd\n" * 200)
    assert done.returncode == 0, done.stderr
    assert "crasher forfeits" in done.stdout
    match, seats = stored_play(tmp_path / "results" / "arena.db")
    assert [seat["name"] for seat in seats] == ["crasher", "greedy", "you"]
    assert match.status == "done"


def test_the_coach_shows_a_legal_move_for_the_shown_hand_and_plays_nothing(tmp_path: Path) -> None:
    # Asked on the first turn and again on the second, after a move: the replay holds every message so far.
    done = arena_play(QUICK, tmp_path, "c\n1\nd\nc\nq\n")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    advised = 0
    hand: list[str] = []
    floor: list[str] = []
    for line in done.stdout.splitlines():
        if line.startswith("Your hand: "):
            hand = line.removeprefix("Your hand: ").split(" (")[0].split()
        elif line.startswith("Floor: "):
            floor = line.removeprefix("Floor: ").rstrip(".").split()
        elif line.startswith("Coach: "):
            found = re.fullmatch(r"Coach: planner would throw ([2-9TJQKA][CDHS](?: [2-9TJQKA][CDHS])*) and take "
                                 r"(from the deck|[2-9TJQKA][CDHS])\.", line)
            assert found, line
            throw = found[1].split()
            assert tuple(throw) in legal_discards(hand, Rules(threshold=30)), (throw, hand)
            assert found[2] == "from the deck" or found[2] in floor, (found[2], floor)
            advised += 1
    assert advised == 2, done.stdout
    assert "your clock keeps running" in done.stdout
    # Only the person's own key was played: one move, then they left.
    match, _ = stored_play(tmp_path / "results" / "arena.db")
    assert match.log_path is not None
    log = load(tmp_path / match.log_path)
    assert sum(1 for event in log.events if event["type"] == "play" and event["seat"] == 0) == 1


def test_a_coach_that_crashes_is_reported_and_the_table_plays_on(tmp_path: Path) -> None:
    crasher = make_bot(tmp_path / "bots", "crasher", code=CRASH_ON_TURN)
    done = arena_play(["--coach", str(crasher), *QUICK], tmp_path, "c\n1\nd\nq\n")
    assert done.returncode == 0, done.stderr
    assert "Coach: crasher gave no advice: it ended without answering (exited with status 4)." in done.stdout
    assert "You threw" in done.stdout  # the seat went on to play its own move
    match, seats = stored_play(tmp_path / "results" / "arena.db")
    assert match.status == "done" and [seat["name"] for seat in seats] == ["you", "planner", "greedy"]
