"""A tiny helper for writing Least Score bots in Python (protocol v1; see PROTOCOL.md).

Subclass :class:`Bot`, answer ``on_turn`` with :func:`play` or :func:`declare`, and call :func:`run`. The runner
puts this file on ``PYTHONPATH`` for every bot, so ``import arena_bot`` works inside the sandbox; to be independent
of that, copy this file next to your bot. It uses only the standard library.

stdout is the protocol channel: print debug text to stderr (``log()`` does), never to stdout.
"""

from __future__ import annotations

import json
import sys
from typing import Any, BinaryIO, Iterator

RANKS = "A23456789TJQK"
VALUE = {rank: min(i + 1, 10) for i, rank in enumerate(RANKS)}


def value(card: str) -> int:
    """Points a card counts: Ace 1, 2..9 face value, T J Q K 10."""
    return VALUE[card[0]]


def rank(card: str) -> int:
    """Rank number: Ace 1 .. King 13."""
    return RANKS.index(card[0]) + 1


def total(hand: list[str]) -> int:
    return sum(value(card) for card in hand)


def play(discard: list[str], take: str = "deck") -> dict[str, Any]:
    """A move: throw ``discard``, then take ``"deck"`` or one card of the floor."""
    return {"type": "play", "discard": list(discard), "take": take}


def declare() -> dict[str, Any]:
    return {"type": "declare"}


def log(*parts: object) -> None:
    """Debug output for the bot's author: goes to stderr, which the referee keeps (the last 64 KiB)."""
    print(*parts, file=sys.stderr, flush=True)


class Bot:
    """Override what you need. ``on_turn`` must return a move; everything else is for keeping track."""

    def on_hello(self, message: dict[str, Any]) -> None:
        self.seat: int = message["seat"]
        self.rules: dict[str, Any] = message["rules"]

    def on_turn(self, message: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def on_message(self, message: dict[str, Any]) -> None:
        """Every other message (round_start, played, reshuffle, forfeit, round_end, match_end, or newer ones)."""

    def reply(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The reply to one message, or None: the whole protocol in one place, so harnesses can drive a bot."""
        kind = message.get("type")
        if kind == "hello":
            self.on_hello(message)
            return {"type": "ready"}
        if kind == "turn":
            return self.on_turn(message)
        self.on_message(message)
        return None


def messages(stream: BinaryIO) -> Iterator[dict[str, Any]]:
    for line in stream:
        yield json.loads(line)


def run(bot: Bot, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """Play until the referee closes stdin."""
    source = stdin or sys.stdin.buffer
    sink = stdout or sys.stdout.buffer
    for message in messages(source):
        answer = bot.reply(message)
        if answer is not None:
            sink.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
            sink.flush()  # forgetting this is the commonest reason a bot times out
