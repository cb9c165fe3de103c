"""Rating benchmark: how many matches until the standings have a ladder of bots of known order right, under
each ranking key (the Plackett-Luce fit the standings use, mean place, TrueSkill), with duplicate and with
independent deals, and how often the 95% rank intervals of arena/stats/confidence.py hold the truth. Three parts:

- ``fresh``: the epsilon ladder, five in-process bots on the engine itself (no protocol, no processes): the
  greedy policy of bench/engine.py with 0%, 10%, 20%, 30% and 40% of its moves replaced by random legal ones, so
  the true order is known. Each simulated tournament is arena's own schedule (every 3-bot group of the 5, one
  match per seat rotation, ``repeats`` times) played repeat by repeat; after each repeat (30 matches) the
  standings are checked against the true order under every key, and the 95% rank intervals against the true
  ranks. Every bot's random choices come from its own seeded stream, never shared between rotations.
- ``pool``: designs and keys compared on the same tournaments, resampled from one pool of played matches per
  ladder and deal design (whole groups per combination, with replacement), for the epsilon ladder and a
  deterministic one (greedy variants that differ in a few decisions, :data:`GREEDY_LADDER`); the pool's own
  order is the truth. Also how often the fit orders as mean place in these round-robins.
- ``field``: a 30-bot field at 4 seats on arena's balanced random schedule, synthetic Plackett-Luce places:
  the mean rank error of the fit and of mean place at 360, 720 and 1,440 matches.

Prints ONE JSON object; the CPU time of the bootstrap for 10,000 matches is in every run.

    python bench/rating.py                 # every part at its defaults (long: the pools are 24,000 matches)
    python bench/rating.py --part field    # the 30-bot field, 200 tournaments
    python bench/rating.py --part pool --quick   # pools of 40 groups per combination, 100 resampled tournaments
    python bench/rating.py --part fresh --tournaments 200 --repeats 16 --deal-version 1   # the engine before deal version 2

This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

from arena.game.cards import VALUE, hand_total
from arena.game.engine import DEAL_VERSION, DECK_TAKE, Declare, Match, Move, Play, SeatView, competition_places
from arena.game.rules import Rules, legal_discards
from arena.run.config import RatingConfig
from arena.schedule import DEALS, Deals, make_schedule
from arena.stats.confidence import GroupPlace, confidence
from arena.stats.ranking import strengths
from arena.stats.ratings import RatedMatch, Rater, Rating

LADDER = (0.0, 0.1, 0.2, 0.3, 0.4)
"""Share of random moves of each bot; bot i's true rank is i + 1."""
PLAYERS = 3
RANDOM_DECLARE_CHANCE = 0.1
GREEDY_DECLARE_AT = 5
GREEDY_LOW_CARD = 3
TARGET = 0.9
"""The share of tournaments whose standings must have the true order."""
FIELD_GAP = 0.1
"""Log strength between neighbours of the synthetic 30-bot field: 2.9 from first to last, so a neighbour places
above the next in 52.5% of their meetings and the first above the last in 95%."""


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


GREEDY_LADDER = ((4, 3, True), (6, 3, True), (5, 3, False), (7, 3, False), (9, 3, False))
"""The deterministic ladder: greedy variants (declare at most, take a floor card worth at most, also take a floor
card that makes a pair with the hand), best first. They differ in a few decisions and share most moves, so a
duplicate deal's rotations play out alike, unlike the epsilon ladder's. Their order is not known by construction:
the pool's own standings (thousands of matches) are its truth."""


def variant_move(view: SeatView, rules: Rules, declare_at: int, low_card: int, sets: bool) -> Move:
    """A greedy variant: no random choice at all, the same move in the same position."""
    if view.may_declare and hand_total(view.hand) <= declare_at:
        return Declare()
    discard = max(legal_discards(view.hand, rules), key=lambda cards: sum(VALUE[card] for card in cards))
    kept = {card[0] for card in view.hand if card not in discard}
    if sets:
        matching = [card for card in view.floor if card[0] in kept]
        if matching:
            return Play(discard, min(matching, key=VALUE.__getitem__))
    low = min(view.floor, key=VALUE.__getitem__)
    return Play(discard, low if VALUE[low] <= low_card else DECK_TAKE)


