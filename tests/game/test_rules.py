"""Tests of the card model and of the rules module: card values (clause 1), which sets may be thrown (clause 3),
the generator of legal sets, and the rule options' parsing.

Turn-level and round-level rules (clauses 2 and 4-8) are exercised on a real ``Match`` in ``test_game.py``.
"""

from __future__ import annotations

import json
import random
from itertools import combinations
from typing import Any

import pytest

from arena.game.cards import DECK, RANK, RANKS, SUIT, SUITS, VALUE, hand_total, parse_card
from arena.game.rules import Rules, RulesError, discard_kind, legal_discards

# -- clause 1: the cards and what they count ------------------------------------------------------------------------


def test_clause1_deck_is_52_distinct_cards_in_rank_suit_notation() -> None:
    assert len(DECK) == 52
    assert len(set(DECK)) == 52
    assert {card[0] for card in DECK} == set(RANKS) == set("A23456789TJQK")
    assert {card[1] for card in DECK} == set(SUITS) == set("CDHS")
    assert all(len(card) == 2 for card in DECK)


@pytest.mark.parametrize(
    ("rank", "value"),
    [("A", 1), ("2", 2), ("5", 5), ("9", 9), ("T", 10), ("J", 10), ("Q", 10), ("K", 10)],
)
def test_clause1_card_values_ace_one_faces_ten(rank: str, value: int) -> None:
    for suit in SUITS:
        assert VALUE[rank + suit] == value


def test_clause1_ranks_keep_face_cards_apart_for_sequences() -> None:
    # Values merge T J Q K into 10, but sequences need their distinct ranks.
    assert [RANK[r + "H"] for r in "ATJQK"] == [1, 10, 11, 12, 13]
    assert SUIT["TH"] == "H"


def test_clause1_hand_total() -> None:
    assert hand_total(["AC", "KD", "7H"]) == 18
    assert hand_total(["TS", "JS", "QS", "KS", "AS"]) == 41
    assert hand_total([]) == 0


@pytest.mark.parametrize("token", ["10H", "th", "", "XX", 5, None, "TH ", "1H", ["TH"]])
def test_parse_card_rejects_malformed_tokens_naming_them(token: object) -> None:
    with pytest.raises(ValueError) as error:
        parse_card(token)
    assert repr(token) in str(error.value)


# -- clause 3: which sets may be thrown ----------------------------------------------------------------------------

DEFAULT = Rules()

