"""Progress lines when ``arena run`` and ``arena test`` write to a file, not a terminal (arena/cli/ticker.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli.main import main
from arena.cli.ticker import EVERY_S, Ticker
from tests.support.runs import SAMPLES, write_config


def test_a_line_is_due_every_tenth_of_the_matches_or_every_30_seconds() -> None:
    now = [0.0]
    ticker = Ticker(100, clock=lambda: now[0])
    assert [count for count in range(1, 31) if ticker.due(count)] == [10, 20, 30]
    now[0] = EVERY_S  # a slow stretch: a line after 30 s even with fewer matches
    assert ticker.due(31) and not ticker.due(32)


@pytest.mark.slow  # real matches
def test_arena_run_into_a_file_prints_progress_lines(tmp_path: Path) -> None:
    config = write_config(tmp_path, bots=[str(SAMPLES / "random"), str(SAMPLES / "greedy")], repeats=2)
    ran = CliRunner().invoke(main, ["run", str(config), "--db", str(tmp_path / "arena.db"), "--no-site"])
    assert ran.exit_code == 0, ran.stderr
    lines = [line for line in ran.stderr.splitlines() if line.startswith("t: ") and " done, " in line]
    # CliRunner's stderr is no terminal: 4 matches, a line every match (a tenth), each a whole line, no bar.
    assert len(lines) == 4 and lines[-1].startswith("t: 4/4 done"), ran.stderr
    assert "\r" not in ran.stderr
