"""The league's matchmaking: which active bots sit together in the next duplicate-deal groups.

Pure: no store, no processes. The league (arena/run/league.py) keeps a :class:`Tally` of what it has scheduled
(read once from the store at start, then brought up to date as it schedules) and asks :func:`choose_groups` for
each batch's groups. The rule, in the order of what it guarantees:

1. **every bot its share**: a bot's fair share is what it would have played had every group been spread evenly over
   the bots active at the time (``players`` matches of ``players`` seats a group, over the active bots). No bot is
   seated past ``SHARE_CAP`` times its share (plus one group), while enough others are under theirs; each batch's
   groups are anchored on the bots furthest behind their share;
2. **every pair about as often while both are in the field**: the other seats go, one at a time, to the bot that is
   furthest behind, with the seats already chosen, the meetings an even schedule would have given each pair since
   both were active (:meth:`Tally.expected`); a pair counts what it is ahead by divided by
   ``1 + CLOSE_WEIGHT * closeness``, so no pair falls behind another by more than about that factor. All-time
   meetings would not do: a late entrant has met everyone less, so two late entrants, each the other's least-met
   bot, were seated together (78% of a new version's groups with the other newest bot in the audit's league, where
   an even schedule gives 43%). :func:`spread` shows the measure: meetings over expected, fewest to most;
3. **a new version placed first** (the head start): each seat goes first to the bot that has never sat with the
   most of the seats already chosen (then by rule 2) and, in a field of at most ``POOL + 1`` bots, a bot with a pair
   it has never sat with is anchored before one without; so a new version sits, in the field's next groups, with
   every bot it has not met, within its cap of rule 1 (4 seats in 8 bots: in its first 2 groups, with the balance of
   rule 2 unchanged at 1.02-1.06, bench/league_entry.py). In a larger field every bot has unmet pairs for long, so
   the anchors follow rule 1 alone (and checking them would cost a pass over every pair);
4. **the rest where the order is uncertain**: ``closeness`` is ``1 - |2 P(a above b) - 1|`` from the standings'
   confidence (1 for a toss-up, 0 for a settled pair; a bot with no results yet is a toss-up with everyone), so
   those pairs meet up to ``1 + CLOSE_WEIGHT`` times as often;
5. **randomised**: remaining ties are broken by a :class:`random.Random` the caller seeds (the league: from its
   secret and the batch's first group number, so the schedule is a function of the store; deal seeds never come
   from it) and, over a large field, the other seats are drawn from a random sample of ``POOL`` bots,
   so the groups never settle into fixed tables;
6. **a slow bot at its share of worker time**: ``weights`` scale a bot's share (the league gives a bot whose own
   think time per match is ``r`` times the median bot's ``1/r``), so a bot that spends its whole clock costs the
   league about its share of worker time, not every worker's time. Its own time, not its matches' length: a
   match's length includes its table's, so at 4 seats a 3x-slow bot read as 1.6x and a fast bot that sat with it
   was charged for it.

Cost: a sort of the active bots per batch and, per group, ``POOL x players^2`` look-ups (of closeness too, each
pair's worked out when first looked up: :class:`Closeness`): 1,000 bots stay well within the 50 ms a batch the
league allows itself (bench/league.py and bench/scale.py measure it).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

SHARE_CAP = 1.15
"""No bot is seated past this many times its fair share (plus one group) while others are below theirs."""
CLOSE_WEIGHT = 1.0
"""A pair whose order is a toss-up meets up to ``1 + CLOSE_WEIGHT`` times as often as a settled pair."""
BEHIND_WEIGHT = 0.03
"""Between two bots that met the group's seats equally often, how much a bot's lead over its share counts (in
units of the meetings an even schedule would have given the pair)."""
JUDGED_AFTER = 3.0
"""A pair enters :class:`Spread`'s balance once an even schedule would have seated it together this many times
since both entered: before that, one group more or less is the whole ratio."""
POOL = 48
"""Over a larger field, the other seats of a group are chosen among this many bots drawn at random."""


def pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


@dataclass
class Tally:
    """What has been scheduled: per pair, the groups both sat in; per bot, its matches and its fair share.

    The fair share is kept as one running total ``shared`` (matches per bot had every group been spread evenly
    over the bots then active) and, per bot, that total when it entered: its share is the difference."""

    players: int
    meetings: dict[tuple[int, int], int] = field(default_factory=dict)
    played: dict[int, int] = field(default_factory=dict)
    shared: float = 0.0
    entered: dict[int, float] = field(default_factory=dict)
    paired: float = 0.0
    """The running total of one pair's chance to share a group, ``players (players - 1) / (active (active - 1))``
    a group: what an even schedule gives a pair of bots active throughout."""
    paired_at: dict[int, float] = field(default_factory=dict)
    """Per bot, :attr:`paired` when it entered."""

    def enter(self, bot: int) -> None:
        """A bot joins the active field now (nothing happens if it is already known)."""
        self.entered.setdefault(bot, self.shared)
        self.paired_at.setdefault(bot, self.paired)
        self.played.setdefault(bot, 0)

    def fair(self, bot: int) -> float:
        return self.shared - self.entered.get(bot, self.shared)

    def expected(self, a: int, b: int) -> float:
        """The meetings an even schedule would have given ``a`` and ``b`` since both entered."""
        return self.paired - max(self.paired_at.get(a, self.paired), self.paired_at.get(b, self.paired))

    def add_group(self, group: Sequence[int], active: int) -> None:
        """One group of ``players`` matches scheduled while ``active`` bots were in the field."""
        for i, a in enumerate(group):
            self.played[a] = self.played.get(a, 0) + self.players
            for b in group[i + 1:]:
                key = pair(a, b)
                self.meetings[key] = self.meetings.get(key, 0) + 1
        self.shared += self.players * self.players / max(active, self.players)
        field_ = max(active, self.players)
        self.paired += self.players * (self.players - 1) / (field_ * (field_ - 1))


@dataclass(frozen=True)
class BotShare:
    """One active bot's matches against its fair share."""

    bot: int
    matches: int
    fair: float
    """Its fair share of the matches since it entered (scaled by its weight, and up for the share that throttled
    bots leave)."""
    share: float | None
    """``matches / fair``; None before its share reaches one group."""
    weight: float
    """The fraction of a share the bot is scheduled for (below 1 for a bot throttled for its slow matches)."""


