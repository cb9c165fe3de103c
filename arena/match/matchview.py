"""A match's *view*: what the results site derives from a match's event log, made once where the match is played
and kept beside its log (``<log>.view``), so that a site build of 10,000 matches need not read and walk 10,000
logs again.

A view holds what a match page takes from the log, in a form that depends on neither the bots' names nor the
page's templates: the move list's blocks (the events that are not turns, which the site words with the names, and
each round's grid of turns without its names line), the engine events in the compact encoding of the replay's data
file (:func:`compact_events`), each seat's think times (:mod:`arena.match.thinktime`), the forfeit steps and the log's
faults. The site adds the names and renders (:mod:`arena.site.replay`, :mod:`arena.site.pages.match`); this module knows
nothing of the site, so the runner can make views without it (arena/run/jobs.py).

A view file is gzip-compressed JSON with its own :data:`FORMAT` and the size and time of the log it was made from:
one of another format, of another log (rewritten since), or unreadable is ignored, and the log is read instead.
The encoding of the events depends on names only through whether they fit a grid (:func:`plain_names`); a view is
made for any names that do, and a match whose names do not is read from its log.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.game.results import Fault
from arena.match.matchlog import LoadedLog, LogError, load, parse_json
from arena.match.thinktime import Mark, Tally, by_seat, compact, thoughts

FORMAT = 1
"""The view file's format: bumped whenever what a view holds, or how it is derived, changes (a golden test in
tests/match/test_matchview.py fails until it is), so that a build never trusts a view an older arena made."""
SUFFIX = ".view"

CARD_SET = frozenset(rank + suit for rank in "A23456789TJQK" for suit in "CDHS")
SEAT_DIGITS = "0123456789"


class Grid:
    """A round's grid of turns (the page's :func:`arena.site.replay.turn_grid`) without its names: its rows, built
    a turn at a time, so that one walk over a match's events makes every round's grid along with the rest."""

    def __init__(self, seats: int) -> None:
        self.seats = seats
        self.turns = 0
        """The turns added, those of no seat at the table among them (a round of only those still has a grid)."""
        self.rows: list[list[str]] = []
        self.notes: dict[int, str] = {}
        self.row: list[str] | None = None
        self.last = seats

    def reshuffle(self, event: dict[str, Any]) -> None:
        """A reshuffle: a line of its own, and the next turn starts a new line."""
        self.turns += 1
        self.notes[len(self.rows)] = f"(the deck is empty: {event.get('deck_size')} dead cards reshuffled)"
        self.rows.append([""] * self.seats)
        self.row, self.last = None, self.seats

    def turn(self, event: dict[str, Any], kind: str) -> str | None:
        """Add a play or a declaration (``kind``); a turn of no seat at the table is left out. Returns the turn's
        seat as the data file gives it (its digit) when replay.js can read the turn back from its cell (a seat
        0-9 and, for a play, nothing but card codes: see :func:`grid_readable`), else None."""
        self.turns += 1
        seat = event.get("seat")
        if not isinstance(seat, int) or not 0 <= seat < self.seats:
            return None
        row = self.row
        if row is None or seat <= self.last:
            row = self.row = [""] * self.seats
            self.rows.append(row)
        self.last = seat
        cell = "★" if kind == "declare" else _play_cell(event)
        legible = cell is not None and type(seat) is int and seat < 10
        if cell is None:
            cell = _any_play_cell(event)
        row[seat] = cell
        return SEAT_DIGITS[seat] if legible else None

    def lines(self) -> list[str]:
        """The grid's lines after its deal and its names: a line per time round the table, tab-separated."""
        notes = self.notes
        if notes:
            return [notes[number] if number in notes else "\t".join(cells).rstrip("\t")
                    for number, cells in enumerate(self.rows)]
        return ["\t".join(cells).rstrip("\t") for cells in self.rows]  # most rounds: no reshuffle

    def width(self) -> int:
        """The widest cell (the page's tab stop is the widest of these and the names, and two)."""
        return max([len(cell) for row in self.rows for cell in row], default=0)


