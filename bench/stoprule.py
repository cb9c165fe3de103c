"""The stop rule's error rates, on a simulation: how often two exactly equal bots end shown apart, how often the
run ends before ``max_matches``, how often a pair truly apart ends in the wrong order or shown equal, and the
matches it takes. Prints ONE JSON object.

Each simulated tournament is arena's own round-robin schedule (arena/schedule.py) of 5 bots at 3 seats, played
round by round (30 matches a round); after each round the stop rule's own code decides (arena/run/stoprule.py:
``decided``, on arena/stats/confidence.py's bootstrap at its production resamples) whether to stop, and at the end the
standings' labels are read with the rule's test, as ``arena standings`` shows them. The places are synthetic:
Plackett-Luce draws (Gumbel noise on a log strength per bot), every match independent, so the bots' true
strengths, and the equal pair, are exact. Independent draws have no luck of the deal shared between rotations;
duplicate deals make the estimates tighter, not the test's error larger.

``--chains`` runs fields of equal bots instead (3, 4 and 5 equal, and 3 equal between two others): the rule tests
neighbours only, so through a chain A = B = C every neighbouring pair may be called equal while A and C end shown
apart. Every pair of equal bots is counted, neighbours or not; the bound is on a run: at most 5% of runs may end
with any two equal bots shown apart.

    python bench/stoprule.py                        # 200 tournaments at the defaults
    python bench/stoprule.py --tournaments 20 --margin 0.15 --max-matches 900
    python bench/stoprule.py --chains --tournaments 100

This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from itertools import combinations, pairwise
from typing import Any

from arena.run.config import StopRule
from arena.run.stoprule import decided, pair_test, round_of
from arena.schedule import make_schedule
from arena.stats.confidence import GroupPlace, confidence
from arena.stats.display import shown

STRENGTHS = (1.8, 0.9, 0.0, 0.0, -0.9)
"""True log strengths: bots 2 and 3 exactly equal; the other neighbours 0.9 apart (a head-to-head share of 71%,
well outside the default margin's 60%: a pair near the margin takes the test long to decide either way)."""
PLAYERS = 3
CHAINS: tuple[tuple[float, ...], ...] = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0, 0.0),
                                         (0.9, 0.0, 0.0, 0.0, -0.9))
"""``--chains``: 3, 4 and 5 equal bots (A = B = C ...), and 3 equal between two others."""


def places(rng: random.Random, bots: tuple[int, ...], strengths: tuple[float, ...]) -> list[int]:
    """Plackett-Luce places by seat: sorting by log strength plus Gumbel noise draws a PL ranking."""
    keyed = [strengths[bot] - math.log(-math.log(rng.random() or 1e-300)) for bot in bots]
    order = sorted(range(len(bots)), key=lambda seat: -keyed[seat])
    found = [0] * len(bots)
    for place, seat in enumerate(order, 1):
        found[seat] = place
    return found


