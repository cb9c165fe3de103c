"""Points per round against places (issue 38, point 7): how many matches duplicate and independent deals need to
order a ladder, when the bots are ordered by mean place (what arena's fit orders by in a round-robin), by points per
round, or by a composite of both. A measurement, not a test: nothing here asserts; prints ONE JSON object.

The ladders are bench/rating.py's: ``greedy`` (deterministic greedy variants) and ``eps`` (greedy with 0-40% random
moves), 5 bots, every 3-bot combination, one match per seat rotation a group, on arena's own schedule
(arena/schedule.py's ``make_schedule``, duplicate or independent deals). Per match and seat: the place, and the
points per round (the seat's points over the rounds it was dealt into; lower is better). Per group and bot, the
mean of each over the group's matches; the composite is place / SD + points per round / SD, each SD the pooled
spread of that statistic within groups (no truth used).

The measure (the delta method, as the audit that asked for it): for each adjacent pair of the pool's order, the
variance over groups of the pair's contrast divided by the square of its mean. The matches a ranking by that
statistic needs to order the pair are proportional to it, so the ratio of two designs' values is the ratio of the
matches they need. Reported per pair and for the hardest pair (the largest value under independent deals and
places), with a 95% bootstrap interval over groups (``--boot`` resamples).

    python bench/points_per_round.py                    # 120 groups per combination and design, both ladders
    python bench/points_per_round.py --groups 30 --boot 50   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rating import LADDER, PLAYERS, played

from arena.game.engine import DEAL_VERSION
from arena.game.rules import Rules
from arena.schedule import DEALS, Deals, make_schedule

STATS = ("place", "ppr", "composite")
Group = dict[int, tuple[float, float]]
"""One group: per bot, its mean place and mean points per round over the group's matches."""


def play(seed: int, bots: Sequence[int], streams: Sequence[random.Random], rules: Rules, ladder: str
         ) -> list[tuple[int, float]]:
    """One match: per seat, the place and the points per round."""
    match = played(seed, bots, streams, rules, DEAL_VERSION, ladder)
    assert match.outcome is not None
    stats = match.seat_stats()
    return [(place, stat.points / max(1, stat.rounds)) for place, stat in zip(match.outcome.places, stats)]


