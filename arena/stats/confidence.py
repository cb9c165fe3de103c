"""How sure the standings are: each bot's 95% rank interval and, for every pair, P(one is truly above the other).

Pure functions over the stored outcomes (bot, duplicate group, match, place). The statistic is a bot's fitted
Plackett-Luce strength (arena/stats/ranking.py), which orders as mean place does in a round-robin and allows for the
opponents met in any other schedule; the uncertainty comes from a bootstrap that resamples whole groups (a duplicate deal's seat rotations, see
arena/schedule.py), never single matches, so that the pairing that cancels the luck of the deal is kept: a group's
rotations share cards, and resampling them one by one would count that shared luck as independent evidence and
give intervals that are too narrow. Groups of independent deals are resampled whole too (their bots met each
other), which is honest for either design.

docs/RATINGS.md says what the numbers mean and bench/rating.py measures them (coverage of the intervals, and the
number of matches until the order is right) on ladders of bots of known order. A resample costs one warm-started
fit, a pass over the distinct pairs that met per iteration; P(above) is counted only for the pairs asked for.
"""

from __future__ import annotations

import math
import random
import statistics
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, repeat
from operator import mul, sub
from statistics import NormalDist
from typing import Any, Literal

from arena.stats.ranking import VECTOR_SEATS, Pair, VectorPairs, fit_loop, pair_counts, seat_comparisons

LEVEL = 0.95
RESAMPLES = 400
"""Enough for stable 2.5% and 97.5% quantiles of a handful of ranks."""
MARGIN = 0.15
"""The stop rule's default margin (:class:`PairTest`): bots within a head-to-head share of 35-65% may be equal."""
VECTOR_BOTS = 24
"""From this many bots ranked, or :data:`~arena.stats.ranking.VECTOR_SEATS` results (250 matches of four seats), on, the
bootstrap runs on numpy arrays; below both the plain loop costs less than importing numpy."""
RESAMPLE_TOLERANCE = 1e-3
"""A resample's fit starts from the full data's and stops once no log strength moves by a thousandth in a step:
a hundredth of the spread between resamples even with thousands of matches."""


_PACK = 40  # bits for a match count within a packed (place sum, match count) pair
_MASK = (1 << _PACK) - 1


@dataclass(frozen=True)
class GroupPlace:
    """One bot's outcome in one finished match."""

    group: int
    bot: int
    place: int
    match: int
    """The match (any id unique within the tournament): its seats are one ranking for the fit."""


@dataclass(frozen=True)
class SeatColumns:
    """Outcomes as parallel columns, one entry a seat (each match's seats together): what a store reads in one
    query for both the fit and its bootstrap, without an object per seat (a field of a thousand bots has hundreds
    of thousands of them)."""

    group: Sequence[int]
    bot: Sequence[int]
    place: Sequence[int]
    match: Sequence[int]

    @classmethod
    def of(cls, results: Iterable[GroupPlace]) -> SeatColumns:
        results = results if isinstance(results, Sequence) else list(results)
        return cls([result.group for result in results], [result.bot for result in results],
                   [result.place for result in results], [result.match for result in results])

    def results(self) -> list[GroupPlace]:
        return list(map(GroupPlace, self.group, self.bot, self.place, self.match))

    def __len__(self) -> int:
        return len(self.bot)


@dataclass(frozen=True)
class BotConfidence:
    bot: int
    mean_place: float
    matches: int
    rank_low: int
    """Best rank in the interval (1 is first)."""
    rank_high: int
    """Worst rank in the interval."""
    strength: float
    """The fitted log strength (arena/stats/ranking.py): the standings' order."""
    groups: int = 0
    """The groups (deals) it played in: the units the bootstrap resamples, so what its interval rests on."""


Verdict = Literal["apart", "equal"]


