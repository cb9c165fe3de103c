"""Planner: a heuristic Least Score bot that plans its hand, tracks the table and declares on expected value.

It is a sample of what a strong bot looks like, and the yardstick ``bench/strength.py`` measures against the
greedy sample. Each turn it:

* tracks the round from the messages: the cards each opponent took from the floor (known to be in their hand),
  the cards that went dead, and a soft upper bound on every card an opponent holds unseen (a player who throws a 6
  as a single rarely keeps a King), so it can put a distribution on each opponent's total and on the next draw;
* scores every (discard, take) option by the expected value of the resulting hand over the possible draws, looking
  one more turn ahead so that pairs, two-card runs, same-suit cards toward a flush (or toward a run, when runs must
  be of one suit) and set-completing floor cards are worth keeping or taking;
* avoids throwing a card the next player is known to collect, when an option of about the same worth exists;
* declares when the expected points a call hands the opponents beat its expected penalty (20 plus the undercut,
  times the chance that some opponent holds as little) and that chance of success is high enough: how high
  depends on how often the opponents' own calls fail (waiting with a low hand pays against reckless callers), and
  is raised when a failed call would put us over the elimination threshold. On the last turn before the turn cap
  it calls whenever that costs less than scoring its own total.

Standard library only and deterministic: the same messages always give the same replies. Run it with
``protocol/`` on ``PYTHONPATH``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations, combinations_with_replacement, pairwise, product
from operator import mul
from typing import Any, NamedTuple

import arena_bot

RANKS = "A23456789TJQK"
SUITS = "CDHS"
RANK = {r + s: i + 1 for i, r in enumerate(RANKS) for s in SUITS}
SUIT = {r + s: j for r in RANKS for j, s in enumerate(SUITS)}
VALUE = {card: min(rank, 10) for card, rank in RANK.items()}
DECK = tuple(RANK)
MAX_TOTAL = 60
"""Totals are kept in arrays this long: a hand never holds more than 5 cards of at most 10 points."""

# A card an opponent holds unseen may still be above the bound their throws suggest (kept for a pair, or the
# player is not greedy); its weight is scaled by this rather than set to zero.
ABOVE_BOUND_WEIGHT = 0.2
# Below its bound such a card leans low too, since players keep their lowest cards: weight exp(-LOW_BIAS * value).
LOW_BIAS = 0.1
# Weight of the resulting hand's own total (what we would score if someone declared before our next turn)
# against the look-ahead residual.
EXPOSURE_WEIGHT = 0.2
# Extra weight on that total per unit of chance that an opponent calls before our next turn.
EXPOSURE_THREAT = 1.0
# Cost per point of help given to the next player when they can pick up what we throw.
FEED_WEIGHT = 0.35
# Highest total with which an opponent we have not yet seen call is assumed to call.
DEFAULT_CALL_LEVEL = 5
# Estimated chance of success we require before declaring. Against opponents whose calls often fail (they call
# into our low hand and pay the penalty), waiting pays and we require CALL_CONFIDENCE; against careful callers
# waiting only gives them time, so it slides down to CALL_CONFIDENCE_CAREFUL as their observed failure rate drops
# below RECKLESS_FAIL_RATE (prior: PRIOR_FAILS failures in PRIOR_CALLS calls). Measured against greedy and
# against planners that call sooner (bench/strength.py and variants of it).
CALL_CONFIDENCE = 0.93
CALL_CONFIDENCE_CAREFUL = 0.8
RECKLESS_FAIL_RATE = 0.2
PRIOR_FAILS = 1.0
PRIOR_CALLS = 4.0
# When a failed call would put us over the elimination threshold.
CALL_CONFIDENCE_AT_RISK = 0.97
# A call must be worth at least CALL_MARGIN points (expected points handed to the average opponent less the
# expected penalty); one worth CALL_SURE or more is made with only CALL_MIN_CONFIDENCE.
CALL_MARGIN = 2.0
CALL_SURE = 12.0
CALL_MIN_CONFIDENCE = 0.8


@dataclass(frozen=True)
class RuleSet:
    """The rule options the planner needs, read from the ``rules`` object of ``hello``."""

    two_pairs_mixed: bool = True
    sequence_lengths: tuple[int, ...] = (3, 5)
    sequence_same_suit: bool = False
    flush_size: int = 5
    tie_fails: bool = True
    penalty: int = 20
    threshold: int = 100
    max_turns_per_player: int = 30

    @classmethod
    def from_message(cls, rules: dict[str, Any]) -> RuleSet:
        default = cls()
        return cls(
            two_pairs_mixed=bool(rules.get("two_pairs_mixed", default.two_pairs_mixed)),
            sequence_lengths=tuple(rules.get("sequence_lengths", default.sequence_lengths)),
            sequence_same_suit=bool(rules.get("sequence_same_suit", default.sequence_same_suit)),
            flush_size=int(rules.get("flush_size", default.flush_size)),
            tie_fails=bool(rules.get("tie_fails", default.tie_fails)),
            penalty=int(rules.get("penalty", default.penalty)),
            threshold=int(rules.get("threshold", default.threshold)),
            max_turns_per_player=int(rules.get("max_turns_per_player", default.max_turns_per_player)),
        )


def _is_sequence(ranks: Sequence[int]) -> bool:
    """Consecutive distinct ranks, Ace low or high but never wrapping (clause 3)."""
    ordered = sorted(ranks)
    if all(b == a + 1 for a, b in pairwise(ordered)):
        return True
    if ordered[0] != 1:
        return False
    high = ordered[1:] + [14]
    return all(b == a + 1 for a, b in pairwise(high))


def set_indices(
    ranks: Sequence[int], suits: Sequence[int], rules: RuleSet, flushes: bool = True
) -> list[tuple[int, ...]]:
    """Index tuples (ascending) of every set that may be thrown from cards with these ranks and suits (clause 3).

    Written on ranks and suits rather than card strings so that the look-ahead can run it on abstract cards too.
    """
    n = len(ranks)
    found: list[tuple[int, ...]] = [(i,) for i in range(n)]
    by_rank: dict[int, list[int]] = {}
    for i, r in enumerate(ranks):
        by_rank.setdefault(r, []).append(i)
    pairs = [pair for group in by_rank.values() for pair in combinations(group, 2)]
    found.extend(pairs)
    for group in by_rank.values():
        if len(group) == 4:
            found.append(tuple(group))
    if rules.two_pairs_mixed:
        for first, second in combinations(pairs, 2):
            if ranks[first[0]] != ranks[second[0]]:
                found.append(tuple(sorted(first + second)))
    for length in rules.sequence_lengths:
        if length > len(by_rank):
            continue
        for run in combinations(sorted(by_rank), length):
            if not _is_sequence(run):
                continue
            for pick in product(*(by_rank[r] for r in run)):
                if not rules.sequence_same_suit or len({suits[i] for i in pick}) == 1:
                    found.append(tuple(sorted(pick)))
    if flushes and n >= rules.flush_size:
        seen = set(found)
        for pick in combinations(range(n), rules.flush_size):
            if len({suits[i] for i in pick}) == 1 and pick not in seen:
                found.append(pick)
    return found


def legal_sets(hand: Sequence[str], rules: RuleSet) -> list[tuple[str, ...]]:
    """Every set that may be thrown from ``hand``, cards in hand order."""
    picks = set_indices([RANK[c] for c in hand], [SUIT[c] for c in hand], rules)
    return [tuple(hand[i] for i in pick) for pick in picks]


class Lookahead:
    """Hand evaluation on ranks alone, with caches shared by every bot that plays under the same rules.

    Keys are ranks (1..13), so the 13 ranks are the only draw classes and hands that differ only in suits share
    cache entries. Ranks cannot see what needs suits: flushes always, and sequences when they must be of one suit
    (then the look-ahead leaves sequences out). The planner adds those for the real cards of the hand it is about
    to hold.
    """

    def __init__(self, rules: RuleSet) -> None:
        self.rules = replace(rules, sequence_lengths=()) if rules.sequence_same_suit else rules
        self.classes: tuple[int, ...] = tuple(range(1, 14))
        self._throws: dict[tuple[int, ...], list[tuple[int, tuple[int, ...]]]] = {}
        self._residual: dict[tuple[int, ...], int] = {}
        self._rows: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._runs = sorted(_runs(self.rules.sequence_lengths), key=lambda run: -run[1])
        """Every sequence as (a bit per rank, its worth, its ranks), the best first."""

    @classmethod
    def for_rules(cls, rules: RuleSet) -> Lookahead:
        """The shared instance for ``rules``: its caches only grow, so later matches start warm."""
        sets = (rules.two_pairs_mixed, rules.sequence_lengths, rules.sequence_same_suit)
        found = _LOOKAHEADS.get(sets)
        if found is None:
            found = _LOOKAHEADS[sets] = cls(rules)
        return found

    def warm_up(self) -> None:
        """Fill the caches for every hand of up to five ranks, so that no turn pays for them (hello has time)."""
        for size in range(1, 5):
            for kept in combinations_with_replacement(self.classes, size):
                if max(kept.count(k) for k in kept) <= 4:
                    self.row(kept)

    @staticmethod
    def key(card: str) -> int:
        return RANK[card]

    @staticmethod
    def value(key: int) -> int:
        return min(key, 10)

    def throws(self, keys: tuple[int, ...]) -> list[tuple[int, tuple[int, ...]]]:
        """(value thrown, sorted keys kept) for every set of the sorted hand ``keys``, each hand kept once: what
        :func:`set_indices` finds, flushes aside, on keys rather than cards, because every process's look-ahead
        lists the sets of thousands of hands (equal ranks make the same set from different cards)."""
        cached = self._throws.get(keys)
        if cached is None:
            present, pairs, fours = _held(keys)
            kept: dict[tuple[int, ...], int] = {}  # what a set leaves: what it is worth
            for key in dict.fromkeys(keys):
                at = keys.index(key)
                kept[keys[:at] + keys[at + 1:]] = min(key, 10)
            for key in pairs:
                at = keys.index(key)
                kept[keys[:at] + keys[at + 2:]] = 2 * min(key, 10)
            for key in fours:
                at = keys.index(key)
                kept[keys[:at] + keys[at + 4:]] = 4 * min(key, 10)
            if self.rules.two_pairs_mixed:
                for low, high in combinations(pairs, 2):
                    at, to = keys.index(low), keys.index(high)
                    kept[keys[:at] + keys[at + 2:to] + keys[to + 2:]] = 2 * (min(low, 10) + min(high, 10))
            for run, worth, ranks in self._runs:
                if present & run == run:
                    rest = list(keys)
                    for key in ranks:
                        rest.remove(key)
                    kept.setdefault(tuple(rest), worth)  # all 13 ranks: the Ace low and high, one hand kept
            cached = self._throws[keys] = [(worth, hand) for hand, worth in kept.items()]
        return cached

    def residual(self, keys: tuple[int, ...]) -> int:
        """The lowest total left after throwing one set from ``keys``."""
        cached = self._residual.get(keys)
        if cached is None:
            cached = self._residual[keys] = sum(min(k, 10) for k in keys) - self.best_throw(keys)
        return cached

    def best_throw(self, keys: tuple[int, ...]) -> int:
        """The most one set thrown from the sorted keys ``keys`` is worth: the best of :meth:`throws`, found
        without listing them. The look-ahead asks it of thousands of hands when a process starts, and listing every
        set was most of a planner's start-up."""
        present, pairs, fours = _held(keys)
        best = min(keys[-1], 10)
        if fours:
            best = max(best, 4 * min(fours[-1], 10))
        if pairs:  # a value never falls as the rank rises: the last pairs are the best
            best = max(best, 2 * sum(min(key, 10) for key in pairs[-2 if self.rules.two_pairs_mixed else -1:]))
        for run, worth, _ in self._runs:  # the best first
            if worth <= best:
                break
            if present & run == run:
                return worth
        return best

    def row(self, kept: tuple[int, ...]) -> tuple[int, ...]:
        """``residual(kept + k)`` for every draw class k, in :attr:`classes` order: a dot product per turn."""
        cached = self._rows.get(kept)
        if cached is None:
            cached = tuple(self.residual(tuple(sorted(kept + (k,)))) for k in self.classes)
            self._rows[kept] = cached
        return cached


