"""A match's moves as its page shows them and its replay steps through them, both made in one walk over the
match's log (:func:`match_moves`): the move list, a block per round with the round's turns as a plain-text grid
(:func:`turn_grid`) and short lines for its deal and its end (:func:`fold_line`); and the match's events in the
compact encoding that replay.js reads from the match's data file (:func:`compact_events`), which takes the turns'
cards from the page's grids when they can be read back (:func:`grid_readable`), so that no move is stored twice.

It knows nothing of the store or of snapshots: :func:`arena.site.data.match_page` gives it a match's events and
names and puts what it makes on the match's page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

SUIT_SYMBOLS = {"C": "\u2663", "D": "\u2666", "H": "\u2665", "S": "\u2660"}


def card_text(code: str) -> str:
    """A card as people write it.

    >>> card_text("TH"), card_text("AS"), card_text("??")
    ('10\u2665', 'A\u2660', '??')
    """
    return CARD_TEXTS.get(code, code)


CARD_TEXTS = {rank + suit: ("10" if rank == "T" else rank) + symbol for rank in "A23456789TJQK"
              for suit, symbol in SUIT_SYMBOLS.items()}
"""Every card's text, made once: a long match's narration writes thousands of cards."""
CARD_SET = frozenset(CARD_TEXTS)


@dataclass(frozen=True)
class MoveBlock:
    """A round of the move list (or the match's start or end): the narrator's sentences for the events that are not
    turns, each with its event's index (the replay shows sentence i at step i + 1), and between the first and the
    others the round's turns as plain text, a column per seat (:func:`turn_grid`)."""

    lines: tuple[tuple[int, str], ...]
    grid: str = ""
    tab: int = 0
    """The grid's columns are tab-separated, this many characters apart (its widest cell and two): a tab a cell
    rather than the spaces that would pad it, about a third of a grid's bytes."""


TURNS = frozenset({"play", "declare", "reshuffle"})
"""Events shown in a round's grid of turns; replay.js words their step the way :mod:`arena.narrate` does."""
CARD = re.compile(r"[A2-9TJQK][CDHS]")


class _Grid:
    """A round's grid of turns (:func:`turn_grid`), built a turn at a time, so that one walk over a match's events
    can make every round's grid along with everything else the page needs (:func:`match_moves`)."""

    def __init__(self, dealt: dict[str, Any] | None, names: Sequence[str]) -> None:
        self.dealt = dealt
        self.names = names
        self.seats = len(names)
        self.turns = 0
        """The turns added, those of no seat at the table among them (a round of only those still has a grid)."""
        self.rows: list[list[str]] = []
        self.notes: dict[int, str] = {}
        self.row: list[str] | None = None
        self.last = len(names)

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

    def text(self) -> tuple[str, int]:
        """The grid's text and its tab stop (its widest cell and two); nothing for a block with no round."""
        if not self.turns and self.dealt is None:
            return "", 0
        names = self.names
        # The deal is a line of its own: five cards a seat would make every column three times the width of a turn.
        text = [] if self.dealt is None else [dealt_line(self.dealt, names)]
        text.append("\t".join(names).rstrip("\t"))
        if self.notes:
            notes = self.notes
            text += [notes[number] if number in notes else "\t".join(cells).rstrip("\t")
                     for number, cells in enumerate(self.rows)]
        else:  # most rounds: no reshuffle
            text += ["\t".join(cells).rstrip("\t") for cells in self.rows]
        return "\n".join(text), max(map(len, chain(names, *self.rows)), default=0) + 2


SEAT_DIGITS = "0123456789"


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


def match_moves(events: Sequence[dict[str, Any]], names: Sequence[str],
                line: Callable[[dict[str, Any]], str]) -> tuple[list[MoveBlock], str]:
    """A match's move list and its events as its data file holds them, in one walk over the events (a match has
    hundreds of turns, and there are 10,000 match pages).

    The move list is the line of each event that is not a turn (what ``line`` says of it) and the turns between
    them, cut into rounds, each round's turns as a grid (:func:`turn_grid`).
    The events are :func:`compact_events`'s, with ``grid`` when the match is :func:`grid_readable` (which the
    walk finds out along the way: in the rare match that is not, they are made again, spelt out).

    >>> events = [{"type": "round_start", "round": 1, "starter": 0, "hands": [["5C"], ["TH"]], "floor": ["2D"],
    ...            "scores": [0, 0]}, {"type": "play", "seat": 0, "discard": ["5C"], "take": "deck", "drew": "KS"},
    ...           {"type": "declare", "seat": 1}]
    >>> blocks, compact = match_moves(events, ["a", "b"], lambda event: f"Round {event['round']}")
    >>> blocks
    [MoveBlock(lines=((0, 'Round 1'),), grid='dealt: a 5C · b TH\\na\\tb\\n5C +KS\\t★', tab=8)]
    >>> compact
    's1:0:=01:2D: t01'
    """
    readable = _names_readable(names)
    dealt = False
    blocks: list[MoveBlock] = []
    lines: list[tuple[int, str]] = []
    grid = _Grid(None, names)
    tokens: list[str] = []
    said = _Tokens(names)
    token = said.token
    run: list[str] = []
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
                blocks.append(MoveBlock(tuple(lines), *grid.text()))
            lines, grid = [], _Grid(event if kind == "round_start" else None, names)
        lines.append((index, line(event)))
    if run:
        tokens.append("t" + "".join(run))
    if lines or grid.turns:
        blocks.append(MoveBlock(tuple(lines), *grid.text()))
    return blocks, " ".join(tokens) if readable else compact_events(events, names=names)


def turn_grid(dealt: dict[str, Any] | None, turns: Sequence[dict[str, Any]], names: Sequence[str]) -> tuple[str, int]:
    """A round's turns as plain text, and its tab stop: a column per seat, a line per time round the table, each cell a turn (the
    cards thrown, then ``+`` and the card drawn from the deck or ``^`` and the one picked up from the floor; ``★``
    a declaration). About a tenth of the bytes of a sentence per turn, which matters on 10,000 match pages; when
    :func:`grid_readable`, replay.js reads the match's turns from these cells (its data file holds only their
    seats), so the turns are on the page once.

    >>> turn_grid({"hands": [["5C"], ["TH", "2D"]]}, [{"type": "play", "seat": 0, "discard": ["5C"],
    ...       "take": "deck", "drew": "KS"}, {"type": "declare", "seat": 1}], ["a", "b"])
    ('dealt: a 5C · b TH 2D\\na\\tb\\n5C +KS\\t★', 8)
    """
    grid = _Grid(dealt, names)
    for event in turns:
        if event["type"] == "reshuffle":
            grid.reshuffle(event)
        else:
            grid.turn(event, event["type"])
    return grid.text()


def _names_readable(names: Sequence[str]) -> bool:
    # No name that would add a line to a grid (replay.js skips each grid's first two lines, the deal and the names).
    return len(names) <= 10 and not any("\n" in name or "\r" in name for name in names)


def grid_readable(events: Sequence[dict[str, Any]], names: Sequence[str]) -> bool:
    """Whether replay.js can read this match's turns back from its grids (:func:`turn_grid`): every turn a
    well-formed play or declaration of a seat 0-9 inside a round, and no name that would add a line to a grid
    (replay.js skips each grid's first two lines, the deal and the names). Otherwise the data file spells every
    turn out, as the engine's log is not the page's to trust. (:func:`match_moves` finds this out as it goes.)"""
    if not _names_readable(names):
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
    # CARD_SET holds exactly the codes CARD matches, and a set's test is several times faster than a match a card.
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
        self.names = names if names is not None and _names_readable(names) else None
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


FOLD_LINES = frozenset({"round_start", "round_end"})
"""Events whose line in the move list is :func:`fold_line`'s, not the narrator's (replay.js words their steps)."""


def fold_line(event: dict[str, Any], names: Sequence[str]) -> str:
    """The move list's line for a deal or a round's end: what a reader without JavaScript needs (who starts and
    the floor; who declared, and each player's score and points), in about half the narrator's words, as it is
    on every round of 10,000 match pages.

    >>> fold_line({"type": "round_start", "round": 2, "starter": 1, "floor": ["TH"]}, ["a", "b"])
    'Round 2: b starts, floor 10♥.'
    >>> fold_line({"type": "round_end", "round": 2, "reason": "failed_declaration", "declarer": 1,
    ...            "hands": [["2C"], ["9D"], []], "points": [0, 27, 0], "scores": [10, 40, 120], "eliminated": []},
    ...           ["a", "b", "c"])
    'Round 2 ends, b declared (failed): a 10 (+0), b 40 (+27).'
    """
    if event["type"] == "round_start":
        return f"Round {event['round']}: {names[event['starter']]} starts, floor {' '.join(map(card_text, event['floor']))}."
    declarer = event["declarer"]
    how = ("no declaration" if declarer is None else
           f"{names[declarer]} declared" + ("" if event["reason"] == "declared" else " (failed)"))
    scores = ", ".join(f"{names[seat]} {event['scores'][seat]} (+{event['points'][seat]})"
                       for seat, hand in enumerate(event["hands"]) if hand)
    out = ", ".join(names[seat] for seat in event["eliminated"])
    return f"Round {event['round']} ends, {how}: {scores}." + (f" Out: {out}." if out else "")
