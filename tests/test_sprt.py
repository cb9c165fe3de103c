"""arena/sprt.py: the LLR against hand-computed values, and the error rates on simulated streams of paired
differences (identical bots must almost never be called better; a clear improvement must be found)."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

import pytest

from arena.sprt import Running, Settings, first_verdict, llr, paired_difference


def test_llr_matches_hand_computed_values() -> None:
    # [1, 0, 0, 1]: mean 0.5, variance (over n - 1) 1/3; LLR = 4 * 0.1 * (2 * 0.5 - 0.1) / (2 / 3) = 0.54
    assert llr(4, 2.0, 2.0, 0.1) == pytest.approx(0.54)
    # [0.5, -0.5]: mean 0, variance 0.5; LLR = 2 * 0.2 * (0 - 0.2) / 1.0 = -0.08
    assert llr(2, 0.0, 0.5, 0.2) == pytest.approx(-0.08)
    # a difference right between the hypotheses is evidence for neither
    assert llr(3, 0.15, 0.0075 + 3 * 0.05 ** 2, 0.1) == pytest.approx(0.0)


def test_wald_bounds() -> None:
    settings = Settings(alpha=0.05, beta=0.1)
    assert settings.upper == pytest.approx(math.log(0.9 / 0.05))
    assert settings.lower == pytest.approx(math.log(0.1 / 0.95))


@pytest.mark.parametrize("bad", [{"alpha": 0}, {"beta": 0.5}, {"margin": 0}, {"margin": -0.1}])
def test_settings_refuse_nonsense(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Settings(**bad)


def test_no_verdict_before_min_samples_and_zero_differences_are_not_better() -> None:
    running = Running(Settings(min_samples=10))
    for _ in range(9):  # 0.0 every time: what two identical deterministic bots give
        running.add(0.0)
        assert running.status().verdict == "undecided"
    running.add(0.0)
    status = running.status()
    assert status.verdict == "not better" and status.llr < status.lower


def test_paired_difference_is_base_minus_new() -> None:
    assert paired_difference([1, 2, 1], [2, 3, 3]) == pytest.approx(4 / 3)
    with pytest.raises(ValueError):
        paired_difference([1], [1, 2])


def _stream(rng: random.Random, shift: float) -> Iterator[float]:
    """A deal's difference as in a 3-seat test: the mean over 3 rotations of place differences in -2..2, the
    pairing making most of them 0; ``shift`` moves mass from -1 to +1 so the true mean is ``shift``."""
    values = (-2, -1, 0, 1, 2)
    def one() -> float:
        weights = (0.05, 0.2 - shift / 2, 0.5, 0.2 + shift / 2, 0.05)
        return sum(rng.choices(values, weights)[0] for _ in range(3)) / 3
    while True:
        yield one()


def _verdicts(shift: float, runs: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    counts = {"better": 0, "not better": 0, "undecided": 0}
    for _ in range(runs):
        counts[first_verdict(_stream(rng, shift), Settings(), max_samples=3000).verdict] += 1
    return counts


def test_identical_bots_are_rarely_called_better() -> None:
    counts = _verdicts(0.0, 400, seed=1)
    # alpha = 0.05; 400 runs give a standard error of about 0.011, so 0.08 is a generous but real bound
    assert counts["better"] / 400 <= 0.08, counts
    assert counts["not better"] / 400 >= 0.9, counts


def test_an_improvement_of_the_margin_is_rarely_missed() -> None:
    counts = _verdicts(0.1, 400, seed=2)
    assert counts["not better"] / 400 <= 0.08, counts


def test_a_clear_improvement_is_found_quickly() -> None:
    rng = random.Random(3)
    for _ in range(50):
        status = first_verdict(_stream(rng, 0.3), Settings())
        assert status.verdict == "better"
        assert status.samples < 200
        # A test that stops early stops on a lucky run, so the estimate at the stop leans high or low; it is
        # still clearly positive.
        assert status.low > 0


def test_the_cap_leaves_it_undecided() -> None:
    status = first_verdict([0.05, -0.05] * 100, Settings(margin=0.01), max_samples=20)
    assert status.samples == 20 and status.verdict == "undecided"
