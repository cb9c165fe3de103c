"""How sure the standings are: each bot's 95% rank interval and, for every pair, P(one is truly above the other).

Pure functions over the stored outcomes (bot, duplicate group, place). The statistic is a bot's mean place; the
uncertainty comes from a bootstrap that resamples whole groups (a duplicate deal's seat rotations, see
arena/schedule.py), never single matches, so that the pairing that cancels the luck of the deal is kept: a group's
rotations share cards, and resampling them one by one would count that shared luck as independent evidence and
give intervals that are too narrow. Groups of independent deals are resampled whole too (their bots met each
other), which is honest for either design.

docs/RATINGS.md says what the numbers mean and bench/rating.py measures them (coverage of the intervals, and the
number of matches until the order is right) on a ladder of bots of known order.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import mul, sub

LEVEL = 0.95
RESAMPLES = 400
"""Enough for stable 2.5% and 97.5% quantiles of a handful of ranks; 10,000 matches take under a second."""


_PACK = 40  # bits for a match count within a packed (place sum, match count) pair
_MASK = (1 << _PACK) - 1


@dataclass(frozen=True)
class GroupPlace:
    """One bot's outcome in one finished match."""

    group: int
    bot: int
    place: int


@dataclass(frozen=True)
class BotConfidence:
    bot: int
    mean_place: float
    matches: int
    rank_low: int
    """Best rank in the interval (1 is first)."""
    rank_high: int
    """Worst rank in the interval."""


@dataclass(frozen=True)
class Confidence:
    """Bots best first (by mean place), their rank intervals, and P(a above b) for every ordered pair."""

    bots: tuple[BotConfidence, ...]
    p_above: Mapping[tuple[int, int], float]
    level: float
    resamples: int

    def line(self, bot: int) -> BotConfidence:
        return next(line for line in self.bots if line.bot == bot)

    def shared_ranks(self, order: Sequence[int] | None = None) -> dict[int, str]:
        """Rank labels for the bots in ``order`` (default: by mean place): a run of neighbours whose order is not
        settled at :attr:`level` (P(above the next) below it) shares the rank of its first bot, as ``"2="``."""
        order = self.order() if order is None else list(order)
        labels: dict[int, str] = {}
        start = 0
        for position, bot in enumerate(order):
            if position and self.p_above[(order[position - 1], bot)] < self.level:
                labels[order[position - 1]] = labels[bot] = f"{start + 1}="
            else:
                start = position
                labels[bot] = str(position + 1)
        return labels

    def p_above_next(self, order: Sequence[int] | None = None) -> dict[int, float | None]:
        """For each bot, P(it is truly above the bot after it in ``order``); None for the last."""
        order = self.order() if order is None else list(order)
        return {bot: self.p_above[(bot, order[i + 1])] if i + 1 < len(order) else None
                for i, bot in enumerate(order)}

    def order(self) -> list[int]:
        return [line.bot for line in self.bots]


