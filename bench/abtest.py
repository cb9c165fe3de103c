"""A/B test benchmark: matches to a verdict and error rates of ``arena test``'s SPRT (arena/stats/sprt.py), paired vs
unpaired, on the ladder bots of bench/rating.py (in-process, on the engine itself). The error rates at 4,000 tests
per cell, and the interval at the stop, are bench/sprt.py's.

Three designs, each 6 matches per deal at 3 seats, each a stream of per-deal differences (BASE's mean place minus
NEW's) fed to the same SPRT:

- ``unpaired``: NEW and BASE each play the 3 seat rotations against the same two opponents, on two independent
  deals (what a test without duplicate pairing does);
- ``field``: the same, on the same deal and seats (``arena test --pairing field``);
- ``table``: NEW and BASE at one table with one opponent, all 6 seatings of the deal (``arena test``'s default).

Two truths: NEW and BASE identical (10% random moves each: a "better" verdict is an error, at most alpha) and NEW
half a ladder step better (5% against 10%: a "not better" verdict is an error, at most beta). A table
difference is a head-to-head one and so about twice a field difference; for tests of the same strength each
design's margin is its own true difference for the improved pair, measured first on ``--pilot`` deals. Every bot's
random choices come from its own stream, never shared between the paired matches (real bots cannot share theirs).
Prints ONE JSON object; a measurement, not a test.

    python bench/abtest.py            # 40 tests per design and truth (about 5 minutes on two cores)
    python bench/abtest.py --quick    # 20 tests: a smoke run
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rating import ladder_move

from arena.game.engine import Match
from arena.game.rules import Rules
from arena.stats.sprt import Running, Settings

DESIGNS = ("unpaired", "field", "table")
TRUTHS = {"identical": (0.1, 0.1), "half_step_better": (0.05, 0.1)}
"""(NEW, BASE) as shares of random moves of the ladder bot: half a step of bench/rating.py's ladder (0.0, 0.1,
...) apart, so that the tests take tens of deals, not a handful."""
OPPONENTS = (0.2, 0.3)
MAX_DEALS = 400
RULES = Rules(threshold=50)


def deal_difference(design: str, new: float, base: float, key: str) -> float:
    """One deal of ``design``: BASE's mean place minus NEW's over its 6 matches."""
    rng = random.Random(key)
    seed = rng.getrandbits(63)
    matches: list[tuple[int, tuple[int, ...]]] = []  # (deal seed, seats as slots: 0 NEW, 1 BASE, 2-3 others)
    if design == "table":
        opponent = OPPONENTS[rng.randrange(len(OPPONENTS))]
        for order in ((0, 1), (1, 0)):
            group = (*order, 2)
            for rotation in range(3):
                matches.append((seed, group[rotation:] + group[:rotation]))
    else:
        other = seed if design == "field" else rng.getrandbits(63)
        for side, deal in ((0, seed), (1, other)):
            group = (side, 2, 3)
            for rotation in range(3):
                matches.append((deal, group[rotation:] + group[:rotation]))
    ladder: dict[int, float] = {0: new, 1: base, 2: OPPONENTS[0], 3: OPPONENTS[1]}
    if design == "table":
        ladder[2] = opponent
    new_places: list[int] = []
    base_places: list[int] = []
    for number, (deal, seats) in enumerate(matches):
        streams = [random.Random(f"{key}/{number}/{seat}") for seat in range(3)]
        places = play(deal, [ladder[slot] for slot in seats], streams)
        for slot, place in zip(seats, places):
            (new_places if slot == 0 else base_places if slot == 1 else []).append(place)
    return sum(base_places) / len(base_places) - sum(new_places) / len(new_places)


def play(deal: int, randomness: list[float], streams: list[random.Random]) -> tuple[int, ...]:
    """One match of ladder bots with these shares of random moves, by seat: the places."""
    match = Match(len(randomness), deal, RULES)
    while match.outcome is None:
        seat = match.turn
        match.apply(ladder_move(match.view(seat), RULES, streams[seat], randomness[seat]))
    return match.outcome.places


def differences(design: str, truth: str, run: int, seed: int) -> Iterator[float]:
    new, base = TRUTHS[truth]
    for deal in range(MAX_DEALS):
        yield deal_difference(design, new, base, f"{seed}/{design}/{truth}/{run}/{deal}")


def one_test(args: tuple[str, str, int, int, float]) -> tuple[str, str, str, int]:
    design, truth, run, seed, margin = args
    running = Running(Settings(margin=margin), 2)  # 3 seats: a deal's difference lies in [-2, 2]
    for difference in differences(design, truth, run, seed):
        if running.add(difference) != "undecided":
            break
    return design, truth, running.verdict, running.n


def pilot(args: tuple[str, int, int]) -> tuple[str, list[float]]:
    design, deals, seed = args
    return design, [deal_difference(design, *TRUTHS["half_step_better"], f"{seed}/pilot/{design}/{deal}")
                    for deal in range(deals)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=40, help="simulated tests per design and truth (40)")
    parser.add_argument("--pilot", type=int, default=150, help="deals measuring each design's true difference")
    parser.add_argument("--quick", action="store_true", help="20 tests, a 60-deal pilot: a smoke run")
    parser.add_argument("--workers", type=int, default=2, help="processes (2)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.quick:
        args.tests, args.pilot = 20, 60
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        measured = dict(pool.map(pilot, [(design, args.pilot, args.seed) for design in DESIGNS]))
        margins = {design: statistics.mean(values) for design, values in measured.items()}
        # unpaired and field measure the same difference (each against the field): one margin for both
        margins["unpaired"] = margins["field"] = (margins["unpaired"] + margins["field"]) / 2
        found = pool.map(one_test, [(design, truth, run, args.seed, margins[design])
                                    for design in DESIGNS for truth in TRUTHS for run in range(args.tests)])
    report: dict[str, Any] = {"benchmark": "abtest", "players": 3, "matches_per_deal": 6, "tests": args.tests,
                              "alpha": Settings().alpha, "beta": Settings().beta, "max_deals": MAX_DEALS,
                              "threshold": RULES.threshold, "seed": args.seed}
    for design in DESIGNS:
        values = measured[design]
        entry: dict[str, Any] = {
            "margin_places": round(margins[design], 3),
            "pilot_difference_variance": round(statistics.variance(values), 3),
            # what the SPRT's length goes with: the variance of a deal's difference over the squared difference
            "variance_over_margin_squared": round(statistics.variance(values) / margins[design] ** 2, 2)}
        for truth in TRUTHS:
            mine = [(verdict, deals) for d, t, verdict, deals in found if d == design and t == truth]
            wrong = "better" if truth == "identical" else "not better"
            entry[truth] = {
                "mean_matches_to_verdict": round(6 * statistics.mean(deals for _, deals in mine), 1),
                "error_rate": round(sum(verdict == wrong for verdict, _ in mine) / len(mine), 3),
                "undecided": sum(verdict == "undecided" for verdict, _ in mine)}
        report[design] = entry
    for design in ("field", "table"):
        report[f"{design}_over_unpaired_matches"] = {
            truth: round(report[design][truth]["mean_matches_to_verdict"]
                         / report["unpaired"][truth]["mean_matches_to_verdict"], 3) for truth in TRUTHS}
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