@dataclass(frozen=True)
class Block:
    """A block of the move list without names: the events that are not turns, each with its index (the page
    words them), and whether the block has a grid, with its deal (the first event) when ``dealt``, its rows
    (:meth:`Grid.lines`) and its widest cell."""

    events: tuple[tuple[int, dict[str, Any]], ...]
    grid: bool = False
    dealt: bool = False
    rows: tuple[str, ...] = ()
    width: int = 0


def dealt_line(dealt: dict[str, Any], names: Sequence[str]) -> str:
    """A grid's first line: the deal, each seat with cards, its name and its cards. replay.js reads a deal's hands
    back from it (:func:`read_deal`) when they can be, so that the data file need not hold them again.

    >>> dealt_line({"hands": [["5C", "TH"], [], ["2D", "AS"]]}, ["a", "b", "c"])
    'dealt: a 5C TH · c 2D AS'
    """
    return "dealt: " + " · ".join(f"{names[seat]} {' '.join(map(str, hand))}"
                                  for seat, hand in enumerate(dealt.get("hands", [])) if seat < len(names) and hand)


def read_deal(line: str, seats: str, count: int) -> list[list[str]]:
    """The ``count`` hands of a deal as replay.js reads them from its :func:`dealt_line`: the line's parts (`` · ``
    between them) are the hands of ``seats`` (their digits) in order, each the card codes that end its part; the
    other seats have none. A data file refers to the line only when this gives the deal's hands back exactly.

    >>> read_deal("dealt: a 5C TH · c 2D AS", "02", 3), read_deal("dealt: b AS 5C · 7H", "01", 2)
    ([['5C', 'TH'], [], ['2D', 'AS']], [['AS', '5C'], []])
    """
    hands: list[list[str]] = [[] for _ in range(count)]
    for seat, part in zip(seats, line[len("dealt: "):].split(" · ")):
        # What replay.js's /(?: [A2-9TJQK][CDHS])+$/ finds, without a regular expression (this runs for every
        # deal of every match page): the words that end the part and are card codes, each after a space.
        words = part.split(" ")
        start = len(words)
        while start > 1 and words[start - 1] in CARD_SET:
            start -= 1
        hands[int(seat)] = words[start:]
    return hands


def _play_cell(event: dict[str, Any]) -> str | None:
    """A play's grid cell when replay.js can read it back (every card a card code, or no card drawn from the
    deck): the cards thrown, then `` +`` and the card drawn from the deck (``?`` when the log does not say) or
    `` ^`` and the one taken from the floor. None otherwise."""
    discard = event.get("discard")
    try:
        if not isinstance(discard, list) or not discard or not CARD_SET.issuperset(discard):
            return None
    except TypeError:  # something unhashable where a card should be
        return None
    take = event.get("take")
    if take == "deck":
        drew = event.get("drew")
        if drew is None:
            return "".join(discard) + " +?"
        return f"{''.join(discard)} +{drew}" if isinstance(drew, str) and drew in CARD_SET else None
    return f"{''.join(discard)} ^{take}" if isinstance(take, str) and take in CARD_SET else None


def _any_play_cell(event: dict[str, Any]) -> str:
    # Whatever the log holds, written as it is (the page escapes it): a grid replay.js cannot read back.
    took = event.get("drew") if event.get("take") == "deck" else event.get("take")
    return ("".join(map(str, event.get("discard", [])))
            + (" +" if event.get("take") == "deck" else " ^") + (str(took) if took else "?"))


def names_readable(names: Sequence[str]) -> bool:
    """No name that would add a line to a grid (replay.js skips each grid's first two lines, the deal and the
    names), and at most ten seats (a seat is a digit in the data file)."""
    return len(names) <= 10 and not any("\n" in name or "\r" in name for name in names)


def plain_names(names: Sequence[str]) -> bool:
    """Names for which the events' encoding (:func:`walk`) is the same whatever they are: none with a line break,
    a space or a `` · `` (a deal's line then always gives its hands back). A bot's name is a slug, so a view made
    with stand-ins (:func:`stand_ins`) serves every match the runner plays.

    >>> plain_names(["greedy", "js-greedy"]), plain_names(["my bot"])
    (True, False)
    """
    return not any("\n" in name or "\r" in name or " " in name or "·" in name for name in names)