@dataclass(frozen=True)
class Spread:
    """How evenly the active bots meet: what ``/api/league`` and ``arena league status`` show."""

    pairs: int
    least: int
    """Fewest groups any pair of active (unthrottled) bots shared."""
    most: int
    ratio: float | None
    """``least / most``; None before any pair met. All-time: a late entrant's pairs read low however fair."""
    bots: tuple[BotShare, ...]
    judged: int = 0
    """Pairs (of active, unthrottled bots) that an even schedule would have seated together at least
    :data:`JUDGED_AFTER` times since both entered: the pairs :attr:`balance` is over."""
    least_share: float | None = None
    """Fewest meetings over expected while both were active (:meth:`Tally.expected`), over the judged pairs."""
    most_share: float | None = None
    balance: float | None = None
    """``least_share / most_share``: the measure the matchmaker keeps (goal at least 1/2); None before a pair is
    judged."""

    def to_dict(self, names: Mapping[int, str]) -> dict[str, object]:
        return {"pairs": self.pairs, "least_meetings": self.least, "most_meetings": self.most,
                "ratio": None if self.ratio is None else round(self.ratio, 3),
                "judged_pairs": self.judged,
                "least_over_expected": None if self.least_share is None else round(self.least_share, 3),
                "most_over_expected": None if self.most_share is None else round(self.most_share, 3),
                "balance_while_active": None if self.balance is None else round(self.balance, 3),
                "bots": [{"bot": names.get(share.bot, str(share.bot)), "matches": share.matches,
                          "fair_share": round(share.fair, 1),
                          "share": None if share.share is None else round(share.share, 3),
                          "weight": round(share.weight, 3)} for share in self.bots]}


