"""SPRT benchmark: the error rates of ``arena test``'s exact GSPRT (arena/stats/sprt.py) and the coverage of the interval
it prints at its stop, on 4,000 simulated tests per cell at the default settings.

The deals are real: a pool of deals per pairing is played first, in-process on the engine, with the ladder bots of
bench/rating.py (NEW with 5% random moves against BASE with 10%, half a ladder step; opponents with 20% and 30%):

- ``table``: NEW and BASE at one 3-seat table with one opponent, all 6 seatings of the deal (the default pairing);
- ``heads_up``: NEW and BASE alone, the deal played from both seats (2 matches);
- ``field``: NEW and BASE each play the 3 rotations of the deal against the same two opponents (6 matches).

Each simulated test then draws deals from its pool, with the truth set exactly as the cell needs it (as the audit
that asked for this bench did): under ``null`` every deal's difference gets a random sign, so NEW and BASE are
exactly equal and a "better" is an error (at most alpha); under ``margin`` the pool is tilted (the most likely
distribution on the pool's values with that mean) to a true difference of exactly the pairing's default margin, so
a "not better" is an error (at most beta). A test stops at its verdict or at the default cap of 3,000 matches
(undecided). A third truth, ``half`` (tilted to half the margin), has no wrong verdict: it checks the interval.
``heads_up_sparse`` is the heads-up pool padded with differences of 0 to 75% of deals (two deterministic bots that
differ in a few decisions: the audit's heads-up cells). Coverage: the share of tests whose 95% interval, as printed
at the stop, holds the true difference; also reported for its stopping-aware half alone, the plain 95% interval, and
the hull with other widths of the plain half.
The pools also give the ratio of the table's difference to the field's for the same pair of bots, which is what
the default margins per pairing rest on. Prints ONE JSON object; a measurement, not a test.

    python bench/sprt.py                 # 4,000 tests per cell, 12 cells, 2 processes
    python bench/sprt.py --tests 1000    # what docs/RATINGS.md quotes for the interval (431 s on a loaded 2-core VM)
    python bench/sprt.py --quick         # 200 tests per cell, a 120-deal pool: a smoke run
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import sys
import time
from itertools import accumulate
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from abtest import deal_difference, play

from arena.run.abtest import DEFAULT_MARGINS, DEFAULT_MAX_MATCHES
from arena.stats.sprt import Running, Settings, stopping_aware, tilt, widen

NEW, BASE = 0.05, 0.1
"""Shares of random moves of the ladder bot: half a step of bench/rating.py's ladder apart."""
DESIGNS = {"table": (3, 6), "heads_up": (2, 2), "heads_up_sparse": (2, 2), "field": (3, 6)}
"""Pairing: (seats, matches per deal). ``heads_up_sparse`` is the heads-up pool with deals of difference 0 added
until they are :data:`SPARSE_ZEROS` of it: two deterministic bots that differ in a few decisions, as in the audit
whose heads-up cells found the stopping-aware interval at 80.7-86.1%."""
SPARSE_ZEROS = 0.75
TRUTHS = {"null": 0.0, "half": 0.5, "margin": 1.0}
"""The true difference, in margins."""
ZS = (1.96, 2.24, 2.58)
"""The plain interval's standard errors in the hull reported per cell (the printed one is arena's Z_PLAIN)."""


def heads_up_difference(key: str) -> float:
    """One heads-up deal: NEW and BASE from both seats, BASE's mean place minus NEW's."""
    rng = random.Random(key)
    deal = rng.getrandbits(63)
    places = {NEW: 0, BASE: 0}
    for number, order in enumerate(((NEW, BASE), (BASE, NEW))):
        streams = [random.Random(f"{key}/{number}/{seat}") for seat in range(2)]
        for share, place in zip(order, play(deal, list(order), streams)):
            places[share] += place
    return (places[BASE] - places[NEW]) / 2


def pool(args: tuple[str, int, int]) -> tuple[str, list[float]]:
    design, deals, seed = args
    if design == "heads_up":
        return design, [heads_up_difference(f"{seed}/pool/{design}/{deal}") for deal in range(deals)]
    return design, [deal_difference(design, NEW, BASE, f"{seed}/pool/{design}/{deal}") for deal in range(deals)]


def law(values: list[float], truth: str, margin: float) -> tuple[list[float], list[float]]:
    """The values and cumulative weights of a deal's difference in this cell: the pool made symmetric (null) or
    tilted to its true mean (a share of ``margin``)."""
    counts: dict[float, float] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
        if truth == "null":
            counts[-value] = counts.get(-value, 0) + 1
    support = sorted(counts)
    weights = [counts[value] for value in support]
    if truth != "null":
        true = TRUTHS[truth] * margin
        theta = tilt(support, weights, true)
        weights = [w / (1 + theta * (value - true)) for value, w in zip(support, weights)]
    return support, list(accumulate(weights))


