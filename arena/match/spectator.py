"""What a spectator may see of a match that its deal group has not finished: each engine event cut to its public
part, and a sentence for it.

A deal is played in every seat rotation of its group, and its hands stay secret until the whole group is played
(docs/SECURITY.md, ``Store.sealed_groups``). What every player at the table is told of a move is public in that
sense: who threw what, which floor card was taken or that the deck was, a declaration, the scores. So a match in
progress, or an author's page of a sealed match, shows only that (:func:`public_event`): no hand, no card drawn
from the deck, no hand total, and of a round's end its points and scores but not its hands (which would give away
the deal). Pure: events in, events and text out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PUBLIC_FIELDS: dict[str, tuple[str, ...]] = {
    "match_start": ("players",),
    "round_start": ("round", "starter", "floor", "scores"),
    "play": ("seat", "discard", "take"),
    "declare": ("seat",),
    "reshuffle": ("deck_size",),
    "forfeit": ("seat",),
    "round_end": ("round", "reason", "declarer", "points", "scores", "eliminated"),
    "match_end": ("places", "scores", "termination"),
}
"""Each event type's fields a spectator may see; an event of a type not here is shown by its type alone."""


def public_event(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` without what a spectator may not see yet (the module's docstring says what and why).

    >>> public_event({"type": "play", "seat": 1, "discard": ["5C"], "take": "deck", "drew": "KS"})
    {'type': 'play', 'seat': 1, 'discard': ['5C'], 'take': 'deck'}
    >>> public_event({"type": "round_start", "round": 2, "starter": 0, "hands": [["AC"], ["2D"]], "floor": ["TH"],
    ...               "scores": [3, 0], "live": [0, 1]})
    {'type': 'round_start', 'round': 2, 'starter': 0, 'floor': ['TH'], 'scores': [3, 0]}
    """
    kind = event.get("type")
    fields = PUBLIC_FIELDS.get(kind, ()) if isinstance(kind, str) else ()
    return {"type": kind} | {key: event[key] for key in fields if key in event}


def public_line(event: dict[str, Any], names: Sequence[str]) -> str:
    """A public event (:func:`public_event`) in words, as a spectator reads it.

    >>> public_line({"type": "play", "seat": 1, "discard": ["5C", "5D"], "take": "deck"}, ["ann", "bob"])
    'bob throws 5C 5D and takes from the deck.'
    >>> public_line({"type": "round_end", "round": 1, "reason": "declared", "declarer": 0, "points": [0, 7],
    ...              "scores": [0, 7], "eliminated": []}, ["ann", "bob"])
    'Round 1 ends: ann declared. Scores: ann 0 (+0), bob 7 (+7).'
    """
    kind = event.get("type")

    def who(seat: Any) -> str:
        return names[seat] if isinstance(seat, int) and 0 <= seat < len(names) else f"seat {seat}"

    if kind == "match_start":
        return f"The match starts: {', '.join(names)}."
    if kind == "round_start":
        return (f"Round {event.get('round')} is dealt; {who(event.get('starter'))} starts, "
                f"the floor shows {' '.join(event.get('floor', []))}.")
    if kind == "play":
        take = event.get("take")
        took = "from the deck" if take == "deck" else f"{take} from the floor"
        return f"{who(event.get('seat'))} throws {' '.join(event.get('discard', []))} and takes {took}."
    if kind == "declare":
        return f"{who(event.get('seat'))} declares."
    if kind == "reshuffle":
        return f"The deck is empty: {event.get('deck_size')} dead cards are shuffled into a new deck."
    if kind == "forfeit":
        return f"{who(event.get('seat'))} forfeits."
    if kind == "round_end":
        declarer = event.get("declarer")
        how = ("no declaration" if declarer is None else f"{who(declarer)} declared"
               + ("" if event.get("reason") == "declared" else " (failed)"))
        scores, points = event.get("scores", []), event.get("points", [])
        shown = ", ".join(f"{who(seat)} {score} (+{points[seat] if seat < len(points) else 0})"
                          for seat, score in enumerate(scores))
        out = ", ".join(who(seat) for seat in event.get("eliminated", []))
        return f"Round {event.get('round')} ends: {how}. Scores: {shown}." + (f" Out: {out}." if out else "")
    if kind == "match_end":
        places = event.get("places", [])
        order = sorted(range(len(places)), key=lambda seat: (places[seat], seat))
        return "Match over: " + ", ".join(f"{places[seat]}. {who(seat)}" for seat in order) + "."
    return str(kind)
