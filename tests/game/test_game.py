"""Tests of the match engine (``arena.game.engine``): the deal, turn order, discards and takes, declarations, scoring,
the deck running out, the turn cap, elimination, the end of a match and its places, forfeits, move parsing and
replay.

Positions are built by constructing a ``Match`` and then setting its hands, floor, deck and turn counters
directly, so that each rule is tested on exactly the position it talks about.
"""

from __future__ import annotations

import random
from collections import Counter
from itertools import pairwise
from typing import Any

import pytest

from arena.game.cards import DECK, hand_total
from arena.game.engine import (
    DECK_TAKE,
    Declare,
    Forfeit,
    IllegalMoveError,
    InvalidMoveError,
    Match,
    Play,
    actions_from_events,
    move_from_json,
    replay,
    score_round,
)
from arena.game.results import Termination
from arena.game.rules import Rules

# -- helpers --------------------------------------------------------------------------------------------------------


def events_of(match: Match, kind: str) -> list[dict[str, Any]]:
    return [event for event in match.events if event["type"] == kind]


def first_play(match: Match) -> Play:
    """A legal non-declaring move, the same for the same position."""
    return next(move for move in match.legal_moves() if isinstance(move, Play))


def declare_with(match: Match, hands: dict[int, list[str]]) -> dict[str, Any]:
    """Give the live seats ``hands``, let the seat to move declare, and return the round_end event."""
    for seat, hand in hands.items():
        match.hands[seat] = list(hand)
    match.turns_taken[match.turn] = 1  # past its first turn, so it may declare
    match.apply(Declare())
    return events_of(match, "round_end")[-1]


def cap_round(match: Match, hands: dict[int, list[str]]) -> dict[str, Any]:
    """End the round at the turn cap with the live seats holding exactly ``hands``; return the round_end event.

    Every other live seat has used its turns; the seat to move throws a spare card and takes the last card of
    its target hand from the floor, which is its last turn.
    """
    mover = match.turn
    target = hands[mover]
    used = {card for hand in hands.values() for card in hand}
    spare = next(card for card in DECK if card not in used)
    for seat, hand in hands.items():
        match.hands[seat] = list(hand)
    match.hands[mover] = target[:-1] + [spare]
    match.floor = (target[-1],)
    cap = match.rules.max_turns_per_player
    for seat in match.live:
        match.turns_taken[seat] = cap
    match.turns_taken[mover] = cap - 1
    match.apply(Play((spare,), target[-1]))
    return events_of(match, "round_end")[-1]


def all_cards(match: Match) -> Counter[str]:
    return Counter([card for hand in match.hands for card in hand] + list(match.floor) + match.deck + match.dead)


# -- clause 1: the deal -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("players", [2, 3, 5, 8])
def test_clause1_deal_five_each_and_one_floor_card(players: int) -> None:
    match = Match(players, seed=7)
    assert [len(hand) for hand in match.hands] == [5] * players
    assert len(match.floor) == 1
    assert len(match.deck) == 52 - 5 * players - 1
    assert match.dead == []
    assert all_cards(match) == Counter(DECK)
    start = events_of(match, "round_start")[0]
    assert start["hands"] == match.hands
    assert start["floor"] == list(match.floor)
    assert start["round"] == 1


@pytest.mark.parametrize("players", [1, 9, 0, "3"])
def test_decision_two_to_eight_players(players: Any) -> None:
    with pytest.raises(ValueError, match="players"):
        Match(players, seed=1)


def test_decision_same_seed_same_deal_other_seed_other_deal() -> None:
    assert Match(4, seed=11).hands == Match(4, seed=11).hands
    assert Match(4, seed=11).hands != Match(4, seed=12).hands