def play(seed: int, bots: Sequence[int], streams: Sequence[random.Random], rules: Rules,
         deal_version: int, ladder: str = "eps") -> tuple[tuple[int, ...], tuple[int, ...]]:
    """One match of ladder bots (``bots[seat]`` indexes :data:`LADDER` or :data:`GREEDY_LADDER`): places and final
    scores by seat."""
    match = played(seed, bots, streams, rules, deal_version, ladder)
    assert match.outcome is not None
    return match.outcome.places, match.outcome.scores


def played(seed: int, bots: Sequence[int], streams: Sequence[random.Random], rules: Rules, deal_version: int,
           ladder: str = "eps") -> Match:
    """The finished match of :func:`play`."""
    match = Match(len(bots), seed, rules, deal_version)
    while match.outcome is None:
        seat = match.turn
        view = match.view(seat)
        match.apply(variant_move(view, rules, *GREEDY_LADDER[bots[seat]]) if ladder == "greedy"
                    else ladder_move(view, rules, streams[seat], LADDER[bots[seat]]))
    return match


# -- ranking keys: each maps the matches so far to a score per bot, lower is better -------------------------------

Played = tuple[int, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]
"""(match index, group, bots by seat, places, scores)."""


class Keys:
    """The ranking keys, updated match by match (TrueSkill is sequential), read at each checkpoint."""

    NAMES = ("plackett_luce", "trueskill_conservative", "trueskill_mu", "trueskill_group_mu", "mean_place",
             "mean_score")

    def __init__(self, bots: int) -> None:
        self.rater = Rater(RatingConfig())
        self.ratings: dict[int, Rating] = {bot: self.rater.initial for bot in range(bots)}
        self.group_ratings: dict[int, Rating] = dict(self.ratings)
        self.place_sum = [0] * bots
        self.score_sum = [0] * bots
        self.matches = [0] * bots
        self.seats: list[list[tuple[int, int]]] = []
        self._group: list[Played] = []

    def add(self, match: Played) -> None:
        index, group, bots, places, scores = match
        self.ratings = self.rater.update(self.ratings, RatedMatch(index, bots, places))
        self.seats.append(list(zip(bots, places)))
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
        fitted = strengths(self.seats, list(bots))
        return {
            "plackett_luce": [-fitted[b] for b in bots],
            "trueskill_conservative": [-self.ratings[b].conservative for b in bots],
            "trueskill_mu": [-self.ratings[b].mu for b in bots],
            "trueskill_group_mu": [-self.group_ratings[b].mu for b in bots],
            "mean_place": [self.place_sum[b] / self.matches[b] for b in bots],
            "mean_score": [self.score_sum[b] / self.matches[b] for b in bots],
        }


def in_true_order(score: Sequence[float]) -> bool:
    """Strictly increasing along the ladder: a tie is not the true order."""
    return all(a < b for a, b in pairwise(score))


def run_design(deals: Deals, tournaments: int, repeats: int, seed: int, rules: Rules, deal_version: int,
               coverage_from: int, resamples: int, progress: Callable[[str], None],
               shared_randomness: bool = False) -> dict[str, Any]:
    bots = len(LADDER)
    per_repeat = len(make_schedule(bots, PLAYERS, 1, 0))
    correct = {name: [0] * repeats for name in Keys.NAMES}
    covered = total = all_covered = intervals = 0
    settled_pairs = adjacent_pairs = 0
    agree = checkpoints = 0
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
            results.extend(GroupPlace(match.group, bot, place, match.index) for bot, place in zip(match.bots, places))
            for bot, place in zip(match.bots, places):
                sums[match.group][bot] += place
            played += 1
            if played % per_repeat:
                continue
            done = played // per_repeat
            scores = keys.scores()
            for name, score in scores.items():
                correct[name][done - 1] += in_true_order(score)
            agree += same_order(scores["plackett_luce"], scores["mean_place"])
            checkpoints += 1
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
                for a, b in pairwise(order):
                    settled_pairs += found.p_above[(a, b)] >= found.level
                    adjacent_pairs += 1
        for by_bot in sums.values():
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
        "fit_orders_as_mean_place": round(agree / max(checkpoints, 1), 4),
    }


