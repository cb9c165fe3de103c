"""The data behind each page of the results site (arena/site/: snapshot.py, urls.py, rows.py, common.py,
downloads.py, pages/), and the SVG charts (arena/site/svg.py).

The store is filled through its API with real engine matches and real logs (tests/sitestore.py), so each page's
numbers are checked against the store's own queries and against the logs' engine events.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from arena.game.results import Reason, Termination
from arena.match.matchlog import find_log
from arena.site import build, common, html, replay, snapshot, svg, urls
from arena.site.pages import bot as bot_data
from arena.site.pages import faults as faults_data
from arena.site.pages import home as home_data
from arena.site.pages import listings as listings_data
from arena.site.pages import match as match_data
from arena.site.pages import tournament as tournament_data
from arena.site.rows import Series
from arena.stats.display import shown
from arena.stats.ratings import Rating
from arena.stats.standings import head_to_head, standings, standings_with_confidence
from arena.store import Store
from tests.sitestore import CRASH, STDERR, fill_store, make_store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return make_store(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="module")
def snap(store: Store) -> snapshot.Snapshot:
    return snapshot.snapshot(store, "t")


def test_snapshot_reads_every_match_and_bot(snap: snapshot.Snapshot) -> None:
    assert [bot.name for bot in snap.bots] == ["alpha", "beta", "gamma"]
    assert [m.idx for m in snap.matches] == list(range(12))
    assert all(m.status == "done" and len(m.bot_ids) == 2 and m.result is not None for m in snap.matches)
    assert snap.slug == "t"
    with pytest.raises(KeyError):
        snapshot.snapshot(Store(snap.store_dir / "arena.db"), "nope")


def test_slugs_never_let_a_name_escape_its_directory() -> None:
    assert urls.slug("greedy", 1, "b") == "greedy"
    for name in ("../../etc", "<script>", "a/b", "", "UPPER", "x" * 60, "."):
        made = urls.slug(name, 7, "b")
        assert made.startswith("_b7") and "/" not in made and ".." not in made
    assert urls.slug("a b", 1, "b") != urls.slug("a b", 2, "b")  # the row id keeps fallbacks unique
    for name in ("a@b", "a@1/..", "@1", "a@1@2"):
        assert urls.slug(name, 7, "b").startswith("_b7")


def test_a_league_versions_page_is_at_an_address_anyone_can_guess() -> None:
    assert urls.bot_href("ladder", urls.slug("bob-late@1", 6, "b")) == "t/ladder/bots/bob-late@1/index.html"


def test_tournament_page_standings_match_the_store(store: Store, snap: snapshot.Snapshot) -> None:
    page = tournament_data.tournament_page(snap)
    table = standings(store, snap.id, Rating(25.0, 25.0 / 3))
    assert [row.bot for row in page.standings] == [line.name for line in table]
    for row, line in zip(page.standings, table):
        assert row.rank == table.index(line) + 1
        assert row.conservative == pytest.approx(line.rating.mu - 3 * line.rating.sigma)
        assert (row.matches, row.wins, row.declares_ok, row.declares_failed) == (
            line.matches, line.wins, line.declares_ok, line.declares_failed)
        assert row.mean_place == line.mean_place and row.points_per_round == line.points_per_round
        assert row.href == f"t/t/bots/{row.bot}/index.html"
    assert sum(row.matches for row in page.standings) == 24  # 12 matches of 2 seats
    low, high = page.scale
    assert all(low <= row.mu - 3 * row.sigma and row.mu + 3 * row.sigma <= high for row in page.standings)
    assert (page.matches_total, page.matches_done, page.matches_failed) == (12, 12, 0)


def test_tournament_page_head_to_head_history_settings_and_faults(store: Store, snap: snapshot.Snapshot) -> None:
    page = tournament_data.tournament_page(snap)
    h2h = head_to_head(store, snap.id)
    ids = {bot.name: bot.id for bot in snap.bots}
    names = [name for name, _ in page.head_to_head.bots]
    assert names == [row.bot for row in page.standings]
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            cell = page.head_to_head.cells[i][j]
            if i == j:
                assert cell is None
                continue
            assert cell is not None and (cell.above, cell.shared) == h2h[(ids[a], ids[b])]
            other = page.head_to_head.cells[j][i]
            assert other is not None and (other.above, other.below, other.shared) == (cell.below, cell.above,
                                                                                      cell.shared)
            # Wins, ties and losses add up; the score counts a tie as a half, so the two sides sum to one.
            assert cell.above + cell.ties + cell.below == cell.shared and cell.ties >= 0
            assert cell.score + other.score == pytest.approx(1.0)
    # The history's last point is the final conservative rating.
    for series, row in zip(page.history, page.standings):
        assert series.name == row.bot
        assert series.points[-1][1] == pytest.approx(row.conservative)
        assert [x for x, _ in series.points] == sorted(x for x, _ in series.points)
    assert page.rules["threshold"] == 30 and page.limits["move_ms"] == 1000 and page.limits["memory_mb"] == 512
    assert page.settings["players"] == 2 and "rules" not in page.settings
    # Matches 4 and 9 (every fifth) had a crash in seat 1.
    assert page.fault_totals == {"crash": 2} and page.fault_count == 2
    assert [f.match_idx for f in page.faults] == [9, 4]
    assert all(f.player.stderr_tail == STDERR and f.match_href.startswith("t/t/matches/") for f in page.faults)
    assert all(f.fault.reason is Reason.CRASH_EXIT and f.fault.exit_status == 1 for f in page.faults)
    assert page.crumbs == (urls.Crumb("Home", "index.html"), urls.Crumb("t", None))


def test_home_page_lists_every_tournament_newest_first(tmp_path: Path) -> None:
    store = make_store(tmp_path, limit=4)
    fill_store(store, name="second", bots=("x", "y"), repeats=1, logs=False)
    page = home_data.home_page(store)
    assert [t.name for t in page.tournaments] == ["second", "t"]
    second, first = page.tournaments
    assert (first.bots, first.matches_total, first.matches_done) == (3, 4, 4)
    assert second.leader == snapshot.snapshot(store, "second").standings[0].name
    assert second.href == "t/second/index.html" and second.leader_href.startswith("t/second/bots/")
    assert first.finished_at is not None
    only = home_data.home_page(store, linked=["t"])
    assert [(t.name, t.href is None) for t in only.tournaments] == [("second", True), ("t", False)]


def test_match_lists_paginate(snap: snapshot.Snapshot) -> None:
    pages = listings_data.match_list_pages(snap, per_page=5)
    # Pages break between deals: the two rotations of a deal are never split, so a page holds 4 of at most 5.
    assert [len(p.rows) for p in pages] == [4, 4, 4]
    assert all(not {snap.groups[r.idx] for r in a.rows} & {snap.groups[r.idx] for r in b.rows}
               for a, b in pairwise(pages))
    assert [p.path for p in pages] == ["t/t/matches/index.html", "t/t/matches/page-2.html",
                                       "t/t/matches/page-3.html"]
    first, middle, last = pages
    assert first.pager.prev is None and first.pager.next == middle.path
    assert middle.pager.prev == first.path and middle.pager.next == last.path and last.pager.next is None
    assert [r.idx for p in pages for r in p.rows] == list(range(12))
    row = first.rows[0]
    assert [p.place for p in row.players] == sorted(p.place for p in row.players)
    assert row.href == f"t/t/matches/{row.id}.html" == "t/t/matches/1.html"  # named by the number it shows
    hrefs = [f"p{n}" for n in range(1, 21)]
    # A page far from the end names neither the last page nor the count: it stays the same file as pages are added.
    middle_pager = urls.pager(10, hrefs, 2)
    assert [link and link[0] for link in middle_pager.links] == [1, None, 8, 9, 10, 11, 12, None]
    assert middle_pager == urls.pager(10, hrefs + ["p21", "p22"], 2)
    assert [link and link[0] for link in urls.pager(1, hrefs, 2).links] == [1, 2, 3, None, 20]
    assert [link and link[0] for link in urls.pager(19, hrefs, 2).links] == [1, None, 17, 18, 19, 20]
    assert (first.total, middle.total, last.total) == (12, None, None)


def test_bot_page(store: Store, snap: snapshot.Snapshot) -> None:
    beta = next(bot for bot in snap.bots if bot.name == "beta")
    page, more = bot_data.bot_pages(snap, beta.id, per_page=3)
    played = [m for m in snap.matches if beta.id in m.bot_ids]
    assert len(played) == 8  # two repeats of 2 seat rotations against each of 2 opponents
    # A deal's two rotations stay on one page: 2 a page of at most 3.
    assert [len(p.rows) for p in (page.matches, *more)] == [2, 2, 2, 2]
    assert more[-1].path == "t/t/bots/beta/matches-4.html" and more[0].for_bot == "beta"
    assert all(r.place_of is not None for r in page.matches.rows)
    assert page.standing.bot == "beta" and page.files_hash == f"{1:064x}"
    assert page.manifest["description"] == "the beta bot"
    # Per seat: every match counted once, in the seat it sat in.
    assert sum(s.matches for s in page.seats) == 8
    for seat in page.seats:
        places = [p.place for m in played for s, b, p in snapshot.seated(m) if b == beta.id and s == seat.seat and p]
        assert seat.matches == len(places) and seat.mean_place == pytest.approx(sum(places) / len(places))
    h2h = head_to_head(store, snap.id)
    for opponent in page.opponents:
        other = next(bot.id for bot in snap.bots if bot.name == opponent.bot)
        assert (opponent.above, opponent.shared) == h2h[(beta.id, other)]
        assert opponent.below == h2h[(other, beta.id)][0]
    # The band is mu +- 3 sigma around the line.
    series = page.history[0]
    assert len(series.points) == len(series.band) == 8
    for (x, mu), (bx, low, high) in zip(series.points, series.band):
        assert x == bx and low < mu < high


def test_bot_page_faults_carry_details_and_stderr(snap: snapshot.Snapshot) -> None:
    faulty = {b for m in snap.matches for _, b, p in snapshot.seated(m) if p and p.fault}
    for bot in snap.bots:
        page, _ = bot_data.bot_pages(snap, bot.id)
        assert (page.fault_count > 0) == (bot.id in faulty)
        for fault in page.faults:
            assert fault.player.name == bot.name and fault.fault == CRASH and fault.fault.kind.value == "crash"
            assert fault.fault.detail == "exited with status 1" and fault.player.stderr_tail == STDERR


def test_match_page_from_its_log(snap: snapshot.Snapshot) -> None:
    match = snap.matches[4]
    log, _ = common.match_log(snap, match)
    assert log is not None and log.faults == {1: CRASH} and log.result is not None
    page = match_data.match_page(snap, 4, log)
    assert page.log_found and page.replay_data is not None and page.data_href == f"t/t/matches/{match.id}.js"
    data_file = json.loads(page.replay_data)
    assert data_file["names"] == [p.bot for p in page.players]
    assert set(data_file) == {"names", "events", "faults", "think", "bank", "move"}
    assert data_file["think"] == ""  # these logs hold no messages: no turn was timed
    # The forfeit's reason and round, for the replay's last step; and the forfeit's step, for the page's fault box.
    assert data_file["faults"] == {"1": [CRASH.reason.value, CRASH.round]}
    forfeit = next(i for i, event in enumerate(log.events) if event["type"] == "forfeit")
    assert page.fault_steps == {1: forfeit + 1} and page.forfeits
    # One compact token per event that is not a turn, none of them the "?" of an event that would not fit; a run of
    # turns is one token of their seats (their cards are the page's grid cells, in order), and spelt out turn by
    # turn in a match whose grid could not be read back.
    tokens = data_file["events"].split(" ")
    kinds = {"play": "p", "declare": "c", "reshuffle": "r", "forfeit": "f", "round_start": "s", "round_end": "e",
             "match_end": "x", "match_start": "m"}
    seats = "".join(str(e["seat"]) for e in log.events if e["type"] in ("play", "declare"))
    assert [token[0] for token in tokens if token[0] != "t"] == [kinds[e["type"]] for e in log.events
                                                                 if e["type"] not in ("play", "declare")]
    assert "".join(token[1:] for token in tokens if token[0] == "t") == seats
    full = replay.compact_events(log.events).split(" ")
    assert [token[0] for token in full] == [kinds[e["type"]] for e in log.events]
    play = next(i for i, e in enumerate(log.events) if e["type"] == "play")
    event = log.events[play]
    assert full[play] == (f"p{event['seat']}:{''.join(event['discard'])}:"
                          + (f"d{event.get('drew') or ''}" if event["take"] == "deck" else f"f{event['take']}"))
    assert replay.grid_readable(log.events, data_file["names"])
    assert not replay.grid_readable(log.events, ["a\nb", *data_file["names"][1:]])
    broken = [dict(e, discard=["XX"]) if i == play else e for i, e in enumerate(log.events)]
    assert not replay.grid_readable(broken, data_file["names"])
    # The page's one walk over the events (replay.match_moves) finds out the same as grid_readable, and spells every
    # turn out when the grid cannot be read back.
    assert data_file["events"] == replay.compact_events(log.events, grid=True, names=data_file["names"])
    assert replay.match_moves(broken, data_file["names"], str)[1] == replay.compact_events(broken, names=data_file["names"])
    odd = ["a\nb", *data_file["names"][1:]]
    spelt = replay.match_moves(log.events, odd, str)[1]
    assert spelt == replay.compact_events(log.events, names=odd) and len(spelt.split(" ")) == len(full)
    assert not [token for token in spelt.split(" ") if token[0] == "s" and ":=" in token]
    # The deals' hands are the page's grid lines (replay.read_deal), but for a name a grid line cannot hold.
    deals = [e for e in log.events if e["type"] == "round_start"]
    assert [token.split(":")[2] for token in tokens if token[0] == "s"] == [
        "=" + "".join(str(seat) for seat, hand in enumerate(e["hands"]) if hand) for e in deals]
    assert [replay.read_deal(replay.dealt_line(e, data_file["names"]), token.split(":")[2][1:], len(odd))
            for e, token in zip(deals, (t for t in tokens if t[0] == "s"))] == [e["hands"] for e in deals]
    ends = [e for e in log.events if e["type"] == "round_end"]
    # replay.js makes "Scores per round" from the round ends of the data file: each spells out its round, how it
    # ended, its declarer, points, scores and the seats out; its hands are "=", those the deal and the plays left.
    def end(e: dict[str, Any], hands: str) -> str:
        return (f"e{e['round']}:{ {'declared': 'd', 'failed_declaration': 'f'}.get(e['reason'], 't')}:"
                f"{'' if e['declarer'] is None else e['declarer']}:{hands}:"
                f"{','.join(map(str, e['points']))}:{','.join(map(str, e['scores']))}:"
                f"{','.join(map(str, e['eliminated']))}")
    assert [token for token in tokens if token[0] == "e"] == [end(e, "=") for e in ends]
    # A round end whose hands are not what the plays left spells them out.
    odd_end = dict(ends[0], hands=[[*ends[0]["hands"][0], "AS"], *ends[0]["hands"][1:]])
    assert end(odd_end, "|".join("".join(h) for h in odd_end["hands"])) in replay.compact_events(
        [odd_end if e is ends[0] else e for e in log.events], grid=True, names=data_file["names"]).split(" ")
    # the stored result agrees with the log
    assert [p.result.score for p in page.players if p.result] == log.events[-1]["scores"]
    assert [p.result.place for p in page.standings if p.result] == sorted(p.result.place for p in page.players
                                                                          if p.result)
    # The move list: the narrator's line of every event that is not a turn, each once, in order, with its index
    # (replay.js shows line i at step i + 1); a grid per round holds the turns, a cell per turn.
    said = [index for block in page.moves for index, _ in block.lines]
    assert said == [i for i, e in enumerate(log.events) if e["type"] not in replay.TURNS]
    texts = dict(line for block in page.moves for line in block.lines)
    # Without JavaScript there is no score table: a round's end in the move list gives every player still in its
    # running score and points, a deal who starts and the floor.
    for index, e in enumerate(log.events):
        if e["type"] == "round_end":
            assert texts[index].startswith(f"Round {e['round']} ends, ")
            for seat, hand in enumerate(e["hands"]):
                scored = f"{data_file['names'][seat]} {e['scores'][seat]} (+{e['points'][seat]})"
                assert (scored in texts[index]) == bool(hand)
        elif e["type"] == "round_start":
            assert texts[index] == (f"Round {e['round']}: {data_file['names'][e['starter']]} starts, floor "
                                    f"{' '.join(map(replay.card_text, e['floor']))}.")
    forfeit = next(i for i, e in enumerate(log.events) if e["type"] == "forfeit")
    assert texts[forfeit].endswith(" (seat 1) forfeits (crash.exit: exited with status 1).")
    assert texts[0].startswith("The match starts") and texts[len(log.events) - 1].startswith("Match over")
    rounds = [block for block in page.moves if block.grid]
    assert len(rounds) == sum(e["type"] == "round_start" for e in log.events)
    cells = sum(line.count(" +") + line.count(" ^") + line.count("★")
                for block in rounds for line in block.grid.splitlines()[2:])
    assert cells == sum(e["type"] in ("play", "declare") for e in log.events)
    assert page.prev_href == "t/t/matches/4.html" and page.next_href == "t/t/matches/6.html"  # ids: match 5's
    # One number per match: the store id, as `arena show` takes it, in the crumbs and the title.
    assert page.crumbs[-1] == urls.Crumb(f"Match #{match.id}", None) and match.id != match.idx
    first = match_data.match_page(snap, 0, None)
    assert first.prev_href is None and not first.log_found and first.replay_data is None and first.moves == []


def test_match_log_reads_through_matchlog_and_refuses_damage(snap: snapshot.Snapshot, tmp_path: Path) -> None:
    log, _ = common.match_log(snap, snap.matches[0])
    assert log is not None and log.header["t"] == "header" and log.messages == 4  # hello and ready, both seats
    assert log.events[0]["type"] == "match_start" and log.events[-1]["type"] == "match_end"
    path = find_log(snap.matches[0].log_path, snap.store_dir, snap.name, 0)
    assert path is not None
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(path.read_bytes())[:40])
    moved = dataclasses.replace(snap, store_dir=tmp_path)
    for damaged in (broken, tmp_path / "missing.jsonl.gz"):
        stored = dataclasses.replace(snap.matches[0], idx=99, result=dataclasses.replace(
            snap.matches[0].result, log_path=damaged))
        assert common.match_log(moved, stored)[0] is None


def test_find_log_falls_back_beside_the_store(tmp_path: Path) -> None:
    store = make_store(tmp_path, limit=2)
    snap = snapshot.snapshot(store, "t")
    # A store moved with its logs: the stored absolute path no longer exists, the runner's layout does.
    assert find_log("/nowhere/000000.jsonl.gz", snap.store_dir, "t", 0) == tmp_path / "logs" / "t" / "000000.jsonl.gz"
    assert find_log("logs/t/000001.jsonl.gz", snap.store_dir, "t", 7) == tmp_path / "logs" / "t" / "000001.jsonl.gz"
    assert find_log(None, snap.store_dir, "t", 99) is None


def test_pending_and_failed_matches_show_without_places(tmp_path: Path) -> None:
    store = make_store(tmp_path, limit=3)
    tid = store.tournament("t")["id"]
    store.record_failure(tid, 2, "attempt 3: sandbox broke", 3)
    snap = snapshot.snapshot(store, "t")
    page = tournament_data.tournament_page(snap)
    assert (page.matches_done, page.matches_failed) == (2, 1)
    failed = match_data.match_page(snap, 2, None)
    assert failed.status == "failed" and failed.error == "attempt 3: sandbox broke"
    assert listings_data.match_list_pages(snap)[0].rows[2].status == "failed"


def test_a_newer_arenas_termination_shows_as_other(tmp_path: Path) -> None:
    store = make_store(tmp_path, limit=2)
    tid = store.tournament("t")["id"]
    store.db.execute("UPDATE matches SET termination = 'agreed_draw' WHERE tournament_id = ? AND idx = 1", (tid,))
    snap = snapshot.snapshot(store, "t")
    rows = listings_data.match_list_pages(snap)[0].rows
    assert [row.termination for row in rows] == [snap.matches[0].result.termination, Termination.OTHER]
    assert rows[0].termination is not Termination.OTHER
    assert html.listing_row(rows[1], False, "t/t/matches/index.html").endswith('<td class="opt">other')
    page = match_data.match_page(snap, 1, common.match_log(snap, snap.matches[1])[0])
    assert page.termination is Termination.OTHER and " · ended: other" in html.render_match(page, snap.slug)


def test_downsample_keeps_the_ends() -> None:
    points = list(range(1000))
    kept = common.downsample(points, 50)
    assert len(kept) == 50 and kept[0] == 0 and kept[-1] == 999
    assert common.downsample(points[:10], 50) == tuple(points[:10])


def test_line_chart_escapes_names_and_handles_no_data() -> None:
    chart = svg.line_chart([Series("<script>alert(1)</script>", ((0, 1.0), (5, 3.0)))], "a <b> chart", "y")
    assert "<script>" not in chart and "&lt;script&gt;" in chart and "a &lt;b&gt; chart" in chart
    assert chart.count("<polyline") == 1 and chart.startswith("<svg")
    empty = svg.line_chart([Series("x", ())], "nothing", "y")
    assert "no rated matches yet" in empty and "<polyline" not in empty
    banded = svg.line_chart([Series("x", ((0, 5.0),), ((0, 1.0, 9.0),))], "band", "y")
    assert "<polygon" in banded


def test_rating_bar_stays_on_its_scale() -> None:
    bar = svg.rating_bar(25.0, 100.0, (0.0, 50.0), width=100)
    import re
    xs = [float(x) for x in re.findall(r'(?:x|cx|x1|x2)="([-0-9.]+)"', bar)]
    assert xs and all(0 <= x <= 100 for x in xs)
    assert 'aria-label="mu 25.00' in bar


def test_places_decided_by_elimination_name_the_round(snap: snapshot.Snapshot) -> None:
    """A seat that went over the threshold is marked with the round it went out in, the same in the matches list
    and on the match page, and that round is the one whose round_end event lists it as eliminated."""
    marked = 0
    for position, match in enumerate(snap.matches):
        log, _ = common.match_log(snap, match)
        assert log is not None
        out_in = {seat: event["round"] for event in log.events if event["type"] == "round_end"
                  for seat in event["eliminated"]}
        page = match_data.match_page(snap, position, log)
        assert {p.seat: p.out_round for p in page.players if p.out_round} == out_in
        row = common.match_list_row(snap, match)
        assert {p.seat: p.out_round for p in row.players if p.out_round} == out_in
        marked += len(out_in)
    assert marked > 0


def test_standings_rows_show_ranks_as_the_cli_does_and_count_shared_wins(snap: snapshot.Snapshot) -> None:
    rows = snap.standing_rows
    order = [line.bot_id for line in snap.standings]
    view = shown(snap.sure, order).by_bot()
    assert [(r.shared_rank, r.rank95, r.p_text) for r in rows] == [
        (view[bot].rank, view[bot].interval, view[bot].p_text) for bot in order]
    assert [r.p_above_next for r in rows] == [view[bot].p_above_next for bot in order]
    assert rows[-1].p_above_next is None
    for row, line in zip(rows, snap.standings):
        assert row.win_pct == pytest.approx(100 * line.wins / line.matches)
        firsts = sum(1 for m in snap.matches if m.result is not None
                     for bot, seat in zip(m.bot_ids, m.result.players)
                     if bot == line.bot_id and seat.place == 1
                     and sum(s.place == 1 for s in m.result.players) > 1)
        assert row.wins_shared == firsts <= row.wins


def test_bot_pages_show_no_absolute_paths(snap: snapshot.Snapshot) -> None:
    for bot in snap.bots:
        assert bot.manifest["directory"].startswith("/")
        page, _ = bot_data.bot_pages(snap, bot.id)
        assert page.manifest["directory"] == bot.manifest["directory"].rsplit("/", 1)[-1]


def test_rating_chart_labels_line_ends_holds_steps_and_clamps_a_far_line() -> None:
    near = [Series(name, ((0, 20.0 + i), (4, 22.0 + i), (9, 21.0 + i))) for i, name in enumerate("abc")]
    far = Series("far", ((0, -60.0), (9, -55.0)))
    chart = str(svg.line_chart(near + [far], "ratings", "y", steps=True, end_labels=True))
    # Each line is named at its end with its last value; the far one says it is off the scale.
    for i, name in enumerate("abc"):
        assert f'tabindex="0">{name} {21 + i}<title>' in chart
    assert "far -55 (off scale)" in chart and '<g class="s3 far">' in chart
    # The scale is the near lines' (about 20 to 24), not stretched down to -60.
    ticks = [float(t) for t in re.findall(r'text-anchor="end">(-?[\d.]+)</text>', chart)]
    assert min(ticks) >= 15 and max(ticks) <= 30, ticks
    # Steps: between two points a line first runs flat (the same y), then moves.
    line = re.search(r'<g class="s0"><title>a</title><polyline class="line" points="([^"]+)"', chart)
    assert line is not None
    points = [tuple(map(float, p.split(","))) for p in line.group(1).split()]
    assert len(points) == 5 and points[1][1] == points[0][1] and points[1][0] == points[2][0]
    # Every point has its value as a tooltip.
    assert chart.count("<circle class=\"pt\"") == 3 * 3 + 2 and "a: 22.00 after match 4" in chart


def test_match_lists_are_grouped_by_deal_with_a_summary(snap: snapshot.Snapshot) -> None:
    pages = listings_data.match_list_pages(snap, per_page=4)
    for page in pages:
        assert [row for section in page.sections for row in section.rows] == page.rows
        for section in page.sections:
            assert section.group is not None
            assert {snap.groups[row.idx] for row in section.rows} == {section.group}
            matches = [m for m in snap.matches if snap.groups[m.idx] == section.group]
            assert section.size == len(matches)
            # Duplicate deals: the rotations of a group share one deal, and the heading names its seed.
            assert section.seed == matches[0].seed and {m.seed for m in matches} == {section.seed}
            for line in section.summary:
                places = [p.place for m in matches for p in m.result.players if m.result is not None
                          and snap.bot_link(m.bot_ids[p.seat])[0] == line.bot]
                assert line.matches == len(places) and line.mean_place == pytest.approx(sum(places) / len(places))
            assert [line.mean_place for line in section.summary] == sorted(line.mean_place for line in section.summary)
    # A bot's own list stays flat.
    page, _ = bot_data.bot_pages(snap, snap.bots[0].id)
    assert page.matches.sections == []


def _listings(snap: snapshot.Snapshot, per_page: int) -> dict[str, listings_data.Listing]:
    found = {listing.path: listing for listing in listings_data.match_listings(snap, per_page)}
    for bot in snap.bots:
        found.update((listing.path, listing) for listing in bot_data.bot_listings(snap, bot.id, per_page))
    return found


def test_a_listings_inputs_stand_for_its_page(tmp_path: Path) -> None:
    # A rebuild makes a listing's page only when its inputs (stamps, pager, deals) changed: so wherever two
    # snapshots give a page the same inputs, the page must be the same. A failure recorded for the second match of
    # a deal (whose deal summary it changes: pages never split a deal, so on one page) and two matches dropped at
    # the end change some pages only.
    store = make_store(tmp_path, repeats=3)
    before = snapshot.snapshot(store, "t")
    marks = before.stamps
    first = next(p for p in range(6, len(marks) - 3, 3) if marks[p].group == marks[p - 1].group)  # not page 1
    store.record_failure(before.id, marks[first].idx, "the runner lost the bot", 2)
    store.drop_matches(before.id, [m.idx for m in marks[-2:]])
    after = snapshot.snapshot(store, "t")
    old, new = _listings(before, 3), _listings(after, 3)
    same = [path for path in old.keys() & new.keys() if old[path].inputs == new[path].inputs]
    changed = [path for path in old.keys() & new.keys() if old[path].inputs != new[path].inputs]
    assert same and changed
    for path in same:
        assert old[path].make() == new[path].make(), path
    page = next(n for n, span in enumerate(listings_data.listing_spans(before, 3), 1) if first in span)
    assert listings_data.listing_spans(before, 3)[page - 1][0] == first - 1  # the deal starts its page
    assert urls.matches_href("t", page) in changed and urls.matches_href("t", page - 1) in same


def test_matches_are_read_as_pages_ask_for_them(tmp_path: Path) -> None:
    store = make_store(tmp_path, repeats=3)
    snap = snapshot.snapshot(store, "t")
    assert snap.matches._loaded == {}  # the snapshot reads stamps, not results
    faults = common.fault_rows(snap, limit=2)
    assert [row.match_idx for row in faults] == sorted((row.match_idx for row in faults), reverse=True)
    assert [row.match_idx for row in faults] == [snap.stamps[p].idx for p, _ in reversed(snap.faulted)][:2]
    assert len(faults) == 2 and len(snap.matches._loaded) == 2  # only the latest faults' matches
    # A match dropped from the store after the snapshot: its page is not made, and nothing else breaks.
    gone = snap.stamps[-1]
    store.drop_matches(snap.id, [gone.idx])
    assert build.match_files(snap, len(snap.stamps) - 1) == []
    with pytest.raises(snapshot.MatchGone):
        snap.matches[len(snap.stamps) - 1]
    assert snap.matches[0].idx == snap.stamps[0].idx
    # The pages listing it leave it out (a test that stops itself drops matches while a build may run).
    last = listings_data.match_listings(snap)[-1].make()
    assert last.rows and gone.idx not in {row.idx for row in last.rows}
    for bot in snap.bots:
        for listing in bot_data.bot_listings(snap, bot.id):
            assert gone.idx not in {row.idx for row in listing.make().rows}


def test_logs_read_the_same_with_orjson_or_json(snap: snapshot.Snapshot, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # orjson is a dependency; an install without its wheel falls back to json: every log must read the same, and
    # a garbled event line must be a LogError naming the file either way.
    import orjson

    from arena.match import matchlog
    paths = [path for m in snap.matches if (path := find_log(m.log_path, snap.store_dir, snap.name, m.idx))]
    assert matchlog.parse_json is orjson.loads and len(paths) == len(snap.matches)
    garbled = tmp_path / "garbled.jsonl.gz"
    lines = gzip.decompress(paths[0].read_bytes()).splitlines()
    event = next(i for i, line in enumerate(lines) if line.startswith(matchlog.EVENT_PREFIX))
    lines[event] = lines[event][:-3] + b"}"
    garbled.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    read = {}
    for parser in (orjson.loads, json.loads):
        monkeypatch.setattr(matchlog, "parse_json", parser)
        read[parser] = [(log.header, log.events, log.faults, log.result, log.messages)
                        for log in map(matchlog.load, paths)]
        with pytest.raises(matchlog.LogError, match="garbled.jsonl.gz: an event line is not JSON"):
            matchlog.load(garbled)
    assert read[orjson.loads] == read[json.loads]


def test_a_bots_faults_page_holds_every_fault_grouped_with_its_replay_step(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    fill_store(store, name="many", bots=("a", "b", "c"), players=3, repeats=4)
    snap = snapshot.snapshot(store, "many")
    faulted = {bot for _, bot in snap.faulted}
    assert faulted, "every fifth match of the test store has a crash"
    for bot in snap.bots:
        page = faults_data.faults_page(snap, bot.id)
        if bot.id not in faulted:
            first = bot_data.bot_listings(snap, bot.id)[0].make()
            assert page is None and bot_data.bot_page(snap, bot.id, first).all_faults is None
            continue
        assert page is not None and page.path == urls.faults_href(snap.slug, bot.slug)
        # Every fault of the bot, from the store: not only the latest few the bot's own page shows.
        mine = [(m.id, p) for m in snap.matches for _, b, p in snapshot.seated(m) if b == bot.id and p and p.fault]
        assert page.count == len(mine) == sum(len(g.faults) for g in page.groups)
        assert len(common.fault_rows(snap, bot.id, limit=1)) == 1 < page.count or page.count == 1
        # The summary: counts per reason code, the first and the latest match, a histogram by round.
        assert page.reasons == (("crash", CRASH.reason.value, len(mine)),)
        assert (page.first.match_id, page.latest.match_id) == (min(i for i, _ in mine), max(i for i, _ in mine))
        assert sum(bar.count for bar in page.by_round) == len(mine)
        assert [(bar.low, bar.count) for bar in page.by_round if bar.count] == [(CRASH.round, len(mine))]
        # Identical faults (reason and detail) are one group, latest first ("x5, latest #N").
        assert len(page.groups) == 1 and page.groups[0].latest.match_id == page.latest.match_id
        ids = [row.match_id for row in page.groups[0].faults]
        assert ids == sorted(ids, reverse=True)
        # Each is linked to the replay step of its forfeit: that step's event is the bot's forfeit.
        for row in page.groups[0].faults:
            match = next(m for m in snap.matches if m.id == row.match_id)
            log, _ = common.match_log(snap, match)
            assert log is not None and row.step is not None
            assert log.events[row.step - 1] == {"type": "forfeit", "seat": row.player.seat, "reason": "crash"}
            assert row.step_href == f"{urls.match_href(snap.slug, row.match_id)}#step={row.step}"
        bot_page = bot_data.bot_page(snap, bot.id, bot_data.bot_listings(snap, bot.id)[0].make())
        assert bot_page.all_faults == page.path
    tournament = tournament_data.tournament_page(snap)
    names = {snap.bot_by_id[bot].name for bot in faulted}
    assert [name for name, _, _ in tournament.fault_pages] == [row.bot for row in tournament.standings
                                                               if row.bot in names]
    assert sum(count for _, _, count in tournament.fault_pages) == len(snap.faulted)


def test_standings_give_the_95_percent_rank_interval(snap: snapshot.Snapshot) -> None:
    for row in snap.standing_rows:
        bot = next(b for b in snap.bots if b.name == row.bot)
        line = snap.sure.line(bot.id)
        assert row.rank95 == (line.rank_low, line.rank_high)
def _decoded(index: dict[str, object]) -> list[dict[str, object]]:
    """The index's matches as search.js reads them: steps summed, indices looked up."""
    names, reasons = index["bots"], index["reasons"]
    assert isinstance(names, list) and isinstance(reasons, list) and isinstance(index["m"], list)
    found, match_id, group = [], 0, 0
    for row in index["m"]:
        match_id, group = match_id + row[0], group + row[1]
        done = isinstance(row[3], list)
        found.append({"id": match_id, "group": group, "bots": [names[b] for b in row[2]],
                      "status": "done" if done else row[3], "places": row[3] if done else None,
                      "scores": row[4] if done else None,
                      "faults": [reasons[f - 1] if f else None for f in row[5]] if done and row[5]
                      else [None] * len(row[2]) if done else None,
                      "rounds": row[6] if done else None, "turns": row[7] if done else None,
                      "ending": index["endings"][row[8]] if done else None,  # type: ignore[index]
                      "outs": (row[9] if len(row) > 9 else [0] * len(row[2])) if done else None})
    return found


