"""The standings' model (arena/stats/ranking.py): Plackett-Luce strengths fitted to every match's places."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.stats.ranking import (
    PRIOR,
    VECTOR_SEATS,
    fit,
    fit_loop,
    fit_seats,
    fit_vector,
    pair_arrays,
    pair_counts,
    strengths,
)


def plackett_luce(rng: random.Random, bots: tuple[int, ...], truth: list[float]) -> list[tuple[int, int]]:
    """One match's (bot, place) per seat, drawn from log strengths ``truth`` (Gumbel noise: a PL ranking)."""
    keyed = sorted(bots, key=lambda bot: -(truth[bot] - math.log(-math.log(rng.random()))))
    return [(bot, keyed.index(bot) + 1) for bot in bots]


def test_a_round_robin_without_ties_is_ordered_as_mean_place() -> None:
    # Every pair meets equally often, so a bot's comparisons won are linear in its place sum and the fit, with its
    # symmetric prior, must order exactly as mean place (equal place sums give equal strengths).
    for seed in range(20):
        rng = random.Random(seed)
        truth = [rng.gauss(0, 0.5) for _ in range(5)]
        matches = [plackett_luce(rng, combination, truth)
                   for _ in range(3) for combination in itertools.combinations(range(5), 3)]
        place_sum = {bot: sum(place for match in matches for b, place in match if b == bot) for bot in range(5)}
        fitted = strengths(matches, list(range(5)))
        for a, b in itertools.permutations(range(5), 2):
            if place_sum[a] < place_sum[b]:
                assert fitted[a] > fitted[b], (seed, place_sum, fitted)
            elif place_sum[a] == place_sum[b]:
                assert math.isclose(fitted[a], fitted[b], abs_tol=1e-6), (seed, place_sum, fitted)


def test_the_fit_allows_for_the_opponents_met() -> None:
    # a met only the strongest bot and lost half the time; b met only the weakest and won half the time. Their mean
    # places are equal (1.5); the fit, which links them through their opponents, puts a far above b.
    matches = ([[("top", 1), ("bottom", 2)]] * 30 + [[("top", 1), ("a", 2)]] * 10 + [[("a", 1), ("top", 2)]] * 10
               + [[("b", 1), ("bottom", 2)]] * 10 + [[("bottom", 1), ("b", 2)]] * 10)
    ids = {"top": 0, "a": 1, "b": 2, "bottom": 3}
    fitted = strengths([[(ids[bot], place) for bot, place in match] for match in matches], [0, 1, 2, 3])
    assert fitted[ids["top"]] > fitted[ids["a"]] > fitted[ids["b"]] > fitted[ids["bottom"]]


def test_a_bot_that_never_lost_has_a_finite_strength_and_ties_count_half() -> None:
    # Without the prior's virtual games the best bot's strength would run to infinity.
    fitted = strengths([[(0, 1), (1, 2), (2, 3)]] * 50, [0, 1, 2])
    assert all(math.isfinite(value) for value in fitted.values())
    assert fitted[0] > fitted[1] > fitted[2]
    assert math.isclose(fitted[0], -fitted[2], abs_tol=1e-6)  # the prior is symmetric: so is the fit
    # Two bots tied in every match are level, each half a win over the other.
    assert pair_counts([[(0, 2), (1, 2), (2, 1)]]) == {(0, 1): (0.5, 1), (0, 2): (0.0, 1), (1, 2): (0.0, 1)}
    level = strengths([[(0, 2), (1, 2), (2, 1)]] * 10 + [[(0, 1), (1, 1), (2, 3)]] * 10, [0, 1, 2])
    assert math.isclose(level[0], level[1], abs_tol=1e-9)


def test_the_fit_is_deterministic_whatever_the_order_of_matches() -> None:
    rng = random.Random(3)
    truth = [0.8, 0.3, 0.0, -0.4]
    matches = [plackett_luce(rng, tuple(rng.sample(range(4), 3)), truth) for _ in range(200)]
    once = strengths(matches, [0, 1, 2, 3])
    shuffled = list(matches)
    random.Random(4).shuffle(shuffled)
    again = strengths(shuffled, [0, 1, 2, 3])
    assert all(math.isclose(once[bot], again[bot], abs_tol=1e-7) for bot in once)
    assert sorted(once, key=once.__getitem__, reverse=True) == [0, 1, 2, 3]
    # A warm start ends where a cold one does; a bot without matches stays at its start (0: the prior's average).
    pairs = pair_counts(matches)
    warm = fit([0, 1, 2, 3, 9], pairs, start={bot: value + 0.3 for bot, value in once.items()})
    assert all(math.isclose(once[bot], warm[bot], abs_tol=1e-7) for bot in once) and warm[9] == 0.0


