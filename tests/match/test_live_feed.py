"""A match's live feed (issue 43): what a spectator follows while it plays holds no card that any player was not
told, reads back from any event on, and leaves a half-written line for the next read; at the end it has every
event and says it is over, and it goes once it is old (or too many others ended after it)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from arena.match.livefeed import FEEDS, GRACE_S, Feed, LiveFeed, ended_path, feed_path, in_play, read_feed, sweep
from arena.match.local import play_local
from arena.run.plan import remove_partial_logs
from tests.match.test_information_hiding import RandomLegalBot, cards_in


def test_a_spectator_sees_only_cards_every_player_was_told(tmp_path: Path) -> None:
    for seed in range(6):
        transcript: list[tuple[int, dict[str, object]]] = []
        players = 2 + seed % 3
        match = play_local([RandomLegalBot(seed * 10 + seat) for seat in range(players)], seed,
                           transcript=transcript)
        told_all = set.intersection(*[set().union(*[cards_in(message) for to, message in transcript if to == seat])
                                      for seat in range(players)])
        path = feed_path(tmp_path / f"{seed:06d}.jsonl.gz")
        # Every call writes unless seed is odd: then the feed is throttled as in a league, so the end has events
        # still to write.
        feed = LiveFeed(path, [f"bot{seat}" for seat in range(players)], every_s=0 if seed % 2 == 0 else 3600)
        seen: list[dict[str, object]] = []
        for upto in range(0, len(match.events) + 1, 7):  # a few turns at a time, as the referee tells them
            feed.add(match.events[:upto])
            found = read_feed(path, len(seen))
            assert found is not None and not found.over
            seen += found.events
        assert in_play(tmp_path) == [seed]
        feed.close(match.events)
        found = read_feed(path, len(seen))
        assert found is not None and found.names == tuple(f"bot{seat}" for seat in range(players)) and found.over
        seen += found.events
        assert [event["type"] for event in seen] == [event["type"] for event in match.events]
        assert set().union(*map(cards_in, seen)) <= told_all
        assert any("drew" in event for event in match.events) and not any("drew" in event for event in seen)
        assert in_play(tmp_path) == [] and not path.exists() and ended_path(path).is_file()


def test_a_match_that_did_not_end_leaves_no_feed(tmp_path: Path) -> None:
    path = feed_path(tmp_path / "000003.jsonl.gz")
    feed = LiveFeed(path, ["a", "b"], every_s=0)
    feed.add([{"type": "match_start", "players": 2}])
    feed.close(None)
    assert read_feed(path) is None and not ended_path(path).exists() and in_play(tmp_path) == []


def test_ended_feeds_go_after_the_grace_period_and_beyond_the_newest_few(tmp_path: Path) -> None:
    now = time.time()
    for index in range(6):
        path = feed_path(tmp_path / f"{index:06d}.jsonl.gz")
        feed = LiveFeed(path, ["a", "b"])
        feed.close([{"type": "match_start", "players": 2}])
        age = GRACE_S + 10 if index == 0 else 6 - index  # match 0 ended long ago, 5 last
        os.utime(ended_path(path), (now - age, now - age))
    playing = feed_path(tmp_path / "000009.jsonl.gz")
    playing.write_text('{"names":["a","b"]}\n')  # in play: never swept, however old
    os.utime(playing, (now - 10 * GRACE_S, now - 10 * GRACE_S))
    assert sweep(tmp_path, keep=3, now=now) == 3  # match 0 (old), then 1 and 2 (the oldest beyond three)
    left = sorted(path.name for path in (tmp_path / FEEDS).iterdir())
    assert left == [f"{index:06d}.jsonl.gz.live.over" for index in (3, 4, 5)] + ["000009.jsonl.gz.live"]
    assert read_feed(feed_path(tmp_path / "000005.jsonl.gz")) is not None
    assert read_feed(feed_path(tmp_path / "000001.jsonl.gz")) is None


def test_a_line_still_being_written_waits_for_the_next_read(tmp_path: Path) -> None:
    path = tmp_path / "000001.jsonl.gz.live"
    path.write_text(json.dumps({"names": ["a", "b"]}) + "\n" + '{"type":"play","seat":0}\n{"type":"pl')
    assert read_feed(path) == Feed(("a", "b"), ({"type": "play", "seat": 0},), over=False)
    assert read_feed(path, 1) == Feed(("a", "b"), (), over=False)


def test_a_feed_left_by_a_killed_runner_is_removed_and_one_being_written_is_not(tmp_path: Path) -> None:
    stale, playing = feed_path(tmp_path / "000001.jsonl.gz"), feed_path(tmp_path / "000002.jsonl.gz")
    (tmp_path / FEEDS).mkdir()
    for feed in (stale, playing):
        feed.write_text('{"names":["a","b"]}\n')
    (tmp_path / f"000002.jsonl.gz.{os.getpid()}.tmp").write_bytes(b"")  # its log, by a writer alive (this one)
    remove_partial_logs(tmp_path)
    assert in_play(tmp_path) == [2]


def test_finding_the_matches_in_play_costs_the_same_whatever_the_logs(tmp_path: Path) -> None:
    """A league's log directory holds a log for every match it played: the feeds are in a directory of their own,
    so a spectator's poll of what is in play, and each sweep of the ended feeds, read a few names, not 5,000."""
    import tracemalloc

    for index in range(5000):
        (tmp_path / f"{index:06d}.jsonl.gz").write_bytes(b"")
    feed = LiveFeed(feed_path(tmp_path / "005000.jsonl.gz"), ["a", "b"])
    try:
        tracemalloc.start()
        try:
            playing = in_play(tmp_path)
            swept = sweep(tmp_path)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        feed.close()
    assert playing == [5000] and swept == 0
    # Listed beside the logs, the poll and the sweep held a path for each of them at once (1.36 MB).
    assert peak < 32 * 1024, f"finding one match in play among 5,000 logs held {peak:,} bytes"