def tournament(seed: int, stop: StopRule, strengths: tuple[float, ...]) -> dict[str, Any]:
    bots = len(strengths)
    per_round = len(make_schedule(bots, PLAYERS, 1, 0))
    repeats = max(1, stop.max_matches // per_round)
    test = pair_test(stop, repeats)
    rng = random.Random(seed)
    schedule = make_schedule(bots, PLAYERS, repeats, seed)
    results: list[GroupPlace] = []
    ids = list(range(bots))
    for number in range(repeats):
        for match in schedule:
            if round_of(match.group, bots, PLAYERS, repeats) == number:
                results.extend(GroupPlace(match.group, bot, place, match.index)
                               for bot, place in zip(match.bots, places(rng, match.bots, strengths)))
        sure = confidence(results, ids)
        if decided(sure, test, bots) or number + 1 == repeats:
            break
    view = shown(sure).by_bot()  # as arena standings shows them: apart when their rank intervals do not meet
    order = sure.order()
    truly = sorted(ids, key=lambda bot: -strengths[bot])
    wrong = shown_equal = 0
    for a, b in pairwise(truly):
        if strengths[a] == strengths[b]:
            continue
        wrong += order.index(a) > order.index(b) and view[a].apart(view[b])
        shown_equal += not view[a].apart(view[b])
    # Every pair of equal bots, neighbours in the standings or not: through a chain A = B = C each neighbouring
    # pair may be called equal while A and C are shown apart.
    equal = [(a, b) for a, b in combinations(ids, 2) if strengths[a] == strengths[b]]
    apart = sum(view[a].apart(view[b]) for a, b in equal)
    neighbours = [(a, b) for a, b in pairwise(order) if strengths[a] == strengths[b]]
    return {"matches": (number + 1) * per_round, "stopped_early": number + 1 < repeats,
            "equal_pairs": len(equal), "equal_pairs_apart": apart,
            "equal_decided_equal": bool(neighbours) and all(sure.verdict(a, b, test) == "equal"
                                                             for a, b in neighbours),
            "unequal_pairs_wrong": wrong, "unequal_pairs_shown_equal": shown_equal}


def measure(strengths: tuple[float, ...], stop: StopRule, tournaments: int, seed: int) -> dict[str, Any]:
    """The rates over ``tournaments`` simulated tournaments of bots of these true strengths."""
    runs = [tournament(seed * 1_000_003 + number, stop, strengths) for number in range(tournaments)]
    unequal_pairs = sum(1 for a, b in pairwise(sorted(strengths)) if a != b) * len(runs)
    matches = [run["matches"] for run in runs]
    per_round = len(make_schedule(len(strengths), PLAYERS, 1, 0))
    looks = max(1, stop.max_matches // per_round)
    return {
        "strengths": list(strengths), "players": PLAYERS, "looks": looks,
        "z_per_look": round(pair_test(stop, looks).z, 3),
        "tournaments": len(runs),
        # The bound is on a run: at most 5% of runs may end with any two equal bots shown apart.
        "runs_with_equal_pair_shown_apart": round(sum(run["equal_pairs_apart"] > 0 for run in runs) / len(runs), 4),
        "equal_pairs_shown_apart": round(sum(run["equal_pairs_apart"] for run in runs)
                                         / max(1, sum(run["equal_pairs"] for run in runs)), 4),
        "equal_neighbours_all_decided_equal": round(sum(run["equal_decided_equal"] for run in runs) / len(runs), 4),
        "stopped_before_max_matches": round(sum(run["stopped_early"] for run in runs) / len(runs), 4),
        "unequal_pairs_in_wrong_order": (round(sum(run["unequal_pairs_wrong"] for run in runs) / unequal_pairs, 4)
                                         if unequal_pairs else None),
        "unequal_pairs_shown_equal": (round(sum(run["unequal_pairs_shown_equal"] for run in runs) / unequal_pairs, 4)
                                      if unequal_pairs else None),
        "matches_mean": round(statistics.fmean(matches), 1),
        "matches_median": statistics.median(matches),
        "matches_max": max(matches),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tournaments", type=int, default=200, help="simulated tournaments (200)")
    parser.add_argument("--confidence", type=float, default=StopRule.confidence)
    parser.add_argument("--max-matches", type=int, default=600, help="the bound (600, as the docs' example)")
    parser.add_argument("--margin", type=float, default=StopRule.margin)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--strengths", type=float, nargs="+", default=STRENGTHS,
                        help="true log strengths, bots 2 and 3 equal (default %(default)s)")
    parser.add_argument("--chains", action="store_true",
                        help=f"instead, fields of equal bots in chains: {'; '.join(map(str, CHAINS))}")
    args = parser.parse_args(argv)
    stop = StopRule(args.confidence, args.max_matches, args.margin)
    started = time.process_time()
    fields = CHAINS if args.chains else (tuple(args.strengths),)
    found = [measure(strengths, stop, args.tournaments, args.seed) for strengths in fields]
    print(json.dumps({
        "benchmark": "stoprule",
        "stop": {"confidence": stop.confidence, "max_matches": stop.max_matches, "margin": stop.margin},
        **({"fields": found} if args.chains else found[0]),
        "cpu_seconds": round(time.process_time() - started, 1),
    }))


if __name__ == "__main__":
    main()