def shared_positions(places: Sequence[int]) -> list[float]:
    """Places with a tie counted as the mean of the positions it shares (1, 2.5, 2.5, 4 for arena's 1, 2, 2, 4):
    the place whose mean is exactly linear in the fit's comparisons won, a tie being half a win each way."""
    return [place + (places.count(place) - 1) / 2 for place in places]


def same_order(first: Sequence[float], second: Sequence[float], places: int = 9) -> bool:
    """Whether two keys (lower is better) order the bots alike, equal keys (to ``places`` decimals) as equal."""
    def ranks(score: Sequence[float]) -> list[int]:
        rounded = [round(value, places) for value in score]
        return [sorted(rounded).index(value) for value in rounded]
    return ranks(first) == ranks(second)


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


# -- designs compared on the same resampled tournaments ---------------------------------------------------------------


def play_pool(ladder: str, deals: Deals, groups: int, seed: int, rules: Rules, deal_version: int
              ) -> dict[tuple[int, ...], list[list[tuple[int, ...]]]]:
    """Per 3-bot combination of the ladder, ``groups`` groups played on arena's schedule (one match per seat
    rotation): each group as its matches' places by bot (``places[i]`` of ``combination[i]``)."""
    pool: dict[tuple[int, ...], list[list[tuple[int, ...]]]] = defaultdict(list)
    grouped: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    members: dict[int, tuple[int, ...]] = {}
    for match in make_schedule(len(LADDER), PLAYERS, groups, seed, deals):
        streams = [random.Random(f"{seed}/{match.index}/{bot}") for bot in match.bots]
        places, _ = play(match.seed, match.bots, streams, rules, deal_version, ladder)
        combination = tuple(sorted(match.bots))
        by_bot = dict(zip(match.bots, places))
        grouped[match.group].append(tuple(by_bot[bot] for bot in combination))
        members[match.group] = combination
    for group, matches in sorted(grouped.items()):
        pool[members[group]].append(matches)
    return pool


def pool_truth(pools: Sequence[dict[tuple[int, ...], list[list[tuple[int, ...]]]]]) -> dict[str, list[float]]:
    """Mean place and fitted strength of every bot over whole pools: the truth the resampled tournaments are
    judged against (the pools are much larger than a tournament)."""
    place_sum: dict[int, int] = defaultdict(int)
    count: dict[int, int] = defaultdict(int)
    seats: list[list[tuple[int, int]]] = []
    for pool in pools:
        for combination, groups in pool.items():
            for group in groups:
                for places in group:
                    seats.append(list(zip(combination, places)))
                    for bot, place in zip(combination, places):
                        place_sum[bot] += place
                        count[bot] += 1
    bots = sorted(count)
    fitted = strengths(seats, bots)
    return {"mean_place": [round(place_sum[b] / count[b], 4) for b in bots],
            "plackett_luce": [round(fitted[b], 4) for b in bots]}


