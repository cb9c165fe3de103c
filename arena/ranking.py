"""The standings' order: a Plackett-Luce strength for every bot, fitted to the places of every match at once.

Under Plackett-Luce each bot has a strength g, and a match's places are drawn by picking the winner with
probability proportional to g among the seats, then second among the rest, and so on. A property of the model is
that, whoever else sits at the table, bot a places above bot b with probability g_a / (g_a + g_b). The fit uses
exactly these marginals: every pair of seats in a match is one comparison (a tie counts half each way), and the
strengths maximise the product of the pairwise probabilities (a composite likelihood; "full rank breaking",
Azari Soufiani, Parkes and Xia 2014, consistent for Plackett-Luce), by Hunter's (2004) MM iteration for
Bradley-Terry. Two reasons to fit the marginals rather than the full sequential likelihood: in a round-robin,
where every pair meets equally often, a bot's comparisons won are a linear function of its place sum, so the fit
orders exactly as mean place does when no places are tied (a tie is half a win each way here, while mean place
counts a tie for second as second for both; the full likelihood weighs a first place apart from a second and can
differ more);
and the cost of an iteration is one pass over the distinct pairs that met, linear in the matches, whatever the
number of bots. Over :data:`VECTOR_PAIRS` distinct pairs that pass is numpy's (:func:`fit_vector`: the same steps on arrays, equal to
the loop's to rounding: a field of a thousand bots has tens of thousands of pairs); below it, a loop in plain Python
costs less than importing numpy.

A bot that never lost (or never won) has no finite maximum, so every bot also plays one virtual win and one
virtual loss against a phantom of strength 1 (a small prior that fixes the scale too): a bot's strength is then
its log odds of placing above that phantom, 0 for an average bot of the prior. The fit is deterministic (no
random choice at all); arena/confidence.py resamples it for the rank intervals, and bench/rating.py measures it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

PRIOR = 1.0
"""Virtual wins (and as many losses) of every bot against the phantom of strength 1."""
TOLERANCE = 1e-9
"""The iteration stops when no log strength moves by more than this."""
MAX_ITERATIONS = 2000
VECTOR_PAIRS = 2000
"""From this many distinct pairs on, the fit's iterations run on numpy arrays (:func:`fit_vector`)."""

Pair = tuple[int, int]
"""Two bot ids, the smaller first."""


def pair_counts(matches: Iterable[Sequence[tuple[int, int]]]) -> dict[Pair, tuple[float, int]]:
    """(a, b) with a < b -> (comparisons a won, comparisons), over matches given as (bot, place) per seat. Equal
    places count half a win each way; a bot met twice in one match (never, in arena's schedules) is compared
    like any two seats."""
    counts: dict[Pair, list[float]] = defaultdict(lambda: [0.0, 0])
    for seats in matches:
        for i, (a, place_a) in enumerate(seats):
            for b, place_b in seats[i + 1:]:
                if a == b:
                    continue
                low, high, low_place, high_place = (a, b, place_a, place_b) if a < b else (b, a, place_b, place_a)
                entry = counts[(low, high)]
                entry[0] += 1.0 if low_place < high_place else 0.5 if low_place == high_place else 0.0
                entry[1] += 1
    return {pair: (wins, int(n)) for pair, (wins, n) in counts.items()}


def fit(bots: Sequence[int], pairs: Mapping[Pair, tuple[float, int]],
        start: Mapping[int, float] | None = None, tolerance: float = TOLERANCE,
        max_iterations: int = MAX_ITERATIONS) -> dict[int, float]:
    """Each bot's log strength. ``start`` (log strengths) warm-starts the iteration, which a bootstrap resample
    near the full data's fit needs only a few steps from. A bot in no pair keeps its ``start`` value (0 without)."""
    index = {bot: i for i, bot in enumerate(bots)}
    first = [index[a] for a, _ in pairs]
    second = [index[b] for _, b in pairs]
    n = [float(count) for _, count in pairs.values()]
    return dict(zip(bots, fit_indexed(len(bots), first, second, [wins for wins, _ in pairs.values()], n,
                                      [start.get(bot, 0.0) for bot in bots] if start else None,
                                      tolerance, max_iterations)))


