"""Per-move debug output (issue 43): each line a bot writes on stderr is logged with the step it arrived during,
printed in line by ``arena replay --stderr``, shown beside its step in the organiser's replay, and left out of a
public site (its pages, its data files and its log downloads).

The slow tests play one real match in the sandbox (``arena run``) between a bot that writes ``MARK turn N`` as it
thinks of its N-th move and sample:greedy, and look for the 17th of those lines beside that bot's 17th move.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from arena.cli.main import main
from arena.match.matchlog import LoadedLog, describe, load
from arena.match.stderr import DEBUG_CUT, DEBUG_LINE, DebugLines
from arena.site import snapshot
from arena.site.build import write_site
from arena.site.pages import home as home_data
from arena.store import Store
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