def sparse(values: list[float]) -> list[float]:
    """The pool with deals of difference 0 added until they are :data:`SPARSE_ZEROS` of it."""
    zeros = sum(value == 0 for value in values)
    extra = max(0, round((SPARSE_ZEROS * len(values) - zeros) / (1 - SPARSE_ZEROS)))
    return values + [0.0] * extra


Outcome = tuple[str, int, bool, bool, bool, tuple[bool, ...]]
"""verdict, deals, and whether the truth lies in: the printed interval, the stopping-aware one alone, the plain one
(mean +- 1.96 SE), the hull at each of :data:`ZS`."""


def run_tests(args: tuple[str, str, list[float], float, int, int, int]) -> list[Outcome]:
    design, truth, values, margin, first, count, seed = args
    seats, per_deal = DESIGNS[design]
    support, cumulative = law(values, truth, margin)
    true = TRUTHS[truth] * margin
    settings = Settings(margin=margin)
    found = []
    for number in range(first, first + count):
        rng = random.Random(f"{seed}/{design}/{truth}/{number}")
        running = Running(settings, seats - 1)
        squares = 0.0
        for _ in range(DEFAULT_MAX_MATCHES // per_deal):
            difference = rng.choices(support, cum_weights=cumulative)[0]
            squares += difference * difference
            if running.add(difference) != "undecided":
                break
        aware = stopping_aware(running.counts, running.bound, settings, running.llr)
        printed = widen(aware, running.counts, running.bound)  # what running.status() prints, solved once
        mean = running.total / running.n
        half = 1.96 * (max(squares / running.n - mean * mean, 0.0) / (running.n - 1)) ** 0.5
        hulls = tuple(widen(aware, running.counts, running.bound, z) for z in ZS)
        found.append((running.verdict, running.n, printed.low <= true <= printed.high,
                      aware.low <= true <= aware.high, mean - half <= true <= mean + half,
                      tuple(hull.low <= true <= hull.high for hull in hulls)))
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=4000, help="simulated tests per cell (4000)")
    parser.add_argument("--pool", type=int, default=400, help="deals played per pairing (400)")
    parser.add_argument("--quick", action="store_true", help="200 tests, a 120-deal pool: a smoke run")
    parser.add_argument("--workers", type=int, default=2, help="processes (2)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.quick:
        args.tests, args.pool = 200, 120
    started = time.perf_counter()
    chunk = 100
    with multiprocessing.get_context("spawn").Pool(args.workers) as workers:
        pools = dict(workers.map(pool, [(design, args.pool, args.seed) for design in DESIGNS
                                        if design != "heads_up_sparse"]))
        pools["heads_up_sparse"] = sparse(pools["heads_up"])
        jobs = [(design, truth, pools[design], DEFAULT_MARGINS[design == "field" and "field" or "table"],
                 first, min(chunk, args.tests - first), args.seed)
                for design in DESIGNS for truth in TRUTHS for first in range(0, args.tests, chunk)]
        results = workers.map(run_tests, jobs)
    report: dict[str, Any] = {"benchmark": "sprt", "tests_per_cell": args.tests, "pool_deals": args.pool,
                              "alpha": Settings().alpha, "beta": Settings().beta,
                              "max_matches": DEFAULT_MAX_MATCHES, "seed": args.seed}
    for design, (seats, per_deal) in DESIGNS.items():
        values = pools[design]
        margin = jobs[[job[0] for job in jobs].index(design)][3]
        entry: dict[str, Any] = {
            "seats": seats, "matches_per_deal": per_deal, "default_margin": margin,
            "pool_mean_difference": round(statistics.mean(values), 4),
            "pool_difference_sd": round(statistics.stdev(values), 4)}
        for truth, fraction in TRUTHS.items():
            mine = [one for job, found in zip(jobs, results) if job[:2] == (design, truth) for one in found]
            wrong = {"null": "better", "margin": "not better"}.get(truth)
            share = {verdict: round(sum(one[0] == verdict for one in mine) / len(mine), 4)
                     for verdict in ("better", "not better", "undecided")}
            entry[truth] = {
                "true_difference": fraction * margin, "verdicts": share,
                "error_rate": None if wrong is None else share[wrong],
                "mean_matches": round(per_deal * statistics.mean(one[1] for one in mine), 1),
                "interval_coverage": round(sum(one[2] for one in mine) / len(mine), 4),
                "stopping_aware_coverage": round(sum(one[3] for one in mine) / len(mine), 4),
                "plain_interval_coverage": round(sum(one[4] for one in mine) / len(mine), 4),
                "hull_coverage_by_z": {str(z): round(sum(one[5][i] for one in mine) / len(mine), 4)
                                       for i, z in enumerate(ZS)}}
        report[design] = entry
    report["table_over_field_difference"] = round(report["table"]["pool_mean_difference"]
                                                  / report["field"]["pool_mean_difference"], 2)
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