def spread(tally: Tally, active: Sequence[int], weights: Mapping[int, float] | None = None) -> Spread:
    """The pair-meeting spread over the active bots (pairs of throttled bots left out: they meet less on
    purpose) and each active bot's matches against its fair share."""
    weights = weights or {}
    target = targets(tally, list(active), weights)
    full = {bot for bot in active if weights.get(bot, 1.0) >= 1.0}
    pairs = len(full) * (len(full) - 1) // 2
    # Over the pairs that met, not every pair of the field: linear in the groups scheduled, not in bots squared.
    met = [count for (a, b), count in tally.meetings.items() if a in full and b in full and count]
    least, most = (min(met) if len(met) == pairs else 0, max(met)) if met else (0, 0)
    # Over every pair of the field (an unmet pair may be due meetings): 0.1 s at 1,000 bots, once a SPREAD_EVERY_S.
    full_ids = sorted(full)
    over = [tally.meetings.get((a, b), 0) / expected for i, a in enumerate(full_ids) for b in full_ids[i + 1:]
            if (expected := tally.expected(a, b)) >= JUDGED_AFTER]
    least_share, most_share = (min(over), max(over)) if over else (None, None)
    balance = least_share / most_share if least_share is not None and most_share else None
    shares = []
    for bot in sorted(active):
        fair = target(bot)
        matches = tally.played.get(bot, 0)
        shares.append(BotShare(bot, matches, fair, matches / fair if fair >= tally.players else None,
                               weights.get(bot, 1.0)))
    return Spread(pairs, least, most, least / most if most else None, tuple(shares), len(over), least_share,
                  most_share, balance)


def closeness_of(p_above: Mapping[tuple[int, int], float], bots: Iterable[int]) -> Closeness:
    """``1 - |2 P(a above b) - 1|`` for every pair ``(low id, high id)`` of ``bots`` that ``p_above`` knows."""
    return Closeness(p_above, bots)


class Closeness(Mapping[tuple[int, int], float]):
    """:func:`closeness_of`'s values, each worked out when first looked up: a batch looks at a few thousand pairs
    at most (``POOL x players^2`` a group), a field of a thousand bots has half a million, and P(above) of each is
    a pass over the bootstrap's resamples."""

    def __init__(self, p_above: Mapping[tuple[int, int], float], bots: Iterable[int]) -> None:
        self.p_above = p_above
        self.bots = frozenset(bots)
        self.known: dict[tuple[int, int], float] = {}

    def __getitem__(self, key: tuple[int, int]) -> float:
        found = self.known.get(key)
        if found is None:
            a, b = key
            if not (a < b and a in self.bots and b in self.bots and key in self.p_above):
                raise KeyError(key)
            found = self.known[key] = 1.0 - abs(2.0 * self.p_above[key] - 1.0)
        return found

    def __iter__(self) -> Iterator[tuple[int, int]]:
        ids = sorted(self.bots)
        return ((a, b) for i, a in enumerate(ids) for b in ids[i + 1:] if (a, b) in self.p_above)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def targets(tally: Tally, bots: Sequence[int], weights: Mapping[int, float]) -> Callable[[int], float]:
    """Each bot's share of matches so far: its fair share scaled by its weight, what throttled bots leave spread
    over the field by the current weights."""
    scale = len(bots) / sum(weights.get(bot, 1.0) for bot in bots) if bots else 1.0
    return lambda bot: tally.fair(bot) * weights.get(bot, 1.0) * scale


