"""Think times read back from a log's messages (arena/match/thinktime.py): each turn's time and bank, its replay step, the
sums per seat and per bot, and what a site build keeps of them between builds."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from arena.match import thinktime
from arena.match.matchlog import MatchLog, load
from arena.match.matchview import view_path
from arena.match.thinktime import Tally, Thought
from arena.site import build, common, snapshot, urls
from tests.sitestore import make_store

EVENTS = [{"type": "match_start"}, {"type": "round_start"}, {"type": "play", "seat": 0}, {"type": "play", "seat": 1},
          {"type": "declare", "seat": 0}, {"type": "round_end"}, {"type": "round_start"}, {"type": "play", "seat": 1},
          {"type": "forfeit", "seat": 0}, {"type": "match_end"}]


def turn(log: MatchLog, seat: int, at: int, budget: int, bank: int) -> None:
    log.write_sent(seat, at, (f'{{"type":"turn","round":1,"hand":["AS"],"time_left_ms":{budget},'
                              f'"bank_ms":{bank}}}\n').encode())


def write_log(path: Path) -> Path:
    """A log whose seat 0 uses 500 ms of its bank on its second move and sends a bad line on its third; seat 1
    answers everything at once, and the played messages to every seat are in between, as the referee logs them."""
    log = MatchLog(path)
    log.write({"t": "header", "format": 2, "seed": 1, "players": 2, "limits": {"move_ms": 1000, "bank_ms": 2000},
               "bots": [{"name": "a"}, {"name": "b"}]})
    log.write_received(0, 5, b'{"type":"ready"}')  # the answer to hello: before any turn, no think time
    turn(log, 0, 10, 3000, 2000)
    log.write_received(0, 17, b'{"type":"play","discard":["AS"],"take":"deck"}')
    log.write_sent(1, 17, b'{"type":"played","seat":0}\n')
    turn(log, 1, 18, 3000, 2000)
    log.write_received(1, 18, b'{"type":"play","discard":["AS"],"take":"deck"}')
    turn(log, 0, 20, 3000, 2000)
    log.write_received(0, 1520, b'{"type":"declare"}')
    turn(log, 1, 1600, 3000, 2000)
    log.write_received(1, 1601, b'{"type":"play","discard":["AS"],"take":"deck"}')
    turn(log, 0, 1700, 2500, 1500)
    log.write_received(0, 1702, b"not json")  # a fault: no move event for it
    turn(log, 1, 1800, 3000, 2000)  # then the match ends before it answers
    for event in EVENTS:
        log.write({"t": "event", "event": event})
    log.close()
    return path


def test_each_turn_has_its_time_its_bank_and_its_step(tmp_path: Path) -> None:
    log = load(write_log(tmp_path / "m.jsonl.gz"))
    found = thinktime.thoughts(log.text, log.events)
    assert [(t.seat, t.think_ms, t.bank_left_ms, t.step) for t in found] == [
        (0, 7, 2000, 3), (1, 0, 2000, 4), (0, 1500, 1500, 5), (1, 1, 2000, 8), (0, 2, 1500, None),
        (1, None, 0, None)]
    # The replay's data: a time a move event (1500 is "BPo": 1 * 26 + 15 in A-Z, then 24 in base 36); the bank only
    # where it is not what the move's own time and the bank before make it (here, a move's time of 900 ms).
    assert thinktime.compact(found, 2000, 1000) == "70BPo1"
    assert thinktime.compact(found, 2000, 900) == "70BPo~BPo1"
    seats = thinktime.by_seat(found, 2, match_id=9)
    a, b = seats[0].to_dict(), seats[1].to_dict()
    assert (a["moves"], a["unanswered"], a["max_ms"], a["p95_ms"], b["unanswered"]) == (3, 0, 1500, 1500, 1)
    assert a["closest"] == {"think_ms": 1500, "budget_ms": 3000, "bank_left_ms": 1500, "match": 9, "step": 5}
    assert a["least_bank"]["step"] == 5 and a["least_bank"]["bank_left_ms"] == 1500
    assert seats[0].matches == seats[1].matches == {9}


def test_a_bots_sums_do_not_depend_on_the_order_matches_are_merged_in() -> None:
    first, second = Tally(), Tally()
    first.add(Thought(0, 10, 1000, 500, 3), match_id=1)
    second.add(Thought(0, 10, 1000, 500, 7), match_id=2)  # as close to the limit, in a later match
    one, other = Tally(), Tally()
    one.merge(first)
    one.merge(second)
    other.merge(second)
    other.merge(first)
    assert one == other and one.closest is not None and (one.closest.match_id, one.closest.step) == (1, 3)
    assert Tally.from_state(one.state()) == one and one.mean_ms() == 10 and one.matches == {1, 2}


@pytest.mark.slow  # three builds of a small site
def test_the_site_sums_each_bots_think_times_and_a_rebuild_reads_only_new_logs(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    snap = snapshot.snapshot(store, "t")
    played = [m for m in snap.matches if m.status == "done"]
    # Every finished match's log gets the messages of the log above (seat 0 and 1 as there).
    for match in played:
        path = common.match_log(snap, match)[0]
        assert path is not None
        text = gzip.decompress(write_log(tmp_path / "x.jsonl.gz").read_bytes())
        lines = [line for line in text.splitlines(keepends=True) if not line.startswith(b'{"t":"event"')
                 and not line.startswith(b'{"t":"header"')]
        original = gzip.decompress(path.path.read_bytes()).splitlines(keepends=True)
        path.path.write_bytes(gzip.compress(original[0] + b"".join(lines) + b"".join(original[1:])))
    out = tmp_path / "site"
    build.build_site(store, out)
    bot = snap.bots[0]
    page = (out / urls.bot_href("t", bot.slug)).read_text(encoding="utf-8")
    expected = Tally()
    for match in played:
        if bot.id in match.bot_ids:
            log = common.match_log(snap, match)[0]
            assert log is not None
            seats = thinktime.by_seat(thinktime.thoughts(log.text, log.events), len(match.bot_ids), match.id)
            expected.merge(seats[match.bot_ids.index(bot.id)])
    assert expected.moves >= 16 and expected.max_ms() == 1500
    assert f"from the event logs of its {expected.moves} moves" in page
    assert f'<a href="../../matches/{expected.closest.match_id}.html#step=' in page  # the move nearest the limit
    kept = (out / "t" / "t" / build.THINK_FILE).read_text(encoding="utf-8")
    # A rebuild reads no log of a match whose page it keeps: one spoilt in place (its size and time kept) changes
    # nothing, as the sums kept are used.
    spoilt = common.match_log(snap, played[0])[0]
    assert spoilt is not None
    status = spoilt.path.stat()
    spoilt.path.write_bytes(b"x" * status.st_size)
    os.utime(spoilt.path, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert build.build_site(store, out).written == 0
    assert (out / urls.bot_href("t", bot.slug)).read_text(encoding="utf-8") == page
    assert (out / "t" / "t" / build.THINK_FILE).read_text(encoding="utf-8") == kept
    # Without the kept sums, the build reads the views again (arena/match/matchview.py, trusted by the log's size and
    # time as the sums are) and, without its view, the spoilt log: it has no times to give.
    (out / "t" / "t" / build.THINK_FILE).unlink()
    view_path(spoilt.path).unlink()
    build.build_site(store, out)
    assert (out / urls.bot_href("t", bot.slug)).read_text(encoding="utf-8") != page
