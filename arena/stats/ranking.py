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
random choice at all); arena/stats/confidence.py resamples it for the rank intervals, and bench/rating.py measures it.
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
VECTOR_SEATS = 1000
"""From this many seats (250 matches of four seats) on, they are counted into pairs on numpy arrays
(:func:`pair_arrays`); below, the plain loop costs less than importing numpy."""

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


def seat_comparisons(match: Any, bot: Any, place: Any) -> tuple[Any, Any, Any, Any]:
    """:func:`pair_counts`' comparisons, one by one, on numpy arrays: seats as parallel arrays (each match's seats
    together, in their order; ``bot`` an index from 0, -1 for a seat to leave out) in, and for every two seats of
    a match, an earlier with a later one, never a bot with itself: the earlier seat's position, the lower and the
    higher bot, and twice the lower bot's wins (2, 1 for a tie, 0)."""
    import numpy as np

    parts: list[tuple[Any, ...]] = []
    for offset in range(1, len(match)):  # seat i against seat i + offset of the same match, for every i at once
        same = match[:-offset] == match[offset:]
        if not same.any():
            break
        x, y, px, py = bot[:-offset], bot[offset:], place[:-offset], place[offset:]
        keep = same & (x >= 0) & (y >= 0) & (x != y)
        x, y, px, py = x[keep], y[keep], px[keep], py[keep]
        low_place, high_place = np.where(x < y, px, py), np.where(x < y, py, px)
        parts.append((np.flatnonzero(keep), np.minimum(x, y), np.maximum(x, y), np.sign(high_place - low_place) + 1))
    empty = np.zeros(0, np.int64)
    seat, low, high, twice_won = (np.concatenate([empty, *(part[column] for part in parts)]) for column in range(4))
    return seat, low, high, twice_won


def pair_arrays(match: Any, bot: Any, place: Any, size: int) -> tuple[Any, Any, Any, Any]:
    """:func:`pair_counts` on numpy arrays (seats as :func:`seat_comparisons` takes them, bots 0..size-1): each
    pair that met as (first, second, first's wins, comparisons), arrays in order of (first, second)."""
    import numpy as np

    _, low, high, twice_won = seat_comparisons(match, bot, place)
    width = max(size, 1)
    pairs, pair_of = np.unique(low * width + high, return_inverse=True)
    return (pairs // width, pairs % width, np.bincount(pair_of, twice_won, len(pairs)) / 2,
            np.bincount(pair_of, None, len(pairs)).astype(np.int64))


def fit_seats(match: Sequence[int], bot: Sequence[int], place: Sequence[int], bots: Sequence[int],
              start: Mapping[int, float] | None = None) -> dict[int, float]:
    """:func:`strengths` of seats given as parallel columns (each match's seats together, as a store reads them),
    ``start`` as :func:`fit`'s: from :data:`VECTOR_SEATS` seats on the comparisons are counted on numpy arrays, a
    pass in C where :func:`pair_counts` takes a few microseconds a seat."""
    if len(match) < VECTOR_SEATS:
        seats: dict[int, list[tuple[int, int]]] = defaultdict(list)
        ranked = set(bots)  # a seat of any other bot is left out, as the arrays' -1 is
        for match_id, bot_id, bot_place in zip(match, bot, place):
            if bot_id in ranked:
                seats[match_id].append((bot_id, bot_place))
        return fit(bots, pair_counts(seats.values()), start)
    import numpy as np

    index = {bot_id: i for i, bot_id in enumerate(bots)}
    first, second, wins, n = pair_arrays(np.asarray(match, np.int64), np.fromiter(
        (index.get(bot_id, -1) for bot_id in bot), np.int64, len(bot)), np.asarray(place, np.int64), len(bots))
    return dict(zip(bots, fit_indexed(len(bots), first.tolist(), second.tolist(), wins.tolist(), n.astype(float).tolist(),
                                      [start.get(bot_id, 0.0) for bot_id in bots] if start else None)))


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
    return VectorPairs(size, first, second).fit(wins, n, start, tolerance, max_iterations)


class VectorPairs:
    """The pairs of :func:`fit_vector`, sorted and indexed once: a bootstrap fits the same pairs with other
    counts hundreds of times, and sorting them again for each fit would cost as much as a few of its steps."""

    def __init__(self, size: int, first: Sequence[int] | Any, second: Sequence[int] | Any) -> None:
        import numpy as np

        self.size = size
        a = np.asarray(first, dtype=np.intp)
        b = np.asarray(second, dtype=np.intp)
        # The steps want the pairs in order of their first bot.
        self.order = np.argsort(a, kind="stable") if len(a) and bool((a[1:] < a[:-1]).any()) else None
        self.a, self.b = (a, b) if self.order is None else (a[self.order], b[self.order])
        # With the pairs in order of their first bot, its side of a step is a repeat and a sum over runs: cheaper
        # in numpy than the gather and the weighted count the second bot's side needs.
        self.firsts, self.runs = np.unique(self.a, return_counts=True)
        self.run_starts = np.cumsum(self.runs) - self.runs

    def fit(self, wins: Sequence[float] | Any, n: Sequence[float] | Any, start: Sequence[float] | Any | None = None,
            tolerance: float = TOLERANCE, max_iterations: int = MAX_ITERATIONS) -> Any:
        """:func:`fit_vector` of these pairs with these counts (in the order the pairs were given)."""
        import numpy as np

        size, a, b, firsts, runs, run_starts = self.size, self.a, self.b, self.firsts, self.runs, self.run_starts
        count = np.asarray(n, dtype=float)
        won_by_first = np.asarray(wins, dtype=float)
        if self.order is not None:
            count, won_by_first = count[self.order], won_by_first[self.order]
        # The first bot's side summed over its runs: the same sums as bincount's for whole and half comparisons
        # (what arena counts), which floating point adds exactly in any order.
        won_first, met_first = np.zeros(size), np.zeros(size)
        if len(a):
            won_first[firsts] = np.add.reduceat(won_by_first, run_starts)
            met_first[firsts] = np.add.reduceat(count, run_starts)
        met_second = np.bincount(b, count, size)
        won = PRIOR + won_first + (met_second - np.bincount(b, won_by_first, size))
        played = (met_first + met_second) > 0
        theta = np.zeros(size) if start is None or len(start) == 0 else np.array(start, dtype=float)

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
