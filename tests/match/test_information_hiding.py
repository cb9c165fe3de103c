"""No message to a bot before round_end holds another seat's hidden cards or the deck's order."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from arena.game.cards import DECK
from arena.game.engine import Match
from arena.game.rules import Rules
from arena.match.local import play_local

CARDS = set(DECK)


class RandomLegalBot:
    """Plays a random legal set, takes anything, declares sometimes: it reaches every kind of message."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.match: Match | None = None

    def reply(self, message: dict[str, Any]) -> dict[str, Any] | None:
        if message["type"] == "hello":
            return {"type": "ready"}
        if message["type"] != "turn":
            return None
        if message["may_declare"] and self.rng.random() < 0.15:
            return {"type": "declare"}
        hand = message["hand"]
        card = self.rng.choice(hand)
        return {"type": "play", "discard": [card], "take": self.rng.choice(["deck", *message["floor"]])}


def cards_in(message: dict[str, Any]) -> set[str]:
    text = json.dumps(message)
    return {card for card in CARDS if f'"{card}"' in text}


class Knowledge:
    """Follows the engine's events to know, at any event, which cards each seat may legitimately know of."""

    def __init__(self, match: Match) -> None:
        self.match = match
        self.seen = 0
        self.hands: list[set[str]] = []
        self.held: list[set[str]] = []  # every card a seat has held this round
        self.public: set[str] = set()   # the first floor card and every discard of this round

    def advance(self, index: int) -> None:
        for event in self.match.events[self.seen : index + 1]:
            kind = event["type"]
            if kind == "round_start":
                self.hands = [set(hand) for hand in event["hands"]]
                self.held = [set(hand) for hand in event["hands"]]
                self.public = set(event["floor"])
            elif kind == "play":
                hand = self.hands[event["seat"]]
                hand.difference_update(event["discard"])
                self.public.update(event["discard"])
                got = event.get("drew", event["take"])
                hand.add(got)
                self.held[event["seat"]].add(got)
        self.seen = max(self.seen, index + 1)

    def hidden_from(self, seat: int) -> set[str]:
        return CARDS - self.public - self.held[seat]


@pytest.mark.parametrize("players", [2, 3, 5, 8])
def test_no_message_reveals_hidden_cards_before_round_end(players):
    checked = 0
    knowledge: Knowledge | None = None

    def observe(seat: int, message: dict[str, Any], match: Match, index: int) -> None:
        nonlocal checked, knowledge
        if knowledge is None or knowledge.match is not match:
            knowledge = Knowledge(match)
        knowledge.advance(index)
        if message["type"] in ("round_end", "match_end", "hello"):
            return
        leaked = cards_in(message) & knowledge.hidden_from(seat)
        assert not leaked, f"{message['type']} to seat {seat} leaks {sorted(leaked)}: {message}"
        checked += 1

    for seed in range(6):
        bots = [RandomLegalBot(seed * 10 + seat) for seat in range(players)]
        play_local(bots, seed, Rules(threshold=40, max_turns_per_player=8), observer=observe)
    assert checked > 100


def test_the_checker_catches_a_leak():
    """The check above must be able to fail: a message holding the next seat's hand is caught."""
    match = Match(3, 4)
    knowledge = Knowledge(match)
    knowledge.advance(len(match.events) - 1)
    leak = {"type": "turn", "hand": match.hands[1]}
    assert cards_in(leak) & knowledge.hidden_from(0) == set(match.hands[1])
    assert cards_in({"type": "turn", "hand": match.hands[0]}) & knowledge.hidden_from(0) == set()


def test_round_end_reveals_every_hand():
    transcript: list[tuple[int, dict[str, Any]]] = []
    play_local([RandomLegalBot(1), RandomLegalBot(2), RandomLegalBot(3)], 9, Rules(threshold=20),
               transcript=transcript)
    ends = [message for _, message in transcript if message["type"] == "round_end"]
    assert ends and all(sum(len(hand) > 0 for hand in end["hands"]) >= 2 for end in ends)
