"""arena/stats/sprt.py: the exact GSPRT's LLR against hand-computed values and a brute-force maximum likelihood, the
Brownian outcome probabilities against closed forms, and small seeded simulations of the whole test that fail if
the error rates or the estimate at the stop go wrong (bench/sprt.py runs 4,000 tests per cell)."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

import pytest

from arena.stats.sprt import (
    Running,
    Settings,
    estimate,
    first_verdict,
    llr,
    log_ratios,
    outcome_cdf,
    paired_difference,
    tilt,
)


def test_on_two_values_the_llr_is_the_binomial_one() -> None:
    # Only -1 and +1 possible: a mean of m fixes P(+1) = (1 + m) / 2, so the LLR is a plain binomial ratio
    expected = 3 * math.log(0.6 / 0.5) + 1 * math.log(0.4 / 0.5)
    assert llr({1.0: 3, -1.0: 1}, 1, 0.2) == pytest.approx(expected, rel=1e-12)


def _brute_force_max(counts: dict[float, int], mean: float) -> float:
    """max sum n_i log p_i over distributions on three values with this mean, by a fine search over the one free
    share (the other two follow from the total and the mean)."""
    (a, na), (b, nb), (c, nc) = sorted(counts.items())
    best = -math.inf
    for step in range(1, 20_000):
        pb = step / 20_000
        pc = (mean - a - pb * (b - a)) / (c - a)  # from pa + pb + pc = 1 and the mean
        pa = 1 - pb - pc
        if pa > 0 and pc > 0:
            best = max(best, na * math.log(pa) + nb * math.log(pb) + nc * math.log(pc))
    return best


def test_the_llr_is_the_ratio_of_the_two_constrained_maximum_likelihoods() -> None:
    counts = {-1.0: 5, 0.0: 9, 1.0: 7}  # the extremes of bound 1 seen, so no regularisation
    expected = _brute_force_max(counts, 0.15) - _brute_force_max(counts, 0.0)
    assert llr(counts, 1, 0.15) == pytest.approx(expected, abs=1e-5)


def test_the_tilt_gives_a_distribution_with_the_asked_mean() -> None:
    values, weights = [-2.0, -0.5, 0.0, 1.0 / 3, 2.0], [1e-3, 4.0, 10.0, 6.0, 1e-3]
    for mean in (-1.5, 0.0, 0.1, 1.9):
        theta = tilt(values, weights, mean)
        p = [w / (1 + theta * (a - mean)) for a, w in zip(values, weights)]
        assert all(share > 0 for share in p)
        assert sum(a * share for a, share in zip(values, p)) / sum(p) == pytest.approx(mean, abs=1e-9)
        assert sum(p) == pytest.approx(sum(weights), rel=1e-9)


def test_identical_deterministic_bots_end_not_better_with_a_finite_llr() -> None:
    # every difference 0: the only way to a mean of the margin is the unseen extreme (regularised), so each deal
    # costs H1 about log(1 - margin / bound); no sentinel, no division by a zero variance
    assert llr({0.0: 30}, 2, 0.1) == pytest.approx(30 * math.log(1 - 0.1 / 2), rel=1e-2)
    running = Running(Settings(), 2)
    deals = math.ceil(Settings().lower / math.log(1 - 0.1 / 2))
    for _ in range(deals - 1):
        assert running.add(0.0) == "undecided"
    assert running.add(0.0) == "not better"
    status = running.status()
    assert math.isfinite(status.llr) and status.estimate is not None
    # no spread in the data to model: the worst case, other values in the largest share q of deals that n deals
    # without one leave a 2.5% chance of, at the far end
    share = 1 - 0.025 ** (1 / deals)
    assert (status.estimate.difference, status.estimate.low, status.estimate.high) == pytest.approx(
        (0.0, -2 * share, 2 * share))


def test_bounds_that_wald_inequality_holds_to_alpha_and_beta() -> None:
    # Wald's approximate bounds log((1 - beta) / alpha) and log(beta / (1 - alpha)) promise only about alpha:
    # 5.08% false "better" heads-up at alpha 5% in bench/sprt.py. These promise at most alpha and beta.
    settings = Settings(alpha=0.05, beta=0.1)
    assert settings.upper == pytest.approx(math.log(1 / 0.05))
    assert settings.lower == pytest.approx(math.log(0.1))


@pytest.mark.parametrize("bad", [{"alpha": 0}, {"beta": 0.5}, {"margin": 0}, {"margin": -0.1}])
def test_settings_refuse_nonsense(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Settings(**bad)


def test_a_margin_a_deal_cannot_reach_and_an_impossible_difference_are_refused() -> None:
    with pytest.raises(ValueError, match="below 1"):
        Running(Settings(margin=1.0), 1)
    with pytest.raises(ValueError, match="beyond the possible"):
        Running(Settings(), 1).add(1.5)


def test_paired_difference_is_base_minus_new() -> None:
    assert paired_difference([1, 2, 1], [2, 3, 3]) == pytest.approx(4 / 3)
    with pytest.raises(ValueError):
        paired_difference([1], [1, 2])


def test_the_outcome_probability_matches_closed_forms() -> None:
    a, b = -2.5, 3.0
    for drift, variance in ((0.05, 0.2), (-0.3, 1.0), (0.0, 0.5)):
        # long after the start the motion has surely left: "no better than leaving by b" is leaving by a, the
        # gambler's ruin probability
        gamma = drift / variance
        ruin = ((math.exp(-2 * gamma * -a) - math.exp(-2 * gamma * (b - a))) / (1 - math.exp(-2 * gamma * (b - a)))
                if drift else b / (b - a))
        assert outcome_cdf(1e5, b, drift, variance, a, b) == pytest.approx(ruin, abs=1e-6)
        # just after the start the bounds are far: a free normal
        time, at = 0.5, 0.3
        free = 0.5 * math.erfc(-(at - drift * time) / math.sqrt(2 * variance * time))
        assert outcome_cdf(time, at, drift, variance, a, b) == pytest.approx(free, abs=1e-6)
    # a later exit by b is a worse outcome than an earlier one; a strong drift up makes every outcome better
    assert outcome_cdf(10, b, 0.2, 0.5, a, b) > outcome_cdf(30, b, 0.2, 0.5, a, b)
    assert outcome_cdf(10, 0.0, 50.0, 0.1, a, b) == 0.0 and outcome_cdf(10, 0.0, -50.0, 0.1, a, b) == 1.0


def _stream(rng: random.Random, shift: float) -> Iterator[float]:
    """A deal's difference as in a 3-seat test: the mean over 3 rotations of place differences in -2..2, the
    pairing making most of them 0; ``shift`` moves mass from -1 to +1 so the true mean is ``shift``."""
    values = (-2, -1, 0, 1, 2)
    weights = (0.05, 0.2 - shift / 2, 0.5, 0.2 + shift / 2, 0.05)
    while True:
        yield sum(rng.choices(values, weights)[0] for _ in range(3)) / 3


MARGIN = 0.3
"""Large for these streams (a deal's difference has a spread of about 0.5), so a test takes about 20 deals."""


def _verdicts(shift: float, runs: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    counts = {"better": 0, "not better": 0, "undecided": 0}
    for _ in range(runs):
        running = Running(Settings(margin=MARGIN), 2)
        for difference in _stream(rng, shift):
            if running.add(difference) != "undecided" or running.n == 500:
                break
        counts[running.verdict] += 1
    return counts


def test_identical_bots_are_rarely_called_better() -> None:
    counts = _verdicts(0.0, 300, seed=1)
    # alpha = 0.05; 300 runs give a standard error of about 0.013, so 0.08 is a generous but real bound (the
    # earlier normal-approximation test without its 20-deal floor measured 7.5-16.5% in the audit's cells)
    assert counts["better"] / 300 <= 0.08, counts
    assert counts["not better"] / 300 >= 0.9, counts


def test_an_improvement_of_the_margin_is_rarely_missed() -> None:
    counts = _verdicts(MARGIN, 300, seed=2)
    assert counts["not better"] / 300 <= 0.08, counts


@pytest.mark.slow
def test_the_estimate_at_the_stop_leans_less_than_the_mean_and_its_interval_covers() -> None:
    rng = random.Random(3)
    truth = MARGIN / 2  # in the middle: stops either way, on lucky or unlucky runs
    leans, held, runs = [], 0, 100
    for _ in range(runs):
        status = first_verdict(_stream(rng, truth), Settings(margin=MARGIN), 2, max_samples=500)
        assert status.estimate is not None
        leans.append((status.estimate.difference - truth, status.mean - truth))
        held += status.estimate.low <= truth <= status.estimate.high
    # the plain mean at a stop is pushed away from the middle (a stop on "better" after a lucky run), the
    # estimate far less
    outward = sum(abs(mean) for _, mean in leans) / runs
    assert sum(abs(found) for found, _ in leans) / runs < 0.8 * outward
    assert held / runs >= 0.88, held


def test_a_clear_improvement_is_found_quickly() -> None:
    rng = random.Random(4)
    for _ in range(30):
        status = first_verdict(_stream(rng, 0.3), Settings(), 2)
        assert status.verdict == "better"
        assert status.samples < 200
        assert status.estimate is not None and status.estimate.low > 0


def test_the_cap_leaves_it_undecided_with_an_estimate_of_the_plain_test() -> None:
    status = first_verdict([0.5, -0.5] * 100, Settings(margin=0.01), 2, max_samples=20)
    assert status.samples == 20 and status.verdict == "undecided"
    assert status.estimate is not None and status.estimate.low < 0 < status.estimate.high
    # cut short far inside the bounds, the estimate is the plain one: centred on the mean
    found = estimate({0.5: 10, -0.5: 10}, 2, Settings(margin=0.01), status.llr)
    assert found.difference == pytest.approx(0.0, abs=1e-3)


def logistic_score(elo: float) -> float:
    return 1 / (1 + 10 ** (-elo / 400))


# fastchess's own test vectors (Disservin/fastchess, app/tests/sprt_test.cpp, the "logistic" cases): game results
# (wins, draws, losses) or game-pair results (LL, LD, WL + DD, WD, WW), the hypotheses as logistic Elo, and the LLR
# fastchess gives, which its test checks to 1% (doctest::Approx(...).epsilon(0.01)); its root finder stops at
# theta within 1e-3, so agreement is to that tolerance, not to the digit.
FASTCHESS_VECTORS = [
    ("logistic trinomial 1", (0.0, 0.5, 1.0), (21184, 40708, 21404), 0.5, 2.5, -1.57),
    ("logistic trinomial 2", (0.0, 0.5, 1.0), (57030, 106593, 57433), 0.0, 2.0, -2.59),
    ("logistic pentanomial 1", (0.0, 0.25, 0.5, 0.75, 1.0), (223, 9863, 20279 + 1000, 10037, 246), 0.5, 2.5, -3.07),
    ("logistic pentanomial 2", (0.0, 0.25, 0.5, 0.75, 1.0), (871, 26175, 55003 + 980, 26678, 821), 0.0, 2.0, -4.98),
]


@pytest.mark.parametrize(("name", "scores", "counts", "elo0", "elo1", "expected"), FASTCHESS_VECTORS,
                         ids=[vector[0] for vector in FASTCHESS_VECTORS])
def test_the_llr_reproduces_fastchess_test_vectors(name: str, scores: tuple[float, ...], counts: tuple[int, ...],
                                                   elo0: float, elo1: float, expected: float) -> None:
    # Mean score s0 against s1 is, on the scores less s0, mean 0 against s1 - s0: the form arena's test takes.
    s0, s1 = logistic_score(elo0), logistic_score(elo1)
    values = [score - s0 for score in scores]
    ratios, _ = log_ratios(values, counts, s1 - s0)
    assert sum(n * r for n, r in zip(counts, ratios)) == pytest.approx(expected, rel=0.01)
    if elo0 == 0:  # scores centred on 0 and every extreme seen: the public llr() takes these counts as they are
        bound = values[-1]
        assert llr(dict(zip(values, counts)), bound, s1 - s0) == pytest.approx(expected, rel=0.01)