@dataclass(frozen=True)
class PairTest:
    """The stop rule's sequential test of two neighbours (arena/run/stoprule.py), looked at after every round.

    At each look the pair's difference in fitted log strength gets an interval of +-z standard deviations (from
    the group bootstrap), with z spending ``alpha`` evenly over the ``looks`` (Bonferroni: alpha / looks per
    look, split between the two directions). The pair is *apart* once the interval excludes 0, and *equal* once
    it lies within +-delta, where delta is the log odds of a head-to-head share of 1/2 + ``margin`` (two bots
    are within the margin when neither places above the other in more than 1/2 + margin of their meetings). So,
    whatever the looks, two equal bots end apart with probability at most ``alpha``, and two bots further apart
    than the margin end equal with probability at most ``alpha`` / 2; bench/stoprule.py measures both."""

    alpha: float
    looks: int
    margin: float

    @classmethod
    def stored(cls, config: Mapping[str, Any]) -> PairTest | None:
        """The test of a tournament's stored config (its identity: the stop rule and the rounds, ``repeats``),
        None without a stop rule: what its standings show the verdicts of."""
        stop = config.get("stop")
        if not stop:
            return None
        return cls(1 - float(stop["confidence"]), int(config["repeats"]), float(stop.get("margin", MARGIN)))

    @property
    def z(self) -> float:
        return NormalDist().inv_cdf(1 - self.alpha / (2 * max(1, self.looks)))

    @property
    def delta(self) -> float:
        return math.log((0.5 + self.margin) / (0.5 - self.margin))


@dataclass(frozen=True)
class Confidence:
    """Bots best first (by fitted strength), their rank intervals, and P(a above b) for every ordered pair."""

    bots: tuple[BotConfidence, ...]
    p_above: PAbove
    level: float
    resamples: int
    groups: int = 0
    """The groups (deals) of the results: arena/stats/display.py says "too few to rank" below its floor."""

    def line(self, bot: int) -> BotConfidence:
        return self._lines[bot]

    @cached_property
    def _lines(self) -> dict[int, BotConfidence]:
        """The lines by bot: the stop rule and the pages look up every neighbour, a scan each would be quadratic."""
        return {line.bot: line for line in self.bots}

    def has(self, bot: int) -> bool:
        """Whether ``bot`` is one of the bots ranked."""
        return bot in self._lines

    def p_above_next(self, order: Sequence[int] | None = None) -> dict[int, float | None]:
        """For each bot, P(it is truly above the bot after it in ``order``); None for the last."""
        order = self.order() if order is None else list(order)
        return {bot: self.p_above[(bot, order[i + 1])] if i + 1 < len(order) else None
                for i, bot in enumerate(order)}

    def order(self) -> list[int]:
        return [line.bot for line in self.bots]

    def difference(self, a: int, b: int) -> tuple[float, float]:
        """a's fitted log strength minus b's, and the standard deviation of that difference over the resamples."""
        estimate = self.line(a).strength - self.line(b).strength
        spread = [x - y for x, y in zip(self.p_above.samples.get(a, ()), self.p_above.samples.get(b, ()))]
        return estimate, statistics.pstdev(spread) if len(spread) > 1 else math.inf

    def verdict(self, a: int, b: int, test: PairTest) -> Verdict | None:
        """The stop rule's verdict on a above b (see :class:`PairTest`): ``"apart"`` (a truly above b), ``"equal"``
        (their difference within the test's margin), or None (not yet either)."""
        estimate, spread = self.difference(a, b)
        low, high = estimate - test.z * spread, estimate + test.z * spread
        if low > 0:
            return "apart"
        if -test.delta < low and high < test.delta:
            return "equal"
        return None


