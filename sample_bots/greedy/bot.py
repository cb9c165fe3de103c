"""Sample bot "greedy": a one-turn-lookahead strategy that shows how far simple rules get.

Each turn it throws the legal set worth the most points, then takes a floor card if that card is low (value 3 or
less) or would form a pair, sequence or other set with the cards it keeps, else the deck. It declares whenever it
may and holds 5 points or less. It has no randomness, so the same match replays move for move.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import arena_bot

DECLARE_AT = 5
"""Declare when the hand totals this or less: low enough that a random opponent rarely undercuts it."""
LOW_CARD = 3
"""A floor card worth this or less is taken outright: an expected deck card is worth about 6.5."""


class GreedyBot(arena_bot.Bot):
    persistent = True  # nothing outlives a move: every match may be played in the same process

    def on_turn(self, message: dict[str, Any]) -> dict[str, Any]:
        hand: list[str] = message["hand"]
        if message["may_declare"] and arena_bot.total(hand) <= DECLARE_AT:
            return arena_bot.declare()
        # Most points first; among equal points more cards, because a smaller hand fills up more slowly.
        # max() keeps the first of equals, and legal_sets lists sets in a fixed order, so the choice is stable.
        discard = max(arena_bot.legal_sets(hand, self.rules), key=lambda cards: (arena_bot.total(cards), len(cards)))
        kept = [card for card in hand if card not in discard]
        return arena_bot.play(discard, choose_take(kept, message["floor"], self.rules))


def choose_take(kept: list[str], floor: list[str], rules: Mapping[str, Any]) -> str:
    """The lowest floor card that is low or completes a set with ``kept``, else ``"deck"``."""
    wanted = [card for card in floor if arena_bot.value(card) <= LOW_CARD or completes_set(kept, card, rules)]
    return min(wanted, key=arena_bot.value) if wanted else "deck"


def completes_set(kept: list[str], card: str, rules: Mapping[str, Any]) -> bool:
    """Whether ``card`` would be part of a set of two or more cards with some of ``kept``, to throw next turn."""
    return any(len(cards) > 1 and card in cards for cards in arena_bot.legal_sets([*kept, card], rules))


if __name__ == "__main__":
    arena_bot.run(GreedyBot())
