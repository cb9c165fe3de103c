"""Tournament schedules: which bots meet, in which seats, on which deal seed.

A schedule is a pure function of (number of bots, seats per match, repeats, secret): the same inputs give the same
matches in the same order, whatever runs them. Every deal seed is :func:`deal_seed`: an HMAC-SHA256 keyed by the
run's secret over the group's identity, so that nobody without the secret can tell one deal seed from another, nor
find a group's from its neighbours' (a bot that knew its deal's seed would know every hand: docs/SECURITY.md).

Both designs below give every bot the same number of matches and the same number of times in each seat: a group
of bots plays one match per seat rotation. With duplicate deals (the default) the rotations share one deal seed, so
every bot gets each seat's cards, and (deal version 2, see arena/game/engine.py) mostly each seat's deck draws,
once; docs/RATINGS.md measures how much luck that cancels. With independent deals every match has its own seed and
each group's rotations start from a random seat order, so the value of duplicate deals can be measured rather than
assumed.
"""

from __future__ import annotations

import hashlib
import hmac
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


Secret = int | str
"""A run's secret: a config's ``seed`` (an integer or a string), or one made by :func:`new_secret`. An integer and
its decimal string are the same secret."""

SEED_BITS = 63
"""A deal seed is a non-negative 63-bit integer (what the store and the event logs have always held)."""


def new_secret() -> str:
    """A secret for a run configured without a ``seed``: 256 bits from the operating system's CSPRNG."""
    import secrets  # here: only a run being created makes one

    return secrets.token_hex(32)


def deal_seed(secret: Secret, *identity: int | str) -> int:
    """The deal seed of the group (or match) named by ``identity`` in the run keyed by ``secret``: the first 63
    bits of HMAC-SHA256(secret, identity). Without the secret no output of any generator, nor any other group's
    seed, says anything about it; with it, it is the same whatever plays the schedule and in which order."""
    message = "/".join(str(part) for part in identity).encode()
    digest = hmac.new(str(secret).encode(), message, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)


def rotations(group: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The group's seatings, one per seat rotation: each of its bots sits in each seat once."""
    return [group[rotation:] + group[:rotation] for rotation in range(len(group))]


def design_for(bots: int, players: int) -> Design:
    return "round-robin" if math.comb(bots, players) <= MAX_COMBINATIONS else "balanced-random"


def make_schedule(bots: int, players: int, repeats: int, seed: Secret, deals: Deals = "duplicate"
                  ) -> list[ScheduledMatch]:
    """Every match of a tournament, in schedule order.

    Round-robin: every combination of ``players`` bots, ``repeats`` deal seeds each, one match per seat rotation.
    Balanced random (fields where the combinations exceed :data:`MAX_COMBINATIONS`): ``repeats`` rounds; each round
    shuffles the field (seeded) and takes the ``bots`` cyclic windows of ``players`` consecutive bots as groups, so
    each bot is in exactly ``players`` groups per round at each window position once; with all rotations played,
    every bot plays ``players**2`` matches per round, ``players`` in each seat.

    ``deals="independent"``: the same groups, but every match gets its own deal seed and each group's rotations
    start from a seeded random order of its bots (still one match per seat rotation, so seats stay balanced).

    ``seed`` is the run's secret: group ``g``'s deal is ``deal_seed(seed, "deal", g)`` (independent deals:
    ``deal_seed(seed, "deal", g, rotation)``); the shuffles of the field and of the seats come from their own
    :class:`random.Random`, seeded from the secret too, and never give a deal seed.
    """
    if not 2 <= players <= min(8, bots):
        raise ValueError(f"players: expected 2 to {min(8, bots)} seats for {bots} bots, got {players}")
    if repeats < 1:
        raise ValueError(f"repeats: expected at least 1, got {repeats}")
    if deals not in DEALS:
        raise ValueError(f"deals: expected one of {', '.join(DEALS)}, got {deals!r}")
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
        deal = deal_seed(seed, "deal", group_index)
        if deals == "independent":
            group = tuple(seats_order.sample(group, len(group)))
        for rotation, seats in enumerate(rotations(group)):
            if deals == "independent":
                deal = deal_seed(seed, "deal", group_index, rotation)
            schedule.append(ScheduledMatch(len(schedule), group_index, rotation, deal, seats))
    return schedule