def stand_ins(seats: int) -> list[str]:
    """Plain names (:func:`plain_names`) for ``seats`` seats: what a view is made with."""
    return [str(seat) for seat in range(seats)]


def grid_readable(events: Sequence[dict[str, Any]], names: Sequence[str]) -> bool:
    """Whether replay.js can read this match's turns back from its grids: every turn a well-formed play or
    declaration of a seat 0-9 inside a round, and no name that would add a line to a grid (replay.js skips each
    grid's first two lines, the deal and the names). Otherwise the data file spells every turn out, as the
    engine's log is not the page's to trust. (:func:`walk` finds this out as it goes.)"""
    if not names_readable(names):
        return False
    dealt = False
    for event in events:
        kind = event.get("type")
        dealt = dealt or kind == "round_start"
        if kind != "play" and kind != "declare":
            continue
        seat = event.get("seat")
        if not dealt or type(seat) is not int or not 0 <= seat < len(names):
            return False
        if kind == "play" and _play_cell(event) is None:
            return False
    return True


def walk(events: Sequence[dict[str, Any]], names: Sequence[str]) -> tuple[list[Block], str]:
    """A match's move list without names, and its events as its data file holds them, in one walk over the
    events (a match has hundreds of turns, and there are 10,000 match pages); ``names`` decide only whether the
    turns can be read from the grids and how a deal is encoded (:func:`plain_names`: any plain names of the same
    number give the same).

    The blocks cut the events into rounds: each round's events that are not turns, and its turns as a grid.
    The events are :func:`compact_events`'s, with ``grid`` when the match is :func:`grid_readable` (which the
    walk finds out along the way: in the rare match that is not, they are made again, spelt out).

    >>> events = [{"type": "round_start", "round": 1, "starter": 0, "hands": [["5C"], ["TH"]], "floor": ["2D"],
    ...            "scores": [0, 0]}, {"type": "play", "seat": 0, "discard": ["5C"], "take": "deck", "drew": "KS"},
    ...           {"type": "declare", "seat": 1}]
    >>> blocks, compact = walk(events, ["a", "b"])
    >>> blocks[0].rows, blocks[0].width, compact
    (('5C +KS\\t★',), 6, 's1:0:=01:2D: t01')
    """
    readable = names_readable(names)
    seats = len(names)
    dealt = False
    blocks: list[Block] = []
    lines: list[tuple[int, dict[str, Any]]] = []
    grid, dealing = Grid(seats), False
    tokens: list[str] = []
    said = _Tokens(names)
    token = said.token
    run: list[str] = []

    def block() -> Block:
        if not grid.turns and not dealing:
            return Block(tuple(lines))
        return Block(tuple(lines), True, dealing, tuple(grid.lines()), grid.width())

    for index, event in enumerate(events):
        kind = event.get("type")
        if kind == "play" or kind == "declare":
            digit = grid.turn(event, kind)
            if digit is not None and dealt and readable:
                run.append(digit)
                if kind == "play":
                    said.play(event)
            else:
                readable = False
            continue
        if run:
            tokens.append("t" + "".join(run))
            run = []
        tokens.append(token(event))
        if kind == "reshuffle":
            grid.reshuffle(event)
            continue
        if kind == "round_start" or kind == "match_end":
            dealt = dealt or kind == "round_start"
            if lines or grid.turns:
                blocks.append(block())
            lines, grid, dealing = [], Grid(seats), kind == "round_start"
        lines.append((index, event))
    if run:
        tokens.append("t" + "".join(run))
    if lines or grid.turns:
        blocks.append(block())
    return blocks, " ".join(tokens) if readable else compact_events(events, names=names)


def _all_cards(codes: Sequence[Any]) -> bool:
    # A set's superset test rather than a check per card: this runs for every turn of every match.
    try:
        return CARD_SET.issuperset(codes)
    except TypeError:  # something unhashable where a card should be
        return False