def fit_indexed(size: int, first: Sequence[int], second: Sequence[int], wins: Sequence[float],
                n: Sequence[float], start: Sequence[float] | None = None, tolerance: float = TOLERANCE,
                max_iterations: int = MAX_ITERATIONS) -> list[float]:
    """:func:`fit` on bots 0..size-1 and pairs as parallel lists (first[k] vs second[k], n[k] comparisons of
    which first[k] won wins[k]): the form the bootstrap calls once per resample. On :data:`VECTOR_PAIRS` pairs
    or more it is :func:`fit_vector`'s."""
    if len(first) >= VECTOR_PAIRS:
        fitted: list[float] = fit_vector(size, first, second, wins, n, start, tolerance, max_iterations).tolist()
        return fitted
    return fit_loop(size, first, second, wins, n, start, tolerance, max_iterations)


def fit_loop(size: int, first: Sequence[int], second: Sequence[int], wins: Sequence[float],
             n: Sequence[float], start: Sequence[float] | None = None, tolerance: float = TOLERANCE,
             max_iterations: int = MAX_ITERATIONS) -> list[float]:
    """:func:`fit_indexed` in plain Python, whatever the size."""
    won = [PRIOR] * size
    met = [0.0] * size
    for a, b, w, count in zip(first, second, wins, n):
        won[a] += w
        won[b] += count - w
        met[a] += count
        met[b] += count
    theta = list(start) if start else [0.0] * size
    iterations = 0
    while iterations < max_iterations:
        # SQUAREM (Varadhan and Roland 2008): two MM steps give a direction and its curvature, the extrapolated
        # point gets one more MM step to steady it. About a third of the plain MM steps to the same tolerance.
        once = _mm_step(theta, won, met, first, second, n)
        twice = _mm_step(once, won, met, first, second, n)
        iterations += 3
        r = [b - a for a, b in zip(theta, once)]
        v = [c - 2 * b + a for a, b, c in zip(theta, once, twice)]
        r_norm = math.sqrt(sum(x * x for x in r))
        if r_norm <= tolerance:
            return twice
        v_norm = math.sqrt(sum(x * x for x in v))
        alpha = min(-r_norm / v_norm, -1.0) if v_norm else -1.0
        jump = [a - 2 * alpha * x + alpha * alpha * y for a, x, y in zip(theta, r, v)]
        if max(map(abs, jump)) > _FAR:  # an extrapolation gone wild: keep the two plain steps
            jump = twice
        updated = _mm_step(jump, won, met, first, second, n)
        moved = max((abs(new - old) for new, old in zip(updated, theta)), default=0.0)
        theta = updated
        if moved <= tolerance:
            break
    return theta


_FAR = 50.0
"""A log strength no fit reaches (the prior's virtual games keep them within a few dozen)."""


def _mm_step(theta: Sequence[float], won: Sequence[float], met: Sequence[float], first: Sequence[int],
             second: Sequence[int], n: Sequence[float]) -> list[float]:
    """One MM step on log strengths (Hunter 2004): g_i <- wins_i / sum over its comparisons of 1 / (g_i + g_j),
    the phantom's included; a bot without comparisons stays where it is."""
    strength = [math.exp(value) for value in theta]
    denominator = [2 * PRIOR / (g + 1.0) for g in strength]
    for a, b, count in zip(first, second, n):
        share = count / (strength[a] + strength[b])
        denominator[a] += share
        denominator[b] += share
    updated = [w / d for w, d in zip(won, denominator)]
    # The comparisons among bots say nothing of the scale, which only the weak prior pins: left to the MM steps it
    # would creep there over thousands of them. Move it at once towards its best value for the rest.
    scale = _best_scale([g for g, played in zip(updated, met) if played])
    return [math.log(g * scale) if played else old for g, played, old in zip(updated, met, theta)]


