"""Cards, the deck and card values for Least Score.

A card is a two-character string, rank then suit (``"TH"`` is the ten of hearts), the same form the wire protocol
and the logs use. Keeping cards as plain strings (like python-chess keeps squares as ints) makes hands cheap to
copy, hash and serialise; the tables below give each card's rank, suit and value without parsing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

Card: TypeAlias = str
"""A card such as ``"7H"``: rank from :data:`RANKS`, suit from :data:`SUITS`."""

RANKS = "A23456789TJQK"
SUITS = "CDHS"

DECK: tuple[Card, ...] = tuple(rank + suit for suit in SUITS for rank in RANKS)
"""The 52 cards in a fixed order (clubs, diamonds, hearts, spades; Ace to King). Shuffles start from this."""

RANK: dict[Card, int] = {card: RANKS.index(card[0]) + 1 for card in DECK}
"""Rank number of each card: Ace 1, 2..10, Jack 11, Queen 12, King 13."""

SUIT: dict[Card, str] = {card: card[1] for card in DECK}

VALUE: dict[Card, int] = {card: min(RANK[card], 10) for card in DECK}
"""Points a card counts in hand (clause 1): Ace 1, number cards their number, T J Q K 10."""

_CARDS: dict[str, Card] = {card: card for card in DECK}
"""Each card's one string object: parsed cards are the deck's own, so that finding a card in a hand or the deck
(list searches, on every move) meets it by identity rather than comparing characters."""
_value = VALUE.__getitem__


def parse_card(token: object) -> Card:
    """Return ``token`` as a card, or raise ``ValueError`` naming the bad token.

    >>> parse_card("TH")
    'TH'
    >>> parse_card("10H")
    Traceback (most recent call last):
    ...
    ValueError: not a card: '10H' (expected rank A23456789TJQK then suit CDHS, e.g. 'TH')
    """
    if isinstance(token, str):
        card = _CARDS.get(token)
        if card is not None:
            return card
    raise ValueError(f"not a card: {token!r} (expected rank {RANKS} then suit {SUITS}, e.g. 'TH')")


def hand_total(hand: Iterable[Card]) -> int:
    """The total a hand counts (clause 1)."""
    return sum(map(_value, hand))
