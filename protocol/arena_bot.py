"""A tiny helper for writing Least Score bots in Python (protocol v1; see PROTOCOL.md).

Subclass :class:`Bot`, answer ``on_turn`` with :func:`play` or :func:`declare`, and call :func:`run`;
:func:`legal_sets` lists the sets the rules let you throw. The runner
puts this file on ``PYTHONPATH`` for every bot, so ``import arena_bot`` works inside the sandbox; to be independent
of that, copy this file next to your bot, or install it anywhere as the package built from ``protocol/kit-python``
(docs/REGISTRY.md, "Author kits"). It uses only the standard library.

stdout is the protocol channel: print debug text to stderr (``log()`` does), never to stdout.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from itertools import combinations, pairwise
from typing import Any, BinaryIO

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


def legal_sets(hand: list[str], rules: Mapping[str, Any] | None = None) -> list[list[str]]:
    """Every set of cards from ``hand`` that may be thrown together, each once, cards in hand order.

    ``rules`` is the ``"rules"`` object of the hello message (missing options take the v1 defaults). A set is one
    card, a pair, two pairs (four of a kind always; two different ranks when ``two_pairs_mixed``), a sequence of one
    of the ``sequence_lengths`` (Ace low as in A23 or high as in QKA, never wrapping as in KA2; one suit only when
    ``sequence_same_suit``), or a flush of ``flush_size`` cards of one suit.

    >>> legal_sets(["7H", "8S", "9H", "KD"])[-1]
    ['7H', '8S', '9H']
    >>> ["KS", "AH", "2D"] in legal_sets(["KS", "AH", "2D"])
    False
    """
    options = dict(_DEFAULT_RULES, **(rules or {}))
    # Trying every subset is simple enough to read as the rules themselves, and a hand has at most 5 cards
    # (31 subsets), so it is fast enough for any bot.
    found: list[list[str]] = []
    for size in range(1, len(hand) + 1):
        for pick in combinations(hand, size):
            if _is_set(pick, options):
                found.append(list(pick))
    return found


_DEFAULT_RULES: dict[str, Any] = {
    "two_pairs_mixed": True,
    "sequence_lengths": [3, 5],
    "sequence_same_suit": False,
    "flush_size": 5,
}


def _is_set(cards: tuple[str, ...], rules: Mapping[str, Any]) -> bool:
    count = len(cards)
    ranks = [rank(card) for card in cards]
    suits = {card[1] for card in cards}
    if count == 1:
        return True
    if count == 2:
        return ranks[0] == ranks[1]
    if (
        count in rules["sequence_lengths"]
        and len(set(ranks)) == count
        and (len(suits) == 1 or not rules["sequence_same_suit"])
        and _is_run(ranks)
    ):
        return True
    if count == 4:
        shape = sorted(Counter(ranks).values())
        if shape == [4] or (shape == [2, 2] and rules["two_pairs_mixed"]):
            return True
    return count == rules["flush_size"] and len(suits) == 1


def _is_run(ranks: list[int]) -> bool:
    """Distinct consecutive ranks; the Ace (1) may also follow the King as 14, but a run never wraps."""
    for ordered in (sorted(ranks), sorted(14 if r == 1 else r for r in ranks)):
        if all(b == a + 1 for a, b in pairwise(ordered)):
            return True
    return False


def play(discard: list[str], take: str = "deck") -> dict[str, Any]:
    """A move: throw ``discard``, then take ``"deck"`` or one card of the floor."""
    return {"type": "play", "discard": list(discard), "take": take}


def declare() -> dict[str, Any]:
    return {"type": "declare"}


def log(*parts: object) -> None:
    """Debug output for the bot's author: goes to stderr, which the referee keeps (the last 64 KiB)."""
    print(*parts, file=sys.stderr, flush=True)


class Bot:
    """Override what you need. ``on_turn`` must return a move; everything else is for keeping track.

    Set ``persistent = True`` to play several matches in one process (PROTOCOL.md, "Several matches per process"):
    the same object then gets each match's ``hello`` in turn, so reset what belongs to one match in ``on_hello``
    and keep in attributes what you learn about opponents across matches.
    """

    persistent = False
    """Say so in ``ready``, and answer ``match_end`` with ``done``: the runner may send the next match's hello."""

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
            return {"type": "ready", "persistent": True} if self.persistent else {"type": "ready"}
        if kind == "turn":
            return self.on_turn(message)
        self.on_message(message)
        if kind == "match_end" and self.persistent:
            return {"type": "done"}
        return None


def messages(stream: BinaryIO) -> Iterator[dict[str, Any]]:
    for line in stream:
        yield json.loads(line)


def run(bot: Bot, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """Play until the referee closes stdin (after one match, or after several for a ``persistent`` bot)."""
    source = stdin or sys.stdin.buffer
    sink = stdout or sys.stdout.buffer
    for message in messages(source):
        answer = bot.reply(message)
        if answer is not None:
            sink.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
            sink.flush()  # forgetting this is the commonest reason a bot times out