def confidence(results: Iterable[GroupPlace], bots: Sequence[int] | None = None, resamples: int = RESAMPLES,
               level: float = LEVEL, seed: int = 0) -> Confidence:
    """Bootstrap the mean places over whole groups. ``bots`` lists every bot to rank (default: those in
    ``results``); a bot without results ranks last with an interval covering every rank from its neighbours'."""
    place_sum: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    played: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    groups: set[int] = set()
    for result in results:
        place_sum[result.bot][result.group] += result.place
        played[result.bot][result.group] += 1
        groups.add(result.group)
    ids = list(bots) if bots is not None else sorted(played)
    measured = [bot for bot in ids if played.get(bot)]
    # Groups with the same outcome (the same bots with the same place sums and match counts) are interchangeable:
    # a resample's weight for such a kind of group is the sum of its groups' weights. Summing per kind first makes
    # the per-bot sums run over a few hundred kinds instead of thousands of groups, with the same distribution.
    kinds: dict[tuple[tuple[int, int], ...], list[int]] = defaultdict(list)
    for group in sorted(groups):
        outcome = tuple(sorted((bot, place_sum[bot][group] << _PACK | played[bot][group])
                               for bot in measured if group in played[bot]))
        kinds[outcome].append(group)
    starts: list[int] = []
    ends: list[int] = []
    for members in kinds.values():
        starts.append(ends[-1] if ends else 0)
        ends.append(starts[-1] + len(members))
    # Per bot, the kinds it appears in and its packed (place sum, match count) in them, aligned; packing lets one
    # pass sum both.
    columns: dict[int, tuple[list[int], list[int]]] = {bot: ([], []) for bot in measured}
    for kind, outcome in enumerate(kinds):
        for bot, value in outcome:
            columns[bot][0].append(kind)
            columns[bot][1].append(value)
    matches = {bot: sum(played[bot].values()) for bot in measured}
    estimate = {bot: sum(place_sum[bot].values()) / matches[bot] for bot in measured}
    rng = random.Random(seed)
    low_ranks: dict[int, list[int]] = {bot: [] for bot in measured}
    high_ranks: dict[int, list[int]] = {bot: [] for bot in measured}
    above: Counter[tuple[int, int]] = Counter()
    for _ in range(resamples if measured else 0):
        # Each kind's weight, the sum of its groups' (they are consecutive): differences of running totals, with
        # every loop in C.
        totals = [0, *accumulate(_poisson_weights(rng, len(groups)))]
        counts = list(map(sub, map(totals.__getitem__, ends), map(totals.__getitem__, starts)))
        stat: dict[int, float] = {}
        for bot, (its_kinds, packed) in columns.items():
            total = sum(map(mul, map(counts.__getitem__, its_kinds), packed))
            n = total & _MASK
            # A bot none of whose groups was drawn says nothing in this resample: it keeps its own estimate.
            stat[bot] = (total >> _PACK) / n if n else estimate[bot]
        ordered = sorted(stat.values())
        for bot, mean in stat.items():
            # Rank 1 + the bots strictly better; with ties, the worst rank is counted for the upper end.
            low_ranks[bot].append(bisect_left(ordered, mean) + 1)
            high_ranks[bot].append(bisect_right(ordered, mean))
        for a in measured:
            for b in measured:
                if a != b:
                    # Lower mean place is better; an exact tie counts half each way.
                    above[(a, b)] += 2 if stat[a] < stat[b] else 1 if stat[a] == stat[b] else 0
    order = sorted(measured, key=lambda bot: (estimate[bot], ids.index(bot)))
    unmeasured = [bot for bot in ids if bot not in estimate]
    tail = (1 - level) / 2
    lines = [BotConfidence(bot, estimate[bot], matches[bot], _quantile(low_ranks[bot], tail),
                           _quantile(high_ranks[bot], 1 - tail)) for bot in order]
    lines += [BotConfidence(bot, float("nan"), 0, len(measured) + 1, len(ids)) for bot in unmeasured]
    p_above: dict[tuple[int, int], float] = {}
    for a in ids:
        for b in ids:
            if a == b:
                continue
            if a in estimate and b in estimate:
                p_above[(a, b)] = above[(a, b)] / (2 * resamples)
            else:  # nothing is known of an unmeasured bot: measured ones rank above it, but not with confidence
                p_above[(a, b)] = 0.5
    return Confidence(tuple(lines), p_above, level, resamples)


def _poisson_table(bits: int = 16) -> list[int]:
    """Poisson(1) by inverse CDF over a ``bits``-bit uniform number: entry u is the count for u."""
    table: list[int] = []
    k, cdf, term = 0, math.exp(-1.0), math.exp(-1.0)
    for u in range(1 << bits):
        while (u + 0.5) / (1 << bits) > cdf:
            k += 1
            term /= k
            cdf += term
        table.append(k)
    return table


_POISSON = _poisson_table()


def _poisson_weights(rng: random.Random, n: int) -> list[int]:
    """``n`` independent Poisson(1) counts: the Poisson bootstrap's weights. Drawing n groups with replacement
    gives multinomial counts that are nearly these; these come from one call for random bytes and a table look-up,
    which is what makes 10,000 matches take about a second in pure Python."""
    return list(map(_POISSON.__getitem__, memoryview(rng.randbytes(2 * n)).cast("H")))


def _quantile(values: list[int], q: float) -> int:
    """The ``q`` quantile of ``values`` by nearest rank, taken outwards (an interval must not come out short)."""
    ordered = sorted(values)
    outside = max(0, math.ceil(min(q, 1 - q) * len(ordered)) - 1)
    return ordered[outside] if q < 0.5 else ordered[len(ordered) - 1 - outside]
