"""Per-move debug output (issue 43): each line a bot writes on stderr is logged with the step it arrived during,
printed in line by ``arena replay --stderr``, shown beside its step in the organiser's replay, and left out of a
public site (its pages, its data files and its log downloads).

The slow tests play one real match in the sandbox (``arena run``) between a bot that writes ``MARK turn N`` as it
thinks of its N-th move and sample:greedy, and look for the 17th of those lines beside that bot's 17th move.
"""

from __future__ import annotations

import gzip
import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from arena.cli.main import main
from arena.game.cards import VALUE
from arena.game.rules import Rules
from arena.match.matchlog import LoadedLog, describe, load
from arena.match.protocol import Limits
from arena.match.referee import Referee
from arena.match.stderr import DEBUG_CUT, DEBUG_LINE, DebugLines
from arena.site import snapshot
from arena.site.build import write_site
from arena.site.pages import home as home_data
from arena.store import Store
from tests.scriptedbot import ScriptedBot, ScriptedSandbox, spec
from tests.support.browser import Browser, Page, browser_fixture, page_fixture, url  # noqa: F401 - fixtures
from tests.support.diarist import DIARY, diarist, moves_of

ROOT = Path(__file__).resolve().parents[2]
MARK = "DIARY-5e1b"
MOVE = 17


def test_lines_are_cut_at_newlines_and_kept_within_the_cap() -> None:
    lines = DebugLines(cap=64)
    assert lines.add(b"first li") == []
    assert lines.add(b"ne\r\nsecond\nthi") == ["first line", "second"]
    assert lines.flush() == ["thi"]
    assert lines.add(b"x" * (DEBUG_LINE + 1)) == [DEBUG_CUT.format(cap=64)]  # over the cap: said once
    assert lines.add(b"more\n") == [] and lines.flush() == []  # full: nothing more is kept
    long = DebugLines()
    assert long.add(b"y" * 1000) == ["y" * DEBUG_LINE]  # a line with no end is bounded as it grows


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, LoadedLog]:
    """One match played and its site built by ``arena run``: the results directory and the match's log."""
    where = tmp_path_factory.mktemp("debug")
    config = {"name": "diary", "bots": [str(diarist(where / "bots", "diarist", MARK)),
                                        str(ROOT / "sample_bots" / "greedy")],
              "players": 2, "repeats": 1, "seed": 4, "limits": {"move_ms": 2000}, "workers": 1}
    path = where / "diary.yaml"
    path.write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(main, ["run", str(path), "--db", str(where / "results" / "arena.db")])
    assert result.exit_code == 0, result.output
    logs = sorted((where / "results" / "logs" / "diary").glob("*.jsonl.gz"))
    return where / "results", load(logs[0])


def diary_steps(log: LoadedLog) -> dict[int, int]:
    """The diarist's N-th line by the step it was logged at."""
    seat = next(seat for seat, bot in enumerate(log.header["bots"]) if bot["name"] == "diarist")
    return {int(found[2]): line.step for line in log.debug
            if line.seat == seat and (found := DIARY.match(line.text)) and found[1] == MARK}


@pytest.mark.slow
def test_each_line_is_logged_at_the_step_of_the_move_it_was_written_for(played: tuple[Path, LoadedLog]) -> None:
    _, log = played
    seat = next(seat for seat, bot in enumerate(log.header["bots"]) if bot["name"] == "diarist")
    moves = moves_of(log.events, seat)
    assert len(moves) >= MOVE
    assert diary_steps(log) == {turn: step for turn, step in enumerate(moves, 1)}
    printed = list(describe(log, stderr=True))
    said = printed.index(f"      | diarist: {MARK} turn {MOVE}")
    assert printed[said - 1].startswith("   diarist (seat 0)")  # right after the move it was written for
    assert not [line for line in describe(log) if MARK in line]  # without --stderr, none


