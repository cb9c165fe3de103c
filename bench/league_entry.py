"""Late-entrant league benchmark: the audit's league (docs/RATINGS.md, issue 38) in simulation, on the matchmaker's
own functions (arena/run/matchmaking.py's :class:`Tally`, :func:`choose_groups`, :func:`spread`,
:func:`throttle_weights`) with simulated time: no matches are played, so many seeds cost seconds.

The field, 4 seats, one group (4 matches) a batch, 1,600 matches:

- 5 bots at the start: ``strong``, ``x1``, ``x2``, ``x3`` and ``slow``, whose own think time per match is 3x any
  other bot's;
- ``v1`` enters at match 200 and is replaced by ``v2`` at 700 and by ``v3`` at 1,100 (``versions: latest``);
- ``x5`` enters at 500, ``x6`` at 800: 8 bots at the end, three of them late entrants counting the versioned one.

Each bot thinks ``THINK_S`` seconds a match (``slow`` 3x), so a match lasts the sum of its seats'. The throttle is
fed what the league feeds it: each bot's own think time (the referee's per-seat count); the match-time rule it
replaced (every seat charged the whole match) is worked out on the same schedule for comparison. No closeness (the
standings' P(above)): rule 2 alone, every pair's target the same.

Reported per seed and over the seeds: pair meetings over the meetings an even schedule gives while both bots are
active (the unthrottled pairs of the final field, judged once due 3 meetings), fewest and most, and their factor
(goal: within 2); the last window with all 8 active: the share of ``v3``'s groups with ``x6`` (even: 3/7 = 43%;
the audit measured 78% before this rule); each bot's weight (only ``slow`` below 1) and matches against its fair
share; ``slow``'s worker time against the median bot's; the head start: per late entrant, the league's matches
from its entry until it has sat with every bot of the field (a group is 4 matches; at least 2 groups, 8 matches,
for 6 others at 3 a group). Prints ONE JSON object; a measurement, not a test.

    python bench/league_entry.py             # 20 seeds
    python bench/league_entry.py --seeds 3   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any

from arena.run.matchmaking import Tally, choose_groups, spread, throttle_weights

SEATS = 4
MATCHES = 1600
THINK_S = 0.125
"""A bot's own think time per match (so a match of four ordinary bots takes 0.5 s, the audit's figure)."""
SLOW = 3.0
NAMES = ("strong", "x1", "x2", "x3", "slow", "v1", "x5", "v2", "x6", "v3")
SPANS = {"v1": (200, 700), "x5": (500, None), "v2": (700, 1100), "x6": (800, None), "v3": (1100, None)}
"""Late entrants: (first match, match at which it is replaced or None)."""
LAST = 1100
"""From here all 8 bots of the final field are active."""


def active_at(match: int) -> list[int]:
    found = []
    for bot, name in enumerate(NAMES):
        start, end = SPANS.get(name, (0, None))
        if start <= match and (end is None or match < end):
            found.append(bot)
    return found


def one_league(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    tally = Tally(SEATS)
    own: dict[int, tuple[int, float]] = {}
    whole: dict[int, tuple[int, float]] = {}
    slow = NAMES.index("slow")
    think = {bot: THINK_S * (SLOW if bot == slow else 1.0) for bot in range(len(NAMES))}
    weights: dict[int, float] = {}
    innocent = 1.0
    window: list[tuple[int, ...]] = []
    placed: dict[int, int] = {}
    match = 0
    while match < MATCHES:
        active = active_at(match)
        for bot in active:
            if NAMES[bot] in SPANS and bot not in placed and all(
                    tally.meetings.get((min(bot, other), max(bot, other))) for other in active
                    if other != bot and weights.get(other, 1.0) >= 1.0):
                placed[bot] = match - SPANS[NAMES[bot]][0]
        weights = throttle_weights({bot: own[bot] for bot in active if bot in own})
        innocent = min([innocent, *(w for bot, w in weights.items() if bot != slow)])
        for group in choose_groups(tally, active, 1, rng, None, weights):
            duration = sum(think[bot] for bot in group)
            for bot in group:
                count, seconds = own.get(bot, (0, 0.0))
                own[bot] = (count + SEATS, seconds + SEATS * think[bot])
                count, seconds = whole.get(bot, (0, 0.0))
                whole[bot] = (count + SEATS, seconds + SEATS * duration)
            if match >= LAST:
                window.append(group)
        match += SEATS
    final = active_at(MATCHES - 1)
    measured = spread(tally, final, weights)
    v3, x6 = NAMES.index("v3"), NAMES.index("x6")
    with_v3 = [group for group in window if v3 in group]
    seconds = {bot: own[bot][1] for bot in final}
    ordinary = statistics.median(seconds[bot] for bot in final if bot != slow)
    old = throttle_weights({bot: whole[bot] for bot in final})
    return {
        "seed": seed, "judged_pairs": measured.judged,
        "least_over_expected": measured.least_share, "most_over_expected": measured.most_share,
        "factor": None if not measured.balance else 1 / measured.balance,
        "v3_groups_in_window": len(with_v3),
        "v3_with_x6_share": sum(x6 in group for group in with_v3) / len(with_v3),
        "matches_to_meet_field": [placed.get(bot, MATCHES) for bot in range(len(NAMES)) if NAMES[bot] in SPANS],
        "slow_weight": weights.get(slow, 1.0), "least_other_weight": innocent,
        "slow_weight_by_match_time": old.get(slow, 1.0),
        "slow_worker_time_over_median": seconds[slow] / ordinary,
        "shares": {NAMES[share.bot]: share.share for share in measured.bots},
        "slow_pairs_over_expected": sorted(tally.meetings.get((min(slow, b), max(slow, b)), 0) / tally.expected(slow, b)
                                           for b in final if b != slow)}


def summary(values: list[float]) -> dict[str, float]:
    return {"min": round(min(values), 3), "mean": round(statistics.mean(values), 3), "max": round(max(values), 3)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="leagues simulated (20)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    runs = [one_league(seed) for seed in range(1, args.seeds + 1)]
    report: dict[str, Any] = {"benchmark": "league_entry", "seats": SEATS, "matches": MATCHES, "seeds": args.seeds,
                              "think_s": THINK_S, "slow_factor": SLOW}
    for key in ("least_over_expected", "most_over_expected", "factor", "v3_with_x6_share", "slow_weight",
                "least_other_weight", "slow_weight_by_match_time", "slow_worker_time_over_median"):
        report[key] = summary([run[key] for run in runs])
    report["matches_to_meet_field"] = summary([one for run in runs for one in run["matches_to_meet_field"]])
    report["judged_pairs"] = summary([run["judged_pairs"] for run in runs])
    report["v3_groups_in_window"] = summary([run["v3_groups_in_window"] for run in runs])
    report["share_of_fair"] = summary([share for run in runs for share in run["shares"].values()
                                       if share is not None])
    report["slow_pairs_over_expected"] = summary([one for run in runs for one in run["slow_pairs_over_expected"]])
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
