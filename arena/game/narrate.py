"""The one narrator of a match: engine events and the seats' names in, one sentence per event out, for people.

``arena replay`` prints these lines (with each round's hands under its first and last line), and the site's match
page shows them twice: as its move list, and as the text of each step of the step-through replay (``replay.js``
reads the move list rather than narrating again). One line per event, in order, so that line ``i`` describes the
position after event ``i``. Pure: nothing here reads a file or a store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arena.game.cards import hand_total
from arena.game.results import Fault, termination_of

CardText = Callable[[str], str]


@dataclass(frozen=True)
class Line:
    """What one engine event means: its type (for styling), the round it belongs to, and the sentence."""

    kind: str
    round: int
    text: str
    hands: tuple[str, ...] = ()
    """At a round's start and end: one line per seat in play with its hand and score (for a terminal)."""


class MalformedEvent(ValueError):
    """An event without the fields its type has (a damaged or hand-edited log), counted from 1."""

    def __init__(self, index: int, why: str) -> None:
        super().__init__(f"event {index}: {why}")
        self.index = index


def narrate(events: Sequence[dict[str, Any]], names: Sequence[str], faults: Mapping[int, Fault] | None = None,
            card: CardText = str, show_hands: bool = True) -> list[Line]:
    """One :class:`Line` per event. ``faults`` (by seat) gives a forfeit its reason and detail; ``card`` writes a
    card code the way the medium wants it (``TH`` on a terminal, ``10♥`` on the site); without ``show_hands`` no line
    has its :attr:`Line.hands` (the site, which shows the hands otherwise, skips the work). An event that lacks its
    type or its fields raises :class:`MalformedEvent` (an unknown type is one line of its own: a newer log)."""
    faults = faults or {}
    hands: list[list[str]] = [[] for _ in names]
    round_ = 0

    # Two entrants may share a name (a bot against its copy): the seat tells them apart.
    who = [f"{name} (seat {seat})" for seat, name in enumerate(names)]

    def cards(codes: Sequence[str]) -> str:
        return " ".join(map(card, codes))

    def hand_lines(event: dict[str, Any], scored: bool) -> tuple[str, ...]:
        width = max(len(name) for name in names)
        shown = []
        for seat, hand in enumerate(event["hands"]):
            if hand:
                gained = f"  +{event['points'][seat]:<3}" if scored else ""
                shown.append(f"{names[seat]:<{width}}  {cards(hand):<16} total {hand_total(hand):>2}{gained}"
                             f"  score {event['scores'][seat]}")
        return tuple(shown)

    lines = []
    for index, event in enumerate(events, 1):
        kind = event.get("type") if isinstance(event, dict) else None
        if not isinstance(kind, str):
            raise MalformedEvent(index, f'expected an object with a "type" string, got {str(event)[:80]}')
        shown: tuple[str, ...] = ()
        try:
            if kind == "match_start":
                text = (f"The match starts: {len(names)} players, elimination above "
                        f"{event['rules']['threshold']} points.")
            elif kind == "round_start":
                round_ = event["round"]
                hands = [list(hand) for hand in event["hands"]]
                text = (f"Round {round_} is dealt. {who[event['starter']]} starts; "
                        f"the floor shows {cards(event['floor'])}.")
                shown = hand_lines(event, scored=False) if show_hands else ()
            elif kind == "play":
                hand = hands[event["seat"]]
                for code in event["discard"]:
                    if code in hand:
                        hand.remove(code)
                taken = event.get("drew") if event["take"] == "deck" else event["take"]
                if taken:
                    hand.append(taken)
                took = (f"from the deck ({card(taken)})" if event["take"] == "deck" and taken else "from the deck"
                        if event["take"] == "deck" else f"{card(event['take'])} from the floor")
                text = (f"{who[event['seat']]} throws {cards(event['discard'])} and takes {took}; "
                        f"hand total now {hand_total(hand)}.")
            elif kind == "declare":
                text = f"{who[event['seat']]} declares with a total of {hand_total(hands[event['seat']])}."
            elif kind == "reshuffle":
                text = f"The deck is empty: {event['deck_size']} dead cards are shuffled into a new deck."
            elif kind == "forfeit":
                hands[event["seat"]] = []
                fault = faults.get(event["seat"])
                why = (f"{fault.reason.value}: {fault.detail}" if fault is not None
                       else event.get("reason") or "a fault")
                text = f"{who[event['seat']]} forfeits ({why})."
            elif kind == "round_end":
                declarer = event["declarer"]
                how = ("no declaration (turn cap)" if declarer is None else
                       f"{who[declarer]} declared and was lowest" if event["reason"] == "declared" else
                       f"{who[declarer]} declared but was not lowest (failed)")
                scoring = ", ".join(f"{names[seat]} {arithmetic}" for seat, arithmetic in round_arithmetic(event))
                out = ", ".join(names[seat] for seat in event["eliminated"])
                text = f"Round {event['round']} ends: {how}. Points: {scoring}." + (f" Out: {out}." if out else "")
                shown = hand_lines(event, scored=True) if show_hands else ()
            elif kind == "match_end":
                order = sorted(range(len(names)), key=lambda seat: (event["places"][seat], seat))
                text = (f"Match over ({termination_of(event['termination']).text}): "
                        + ", ".join(f"{event['places'][seat]}. {names[seat]} {event['scores'][seat]}"
                                    for seat in order)
                        + ".")
            else:  # an event this version does not know: still one line, so the lines stay in step with the events
                text = str(kind)
        except (KeyError, TypeError, IndexError, ValueError, AttributeError) as error:
            what = (f"without its {error.args[0]!r} field" if isinstance(error, KeyError)
                    else f"with a field of the wrong kind ({type(error).__name__}: {error})")
            raise MalformedEvent(index, f"a {kind} event {what}") from None
        lines.append(Line(kind, round_, text, shown))
    return lines