def _held(keys: tuple[int, ...]) -> tuple[int, list[int], list[int]]:
    """What the sorted hand ``keys`` holds: a bit per rank, the ranks held at least twice and those held four times
    (as :func:`set_indices`: never more), lowest first."""
    present = 0
    pairs = []
    fours = []
    for key in dict.fromkeys(keys):
        present |= 1 << key
        held = keys.count(key)
        if held >= 2:
            pairs.append(key)
            if held == 4:
                fours.append(key)
    return present, pairs, fours


def _runs(lengths: Sequence[int]) -> list[tuple[int, int, tuple[int, ...]]]:
    """(a bit per rank, worth, ranks) of every sequence of each length, the Ace low and high (clause 3; worth 1 either
    way)."""
    found = []
    for length in lengths:
        for low in range(1, 16 - length if length <= 13 else 1):  # 13 ranks: no longer sequence
            ranks = [1 if rank == 14 else rank for rank in range(low, low + length)]
            found.append((sum(1 << rank for rank in ranks), sum(min(rank, 10) for rank in ranks), tuple(sorted(ranks))))
    return found


_LOOKAHEADS: dict[tuple[bool, tuple[int, ...], bool], Lookahead] = {}
"""Keyed by the only rule options the look-ahead depends on."""


class CallOdds(NamedTuple):
    """What declaring now would bring, in expectation."""

    p_win: float
    """Chance that every opponent holds more than we do (or as much, when ties do not fail)."""
    gain: float
    """Expected points the opponents score, counting successful calls only."""
    fail_cost: float
    """Expected points we score: the penalty plus the undercut, counting failed calls only."""
    fail_points: float
    """Points we expect to score if the call fails."""