def compact_events(events: Sequence[dict[str, Any]], grid: bool = False, names: Sequence[str] | None = None) -> str:
    """The engine events as replay.js reads them: one space-separated token per event, about a seventh of the
    bytes of the events' JSON. ``p0:QDQH:d2H`` seat 0 threw Q♦ Q♥ and drew 2♥ (``fQH``: took Q♥ from the floor),
    ``c0`` seat 0 declared, ``s1:0:2S3C|AH9H:AD:0,0`` round 1 dealt with seat 0 to start (hands, floor, scores),
    ``e1:d:0:2D|AH3H:0,11:0,11:`` its end (reason, declarer, hands, points, scores, the seats out), ``r30`` a
    reshuffle, ``f2`` seat 2's forfeit, ``x1,3,2:10,120,40`` the end (places, scores), ``m`` the start, ``?`` any
    other event (its step still has the narrator's line). Anything that does not fit (a card code no deck has)
    is a ``?``: the log is the engine's, but a page must never break on it.

    With ``grid`` (the match is :func:`grid_readable`), a run of turns is one token of their seats, ``t0120``:
    replay.js takes each turn's cards from the next cell of the page's grids. With the players' ``names``, a deal
    whose grid's first line gives its hands back (:func:`read_deal`) has ``=`` and the digits of the seats dealt
    cards in their place (``s2:1:=01:AD:``); a deal's scores are left out when they are the last round end's (or
    zeros, before any): the page holds the hands, and the scores are the round end's.

    >>> deal = {"type": "round_start", "round": 1, "starter": 0, "hands": [["5C"], ["TH"]], "floor": ["2D"],
    ...         "scores": [0, 0]}
    >>> compact_events([deal]), compact_events([deal], names=["a", "b"])
    ('s1:0:5C|TH:2D:0,0', 's1:0:=01:2D:')
    >>> turns = [{"type": "play", "seat": 1, "discard": ["QD", "QH"], "take": "deck", "drew": "2H"},
    ...          {"type": "declare", "seat": 2}]
    >>> compact_events(turns + [{"type": "play", "seat": 0, "discard": ["<b>"]}])
    'p1:QDQH:d2H c2 ?'
    >>> compact_events(turns + [{"type": "forfeit", "seat": 0}] + turns, grid=True)
    't12 f0 t12'
    """
    tokens: list[str] = []
    said = _Tokens(names)
    token = said.token
    run: list[str] = []
    for event in events:
        kind = event.get("type")
        if grid and (kind == "play" or kind == "declare"):
            run.append(str(event["seat"]))
            if kind == "play":
                said.play(event)
            continue
        if run:
            tokens.append("t" + "".join(run))
            run = []
        tokens.append(token(event))
    if run:
        tokens.append("t" + "".join(run))
    return " ".join(tokens)


def _cards(codes: Any) -> str:
    # CARD_SET holds exactly the codes a card can be, and a set's test is several times faster than a match a card.
    if not isinstance(codes, list) or not _all_cards(codes):
        raise ValueError(codes)
    return "".join(codes)


def _hands(hands: Any) -> str:
    return "|".join([_cards(hand) for hand in hands])


END_REASONS = {"declared": "d", "failed_declaration": "f"}
"""How a round ended, in the data file (``t`` for any other reason: the turn cap)."""


def _ints(values: Any) -> str:
    if not isinstance(values, list) or not all(type(value) is int for value in values):
        raise ValueError(values)
    return ",".join(map(str, values))


def _seat(value: Any) -> str:
    if type(value) is not int:
        raise ValueError(value)
    return str(value)