DISCARD_TABLE: list[tuple[str, list[str], Rules, str | None]] = [
    ("single", ["7H"], DEFAULT, "single"),
    ("pair", ["KH", "KS"], DEFAULT, "pair"),
    ("two different ranks", ["KH", "QS"], DEFAULT, None),
    ("three of a kind never", ["7H", "7S", "7D"], DEFAULT, None),
    ("three of a kind never, even with 3 in sequence_lengths", ["7H", "7S", "7D"], Rules(sequence_lengths=(3, 4, 5)),
     None),
    ("4-card run illegal by default", ["4C", "5D", "6H", "7S"], DEFAULT, None),
    ("4-card run legal with length 4 allowed", ["4C", "5D", "6H", "7S"], Rules(sequence_lengths=(3, 4, 5)),
     "sequence"),
    ("3-card run illegal when only 5 allowed", ["4C", "5D", "6H"], Rules(sequence_lengths=(5,)), None),
    ("A234 illegal by default", ["AH", "2S", "3D", "4C"], DEFAULT, None),
    ("KA2 wraps: illegal", ["KS", "AH", "2D"], DEFAULT, None),
    ("QKA2 wraps: illegal even with 4 allowed", ["QS", "KS", "AH", "2D"], Rules(sequence_lengths=(3, 4, 5)), None),
    ("JQKA2 wraps: illegal", ["JC", "QS", "KS", "AH", "2D"], DEFAULT, None),
    ("QKA: Ace high", ["QH", "KS", "AD"], DEFAULT, "sequence"),
    ("TJQKA: Ace high", ["TH", "JS", "QD", "KC", "AH"], DEFAULT, "sequence"),
    ("A23: Ace low", ["AH", "2S", "3D"], DEFAULT, "sequence"),
    ("A2345: Ace low", ["AH", "2S", "3D", "4C", "5H"], DEFAULT, "sequence"),
    ("JQK", ["JH", "QS", "KD"], DEFAULT, "sequence"),
    ("6 to 10 from the rules text", ["6H", "7S", "8D", "9C", "TH"], DEFAULT, "sequence"),
    ("order in the set does not matter", ["9C", "7S", "8D"], DEFAULT, "sequence"),
    ("gap: illegal", ["2H", "3S", "5D"], DEFAULT, None),
    ("repeated rank in a run: illegal", ["2H", "3S", "3D"], DEFAULT, None),
    ("mixed-suit run legal by default", ["6H", "7S", "8D"], DEFAULT, "sequence"),
    ("mixed-suit run illegal with sequence_same_suit", ["6H", "7S", "8D"], Rules(sequence_same_suit=True), None),
    ("one-suit run legal with sequence_same_suit", ["6H", "7H", "8H"], Rules(sequence_same_suit=True), "sequence"),
    ("5-card one-suit run is reported as a sequence", ["6H", "7H", "8H", "9H", "TH"], DEFAULT, "sequence"),
    ("4 same-suit cards: illegal", ["2H", "5H", "9H", "KH"], DEFAULT, None),
    ("5 same-suit non-run: flush", ["2H", "5H", "9H", "KH", "7H"], DEFAULT, "flush"),
    ("5 mixed suits non-run: illegal", ["2H", "5H", "9H", "KH", "7S"], DEFAULT, None),
    ("3 same-suit cards: flush with flush_size 3", ["2H", "9H", "KH"], Rules(flush_size=3), "flush"),
    ("5 same-suit cards not a flush with flush_size 4", ["2H", "5H", "9H", "KH", "7H"], Rules(flush_size=4), None),
    ("4 same-suit cards: flush with flush_size 4", ["2H", "5H", "9H", "KH"], Rules(flush_size=4), "flush"),
    ("two different pairs", ["5H", "5S", "9D", "9C"], DEFAULT, "two_pairs"),
    ("two different pairs illegal when not mixed", ["5H", "5S", "9D", "9C"], Rules(two_pairs_mixed=False), None),
    ("four of a kind is two pairs", ["9H", "9S", "9D", "9C"], DEFAULT, "two_pairs"),
    ("four of a kind stays two pairs when not mixed", ["9H", "9S", "9D", "9C"], Rules(two_pairs_mixed=False),
     "two_pairs"),
    ("pair + single: illegal", ["5H", "5S", "9D"], DEFAULT, None),
    ("three of a kind + single: illegal", ["5H", "5S", "5D", "9C"], DEFAULT, None),
    ("full house: illegal", ["5H", "5S", "5D", "9C", "9D"], DEFAULT, None),
    ("pair + three singles: illegal", ["5H", "5S", "9D", "2C", "KD"], DEFAULT, None),
    ("duplicate card: not a set", ["5H", "5H"], DEFAULT, None),
    ("duplicate card in a would-be run", ["5H", "6H", "7H", "5H"], DEFAULT, None),
    ("empty: not a set", [], DEFAULT, None),
    ("six cards: never", ["AH", "2S", "3D", "4C", "5H", "6S"], DEFAULT, None),
]


@pytest.mark.parametrize(
    ("cards", "rules", "expected"),
    [pytest.param(cards, rules, expected, id=name) for name, cards, rules, expected in DISCARD_TABLE],
)
def test_clause3_discard_kind(cards: list[str], rules: Rules, expected: str | None) -> None:
    assert discard_kind(cards, rules) == expected


def test_clause3_discard_kind_default_rules_argument() -> None:
    assert discard_kind(["QH", "KS", "AD"]) == "sequence"
    assert discard_kind(["4C", "5D", "6H", "7S"]) is None


@pytest.mark.parametrize("token", ["10H", "th", "", "XX", 5])
def test_clause3_discard_kind_rejects_malformed_tokens_naming_them(token: object) -> None:
    with pytest.raises(ValueError) as error:
        discard_kind(["7H", token, "9H"], DEFAULT)
    assert repr(token) in str(error.value)


RULE_VARIANTS = [
    pytest.param(Rules(), id="default"),
    pytest.param(Rules(two_pairs_mixed=False), id="pairs-not-mixed"),
    pytest.param(Rules(sequence_lengths=(3, 4, 5)), id="runs-345"),
    pytest.param(Rules(sequence_lengths=(4,)), id="runs-4"),
    pytest.param(Rules(sequence_same_suit=True), id="runs-one-suit"),
    pytest.param(Rules(flush_size=3), id="flush-3"),
    pytest.param(Rules(flush_size=4, sequence_lengths=(3, 4, 5), sequence_same_suit=True), id="flush-4-runs-345"),
]


def _brute_force(hand: list[str], rules: Rules) -> set[tuple[str, ...]]:
    return {
        subset
        for size in range(1, len(hand) + 1)
        for subset in combinations(hand, size)  # combinations keep hand order, as legal_discards promises
        if discard_kind(subset, rules) is not None
    }