def round_arithmetic(event: dict[str, Any]) -> list[tuple[int, str]]:
    """How each seat in play scored a round (a ``round_end`` event), as (seat, sum): the sums of protocol/RULES.md
    clauses 6 and 7 written out from the event's own hand totals and points, so a reader can check them.

    A successful declarer scores 0 and every other seat its total minus the declarer's (``8 - 4 = +4``); a failed
    declarer the penalty plus its total minus the lowest other total (``20 + (38 - 4) = +54``) and the others 0; at
    the turn cap every seat its own total. The penalty is read back from the points (the event does not carry the
    rules), so the sum always adds up to what was scored.

    >>> round_arithmetic({"reason": "declared", "declarer": 1, "hands": [["8C"], ["4D"], []],
    ...                   "totals": [8, 4, 0], "points": [4, 0, 0]})
    [(0, '8 - 4 = +4'), (1, '4, declarer: +0')]
    >>> round_arithmetic({"reason": "failed_declaration", "declarer": 0, "hands": [["KC"], ["4D"]],
    ...                   "totals": [38, 4], "points": [54, 0]})
    [(0, 'failed declaration: 20 + (38 - 4) = +54'), (1, '4 → +0')]
    """
    live = [seat for seat, hand in enumerate(event["hands"]) if hand]
    totals, points, declarer = event["totals"], event["points"], event["declarer"]
    shown = []
    for seat in live:
        total, gained = totals[seat], points[seat]
        if declarer is None:
            text = f"{total} = +{gained}"
        elif event["reason"] == "declared":
            text = (f"{total}, declarer: +{gained}" if seat == declarer
                    else f"{total} - {totals[declarer]} = +{gained}")
        elif seat == declarer:
            lowest = min((totals[other] for other in live if other != seat), default=0)
            text = f"failed declaration: {gained - (total - lowest)} + ({total} - {lowest}) = +{gained}"
        else:
            text = f"{total} → +{gained}"
        shown.append((seat, text))
    return shown