class _Tokens:
    """Makes the events' tokens in order (:func:`_compact`), with what a token may leave to replay.js: a deal's hands
    when its grid's :func:`dealt_line` gives them back (``=`` and the digits of the seats with cards: ``names``
    known and fit for it), a deal's scores when they are the last round end's (or, before any, zeros: empty), a
    round end's hands when they are those replay.js holds by then (``=``): the deal's, each play's cards thrown
    taken out and the card taken put at the end, a forfeited seat's none (:meth:`play`, as replay.js does)."""

    def __init__(self, names: Sequence[str] | None) -> None:
        self.names = names if names is not None and names_readable(names) else None
        self.plain = self.names is not None and not any(" " in name or "·" in name for name in self.names)
        """Names of one word: a deal line then always gives its hands back (a name is its part's first word, the
        card codes the others), so that the check of each deal is left out (it runs for every deal of every page)."""
        self.scores: list[int] | None = None if names is None else [0] * len(names)
        self.hands: list[list[str]] | None = None
        """The hands as replay.js holds them, as far as they are known."""

    def token(self, event: dict[str, Any]) -> str:
        token = _compact(event, self)
        kind = token[0]
        if kind == "e":
            self.scores = event["scores"]
        if kind == "s" or kind == "e":
            self.hands = [list(hand) for hand in event["hands"]]
        elif kind == "p":
            self.play(event)
        elif kind == "f" and self.hands is not None:
            if 0 <= event["seat"] < len(self.hands):
                self.hands[event["seat"]] = []
            else:
                self.hands = None
        return token

    def play(self, event: dict[str, Any]) -> None:
        """A play replay.js reads (its token, or its grid cell) applied to the hands."""
        hands, seat = self.hands, event["seat"]
        if hands is None:
            return
        if not 0 <= seat < len(hands):
            self.hands = None
            return
        hand = hands[seat]
        for card in event["discard"]:
            if card in hand:
                hand.remove(card)
        taken = event.get("drew") if event.get("take") == "deck" else event.get("take")
        if taken:
            hand.append(taken)

    def end_hands(self, event: dict[str, Any]) -> str:
        """A round end's hands, as its token has them."""
        hands = _hands(event["hands"])
        return "=" if self.hands is not None and self.hands == event["hands"] else hands

    def deal(self, event: dict[str, Any]) -> tuple[str, str]:
        """A deal's hands and scores, as its token has them."""
        hands, scores = _hands(event["hands"]), _ints(event["scores"])
        if self.names is not None and len(event["hands"]) == len(self.names):
            seats = "".join(SEAT_DIGITS[seat] for seat, hand in enumerate(event["hands"]) if hand)
            if self.plain or read_deal(dealt_line(event, self.names), seats, len(self.names)) == event["hands"]:
                hands = "=" + seats
        return hands, "" if event["scores"] == self.scores else scores


def _compact(event: dict[str, Any], tokens: _Tokens | None = None) -> str:
    kind = event.get("type")
    try:
        if kind == "play":
            take = event.get("take")
            taken = ("d" + _cards([event["drew"]] if event.get("drew") else [])) if take == "deck" else "f" + _cards([take])
            return f"p{_seat(event['seat'])}:{_cards(event['discard'])}:{taken}"
        if kind == "declare":
            return f"c{_seat(event['seat'])}"
        if kind == "reshuffle":
            return f"r{_seat(event['deck_size'])}"
        if kind == "forfeit":
            return f"f{_seat(event['seat'])}"
        if kind == "round_start":
            hands, scores = (_hands(event["hands"]), _ints(event["scores"])) if tokens is None else tokens.deal(event)
            return f"s{_seat(event['round'])}:{_seat(event['starter'])}:{hands}:{_cards(event['floor'])}:{scores}"
        if kind == "round_end":
            reason = END_REASONS.get(event["reason"], "t")
            declarer = "" if event["declarer"] is None else _seat(event["declarer"])
            hands = _hands(event["hands"]) if tokens is None else tokens.end_hands(event)
            return (f"e{_seat(event['round'])}:{reason}:{declarer}:{hands}"
                    f":{_ints(event['points'])}:{_ints(event['scores'])}:{_ints(event['eliminated'])}")
        if kind == "match_end":
            return f"x{_ints(event['places'])}:{_ints(event['scores'])}"
        if kind == "match_start":
            return "m"
    except (KeyError, TypeError, ValueError):
        pass
    return "?"


