"""A match's live feed (issue 43): what a spectator follows while it plays holds no card that any player was not
told, reads back from any event on, and leaves a half-written line for the next read; the file goes at the end."""

from __future__ import annotations

import json
import os
from pathlib import Path

from arena.match.livefeed import LiveFeed, feed_path, in_play, read_feed
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
        feed = LiveFeed(path, [f"bot{seat}" for seat in range(players)], every_s=0)  # every call writes
        seen: list[dict[str, object]] = []
        for upto in range(0, len(match.events) + 1, 7):  # a few turns at a time, as the referee tells them
            feed.add(match.events[:upto])
            found = read_feed(path, len(seen))
            assert found is not None
            seen += found[1]
        feed.add(match.events)
        found = read_feed(path, len(seen))
        assert found is not None and found[0] == [f"bot{seat}" for seat in range(players)]
        seen += found[1]
        assert [event["type"] for event in seen] == [event["type"] for event in match.events]
        assert set().union(*map(cards_in, seen)) <= told_all
        assert any("drew" in event for event in match.events) and not any("drew" in event for event in seen)
        assert in_play(tmp_path) == [seed]
        feed.close()
        assert read_feed(path) is None and in_play(tmp_path) == []


def test_a_line_still_being_written_waits_for_the_next_read(tmp_path: Path) -> None:
    path = tmp_path / "000001.jsonl.gz.live"
    path.write_text(json.dumps({"names": ["a", "b"]}) + "\n" + '{"type":"play","seat":0}\n{"type":"pl')
    assert read_feed(path) == (["a", "b"], [{"type": "play", "seat": 0}])
    assert read_feed(path, 1) == (["a", "b"], [])


def test_a_feed_left_by_a_killed_runner_is_removed_and_one_being_written_is_not(tmp_path: Path) -> None:
    stale, playing = tmp_path / "000001.jsonl.gz.live", tmp_path / "000002.jsonl.gz.live"
    for feed in (stale, playing):
        feed.write_text('{"names":["a","b"]}\n')
    (tmp_path / f"000002.jsonl.gz.{os.getpid()}.tmp").write_bytes(b"")  # its log, by a writer alive (this one)
    remove_partial_logs(tmp_path)
    assert in_play(tmp_path) == [2]