def fit_vector(size: int, first: Sequence[int] | Any, second: Sequence[int] | Any, wins: Sequence[float] | Any,
               n: Sequence[float] | Any, start: Sequence[float] | Any | None = None, tolerance: float = TOLERANCE,
               max_iterations: int = MAX_ITERATIONS) -> Any:
    """:func:`fit_loop`'s iteration, step for step, on numpy arrays (lists or arrays in, an array out): what a
    field of many pairs needs, each step being a handful of passes in C over the pairs."""
    import numpy as np

    a = np.asarray(first, dtype=np.intp)
    b = np.asarray(second, dtype=np.intp)
    count = np.asarray(n, dtype=float)
    won_by_first = np.asarray(wins, dtype=float)
    if len(a) and bool((a[1:] < a[:-1]).any()):  # the steps below want the pairs in order of their first bot
        order = np.argsort(a, kind="stable")
        a, b, count, won_by_first = a[order], b[order], count[order], won_by_first[order]
    won = PRIOR + np.bincount(a, won_by_first, size) + np.bincount(b, count - won_by_first, size)
    played = (np.bincount(a, count, size) + np.bincount(b, count, size)) > 0
    theta = np.zeros(size) if start is None or len(start) == 0 else np.array(start, dtype=float)
    # With the pairs in order of their first bot, its side of a step is a repeat and a sum over runs: cheaper
    # in numpy than the gather and the weighted count the second bot's side needs.
    firsts, runs = np.unique(a, return_counts=True)
    run_starts = np.cumsum(runs) - runs

    def step(theta: Any) -> Any:
        strength = np.exp(theta)
        share = count / (np.repeat(strength[firsts], runs) + strength[b])
        denominator = 2 * PRIOR / (strength + 1.0) + np.bincount(b, share, size)
        if len(share):
            denominator[firsts] += np.add.reduceat(share, run_starts)
        updated = won / denominator
        kept = updated[played]
        slope = float((2 * kept / (1 + kept) ** 2).sum())
        scale = math.exp(float(((1 - kept) / (1 + kept)).sum()) / slope) if slope else 1.0
        return np.where(played, np.log(updated * scale), theta)

    iterations = 0
    while iterations < max_iterations:
        once = step(theta)
        twice = step(once)
        iterations += 3
        r = once - theta
        v = twice - 2 * once + theta
        r_norm = math.sqrt(float(r @ r))
        if r_norm <= tolerance:
            theta = twice
            break
        v_norm = math.sqrt(float(v @ v))
        alpha = min(-r_norm / v_norm, -1.0) if v_norm else -1.0
        jump = theta - 2 * alpha * r + alpha * alpha * v
        if float(np.abs(jump).max(initial=0.0)) > _FAR:
            jump = twice
        updated = step(jump)
        moved = float(np.abs(updated - theta).max(initial=0.0))
        theta = updated
        if moved <= tolerance:
            break
    return theta


def _best_scale(strength: Sequence[float]) -> float:
    """One Newton step (on log c, from c = 1) towards the factor c maximising the prior's terms (a win and a loss
    against the phantom) over c x ``strength``, the root of sum (1 - c g) / (1 + c g); taken at every iteration,
    the steps converge with the rest."""
    value = slope = 0.0
    for g in strength:
        value += (1 - g) / (1 + g)
        slope += 2 * g / (1 + g) ** 2
    return math.exp(value / slope) if slope else 1.0


def strengths(matches: Iterable[Sequence[tuple[int, int]]], bots: Sequence[int]) -> dict[int, float]:
    """The log strength of each of ``bots``, fitted to the matches given as (bot, place) per seat; a bot
    without matches is at 0, the prior's average."""
    return fit(bots, pair_counts(matches))
