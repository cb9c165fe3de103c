"""Confidence in the standings: rank intervals and P(above) from resampling whole duplicate groups."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from arena.cli.main import main
from arena.run.loop import Progress
from arena.stats import confidence as confidence_module
from arena.stats.confidence import BotConfidence, Confidence, GroupPlace, PAbove, SeatColumns, confidence
from arena.stats.display import MIN_GROUPS, shown
from arena.stats.standings import rating_history, seat_columns, seat_results, standings_and_confidence
from tests.sitestore import make_store


def ladder_results(groups: int, gap: float, copies: int = 1, seed: int = 1) -> list[GroupPlace]:
    """Three-bot groups of bots 0..3 whose strength falls by ``gap`` per bot; each match is repeated ``copies``
    times within its group (as if the rotations of a duplicate deal all played out the same way)."""
    rng = random.Random(seed)
    members = [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)]
    results = []
    for group in range(groups):
        bots = members[group % len(members)]
        strength = [gap * bot + rng.gauss(0, 1) for bot in bots]
        places = {bot: 1 + sorted(strength).index(s) for bot, s in zip(bots, strength)}
        for copy in range(copies):
            results.extend(GroupPlace(group, bot, places[bot], group * copies + copy) for bot in bots)
    return results


def test_a_clear_order_is_settled_with_single_rank_intervals() -> None:
    sure = confidence(ladder_results(800, gap=1.0))
    assert sure.order() == [0, 1, 2, 3]
    assert [(line.rank_low, line.rank_high) for line in sure.bots] == [(1, 1), (2, 2), (3, 3), (4, 4)]
    assert [line.rank for line in shown(sure).lines] == ["1", "2", "3", "4"]
    assert all(p is None or p > 0.99 for p in sure.p_above_next().values())
    assert sure.p_above[(3, 0)] < 0.01


def test_bots_that_cannot_be_told_apart_share_a_rank() -> None:
    sure = confidence(ladder_results(40, gap=0.0))
    view = shown(sure)
    assert all(line.interval is not None and line.interval[1] > line.interval[0] for line in view.lines)
    assert not any(a.apart(b) for a in view.lines for b in view.lines)  # no bot's order settled
    assert all(line.rank_high - line.rank_low >= 2 for line in sure.bots)
    for (a, b), p in sure.p_above.items():
        assert abs(p + sure.p_above[(b, a)] - 1) < 1e-9
        assert 0.0 < p < 1.0


def test_copies_within_a_group_add_no_confidence() -> None:
    # The resampling unit is the group: three identical rotations are one piece of evidence, not three. A bootstrap
    # over single matches would have tripled the apparent sample and narrowed every interval.
    once = confidence(ladder_results(60, gap=0.4), seed=3)
    thrice = confidence(ladder_results(60, gap=0.4, copies=3), seed=3)
    assert once.p_above == thrice.p_above
    assert [(l.rank_low, l.rank_high) for l in once.bots] == [(l.rank_low, l.rank_high) for l in thrice.bots]
    assert [l.matches * 3 for l in once.bots] == [l.matches for l in thrice.bots]


def test_deterministic_for_a_seed_and_a_bot_without_matches_ranks_last() -> None:
    results = ladder_results(30, gap=0.5)
    assert confidence(results, seed=4) == confidence(results, seed=4)
    sure = confidence(results, bots=[0, 1, 2, 3, 9])
    assert sure.bots[-1].bot == 9 and sure.bots[-1].matches == 0
    assert (sure.bots[-1].rank_low, sure.bots[-1].rank_high) == (5, 5)
    assert sure.p_above[(0, 9)] == 0.5  # nothing is known of it
    # Only the bots asked for are ranked: bot 3's results are left out, not an error.
    assert [line.bot for line in confidence(results, bots=[0, 1, 2]).bots] == [0, 1, 2]


def test_p_above_next_follows_the_order_given() -> None:
    sure = confidence(ladder_results(800, gap=1.0))
    # In a wrong order, every neighbour pair is reversed with certainty: P(above the next) is about 0.
    assert sure.p_above_next([3, 2, 1, 0])[3] == 0.0


def test_standings_show_shared_ranks_intervals_and_p_above_next(tmp_path: Path) -> None:
    # Three bots playing the same random policy: their order cannot be settled by 12 matches.
    store = make_store(tmp_path)
    runner = CliRunner()
    result = runner.invoke(main, ["standings", "t", "--db", str(store.path), "--json"], catch_exceptions=False)
    assert result.exit_code == 0
    lines = json.loads(result.stdout)["standings"]
    assert [line["rank"] for line in lines] == [1, 2, 3]
    # 6 deals, 4 for each bot: too few to rank, and the table says so.
    assert json.loads(result.stdout)["note"].startswith("6 deals, at most 4 for a bot: too few to rank")
    assert [line["shared_rank"] for line in lines] == ["-"] * 3
    assert all(line["rank_interval_95"] == [1, 3] and line["p_above_next"] is None for line in lines)
    text = runner.invoke(main, ["standings", "t", "--db", str(store.path)], catch_exceptions=False)
    assert text.exit_code == 0
    assert "P>next" in text.stdout and f"{lines[0]['shared_rank']:>4}  {lines[0]['bot']}" in text.stdout
    assert "not enough data: 6 deals, at most 4 for a bot: too few" in text.stdout


def _progress_after(deals: int, strong_wins: float) -> Progress:
    """A run's progress after ``deals`` two-seat deals of two rotations each, where bot a takes first place with
    probability ``strong_wins``."""
    from arena.bots.manifest import BotSpec
    from arena.game.results import MatchResult, SeatResult, SeatStats
    from arena.game.rules import Rules
    from arena.run.jobs import JobResult, MatchJob

    rng = random.Random(7)
    bots = tuple(BotSpec(name=name, directory=Path("."), command=("x",), files_hash="0") for name in ("a", "b"))
    progress = Progress(total=2 * deals, done=0)
    for deal in range(deals):
        for rotation in range(2):
            seated = bots if rotation == 0 else bots[::-1]
            a_first = rng.random() < strong_wins
            places = [1 if (bot.name == "a") == a_first else 2 for bot in seated]
            players = tuple(SeatResult(seat, bot.name, "0", place, 0, SeatStats(), None, "", 0)
                            for seat, (bot, place) in enumerate(zip(seated, places)))
            job = MatchJob(2 * deal + rotation, deal, seated, Rules(), None, None, "process", "", 0)  # type: ignore[arg-type]
            progress.add(JobResult(job.index, 1, MatchResult(deal, Rules(), "x", 1, 1, players, 0.0, None)), job)
    return progress


def test_the_progress_line_says_whether_the_lead_is_settled() -> None:
    clear = _progress_after(60, strong_wins=0.9)
    assert clear.leader == "a" and (clear.leader_settled(every_s=0) or 0) >= 0.95
    even = _progress_after(60, strong_wins=0.5)
    p = even.leader_settled(every_s=0)
    assert p is not None and p < 0.95


def test_the_rank_shown_is_the_interval_and_p_above_never_a_certainty() -> None:
    # 0 is above 1 with P 0.9 and 1 above 2 with P 0.9: neither settled. Shown as shared ranks that chain, 2 would
    # have been "1=" beside its own interval 2-3; shown as intervals, each bot shows the ranks it could hold.
    samples = {0: [1.0] * 100, 1: [0.0] * 90 + [2.0] * 10, 2: [-1.0] * 80 + [0.5] * 10 + [-1.0] * 10,
               3: [-5.0] * 100}
    lines = tuple(BotConfidence(bot, 1.0 + bot, 10, low, high, strength, MIN_GROUPS)
                  for bot, (low, high), strength in zip(range(4), [(1, 2), (1, 3), (2, 3), (4, 4)], [1.0, 0.1, -0.9, -5]))
    sure = Confidence(lines, PAbove([0, 1, 2, 3], samples), 0.95, 100)
    assert [sure.p_above[(a, b)] for a, b in [(0, 1), (1, 2), (2, 3)]] == [0.9, 0.9, 1.0]
    view = shown(sure)
    assert [line.rank for line in view.lines] == ["1-2", "1-3", "2-3", "4"]
    assert [line.p_text for line in view.lines] == ["0.90", "0.90", "> 0.97", "-"]  # 100 resamples: not > 0.99
    assert view.line(2).apart(view.line(3)) and not view.line(0).apart(view.line(2))
    # With fewer groups than a rank needs, nothing settles: no rank, the whole field as the interval, no P.
    few = shown(sure, min_groups=MIN_GROUPS + 1)
    assert {(line.rank, line.interval, line.p_above_next) for line in few.lines} == {("-", (1, 4), None)}
    assert few.note == f"0 deals, at most {MIN_GROUPS} for a bot: too few to rank (a rank needs {MIN_GROUPS + 1} for each bot)"


def test_the_stop_rules_test_calls_equal_bots_equal_and_a_clear_gap_apart() -> None:
    from arena.stats.confidence import PairTest
    test = PairTest(alpha=0.05, looks=10, margin=0.3)
    assert math.isclose(test.z, 2.807, abs_tol=1e-3)  # 0.05 / 10 looks, two-sided
    assert math.isclose(test.delta, math.log(0.8 / 0.2))  # a head-to-head share of 80% is the margin's edge
    level = confidence(ladder_results(300, gap=0.0), seed=1)
    a, b = level.order()[:2]
    assert level.verdict(a, b, test) == "equal"
    apart = confidence(ladder_results(150, gap=1.5), seed=1)
    assert [apart.verdict(x, y, test) for x, y in zip(apart.order(), apart.order()[1:])] == ["apart"] * 3
    # Too few matches for either: no verdict, and the standings show the pair level, not apart.
    few = confidence(ladder_results(12, gap=0.0), seed=1)
    x, y = few.order()[:2]
    ranks = shown(few, min_groups=0).by_bot()
    assert few.verdict(x, y, test) is None and not ranks[x].apart(ranks[y])
    stored = PairTest.stored({"repeats": 10, "stop": {"confidence": 0.95, "max_matches": 60, "margin": 0.3}})
    assert stored is not None and math.isclose(stored.z, test.z) and (stored.looks, stored.margin) == (10, 0.3)
    assert PairTest.stored({"repeats": 3}) is None


def test_the_numpy_bootstrap_draws_and_fits_the_same_resamples_as_the_plain_loop() -> None:
    # A field with what the array path must get right: ties (a shared place), groups of one kind (copies), a
    # 5-seat match beside 3-seat ones, a bot not asked for (its comparisons left out), one asked for without
    # results, and ids not in order. The same seed must give the same resamples, so equal numbers to rounding.
    rng = random.Random(7)
    results = ladder_results(120, gap=0.4, copies=2, seed=3)
    results = [GroupPlace(result.group, [40, 12, 31, 7][result.bot], result.place, result.match) for result in results]
    for group in range(120, 160):
        seated = rng.sample([40, 12, 31, 7, 99, 5], 5 if group % 8 == 0 else 3)
        places = [1 + min(rank, len(seated) - 2) for rank in range(len(seated))]  # the last two share a place
        rng.shuffle(places)
        results.extend(GroupPlace(group, bot, place, 1000 + group) for bot, place in zip(seated, places))
    asked = [31, 7, 40, 12, 5, 77]  # 99 left out; 77 has no results
    loop = confidence(results, asked, resamples=60, seed=5, vector=False)
    arrays = confidence(results, asked, resamples=60, seed=5, vector=True)
    assert loop.order() == arrays.order() and loop.order()[-1] == 77
    for mine, theirs in zip(loop.bots, arrays.bots):
        assert (mine.bot, mine.rank_low, mine.rank_high, mine.matches) == (
            theirs.bot, theirs.rank_low, theirs.rank_high, theirs.matches)
        assert math.isnan(mine.strength) or math.isclose(mine.strength, theirs.strength, abs_tol=1e-9)
    assert any(line.rank_low < line.rank_high for line in loop.bots[:-1])  # resampling that moves ranks at all
    for a in asked:
        for b in asked:
            if a != b:
                assert math.isclose(loop.p_above[(a, b)], arrays.p_above[(a, b)], abs_tol=1e-12), (a, b)


def test_seat_columns_and_a_given_fit_give_the_same_confidence() -> None:
    # What the store hands over (columns, and its own fit of the same seats) must change nothing, on either path.
    results = ladder_results(300, gap=0.3, copies=3, seed=4)
    for vector in (False, True):
        alone = confidence(results, seed=2, resamples=50, vector=vector)
        point = {line.bot: line.strength for line in alone.bots}
        given = confidence(SeatColumns.of(results), seed=2, resamples=50, vector=vector, point=point)
        assert alone == given, vector
    # A fit that does not cover the bots measured is not used: the full data's is fitted again.
    partial = confidence(results, seed=2, resamples=50, point={0: 5.0})
    assert partial.line(0).strength == confidence(results, seed=2, resamples=50).line(0).strength != 5.0


def test_the_stores_standings_and_confidence_come_from_one_read_and_one_fit(tmp_path: Path) -> None:
    store = make_store(tmp_path, bots=("a", "b", "c", "d", "e"), players=3, repeats=3)  # every 5th match faulted
    tid = 1
    table, sure = standings_and_confidence(store, tid)
    # The totals SQLite sums are those of the stored matches recounted seat by seat, the ratings the latest.
    recount: dict[str, Counter[str]] = {}
    faults: dict[str, Counter[str]] = {}
    for stored in store.matches(tid):
        assert stored.result is not None
        for seat in stored.result.players:
            counts = recount.setdefault(seat.name, Counter())
            counts.update(matches=1, wins=seat.place == 1, place_sum=seat.place, points=seat.stats.points,
                          rounds=seat.stats.rounds, ok=seat.stats.declares_ok, failed=seat.stats.declares_failed)
            faults.setdefault(seat.name, Counter()).update([seat.fault.kind.value] if seat.fault else [])
    history = rating_history(store, tid)
    assert sum(faults.values(), Counter()).total() > 0
    for line in table:
        counts = recount[line.name]
        assert (line.matches, line.wins, line.place_sum, line.points, line.rounds, line.declares_ok,
                line.declares_failed) == tuple(counts[key] for key in ("matches", "wins", "place_sum", "points",
                                                                        "rounds", "ok", "failed"))
        assert line.faults == faults[line.name] and line.rating == history[line.bot_id][-1][1]
    # The confidence is the one of the stored seats: the same order, intervals and P(above).
    alone = confidence(seat_results(store, tid), [line.bot_id for line in table])
    assert sure.order() == alone.order() == [line.bot_id for line in table]
    assert [(line.rank_low, line.rank_high) for line in sure.bots] == [(line.rank_low, line.rank_high)
                                                                         for line in alone.bots]
    assert sure.p_above_next() == alone.p_above_next()
    # What the league's matchmaker reads: the seats of the groups before a checkpoint.
    seats = seat_results(store, tid)
    assert 0 < len(seat_columns(store, tid, before_group=3)) < len(seats)
    assert seat_columns(store, tid, before_group=3).results() == [seat for seat in seats if seat.group < 3]


def test_the_poisson_table_is_the_inverse_cdf_at_every_midpoint() -> None:
    # Entry by entry, with the CDF summed term by term as the table sums it, against the table built a run at a time.
    for bits in (1, 2, 5, 16):
        size = 1 << bits
        cdfs = [term := math.exp(-1.0)]
        for k in range(1, 30):
            term /= k
            cdfs.append(cdfs[-1] + term)
        expected = [next(k for k, cdf in enumerate(cdfs) if (u + 0.5) / size <= cdf) for u in range(size)]
        assert confidence_module._poisson_table(bits) == expected
    assert confidence_module._POISSON == expected and max(expected) > 5
