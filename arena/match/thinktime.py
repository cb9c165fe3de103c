"""How long each bot thought over each move, and how much of its time bank it had left, read back from a match's
event log; and the sums of that per seat or per bot (mean, p95, max, the move closest to the limit, the least bank
left) that ``arena show`` and the site give.

The log holds every message with the time it was sent or received (``at``, ms since the match started): a ``turn``
message to the seat to move, which says its whole budget (``time_left_ms``: the move's own time plus the bank) and
its bank (``bank_ms``), and the first line the seat sends after it, its reply. The referee takes from the bank what a
move thinks beyond the move's own time (arena/match/referee.py), and so does :func:`thoughts`. The k-th turn is the k-th
move event (a play or a declaration) of the engine's events: a move's step in the replay. A turn with no reply is
the one that faulted (it has no move event). Pure: bytes and events in, values out.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

MESSAGES = re.compile(
    rb'\{"t":"(?:send","seat":(\d+),"at":(\d+),"msg":\{"type":"turn",[^\n]*"time_left_ms":(\d+),"bank_ms":(\d+)\}\}'
    rb'|recv","seat":(\d+),"at":(\d+),)')
"""A turn sent (seat, at, budget, bank) or a line received (seat, at), as :class:`arena.match.matchlog.MatchLog` writes
them: one scan of the log's text finds them without parsing the thousands of other lines."""
MOVE_EVENTS = ("play", "declare")


class Thought(NamedTuple):
    """One turn of one seat. A named tuple rather than a frozen dataclass: a site build makes one for each of
    millions of turns (10,000 matches of hundreds), and a tuple is made several times faster."""

    seat: int
    think_ms: int | None
    """From the turn sent to the reply received; None when no reply came (the turn it faulted on)."""
    budget_ms: int
    """What the turn allowed: the move's own time plus the bank."""
    bank_ms: int
    """The bank before the move."""
    step: int | None = None
    """The move's step in the replay (1-based, its event's index + 1; the ``#step=N`` of its match page)."""

    @property
    def bank_left_ms(self) -> int:
        """The bank after the move: what it thought beyond the move's own time is taken from it."""
        if self.think_ms is None:
            return 0
        return max(0, self.bank_ms - max(0, self.think_ms - (self.budget_ms - self.bank_ms)))

    @property
    def slack_ms(self) -> int:
        """How far from the limit the reply came (0: none came)."""
        return 0 if self.think_ms is None else max(0, self.budget_ms - self.think_ms)


def thoughts(wire: bytes, events: Sequence[dict[str, Any]] = ()) -> list[Thought]:
    """Every turn in ``wire`` (a log's text, or its message lines), in order, each with its move's replay step
    when ``events`` (the log's engine events) are given and agree on who moved."""
    moves = [index for index, event in enumerate(events) if event.get("type") in MOVE_EVENTS]
    pending: dict[int, list[Any]] = {}
    found: list[list[Any]] = []  # [seat, think, budget, bank, sent at], the think filled in by the reply
    # findall: the hits as tuples of their groups, made in C (a long match has a thousand of them).
    for seat, sent, budget, bank, replier, received in MESSAGES.findall(wire):
        if seat:
            turn: list[Any] = [int(seat), None, int(budget), int(bank), int(sent)]
            pending[int(seat)] = turn
            found.append(turn)
        else:
            asked = pending.pop(int(replier), None)
            if asked is not None:
                asked[1] = max(0, int(received) - asked[4])
    result = []
    answered, count = 0, len(moves)
    for seat, think, budget, bank, _ in found:
        step = None
        # A reply that was not a legal move (the seat forfeited) has no move event: the next one is another seat's.
        if think is not None and answered < count and events[moves[answered]].get("seat") == seat:
            step = moves[answered] + 1
            answered += 1
        result.append(Thought(seat, think, budget, bank, step))
    return result


@dataclass(frozen=True)
class Mark:
    """A move worth pointing at: its time, its match and its step in that match's replay."""

    think_ms: int
    budget_ms: int
    bank_left_ms: int
    match_id: int | None
    step: int | None