def resampled(pool: dict[tuple[int, ...], list[list[tuple[int, ...]]]], true_order: Sequence[int],
              tournaments: int, repeats: int, seed: int, resamples: int, trueskill: bool = True) -> dict[str, Any]:
    """``tournaments`` tournaments of up to ``repeats`` rounds drawn from the pool (per combination, whole groups
    with replacement), every key judged on the same ones after every round: the share in the pool's true order
    (its best first by mean place, which the fit agrees with on every pool here), and whether the fit orders as
    mean place does. The TrueSkill key rates the matches in schedule order."""
    rng = random.Random(seed)
    # TrueSkill is nine tenths of the cost: --skip-trueskill leaves it out of a long run.
    names = ("plackett_luce", "mean_place", "trueskill_conservative")[:3 if trueskill else 2]
    correct = {name: [0] * repeats for name in names}
    agree = agree_shared = checkpoints = ties = seen = 0
    covered = total = 0
    per_round = sum(len(groups[0]) for groups in pool.values())
    per_group = PLAYERS
    rank_of = {bot: rank for rank, bot in enumerate(true_order, 1)}
    for _ in range(tournaments):
        draws = {combination: [rng.randrange(len(groups)) for _ in range(repeats)]
                 for combination, groups in pool.items()}
        rater = Rater(RatingConfig())
        ratings = {bot: rater.initial for bot in range(len(LADDER))}
        place_sum = [0] * len(LADDER)
        position_sum = [0.0] * len(LADDER)
        seats: list[list[tuple[int, int]]] = []
        results: list[GroupPlace] = []
        index = 0
        for number in range(repeats):
            for combination, groups in pool.items():
                for places in groups[draws[combination][number]]:
                    if trueskill:
                        ratings = rater.update(ratings, RatedMatch(index, combination, places))
                    seats.append(list(zip(combination, places)))
                    results.extend(GroupPlace(number * len(pool) + len(seats) // per_group, bot, place, index)
                                   for bot, place in zip(combination, places))
                    index += 1
                    for bot, place, position in zip(combination, places, shared_positions(places)):
                        place_sum[bot] += place
                        position_sum[bot] += position
            fitted = strengths(seats, list(range(len(LADDER))))
            scores = {"plackett_luce": [-fitted[b] for b in range(len(LADDER))],
                      "mean_place": [float(value) for value in place_sum],
                      "trueskill_conservative": [-ratings[b].conservative for b in range(len(LADDER))]}
            for name in names:
                correct[name][number] += in_true_order([scores[name][bot] for bot in true_order])
            agree += same_order(scores["plackett_luce"], scores["mean_place"])
            agree_shared += same_order(scores["plackett_luce"], position_sum)
            ties += sum(len(set(places)) < len(places) for places in (
                [place for _, place in match] for match in seats))
            seen += len(seats)
            checkpoints += 1
        if resamples:
            found = confidence(results, list(range(len(LADDER))), resamples=resamples, seed=index)
            covered += sum(line.rank_low <= rank_of[line.bot] <= line.rank_high for line in found.bots)
            total += len(found.bots)
    fractions = {name: [round(c / tournaments, 4) for c in counts] for name, counts in correct.items()}
    return {
        "tournaments": tournaments,
        "matches_to_target": {name: _matches_to(fraction, per_round) for name, fraction in fractions.items()},
        "true_order_fraction_by_matches": {"matches": [per_round * (i + 1) for i in range(repeats)], **fractions},
        "fit_orders_as_mean_place": round(agree / max(checkpoints, 1), 4),
        "fit_orders_as_mean_place_ties_shared": round(agree_shared / max(checkpoints, 1), 4),
        "matches_with_tied_places": round(ties / max(seen, 1), 4),
        **({"coverage_95_at_end": round(covered / total, 4)} if total else {}),
    }


def pool_study(ladder: str, groups: int, tournaments: int, repeats: int, seed: int, rules: Rules,
               deal_version: int, resamples: int, progress: Callable[[str], None], trueskill: bool = True
               ) -> dict[str, Any]:
    pools = {}
    for deals in DEALS:
        pools[deals] = play_pool(ladder, deals, groups, seed, rules, deal_version)
        progress(f"{ladder} pool, {deals} deals: {groups} groups per combination")
    truth = pool_truth(list(pools.values()))
    true_order = sorted(range(len(LADDER)), key=lambda bot: truth["mean_place"][bot])
    found: dict[str, Any] = {"ladder": ladder, "pool_groups_per_combination": groups,
                             "pool_matches_per_design": groups * len(pools["duplicate"]) * PLAYERS,
                             "pool_truth": truth, "true_order": true_order,
                             "fit_orders_pool_as_mean_place": true_order == sorted(
                                 range(len(LADDER)), key=lambda bot: -truth["plackett_luce"][bot])}
    for deals, pool in pools.items():
        found[deals] = resampled(pool, true_order, tournaments, repeats, seed, resamples, trueskill)
        progress(f"{ladder} pool, {deals} deals: {tournaments} resampled tournaments")
    found["duplicate_over_independent_matches"] = {
        name: (None if dup is None or ind is None else round(dup / ind, 3))
        for name in found["duplicate"]["matches_to_target"]
        for dup, ind in [(found["duplicate"]["matches_to_target"][name],
                          found["independent"]["matches_to_target"][name])]}
    return found


# -- a large balanced-random field: where the fit and mean place part ---------------------------------------------


def field_study(bots: int, players: int, gap: float, tournaments: int, checkpoints: Sequence[int], seed: int,
                progress: Callable[[str], None]) -> dict[str, Any]:
    """Mean absolute rank error of the fit and of mean place in a ``bots``-bot field at ``players`` seats on
    arena's balanced random schedule (each round every bot in ``players`` groups, its seat rotations played), the
    places synthetic Plackett-Luce draws from log strengths ``gap`` apart (bot 0 strongest), every match
    independent. A bot meets only some others by a checkpoint, so mean place carries the luck of the draw of
    opponents; the fit allows for it."""
    per_round = len(make_schedule(bots, players, 1, 0))
    rounds = -(-max(checkpoints) // per_round)
    truth = [-gap * bot for bot in range(bots)]
    errors: dict[str, dict[int, float]] = {"plackett_luce": defaultdict(float), "mean_place": defaultdict(float)}
    for number in range(tournaments):
        rng = random.Random(f"{seed}/field/{number}")
        schedule = make_schedule(bots, players, rounds, seed * 1_000_003 + number)
        seats: list[list[tuple[int, int]]] = []
        place_sum = [0] * bots
        count = [0] * bots
        for match in schedule:
            keyed = [truth[bot] - math.log(-math.log(rng.random() or 1e-300)) for bot in match.bots]
            order = sorted(range(players), key=lambda seat: -keyed[seat])
            places = [0] * players
            for place, seat in enumerate(order, 1):
                places[seat] = place
            seats.append(list(zip(match.bots, places)))
            for bot, place in zip(match.bots, places):
                place_sum[bot] += place
                count[bot] += 1
            if len(seats) in checkpoints:
                fitted = strengths(seats, list(range(bots)))
                keys = {"plackett_luce": [-fitted[b] for b in range(bots)],
                        "mean_place": [place_sum[b] / count[b] if count[b] else players for b in range(bots)]}
                for name, key in keys.items():
                    errors[name][len(seats)] += _rank_error(key)
        progress(f"field: tournament {number + 1}/{tournaments}")
    table = {name: {str(at): round(total / tournaments, 3) for at, total in sorted(by.items())}
             for name, by in errors.items()}
    return {"bots": bots, "players": players, "log_strength_gap": gap, "tournaments": tournaments,
            "matches_per_round": per_round, "mean_abs_rank_error": table,
            "fit_over_mean_place": {at: round(table["plackett_luce"][at] / table["mean_place"][at], 3)
                                    for at in table["mean_place"]}}


def _rank_error(key: Sequence[float]) -> float:
    """Mean |estimated rank - true rank| (bot i's true rank is i + 1), ties ranked by their mean position."""
    ordered = sorted(range(len(key)), key=key.__getitem__)
    position: dict[float, list[int]] = defaultdict(list)
    for rank, bot in enumerate(ordered, 1):
        position[key[bot]].append(rank)
    return sum(abs(sum(position[key[bot]]) / len(position[key[bot]]) - (bot + 1)) for bot in range(len(key))) / len(key)


def confidence_seconds(matches: int = 10_000, seed: int = 1, bots: int = len(LADDER), players: int = PLAYERS
                       ) -> float:
    """CPU seconds of :func:`arena.stats.confidence.confidence` on ``matches`` synthetic matches of arena's schedule of
    ``bots`` at ``players`` seats (CPU time: the machine is shared)."""
    rng = random.Random(seed)
    results: list[GroupPlace] = []
    repeats = -(-matches // len(make_schedule(bots, players, 1, 0)))
    for match in make_schedule(bots, players, repeats, seed)[:matches]:
        strength = [bot * 0.3 + rng.gauss(0, 1) for bot in match.bots]
        places = competition_places([(value,) for value in strength])  # type: ignore[misc]
        results.extend(GroupPlace(match.group, bot, place, match.index) for bot, place in zip(match.bots, places))
    started = time.process_time()
    confidence(results, list(range(bots)))
    return time.process_time() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all", "fresh", "pool", "field"), default="all",
                        help="fresh tournaments of the epsilon ladder, designs on resampled pools of both ladders, "
                             "the 30-bot field, or all (default)")
    parser.add_argument("--tournaments", type=int, default=100, help="fresh tournaments per design (100)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats of the schedule, 30 matches each (5)")
    parser.add_argument("--quick", action="store_true", help="fewer tournaments, groups and repeats: a smoke run")
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
    parser.add_argument("--pool-groups", type=int, default=200,
                        help="groups per 3-bot combination in each ladder's pool, per design (200)")
    parser.add_argument("--pool-tournaments", type=int, default=1000,
                        help="tournaments resampled from each pool (1000)")
    parser.add_argument("--pool-repeats", type=int, default=10, help="rounds of a resampled tournament (10)")
    parser.add_argument("--skip-trueskill", action="store_true",
                        help="pools: rank by the fit and mean place only (TrueSkill is most of the time)")
    parser.add_argument("--field-tournaments", type=int, default=200, help="tournaments of the 30-bot field (200)")
    parser.add_argument("--verbose", action="store_true", help="progress on stderr")
    args = parser.parse_args(argv)
    if args.quick:
        args.tournaments, args.repeats = 30, 4
        args.pool_groups, args.pool_tournaments, args.pool_repeats, args.field_tournaments = 40, 100, 5, 20
    rules = Rules(threshold=args.threshold)
    started = time.perf_counter()

    def progress(line: str) -> None:
        if args.verbose:
            import sys
            print(f"{time.perf_counter() - started:7.1f}s {line}", file=sys.stderr, flush=True)

    report: dict[str, Any] = {"benchmark": "rating", "threshold": args.threshold, "deal_version": args.deal_version,
                              "seed": args.seed, "target_true_order_share": TARGET}
    if args.part in ("all", "fresh"):
        designs: tuple[Deals, ...] = DEALS if args.deals == "both" else (args.deals,)
        found: dict[str, dict[str, Any]] = {
            deals: run_design(deals, args.tournaments, args.repeats, args.seed, rules, args.deal_version,
                              args.coverage_from, args.resamples, progress, args.shared_randomness)
            for deals in designs}
        fresh: dict[str, Any] = {
            "ladder_random_moves": list(LADDER),
            "players": PLAYERS,
            "tournaments": args.tournaments,
            "max_matches": args.repeats * len(make_schedule(len(LADDER), PLAYERS, 1, 0)),
            "shared_randomness": args.shared_randomness,
            **found,
        }
        if len(found) == 2:
            fresh["duplicate_over_independent_matches"] = {
                name: (None if dup is None or ind is None else round(dup / ind, 3))
                for name in Keys.NAMES
                for dup, ind in [(found["duplicate"]["matches_to_target"][name],
                                  found["independent"]["matches_to_target"][name])]}
            fresh["variance_ratio_independent_over_duplicate"] = round(
                found["independent"]["group_place_sum_variance"] / found["duplicate"]["group_place_sum_variance"],
                3)
        report["fresh"] = fresh
    if args.part in ("all", "pool"):
        report["pool"] = {ladder: pool_study(ladder, args.pool_groups, args.pool_tournaments, args.pool_repeats,
                                             args.seed, rules, args.deal_version, 0, progress,
                                             not args.skip_trueskill)
                          for ladder in ("eps", "greedy")}
        report["pool"]["greedy_ladder"] = [list(variant) for variant in GREEDY_LADDER]
    if args.part in ("all", "field"):
        report["field"] = field_study(30, 4, FIELD_GAP, args.field_tournaments, (360, 720, 1440), args.seed, progress)
    report["confidence_cpu_seconds_10000_matches"] = round(confidence_seconds(), 2)
    report["confidence_cpu_seconds_10000_matches_30_bots_4_seats"] = round(confidence_seconds(bots=30, players=4), 2)
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
