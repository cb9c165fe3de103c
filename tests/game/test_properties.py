"""Property tests of the match engine: whole matches with random seeds, 2..8 players, random rule options and
random legal play (sometimes declaring, rarely forfeiting), checking after every action the invariants that no
hand-made position can cover exhaustively.

Hypothesis draws only integers and options; every choice of move comes from a ``random.Random`` seeded by one of
those integers, so a failing example replays exactly.
"""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from arena.game.cards import DECK
from arena.game.engine import Declare, Match, Play, actions_from_events, replay
from arena.game.results import Termination
from arena.game.rules import Rules

FULL_DECK = Counter(DECK)

rules_strategy = st.builds(
    Rules,
    threshold=st.integers(5, 120),
    max_turns_per_player=st.integers(1, 8),
    until=st.sampled_from(["last_standing", "first_out"]),
    tie_fails=st.booleans(),
    penalty=st.sampled_from([0, 5, 20]),
    declare_max=st.sampled_from([None, None, 10]),
    two_pairs_mixed=st.booleans(),
    sequence_lengths=st.sampled_from([(3, 5), (3, 4, 5), (4,)]),
    sequence_same_suit=st.booleans(),
    flush_size=st.sampled_from([3, 4, 5]),
    max_rounds=st.sampled_from([3, 20, 500]),
)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def play_random_match(
    players: int,
    seed: int,
    rules: Rules,
    policy_seed: int,
    declare_chance: float,
    forfeit_chance: float,
    deck_only: bool = False,
) -> Match:
    """Play a whole match with random legal moves, asserting the engine's invariants after every action."""
    rng = random.Random(policy_seed)
    match = Match(players, seed, rules)
    # A round has at most max_turns_per_player turns per seat, so this bounds a match that does end.
    step_limit = rules.max_rounds * (rules.max_turns_per_player * players + 1) + players
    steps = 0
    check_invariants(match, previous_scores=[0] * players)
    while match.outcome is None:
        steps += 1
        assert steps <= step_limit, "the match did not end"
        scores_before = list(match.scores)
        live_before = match.live
        events_before = len(match.events)
        if rng.random() < forfeit_chance:
            match.forfeit(match.turn, "random")
        else:
            moves = list(match.legal_moves())
            assert moves, "a seat in play always has a legal move"
            if isinstance(moves[0], Declare) and rng.random() < declare_chance:
                move = moves[0]
            else:
                move = rng.choice([m for m in moves if isinstance(m, Play) and (m.take == "deck" or not deck_only)])
            match.apply(move)
        check_round_ends(match, events_before, live_before, scores_before)
        check_invariants(match, scores_before)
    check_outcome(match)
    return match


def check_invariants(match: Match, previous_scores: list[int]) -> None:
    assert all(now >= before for now, before in zip(match.scores, previous_scores)), "a score went down"
    if match.outcome is not None:
        return
    cards = Counter([card for hand in match.hands for card in hand] + list(match.floor) + match.deck + match.dead)
    assert cards == FULL_DECK, "cards lost or duplicated"
    for seat in range(match.players):
        assert match.turns_taken[seat] <= match.rules.max_turns_per_player
        if match.in_play(seat):
            assert 1 <= len(match.hands[seat]) <= 5
            assert match.scores[seat] <= match.rules.threshold
        else:
            assert match.hands[seat] == []
    assert match.in_play(match.turn)
    assert 1 <= len(match.floor) <= 5