def test_decision_each_round_deal_depends_only_on_seed_and_round_number() -> None:
    # Two matches with the same seed but different play in round 1 must deal round 2 identically.
    rules = Rules(max_turns_per_player=1)
    first, second = Match(3, 5, rules), Match(3, 5, rules)
    while first.round == 1:
        first.apply(first_play(first))
    while second.round == 1:
        plays = [move for move in second.legal_moves() if isinstance(move, Play)]
        second.apply(plays[-1])
    assert events_of(first, "play") != events_of(second, "play")
    assert first.round == second.round == 2
    assert first.hands == second.hands
    assert first.floor == second.floor
    assert first.deck == second.deck


def test_decision_starter_of_round_one_comes_from_the_seed() -> None:
    starters = [Match(4, seed).turn for seed in range(200)]
    assert starters == [Match(4, seed).turn for seed in range(200)]
    assert starters == [random.Random(seed).randrange(4) for seed in range(200)]
    assert set(starters) == {0, 1, 2, 3}
    for seed in range(20):
        match = Match(4, seed)
        assert events_of(match, "round_start")[0]["starter"] == match.turn == match.starter


def test_decision_next_round_starts_with_next_live_seat_after_previous_starter() -> None:
    match = Match(4, seed=3, rules=Rules(max_turns_per_player=1))
    first = match.starter
    cap_round(match, {0: ["2C"], 1: ["2D"], 2: ["2H"], 3: ["2S"]})
    assert match.round == 2
    assert match.starter == match.turn == (first + 1) % 4


def test_decision_next_round_starter_skips_an_eliminated_seat() -> None:
    match = Match(3, seed=3, rules=Rules(max_turns_per_player=1, threshold=10))
    first = match.starter
    skipped = (first + 1) % 3
    hands = {0: ["2C"], 1: ["2D"], 2: ["2H"]}
    hands[skipped] = ["KS", "AS"]  # 11 > 10: eliminated this round
    end = cap_round(match, hands)
    assert end["eliminated"] == [skipped]
    assert match.starter == (first + 2) % 3
    assert match.hands[skipped] == []


# -- clause 2: a turn is a discard and then one take ---------------------------------------------------------------


def test_clause2_play_goes_up_the_seat_numbers() -> None:
    match = Match(5, seed=9)
    start = match.turn
    for _ in range(12):
        match.apply(first_play(match))
    seats = [event["seat"] for event in events_of(match, "play")]
    assert seats == [(start + step) % 5 for step in range(12)]


def test_clause2_play_skips_forfeited_seats() -> None:
    match = Match(4, seed=9)
    start = match.turn
    gone = (start + 2) % 4
    match.forfeit(gone, "test")
    for _ in range(6):
        match.apply(first_play(match))
    seats = [event["seat"] for event in events_of(match, "play")]
    assert seats == [s for s in [(start + step) % 4 for step in range(8)] if s != gone][:6]


def test_clause2_play_skips_eliminated_seats() -> None:
    match = Match(4, seed=2, rules=Rules(max_turns_per_player=2, threshold=10))
    hands = {0: ["2C"], 1: ["2D"], 2: ["2H"], 3: ["2S"]}
    out = (match.turn + 1) % 4
    hands[out] = ["KS", "QS"]
    cap_round(match, hands)
    assert not match.in_play(out)
    played_before = len(events_of(match, "play"))
    for _ in range(6):
        match.apply(first_play(match))
    seats = [event["seat"] for event in events_of(match, "play")[played_before:]]
    assert out not in seats
    assert all(b == next(s for s in [(a + k) % 4 for k in (1, 2, 3)] if s != out) for a, b in pairwise(seats))


def test_clause2_take_from_deck_takes_a_card_of_the_deck() -> None:
    match = Match(3, seed=4)
    seat = match.turn
    deck_before = list(match.deck)
    card = match.hands[seat][0]
    match.apply(Play((card,), DECK_TAKE))
    drawn = match.hands[seat][-1]
    assert drawn in deck_before and drawn not in match.deck
    assert sorted(match.deck + [drawn]) == sorted(deck_before)
    assert card not in match.hands[seat]
    assert len(match.hands[seat]) == 5
    assert events_of(match, "play")[-1]["drew"] == drawn
    assert match.floor == (card,)