def confidence(results: Iterable[GroupPlace] | SeatColumns, bots: Sequence[int] | None = None,
               resamples: int = RESAMPLES, level: float = LEVEL, seed: int = 0, vector: bool | None = None,
               point: Mapping[int, float] | None = None) -> Confidence:
    """Bootstrap the fitted strengths over whole groups. ``bots`` lists every bot to rank (default: those in
    ``results``); a bot without results ranks last with an interval covering every rank from its neighbours'.
    ``vector`` (default: from :data:`~arena.stats.ranking.VECTOR_SEATS` results or :data:`VECTOR_BOTS` bots on) does
    the work on numpy arrays: the same resamples from the same seed, fitted alike, so the same numbers to
    rounding. ``point`` is the full data's fit of these results and bots if the caller has it already (the
    store's standings do: :func:`arena.stats.standings.standings_and_confidence`), which is then not fitted again."""
    if not isinstance(results, SeatColumns):
        results = results if isinstance(results, Sequence) else list(results)
    place_sum: dict[int, int] = defaultdict(int)
    matches: dict[int, int] = defaultdict(int)
    # Counted by (bot, place) first: Counter's loop is C's, and a field of a thousand bots has 400,000 seats.
    for (bot, place), times in Counter(zip(results.bot, results.place) if isinstance(results, SeatColumns)
                                       else ((result.bot, result.place) for result in results)).items():
        place_sum[bot] += place * times
        matches[bot] += times
    played_in = set(zip(results.bot, results.group) if isinstance(results, SeatColumns)
                    else ((result.bot, result.group) for result in results))
    groups = Counter(bot for bot, _ in played_in)
    ids = list(bots) if bots is not None else sorted(matches)
    measured = [bot for bot in ids if matches.get(bot)]
    index = {bot: i for i, bot in enumerate(measured)}
    if vector is None:
        vector = len(results) >= VECTOR_SEATS or len(measured) >= VECTOR_BOTS
    rng = random.Random(seed)
    tail = [interval_tail(level, groups[bot]) for bot in measured]
    given = [point[bot] for bot in measured] if point is not None and all(bot in point for bot in measured) else None
    if vector:
        point_fit, (sampled, lows, highs) = _bootstrap_arrays(
            results if isinstance(results, SeatColumns) else SeatColumns.of(results), index,
            resamples if measured else 0, rng, tail, given)
    else:
        point_fit, (sampled, lows, highs) = _bootstrap_loop(
            results.results() if isinstance(results, SeatColumns) else results, index,
            resamples if measured else 0, rng, tail, given)
    estimate = dict(zip(measured, point_fit))
    samples, low_ranks, high_ranks = dict(zip(measured, sampled)), dict(zip(measured, lows)), dict(zip(measured, highs))
    mean_place = {bot: place_sum[bot] / matches[bot] for bot in measured}
    position = {bot: i for i, bot in reversed(list(enumerate(ids)))}
    order = sorted(measured, key=lambda bot: (-estimate[bot], mean_place[bot], position[bot]))
    unmeasured = [bot for bot in ids if bot not in estimate]
    lines = [BotConfidence(bot, mean_place[bot], matches[bot], low_ranks[bot], high_ranks[bot], estimate[bot],
                           groups[bot]) for bot in order]
    lines += [BotConfidence(bot, float("nan"), 0, len(measured) + 1, len(ids), float("nan")) for bot in unmeasured]
    return Confidence(tuple(lines), PAbove(ids, samples), level, resamples,
                      len({group for _, group in played_in}))


class PAbove(Mapping[tuple[int, int], float]):
    """P(a truly above b) for every ordered pair of bots, counted from the resampled strengths when asked: the
    standings ask only for neighbours, and a field of a thousand bots has a million pairs."""

    def __init__(self, ids: Sequence[int], samples: Mapping[int, Sequence[float]]) -> None:
        self.ids = list(ids)
        self._known_ids = set(self.ids)  # a membership test per look-up: a list's would cost the field's size
        self.samples = samples
        self.known: dict[tuple[int, int], float] = {}

    def __getitem__(self, key: tuple[int, int]) -> float:
        a, b = key
        if a == b or a not in self._known_ids or b not in self._known_ids:
            raise KeyError(key)
        if key not in self.known:
            if a in self.samples and b in self.samples and self.samples[a]:
                # Stronger is above; an exact tie counts half each way.
                twice = sum(2 if x > y else 1 if x == y else 0 for x, y in zip(self.samples[a], self.samples[b]))
                self.known[key] = twice / (2 * len(self.samples[a]))
            else:  # nothing is known of an unmeasured bot: measured ones rank above it, but not with confidence
                self.known[key] = 0.5
        return self.known[key]

    def __contains__(self, key: object) -> bool:
        """Whether the pair is one of two bots ranked, without working its P(above) out."""
        return (isinstance(key, tuple) and len(key) == 2 and key[0] != key[1] and key[0] in self._known_ids
                and key[1] in self._known_ids)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return ((a, b) for a in self.ids for b in self.ids if a != b)

    def __len__(self) -> int:
        return len(self.ids) * (len(self.ids) - 1)


