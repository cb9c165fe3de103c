"""What the standings show of their confidence: each bot's rank as shown (its 95% rank interval: the headline), P(above
the next bot) as text, and why nothing is ranked yet when too few deals were played.

Three guarantees, each measured by a bench (docs/RATINGS.md, "What the ranks shown promise"):

- **Not enough data settles nothing.** A bootstrap over one or two groups (deals) cannot vary, so it reports
  certainty. A bot that played in fewer than :data:`MIN_GROUPS` groups is not ranked: its rank shows as ``-``,
  its interval spans the field, and no P(above) is given for a pair it is in (bench/settle.py chose the floor:
  below it, equal bots were shown apart far more often than at any larger size).
- **The rank shown is the bot's own 95% interval**, ``2-3``, or ``2`` when the interval is one position: no
  shared rank that chains, so no bot is shown at a rank its own interval excludes, in a field of 4 bots or
  200 (bench/field_display.py), and a bot that lost every match shows the ranks at the bottom it could hold.
  Two bots are shown apart only when their intervals do not meet. The interval is the bootstrap's (with its
  tails shrunk for a bot with few deals: arena/stats/confidence.py's ``interval_tail``), widened where it must
  be to hold the bot's own position in the order (which the bench counts: it has not happened).
- **P(above) never prints as certainty.** It is a share of R resamples; where it would round to 1.00 it shows
  ``> x``, x being the lower 95% bound of that share (Clopper-Pearson), so ``> 0.99`` needs about 300
  resamples without a reversal and never comes from a handful of groups.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from arena.stats.confidence import Confidence

MIN_GROUPS = 8
"""The fewest groups (deals) a bot must have played in before its rank, interval or P(above) settles anything.
In bench/settle.py equal bots were shown apart in 18-100% of tournaments at 1-2 deals a bot and 5-28% at 3, and
from 8 on at the level the bootstrap keeps at any size (docs/RATINGS.md has the table)."""
UNRANKED = "-"
"""The rank shown for a bot with too few groups."""
LEFT = "left"
"""The rank shown for a league's version that left the field: listed below the field, not ranked."""


@dataclass(frozen=True)
class ShownLine:
    """One bot's line of the standings as shown."""

    bot: int
    rank: str
    """``"3"`` (a one-position interval), ``"2-3"`` (the ranks it could truly hold), :data:`UNRANKED` or
    :data:`LEFT`."""
    interval: tuple[int, int] | None
    """Its 95% rank interval as shown: the bootstrap's, holding its own position, or the whole field when it has
    too few groups; None for a version that left."""
    p_above_next: float | None
    """P(it is truly above the next bot), None for the last and for a pair with a bot that has too few groups."""
    p_text: str
    """:attr:`p_above_next` as printed (:func:`p_text`)."""

    @property
    def ranked(self) -> bool:
        return self.rank not in (UNRANKED, LEFT)

    def apart(self, other: ShownLine) -> bool:
        """Whether the two are shown apart: both ranked, and their intervals do not meet."""
        return (self.ranked and other.ranked and self.interval is not None and other.interval is not None
                and (self.interval[1] < other.interval[0] or other.interval[1] < self.interval[0]))


@dataclass(frozen=True)
class Shown:
    """The standings' lines as shown, in the order given, and a note on why some or all are not ranked."""

    lines: tuple[ShownLine, ...]
    note: str | None

    def line(self, bot: int) -> ShownLine:
        return next(line for line in self.lines if line.bot == bot)

    def by_bot(self) -> dict[int, ShownLine]:
        return {line.bot: line for line in self.lines}


def shown(sure: Confidence, order: Sequence[int] | None = None, min_groups: int = MIN_GROUPS) -> Shown:
    """How the bots in ``order`` (default: by fitted strength) are shown: their intervals as ranks, P(above
    next) and the note (module docstring). Bots of ``order`` that ``sure`` does not rank are a league's versions
    that left: listed, not ranked."""
    order = sure.order() if order is None else list(order)
    in_field = [bot for bot in order if sure.has(bot)]
    ranked = {bot for bot in in_field if sure.line(bot).groups >= min_groups}
    lines = []
    for position, bot in enumerate(order, 1):
        after = order[position] if position < len(order) else None
        p = sure.p_above[(bot, after)] if after is not None and bot in ranked and after in ranked else None
        interval: tuple[int, int] | None = None
        if bot not in ranked:
            rank = UNRANKED if sure.has(bot) else LEFT
            interval = (1, len(in_field)) if sure.has(bot) else None
        else:
            line = sure.line(bot)
            interval = (min(line.rank_low, position), max(line.rank_high, position))
            rank = str(interval[0]) if interval[0] == interval[1] else f"{interval[0]}-{interval[1]}"
        lines.append(ShownLine(bot, rank, interval, p, p_text(p, sure.resamples)))
    return Shown(tuple(lines), _note(sure, order, ranked, min_groups))


def _note(sure: Confidence, order: Sequence[int], ranked: set[int], min_groups: int) -> str | None:
    """Why bots are not ranked: the whole tournament short of deals, or some of its bots."""
    in_field = [bot for bot in order if sure.has(bot)]
    if len(ranked) == len(in_field):
        return None
    if not ranked:
        most = max((sure.line(bot).groups for bot in in_field), default=0)
        deals = f"{sure.groups} deal" + ("" if sure.groups == 1 else "s")
        each = "" if most == sure.groups else f", at most {most} for a bot"
        return f"{deals}{each}: too few to rank (a rank needs {min_groups} for each bot)"
    waiting = len(in_field) - len(ranked)
    return (f"{waiting} bot{'' if waiting == 1 else 's'} with fewer than {min_groups} deals: not yet ranked "
            f"(shown {UNRANKED}, rank interval the whole field)")


def p_text(p: float | None, resamples: int) -> str:
    """P(above) as printed, never a certainty: a share of ``resamples`` that would round to 1.00 (or 0.00) shows
    as ``> x`` (``< y``), x the lower 95% bound of the share (Clopper-Pearson, rounded down), so 400
    resamples without a reversal give ``> 0.99`` and 100 give ``> 0.97``.

    >>> p_text(0.756, 400), p_text(1.0, 400), p_text(1.0, 100), p_text(0.9975, 400), p_text(0.0, 400), p_text(None, 4)
    ('0.76', '> 0.99', '> 0.97', '> 0.98', '< 0.01', '-')
    """
    if p is None:
        return "-"
    if f"{p:.2f}" == "1.00":
        reversals = round((1 - p) * resamples)
        return f"> {math.floor(100 * (1 - _upper_bound(reversals, resamples))) / 100:.2f}"
    if f"{p:.2f}" == "0.00":
        above = round(p * resamples)
        return f"< {math.ceil(100 * _upper_bound(above, resamples)) / 100:.2f}"
    return f"{p:.2f}"


def _upper_bound(events: int, trials: int, alpha: float = 0.05) -> float:
    """The one-sided upper ``1 - alpha`` Clopper-Pearson bound of a rate seen ``events`` times in ``trials``: the
    rate at which so few events or fewer have probability ``alpha``."""
    if events >= trials:
        return 1.0
    low, high = events / trials, 1.0
    for _ in range(60):  # bisection: 2^-60 is far below any digit printed
        rate = (low + high) / 2
        below = sum(math.comb(trials, k) * rate ** k * (1 - rate) ** (trials - k) for k in range(events + 1))
        low, high = (rate, high) if below > alpha else (low, rate)
    return high
