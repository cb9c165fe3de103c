"""A bot's faults page: its faults grouped by kind, with the rounds they came in."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arena.site.common import fault_rows, tournament_crumbs
from arena.site.rows import FaultRow
from arena.site.snapshot import Snapshot
from arena.site.urls import Crumb, bot_href, faults_href

FAULT_HISTOGRAM_BARS = 20
"""At most this many bars in a faults page's histogram by round: rounds are put together in equal spans past it."""


VARYING = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[A2-9TJQK][CDHS](?: [A2-9TJQK][CDHS])*\b|\d+""")
"""What changes from one fault to the next of the same mistake: the line the bot sent (quoted, as the referee shows
it), cards (a hand) and numbers (a column, a time)."""


def detail_shape(detail: str) -> str:
    """A fault's detail with what varies from one occurrence to the next left out: the faults of one mistake have one
    shape (a bot that throws a card it does not hold names a different hand each time: 60 groups of one, before).

    >>> detail_shape("discard 5C not in hand 2D KS 7H")
    'discard … not in hand …'
    >>> detail_shape("not JSON (Expecting value at column 1): 'DEBUG hand is 5C 7H'; stdout carries protocol lines")
    'not JSON (Expecting value at column …): …; stdout carries protocol lines'
    """
    return VARYING.sub("\u2026", detail)


@dataclass(frozen=True)
class FaultGroup:
    """A bot's faults with the same reason and the same detail but for the cards, numbers and lines in it
    (:func:`detail_shape`: 39 crashes that all "exited with status 1", 60 throws of cards not in hand), latest
    first: listed once, with how many and where each happened."""

    faults: tuple[FaultRow, ...]

    @property
    def latest(self) -> FaultRow:
        return self.faults[0]


@dataclass(frozen=True)
class RoundBar:
    """A bar of a faults histogram: the faults that happened in rounds ``low`` to ``high``."""

    low: int
    high: int
    count: int


@dataclass(frozen=True)
class FaultsPage:
    """Every fault of one bot: a summary first (counts per reason code, the first and the latest, a histogram by
    round), then the faults grouped by reason and detail, each linked to the replay step where it happened."""

    name: str
    bot_href: str
    path: str
    count: int
    reasons: tuple[tuple[str, str, int], ...]
    """(kind, reason code, how many), most first."""
    first: FaultRow
    latest: FaultRow
    by_round: tuple[RoundBar, ...]
    groups: tuple[FaultGroup, ...]
    """Most faults first (then the latest first)."""
    crumbs: tuple[Crumb, ...]


def faulted_by(snap: Snapshot, bot_id: int) -> list[int]:
    """The positions in ``snap.matches`` of the finished matches in which the bot faulted, in schedule order."""
    return [position for position, seat_bot in snap.faulted if seat_bot == bot_id]


def faults_page_inputs(snap: Snapshot, bot_id: int) -> tuple[Any, ...]:
    """What a bot's faults page is made from, cheap to make: its matches' stamps (the page reads their logs for
    the replay steps only when it is made)."""
    marks = snap.stamp_keys
    return (snap.context, bot_id, [marks[position] for position in faulted_by(snap, bot_id)])


def round_bars(rounds: Sequence[int], most: int = FAULT_HISTOGRAM_BARS) -> tuple[RoundBar, ...]:
    """How many of ``rounds`` fall in each round from 1 to the last, in at most ``most`` equal spans.

    >>> [(b.low, b.high, b.count) for b in round_bars([1, 3, 3])]
    [(1, 1, 1), (2, 2, 0), (3, 3, 2)]
    >>> [(b.low, b.high, b.count) for b in round_bars([1, 5, 9, 9], most=2)]
    [(1, 5, 2), (6, 10, 2)]
    """
    if not rounds:
        return ()
    last = max(max(rounds), 1)
    span = math.ceil(last / most)
    counts = Counter((max(r, 1) - 1) // span for r in rounds)
    return tuple(RoundBar(i * span + 1, (i + 1) * span, counts[i]) for i in range(math.ceil(last / span)))


def faults_page(snap: Snapshot, bot_id: int) -> FaultsPage | None:
    """The page of every fault of the bot, None when it has none."""
    bot = snap.bot_by_id[bot_id]
    rows = fault_rows(snap, bot_id, None, steps=True)
    if not rows:
        return None
    grouped: dict[tuple[str, str], list[FaultRow]] = defaultdict(list)
    for row in rows:
        grouped[(row.fault.reason.value, detail_shape(row.fault.detail))].append(row)
    reasons = Counter((row.fault.kind.value, row.fault.reason.value) for row in rows)
    crumbs = tournament_crumbs(snap, Crumb(bot.name, bot_href(snap.slug, bot.slug)), Crumb("Faults", None))
    return FaultsPage(
        bot.name, bot_href(snap.slug, bot.slug), faults_href(snap.slug, bot.slug), len(rows),
        tuple((kind, reason, count) for (kind, reason), count in
              sorted(reasons.items(), key=lambda item: (-item[1], item[0]))),
        rows[-1], rows[0], round_bars([row.fault.round for row in rows]),
        tuple(FaultGroup(tuple(group)) for group in sorted(grouped.values(), key=lambda g: -len(g))), crumbs)