def _random_hand(rng: random.Random) -> list[str]:
    # Most hands come from a few adjacent ranks or from one or two suits, so that pairs, two pairs, runs and
    # flushes are common rather than rare; the rest are drawn from the whole deck.
    size = rng.randint(0, 7)
    shape = rng.random()
    if shape < 0.4:
        low = rng.randint(0, len(RANKS) - 3)
        ranks = RANKS[low : low + rng.randint(2, 4)]
        pool = [card for card in DECK if card[0] in ranks or (ranks[-1] == "K" and card[0] == "A")]
    elif shape < 0.7:
        suits = rng.sample(SUITS, rng.randint(1, 2))
        pool = [card for card in DECK if card[1] in suits]
    else:
        pool = list(DECK)
    return rng.sample(pool, min(size, len(pool)))


@pytest.mark.parametrize("rules", RULE_VARIANTS)
def test_clause3_legal_discards_equals_brute_force(rules: Rules) -> None:
    rng = random.Random(20260)
    seen_kinds: set[str] = set()
    for _ in range(600):
        hand = _random_hand(rng)
        found = legal_discards(hand, rules)
        assert len(found) == len(set(found)), f"duplicates for {hand}: {found}"
        assert set(found) == _brute_force(hand, rules), hand
        seen_kinds.update(kind for kind in (discard_kind(s, rules) for s in found) if kind)
    # The random hands must really have exercised the multi-card kinds, or the comparison proves little.
    assert seen_kinds == {"single", "pair", "two_pairs", "sequence", "flush"}


def test_clause3_legal_discards_known_hand() -> None:
    hand = ["AH", "2S", "3D", "3C", "KH"]
    assert sorted(legal_discards(hand, DEFAULT)) == sorted(
        [("AH",), ("2S",), ("3D",), ("3C",), ("KH",), ("3D", "3C"), ("AH", "2S", "3D"), ("AH", "2S", "3C")]
    )


def test_clause3_legal_discards_four_of_a_kind_listed_once() -> None:
    hand = ["9H", "9S", "9D", "9C", "2H"]
    four = [s for s in legal_discards(hand, DEFAULT) if len(s) == 4]
    assert four == [("9H", "9S", "9D", "9C")]


# -- rule options -------------------------------------------------------------------------------------------------


def test_rules_defaults() -> None:
    assert Rules().to_dict() == {
        "two_pairs_mixed": True,
        "sequence_lengths": [3, 5],
        "sequence_same_suit": False,
        "flush_size": 5,
        "declare_max": None,
        "tie_fails": True,
        "penalty": 20,
        "max_turns_per_player": 30,
        "threshold": 100,
        "until": "last_standing",
        "max_rounds": 500,
    }


def test_rules_from_dict_reads_options() -> None:
    rules = Rules.from_dict({"threshold": 50, "sequence_lengths": [3, 4, 5], "until": "first_out"})
    assert rules == Rules(threshold=50, sequence_lengths=(3, 4, 5), until="first_out")


def test_rules_from_dict_rejects_unknown_key_by_name() -> None:
    with pytest.raises(RulesError) as error:
        Rules.from_dict({"threshold": 50, "treshold": 50})
    assert "treshold" in str(error.value)
    assert "unknown" in str(error.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("threshold", "50"),
        ("threshold", 0),
        ("threshold", True),
        ("threshold", 50.0),
        ("until", "sometimes"),
        ("sequence_lengths", [2]),
        ("sequence_lengths", [6]),
        ("sequence_lengths", []),
        ("sequence_lengths", [3, 3]),
        ("sequence_lengths", "35"),
        ("two_pairs_mixed", "yes"),
        ("two_pairs_mixed", 1),
        ("sequence_same_suit", None),
        ("flush_size", 6),
        ("flush_size", 2),
        ("declare_max", -1),
        ("declare_max", "5"),
        ("tie_fails", 0),
        ("penalty", -1),
        ("max_turns_per_player", 0),
        ("max_rounds", 0),
    ],
)
def test_rules_from_dict_rejects_bad_value_by_name(key: str, value: Any) -> None:
    with pytest.raises(RulesError) as error:
        Rules.from_dict({key: value})
    assert f"rules.{key}" in str(error.value)
    assert repr(tuple(value) if isinstance(value, list) else value) in str(error.value)


def test_rules_from_dict_rejects_non_mapping() -> None:
    with pytest.raises(RulesError):
        Rules.from_dict([("threshold", 50)])  # type: ignore[arg-type]


def test_rules_error_is_a_value_error() -> None:
    assert issubclass(RulesError, ValueError)


@pytest.mark.parametrize(
    "rules",
    [
        Rules(),
        Rules(threshold=25, until="first_out", declare_max=7, tie_fails=False, penalty=0),
        Rules(sequence_lengths=(5, 3, 4), sequence_same_suit=True, two_pairs_mixed=False, flush_size=3),
        Rules(max_turns_per_player=1, max_rounds=1),
    ],
)
def test_rules_round_trip_through_json(rules: Rules) -> None:
    assert Rules.from_dict(rules.to_dict()) == rules
    assert Rules.from_dict(json.loads(json.dumps(rules.to_dict()))) == rules