def check_round_ends(match: Match, events_before: int, live_before: list[int], scores_before: list[int]) -> None:
    for ended in match.events[events_before:]:
        if ended["type"] != "round_end":
            continue
        live = [seat for seat in live_before if seat not in match.forfeits]
        # Elimination happens exactly for the seats whose score passed the threshold in this round.
        assert ended["eliminated"] == [seat for seat in live if ended["scores"][seat] > match.rules.threshold]
        assert all(ended["points"][seat] == 0 for seat in range(match.players) if seat not in live)
        assert ended["scores"] == [b + p for b, p in zip(scores_before, ended["points"])]
        if ended["reason"] == "turn_cap":
            assert ended["declarer"] is None
            assert [ended["points"][s] for s in live] == [ended["totals"][s] for s in live]
            continue
        own = ended["totals"][ended["declarer"]]
        lowest_other = min(ended["totals"][s] for s in live if s != ended["declarer"])
        succeeded = own < lowest_other or (own == lowest_other and not match.rules.tie_fails)
        assert ended["reason"] == ("declared" if succeeded else "failed_declaration")
        if succeeded:
            assert [ended["points"][s] for s in live] == [ended["totals"][s] - own for s in live]
        else:
            assert ended["points"][ended["declarer"]] >= match.rules.penalty
            assert all(ended["points"][s] == 0 for s in live if s != ended["declarer"])


def check_outcome(match: Match) -> None:
    outcome = match.outcome
    assert outcome is not None
    places = outcome.places
    assert min(places) == 1
    eliminated = [seat for group in match.eliminated for seat in group]
    not_out = [s for s in range(match.players) if s not in eliminated and s not in match.forfeits]
    # Seats still playing rank above every eliminated seat, which rank above every forfeit.
    for good in not_out:
        assert all(places[good] < places[bad] for bad in eliminated + match.forfeits)
    for good in eliminated:
        assert all(places[good] < places[bad] for bad in match.forfeits)
    if outcome.termination is Termination.LAST_STANDING and len(not_out) == 1:
        assert places[not_out[0]] == 1 and list(places).count(1) == 1
    if outcome.termination is Termination.FIRST_OUT:
        assert eliminated
    if outcome.termination is Termination.MAX_ROUNDS:
        assert match.round == match.rules.max_rounds
    assert match.events[-1]["type"] == "match_end"


@SETTINGS
@given(
    players=st.integers(2, 8),
    seed=st.integers(0, 2**32),
    policy_seed=st.integers(0, 2**32),
    rules=rules_strategy,
    declare_chance=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
    forfeit_chance=st.sampled_from([0.0, 0.0, 0.01, 0.05]),
)
def test_random_matches_keep_the_invariants_end_and_replay(
    players: int, seed: int, policy_seed: int, rules: Rules, declare_chance: float, forfeit_chance: float
) -> None:
    match = play_random_match(players, seed, rules, policy_seed, declare_chance, forfeit_chance)
    # Shown by --hypothesis-show-statistics, to check that the examples reach the interesting paths.
    event(f"termination: {match.outcome.termination.value if match.outcome else None}")
    event(f"rounds: {'1' if match.round == 1 else '2-4' if match.round <= 4 else '5+'}")
    event(f"forfeits: {min(len(match.forfeits), 2)}")
    event(f"eliminated in one round together: {any(len(group) > 1 for group in match.eliminated)}")
    for reason in sorted({e["reason"] for e in match.events if e["type"] == "round_end"}):
        event(f"round end: {reason}")
    again = replay(players, seed, rules, actions_from_events(match.events))
    assert again.events == match.events
    assert again.outcome == match.outcome


@settings(max_examples=40, deadline=None)
@given(players=st.integers(2, 8), seed=st.integers(0, 2**32), policy_seed=st.integers(0, 2**32))
def test_long_rounds_reshuffle_and_keep_every_card(players: int, seed: int, policy_seed: int) -> None:
    # Long rounds of deck takes with no declaring run the deck out (2 seats: 41 cards, 2 x 25 takes), so the
    # reshuffle path is exercised under the same checks.
    rules = Rules(threshold=1000, max_turns_per_player=25, max_rounds=2)
    match = play_random_match(players, seed, rules, policy_seed, 0.0, 0.0, deck_only=True)
    assert any(event["type"] == "reshuffle" for event in match.events)
