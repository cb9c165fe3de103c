"""Ratings brought up to date from the stored ones: only the matches from the first one not yet rated in schedule
order are rated again, with the numbers of rating every match from the start (arena/run/loop.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from arena.run.config import load_config
from arena.run.loop import FinalRatings
from arena.run.tournament import run_tournament
from arena.stats.ratings import RatingConfig
from arena.store import Store
from tests.support.runs import write_config

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"


def rows(db: Path) -> list[tuple[int, int, float, float]]:
    with sqlite3.connect(db) as probe:
        return probe.execute("SELECT bot_id, match_idx, mu, sigma FROM ratings ORDER BY match_idx, bot_id").fetchall()


def rate_at_end(db: Path, rating: RatingConfig) -> None:
    store = Store(db)
    try:
        FinalRatings(rating).at_end(store, store.tournament("t")["id"])
    finally:
        store.close()


@pytest.mark.slow
def test_a_run_rates_from_its_stored_ratings_on_with_the_numbers_of_a_full_rating(tmp_path):
    config = load_config(write_config(tmp_path, bots=[str(SAMPLES / "greedy"), str(SAMPLES / "random")],
                                      repeats=3, workers=1))
    db = tmp_path / "a.db"
    run_tournament(config, Store(db))
    full = rows(db)
    assert len({idx for _, idx, _, _ in full}) == 6
    # As if the last run had rated only the first three matches: the rest is rated from the stored state.
    with sqlite3.connect(db) as probe:
        probe.execute("DELETE FROM ratings WHERE match_idx >= 3")
    rate_at_end(db, config.rating)
    assert rows(db) == full
    # The stored prefix is kept, not rated again: a row changed by hand stays as it is.
    with sqlite3.connect(db) as probe:
        probe.execute("UPDATE ratings SET mu = 99.5 WHERE match_idx = 0")
        probe.execute("DELETE FROM ratings WHERE match_idx = 5")
    rate_at_end(db, config.rating)
    assert next(row for row in rows(db) if row[1] == 0)[2] == 99.5
    assert [row for row in rows(db) if row[1] != 0] == [row for row in full if row[1] != 0]