def forfeit_steps(events: Sequence[dict[str, Any]]) -> dict[int, int]:
    """Each forfeited seat's step in the match's replay (1-based: a step per engine event, as replay.js counts
    them).

    >>> forfeit_steps([{"type": "match_start"}, {"type": "play", "seat": 0}, {"type": "forfeit", "seat": 1}])
    {1: 3}
    """
    steps: dict[int, int] = {}
    for step, event in enumerate(events, 1):
        if event.get("type") == "forfeit" and isinstance(event.get("seat"), int):
            steps.setdefault(event["seat"], step)
    return steps


@dataclass(frozen=True)
class MatchView:
    """What the site shows of one match's log (see the module's docstring), for ``seats`` seats with any
    :func:`plain_names` (``names`` empty), or for exactly ``names`` (a view made in a build for names that are not
    plain: never written)."""

    seats: int
    blocks: tuple[Block, ...]
    events: str
    """The events as the data file holds them (:func:`walk`)."""
    think: str
    """The moves' think times as the data file holds them (:func:`arena.match.thinktime.compact`)."""
    bank_ms: int | None
    move_ms: int | None
    tallies: tuple[Tally, ...]
    """Each seat's think times, of no match yet (:meth:`tallies_of` adds the match)."""
    forfeits: dict[int, int]
    faults: dict[int, Fault]
    """The log's fault records, by seat (a page of a match the store has no result of shows these)."""
    stderr: bool
    """Whether the log holds a fault record's stderr tail (a site that shows no stderr offers the log without)."""
    log: str = ""
    """The path of the log it is of (not kept in the file: where it was found)."""
    names: tuple[str, ...] = ()
    source: tuple[int, int] | None = field(default=None, compare=False)
    """The log's size and modification time (ns) when it was made from a log on disk."""

    def fits(self, names: Sequence[str]) -> bool:
        """Whether this view serves a page with these names in its seats."""
        if self.names:
            return tuple(names) == self.names
        return len(names) == self.seats and plain_names(names)

    def tallies_of(self, match_id: int) -> list[Tally]:
        """Each seat's think times as :func:`arena.match.thinktime.by_seat` gives them for match ``match_id``."""
        return [Tally(Counter(tally.counts), tally.unanswered, _of(tally.closest, match_id),
                      _of(tally.least_bank, match_id), {match_id}) for tally in self.tallies]

    def to_json(self) -> dict[str, Any]:
        assert not self.names, "a view made for particular names is never kept"
        return {"format": FORMAT, "source": None if self.source is None else list(self.source), "seats": self.seats,
                "blocks": [[[[index, event] for index, event in block.events], block.grid, block.dealt,
                            list(block.rows), block.width] for block in self.blocks],
                "events": self.events, "think": self.think, "bank": self.bank_ms, "move": self.move_ms,
                "tallies": [tally.state() for tally in self.tallies],
                "forfeits": {str(seat): step for seat, step in self.forfeits.items()},
                "faults": {str(seat): fault.to_dict() for seat, fault in self.faults.items()}, "stderr": self.stderr}

    @classmethod
    def from_json(cls, data: dict[str, Any], log: str) -> MatchView:
        """The view :meth:`to_json` gave (KeyError, TypeError or ValueError for anything else)."""
        source = data["source"]
        return cls(
            int(data["seats"]),
            tuple(Block(tuple((int(index), event) for index, event in events), bool(grid), bool(dealt),
                        tuple(rows), int(width)) for events, grid, dealt, rows, width in data["blocks"]),
            _text(data["events"]), _text(data["think"]), _optional_int(data["bank"]), _optional_int(data["move"]),
            tuple(Tally.from_state(state) for state in data["tallies"]),
            {int(seat): int(step) for seat, step in data["forfeits"].items()},
            {int(seat): Fault.from_dict(fault) for seat, fault in data["faults"].items()}, bool(data["stderr"]),
            log, (), None if source is None else (int(source[0]), int(source[1])))


def _of(mark: Mark | None, match_id: int) -> Mark | None:
    return None if mark is None else Mark(mark.think_ms, mark.budget_ms, mark.bank_left_ms, match_id, mark.step)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def _optional_int(value: Any) -> int | None:
    if value is not None and type(value) is not int:
        raise TypeError(value)
    return value