@pytest.mark.slow
def test_the_organisers_replay_shows_move_17s_line_beside_move_17(played: tuple[Path, LoadedLog], page: Page) -> None:
    results, log = played
    step = diary_steps(log)[MOVE]
    match = next((results / "site" / "t").glob("*/matches/1.html"))
    page.goto(url(match) + f"#step={step + 1}")
    lines = page.locator("[data-debug] .said")
    assert lines.all_inner_texts() == [f"diarist: {MARK} turn {MOVE}"]
    page.goto(url(match) + f"#step={step}")  # the step before (the other seat's move): not this line
    assert f"turn {MOVE}" not in page.locator("[data-debug]").inner_text()


@pytest.mark.slow
def test_a_public_site_has_no_line_of_stderr(played: tuple[Path, LoadedLog], tmp_path: Path) -> None:
    results, _ = played
    store = Store(results / "arena.db")
    try:
        snap = snapshot.snapshot(store, "diary", stderr=False)  # as the league server publishes
        write_site(tmp_path / "public", [snap], home_data.home_page(store, {snap.slug}, {snap.id: snap}))
    finally:
        store.close()
    files = [path for path in (tmp_path / "public").rglob("*") if path.is_file()]
    assert any(path.name.endswith(".jsonl.gz") for path in files)
    text = [gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes() for path in files]
    assert not [blob for blob in text if MARK.encode() in blob]
    # while the organiser's own data file has every line
    data = next((results / "site" / "t").glob("*/matches/1.js")).read_text()
    shown = json.loads(data[data.index("{"):data.rindex("}") + 1])
    assert sum(MARK in said for _, _, said in shown["debug"]) == len(diary_steps(played[1]))


class LateDiarist(ScriptedBot):
    """A bot whose diary line for each move reaches the referee after the move itself, as docker's attach stream
    can deliver them (stdout and stderr carried apart): it answers a turn with its move at once and keeps the line
    it wrote while thinking for :class:`Courier` to put on its stderr, after the referee applied the move."""

    def __init__(self) -> None:
        super().__init__()
        self.turns = 0
        self.late: list[bytes] = []

    def _hear(self, message: dict[str, Any]) -> None:
        if message["type"] != "turn":
            super()._hear(message)
            return
        self.turns += 1  # always a play (never a declaration): one move, one event
        self.late.append(f"{MARK} turn {self.turns}\n".encode())
        self._say(b'{"type":"play","discard":["%s"],"take":"deck"}\n' % max(message["hand"], key=VALUE.__getitem__).encode())


class Courier(ScriptedBot):
    """A correct bot that, when it is asked for a move (so after the other seat's move was applied), delivers the
    other seat's held-back line: the line and the move reach the referee in separate wake-ups, the move first."""

    def __init__(self, late: LateDiarist) -> None:
        super().__init__()
        self.other = late

    def _hear(self, message: dict[str, Any]) -> None:
        if message["type"] == "turn":
            for line in self.other.late:
                self.other.stderr(line)
            self.other.late.clear()
        super()._hear(message)


def test_a_line_that_arrives_after_its_move_is_still_that_moves(tmp_path: Path) -> None:
    """Until it is asked for its next move a seat is sent nothing (its messages wait for that turn), so what it
    writes meanwhile is about its last move, however late the sandbox hands it over."""
    late = LateDiarist()
    log_path = tmp_path / "m.jsonl.gz"
    Referee([spec("late"), spec("courier")], 7, ScriptedSandbox(late, Courier(late)), Rules(threshold=30),
            Limits(hello_ms=2000, move_ms=1000, bank_ms=0), log_path=log_path).run()
    log = load(log_path)
    moves = moves_of(log.events, 0)
    # The courier delivers a line when it is asked next: checked are the moves after which it is (not those that
    # ended a round with the late seat to start the next, nor the last), and those after a reshuffle are among them.
    movers = [(step, event["seat"]) for step, event in enumerate(log.events) if event["type"] in ("play", "declare")]
    delivered = {step for (step, seat), (_, after) in pairwise(movers) if (seat, after) == (0, 1)}
    assert len(delivered) >= 20 and any(log.events[step - 1]["type"] == "reshuffle" for step in delivered)
    steps = {int(found[2]): line.step for line in log.debug if (found := DIARY.match(line.text))}
    assert {turn: steps[turn] for turn, step in enumerate(moves, 1) if step in delivered} == \
        {turn: step for turn, step in enumerate(moves, 1) if step in delivered}