def test_the_numpy_fit_takes_the_loops_steps() -> None:
    # What fit_indexed runs past VECTOR_PAIRS pairs must end where the plain loop does, cold and warm, with a bot
    # in no pair kept at its start, whatever order the pairs come in.
    rng = random.Random(11)
    truth = [rng.gauss(0, 1) for _ in range(40)]
    matches = [plackett_luce(rng, tuple(rng.sample(range(38), 4)), truth) for _ in range(300)]
    pairs = pair_counts(matches)
    order = list(pairs)
    rng.shuffle(order)
    first, second = [a for a, _ in order], [b for _, b in order]
    wins, n = [pairs[p][0] for p in order], [float(pairs[p][1]) for p in order]
    start = [0.1 * (bot % 3) for bot in range(40)]
    for begin in (None, start):
        loop = fit_loop(40, first, second, wins, n, begin)
        vector = fit_vector(40, first, second, wins, n, begin).tolist()
        assert all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(loop, vector))
        assert loop[38:] == vector[38:] == ([0.0, 0.0] if begin is None else begin[38:])
        assert max(loop) - min(loop[:38]) > 1.0  # a fit that moved


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 4)), min_size=1, max_size=5), max_size=40))
def test_the_numpy_pair_count_is_the_loops(matches: list[list[tuple[int, int]]]) -> None:
    # Any seats at all: shared places, one-seat matches, a bot seated twice in a match (compared with no one as
    # itself), matches of different sizes.
    match = np.array([number for number, seats in enumerate(matches) for _ in seats], np.int64)
    bot = np.array([seat for seats in matches for seat, _ in seats], np.int64)
    place = np.array([place for seats in matches for _, place in seats], np.int64)
    first, second, wins, n = pair_arrays(match, bot, place, 7)
    assert {(int(a), int(b)): (float(w), int(c)) for a, b, w, c in zip(first, second, wins, n)} == pair_counts(matches)
    assert list(zip(first.tolist(), second.tolist())) == sorted(pair_counts(matches))


def test_the_store_fit_of_seat_columns_is_the_fit_of_the_matches() -> None:
    # Below VECTOR_SEATS seats the loop counts the pairs, from it numpy does: both must fit what strengths() does,
    # a bot not ranked (7) being left out of every comparison, a ranked one without seats (9) kept at 0.
    rng = random.Random(5)
    truth = [rng.gauss(0, 1) for _ in range(8)]
    for count in (40, VECTOR_SEATS // 4 + 50):
        matches = [plackett_luce(rng, tuple(rng.sample(range(8), 4)), truth) for _ in range(count)]
        match = [number for number, seats in enumerate(matches) for _ in seats]
        bot = [seat for seats in matches for seat, _ in seats]
        place = [place for seats in matches for _, place in seats]
        ranked = [0, 1, 2, 3, 4, 5, 6, 9]
        fitted = fit_seats(match, bot, place, ranked)
        expected = strengths([[(b, p) for b, p in seats if b != 7] for seats in matches], ranked)
        assert (len(bot) >= VECTOR_SEATS) == (count > 40)
        assert fitted.keys() == expected.keys() and fitted[9] == 0.0
        assert all(math.isclose(fitted[b], expected[b], abs_tol=1e-9) for b in ranked), count
        warm = fit_seats(match, bot, place, ranked, start={b: value + 0.2 for b, value in fitted.items()})
        assert all(math.isclose(fitted[b], warm[b], abs_tol=1e-7) for b in range(7)) and warm[9] == 0.2


def choix_fit(matches: list[list[tuple[int, int]]], bots: list[int]) -> dict[int, float]:
    """The same model fitted by choix (a reference implementation, test-only): every pair of seats one comparison
    (a tie half each way), and the prior as one win and one loss of each bot against an extra item, the phantom.
    choix leaves the scale free (its parameters sum to 0); fixing the phantom at 0, as arena does, is a shift."""
    choix = pytest.importorskip("choix", reason="choix is a test dependency (pip install -e '.[test]')")
    index = {bot: i for i, bot in enumerate(bots)}
    phantom = len(bots)
    wins = np.zeros((phantom + 1, phantom + 1))
    wins[:phantom, phantom] = wins[phantom, :phantom] = PRIOR
    for match in matches:
        for (a, place_a), (b, place_b) in itertools.combinations(match, 2):
            share = 0.5 if place_a == place_b else float(place_a < place_b)
            wins[index[a], index[b]] += share
            wins[index[b], index[a]] += 1 - share
    params = choix.ilsr_pairwise_dense(wins, tol=1e-13, max_iter=10_000)
    return {bot: float(params[index[bot]] - params[phantom]) for bot in bots}


def plackett_luce_field(seed: int, bots: int, seats: int, matches: int, tie: float) -> list[list[tuple[int, int]]]:
    """Matches of a field with spread strengths, places drawn by Plackett-Luce, adjacent places tied at rate ``tie``."""
    rng = random.Random(seed)
    strength = [math.exp(rng.gauss(0, 1.5)) for _ in range(bots)]
    played = []
    for _ in range(matches):
        table = rng.sample(range(bots), seats)
        order: list[int] = []
        while table:
            pick = rng.choices(table, [strength[bot] for bot in table])[0]
            table.remove(pick)
            order.append(pick)
        places = [1]
        for _ in order[1:]:
            places.append(places[-1] if rng.random() < tie else len(places) + 1)
        played.append(list(zip(order, places)))
    return played


@pytest.mark.parametrize(("seed", "bots", "seats", "matches", "tie"), [
    (1, 5, 3, 300, 0.0),      # a small tournament: the plain-Python loop
    (2, 30, 4, 1500, 0.1),    # a league's field, with ties
    # over VECTOR_PAIRS distinct pairs and VECTOR_SEATS seats: the numpy path; seconds of CPU in choix, so slow (the
    # fast profile keeps the loop agreeing with choix above and numpy taking the loop's steps, a test further up)
    pytest.param(3, 70, 4, 4000, 0.05, marks=pytest.mark.slow),
])
def test_the_fit_agrees_with_choix(seed: int, bots: int, seats: int, matches: int, tie: float) -> None:
    played = plackett_luce_field(seed, bots, seats, matches, tie)
    ids = list(range(bots))
    reference = choix_fit(played, ids)
    columns = [(m, bot, place) for m, match in enumerate(played) for bot, place in match]
    fitted = fit_seats(*(list(column) for column in zip(*columns)), ids)
    assert max(abs(fitted[bot] - reference[bot]) for bot in ids) < 1e-6
    assert max(abs(strengths(played, ids)[bot] - reference[bot]) for bot in ids) < 1e-6