def test_match_index_holds_every_match_of_the_store(store: Store, snap: snapshot.Snapshot) -> None:
    index = listings_data.match_index(snap)
    assert index["v"] == listings_data.INDEX_FORMAT and index["bots"] == [bot.name for bot in snap.bots]
    assert index["slugs"] == [bot.slug for bot in snap.bots]
    decoded = _decoded(index)
    stored = store.matches(snap.id)
    assert len(decoded) == len(stored) == 12
    crashes = outs = 0
    for got, match in zip(decoded, stored):
        assert match.result is not None
        assert (got["id"], got["group"], got["bots"], got["status"]) == (
            match.id, snap.groups[match.idx], list(match.names), "done")
        assert got["places"] == [p.place for p in match.result.players]
        assert got["scores"] == [p.score for p in match.result.players]
        assert got["faults"] == [None if p.fault is None else p.fault.reason.value for p in match.result.players]
        # The columns of the list without a filter (issue 43): rounds, turns, how it ended, who went out when.
        assert (got["rounds"], got["turns"], got["ending"]) == (
            match.result.rounds, match.result.turns, match.result.termination.value)
        assert got["outs"] == [snapshot.out_round(match, p) or 0 for p in match.result.players]
        crashes += sum(p.fault is not None for p in match.result.players)
        outs += sum(map(bool, got["outs"]))  # type: ignore[arg-type]
    assert outs > 0 and crashes == 2 and index["reasons"] == [CRASH.reason.value]  # every fifth match, one seat
    # Tens of bytes a match: names once, matches as small arrays (the bench measures big tournaments).
    size = len(html.match_index_js(snap).encode())
    assert size < 200 + 40 * len(stored), size


