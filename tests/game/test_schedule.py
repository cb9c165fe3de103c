"""Tournament schedules: balance, determinism and duplicate deals."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.schedule import MAX_COMBINATIONS, deal_seed, design_for, make_schedule


def seat_counts(schedule, bots, players):
    counts = Counter((bot, seat) for match in schedule for seat, bot in enumerate(match.bots))
    return {(bot, seat): counts[(bot, seat)] for bot in range(bots) for seat in range(players)}


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9), st.integers(2, 8), st.integers(1, 3), st.integers(0, 2**32))
def test_every_bot_sits_in_every_seat_equally_often(bots, players, repeats, seed):
    players = min(players, bots)
    schedule = make_schedule(bots, players, repeats, seed)
    counts = seat_counts(schedule, bots, players)
    assert len(set(counts.values())) == 1, counts
    assert all(len(set(match.bots)) == players for match in schedule)
    assert [match.index for match in schedule] == list(range(len(schedule)))


def test_round_robin_plays_every_combination_with_every_rotation_on_one_deal():
    schedule = make_schedule(5, 3, 2, seed=7)
    assert len(schedule) == 10 * 2 * 3
    groups: dict[int, list] = {}
    for match in schedule:
        groups.setdefault(match.group, []).append(match)
    assert len(groups) == 20
    for matches in groups.values():
        assert len({m.seed for m in matches}) == 1, "a group's rotations share one deal"
        assert sorted(m.rotation for m in matches) == [0, 1, 2]
        # each bot of the group takes each seat once
        for seat in range(3):
            assert sorted(m.bots[seat] for m in matches) == sorted(matches[0].bots)
    combos = Counter(tuple(sorted(m.bots)) for m in schedule)
    assert set(combos) == set(combinations(range(5), 3)) and set(combos.values()) == {6}
    assert len({m.seed for m in schedule}) == 20, "each group and repeat has its own deal"


def test_schedule_is_a_pure_function_of_its_inputs():
    assert make_schedule(6, 3, 2, 11) == make_schedule(6, 3, 2, 11)
    assert make_schedule(6, 3, 2, 11) != make_schedule(6, 3, 2, 12)


def test_large_fields_use_the_balanced_random_design():
    bots, players = 40, 4
    assert design_for(bots, players) == "balanced-random"  # C(40, 4) = 91390 > MAX_COMBINATIONS
    schedule = make_schedule(bots, players, 3, seed=1)
    assert len(schedule) == 3 * bots * players
    counts = seat_counts(schedule, bots, players)
    assert set(counts.values()) == {3 * players}  # players windows per round, each played in every rotation
    assert make_schedule(bots, players, 3, seed=1) == schedule
    assert design_for(10, 3) == "round-robin" and MAX_COMBINATIONS >= 120


@pytest.mark.parametrize("bots, players, repeats", [(3, 4, 1), (3, 1, 1), (9, 9, 1), (4, 2, 0)])
def test_impossible_schedules_are_refused(bots, players, repeats):
    with pytest.raises(ValueError):
        make_schedule(bots, players, repeats, 0)


def test_duplicate_deals_are_the_default_and_unchanged():
    schedule = make_schedule(5, 3, 1, 7)
    assert schedule == make_schedule(5, 3, 1, 7, deals="duplicate")
    # Each group's deal is the keyed hash of the secret and the group's number (arena/schedule.py's deal_seed),
    # whatever else the schedule holds; tournaments stored before keep the seeds they were stored with
    # (tests/game/test_secret_deals.py).
    assert [schedule[0].seed, schedule[3].seed, schedule[-1].seed] == [
        deal_seed(7, "deal", 0), deal_seed(7, "deal", 1), deal_seed(7, "deal", schedule[-1].group)]
    assert deal_seed(7, "deal", 0) == deal_seed("7", "deal", 0) == 2013915985281164308


@pytest.mark.parametrize("bots, players, repeats", [(5, 3, 2), (40, 4, 2), (4, 2, 3)])
def test_independent_deals_give_every_match_its_own_deal_with_balanced_seats(bots, players, repeats):
    duplicate = make_schedule(bots, players, repeats, 5)
    independent = make_schedule(bots, players, repeats, 5, deals="independent")
    assert len({m.seed for m in independent}) == len(independent)
    assert len(set(seat_counts(independent, bots, players).values())) == 1
    # The same groups of bots meet, but not always in the duplicate design's seat order.
    assert Counter(tuple(sorted(m.bots)) for m in independent) == Counter(tuple(sorted(m.bots)) for m in duplicate)
    assert [m.bots for m in independent] != [m.bots for m in duplicate]
    assert make_schedule(bots, players, repeats, 5, deals="independent") == independent


def test_unknown_deals_are_refused():
    with pytest.raises(ValueError, match="deals: expected one of duplicate, independent"):
        make_schedule(5, 3, 1, 0, deals="shared")  # type: ignore[arg-type]