def limits_of(header: dict[str, Any]) -> tuple[int | None, int | None]:
    """The match's bank and move time from its log's header (None where it does not say, as a whole number)."""
    limits = header.get("limits")
    bank, move = (limits.get("bank_ms"), limits.get("move_ms")) if isinstance(limits, dict) else (None, None)
    return (bank if type(bank) is int else None), (move if type(move) is int else None)


def derive(log: LoadedLog, seats: int, names: Sequence[str] = ()) -> MatchView:
    """The view of a log read, for ``seats`` seats and any plain names (or for exactly ``names``, given)."""
    events = log.events
    blocks, encoded = walk(events, names or stand_ins(seats))
    found = thoughts(log.text, events)
    bank, move = limits_of(log.header)
    return MatchView(seats, tuple(blocks), encoded, compact(found, bank, move), bank, move,
                     tuple(by_seat(found, seats)), forfeit_steps(events), dict(log.faults),
                     b'"stderr_tail"' in log.text, str(log.path), tuple(names))


def view_path(log: Path | str) -> Path:
    """Where the view of the log at ``log`` is kept: beside it."""
    return Path(os.fspath(log) + SUFFIX)


def read_view(log: str, status: os.stat_result) -> MatchView | None:
    """The view kept beside ``log`` (whose ``stat`` is ``status``) when it is one this code reads and of the log as
    it is now; None otherwise (none, unreadable, another format, a log written since): then the log is read."""
    try:
        view = _parse(view_path(log).read_bytes(), log)
    except OSError:
        return None
    return view if view is not None and view.source == (status.st_size, status.st_mtime_ns) else None


def _parse(content: bytes, log: str) -> MatchView | None:
    """A view file's content read back; None for anything but a view of this :data:`FORMAT`."""
    try:
        data = parse_json(gzip.decompress(content))
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("source") is None:
            return None
        return MatchView.from_json(data, log)
    except (OSError, EOFError, ValueError, TypeError, KeyError, AttributeError):
        return None


def keep_moved_view(content: bytes, log: Path) -> bool:
    """Keep beside ``log`` the view a worker made of the same log elsewhere (``content``, its file's bytes; a Dask
    worker plays into a scratch directory and sends both back): the log was written again here, so the view is
    stamped with its size and time here. False, and nothing kept, when either is not what it should be."""
    view = _parse(content, os.fspath(log))
    try:
        status = os.stat(log)
    except OSError:
        return False
    if view is None or view.source is None or view.source[0] != status.st_size:
        return False
    return write_view(dataclasses.replace(view, source=(status.st_size, status.st_mtime_ns)))


def write_view(view: MatchView) -> bool:
    """Keep ``view`` beside its log (written whole, then renamed: a reader never sees half a view). Best effort:
    False when it cannot be written (a read-only store), which costs the next build a read of the log."""
    path = view_path(view.log)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        partial.write_bytes(gzip.compress(json.dumps(view.to_json(), ensure_ascii=False,
                                                     separators=(",", ":")).encode(), compresslevel=6, mtime=0))
        os.replace(partial, path)
    except OSError:
        try:
            partial.unlink(missing_ok=True)
        except OSError:
            pass  # never made: a read-only store
        return False
    return True


def view_log(path: Path, seats: int) -> MatchView | None:
    """Make and keep the view of the log the runner has just closed at ``path`` (a match of ``seats`` seats): what
    the site would otherwise derive from the log in every build. None when the log cannot be read (its page says
    so) or the view cannot be written."""
    try:
        status = os.stat(path)
        view = derive(load(path), seats)
    except (OSError, LogError):
        return None
    view = dataclasses.replace(view, source=(status.st_size, status.st_mtime_ns))
    return view if write_view(view) else None


def source_view(log: str, status: os.stat_result, seats: int) -> MatchView:
    """The view of the log at ``log`` (its ``stat`` ``status``): the one kept beside it if it is valid, else made
    from the log and kept for the next time (best effort). LogError when the log cannot be read."""
    view = read_view(log, status)
    if view is not None and view.seats == seats:
        return view
    view = dataclasses.replace(derive(load(Path(log)), seats), source=(status.st_size, status.st_mtime_ns))
    write_view(view)
    return view