def choose_groups(tally: Tally, active: Sequence[int], groups: int, rng: random.Random,
                  closeness: Mapping[tuple[int, int], float] | None = None,
                  weights: Mapping[int, float] | None = None) -> list[tuple[int, ...]]:
    """The next ``groups`` groups of ``tally.players`` bots by the rule in the module docstring (their deals are
    the caller's: a deal seed never comes from ``rng``, arena/schedule.py's ``deal_seed``); ``tally`` is updated
    with them. ``closeness`` maps ordered pairs ``(low id, high id)`` to [0, 1] (missing: 0); ``weights`` scale
    bots' shares (missing: 1)."""
    players = tally.players
    if len(active) < players:
        return []
    closeness = {} if closeness is None else closeness  # not `or`: a lazy mapping would count its pairs
    weights = weights or {}
    for bot in active:
        tally.enter(bot)
    bots = sorted(active)

    target = targets(tally, bots, weights)

    def behind(bot: int) -> float:
        """How far the bot is ahead of its share (lower: further behind), smoothed by one group."""
        return (tally.played[bot] + players) / (target(bot) + players)

    def ahead(bot: int, other: int) -> float:
        """How far the pair is ahead of the meetings an even schedule gave it while both were active (a toss-up's
        meetings counted ``1 / (1 + CLOSE_WEIGHT)``), in units of those meetings (at least one)."""
        key = pair(bot, other)
        expected = tally.expected(bot, other)
        met = tally.meetings.get(key, 0) / (1.0 + CLOSE_WEIGHT * closeness.get(key, 0.0))
        return (met - expected) / max(1.0, expected)

    def unmet(bot: int, group: Sequence[int]) -> int:
        """How many of the seats already chosen the bot has never sat with: the head start's count."""
        return sum(not tally.meetings.get(pair(bot, other)) for other in group)

    def capped(bot: int) -> bool:
        return tally.played[bot] >= SHARE_CAP * target(bot) + players

    def placed(bot: int) -> bool:
        """Whether the bot has sat with every other bot of the field."""
        if bot not in known_placed and all(tally.meetings.get(pair(bot, other)) for other in bots if other != bot):
            known_placed.add(bot)  # meetings only grow: once a batch is enough
        return bot in known_placed

    known_placed: set[int] = set()
    # In a larger field no bot meets the whole field early, and the check would cost a pass over every pair.
    small = len(bots) <= POOL + 1

    jitter = {bot: rng.random() for bot in bots}
    anchors = sorted(bots, key=lambda bot: (behind(bot), jitter[bot]))
    chosen = []
    for _ in range(groups):
        # The head start: a bot with an unmet pair in the field is anchored before one without (in the order above),
        # so a new version's groups come first and every bot it has not met is seated with it early.
        first = min(range(len(anchors)), key=lambda at: placed(anchors[at])) if small and anchors else 0
        anchor = anchors.pop(first) if anchors else -1
        if anchor < 0 or capped(anchor):  # a batch longer than the field: the furthest behind now
            anchor = min(bots, key=lambda bot: (behind(bot), jitter[bot]))
        if len(bots) > POOL + 1:
            pool = [bot for bot in rng.sample(bots, POOL) if bot != anchor]
        else:
            pool = [bot for bot in bots if bot != anchor]
        open_ = [bot for bot in pool if not capped(bot)]
        if len(open_) >= players - 1:
            pool = open_
        group = [anchor]
        while len(group) < players:
            best = min((bot for bot in pool if bot not in group),
                       key=lambda bot: (-unmet(bot, group),
                                        sum(ahead(bot, other) for other in group) + BEHIND_WEIGHT * behind(bot)
                                        + 0.01 * rng.random()))
            group.append(best)
        rng.shuffle(group)  # who sits first is the rotations' business, not the rule's
        tally.add_group(group, len(bots))
        chosen.append(tuple(group))
    return chosen


def throttle_weights(seconds: Mapping[int, tuple[int, float]], minimum: int = 3) -> dict[int, float]:
    """Per bot, ``1 / r`` when it takes ``r > 1`` times the median bot's time per match (its own think time: from
    ``seconds``, bot -> (matches, total seconds)); bots with fewer than ``minimum`` matches are not judged yet."""
    means = {bot: total / count for bot, (count, total) in seconds.items() if count >= minimum and total > 0}
    if len(means) < 2:
        return {}
    ordered = sorted(means.values())
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    # Only a bot well past the median is throttled: the field's ordinary spread of speeds is no reason.
    return {bot: median / mean for bot, mean in means.items() if mean > 2 * median and not math.isclose(median, 0)}