@dataclass
class Tally:
    """Think times summed over any number of moves (one seat's in a match, or a bot's over a tournament): exact,
    as the times are whole milliseconds and a bot's distinct times are few (a count for each)."""

    counts: Counter[int] = field(default_factory=Counter)
    unanswered: int = 0
    """Turns with no reply (timed out, or crashed while thinking)."""
    closest: Mark | None = None
    """The answered move with the least time to spare."""
    least_bank: Mark | None = None
    """The move after which the bank was lowest."""
    matches: set[int] = field(default_factory=set)
    """The ids of the matches counted (a build adds only those it has not)."""

    def add(self, thought: Thought, match_id: int | None = None) -> None:
        if match_id is not None:
            self.matches.add(match_id)
        if thought.think_ms is None:
            self.unanswered += 1
            return
        self.counts[thought.think_ms] += 1
        mark = Mark(thought.think_ms, thought.budget_ms, thought.bank_left_ms, match_id, thought.step)
        self._consider(mark)

    def _consider(self, mark: Mark) -> None:
        # Ties go to the earliest match and step: a build merges its matches in any order, and gets the same page.
        if self.closest is None or _closeness(mark) < _closeness(self.closest):
            self.closest = mark
        if self.least_bank is None or _lowness(mark) < _lowness(self.least_bank):
            self.least_bank = mark

    def merge(self, other: Tally) -> None:
        self.counts.update(other.counts)
        self.unanswered += other.unanswered
        self.matches |= other.matches
        for mark in (other.closest, other.least_bank):
            if mark is not None:
                self._consider(mark)

    @property
    def moves(self) -> int:
        return sum(self.counts.values())

    def mean_ms(self) -> float | None:
        moves = self.moves
        return sum(ms * n for ms, n in self.counts.items()) / moves if moves else None

    def percentile_ms(self, share: float) -> int | None:
        """The nearest-rank percentile: the least time that ``share`` of the moves took at most.

        >>> Tally(Counter({1: 94, 2: 5, 300: 1})).percentile_ms(0.95), Tally().percentile_ms(0.95)
        (2, None)
        """
        moves = self.moves
        if not moves:
            return None
        rank, seen = max(1, math.ceil(share * moves)), 0
        for ms in sorted(self.counts):
            seen += self.counts[ms]
            if seen >= rank:
                return ms
        return max(self.counts)  # pragma: no cover - the loop always reaches the rank

    def max_ms(self) -> int | None:
        return max(self.counts) if self.counts else None

    def to_dict(self) -> dict[str, Any]:
        """The sums for people and scripts (``arena show --json``, the site's downloads): times in ms."""
        mean = self.mean_ms()
        return {"moves": self.moves, "unanswered": self.unanswered,
                "mean_ms": None if mean is None else round(mean, 1), "p95_ms": self.percentile_ms(0.95),
                "max_ms": self.max_ms(), "closest": _mark(self.closest), "least_bank": _mark(self.least_bank)}


    def state(self) -> dict[str, Any]:
        """Everything in the tally as JSON values (a site build keeps its bots' tallies between builds)."""
        return {"counts": sorted(self.counts.items()), "unanswered": self.unanswered,
                "matches": sorted(self.matches), "closest": _mark(self.closest), "least_bank": _mark(self.least_bank)}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Tally:
        """The tally :meth:`state` gave (KeyError, TypeError or ValueError for anything else)."""
        return cls(Counter({int(ms): int(n) for ms, n in state["counts"]}), int(state["unanswered"]),
                   _unmark(state["closest"]), _unmark(state["least_bank"]), {int(i) for i in state["matches"]})


def _unmark(value: dict[str, Any] | None) -> Mark | None:
    if value is None:
        return None
    return Mark(int(value["think_ms"]), int(value["budget_ms"]), int(value["bank_left_ms"]), value["match"],
                value["step"])


def _closeness(mark: Mark) -> tuple[int, int, int]:
    return mark.budget_ms - mark.think_ms, mark.match_id or 0, _step_order(mark)


def _lowness(mark: Mark) -> tuple[int, int, int]:
    return mark.bank_left_ms, mark.match_id or 0, _step_order(mark)


def _step_order(mark: Mark) -> int:
    return _order(mark.step)


def _order(step: int | None) -> int:
    # A move with a step (one to link to) before one without (a reply that was not a move) when they tie.
    return (1 << 30) if step is None else step


def _mark(mark: Mark | None) -> dict[str, Any] | None:
    if mark is None:
        return None
    return {"think_ms": mark.think_ms, "budget_ms": mark.budget_ms, "bank_left_ms": mark.bank_left_ms,
            "match": mark.match_id, "step": mark.step}


