"""Speed benchmark of the Least Score engine: whole matches played in-process, no protocol, no processes.

Seats alternate between a random-legal policy and a greedy policy (the seat pattern shifts by one every match, so
both sit in every seat). The engine's own cost is timed apart from the policies': only the ``Match.apply`` calls
count as engine time per turn (and, without a clock read per call, the same moves replayed), and
``legal_discards`` is timed per call on its own. Prints ONE JSON object.

    python bench/engine.py --matches 200 --players 3 --seed 1

This is a measurement, not a test: numbers depend on the machine, so nothing here asserts on them.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
from collections import Counter
from collections.abc import Callable

from arena.game.cards import VALUE, hand_total
from arena.game.engine import DECK_TAKE, Declare, Match, Move, Play, SeatView
from arena.game.rules import Rules, legal_discards

RANDOM_DECLARE_CHANCE = 0.1
GREEDY_DECLARE_AT = 5
GREEDY_LOW_CARD = 3


class DiscardTimer:
    """``legal_discards`` with its calls counted and timed, so its cost can be reported per call."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0

    def __call__(self, hand: tuple[str, ...], rules: Rules) -> list[tuple[str, ...]]:
        start = time.perf_counter()
        found = legal_discards(hand, rules)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return found


Policy = Callable[[SeatView, Rules, random.Random, DiscardTimer], Move]


def random_policy(view: SeatView, rules: Rules, rng: random.Random, discards: DiscardTimer) -> Move:
    """Any legal set and any take, uniformly; declares now and then when allowed."""
    if view.may_declare and rng.random() < RANDOM_DECLARE_CHANCE:
        return Declare()
    return Play(rng.choice(discards(view.hand, rules)), rng.choice((DECK_TAKE, *view.floor)))


def greedy_policy(view: SeatView, rules: Rules, rng: random.Random, discards: DiscardTimer) -> Move:
    """Declare at a total of 5 or less; else throw the highest-value set and take a floor card worth 3 or less."""
    if view.may_declare and hand_total(view.hand) <= GREEDY_DECLARE_AT:
        return Declare()
    # max() keeps the first of equal values, so the choice is deterministic without using rng.
    discard = max(discards(view.hand, rules), key=lambda cards: sum(VALUE[card] for card in cards))
    low = min(view.floor, key=VALUE.__getitem__)
    return Play(discard, low if VALUE[low] <= GREEDY_LOW_CARD else DECK_TAKE)


POLICIES: tuple[Policy, ...] = (random_policy, greedy_policy)


def run(matches: int, players: int, seed: int, rules: Rules) -> dict[str, object]:
    """Play ``matches`` matches and return the measurements as a JSON-ready dict."""
    master = random.Random(seed)
    discards = DiscardTimer()
    apply_seconds = apply_cpu = 0.0
    turns = rounds = 0
    terminations: Counter[str] = Counter()
    wins: Counter[str] = Counter()
    played: list[tuple[int, list[Move]]] = []
    started = time.perf_counter()
    for number in range(matches):
        match_seed = master.randrange(2**32)
        match = Match(players, match_seed, rules)
        rng = random.Random(master.randrange(2**32))
        seat_policy = [POLICIES[(seat + number) % len(POLICIES)] for seat in range(players)]
        moves: list[Move] = []
        while match.outcome is None:
            seat = match.turn
            move = seat_policy[seat](match.view(seat), rules, rng, discards)
            before, cpu_before = time.perf_counter(), time.process_time()
            match.apply(move)
            apply_seconds += time.perf_counter() - before
            apply_cpu += time.process_time() - cpu_before
            moves.append(move)
            turns += 1
        played.append((match_seed, moves))
        rounds += match.round
        terminations[match.outcome.termination.value] += 1
        for seat, place in enumerate(match.outcome.places):
            if place == 1:
                wins[seat_policy[seat].__name__] += 1
    elapsed = time.perf_counter() - started
    return {
        "benchmark": "engine",
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "matches": matches,
        "players": players,
        "seed": seed,
        "rules": rules.to_dict(),
        "turns": turns,
        "rounds": rounds,
        "seconds": round(elapsed, 3),
        "turns_per_s": round(turns / elapsed, 1),
        "matches_per_s": round(matches / elapsed, 2),
        "mean_turns_per_match": round(turns / matches, 2),
        "mean_rounds_per_match": round(rounds / matches, 2),
        "engine_us_per_turn": round(apply_seconds / turns * 1e6, 2),
        # The same calls in CPU time: what a busy machine's waits for a core do not inflate (compare other code
        # with PYTHONPATH=its-checkout, in one run, interleaved).
        "engine_cpu_us_per_turn": round(apply_cpu / turns * 1e6, 2),
        # The same moves replayed with no clock read between them (two clock reads cost about as much as a move):
        # the CPU time of Match.apply alone, best of REPLAYS runs.
        "engine_replay_cpu_us_per_apply": round(replay_cpu(played, players, rules) / turns * 1e6, 2),
        "legal_discards_us_per_call": round(discards.seconds / max(discards.calls, 1) * 1e6, 2),
        "legal_discards_calls": discards.calls,
        "terminations": dict(sorted(terminations.items())),
        "first_places_by_policy": dict(sorted(wins.items())),
    }


REPLAYS = 5


def replay_cpu(played: list[tuple[int, list[Move]]], players: int, rules: Rules) -> float:
    """CPU seconds to apply every recorded move again (``Match()`` excluded), the best of :data:`REPLAYS` runs."""
    best = float("inf")
    for _ in range(REPLAYS):
        matches = [Match(players, seed, rules) for seed, _ in played]
        before = time.process_time()
        for match, (_, moves) in zip(matches, played):
            apply = match.apply
            for move in moves:
                apply(move)
        best = min(best, time.process_time() - before)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=200, help="matches to play (default 200)")
    parser.add_argument("--players", type=int, default=3, choices=range(2, 9), help="seats per match (default 3)")
    parser.add_argument("--seed", type=int, default=1, help="master seed for deals and policies (default 1)")
    args = parser.parse_args()
    if args.matches < 1:
        parser.error("--matches must be at least 1")
    print(json.dumps(run(args.matches, args.players, args.seed, Rules())))


if __name__ == "__main__":
    main()
