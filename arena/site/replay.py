"""A match's moves as its page shows them and its replay steps through them: the move list, a block per round
with the round's turns as a plain-text grid (:func:`turn_grid`) and short lines for its deal and its end
(:func:`fold_line`); and the match's events in the compact encoding that replay.js reads from the match's data file
(:func:`compact_events`), which takes the turns' cards from the page's grids when they can be read back
(:func:`grid_readable`), so that no move is stored twice.

The walk over the log's events that finds all this is :mod:`arena.match.matchview`'s (the runner makes it once, where
the match is played, and keeps it beside the log): here the names and the words are added to what it found
(:func:`move_blocks`). It knows nothing of the store or of snapshots: :func:`arena.site.pages.match.match_page` gives it
a match's view and names and puts what it makes on the match's page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from arena.match.matchview import CARD_SET, Block, Grid, compact_events, dealt_line, grid_readable, read_deal, walk

__all__ = ["CARD_SET", "CARD_TEXTS", "FOLD_LINES", "TURNS", "MoveBlock", "card_text", "compact_events",
           "dealt_line", "fold_line", "grid_readable", "match_moves", "move_blocks", "read_deal", "turn_grid"]

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
"""Events shown in a round's grid of turns; replay.js words their step the way :mod:`arena.game.narrate` does."""
CARD = re.compile(r"[A2-9TJQK][CDHS]")


def grid_text(block: Block, names: Sequence[str]) -> tuple[str, int]:
    """A block's grid as the page shows it, and its tab stop (its widest cell or name, and two): the deal's line
    and the names' line over the rows; nothing for a block with no round."""
    if not block.grid:
        return "", 0
    # The deal is a line of its own: five cards a seat would make every column three times the width of a turn.
    text = [dealt_line(block.events[0][1], names)] if block.dealt else []
    text.append("\t".join(names).rstrip("\t"))
    text += block.rows
    return "\n".join(text), max(block.width, max(map(len, names), default=0)) + 2


def move_blocks(blocks: Iterable[Block], names: Sequence[str],
                line: Callable[[dict[str, Any]], str]) -> list[MoveBlock]:
    """The move list of a match's blocks (:func:`arena.match.matchview.walk`): each event that is not a turn in the
    words of ``line``, each grid with the players' names."""
    return [MoveBlock(tuple([(index, line(event)) for index, event in block.events]), *grid_text(block, names))
            for block in blocks]


def match_moves(events: Sequence[dict[str, Any]], names: Sequence[str],
                line: Callable[[dict[str, Any]], str]) -> tuple[list[MoveBlock], str]:
    """A match's move list and its events as its data file holds them, in one walk over the events (a match has
    hundreds of turns, and there are 10,000 match pages).

    The move list is the line of each event that is not a turn (what ``line`` says of it) and the turns between
    them, cut into rounds, each round's turns as a grid (:func:`turn_grid`).
    The events are :func:`compact_events`'s, with ``grid`` when the match is :func:`grid_readable`.

    >>> events = [{"type": "round_start", "round": 1, "starter": 0, "hands": [["5C"], ["TH"]], "floor": ["2D"],
    ...            "scores": [0, 0]}, {"type": "play", "seat": 0, "discard": ["5C"], "take": "deck", "drew": "KS"},
    ...           {"type": "declare", "seat": 1}]
    >>> blocks, compact = match_moves(events, ["a", "b"], lambda event: f"Round {event['round']}")
    >>> blocks
    [MoveBlock(lines=((0, 'Round 1'),), grid='dealt: a 5C · b TH\\na\\tb\\n5C +KS\\t★', tab=8)]
    >>> compact
    's1:0:=01:2D: t01'
    """
    blocks, encoded = walk(events, names)
    return move_blocks(blocks, names, line), encoded


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
    grid = Grid(len(names))
    for event in turns:
        if event["type"] == "reshuffle":
            grid.reshuffle(event)
        else:
            grid.turn(event, event["type"])
    events = () if dealt is None else ((0, dealt),)
    return grid_text(Block(events, bool(grid.turns) or dealt is not None, dealt is not None, tuple(grid.lines()),
                           grid.width()), names)


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