Resampled = tuple[list[list[float]], list[int], list[int]]
"""By bot index: its fitted strength in every resample, and the ends of its rank interval: its ``tail`` quantile
of its best rank over the resamples and the ``1 - tail`` quantile of its worst (:func:`_quantile`)."""


def interval_tail(level: float, groups: int) -> float:
    """The share of resamples a bot's ``level`` rank interval leaves out at each end, for a bot measured in
    ``groups`` groups: (1 - level) / 2 made smaller, as Student's t with groups - 1 degrees of freedom widens a
    normal interval, because a bootstrap over few groups is too sure (its spread is the groups' spread without
    the groups - 1 correction, and that spread is itself uncertain). bench/settle.py measures what it buys: equal
    bots shown apart at most ~5% from the display's floor of groups on.

    >>> round(interval_tail(0.95, 8), 4), round(interval_tail(0.95, 16), 4), round(interval_tail(0.95, 1000), 4)
    (0.0057, 0.0139, 0.0248)
    """
    if groups < 2:
        return (1 - level) / 2
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    return 1 - NormalDist().cdf(_t_quantile(z, groups - 1) * math.sqrt(groups / (groups - 1)))


def _t_quantile(z: float, freedom: int) -> float:
    """Student's t quantile of ``freedom`` degrees of freedom at the normal quantile ``z`` (Abramowitz and Stegun
    26.7.5, the Cornish-Fisher expansion: within 1e-3 from 3 degrees of freedom at 95%)."""
    terms = ((z ** 3 + z) / 4, (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
             (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
             (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160)
    return z + sum(term / float(freedom) ** power for power, term in enumerate(terms, 1))


def _bootstrap_loop(results: Sequence[GroupPlace], index: Mapping[int, int], resamples: int,
                    rng: random.Random, tail: Sequence[float], point: list[float] | None = None
                    ) -> tuple[list[float], Resampled]:
    """The full data's fit (unless given: ``point``) and the resamples' (bots by their ``index``), in plain
    Python."""
    seats: dict[int, dict[int, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    for result in results:
        seats[result.group][result.match].append((result.bot, result.place))
    # Each group as its pairwise comparisons, (pair, packed (2 x wins, comparisons)); groups with the same ones
    # are interchangeable: a resample's weight for such a kind of group is the sum of its groups' weights. Summing
    # per kind first makes the per-pair sums run over a few hundred kinds instead of thousands of groups.
    kinds: dict[tuple[tuple[Pair, int], ...], list[int]] = defaultdict(list)
    everything: dict[Pair, list[float]] = defaultdict(lambda: [0.0, 0])
    for group in sorted(seats):
        # Only the bots asked for are ranked: a comparison with any other is left out.
        counted = {pair: value for pair, value in pair_counts(seats[group].values()).items()
                   if pair[0] in index and pair[1] in index}
        for pair, (wins, n) in counted.items():
            everything[pair][0] += wins
            everything[pair][1] += n
        kinds[tuple(sorted((pair, int(2 * wins) << _PACK | n) for pair, (wins, n) in counted.items()))].append(group)
    starts: list[int] = []
    ends: list[int] = []
    for members in kinds.values():
        starts.append(ends[-1] if ends else 0)
        ends.append(starts[-1] + len(members))
    # Per pair, the kinds it appears in and its packed counts in them, aligned; packing lets one pass sum both.
    columns: dict[Pair, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for kind, outcome in enumerate(kinds):
        for pair, value in outcome:
            columns[pair][0].append(kind)
            columns[pair][1].append(value)
    first = [index[a] for a, _ in columns]
    second = [index[b] for _, b in columns]
    size = len(index)
    if point is None:
        point = fit_loop(size, first, second, [everything[pair][0] for pair in columns],
                         [float(everything[pair][1]) for pair in columns])
    samples: list[list[float]] = [[] for _ in range(size)]
    low_ranks: list[list[int]] = [[] for _ in range(size)]
    high_ranks: list[list[int]] = [[] for _ in range(size)]
    for _ in range(resamples):
        # Each kind's weight, the sum of its groups' (they are consecutive): differences of running totals, with
        # every loop in C.
        totals = [0, *accumulate(_poisson_weights(rng, len(seats)))]
        counts = list(map(sub, map(totals.__getitem__, ends), map(totals.__getitem__, starts)))
        packed = [sum(map(mul, map(counts.__getitem__, its_kinds), values)) for its_kinds, values in columns.values()]
        # A bot none of whose groups was drawn says nothing in this resample: the fit keeps it at its estimate.
        stat = fit_loop(size, first, second, [(total >> _PACK) / 2 for total in packed],
                        [float(total & _MASK) for total in packed], start=point, tolerance=RESAMPLE_TOLERANCE)
        ordered = sorted(-fitted for fitted in stat)
        for i, fitted in enumerate(stat):
            samples[i].append(fitted)
            # Rank 1 + the bots strictly stronger; with ties, the worst rank is counted for the upper end.
            low_ranks[i].append(bisect_left(ordered, -fitted) + 1)
            high_ranks[i].append(bisect_right(ordered, -fitted))
    return point, (samples, [_quantile(ranks, share) for ranks, share in zip(low_ranks, tail)],
                   [_quantile(ranks, 1 - share) for ranks, share in zip(high_ranks, tail)])


def _bootstrap_arrays(results: SeatColumns, index: Mapping[int, int], resamples: int, rng: random.Random,
                      tail: Sequence[float], point: list[float] | None = None) -> tuple[list[float], Resampled]:
    """:func:`_bootstrap_loop` on numpy arrays: the same kinds of groups in the same order, the same weights drawn
    from the same stream, fitted by :func:`~arena.stats.ranking.fit_vector` (the loop's fit to rounding)."""
    import numpy as np

    size, count = len(index), len(results)
    group = np.asarray(results.group, np.int64)
    match = np.asarray(results.match, np.int64)
    bot = np.fromiter(map(index.get, results.bot, repeat(-1)), np.int64, count)
    place = np.asarray(results.place, np.int64)
    _, group = np.unique(group, return_inverse=True)  # a group's position among the groups in id order
    groups = int(group.max(initial=-1)) + 1
    # A match's seats together, in their given order: pair_counts compares each seat with the later ones.
    order = np.lexsort((np.arange(count), match, group))
    group, match, bot, place = group[order], match[order], bot[order], place[order]
    seat, low, high, twice_won = seat_comparisons(match, bot, place)
    width = max(size, 1)
    key = (group[seat] * width + low) * width + high
    # Per (group, pair): its comparisons and twice the low bot's wins, in group order then pair order.
    rows, row_of = np.unique(key, return_inverse=True)
    row_won = np.bincount(row_of, twice_won, len(rows)).astype(np.int64)
    row_count = np.bincount(row_of, None, len(rows)).astype(np.int64)
    row_group, row_pair = rows // (width * width), rows % (width * width)
    # Groups with the same rows are one kind, numbered by first appearance (the loop's order).
    bounds = np.searchsorted(row_group, np.arange(groups + 1))
    table = np.stack((row_pair, row_won, row_count), axis=1)
    kinds: dict[bytes, int] = {}
    kind_of_group = [kinds.setdefault(table[bounds[g]:bounds[g + 1]].tobytes(), len(kinds)) for g in range(groups)]
    members = np.bincount(np.asarray(kind_of_group, dtype=np.intp), None, len(kinds)).astype(np.intp)
    ends = np.cumsum(members)
    starts = ends - members
    first_of_kind = np.unique(kind_of_group, return_index=True)[1]  # a group of each kind, by kind number
    lengths = bounds[first_of_kind + 1] - bounds[first_of_kind]
    entry_rows = np.repeat(bounds[first_of_kind] - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    kind_of = np.repeat(np.arange(len(kinds)), lengths)
    pairs, pair_of_row = np.unique(row_pair, return_inverse=True)
    pair_of = pair_of_row[entry_rows]
    half_wins, compared = row_won[entry_rows].astype(float), row_count[entry_rows].astype(float)
    met = VectorPairs(size, pairs // width, pairs % width)  # sorted once for every fit
    full = (np.asarray(point) if point is not None
            else met.fit(np.bincount(pair_of_row, row_won, len(pairs)) / 2,
                         np.bincount(pair_of_row, row_count, len(pairs)).astype(float)))
    poisson = np.asarray(_POISSON, dtype=np.int64)
    fitted = np.empty((resamples, size))
    for resample in range(resamples):
        totals = np.concatenate(([0], np.cumsum(poisson[np.frombuffer(rng.randbytes(2 * groups), np.uint16)])))
        weight = (totals[ends] - totals[starts])[kind_of]
        fitted[resample] = met.fit(np.bincount(pair_of, weight * half_wins, len(pairs)) / 2,
                                   np.bincount(pair_of, weight * compared, len(pairs)), start=full,
                                   tolerance=RESAMPLE_TOLERANCE)
    low = np.empty((resamples, size), dtype=np.int64)
    high = np.empty((resamples, size), dtype=np.int64)
    for resample, stat in enumerate(-fitted):
        ordered = np.sort(stat)
        low[resample] = np.searchsorted(ordered, stat, side="left") + 1
        high[resample] = np.searchsorted(ordered, stat, side="right")
    if not resamples:  # no bot measured
        return full.tolist(), ([], [], [])
    low.sort(axis=0)
    high.sort(axis=0)
    bots = np.arange(size)
    return full.tolist(), (fitted.T.tolist(),
                           low[[_quantile_position(resamples, share) for share in tail], bots].tolist(),
                           high[[_quantile_position(resamples, 1 - share) for share in tail], bots].tolist())


def _poisson_table(bits: int = 16) -> list[int]:
    """Poisson(1) by inverse CDF over a ``bits``-bit uniform number: entry u is the count for u, the least k whose
    CDF reaches u's midpoint (u + 0.5) / 2**bits. Filled a run of equal counts at a time, not an entry at a time:
    every process that imports this module builds it (4.8 ms entry by entry, 0.2 ms by runs)."""
    size = 1 << bits
    table: list[int] = []
    k, cdf, term = 0, math.exp(-1.0), math.exp(-1.0)
    while len(table) < size:
        # u + 0.5 <= cdf * size for u up to here: exact in floats, size being a power of two
        table.extend([k] * (min(size, math.floor(cdf * size - 0.5) + 1) - len(table)))
        k += 1
        term /= k
        cdf += term
    return table


_POISSON = _poisson_table()


def _poisson_weights(rng: random.Random, n: int) -> list[int]:
    """``n`` independent Poisson(1) counts: the Poisson bootstrap's weights. Drawing n groups with replacement
    gives multinomial counts that are nearly these; these come from one call for random bytes and a table look-up,
    which is what makes 10,000 matches take about a second in pure Python."""
    return list(map(_POISSON.__getitem__, memoryview(rng.randbytes(2 * n)).cast("H")))


def _quantile(values: list[int], q: float) -> int:
    """The ``q`` quantile of ``values`` by nearest rank, taken outwards (an interval must not come out short)."""
    return sorted(values)[_quantile_position(len(values), q)]


def _quantile_position(count: int, q: float) -> int:
    """Where :func:`_quantile` takes the ``q`` quantile of ``count`` values in order."""
    outside = max(0, math.ceil(min(q, 1 - q) * count) - 1)
    return outside if q < 0.5 else count - 1 - outside