def test_match_index_keeps_unfinished_matches_without_results(tmp_path: Path) -> None:
    store = make_store(tmp_path, limit=3)
    tid = store.tournament("t")["id"]
    store.record_failure(tid, 2, "attempt 3: sandbox broke", 3)
    decoded = _decoded(listings_data.match_index(snapshot.snapshot(store, "t")))
    assert [m["status"] for m in decoded] == ["done", "done", "failed"]
    assert decoded[2]["places"] is None and decoded[2]["bots"] and decoded[2]["faults"] is None


def test_listing_pages_break_between_deals_and_name_the_index(snap: snapshot.Snapshot) -> None:
    for per_page in (3, 4, 5, 50):
        spans = urls.page_spans([snap.stamps[p].group for p in range(len(snap.stamps))], per_page)
        assert [p for span in spans for p in span] == list(range(len(snap.stamps)))
        assert all(0 < len(span) <= per_page for span in spans)
        for a, b in pairwise(spans):
            assert snap.stamps[a[-1]].group != snap.stamps[b[0]].group
    # A match page's crumb names the page of the list that shows it.
    for position in range(len(snap.stamps)):
        page = listings_data.listing_page(snap, position)
        assert position in listings_data.listing_spans(snap)[page - 1]
    pages = listings_data.match_list_pages(snap)
    assert {page.index_href for page in pages} == {"t/t/matches/index.js"}
    bot_page, _ = bot_data.bot_pages(snap, snap.bots[0].id)
    assert bot_page.matches.index_href == "t/t/matches/index.js" and bot_page.matches.bots == pages[0].bots
    other = bot_page.opponents[0]
    assert other.matches_href == f"t/t/matches/index.html?bot={snap.bots[0].name}&vs={other.bot}"


