"""The statistics of ``arena test``: a sequential probability ratio test on paired differences.

NEW and BASE play the same deals from the same seats against the same opponents (arena/run/abtest.py), so each deal
gives one number: BASE's mean place minus NEW's over the deal's seat rotations (positive: NEW did better). The
deals are independent, and the differences have some unknown distribution on a bounded range; the pairing makes
its variance small, because most of what decides a place (the cards) is the same for both.

The test is the generalized SPRT with a normal approximation that fastchess and Fishtest use for game pairs
(Fishtest's "normalized" SPRT, cutechess's GSPRT): the log-likelihood ratio of H1 "the mean difference is
``margin``" against H0 "it is 0" for normal data with the variance estimated from the data,

    LLR = n (mu1 - mu0) (2 mean - mu0 - mu1) / (2 variance)

with ``mean`` and ``variance`` (unbiased, over n - 1) of the n differences so far. Wald's
bounds: accept H1 ("better by at least the margin") when LLR >= log((1 - beta) / alpha), accept H0 ("not better
by the margin") when LLR <= log(beta / (1 - alpha)). Then P(better | true difference <= 0) <= alpha and
P(not better | true difference >= margin) <= beta, up to the normal approximation, which on means of several
places is good (tests/test_sprt.py and bench/rating.py measure the error rates on simulated and played streams).
No verdict before :data:`MIN_SAMPLES` differences: the variance of a handful is too rough to stake a verdict on
(measured on 1,000 simulated streams of identical bots: "better" in 7.0% with a minimum of 10 and the variance over
n, 5.6% with a minimum of 20 and the variance over n - 1, for alpha = 5%).

Pure functions of the differences in schedule order, so the verdict never depends on the order in which parallel
matches finish.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["better", "not better", "undecided"]

ALPHA = 0.05
"""Default P(verdict "better" when NEW is not better)."""
BETA = 0.05
"""Default P(verdict "not better" when NEW is better by the margin)."""
MARGIN = 0.1
"""Default margin, in places per match: NEW finishing 0.1 of a place better on average (e.g. first instead of
second in one match of ten) is the smallest gain worth detecting."""
MIN_SAMPLES = 20
VARIANCE_FLOOR = 1e-4
"""Identical deterministic bots give differences of exactly 0, whose variance is 0: the floor keeps the LLR finite
(and very negative then: "not better" at once, which is right)."""
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Settings:
    alpha: float = ALPHA
    beta: float = BETA
    margin: float = MARGIN
    min_samples: int = MIN_SAMPLES

    def __post_init__(self) -> None:
        for key, rate in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0 < rate < 0.5:
                raise ValueError(f"{key}: expected an error rate above 0 and below 0.5, got {rate}")
        if not self.margin > 0:
            raise ValueError(f"margin: expected a positive difference in places, got {self.margin}")

    @property
    def lower(self) -> float:
        """Accept "not better" at or below this LLR."""
        return math.log(self.beta / (1 - self.alpha))

    @property
    def upper(self) -> float:
        """Accept "better" at or above this LLR."""
        return math.log((1 - self.beta) / self.alpha)


@dataclass(frozen=True)
class Status:
    """The test after ``samples`` differences."""

    samples: int
    mean: float
    """Estimated difference (places per match, positive: NEW better)."""
    low: float
    high: float
    """95% interval of the difference (normal approximation)."""
    llr: float
    lower: float
    upper: float
    verdict: Verdict

    def to_dict(self) -> dict[str, object]:
        return {"samples": self.samples, "difference": round(self.mean, 4),
                "interval_95": [round(self.low, 4), round(self.high, 4)], "llr": round(self.llr, 3),
                "bounds": [round(self.lower, 3), round(self.upper, 3)], "verdict": self.verdict}


def llr(n: int, total: float, total_sq: float, margin: float, mu0: float = 0.0) -> float:
    """The normal-approximation LLR of mean ``mu0 + margin`` against ``mu0`` for ``n`` samples summing to ``total``
    with squares summing to ``total_sq``."""
    if n == 0:
        return 0.0
    mean = total / n
    variance = max((total_sq - n * mean * mean) / max(n - 1, 1), VARIANCE_FLOOR)
    mu1 = mu0 + margin
    return n * (mu1 - mu0) * (2 * mean - mu0 - mu1) / (2 * variance)


class Running:
    """Sums of the differences so far; :meth:`status` is the test at this point."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.n = 0
        self.total = 0.0
        self.total_sq = 0.0

    def add(self, difference: float) -> None:
        self.n += 1
        self.total += difference
        self.total_sq += difference * difference

    def status(self) -> Status:
        s = self.settings
        n = self.n
        mean = self.total / n if n else 0.0
        variance = max(self.total_sq / n - mean * mean, 0.0) if n else 0.0
        half = Z95 * math.sqrt(variance * n / (n - 1) / n) if n > 1 else math.inf
        ratio = llr(n, self.total, self.total_sq, s.margin)
        verdict: Verdict = "undecided"
        if n >= s.min_samples:
            verdict = "better" if ratio >= s.upper else "not better" if ratio <= s.lower else "undecided"
        return Status(n, mean, mean - half, mean + half, ratio, s.lower, s.upper, verdict)


def first_verdict(differences: Iterable[float], settings: Settings = Settings(),
                  max_samples: int | None = None) -> Status:
    """Run the test over ``differences`` in order; the status where it first decides, or after the last one (or
    ``max_samples``) if it never does."""
    running = Running(settings)
    for difference in differences:
        running.add(difference)
        status = running.status()
        if status.verdict != "undecided" or running.n == max_samples:
            return status
    return running.status()


def paired_difference(new_places: Sequence[int], base_places: Sequence[int]) -> float:
    """One deal's difference: BASE's mean place minus NEW's over the deal's rotations (positive: NEW better)."""
    if len(new_places) != len(base_places) or not new_places:
        raise ValueError("a deal's difference needs the same number (>= 1) of NEW and BASE places")
    return (sum(base_places) - sum(new_places)) / len(new_places)
