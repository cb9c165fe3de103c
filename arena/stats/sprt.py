"""The statistics of ``arena test``: an exact sequential test on paired differences, and the estimate at its stop.

NEW and BASE play the same deals from the same seats against the same opponents (arena/run/abtest.py), so each deal
gives one number: BASE's mean place minus NEW's over the deal's matches (positive: NEW did better). The deals are
independent, and a difference can take only finitely many values: a multiple of 1 / (places per side), between
-(K - 1) and K - 1 at K seats. So the differences are a multinomial sample, and the test is the exact generalized
SPRT on it, as fastchess runs on chess game pairs (pentanomial counts) and Fishtest offers in ``LLRcalc``:

    LLR = log  max { likelihood of the counts : distributions with mean ``margin`` }
             - log  max { likelihood of the counts : distributions with mean 0 }

each maximum taken over every distribution on the possible values (Van den Bergh, "Comments on normalized Elo",
proposition 1.1: the maximiser is p_i = phat_i / (1 + theta (a_i - mean)), theta the root of one monotone
equation). Two bounds decide: "better" at LLR >= log(1 / alpha), "not better" at LLR <= log(beta), the bounds
under which Wald's inequality holds the error rates to alpha and beta (his usual log((1 - beta) / alpha) and
log(beta / (1 - alpha)) only approximately: 5.08% false "better" heads-up at alpha 5%). No normal approximation and no variance estimate, so no minimum of deals: the earlier test here
(normal approximation, variance from the data) needed a floor of 20 deals and still said "better" of identical
bots 5.6% of the time at alpha 5%. bench/sprt.py measures the error rates of this one on 4,000 tests per cell.
The two extreme values, if unseen, get a count of 1e-3 (fastchess's regularisation), so a mean of ``margin`` is
always reachable and every LLR finite: identical deterministic bots (every difference 0) end "not better".

A test that stops on a bound stopped on a lucky or unlucky run, so the plain mean of the differences at the stop
leans outward. :func:`estimate` gives the stopping-aware one, as Fishtest's analytics do: the LLR is modelled as a
Brownian motion whose drift and spread under a true difference ``s`` come from the data tilted to mean ``s``,
clamped to the bound it crossed, and the estimate and its 95% interval are the ``s`` at which the observed outcome
is the median and the 2.5% / 97.5% point of the test's outcomes (ordered from an early "not better" to an early
"better"). That model is poor for a short test on a few discrete values (heads-up, most deals exactly 0), so the
interval printed is the hull of it and a plain 99% one around the mean (:func:`estimate`).

Pure functions of the differences in schedule order, so the verdict never depends on the order in which parallel
matches finish.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["better", "not better", "undecided"]

ALPHA = 0.05
"""Default P(verdict "better" when NEW is not better)."""
BETA = 0.05
"""Default P(verdict "not better" when NEW is better by the margin)."""
MARGIN = 0.1
"""A gain of 0.1 of a place per match (e.g. first instead of second in one match of ten) against the field: the
smallest gain worth detecting. arena/run/abtest.py scales it per pairing."""
REGULARISE = 1e-3
"""The count given to an unseen extreme value (fastchess's)."""
Z95 = 1.959963984540054
Z_PLAIN = 2.5758293035489004
"""Standard errors either side of the mean in the plain half of the printed interval (:func:`estimate`): a 99%
one, because it only has to hold where the stopping-aware half misses, in tests that stopped on a lucky run; at
1.96 the hull held 92.1% at half the margin in bench/sprt.py's sparse heads-up cell, at 2.58 96.9-99.3% in every
cell."""


@dataclass(frozen=True)
class Settings:
    alpha: float = ALPHA
    beta: float = BETA
    margin: float = MARGIN

    def __post_init__(self) -> None:
        for key, rate in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0 < rate < 0.5:
                raise ValueError(f"{key}: expected an error rate above 0 and below 0.5, got {rate}")
        if not self.margin > 0:
            raise ValueError(f"margin: expected a positive difference in places, got {self.margin}")

    @property
    def lower(self) -> float:
        """Accept "not better" at or below this LLR: log(beta), a bound whose error rate Wald's inequality holds
        at most beta (his approximate log(beta / (1 - alpha)) promises only about beta)."""
        return math.log(self.beta)

    @property
    def upper(self) -> float:
        """Accept "better" at or above this LLR: log(1 / alpha), at most alpha by the same inequality."""
        return math.log(1 / self.alpha)

    def decide(self, ratio: float) -> Verdict:
        return "better" if ratio >= self.upper else "not better" if ratio <= self.lower else "undecided"


@dataclass(frozen=True)
class Estimate:
    """The difference (places per match, positive: NEW better) and its 95% interval."""

    difference: float
    low: float
    high: float


@dataclass(frozen=True)
class Status:
    """The test after ``samples`` deals."""

    samples: int
    llr: float
    lower: float
    upper: float
    verdict: Verdict
    mean: float
    """The plain mean of the differences (leans outward at a stop: report :attr:`estimate`)."""
    estimate: Estimate | None
    """Stopping-aware (None before the first deal)."""

    def to_dict(self) -> dict[str, object]:
        found = self.estimate
        return {"deals": self.samples, "verdict": self.verdict,
                "difference": None if found is None else round(found.difference, 4),
                "interval_95": None if found is None else [round(found.low, 4), round(found.high, 4)],
                "mean_difference": round(self.mean, 4), "llr": round(self.llr, 3),
                "bounds": [round(self.lower, 3), round(self.upper, 3)]}


Support = tuple[Sequence[float], Sequence[float]]
"""Values and their counts (regularised extremes included)."""


def support(counts: Mapping[float, float], bound: float) -> Support:
    """The values seen with their counts, plus -``bound`` and ``bound`` with :data:`REGULARISE` if unseen."""
    merged = dict(counts)
    for extreme in (-bound, bound):
        if merged.get(extreme, 0) <= 0:
            merged[extreme] = REGULARISE
    values = sorted(merged)
    return values, [merged[value] for value in values]


def tilt(values: Sequence[float], weights: Sequence[float], mean: float, start: float = 0.0) -> float:
    """theta of the most likely distribution with this ``mean`` given these counts: the root of
    sum w_i (a_i - mean) / (1 + theta (a_i - mean)) = 0, which falls in theta; by Newton's method kept inside
    the bracket where every 1 + theta (a_i - mean) > 0 (bisection when a step leaves it)."""
    low = -1 / (values[-1] - mean)
    high = -1 / (values[0] - mean)
    theta = start if low < start < high else 0.0
    for _ in range(200):
        value = slope = 0.0
        for a, w in zip(values, weights):
            d = a - mean
            q = d / (1 + theta * d)
            value += w * q
            slope -= w * q * q
        if value == 0:
            return theta
        if value > 0:
            low = theta
        else:
            high = theta
        step = theta - value / slope if slope < 0 else math.nan
        if not low < step < high:
            step = (low + high) / 2
        if abs(step - theta) <= 1e-13 * max(1.0, abs(theta)):
            return step
        theta = step
    return theta


def log_ratios(values: Sequence[float], weights: Sequence[float], margin: float,
               start: tuple[float, float] = (0.0, 0.0)) -> tuple[list[float], tuple[float, float]]:
    """log(p1_i / p0_i) per value (p0 the most likely distribution with mean 0, p1 with mean ``margin``), and the
    two thetas (to start from next time)."""
    theta0 = tilt(values, weights, 0.0, start[0])
    theta1 = tilt(values, weights, margin, start[1])
    return [math.log((1 + theta0 * a) / (1 + theta1 * (a - margin))) for a in values], (theta0, theta1)


def llr(counts: Mapping[float, float], bound: float, margin: float) -> float:
    """The exact GSPRT log-likelihood ratio of mean ``margin`` against mean 0, for ``counts`` of differences that
    lie in [-``bound``, ``bound``]."""
    if not counts:
        return 0.0
    values, weights = support(counts, bound)
    ratios, _ = log_ratios(values, weights, margin)
    return sum(w * r for w, r in zip(weights, ratios))


class Running:
    """Counts of the differences so far; :meth:`status` is the test at this point. ``bound``: the largest
    difference possible (K - 1 at K seats)."""

    def __init__(self, settings: Settings, bound: float) -> None:
        if not 0 < settings.margin < bound:
            raise ValueError(f"margin: expected a difference in places above 0 and below {bound}, "
                             f"got {settings.margin}")
        self.settings = settings
        self.bound = bound
        self.counts: dict[float, int] = {}
        self.n = 0
        self.total = 0.0
        self.llr = 0.0
        self._thetas = (0.0, 0.0)

    def add(self, difference: float) -> Verdict:
        """Count one deal's difference; the verdict now."""
        if abs(difference) > self.bound + 1e-9:
            raise ValueError(f"a difference of {difference} places is beyond the possible {self.bound}")
        key = round(difference, 9)  # the same multiple of 1 / places whatever the float rounding
        self.counts[key] = self.counts.get(key, 0) + 1
        self.n += 1
        self.total += difference
        values, weights = support(self.counts, self.bound)
        ratios, self._thetas = log_ratios(values, weights, self.settings.margin, self._thetas)
        self.llr = sum(w * r for w, r in zip(weights, ratios))
        return self.verdict

    @property
    def verdict(self) -> Verdict:
        return self.settings.decide(self.llr) if self.n else "undecided"

    def status(self) -> Status:
        s = self.settings
        found = estimate(self.counts, self.bound, s, self.llr) if self.n else None
        return Status(self.n, self.llr, s.lower, s.upper, self.verdict, self.total / self.n if self.n else 0.0,
                      found)


def first_verdict(differences: Iterable[float], settings: Settings, bound: float,
                  max_samples: int | None = None) -> Status:
    """Run the test over ``differences`` in order; the status where it first decides, or after the last one (or
    ``max_samples``) if it never does."""
    running = Running(settings, bound)
    for difference in differences:
        if running.add(difference) != "undecided" or running.n == max_samples:
            break
    return running.status()


def paired_difference(new_places: Sequence[int], base_places: Sequence[int]) -> float:
    """One deal's difference: BASE's mean place minus NEW's over the deal's rotations (positive: NEW better)."""
    if len(new_places) != len(base_places) or not new_places:
        raise ValueError("a deal's difference needs the same number (>= 1) of NEW and BASE places")
    return (sum(base_places) - sum(new_places)) / len(new_places)


# The stopping-aware estimate.

def estimate(counts: Mapping[float, float], bound: float, settings: Settings, ratio: float) -> Estimate:
    """The median-unbiased difference and the 95% interval printed at the stop: the hull of
    :func:`stopping_aware`'s interval and the plain one, mean +- :data:`Z_PLAIN` standard errors.

    Why both: the stopping-aware interval models the LLR as a Brownian motion, which a short test on a few
    discrete values (heads-up: most deals a difference of exactly 0, a stop after 30-60 deals) is not; it covered a
    true difference of 0 only 80.7-86.1% of the time in the audit, and 85-91% in bench/sprt.py's heads-up cells. The
    plain interval ignores the stop and under-covers where the other over-covers (at the margin). Each is short on
    one side of the truth at a time, so their hull holds the truth at least 95% in every cell bench/sprt.py measures
    (96.9-99.3% over heads-up, table and field pairings at the null, half the margin and the margin: docs/RATINGS.md
    has the numbers)."""
    return widen(stopping_aware(counts, bound, settings, ratio), counts, bound)


def widen(aware: Estimate, counts: Mapping[float, float], bound: float, z: float = Z_PLAIN) -> Estimate:
    """``aware``'s interval widened to hold mean +- ``z`` standard errors of the ``counts`` (kept in the range)."""
    n = sum(counts.values())
    if n < 2:
        return aware
    mean = sum(value * count for value, count in counts.items()) / n
    variance = sum(count * (value - mean) ** 2 for value, count in counts.items()) / (n - 1)
    half = z * math.sqrt(variance / n)
    return Estimate(aware.difference, max(-bound, min(aware.low, mean - half)),
                    min(bound, max(aware.high, mean + half)))


def stopping_aware(counts: Mapping[float, float], bound: float, settings: Settings, ratio: float) -> Estimate:
    """The median-unbiased difference and its stopping-aware 95% interval given the test's outcome: the LLR
    ``ratio`` after ``sum(counts)`` deals, a verdict if it is past a bound (a test stopped by its rule), else a test
    cut short there (the cap, or an interruption)."""
    n = sum(counts.values())
    seen = [value for value, count in counts.items() if count > 0]
    if len(seen) == 1:
        # Every deal the same (identical deterministic bots; one bot always winning): nothing varies, so no motion
        # to model. The interval is the exact worst case instead: other values in a share q of deals, q the largest
        # for which n deals without one have a chance of 2.5%, all at the far end of the range.
        value, share = seen[0], 1 - 0.025 ** (1 / n)
        return Estimate(value, value - share * (value + bound), value + share * (bound - value))
    values, weights = support(counts, bound)
    fitted, _ = log_ratios(values, weights, settings.margin)
    # The motion's drift and spread come from the values seen only: a regularised extreme, given mass by a tilt,
    # would swamp them with its extreme log-ratio (it is there to keep the LLR finite, not to be a value).
    ratio_of = dict(zip(values, fitted))
    values = sorted(seen)
    ratios = [ratio_of[value] for value in values]
    total = sum(counts[value] for value in values)
    shares = [counts[value] / total for value in values]
    a, b = settings.lower, settings.upper
    time, at = float(n), ratio
    if ratio >= b or ratio <= a:
        # clamp the overshoot: the bound crossed, at the time the average slope would have reached it
        at = b if ratio >= b else a
        time = n * at / ratio

    def worse(s: float) -> float:
        """P(an outcome no better than the observed one | true difference s)."""
        theta = tilt(values, shares, s)
        p = [share / (1 + theta * (value - s)) for share, value in zip(shares, values)]
        drift = sum(pi * r for pi, r in zip(p, ratios))
        spread = sum(pi * (r - drift) ** 2 for pi, r in zip(p, ratios))
        return outcome_cdf(time, at, drift, max(spread, 1e-12), a, b)

    mean = sum(value * share for value, share in zip(values, shares))
    se = math.sqrt(sum(share * (value - mean) ** 2 for value, share in zip(values, shares)) / n)
    inset = (values[-1] - values[0]) * 1e-9
    whole = (values[0] + inset, values[-1] - inset)
    # look near the data first: tilts far out are slow to solve and the answer is never there
    near = (max(whole[0], mean - 10 * se - 2 * settings.margin),
            min(whole[1], mean + 10 * se + 2 * settings.margin))
    return Estimate(*(_solve(worse, target, near, whole) for target in (0.5, 0.975, 0.025)))


def _solve(f: Callable[[float], float], target: float, near: tuple[float, float], whole: tuple[float, float]) -> float:
    """The s with f(s) = target, f decreasing: in ``near`` if it is there, else in ``whole``, else the end of
    ``whole`` that f stays beyond. Regula falsi with the Illinois step, which keeps the bracket of bisection and
    converges in a few evaluations on a smooth f."""
    low, high = near
    f_low, f_high = f(low) - target, f(high) - target
    if f_low <= 0:
        low, high, f_high = whole[0], low, f_low
        f_low = f(low) - target
        if f_low <= 0:
            return low
    elif f_high >= 0:
        low, high, f_low = high, whole[1], f_high
        f_high = f(high) - target
        if f_high >= 0:
            return high
    side = 0
    for _ in range(100):
        middle = (low * f_high - high * f_low) / (f_high - f_low)
        if not low < middle < high:
            middle = (low + high) / 2
        f_middle = f(middle) - target
        if f_middle > 0:
            low, f_low = middle, f_middle
            if side == 1:
                f_high /= 2
            side = 1
        else:
            high, f_high = middle, f_middle
            if side == -1:
                f_low /= 2
            side = -1
        if high - low < 1e-6 or abs(f_middle) < 1e-9:
            return middle
    return (low + high) / 2


def outcome_cdf(time: float, at: float, drift: float, variance: float, a: float, b: float) -> float:
    """P(a Brownian motion from 0 with this drift and variance per unit time, stopped on leaving (a, b), ends no
    better than at ``at`` at ``time``): it leaves by ``a`` before ``time``, or is still inside then below ``at``
    (``at`` = b: anything but leaving by b before ``time``).

    Shifted to (0, A), A = b - a, from x = -a: the density still inside is a sum of images of the free density,
    and each image's mass over an interval is a difference of normal tail probabilities, taken in logs so that
    a strong drift neither overflows nor loses the small terms. Leaving by 0 before ``time`` is leaving by 0 at
    all, less leaving by 0 after ``time`` from where it is then (the gambler's ruin probability h(u))."""
    width, x = b - a, -a
    gamma = drift / variance
    if abs(gamma * width) < 1e-6:  # no drift: the formulas divide by it; this close they agree to 1e-6
        gamma = math.copysign(1e-6, gamma if gamma else 1.0) / width
        drift = gamma * variance
    sd = math.sqrt(variance * time)

    def mass(beta: float, top: float, shift: float = 0.0) -> float:
        """Integral over (0, top) of density(u) * exp(beta u) * exp(shift)."""
        rate = gamma + beta
        move = rate * variance * time
        total = 0.0
        for start, sign in ((x, 1.0), (-x, -1.0)):
            # only the images whose shifted centre lies within 12 sd of (0, top) carry any mass
            first = math.ceil((-12 * sd - move - start) / (2 * width))
            last = math.floor((top + 12 * sd - move - start) / (2 * width))
            for k in range(first, last + 1):
                centre = start + 2 * k * width
                weight = (-gamma * x - drift * drift * time / (2 * variance) + rate * centre
                          + rate * rate * variance * time / 2 + shift)
                inside = _log_normal_mass((0 - centre - move) / sd, (top - centre - move) / sd)
                if inside > -math.inf:
                    total += sign * math.exp(min(weight + inside, 700.0))
        return total

    below = mass(0.0, at - a)
    alive = mass(0.0, width)
    if gamma > 0:  # h(u) = (e^{-2 gamma u} - e^{-2 gamma A}) / (1 - e^{-2 gamma A})
        scale = -math.expm1(-2 * gamma * width)
        ever = (math.expm1(-2 * gamma * x) - math.expm1(-2 * gamma * width)) / scale
        later = (mass(-2 * gamma, width) - alive - math.expm1(-2 * gamma * width) * alive) / scale
    else:  # the same times e^{2 gamma A} / e^{2 gamma A}, which stays finite for a strong negative drift
        scale = math.expm1(2 * gamma * width)
        ever = math.expm1(2 * gamma * (width - x)) / scale
        later = (mass(-2 * gamma, width, 2 * gamma * width) - alive) / scale
    return min(1.0, max(0.0, ever - later + below))


def _log_upper_tail(z: float) -> float:
    """log P(Z > z), Z standard normal; asymptotic far out where erfc underflows."""
    if z < 30:
        return math.log(0.5 * math.erfc(z / math.sqrt(2)))
    return -z * z / 2 - math.log(z * math.sqrt(2 * math.pi)) + math.log1p(-1 / (z * z) + 3 / z ** 4)


def _log_normal_mass(z1: float, z2: float) -> float:
    """log P(z1 < Z < z2)."""
    if z2 <= z1:
        return -math.inf
    if z1 > 0:
        return _log_upper_tail(z1) + _log1mexp(_log_upper_tail(z2) - _log_upper_tail(z1))
    if z2 < 0:
        return _log_upper_tail(-z2) + _log1mexp(_log_upper_tail(-z1) - _log_upper_tail(-z2))
    return math.log(max(1 - math.exp(_log_upper_tail(-z1)) - math.exp(_log_upper_tail(z2)), 1e-300))


def _log1mexp(x: float) -> float:
    """log(1 - e^x) for x <= 0."""
    if x >= 0:
        return -math.inf
    return math.log(-math.expm1(x)) if x > -0.693 else math.log1p(-math.exp(x))
