"""Whether the standings of a large balanced field ever show a bot at a rank outside its own 95% interval, and how
they show it: the widths of the ranks shown, the bots that could be first, equal bots shown apart. Prints ONE
JSON object.

A field of ``--bots`` bots (200) at 4 seats on arena's balanced random schedule (arena/schedule.py), with true
log strengths drawn N(0, 0.7^2) and every fifth bot given its predecessor's strength (exact equals, as the
2026-12-04 audit's field); places are synthetic Plackett-Luce draws, every match independent. The standings are
shown as ``arena standings`` shows them (arena/stats/display.py's ``shown`` on arena/stats/confidence.py's
bootstrap), after each of ``--rounds`` rounds. Counted per look: bots shown at a rank other than the bootstrap's
own 95% interval (the guarantee: 0; the rank shown is the interval, widened only to hold the bot's own
position), bots whose rank shown starts at 1, bots shown at one position, truly equal pairs shown apart (their
intervals not meeting), and the widths of the ranks shown.

    python bench/field_display.py                   # 200 bots, 2 tournaments, 3 rounds of 800 matches
    python bench/field_display.py --bots 60 --tournaments 4

This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from typing import Any

from arena.schedule import make_schedule
from arena.stats.confidence import GroupPlace, confidence
from arena.stats.display import shown

SEATS = 4


def strengths_of(bots: int, rng: random.Random) -> list[float]:
    found: list[float] = []
    for bot in range(bots):
        found.append(found[-1] if bot % 5 == 4 else rng.gauss(0.0, 0.7))
    return found


def look(results: list[GroupPlace], strengths: list[float], seed: int) -> dict[str, Any]:
    bots = len(strengths)
    sure = confidence(results, list(range(bots)), seed=seed)
    view = shown(sure)
    ranked = [line for line in view.lines if line.ranked and line.interval is not None]
    by_bot = view.by_bot()
    equal = [(bot - 1, bot) for bot in range(1, bots) if strengths[bot] == strengths[bot - 1]]
    widths = sorted(line.interval[1] - line.interval[0] + 1 for line in ranked if line.interval)
    return {"matches": len({result.match for result in results}),
            "ranked": len(ranked), "note": view.note,
            # The rank shown is the interval: it lies outside the bootstrap's own only where it had to be widened
            # to hold the bot's position in the order.
            "shown_rank_outside_own_interval": sum(
                line.interval != (sure.line(line.bot).rank_low, sure.line(line.bot).rank_high)
                for line in ranked if line.interval),
            "bots_shown_at_a_rank_starting_at_1": sum(line.interval[0] == 1 for line in ranked if line.interval),
            "bots_with_one_position": sum(len(line.rank.split("-")) == 1 for line in ranked),
            "equal_pairs_shown_apart": sum(by_bot[a].apart(by_bot[b]) for a, b in equal),
            "equal_pairs": len(equal),
            "interval_width_median": widths[len(widths) // 2] if widths else None,
            "interval_width_max": widths[-1] if widths else None}


def tournament(seed: int, bots: int, rounds: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    strengths = strengths_of(bots, rng)
    schedule = make_schedule(bots, SEATS, rounds, seed)
    per_round = len(schedule) // rounds  # a balanced random schedule lists round after round (arena/schedule.py)
    results: list[GroupPlace] = []
    looks = []
    for number in range(rounds):
        for match in schedule[number * per_round:(number + 1) * per_round]:
            keyed = sorted(match.bots, key=lambda bot: -(strengths[bot]
                                                         - math.log(-math.log(rng.random() or 1e-300))))
            results.extend(GroupPlace(match.group, bot, keyed.index(bot) + 1, match.index) for bot in match.bots)
        looks.append(look(results, strengths, number))
    return looks


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the balanced schedule, looked at after each")
    parser.add_argument("--tournaments", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    started = time.process_time()
    runs = [tournament(args.seed * 1_000_003 + number, args.bots, args.rounds) for number in range(args.tournaments)]
    print(json.dumps({"benchmark": "field_display", "bots": args.bots, "seats": SEATS, "tournaments": runs,
                      "shown_rank_outside_own_interval": sum(look["shown_rank_outside_own_interval"]
                                                             for run in runs for look in run),
                      "cpu_seconds": round(time.process_time() - started, 1)}))


if __name__ == "__main__":
    main()
