"""The TrueSkill wrapper on its own: seat order never matters (ties included), and big upsets fall back to mpmath."""

from __future__ import annotations

import itertools
import math

import pytest

from arena.stats.ratings import RatedMatch, Rater, Rating, RatingConfig, rate_all

PRIORS = {1: Rating(30.0, 2.0), 2: Rating(20.0, 6.0), 3: Rating(25.0, 4.0)}
PLACES = {1: 2, 2: 1, 3: 2}  # bots 1 and 3 tie for second


def test_a_tie_updates_the_same_whatever_seats_the_bots_sat_in() -> None:
    rater = Rater(RatingConfig())
    updates = set()
    for seats in itertools.permutations(PRIORS):
        match = RatedMatch(0, tuple(seats), tuple(PLACES[bot] for bot in seats))
        updates.add(tuple(sorted(rater.update(PRIORS, match).items())))
    assert len(updates) == 1, "the same places must give the same ratings in every seat order"
    # The guard matters: trueskill itself gives tied teams different updates depending on their order.
    env = rater.fast
    raw = {tuple(round(group[0].mu, 9) for group in env.rate([(env.create_rating(PRIORS[b].mu, PRIORS[b].sigma),)
                                                                for b in order], ranks=[PLACES[b] for b in order]))
           for order in ((1, 2, 3), (3, 2, 1))}
    assert len(raw) == 2


def test_equal_bots_that_tie_stay_level_and_the_winner_gains() -> None:
    rater = Rater(RatingConfig())
    start = {bot: rater.initial for bot in (4, 5, 6)}
    after = rater.update(start, RatedMatch(0, (6, 4, 5), (2, 1, 2)))
    # Not exactly equal: trueskill's factor graph treats the second of two tied teams a little differently.
    assert after[6].mu == pytest.approx(after[5].mu, abs=1e-3)
    assert after[4].mu > rater.initial.mu > after[5].mu
    assert all(rating.sigma < rater.initial.sigma for rating in after.values())


def test_an_upset_that_overflows_the_default_backend_is_rated_with_mpmath() -> None:
    rater = Rater(RatingConfig())
    ratings = {1: Rating(500.0, 1.0), 2: Rating(0.0, 1.0), 3: Rating(0.0, 1.0)}
    upset = RatedMatch(0, (1, 2, 3), (3, 1, 2))  # the far stronger bot comes last
    with pytest.raises(FloatingPointError):
        rater.fast.rate([(rater.fast.create_rating(r.mu, r.sigma),) for r in ratings.values()], ranks=[3, 1, 2])
    after = rater.update(ratings, upset)
    assert all(math.isfinite(r.mu) and math.isfinite(r.sigma) for r in after.values())
    assert after[1].mu < 500.0 and after[2].mu > 0.0


def test_rate_all_keeps_bots_that_did_not_play_and_records_history_in_match_order() -> None:
    matches = [RatedMatch(0, (1, 2), (1, 2)), RatedMatch(1, (2, 3), (1, 2))]
    final, history = rate_all([1, 2, 3, 4], matches, RatingConfig())
    assert final[4] == Rating(25.0, 25.0 / 3)
    assert [index for index, _ in history] == [0, 1] and set(history[1][1]) == {2, 3}
    assert history[1][1][2] == final[2]