def by_seat(found: Iterable[Thought], seats: int, match_id: int | None = None) -> list[Tally]:
    """The turns of one match summed per seat: the same tallies as :meth:`Tally.add` of each turn in order, made
    with a Mark for the two moves worth one rather than for every move (a site build sums millions of them)."""
    tallies = [Tally(matches=set() if match_id is None else {match_id}) for _ in range(seats)]
    answered: list[list[Thought]] = [[] for _ in range(seats)]
    times: list[list[int]] = [[] for _ in range(seats)]
    for thought in found:
        if 0 <= thought.seat < seats:
            if thought.think_ms is None:
                tallies[thought.seat].unanswered += 1
            else:
                answered[thought.seat].append(thought)
                times[thought.seat].append(thought.think_ms)
    for tally, moves, ms in zip(tallies, answered, times):
        if not moves:
            continue
        tally.counts.update(ms)
        # min() keeps the first of equals, as add() does: the match is the same, so the step decides.
        for chosen in (min(moves, key=lambda t: (t.budget_ms - (t.think_ms or 0), _order(t.step))),
                       min(moves, key=lambda t: (t.bank_left_ms, _order(t.step)))):
            tally._consider(Mark(chosen.think_ms or 0, chosen.budget_ms, chosen.bank_left_ms, match_id, chosen.step))
    return tallies


LOW_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
HIGH_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
BANK_MARK = "~"


def number_code(value: int) -> str:
    """A whole number >= 0 in as few characters as the replay's data file can hold unescaped, with no separator
    needed: its last digit in base 36 (``0-9a-z``), the digits before it in base 26 (``A-Z``), so that where an
    upper-case letter ends a number is plain. Under 36 is one character (most moves of most bots), under 936 two.

    >>> [number_code(n) for n in (0, 7, 35, 36, 40, 935, 1200, 10000)]
    ['0', '7', 'z', 'B0', 'B4', 'Zz', 'BHc', 'KRs']
    """
    high, low = divmod(value, 36)
    code = LOW_DIGITS[low]
    while high:
        high, digit = divmod(high, 26)
        code = HIGH_DIGITS[digit] + code
    return code


def predicted_bank(bank_ms: int | None, think_ms: int, move_ms: int | None) -> int | None:
    """The bank after a move of ``think_ms`` when it was ``bank_ms`` before, as the referee counts it (what a move
    thinks beyond ``move_ms``, its own time, comes out of the bank); None when either is unknown. replay.js makes the
    same prediction, so the data file says a bank only where the log's differs (:func:`compact`)."""
    if bank_ms is None or move_ms is None:
        return None
    return max(0, bank_ms - max(0, think_ms - move_ms))


def compact(found: Iterable[Thought], bank_ms: int | None = None, move_ms: int | None = None) -> str:
    """The moves' think times for a replay's data file: one a move event (those :func:`thoughts` found a step
    for), in the replay's order, each a :func:`number_code` (no separators: a long match has hundreds of moves and
    there are 10,000 match pages). The seat's bank after the move is what :func:`predicted_bank` makes of its bank
    before (``bank_ms``, the match's bank, at first) and the move's own time ``move_ms``; where the log's is not
    that (the referee's clock and the log's stamps disagree by a millisecond, or the limits are not known), the
    move's code is followed by ``~`` and the bank's code.

    >>> found = [Thought(0, 12, 11000, 10000, 3), Thought(1, 1500, 11000, 10000, 4), Thought(0, None, 10500, 9500),
    ...          Thought(1, 20, 10500, 9500, 6), Thought(1, 1003, 10499, 9499, 9)]
    >>> compact(found, 10000, 1000)
    'cBPokBBv~KDs'
    >>> compact(found[:2])
    'c~KRsBPo~KDw'
    """
    banks: dict[int, int | None] = {}
    said = []
    for thought in found:
        think = thought.think_ms
        if thought.step is None or think is None:
            continue
        left = thought.bank_left_ms
        # number_code and predicted_bank inline: this runs for every move of every match page.
        code = LOW_DIGITS[think] if think < 36 else number_code(think)
        before = banks.get(thought.seat, bank_ms)
        if before is None or move_ms is None or max(0, before - max(0, think - move_ms)) != left:
            code += BANK_MARK + number_code(left)
        said.append(code)
        banks[thought.seat] = left
    return "".join(said)