def test_clause2_exactly_one_card_is_taken_after_a_multi_card_discard() -> None:
    match = Match(3, seed=4)
    seat = match.turn
    match.hands[seat] = ["5H", "5S", "9D", "9C", "KD"]
    old_floor = match.floor
    match.apply(Play(("5H", "5S", "9D", "9C"), DECK_TAKE))
    assert len(match.hands[seat]) == 2
    assert match.floor == ("5H", "5S", "9D", "9C")
    assert list(old_floor) == match.dead[-1:]


def test_clause2_five_card_flush_leaves_a_one_card_hand() -> None:
    match = Match(3, seed=4)
    seat = match.turn
    flush = ["2H", "5H", "9H", "KH", "7H"]
    match.hands[seat] = list(flush)
    floor_card = match.floor[0]
    match.apply(Play(tuple(flush), floor_card))
    assert match.hands[seat] == [floor_card]
    assert match.floor == tuple(flush)


# -- clause 3 (in play): only legal sets, one set per turn ---------------------------------------------------------


def test_clause3_only_a_legal_set_may_be_thrown() -> None:
    match = Match(3, seed=4)
    match.hands[match.turn] = ["7H", "7S", "7D", "2C", "KD"]
    with pytest.raises(IllegalMoveError, match="not a set"):
        match.apply(Play(("7H", "7S", "7D"), DECK_TAKE))
    with pytest.raises(IllegalMoveError, match="not a set"):
        match.apply(Play(("7H", "7S", "2C"), DECK_TAKE))  # two sets at once (a pair and a single) is not one set
    match.apply(Play(("7H", "7S"), DECK_TAKE))