@dataclass
class Opponent:
    """What we know of one opponent's hand this round."""

    known: list[str] = field(default_factory=list)
    """Cards it took from the floor and has not thrown since."""
    bounds: list[int] = field(default_factory=lambda: [10] * 5)
    """One soft upper bound on the value of each card it holds unseen (10: nothing known)."""


class PlannerBot(arena_bot.Bot):
    """The planner; see the module docstring for the strategy."""

    persistent = True
    """It plays several matches per process: on_hello resets all it keeps about one match."""

    def __init__(self) -> None:
        self.seat = 0
        self.players = 0
        self.ruleset = RuleSet()
        self.look = Lookahead.for_rules(self.ruleset)
        self.hand: list[str] = []
        self.floor: list[str] = []
        self.dead: set[str] = set()
        self.opponents: dict[int, Opponent] = {}
        self.call_totals: dict[int, list[int]] = {}
        """Totals with which each seat has declared, over the match: how bold each opponent is."""
        self.calls_seen = 0
        self.calls_failed = 0
        """Opponents' calls this match and how many failed: reckless callers make waiting with a low hand pay."""
        self.turns_taken = 0
        """Our turns this round: the round ends when every seat has had ``max_turns_per_player``."""

    # -- keeping track ----------------------------------------------------------------------------------------

    def on_hello(self, message: dict[str, Any]) -> None:
        super().on_hello(message)
        self.players = len(message["players"])
        self.ruleset = RuleSet.from_message(message.get("rules", {}))
        self.look = Lookahead.for_rules(self.ruleset)
        self.look.warm_up()
        self.call_totals = {seat: [] for seat in range(self.players)}
        self.calls_seen = self.calls_failed = 0

    def on_message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "round_start":
            self.hand = list(message["hand"])
            self.floor = list(message["floor"])
            self.dead = set()
            live = message["live"]
            self.opponents = {s: Opponent() for s in range(self.players) if s != self.seat and live[s]}
            self.turns_taken = 0
        elif kind == "played":
            self._on_played(message)
        elif kind == "reshuffle":
            self.dead = set()  # the dead cards became the deck: drawable again
        elif kind == "forfeit":
            self.opponents.pop(message["seat"], None)
        elif kind == "round_end":
            declarer = message.get("declarer")
            if declarer is not None and declarer != self.seat:
                self.call_totals.setdefault(declarer, []).append(message["totals"][declarer])
                self.calls_seen += 1
                self.calls_failed += message.get("reason") == "failed_declaration"

    def _on_played(self, message: dict[str, Any]) -> None:
        seat: int = message["seat"]
        discard: list[str] = message["discard"]
        take: str = message["take"]
        self.dead.update(card for card in self.floor if card != take)
        if seat == self.seat:
            self.turns_taken += 1
        opponent = self.opponents.get(seat)
        if opponent is not None:
            for card in discard:
                if card in opponent.known:
                    opponent.known.remove(card)
                elif opponent.bounds:
                    # Unseen card thrown: drop the slot most likely to have held it, the loosest bound.
                    opponent.bounds.remove(max(opponent.bounds))
            # A player throws what it wants rid of most; what it keeps unseen is probably worth less.
            bound = min(10, sum(VALUE[card] for card in discard))
            opponent.bounds = [min(b, bound) for b in opponent.bounds]
            if take == "deck":
                opponent.bounds.append(10)
            else:
                opponent.known.append(take)
        self.floor = list(discard)

    # -- probabilities ----------------------------------------------------------------------------------------

    def _unseen(self) -> list[str]:
        """Cards whose place we do not know: in the deck or unseen in an opponent's hand."""
        placed = set(self.hand) | set(self.floor) | self.dead
        for opponent in self.opponents.values():
            placed.update(opponent.known)
        return [card for card in DECK if card not in placed]

    @staticmethod
    def _slot_distribution(value_counts: list[float], bound: int) -> list[float]:
        if bound >= 10:  # a fresh draw: as the unseen cards are
            weights = list(value_counts)
        else:
            weights = [
                count * (math.exp(-LOW_BIAS * v) if v <= bound else ABOVE_BOUND_WEIGHT)
                for v, count in enumerate(value_counts)
            ]
        norm = sum(weights)
        if norm <= 0:
            return [0.0] * 11
        return [w / norm for w in weights]

    def _total_distribution(self, opponent: Opponent, value_counts: list[float]) -> list[float]:
        """Probability of each total of the opponent's hand: known cards plus a distribution per unseen card."""
        dist = [0.0] * MAX_TOTAL
        dist[min(sum(VALUE[c] for c in opponent.known), MAX_TOTAL - 1)] = 1.0
        for bound in opponent.bounds:
            slot = self._slot_distribution(value_counts, bound)
            new = [0.0] * MAX_TOTAL
            for total, p in enumerate(dist):
                if p:
                    for v in range(1, 11):
                        if slot[v]:
                            new[min(total + v, MAX_TOTAL - 1)] += p * slot[v]
            dist = new
        return dist

    def _sync_sizes(self, hand_sizes: Sequence[int], live: Sequence[bool]) -> None:
        """Make every opponent's slot count agree with the hand size the referee reports."""
        for seat in list(self.opponents):
            if seat >= len(live) or not live[seat]:
                del self.opponents[seat]
                continue
            opponent = self.opponents[seat]
            while len(opponent.known) > hand_sizes[seat]:
                opponent.known.pop(0)
            missing = hand_sizes[seat] - len(opponent.known) - len(opponent.bounds)
            if missing > 0:
                opponent.bounds.extend([10] * missing)
            elif missing < 0:
                opponent.bounds = sorted(opponent.bounds)[: len(opponent.bounds) + missing]

    # -- the turn ---------------------------------------------------------------------------------------------

    def on_turn(self, message: dict[str, Any]) -> dict[str, Any]:
        self.hand = list(message["hand"])
        self.floor = list(message["floor"])
        live: list[bool] = message["live"]
        scores: list[int] = message["scores"]
        self._sync_sizes(message["hand_sizes"], live)

        unseen = self._unseen()
        value_counts = [0.0] * 11
        for card in unseen:
            value_counts[VALUE[card]] += 1
        dists = {seat: self._total_distribution(opp, value_counts) for seat, opp in self.opponents.items()}

        # On our last turn before the turn cap, the hand we keep is what we score unless someone declares.
        last_turn = self.turns_taken + 1 >= self.ruleset.max_turns_per_player
        if message["may_declare"] and self._should_declare(dists, scores, last_turn):
            return arena_bot.declare()
        discard, take = self._choose_play(unseen, value_counts, dists, live, last_turn)
        return arena_bot.play(list(discard), take)

    def _draw_chances(self, unseen: list[str], value_counts: list[float]) -> dict[str, float]:
        """Probability of each unseen card being the next card off the deck.

        The deck is the unseen cards less those in opponents' hands, and those lean low (players keep low cards),
        so each value's share is cut by the number of unseen opponent cards expected to have that value.
        """
        held = [0.0] * 11
        for opponent in self.opponents.values():
            for bound in opponent.bounds:
                slot = self._slot_distribution(value_counts, bound)
                for v in range(1, 11):
                    held[v] += slot[v]
        weights = {card: max(0.0, 1.0 - held[VALUE[card]] / value_counts[VALUE[card]]) for card in unseen}
        norm = sum(weights.values())
        if norm <= 0:  # nothing left unseen (cannot happen in a real deal): any card is as likely as any other
            return {card: 1.0 / len(DECK) for card in DECK}
        return {card: w / norm for card, w in weights.items()}

    def _choose_play(
        self,
        unseen: list[str],
        value_counts: list[float],
        dists: dict[int, list[float]],
        live: Sequence[bool],
        last_turn: bool = False,
    ) -> tuple[tuple[str, ...], str]:
        """The (discard, take) of least expected cost.

        The cost of the hand we end the turn with is ``exposure * its total`` (what we score if someone calls
        before our next turn, weighted by how likely that is) plus the expected total left after our next throw
        and the one after it, over the draws in between, choosing the best throw each time. A deck take averages
        that over the draw; a floor take is exact, so a floor card that completes a set for next turn shows up.
        """
        look = self.look
        chances = self._draw_chances(unseen, value_counts)
        weights: dict[int, float] = {}
        for card, p in chances.items():
            weights[look.key(card)] = weights.get(look.key(card), 0.0) + p
        draws = [(key, weights[key]) for key in look.classes if weights.get(key)]
        vector = [weights.get(key, 0.0) for key in look.classes]
        hand_value: dict[tuple[int, ...], float] = {}
        future: dict[tuple[int, ...], float] = {}
        flush_size = self.ruleset.flush_size

        def after_next_throw(kept: tuple[int, ...]) -> float:
            """Expected total left two throws from now, when ``kept`` stays after the next one."""
            cached = future.get(kept)
            if cached is None:
                cached = future[kept] = sum(map(mul, vector, look.row(kept)))
            return cached

        def value_of(keys: tuple[int, ...]) -> float:
            """Cost of holding ``keys`` at the end of this turn: its total now blended with the best plan next."""
            cached = hand_value.get(keys)
            if cached is None:
                total = sum(look.value(k) for k in keys)
                plan = min(after_next_throw(kept) for _, kept in look.throws(keys))
                cached = exposure * total + plan_weight * plan
                hand_value[keys] = cached
            return cached

        def concrete_value(cards: list[str]) -> float:
            """:func:`value_of` for real cards, with the sets that ranks alone cannot see (flushes, one-suit runs)."""
            hand = tuple(sorted(cards))
            cached = concrete.get(hand)
            if cached is None:
                total = sum(VALUE[c] for c in cards)
                plan = min(
                    after_next_throw(tuple(sorted(look.key(c) for c in cards if c not in thrown)))
                    for thrown in legal_sets(cards, self.ruleset)
                )
                cached = concrete[hand] = exposure * total + plan_weight * plan
            return cached

        def suit_matters(cards: list[str]) -> bool:
            """Whether the suits of ``cards`` plus one more card can make a set that ranks alone cannot see."""
            if self.ruleset.sequence_same_suit:
                return True
            return len(cards) + 1 >= flush_size and max(sum(SUIT[c] == s for c in cards) for s in range(4)) >= (
                flush_size - 1
            )

        concrete: dict[tuple[str, ...], float] = {}
        exposure = EXPOSURE_WEIGHT + EXPOSURE_THREAT * self._call_threat(dists)
        plan_weight = 1.0
        if last_turn:
            exposure, plan_weight = 1.0, 0.0
        feed = self._feed_costs(live)
        best: tuple[float, int, tuple[str, ...], str] | None = None
        for index, discard in enumerate(legal_sets(self.hand, self.ruleset)):
            rest_cards = [c for c in self.hand if c not in discard]
            rest = [look.key(c) for c in rest_cards]
            if not suit_matters(rest_cards):
                deck_cost = sum(p * value_of(tuple(sorted(rest + [key]))) for key, p in draws)
            else:
                # Count the draws on real cards. A card whose suit is not in hand can only pair, so one card of
                # each rank stands for all such cards of that rank.
                suits = {SUIT[c] for c in rest_cards}
                groups: dict[tuple[int, int], tuple[str, float]] = {}
                for card, p in chances.items():
                    group = (RANK[card], SUIT[card] if SUIT[card] in suits else -1)
                    first, mass = groups.get(group, (card, 0.0))
                    groups[group] = (first, mass + p)
                deck_cost = sum(mass * concrete_value([*rest_cards, card]) for card, mass in groups.values())
            options: list[tuple[float, str]] = [(deck_cost, "deck")]
            for card in self.floor:
                hand = [*rest_cards, card]
                cost = (
                    concrete_value(hand) if suit_matters(rest_cards) else value_of(tuple(sorted(rest + [RANK[card]])))
                )
                options.append((cost, card))
            penalty = FEED_WEIGHT * max(feed.get(card, 0.0) for card in discard)
            for cost, take in options:
                candidate = (cost + penalty, index, discard, take)
                if best is None or candidate[:2] < best[:2]:
                    best = candidate
        assert best is not None  # a hand always has a single to throw
        return best[2], best[3]

    def _call_level(self, seat: int) -> int:
        """The highest total with which ``seat`` is expected to call: the boldest call seen from it this match."""
        seen = self.call_totals.get(seat) or []
        return max([DEFAULT_CALL_LEVEL, *seen])

    def _call_threat(self, dists: dict[int, list[float]]) -> float:
        """Chance that some opponent holds a total it would call with, i.e. may end the round before our turn."""
        safe = 1.0
        for seat, dist in dists.items():
            safe *= 1.0 - sum(dist[: self._call_level(seat) + 1])
        return 1.0 - safe

    def _next_seat(self, live: Sequence[bool]) -> int | None:
        for step in range(1, self.players):
            seat = (self.seat + step) % self.players
            if live[seat] and seat in self.opponents:
                return seat
        return None

    def _feed_costs(self, live: Sequence[bool]) -> dict[str, float]:
        """How much each card of our hand would help the next player if we threw it (they may pick it up).

        Only they can take from our discard. A card that makes a set with cards they are known to hold lets them
        throw that set next turn; a low card spares them a blind draw worth about 6.5.
        """
        nxt = self._next_seat(live)
        if nxt is None:
            return {}
        known = self.opponents[nxt].known
        costs: dict[str, float] = {}
        for card in self.hand:
            help_ = max(0.0, 4.0 - VALUE[card])
            for cards in legal_sets([*known, card], self.ruleset):
                if len(cards) > 1 and card in cards:
                    help_ = max(help_, 2.0 + sum(VALUE[c] for c in cards) / 2)
            costs[card] = help_
        return costs

    def _call_odds(self, dists: dict[int, list[float]], total: int) -> CallOdds:
        """What a call with ``total`` would bring, opponents' totals taken as independent."""
        rules = self.ruleset
        limit = total if rules.tie_fails else total - 1  # an opponent at or below this makes the call fail
        above = [1.0] * MAX_TOTAL  # P(lowest opponent total > x)
        beats: dict[int, float] = {}  # P(this opponent's total > limit)
        handed: dict[int, float] = {}  # E[its total - ours if above limit, else 0]
        for seat, dist in dists.items():
            tail = 0.0
            for x in range(MAX_TOTAL - 1, -1, -1):
                above[x] *= tail  # tail is P(total > x) here
                tail += dist[x]
            beats[seat] = sum(dist[limit + 1 :])
            handed[seat] = sum(p * (x - total) for x, p in enumerate(dist) if x > limit)
        p_win = above[limit] if limit < MAX_TOTAL else 0.0
        undercut = 0.0  # E[our total - lowest opponent total, when that makes the call fail]
        for x in range(min(limit + 1, MAX_TOTAL)):
            p_lowest_is_x = (above[x - 1] if x > 0 else 1.0) - above[x]
            undercut += p_lowest_is_x * (total - x)
        gain = 0.0
        for seat in dists:
            others_beat = 1.0
            for other in dists:
                if other != seat:
                    others_beat *= beats[other]
            gain += handed[seat] * others_beat
        fail_points = rules.penalty + (undercut / (1.0 - p_win) if p_win < 1.0 else 0.0)
        return CallOdds(p_win, gain, (1.0 - p_win) * rules.penalty + undercut, fail_points)

    def _should_declare(self, dists: dict[int, list[float]], scores: Sequence[int], last_turn: bool = False) -> bool:
        total = arena_bot.total(self.hand)
        odds = self._call_odds(dists, total)
        if last_turn:
            # Waiting no longer lowers our hand: the round ends at the cap and we score our total anyway.
            return odds.fail_cost < total
        fail_rate = (self.calls_failed + PRIOR_FAILS) / (self.calls_seen + PRIOR_CALLS)
        required = CALL_CONFIDENCE_CAREFUL + (CALL_CONFIDENCE - CALL_CONFIDENCE_CAREFUL) * min(
            1.0, fail_rate / RECKLESS_FAIL_RATE
        )
        if scores[self.seat] + odds.fail_points > self.ruleset.threshold:
            required = max(required, CALL_CONFIDENCE_AT_RISK)  # a failure would end our match
        # Points handed to the opponents help us against each of them, so count them per opponent.
        value = odds.gain / max(1, len(dists)) - odds.fail_cost
        if value < CALL_MARGIN:
            return False
        return odds.p_win >= required or (odds.p_win >= CALL_MIN_CONFIDENCE and value >= CALL_SURE)


if __name__ == "__main__":
    arena_bot.run(PlannerBot())
