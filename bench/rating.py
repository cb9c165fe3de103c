"""Rating benchmark: how many matches until the standings have a ladder of bots of known order right, with
duplicate and with independent deals, and how often the 95% rank intervals of arena/confidence.py hold the truth.

The ladder is five in-process bots on the engine itself (no protocol, no processes): the greedy policy of
bench/engine.py with 0%, 10%, 20%, 30% and 40% of its moves replaced by random legal ones, so the true order is
known. Each simulated tournament is arena's own schedule (arena/schedule.py: every 3-bot group of the 5, one match
per seat rotation, ``repeats`` times) played repeat by repeat; after each repeat (30 matches) the standings are
checked against the true order under several ranking keys (TrueSkill mu - 3 sigma, as arena sorted until now;
TrueSkill mu; TrueSkill rating each duplicate group as one result, ranked by summed places; mean place; mean
score), and the 95% rank intervals against the true ranks. Every bot's random choices come from its own seeded
stream, never shared between rotations (real bots cannot share theirs). Prints ONE JSON object.

    python bench/rating.py                 # the default run: 100 tournaments of 150 matches, both deal designs
    python bench/rating.py --quick         # 30 tournaments, fewer repeats: a smoke run
    python bench/rating.py --tournaments 200 --repeats 16 --deal-version 1   # the engine before deal version 2

This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import defaultdict
from typing import Any, Callable, Sequence

from arena.cards import VALUE, hand_total
from arena.confidence import GroupPlace, confidence
from arena.config import RatingConfig
from arena.game import DEAL_VERSION, DECK_TAKE, Declare, Match, Move, Play, SeatView, competition_places
from arena.ratings import RatedMatch, Rater, Rating
from arena.rules import Rules, legal_discards
from arena.schedule import DEALS, Deals, make_schedule

LADDER = (0.0, 0.1, 0.2, 0.3, 0.4)
"""Share of random moves of each bot; bot i's true rank is i + 1."""
PLAYERS = 3
RANDOM_DECLARE_CHANCE = 0.1
GREEDY_DECLARE_AT = 5
GREEDY_LOW_CARD = 3
TARGET = 0.9
"""The share of tournaments whose standings must have the true order."""


def ladder_move(view: SeatView, rules: Rules, rng: random.Random, randomness: float) -> Move:
    """Greedy (bench/engine.py), except that a share ``randomness`` of moves are random legal ones."""
    if randomness and rng.random() < randomness:
        if view.may_declare and rng.random() < RANDOM_DECLARE_CHANCE:
            return Declare()
        return Play(rng.choice(legal_discards(view.hand, rules)), rng.choice((DECK_TAKE, *view.floor)))
    if view.may_declare and hand_total(view.hand) <= GREEDY_DECLARE_AT:
        return Declare()
    discard = max(legal_discards(view.hand, rules), key=lambda cards: sum(VALUE[card] for card in cards))
    low = min(view.floor, key=VALUE.__getitem__)
    return Play(discard, low if VALUE[low] <= GREEDY_LOW_CARD else DECK_TAKE)


