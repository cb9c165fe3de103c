"""The rule options of Least Score and the check of which card sets may be thrown (clause 3).

Every decision the original texts leave open is a field of :class:`Rules` with the project's default; the reasons
live in ``protocol/RULES.md``. Nothing here knows about processes, files or bots.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations, pairwise
from typing import Any, Literal

from arena.game.cards import RANK, SUIT, Card, parse_card

DiscardKind = Literal["single", "pair", "two_pairs", "sequence", "flush"]
Until = Literal["last_standing", "first_out"]

UNTIL_CHOICES: tuple[Until, ...] = ("last_standing", "first_out")


class RulesError(ValueError):
    """A rule option with an unknown name or a bad value; the message names the key."""


@dataclass(frozen=True)
class Rules:
    """Every rule option, with the project's defaults. Clause numbers refer to the rules source."""

    two_pairs_mixed: bool = True
    """Clause 3: two pairs may be of two different ranks (four of a kind is always two pairs)."""
    sequence_lengths: tuple[int, ...] = (3, 5)
    """Clause 3: the lengths a sequence may have. The text names 3 and 5, so 4 is not allowed by default."""
    sequence_same_suit: bool = False
    """Clause 3: whether a sequence must be of one suit."""
    flush_size: int = 5
    """Clause 3: how many cards of one suit make a flush."""
    declare_max: int | None = None
    """Clause 5: the highest hand total one may declare with; None for no cap."""
    tie_fails: bool = True
    """Clause 7: a declarer who only ties the lowest other total has failed."""
    penalty: int = 20
    """Clause 7: the fixed part of a failed declarer's penalty."""
    max_turns_per_player: int = 30
    """Turns each live seat may take in one round before it ends with no declarer."""
    threshold: int = 100
    """Clause 8: a seat is eliminated when its score is strictly above this."""
    until: Until = "last_standing"
    """Clause 8: play on until one seat is left, or stop after the first elimination."""
    max_rounds: int = 500
    """A safety cap: after this many rounds the match ends with places by score."""

    def __post_init__(self) -> None:
        for key, (ok, expected) in _CHECKS.items():
            value = getattr(self, key)
            if not ok(value):
                raise RulesError(f"rules.{key}: expected {expected}, got {value!r}")

    @classmethod
    def from_dict(cls, options: Mapping[str, Any]) -> Rules:
        """Build rules from a mapping of option names, rejecting unknown keys and bad values by name.

        >>> Rules.from_dict({"threshold": 50}).threshold
        50
        >>> Rules.from_dict({"treshold": 50})
        Traceback (most recent call last):
        ...
        arena.game.rules.RulesError: rules.treshold: unknown rule option (known: declare_max, flush_size, max_rounds, max_turns_per_player, penalty, sequence_lengths, sequence_same_suit, threshold, tie_fails, two_pairs_mixed, until)
        """
        if not isinstance(options, Mapping):
            raise RulesError(f"rules: expected a mapping of rule options, got {type(options).__name__}")
        known = {f.name for f in dataclasses.fields(cls) if f.init}
        values: dict[str, Any] = {}
        for key, value in options.items():
            if key not in known:
                raise RulesError(f"rules.{key}: unknown rule option (known: {', '.join(sorted(known))})")
            if key == "sequence_lengths" and isinstance(value, list):
                value = tuple(value)
            values[key] = value
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The options as plain JSON-ready values; ``Rules.from_dict(r.to_dict()) == r``."""
        return {
            f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
            for f in dataclasses.fields(self)
            if f.init
        }


def _is_int(value: object, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


_CHECKS: dict[str, tuple[Any, str]] = {
    "two_pairs_mixed": (lambda v: type(v) is bool, "true or false"),
    "sequence_lengths": (
        lambda v: isinstance(v, tuple) and len(v) > 0 and all(_is_int(n, 3, 5) for n in v) and len(set(v)) == len(v),
        "a non-empty list of distinct lengths from 3 to 5",
    ),
    "sequence_same_suit": (lambda v: type(v) is bool, "true or false"),
    "flush_size": (lambda v: _is_int(v, 3, 5), "an integer from 3 to 5"),
    "declare_max": (lambda v: v is None or _is_int(v, 0, 50), "null or an integer from 0 to 50"),
    "tie_fails": (lambda v: type(v) is bool, "true or false"),
    "penalty": (lambda v: _is_int(v, 0, 1000), "an integer from 0 to 1000"),
    "max_turns_per_player": (lambda v: _is_int(v, 1, 10_000), "an integer from 1 to 10000"),
    "threshold": (lambda v: _is_int(v, 1, 100_000), "an integer from 1 to 100000"),
    "until": (lambda v: v in UNTIL_CHOICES, "one of " + ", ".join(UNTIL_CHOICES)),
    "max_rounds": (lambda v: _is_int(v, 1, 100_000), "an integer from 1 to 100000"),
}


def _is_sequence(ranks: Sequence[int]) -> bool:
    """Consecutive distinct ranks, Ace low (A23) or high (QKA) but never wrapping (KA2)."""
    ordered = sorted(ranks)
    if all(b == a + 1 for a, b in pairwise(ordered)):
        return True
    if ordered[0] != 1:
        return False
    high = ordered[1:] + [14]
    return all(b == a + 1 for a, b in pairwise(high))


def discard_kind(cards: Iterable[object], rules: Rules = Rules()) -> DiscardKind | None:
    """Which kind of set ``cards`` form (clause 3), or None when they may not be thrown together.

    Malformed card strings raise ``ValueError`` naming the token. A set that is both a sequence and a flush reports
    ``"sequence"``.

    >>> discard_kind(["7H", "8S", "9H"])
    'sequence'
    >>> discard_kind(["KS", "AH", "2D"]) is None
    True
    """
    hand = [parse_card(token) for token in cards]
    count = len(hand)
    if count == 0 or len(set(hand)) != count:
        return None
    if count == 1:
        return "single"
    ranks = [RANK[card] for card in hand]
    suits = {SUIT[card] for card in hand}
    if count == 2:
        return "pair" if ranks[0] == ranks[1] else None
    if (
        count in rules.sequence_lengths
        and len(set(ranks)) == count
        and (not rules.sequence_same_suit or len(suits) == 1)
        and _is_sequence(ranks)
    ):
        return "sequence"
    if count == 4:
        counts = sorted(Counter(ranks).values())
        if counts == [4] or (rules.two_pairs_mixed and counts == [2, 2]):
            return "two_pairs"
    if count == rules.flush_size and len(suits) == 1:
        return "flush"
    return None


def legal_discards(hand: Sequence[Card], rules: Rules = Rules()) -> list[tuple[Card, ...]]:
    """Every set that may be thrown from ``hand``, each listed once with its cards in hand order.

    Built from rank groups rather than by testing all 31 subsets: this sits on every bot's and policy's hot path.
    """
    found: list[tuple[Card, ...]] = [(card,) for card in hand]
    by_rank: dict[int, list[Card]] = {}
    for card in hand:
        by_rank.setdefault(RANK[card], []).append(card)
    pairs = [pair for group in by_rank.values() for pair in combinations(group, 2)]
    found.extend(pairs)
    order = {card: i for i, card in enumerate(hand)}
    for group in by_rank.values():
        if len(group) == 4:  # four of a kind: one set, however its pairs are split
            found.append(tuple(group))
    if rules.two_pairs_mixed:
        for first, second in combinations(pairs, 2):
            if RANK[first[0]] != RANK[second[0]]:
                found.append(tuple(sorted(first + second, key=order.__getitem__)))
    for length in rules.sequence_lengths:
        if length > len(by_rank):
            continue
        for ranks in combinations(sorted(by_rank), length):
            if not _is_sequence(ranks):
                continue
            for pick in _product([by_rank[r] for r in ranks]):
                if not rules.sequence_same_suit or len({SUIT[c] for c in pick}) == 1:
                    found.append(tuple(sorted(pick, key=order.__getitem__)))
    if len(hand) >= rules.flush_size:
        for pick in combinations(hand, rules.flush_size):
            if len({SUIT[c] for c in pick}) == 1 and pick not in found:
                found.append(pick)
    return found


def _product(groups: list[list[Card]]) -> list[tuple[Card, ...]]:
    picks: list[tuple[Card, ...]] = [()]
    for group in groups:
        picks = [pick + (card,) for pick in picks for card in group]
    return picks