def test_a_deal_refers_to_its_grid_line_only_when_that_line_gives_its_hands_back() -> None:
    """A deal's token leaves its hands to the page's deal line (replay.read_deal, as replay.js reads it) without
    checking each line when every name is one word (a card code and the empty name included); other names are
    checked, and a name whose last word is a card code spells the hands out."""
    rng = random.Random(3)
    cards = sorted(replay.CARD_SET)
    for names in (["AS", "", "bot-7"], ["5C", "x"], ["a b", "c 5C", "d · e"], ["plain", "TH 2C"]):
        for _ in range(50):
            hands = [rng.sample(cards, rng.randint(0, 5)) for _ in names]
            deal = {"type": "round_start", "round": 1, "starter": 0, "hands": hands, "floor": ["2D"],
                    "scores": [0] * len(names)}
            field = replay.compact_events([deal], names=names).split(":")[2]
            seats = "".join(str(seat) for seat, hand in enumerate(hands) if hand)
            exact = replay.read_deal(replay.dealt_line(deal, names), seats, len(names)) == hands
            assert field == ("=" + seats if exact else "|".join("".join(hand) for hand in hands))
            if names[-1] == "TH 2C" and hands[-1]:
                assert not exact


def test_a_bots_listing_made_from_the_rows_its_matches_pages_gave_is_the_one_made_by_reading_them(
        tmp_path: Path) -> None:
    store = make_store(tmp_path, repeats=3)
    read = snapshot.snapshot(store, "t")
    given = snapshot.snapshot(store, "t")
    for position in range(len(given.stamps)):  # what a build's workers send back with the match pages
        row = html.bot_row_html(given, position)
        assert row is not None
        given.cache.row_html[position] = row
    given.matches.forget()
    for bot in read.bots:
        for by_reading, by_rows in zip(bot_data.bot_listings(read, bot.id, 5), bot_data.bot_listings(given, bot.id, 5),
                                       strict=True):
            made = by_rows.make()
            assert all(row.html is not None for row in made.rows)
            assert html.render_match_list(made) == html.render_match_list(by_reading.make())
    assert given.matches._loaded == {}  # none of the matches was read again
    # The row is the same on each of its bots' pages but for the place: its own bot is linked as the others are.
    first = read.stamps[0]
    rows = {bot: html.listing_row(common.match_list_row(read, read.matches[0], bot), True,
                                    urls.bot_href(read.slug, read.bot_by_id[bot].slug, 2))
            for bot in first.bot_ids}
    assert len({re.sub(r'<td class="num place-\d+">\d+', "", row) for row in rows.values()}) == 1
    assert all(f'href="../{read.bot_by_id[bot].slug}/index.html"' in row for bot, row in rows.items())
    # A match dropped since its row was made is read, and left out, like any other.
    store.drop_matches(given.id, [given.stamps[-1].idx])
    del given.cache.row_html[len(given.stamps) - 1]
    assert given.stamps[-1].idx not in {row.idx for bot in given.bots
                                        for listing in bot_data.bot_listings(given, bot.id, 5)
                                        for row in listing.make().rows}


def test_a_live_tournament_shows_not_yet_rated_instead_of_the_prior(tmp_path: Path) -> None:
    # Before its end a tournament has no stored ratings: the prior (mu 25, sigma 8.33, so 0.00 +- 25.0) is not a
    # rating and must not read as one.
    store = Store(tmp_path / "arena.db")
    fill_store(store, finish=False)
    snap = snapshot.snapshot(store, "t")
    assert snap.standings and not any(line.rated for line in snap.standings)
    [(_, _, render)] = [page for page in build.tournament_pages(snap, bot_pages=False)
                         if page[0].endswith("t/index.html")]
    text = render()
    assert text.count("not yet rated") == len(snap.standings) and "± 25.0" not in text
    lines = standings_with_confidence(snap.standings, snap.sure)
    assert {(line["rated"], line["conservative"], line["mu"]) for line in lines} == {(False, None, None)}