def play(seed: int, bots: Sequence[int], streams: Sequence[random.Random], rules: Rules,
         deal_version: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """One match of ladder bots (``bots[seat]`` indexes :data:`LADDER`): places and final scores by seat."""
    match = Match(len(bots), seed, rules, deal_version)
    while match.outcome is None:
        seat = match.turn
        match.apply(ladder_move(match.view(seat), rules, streams[seat], LADDER[bots[seat]]))
    return match.outcome.places, match.outcome.scores


# -- ranking keys: each maps the matches so far to a score per bot, lower is better -------------------------------

Played = tuple[int, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]
"""(match index, group, bots by seat, places, scores)."""


class Keys:
    """The ranking keys, updated match by match (TrueSkill is sequential), read at each checkpoint."""

    NAMES = ("trueskill_conservative", "trueskill_mu", "trueskill_group_mu", "mean_place", "mean_score")

    def __init__(self, bots: int) -> None:
        self.rater = Rater(RatingConfig())
        self.ratings: dict[int, Rating] = {bot: self.rater.initial for bot in range(bots)}
        self.group_ratings: dict[int, Rating] = dict(self.ratings)
        self.place_sum = [0] * bots
        self.score_sum = [0] * bots
        self.matches = [0] * bots
        self._group: list[Played] = []

    def add(self, match: Played) -> None:
        index, group, bots, places, scores = match
        self.ratings = self.rater.update(self.ratings, RatedMatch(index, bots, places))
        for bot, place, score in zip(bots, places, scores):
            self.place_sum[bot] += place
            self.score_sum[bot] += score
            self.matches[bot] += 1
        if self._group and self._group[0][1] != group:
            self._rate_group()
        self._group.append(match)

    def _rate_group(self) -> None:
        # A duplicate group as one result: its bots ranked by their places summed over the rotations.
        sums: dict[int, int] = defaultdict(int)
        for _, _, bots, places, _ in self._group:
            for bot, place in zip(bots, places):
                sums[bot] += place
        members = tuple(sorted(sums))
        ranks = tuple(competition_places([(sums[bot],) for bot in members]))
        self.group_ratings = self.rater.update(self.group_ratings, RatedMatch(self._group[0][1], members, ranks))
        self._group = []

    def scores(self) -> dict[str, list[float]]:
        if self._group:
            self._rate_group()
        bots = range(len(self.matches))
        return {
            "trueskill_conservative": [-self.ratings[b].conservative for b in bots],
            "trueskill_mu": [-self.ratings[b].mu for b in bots],
            "trueskill_group_mu": [-self.group_ratings[b].mu for b in bots],
            "mean_place": [self.place_sum[b] / self.matches[b] for b in bots],
            "mean_score": [self.score_sum[b] / self.matches[b] for b in bots],
        }


def in_true_order(score: Sequence[float]) -> bool:
    """Strictly increasing along the ladder: a tie is not the true order."""
    return all(a < b for a, b in zip(score, score[1:]))


def run_design(deals: Deals, tournaments: int, repeats: int, seed: int, rules: Rules, deal_version: int,
               coverage_from: int, resamples: int, progress: Callable[[str], None],
               shared_randomness: bool = False) -> dict[str, Any]:
    bots = len(LADDER)
    per_repeat = len(make_schedule(bots, PLAYERS, 1, 0))
    correct = {name: [0] * repeats for name in Keys.NAMES}
    covered = total = all_covered = intervals = 0
    settled_pairs = adjacent_pairs = 0
    width_sum = 0
    group_sums: dict[tuple[tuple[int, ...], int], list[int]] = defaultdict(list)
    for number in range(tournaments):
        tournament_seed = seed * 1_000_003 + number
        # The schedule lists a group of bots' repeats together; played repeat by repeat instead, every prefix
        # checked is a whole round-robin (each bot the same number of matches, in each seat).
        schedule = sorted(make_schedule(bots, PLAYERS, repeats, tournament_seed, deals),
                          key=lambda m: (m.group % repeats, m.group, m.rotation))
        keys = Keys(bots)
        results: list[GroupPlace] = []
        sums: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        played = 0
        for match in schedule:
            # Shared randomness (a diagnostic, not something real bots can do): the seat, not the bot, owns the
            # stream, so the rotations of a group see the same random choices; an upper bound for the deck alone.
            streams = [random.Random(f"{tournament_seed}/{match.group}/seat{seat}" if shared_randomness
                                     else f"{tournament_seed}/{match.index}/{bot}")
                       for seat, bot in enumerate(match.bots)]
            places, scores = play(match.seed, match.bots, streams, rules, deal_version)
            keys.add((match.index, match.group, match.bots, places, scores))
            results.extend(GroupPlace(match.group, bot, place) for bot, place in zip(match.bots, places))
            for bot, place in zip(match.bots, places):
                sums[match.group][bot] += place
            played += 1
            if played % per_repeat:
                continue
            done = played // per_repeat
            for name, score in keys.scores().items():
                correct[name][done - 1] += in_true_order(score)
            if done >= coverage_from:
                found = confidence(results, list(range(bots)), resamples=resamples, seed=number)
                every = True
                for line in found.bots:
                    inside = line.rank_low <= line.bot + 1 <= line.rank_high
                    covered += inside
                    every &= inside
                    width_sum += line.rank_high - line.rank_low
                    total += 1
                all_covered += every
                intervals += 1
                order = [line.bot for line in found.bots]
                for a, b in zip(order, order[1:]):
                    settled_pairs += found.p_above[(a, b)] >= found.level
                    adjacent_pairs += 1
        for group, by_bot in sums.items():
            members = tuple(sorted(by_bot))
            for bot, place_sum in by_bot.items():
                group_sums[(members, bot)].append(place_sum)
        progress(f"{deals}: tournament {number + 1}/{tournaments}")
    fractions = {name: [round(c / tournaments, 3) for c in counts] for name, counts in correct.items()}
    return {
        "matches_to_target": {name: _matches_to(fraction, per_repeat) for name, fraction in fractions.items()},
        "true_order_fraction_by_matches": {
            "matches": [per_repeat * (i + 1) for i in range(repeats)], **fractions},
        "coverage_95": round(covered / max(total, 1), 4),
        "coverage_all_bots_95": round(all_covered / max(intervals, 1), 4),
        "mean_interval_width_ranks": round(width_sum / max(total, 1), 3),
        "adjacent_pairs_settled_95": round(settled_pairs / max(adjacent_pairs, 1), 4),
        "group_place_sum_variance": round(_pooled_variance(group_sums.values()), 4),
    }


def _matches_to(fraction: Sequence[float], per_repeat: int) -> float | None:
    """Matches until the share of tournaments in the true order reaches :data:`TARGET`: linear between the
    checkpoints around the first that does (a whole round-robin apart, too coarse to compare designs by)."""
    previous = 0.0
    for i, share in enumerate(fraction):
        if share >= TARGET:
            return round(per_repeat * (i + (TARGET - previous) / (share - previous) if i else per_repeat), 1)
        previous = share
    return None


def _pooled_variance(samples: Any) -> float:
    """Variance of a bot's place sum over one group's rotations, pooled over (group of bots, bot)."""
    squares = 0.0
    freedom = 0
    for values in samples:
        if len(values) < 2:
            continue
        mean = sum(values) / len(values)
        squares += sum((v - mean) ** 2 for v in values)
        freedom += len(values) - 1
    return squares / max(freedom, 1)


def confidence_seconds(matches: int = 10_000, seed: int = 1) -> float:
    """Time :func:`arena.confidence.confidence` on ``matches`` synthetic 3-seat matches of the 5-bot schedule."""
    rng = random.Random(seed)
    results: list[GroupPlace] = []
    repeats = -(-matches // len(make_schedule(len(LADDER), PLAYERS, 1, 0)))
    for match in make_schedule(len(LADDER), PLAYERS, repeats, seed)[:matches]:
        strength = [bot * 0.3 + rng.gauss(0, 1) for bot in match.bots]
        places = competition_places([(value,) for value in strength])  # type: ignore[misc]
        results.extend(GroupPlace(match.group, bot, place) for bot, place in zip(match.bots, places))
    started = time.perf_counter()
    confidence(results, list(range(len(LADDER))))
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tournaments", type=int, default=100, help="simulated tournaments per design (100)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats of the schedule, 30 matches each (5)")
    parser.add_argument("--quick", action="store_true", help="30 tournaments of 4 repeats: a smoke run")
    parser.add_argument("--seed", type=int, default=1, help="master seed (1)")
    parser.add_argument("--threshold", type=int, default=50,
                        help="elimination threshold (50: matches half as long as the default 100, same ranking)")
    parser.add_argument("--deal-version", type=int, default=DEAL_VERSION, choices=(1, 2),
                        help="the engine's deck draw (1: before common random numbers)")
    parser.add_argument("--deals", choices=("both", *DEALS), default="both")
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples per interval (200)")
    parser.add_argument("--coverage-from", type=int, default=2, help="check intervals from this repeat on (2)")
    parser.add_argument("--shared-randomness", action="store_true",
                        help="diagnostic: a seat's random choices are the same in every rotation of a group")
    parser.add_argument("--verbose", action="store_true", help="progress on stderr")
    args = parser.parse_args(argv)
    if args.quick:
        args.tournaments, args.repeats = 30, 4
    rules = Rules(threshold=args.threshold)
    started = time.perf_counter()

    def progress(line: str) -> None:
        if args.verbose:
            import sys
            print(f"{time.perf_counter() - started:7.1f}s {line}", file=sys.stderr, flush=True)

    designs: tuple[Deals, ...] = DEALS if args.deals == "both" else (args.deals,)
    found: dict[str, dict[str, Any]] = {
        deals: run_design(deals, args.tournaments, args.repeats, args.seed, rules, args.deal_version,
                          args.coverage_from, args.resamples, progress, args.shared_randomness)
        for deals in designs}
    report: dict[str, Any] = {
        "benchmark": "rating",
        "ladder_random_moves": list(LADDER),
        "players": PLAYERS,
        "tournaments": args.tournaments,
        "max_matches": args.repeats * len(make_schedule(len(LADDER), PLAYERS, 1, 0)),
        "threshold": args.threshold,
        "deal_version": args.deal_version,
        "shared_randomness": args.shared_randomness,
        "seed": args.seed,
        "target_true_order_share": TARGET,
        **found,
    }
    if len(found) == 2:
        report["duplicate_over_independent_matches"] = {
            name: (None if dup is None or ind is None else round(dup / ind, 3))
            for name in Keys.NAMES
            for dup, ind in [(found["duplicate"]["matches_to_target"][name],
                              found["independent"]["matches_to_target"][name])]}
        report["variance_ratio_independent_over_duplicate"] = round(
            found["independent"]["group_place_sum_variance"] / found["duplicate"]["group_place_sum_variance"], 3)
    report["confidence_seconds_10000_matches"] = round(confidence_seconds(), 2)
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
