"""What the league server reads from the results store, on a real store filled with engine matches
(:mod:`tests.sitestore`): an author's latest seats and when a league last finished a match."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from arena.store import Store
from tests.sitestore import CRASH, STDERR, fill_store


def test_recent_seats_are_the_bots_latest_finished_ones_with_faults_and_stderr(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    tid = fill_store(store, "ladder", bots=("alpha", "beta", "gamma"))
    ids = {row["name"]: row["id"] for row in store.bots(tid)}
    everything = store.recent_seats(tid, [ids["beta"]], 100)
    done = {m["index"]: m for m in store.match_list(tid, "beta") if m["status"] == "done"}
    assert [seat["index"] for seat in everything] == sorted(done, reverse=True)
    for seat in everything:
        player = next(p for p in done[seat["index"]]["players"] if p["bot"] == "beta")
        assert (seat["seat"], seat["place"], seat["score"]) == (player["seat"], player["place"], player["score"])
    assert {seat["bot"] for seat in everything} == {"beta"}
    faulted = [seat for seat in everything if seat["fault"] is not None]
    assert faulted and all(seat["stderr_tail"] == STDERR and seat["fault"]["detail"] == CRASH.detail
                           for seat in faulted)
    assert all(seat["stderr_tail"] == "" for seat in everything if seat["fault"] is None)
    assert store.recent_seats(tid, [ids["beta"]], 2) == everything[:2]
    both = store.recent_seats(tid, [ids["alpha"], ids["beta"]], 100)
    assert {seat["bot"] for seat in both} == {"alpha", "beta"} and len(both) > len(everything)
    assert store.recent_seats(tid, [], 10) == []
    store.close()


def test_last_finished_is_the_latest_finished_match_or_none(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    tid = fill_store(store, "ladder")
    stamps = [row["finished_at"] for row in store.matches_with_status(tid, "done")]
    assert stamps and store.last_finished(tid) == max(stamps)
    empty = fill_store(store, "empty", limit=0)
    assert store.last_finished(empty) is None
    store.close()


def test_the_seats_columns_are_read_a_block_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The standings read every seat after every batch: the columns come as arrays read a block of rows at a time,
    so what the read holds besides them is a block's rows, not the league's (issue 44)."""
    import arena.store

    store = Store(tmp_path / "arena.db")
    tid = fill_store(store, "ladder", bots=("alpha", "beta", "gamma", "delta"), players=3, repeats=5, logs=False)
    expected = store._tuples("SELECT m.grp, s.bot_id, s.place, m.id FROM matches m JOIN seats s ON s.match_id = m.id"
                             " WHERE m.status = 'done' ORDER BY m.idx, s.seat", ())
    monkeypatch.setattr(arena.store, "COLUMN_BLOCK", 8)
    tracemalloc.start()
    try:
        columns = store.place_columns(tid)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert list(zip(*columns)) == expected and len(expected) == 180
    # The 180 seats' rows and numbers at once were 13 KB more than the columns; a block of 8 is a few hundred bytes.
    assert peak - held < 4096, f"the read held {peak - held:,} bytes beyond its columns"