def pool(ladder: str, deals: Deals, groups: int, seed: int, rules: Rules) -> list[Group]:
    found: dict[int, dict[int, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    for match in make_schedule(len(LADDER), PLAYERS, groups, seed, deals):
        streams = [random.Random(f"{seed}/{match.index}/{bot}") for bot in match.bots]
        for bot, result in zip(match.bots, play(match.seed, match.bots, streams, rules, ladder)):
            found[match.group][bot].append(result)
    return [{bot: (statistics.mean(p for p, _ in results), statistics.mean(r for _, r in results))
             for bot, results in members.items()} for _, members in sorted(found.items())]


def spreads(groups: Sequence[Group]) -> tuple[float, float]:
    """The pooled within-group SD of place and of points per round (a group's bots about their group mean)."""
    out = []
    for index in range(2):
        squares = count = 0.0
        for group in groups:
            values = [stat[index] for stat in group.values()]
            mean = statistics.mean(values)
            squares += sum((value - mean) ** 2 for value in values)
            count += len(values) - 1
        out.append((squares / count) ** 0.5)
    return out[0], out[1]


def value(stat: str, entry: tuple[float, float], scale: tuple[float, float]) -> float:
    """Lower is better."""
    if stat == "place":
        return entry[0]
    if stat == "ppr":
        return entry[1]
    return entry[0] / scale[0] + entry[1] / scale[1]


def order(groups: Sequence[Group]) -> list[int]:
    """The pool's own order by mean place (best first)."""
    totals: dict[int, list[float]] = defaultdict(list)
    for group in groups:
        for bot, entry in group.items():
            totals[bot].append(entry[0])
    return sorted(totals, key=lambda bot: statistics.mean(totals[bot]))


def contrasts(groups: Sequence[Group], stat: str, a: int, b: int, scale: tuple[float, float]) -> list[float]:
    """b's value minus a's in each group that seats both (positive: a better)."""
    return [value(stat, group[b], scale) - value(stat, group[a], scale) for group in groups
            if a in group and b in group]


def cost(groups: Sequence[Group], effect: float, stat: str, a: int, b: int, scale: tuple[float, float]) -> float:
    """Variance over the groups of the pair's contrast over the square of the common ``effect`` (from both designs:
    a design's own mean would let its noise in): matches needed, up to a factor common to every design."""
    return statistics.variance(contrasts(groups, stat, a, b, scale)) / (effect * effect)


def study(ladder: str, groups: int, boot: int, seed: int, rules: Rules) -> dict[str, Any]:
    pools = {deals: pool(ladder, deals, groups, seed, rules) for deals in DEALS}
    truth = order(pools["duplicate"] + pools["independent"])
    scale = spreads(pools["duplicate"] + pools["independent"])
    pairs = list(pairwise(truth))

    def costs(chosen: dict[str, Sequence[Group]]) -> dict[tuple[str, str, int, int], float]:
        both = [*chosen["duplicate"], *chosen["independent"]]
        effects = {(stat, a, b): statistics.mean(contrasts(both, stat, a, b, scale)) for stat in STATS
                   for a, b in pairs}
        return {(deals, stat, a, b): cost(chosen[deals], effects[(stat, a, b)], stat, a, b, scale)
                for deals in DEALS for stat in STATS for a, b in pairs}

    point = costs(pools)
    hardest = max(pairs, key=lambda ab: point[("independent", "place", *ab)])
    comparisons = {f"duplicate_{stat}_over_independent_place": ("duplicate", stat) for stat in STATS}
    comparisons |= {f"duplicate_{stat}_over_duplicate_place": ("duplicate", stat) for stat in STATS[1:]}
    rng = random.Random(f"{seed}/boot/{ladder}")
    boots: dict[str, list[float]] = defaultdict(list)
    for _ in range(boot):
        drawn = {deals: [rng.choice(found) for _ in found] for deals, found in pools.items()}
        got = costs(drawn)
        for name, (deals, stat) in comparisons.items():
            base = "independent" if "independent_place" in name else "duplicate"
            boots[name].append(got[(deals, stat, *hardest)] / got[(base, "place", *hardest)])
    report: dict[str, Any] = {"true_order_by_mean_place": truth, "hardest_pair": list(hardest),
                              "groups_per_design": len(pools["duplicate"])}
    for name, (deals, stat) in comparisons.items():
        base = "independent" if "independent_place" in name else "duplicate"
        ratio = point[(deals, stat, *hardest)] / point[(base, "place", *hardest)]
        ordered = sorted(boots[name])
        report[name] = {"ratio": round(ratio, 3),
                        "interval_95": [round(ordered[int(0.025 * boot)], 3), round(ordered[int(0.975 * boot) - 1], 3)],
                        "per_pair": [round(point[(deals, stat, a, b)] / point[(base, "place", a, b)], 3)
                                     for a, b in pairs]}
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=120, help="groups per combination and design (120)")
    parser.add_argument("--boot", type=int, default=200, help="bootstrap resamples (200)")
    parser.add_argument("--ladders", default="greedy,eps")
    parser.add_argument("--threshold", type=int, default=50, help="the match's score threshold (50, bench/rating.py's)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rules = Rules(threshold=args.threshold)
    report: dict[str, Any] = {"benchmark": "points_per_round", "players": PLAYERS, "groups": args.groups,
                              "boot": args.boot, "threshold": args.threshold, "seed": args.seed}
    for ladder in args.ladders.split(","):
        report[ladder] = study(ladder, args.groups, args.boot, args.seed, rules)
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