def test_legal_moves_are_all_accepted_and_cover_every_set_and_take() -> None:
    match = Match(3, seed=21)
    for _ in range(9):
        moves = list(match.legal_moves())
        assert len(moves) == len(set(moves))
        for move in moves:
            match.check(move)
        plays = [move for move in moves if isinstance(move, Play)]
        assert {move.take for move in plays} == {DECK_TAKE, *match.floor}
        match.apply(plays[len(plays) // 2])


# -- clause 4: which cards may be taken ------------------------------------------------------------------------------


def test_clause4_any_one_card_of_the_previous_discard_may_be_taken() -> None:
    for pick in ("7S", "8S", "9D"):
        match = Match(3, seed=4)
        match.floor = ("7S", "8S", "9D")  # the previous player threw 7, 8, 9 (the rules text's example)
        seat = match.turn
        card = match.hands[seat][0]
        match.apply(Play((card,), pick))
        assert pick in match.hands[seat]
        assert sorted(match.dead) == sorted({"7S", "8S", "9D"} - {pick})
        assert match.floor == (card,)


def test_clause4_older_floor_cards_are_dead() -> None:
    match = Match(3, seed=4)
    older = match.floor[0]
    first = match.turn
    match.apply(Play((match.hands[first][0],), DECK_TAKE))
    second = match.turn
    assert older in match.dead
    with pytest.raises(IllegalMoveError, match="not on the floor"):
        match.apply(Play((match.hands[second][0],), older))
    thrown = match.floor[0]
    match.apply(Play((match.hands[second][0],), thrown))  # the card just thrown is fine
    with pytest.raises(IllegalMoveError, match=thrown):
        match.apply(Play((match.hands[match.turn][0],), thrown))  # one turn later it is dead too


# -- clause 5: declaring ---------------------------------------------------------------------------------------------


def test_clause5_no_declaring_on_a_seats_first_turn_of_a_round() -> None:
    match = Match(3, seed=8)
    for _ in range(3):
        assert not match.may_declare()
        assert not match.view(match.turn).may_declare
        assert Declare() not in list(match.legal_moves())
        with pytest.raises(IllegalMoveError, match="first turn"):
            match.apply(Declare())
        match.apply(first_play(match))
    assert match.may_declare()
    assert match.view(match.turn).may_declare
    assert next(iter(match.legal_moves())) == Declare()
    match.apply(Declare())
    assert events_of(match, "round_end")[0]["declarer"] == events_of(match, "declare")[0]["seat"]


def test_clause5_first_turn_rule_applies_again_in_every_round() -> None:
    match = Match(3, seed=8, rules=Rules(max_turns_per_player=1))
    cap_round(match, {0: ["2C"], 1: ["2D"], 2: ["2H"]})
    assert match.round == 2
    assert match.turns_taken == [0, 0, 0]
    with pytest.raises(IllegalMoveError, match="first turn"):
        match.apply(Declare())


def test_clause5_declare_replaces_the_whole_turn() -> None:
    match = Match(3, seed=8)
    seat = match.turn
    hand_before = list(match.hands[seat])
    declare_with(match, {})
    end = events_of(match, "round_end")[0]
    assert end["hands"][seat] == hand_before  # nothing thrown, nothing taken
    assert [e["type"] for e in match.events[-3:]] == ["declare", "round_end", "round_start"]


@pytest.mark.parametrize(("total_hand", "allowed"), [(["2C", "3D"], True), (["2C", "4D"], False)])
def test_decision_declare_max(total_hand: list[str], allowed: bool) -> None:
    match = Match(3, seed=8, rules=Rules(declare_max=5))
    match.hands[match.turn] = total_hand
    match.turns_taken[match.turn] = 1
    assert match.may_declare() is allowed
    if allowed:
        match.apply(Declare())
        assert events_of(match, "declare")
    else:
        with pytest.raises(IllegalMoveError, match="declare_max"):
            match.apply(Declare())


# -- clauses 6 and 7: scoring a declaration --------------------------------------------------------------------------


def test_clause6_example_through_score_round() -> None:
    assert score_round([10, 16, 17], 0) == [0, 6, 7]


def test_clause7_example_through_score_round() -> None:
    assert score_round([10, 8, 15], 0) == [22, 0, 0]


def test_clause6_7_score_round_with_other_declarer_and_penalty() -> None:
    assert score_round([16, 10, 17], 1) == [6, 0, 7]
    assert score_round([8, 10, 15], 1, Rules(penalty=5)) == [0, 7, 0]


def test_decision_turn_cap_scores_own_totals() -> None:
    assert score_round([10, 8, 15], None) == [10, 8, 15]


@pytest.mark.parametrize(
    ("tie_fails", "expected", "reason"),
    [(True, [20, 0, 0], "failed_declaration"), (False, [0, 0, 7], "declared")],
)
def test_decision_tie_fails_both_ways(tie_fails: bool, expected: list[int], reason: str) -> None:
    rules = Rules(tie_fails=tie_fails)
    assert score_round([10, 10, 17], 0, rules) == expected
    match = Match(3, seed=1, rules=rules)
    declarer = match.turn
    others = [(declarer + 1) % 3, (declarer + 2) % 3]
    end = declare_with(match, {declarer: ["KC"], others[0]: ["TD"], others[1]: ["TH", "7C"]})
    assert end["reason"] == reason
    assert [end["points"][s] for s in (declarer, *others)] == expected


def test_clause6_example_in_a_match() -> None:
    match = Match(3, seed=1)
    a = match.turn
    b, c = (a + 1) % 3, (a + 2) % 3
    end = declare_with(match, {a: ["KC"], b: ["KD", "6D"], c: ["KH", "7H"]})
    assert end["totals"][a] == 10
    assert (end["points"][a], end["points"][b], end["points"][c]) == (0, 6, 7)
    assert end["reason"] == "declared"
    assert end["declarer"] == a
    assert match.scores[b] == 6 and match.scores[c] == 7 and match.scores[a] == 0


def test_clause7_example_in_a_match() -> None:
    match = Match(3, seed=1)
    a = match.turn
    b, c = (a + 1) % 3, (a + 2) % 3
    end = declare_with(match, {a: ["KC"], b: ["8D"], c: ["KH", "5H"]})
    assert (end["points"][a], end["points"][b], end["points"][c]) == (22, 0, 0)
    assert end["reason"] == "failed_declaration"


def test_decision_failed_declaration_penalty_option() -> None:
    match = Match(3, seed=1, rules=Rules(penalty=3))
    a = match.turn
    end = declare_with(match, {a: ["KC"], (a + 1) % 3: ["8D"], (a + 2) % 3: ["KH", "5H"]})
    assert end["points"][a] == 3 + 2


def test_failed_tie_with_zero_penalty_is_still_reported_as_failed() -> None:
    # Regression: the reason used to be read off the declarer's points, which are 0 here too.
    match = Match(2, seed=1, rules=Rules(penalty=0))
    end = declare_with(match, {0: ["5C"], 1: ["5D"]})
    assert end["reason"] == "failed_declaration"
    assert end["points"] == [0, 0]


def test_declaration_only_compares_live_seats() -> None:
    match = Match(3, seed=6, rules=Rules(max_turns_per_player=1, threshold=10))
    hands = {0: ["2C"], 1: ["2D"], 2: ["2H"]}
    gone = (match.turn + 2) % 3
    hands[gone] = ["KS", "AS"]
    cap_round(match, hands)
    assert not match.in_play(gone)
    declarer = match.turn
    other = next(s for s in match.live if s != declarer)
    end = declare_with(match, {declarer: ["3C"], other: ["4C"]})
    assert end["reason"] == "declared"
    assert end["points"][gone] == 0
    assert end["points"][other] == 1


# -- the deck running out --------------------------------------------------------------------------------------------


def test_decision_empty_deck_reshuffles_dead_cards_not_the_floor() -> None:
    match = Match(3, seed=4)
    seat = match.turn
    match.hands[seat] = ["KD", "2S"]
    match.floor = ("9H", "9C")
    match.deck = []
    match.dead = ["2C", "3C", "4C"]
    match.apply(Play(("KD",), DECK_TAKE))
    reshuffle = events_of(match, "reshuffle")
    assert reshuffle == [{"type": "reshuffle", "deck_size": 3}]
    drawn = events_of(match, "play")[-1]["drew"]
    assert drawn in {"2C", "3C", "4C"}
    assert sorted(match.deck + [drawn]) == ["2C", "3C", "4C"]
    assert sorted(match.dead) == ["9C", "9H"]  # the floor the mover could have taken becomes dead only now
    assert match.floor == ("KD",)


def test_decision_reshuffle_in_real_play_keeps_every_card_once() -> None:
    match = Match(2, seed=13, rules=Rules(max_turns_per_player=40))
    reshuffled = False
    while match.round == 1:
        floor_before = set(match.floor)
        dead_before = len(match.dead)
        seat = match.turn
        match.apply(Play((max(match.hands[seat], key=lambda c: DECK.index(c)),), DECK_TAKE))
        if match.events[-2]["type"] == "reshuffle":
            reshuffled = True
            assert match.events[-2]["deck_size"] == dead_before
            assert not floor_before & set(match.deck)
        if match.round == 1:
            assert all_cards(match) == Counter(DECK)
    assert reshuffled


# -- the turn cap ----------------------------------------------------------------------------------------------------


def test_decision_turn_cap_ends_round_with_own_totals() -> None:
    match = Match(3, seed=10, rules=Rules(max_turns_per_player=3))
    while match.round == 1:
        match.apply(first_play(match))
    plays = Counter(event["seat"] for event in events_of(match, "play"))
    assert plays == {0: 3, 1: 3, 2: 3}
    end = events_of(match, "round_end")[0]
    assert end["reason"] == "turn_cap"
    assert end["declarer"] is None
    assert end["totals"] == [hand_total(hand) for hand in end["hands"]]
    assert end["points"] == end["totals"]
    assert match.scores == end["totals"]


def test_decision_turn_cap_is_reached_when_the_last_seat_with_turns_left_forfeits() -> None:
    # Regression: the remaining seats used to get one turn more than max_turns_per_player.
    match = Match(3, seed=1, rules=Rules(max_turns_per_player=1))
    match.apply(first_play(match))
    match.apply(first_play(match))
    last = match.turn
    match.forfeit(last, "test")
    assert match.round == 2
    assert events_of(match, "round_end")[0]["reason"] == "turn_cap"
    assert len(events_of(match, "play")) == 2


# -- clause 8: elimination, the end of a match and the places --------------------------------------------------------


@pytest.mark.parametrize(("score_before", "out"), [(7, False), (8, True)])
def test_clause8_elimination_only_when_score_exceeds_threshold(score_before: int, out: bool) -> None:
    match = Match(3, seed=1, rules=Rules(threshold=30))
    a = match.turn
    match.scores[a] = score_before
    # A fails with 5 against a lowest 2: 20 + 3 = 23 points, so 7 -> 30 (stays in) and 8 -> 31 (out).
    end = declare_with(match, {a: ["5C"], (a + 1) % 3: ["2C"], (a + 2) % 3: ["9C"]})
    assert match.scores[a] == score_before + 23
    assert end["eliminated"] == ([a] if out else [])
    assert match.in_play(a) is not out
    assert match.outcome is None  # two seats are left either way
    assert (a in events_of(match, "round_start")[-1]["live"]) is not out


def test_clause8_until_first_out_stops_after_the_first_elimination() -> None:
    match = Match(3, seed=1, rules=Rules(threshold=30, until="first_out"))
    a = match.turn
    b, c = (a + 1) % 3, (a + 2) % 3
    match.scores[b], match.scores[c] = 4, 9
    match.scores[a] = 8
    declare_with(match, {a: ["5C"], b: ["2C"], c: ["9C"]})
    assert match.outcome is not None
    assert match.outcome.termination is Termination.FIRST_OUT
    places = match.outcome.places
    assert (places[b], places[c], places[a]) == (1, 2, 3)
    assert events_of(match, "match_end")[0]["termination"] == "first_out"


def test_clause8_last_standing_plays_on_after_the_first_elimination() -> None:
    match = Match(3, seed=1, rules=Rules(threshold=30))
    a = match.turn
    match.scores[a] = 8
    declare_with(match, {a: ["5C"], (a + 1) % 3: ["2C"], (a + 2) % 3: ["9C"]})
    assert match.outcome is None
    assert match.round == 2
    assert len(match.live) == 2


@pytest.mark.parametrize(("second_hand", "expected"), [(["KS", "2S"], (4, 2, 2, 1)), (["KS", "3S"], (4, 2, 3, 1))])
def test_clause8_final_places(second_hand: list[str], expected: tuple[int, ...]) -> None:
    match = Match(4, seed=5, rules=Rules(threshold=10, max_turns_per_player=1))
    cap_round(match, {0: ["KC", "AD"], 1: ["2C"], 2: ["2D"], 3: ["2H"]})  # seat 0: 11, out first
    assert match.eliminated == [[0]]
    # Seats 1 and 2 go out together; seat 3 is the survivor.
    end = cap_round(match, {1: ["KH", "2H"], 2: second_hand, 3: ["AH"]})
    assert end["eliminated"] == [1, 2]
    assert match.outcome is not None
    assert match.outcome.termination is Termination.LAST_STANDING
    assert match.outcome.places == expected
    assert events_of(match, "match_end")[0]["places"] == list(expected)


def test_clause8_earlier_elimination_ranks_lower_even_with_a_lower_score() -> None:
    match = Match(3, seed=5, rules=Rules(threshold=10, max_turns_per_player=1))
    cap_round(match, {0: ["2C", "9D"], 1: ["AC"], 2: ["AD"]})  # seat 0 out with 11
    match.scores[1] = 0
    cap_round(match, {1: ["KC", "KD"], 2: ["AH"]})  # seat 1 out with 20, later
    assert match.outcome is not None
    assert match.outcome.places == (3, 2, 1)
    assert match.scores[0] < match.scores[1]


def test_decision_max_rounds_ends_with_places_by_score() -> None:
    match = Match(3, seed=5, rules=Rules(max_rounds=2, max_turns_per_player=1))
    cap_round(match, {0: ["5C"], 1: ["2C"], 2: ["5D"]})
    assert match.outcome is None and match.round == 2
    cap_round(match, {0: ["AC"], 1: ["AD"], 2: ["AH"]})
    assert match.outcome is not None
    assert match.outcome.termination is Termination.MAX_ROUNDS
    assert match.outcome.scores == (6, 3, 6)
    assert match.outcome.places == (2, 1, 2)


def test_decision_forfeits_rank_below_everyone_earlier_forfeits_lower() -> None:
    match = Match(4, seed=5, rules=Rules(threshold=10, max_turns_per_player=1))
    match.forfeit(1, "crashed")
    assert match.hands[1] == []
    hands = {0: ["AC"], 2: ["KC", "AD"], 3: ["2C"]}
    cap_round(match, hands)  # seat 2 eliminated
    assert match.eliminated == [[2]]
    assert match.outcome is None
    match.forfeit(3, "timeout")
    assert match.outcome is not None
    assert match.outcome.termination is Termination.FORFEITS
    assert match.outcome.places == (1, 4, 2, 3)
    assert match.forfeits == [1, 3]


def test_decision_match_left_with_one_seat_ends_with_that_seat_first() -> None:
    match = Match(3, seed=5)
    match.scores = [90, 0, 0]
    match.forfeit(2, "invalid")
    assert match.outcome is None
    match.forfeit(1, "invalid")
    assert match.outcome is not None
    assert match.outcome.termination is Termination.FORFEITS
    assert match.outcome.places == (1, 2, 3)  # seat 2 forfeited first, so it ranks lowest
    assert not match.in_play(0)  # nobody is in play once the match is over
    with pytest.raises(IllegalMoveError, match="over"):
        match.apply(Declare())


def test_forfeit_of_the_seat_to_move_passes_the_turn() -> None:
    match = Match(4, seed=5)
    seat = match.turn
    match.forfeit(seat, "timeout")
    assert match.turn == (seat + 1) % 4
    assert events_of(match, "forfeit") == [{"type": "forfeit", "seat": seat, "reason": "timeout"}]
    assert all_cards(match) == Counter(DECK)  # its cards went to the dead pile, not out of the game
    match.forfeit(seat, "again")  # a second forfeit of the same seat changes nothing
    assert len(events_of(match, "forfeit")) == 1


# -- illegal and malformed moves -------------------------------------------------------------------------------------


def test_illegal_move_card_not_in_hand() -> None:
    match = Match(3, seed=4)
    hand = match.hands[match.turn]
    absent = next(card for card in DECK if card not in hand)
    with pytest.raises(IllegalMoveError) as error:
        match.apply(Play((absent,), DECK_TAKE))
    assert absent in str(error.value) and "not in hand" in str(error.value)
    assert len(match.events) == 2  # nothing changed: match_start and round_start only


def test_illegal_move_take_not_on_floor() -> None:
    match = Match(3, seed=4)
    hand = match.hands[match.turn]
    elsewhere = match.deck[0]
    with pytest.raises(IllegalMoveError) as error:
        match.apply(Play((hand[0],), elsewhere))
    assert elsewhere in str(error.value) and "floor" in str(error.value)
    assert match.hands[match.turn] == hand


def test_illegal_move_error_is_not_an_invalid_move_error() -> None:
    assert not issubclass(IllegalMoveError, InvalidMoveError)
    assert not issubclass(InvalidMoveError, IllegalMoveError)


@pytest.mark.parametrize(
    "message",
    [
        None,
        [],
        "declare",
        {},
        {"type": "pass"},
        {"type": "Play", "discard": ["7H"], "take": "deck"},
        {"type": "play"},
        {"type": "play", "discard": [], "take": "deck"},
        {"type": "play", "discard": "7H", "take": "deck"},
        {"type": "play", "discard": ["10H"], "take": "deck"},
        {"type": "play", "discard": ["7H", 5], "take": "deck"},
        {"type": "play", "discard": ["7H"]},
        {"type": "play", "discard": ["7H"], "take": "pile"},
        {"type": "play", "discard": ["7H"], "take": None},
        {"type": "play", "discard": ["7H"], "take": ["8H"]},
    ],
)
def test_move_from_json_rejects_malformed_moves(message: object) -> None:
    with pytest.raises(InvalidMoveError):
        move_from_json(message)


def test_move_from_json_names_the_bad_card() -> None:
    with pytest.raises(InvalidMoveError, match="10H"):
        move_from_json({"type": "play", "discard": ["10H"], "take": "deck"})


def test_move_from_json_reads_moves_and_round_trips() -> None:
    assert move_from_json({"type": "declare"}) == Declare()
    play = move_from_json({"type": "play", "discard": ["7H", "8S", "9D"], "take": "deck"})
    assert play == Play(("7H", "8S", "9D"), DECK_TAKE)
    assert move_from_json(play.to_json()) == play
    assert move_from_json(Play(("KH",), "2C").to_json()) == Play(("KH",), "2C")
    assert Declare().to_json() == {"type": "declare"}


# -- replay ----------------------------------------------------------------------------------------------------------


def test_replay_rebuilds_the_same_events_including_forfeits() -> None:
    rules = Rules(threshold=15, max_turns_per_player=4)
    rng = random.Random(99)
    match = Match(4, seed=31, rules=rules)
    moves = 0
    while match.outcome is None:
        if moves == 5:
            match.forfeit(match.turn, "test")  # one forfeit mid-round, then random play to the end
        match.apply(rng.choice(list(match.legal_moves())))
        moves += 1
    actions = actions_from_events(match.events)
    assert any(isinstance(action, Forfeit) for _, action in actions)
    again = replay(4, 31, rules, actions)
    assert again.events == match.events
    assert again.outcome == match.outcome


def test_replay_rejects_a_move_by_the_wrong_seat() -> None:
    match = Match(3, seed=4)
    wrong = (match.turn + 1) % 3
    with pytest.raises(IllegalMoveError, match="turn"):
        replay(3, 4, Rules(), [(wrong, Play((match.hands[wrong][0],), DECK_TAKE))])


def test_a_set_of_three_is_judged_by_the_rules_of_its_match() -> None:
    # Sets of three or more cards are judged once per rules and cards (a cache): the same cards stay legal under
    # one match's rules and illegal under another's, in whatever order the matches come.
    for rules, legal in ((Rules(), True), (Rules(sequence_lengths=(5,)), False), (Rules(), True)):
        match = Match(3, 4, rules)
        match.hands[match.turn] = ["7H", "8S", "9H", "2C", "KD"]
        move = Play(("7H", "8S", "9H"), DECK_TAKE)
        if legal:
            match.apply(move)
            assert match.floor == ("7H", "8S", "9H")
        else:
            with pytest.raises(IllegalMoveError, match="not a set"):
                match.apply(move)
