"""Strength benchmark of the planner sample bot: in-process 3-player matches, planner against two greedy bots.

Seats are rotated over the same deal seeds (duplicate format), so the planner sits in every seat equally often and
every rotation is dealt the same cards seat by seat. Prints ONE JSON object (win rate with a 95% Wilson interval,
mean places, mean final score, forfeits). With ``--vs random`` the two opponents are the random sample bot.

    python bench/strength.py --matches 300 --seed 1 --threshold 100

The greedy and random opponents are loaded from ``sample_bots/``; when the greedy sample is missing (or the
``arena_bot`` it needs lacks ``legal_sets``) an equivalent greedy policy defined here stands in.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "protocol"))

import arena_bot

from arena.game.rules import Rules
from arena.match.local import play_local

PLAYERS = 3
def load_bot_class(name: str) -> type[arena_bot.Bot] | None:
    """The ``arena_bot.Bot`` subclass defined in ``sample_bots/<name>/bot.py``, or None if there is none."""
    path = ROOT / "sample_bots" / name / "bot.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"sample_bot_{name.replace('-', '_')}", path)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, arena_bot.Bot) and value.__module__ == module.__name__:
            return value
    return None


def opponent_factory(kind: str) -> tuple[Callable[[], arena_bot.Bot], str]:
    """A constructor for the opponents and where it came from."""
    loaded = load_bot_class(kind)
    if loaded is None:
        raise SystemExit(f"sample_bots/{kind}/bot.py not found")
    return loaded, f"sample_bots/{kind}"


class _Timed:
    """Wraps a bot to record how long each of its turn replies takes (the referee allows far more)."""

    def __init__(self, bot: arena_bot.Bot, seconds: list[float]) -> None:
        self.bot = bot
        self.seconds = seconds

    def reply(self, message: dict[str, Any]) -> dict[str, Any] | None:
        if message.get("type") != "turn":
            return self.bot.reply(message)
        start = time.perf_counter()
        answer = self.bot.reply(message)
        self.seconds.append(time.perf_counter() - start)
        return answer


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a binomial proportion."""
    if trials == 0:
        return (0.0, 1.0)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return (max(0.0, centre - half), min(1.0, centre + half))


def run(matches: int, seed: int, threshold: int, opponent: str = "greedy") -> dict[str, Any]:
    """Play ``matches`` matches (rounded up to whole seat rotations) and summarise them."""
    planner_class = load_bot_class("planner")
    if planner_class is None:
        raise SystemExit("sample_bots/planner/bot.py not found")
    make_opponent, source = opponent_factory(opponent)
    rules = Rules(threshold=threshold)
    deals = math.ceil(matches / PLAYERS)
    wins = 0
    planner_places: list[int] = []
    opponent_places: list[int] = []
    planner_scores: list[int] = []
    forfeits = 0
    planner_forfeits = 0
    turn_seconds: list[float] = []
    started = time.perf_counter()
    for deal in range(deals):
        for planner_seat in range(PLAYERS):
            bots: list[Any] = [planner_class() if seat == planner_seat else make_opponent() for seat in range(PLAYERS)]
            bots[planner_seat] = _Timed(bots[planner_seat], turn_seconds)
            names = ["planner" if seat == planner_seat else f"{opponent}{seat}" for seat in range(PLAYERS)]
            match = play_local(bots, seed * 1_000_003 + deal, rules, names)
            assert match.outcome is not None
            places = match.outcome.places
            forfeits += len(match.forfeits)
            planner_forfeits += planner_seat in match.forfeits
            wins += places[planner_seat] == 1
            planner_places.append(places[planner_seat])
            planner_scores.append(match.outcome.scores[planner_seat])
            opponent_places.extend(places[s] for s in range(PLAYERS) if s != planner_seat)
    played = len(planner_places)
    low, high = wilson(wins, played)
    return {
        "matches": played,
        "players": PLAYERS,
        "opponent": opponent,
        "opponent_source": source,
        "threshold": threshold,
        "seed": seed,
        "planner_win_rate": round(wins / played, 4),
        "win_rate_ci95": [round(low, 4), round(high, 4)],
        "baseline_win_rate": round(1 / PLAYERS, 4),
        "planner_mean_place": round(sum(planner_places) / played, 3),
        f"{opponent}_mean_place": round(sum(opponent_places) / len(opponent_places), 3),
        "planner_mean_score": round(sum(planner_scores) / played, 2),
        "forfeits": forfeits,
        "planner_forfeits": planner_forfeits,
        "planner_turn_ms_mean": round(1000 * sum(turn_seconds) / max(1, len(turn_seconds)), 2),
        "planner_turn_ms_max": round(1000 * max(turn_seconds, default=0.0), 1),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=300, help="matches to play, rounded up to a multiple of 3")
    parser.add_argument("--seed", type=int, default=1, help="base seed of the deals")
    parser.add_argument("--threshold", type=int, default=100, help="elimination threshold (clause 8)")
    parser.add_argument("--vs", choices=["greedy", "random"], default="greedy", help="the two opponents")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.matches, args.seed, args.threshold, args.vs)))


if __name__ == "__main__":
    main()
