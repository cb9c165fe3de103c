"""Sample bot "random": a uniformly random legal move, the baseline every other bot should beat.

It throws a random legal set (``arena_bot.legal_sets``), takes the deck or a random floor card, and declares with
probability 0.3 whenever it may. Its generator is seeded from the hello message alone (its seat and the players'
names), never from the clock or the global ``random`` state, so the same match replays move for move.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import arena_bot

DECLARE_PROBABILITY = 0.3


class RandomBot(arena_bot.Bot):
    persistent = True  # on_hello reseeds it: a match plays the same in a fresh process or a reused one

    def __init__(self) -> None:
        self.rng = random.Random(0)

    def on_hello(self, message: dict[str, Any]) -> None:
        super().on_hello(message)
        # hashlib rather than hash(): str hashes change from one Python process to the next (PYTHONHASHSEED).
        key = json.dumps([message["seat"], message["players"]]).encode()
        self.rng = random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))

    def on_turn(self, message: dict[str, Any]) -> dict[str, Any]:
        if message["may_declare"] and self.rng.random() < DECLARE_PROBABILITY:
            return arena_bot.declare()
        # Every set can be combined with every take, so a uniform set and a uniform take give a uniform move.
        discard = self.rng.choice(arena_bot.legal_sets(message["hand"], self.rules))
        take = self.rng.choice(["deck", *message["floor"]])
        return arena_bot.play(discard, take)


if __name__ == "__main__":
    arena_bot.run(RandomBot())
