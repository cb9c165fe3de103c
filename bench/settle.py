"""How often the standings show truly equal bots apart, at every size from one group (deal) up: what chose
arena/stats/display.py's MIN_GROUPS. Prints ONE JSON object.

Each simulated tournament is arena's own round-robin schedule (arena/schedule.py), played round by round; after
every round the standings are shown as ``arena standings`` shows them (arena/stats/display.py's ``shown``, on
arena/stats/confidence.py's bootstrap at its production resamples) but with the floor off (``min_groups`` 0), so
that each size's raw rate is seen. For every pair of truly equal bots it counts:

- *apart*: the two shown apart, their rank intervals (the ranks shown) not meeting;
- *one position*: an equal bot shown with a one-position rank interval (it has an equal twin, so no single rank
  is certain);
- *P >= 0.95*: P(above next) at 0.95 or more between two equal neighbours (shown, but not a settlement: a
  one-sided 95% figure reaches it in about 10% of equal pairs however much data there is).

The places are synthetic Plackett-Luce draws (Gumbel noise on a log strength per bot). Two models of a group:
``independent``, every match its own draw, and ``whole``, one draw per group that every rotation repeats (the
most a deal's luck can be shared: the group is one coin, the worst case for a bootstrap over few groups).

    python bench/settle.py                          # 60 tournaments per cell
    python bench/settle.py --tournaments 40 --cells heads-up

``last_size_over_5_percent`` is the largest groups-per-bot count at which a cell's raw *apart* or *one position*
rate exceeded 5% (60 tournaments give each rate +-4 points); below display.py's MIN_GROUPS it shows nothing
settled. This is a measurement, not a test: nothing asserts.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections import defaultdict
from itertools import combinations, pairwise
from typing import Any

from arena.run.stoprule import round_of
from arena.schedule import make_schedule
from arena.stats.confidence import GroupPlace, confidence
from arena.stats.display import MIN_GROUPS, shown

CELLS: dict[str, tuple[tuple[float, ...], int, int]] = {
    # name: (true log strengths, seats, rounds)
    "heads-up, 2 equal": ((0.0, 0.0), 2, 16),
    "3 seats, 3 equal": ((0.0, 0.0, 0.0), 3, 16),
    "2 seats, 5 bots, 3 equal between others": ((0.9, 0.0, 0.0, 0.0, -0.9), 2, 5),
    "3 seats, 5 equal": ((0.0, 0.0, 0.0, 0.0, 0.0), 3, 5),
}
MODELS = ("independent", "whole")


def places(rng: random.Random, bots: tuple[int, ...], strengths: tuple[float, ...]) -> dict[int, int]:
    """A Plackett-Luce ranking of ``bots``: place by bot (log strength plus Gumbel noise, sorted)."""
    keyed = sorted(bots, key=lambda bot: -(strengths[bot] - math.log(-math.log(rng.random() or 1e-300))))
    return {bot: place for place, bot in enumerate(keyed, 1)}


def tournament(seed: int, strengths: tuple[float, ...], seats: int, rounds: int, model: str
               ) -> list[dict[str, Any]]:
    """One tournament, looked at after every round: per look, the groups per bot and the counts."""
    bots = len(strengths)
    rng = random.Random(seed)
    schedule = make_schedule(bots, seats, rounds, seed)
    equal = [(a, b) for a, b in combinations(range(bots), 2) if strengths[a] == strengths[b]]
    twins = {bot for pair in equal for bot in pair}
    results: list[GroupPlace] = []
    drawn: dict[int, dict[int, int]] = {}
    looks = []
    for number in range(rounds):
        for match in (match for match in schedule if round_of(match.group, bots, seats, rounds) == number):
            if model == "whole":
                ranking = drawn.setdefault(match.group, places(rng, match.bots, strengths))
            else:
                ranking = places(rng, match.bots, strengths)
            results.extend(GroupPlace(match.group, bot, ranking[bot], match.index) for bot in match.bots)
        sure = confidence(results, list(range(bots)), seed=number)
        view = shown(sure, min_groups=0).by_bot()
        order = sure.order()
        looks.append({
            "groups_per_bot": min(sure.line(bot).groups for bot in range(bots)),
            "pairs": len(equal),
            "apart": sum(view[a].apart(view[b]) for a, b in equal),
            "bots": len(twins),
            "one_position": sum(view[bot].interval[0] == view[bot].interval[1] for bot in twins),
            "neighbours": sum(strengths[a] == strengths[b] for a, b in pairwise(order)),
            "p_95": sum(strengths[a] == strengths[b] and (view[a].p_above_next or 0) >= 0.95
                        for a, b in pairwise(order)),
        })
    return looks


def cell(name: str, model: str, tournaments: int, seed: int) -> dict[str, Any]:
    strengths, seats, rounds = CELLS[name]
    totals: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for number in range(tournaments):
        for look in tournament(seed * 1_000_003 + number, strengths, seats, rounds, model):
            for key, value in look.items():
                if key != "groups_per_bot":
                    totals[look["groups_per_bot"]][key] += value
    sizes = []
    for groups, counts in sorted(totals.items()):
        sizes.append({"groups_per_bot": groups,
                      "apart": round(counts["apart"] / counts["pairs"], 4),
                      "one_position": round(counts["one_position"] / counts["bots"], 4),
                      "p_95": round(counts["p_95"] / max(1, counts["neighbours"]), 4)})
    return {"cell": name, "model": model, "strengths": list(strengths), "seats": seats,
            "tournaments": tournaments, "sizes": sizes}


def exact_heads_up(sizes: range, arrangements: int, seed: int) -> list[dict[str, Any]]:
    """The heads-up, whole-deal cell without the tournaments' sampling noise: there a look at ``n`` deals is fixed by
    how many of them one bot won (``k``, binomial under equal bots) and, through the bootstrap, by which ones. So
    the rate of the pair shown apart is the sum over ``k`` of P(k) (exact) times the share of ``arrangements``
    random orders of the ``k`` wins that show them apart: what 60 tournaments a cell estimate to +-3 points.
    ``apart`` with the bootstrap's seed as ``arena standings`` has it (the default: the same for every
    tournament, so what a reader sees), ``apart_any_seed`` with a seed of its own for each order."""
    found = []
    for size in sizes:
        rates = {"apart": 0.0, "apart_any_seed": 0.0}
        shown_apart: set[int] = set()
        for wins in range(size + 1):
            rng = random.Random(f"{seed}/{size}/{wins}")
            counts = {"apart": 0, "apart_any_seed": 0}
            for draw in range(arrangements):
                winners = [0] * wins + [1] * (size - wins)
                rng.shuffle(winners)
                results = [GroupPlace(group, bot, 1 if bot == winner else 2, 2 * group + rotation)
                           for group, winner in enumerate(winners) for rotation in range(2) for bot in (0, 1)]
                for key, sure in (("apart", confidence(results, [0, 1])),
                                  ("apart_any_seed", confidence(results, [0, 1], seed=draw + 1))):
                    view = shown(sure, min_groups=0).by_bot()
                    counts[key] += view[0].apart(view[1])
            for key, count in counts.items():
                rates[key] += math.comb(size, wins) / 2 ** size * count / arrangements
            if counts["apart"]:
                shown_apart.add(wins)
        found.append({"groups_per_bot": size, **{key: round(rate, 4) for key, rate in rates.items()},
                      "wins_shown_apart": sorted(shown_apart)})
    return found


def last_over(cells: list[dict[str, Any]], bound: float = 0.05) -> int:
    """The most groups per bot at which a cell's *apart* or *one position* rate exceeded ``bound`` (0: none)."""
    return max((size["groups_per_bot"] for found in cells for size in found["sizes"]
                if size["apart"] > bound or size["one_position"] > bound), default=0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tournaments", type=int, default=60, help="simulated tournaments per cell (60)")
    parser.add_argument("--cells", nargs="+", default=list(CELLS), choices=list(CELLS), metavar="CELL")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--exact-heads-up", type=int, metavar="ARRANGEMENTS", default=0,
                        help="instead, the heads-up whole-deal cell by its binomial (exact_heads_up), this many "
                             "orders of each count of wins")
    args = parser.parse_args(argv)
    started = time.process_time()
    if args.exact_heads_up:
        sizes = exact_heads_up(range(1, CELLS["heads-up, 2 equal"][2] + 1), args.exact_heads_up, args.seed)
        print(json.dumps({"benchmark": "settle", "cell": "heads-up, 2 equal", "model": "whole", "exact": True,
                          "arrangements": args.exact_heads_up, "sizes": sizes, "min_groups": MIN_GROUPS,
                          "with_the_floor_worst_apart": max(size["apart"] for size in sizes
                                                            if size["groups_per_bot"] >= MIN_GROUPS),
                          "with_the_floor_worst_apart_any_seed": max(size["apart_any_seed"] for size in sizes
                                                                     if size["groups_per_bot"] >= MIN_GROUPS),
                          "cpu_seconds": round(time.process_time() - started, 1)}))
        return
    found = [cell(name, model, args.tournaments, args.seed) for name in args.cells for model in args.models]
    print(json.dumps({
        "benchmark": "settle", "cells": found,
        "last_size_over_5_percent": last_over(found), "min_groups": MIN_GROUPS,
        "with_the_floor_worst_apart": max((size["apart"] for c in found for size in c["sizes"]
                                           if size["groups_per_bot"] >= MIN_GROUPS), default=0.0),
        "cpu_seconds": round(time.process_time() - started, 1),
    }))


if __name__ == "__main__":
    main()
