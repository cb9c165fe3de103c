"""Tournament schedules: which bots meet, in which seats, on which deal seed.

A schedule is a pure function of (number of bots, seats per match, repeats, seed): the same inputs give the same
matches in the same order, whatever runs them. Both designs below give every bot the same number of matches and the
same number of times in each seat: a group of bots plays one match per seat rotation. With duplicate deals (the
default) the rotations share one deal seed, so every bot gets each seat's cards, and (deal version 2, see
arena/game/engine.py) mostly each seat's deck draws, once; docs/RATINGS.md measures how much luck that cancels. With
independent deals every match has its own seed and each group's rotations start from a random seat order, so the
value of duplicate deals can be measured rather than assumed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

MAX_COMBINATIONS = 2000
"""Above this many combinations a full round-robin is too long; the balanced random design is used instead."""

Design = Literal["round-robin", "balanced-random"]
Deals = Literal["duplicate", "independent"]
DEALS: tuple[Deals, ...] = ("duplicate", "independent")


@dataclass(frozen=True)
class ScheduledMatch:
    """One match: ``bots[seat]`` indexes the tournament's bot list."""

    index: int
    """Position in schedule order; ratings are applied in this order, never in the order matches finish."""
    group: int
    """The group of bots (and, with duplicate deals, the deal) it belongs to: its matches are rotations of one
    another, and the unit that confidence intervals resample (arena/stats/confidence.py)."""
    rotation: int
    seed: int
    bots: tuple[int, ...]


def deal_seeds(seed: int) -> random.Random:
    """The stream of deal seeds of a schedule with this seed; every schedule (tournament, A/B test) draws its deals
    from it in order."""
    return random.Random(f"{seed}/deals")


def rotations(group: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The group's seatings, one per seat rotation: each of its bots sits in each seat once."""
    return [group[rotation:] + group[:rotation] for rotation in range(len(group))]


def design_for(bots: int, players: int) -> Design:
    return "round-robin" if math.comb(bots, players) <= MAX_COMBINATIONS else "balanced-random"


def make_schedule(bots: int, players: int, repeats: int, seed: int, deals: Deals = "duplicate"
                  ) -> list[ScheduledMatch]:
    """Every match of a tournament, in schedule order.

    Round-robin: every combination of ``players`` bots, ``repeats`` deal seeds each, one match per seat rotation.
    Balanced random (fields where the combinations exceed :data:`MAX_COMBINATIONS`): ``repeats`` rounds; each round
    shuffles the field (seeded) and takes the ``bots`` cyclic windows of ``players`` consecutive bots as groups, so
    each bot is in exactly ``players`` groups per round at each window position once; with all rotations played,
    every bot plays ``players**2`` matches per round, ``players`` in each seat.

    ``deals="independent"``: the same groups, but every match gets its own deal seed and each group's rotations
    start from a seeded random order of its bots (still one match per seat rotation, so seats stay balanced).
    """
    if not 2 <= players <= min(8, bots):
        raise ValueError(f"players: expected 2 to {min(8, bots)} seats for {bots} bots, got {players}")
    if repeats < 1:
        raise ValueError(f"repeats: expected at least 1, got {repeats}")
    if deals not in DEALS:
        raise ValueError(f"deals: expected one of {', '.join(DEALS)}, got {deals!r}")
    seeds = deal_seeds(seed)
    groups: list[tuple[int, ...]] = []
    if design_for(bots, players) == "round-robin":
        for combo in combinations(range(bots), players):
            groups.extend([combo] * repeats)
    else:
        shuffler = random.Random(f"{seed}/groups")
        for _ in range(repeats):
            order = list(range(bots))
            shuffler.shuffle(order)
            groups.extend(tuple(order[(start + i) % bots] for i in range(players)) for start in range(bots))
    seats_order = random.Random(f"{seed}/seats")
    schedule: list[ScheduledMatch] = []
    for group_index, group in enumerate(groups):
        deal = seeds.getrandbits(63)
        if deals == "independent":
            group = tuple(seats_order.sample(group, len(group)))
        for rotation, seats in enumerate(rotations(group)):
            if deals == "independent" and rotation:
                deal = seeds.getrandbits(63)
            schedule.append(ScheduledMatch(len(schedule), group_index, rotation, deal, seats))
    return schedule
