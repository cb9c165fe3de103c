"""``arena test NEW BASE``: is NEW better than BASE? A paired, sequential test that stops itself.

Two pairings, both on duplicate deals (every match of a deal has the deal's seed), each deal giving one paired
difference, BASE's mean place minus NEW's, from which the luck of the cards has largely cancelled:

- ``table`` (the default): NEW and BASE sit at the same table, with K - 2 opponents, in every seat rotation of both
  orders (NEW before BASE and BASE before NEW); heads-up (K = 2, no opponents) is this with the deal played from
  both seats, as chess testers play game pairs. The difference comes from the same matches, so everything but the
  two bots is shared. bench/abtest.py measures it needing about a third of the matches of an unpaired test.
- ``field``: NEW and BASE each play every seat rotation of the deal against the same K - 1 opponents, NEW's match
  and BASE's match of a rotation having the same seed and seats; they never meet. It answers "better against
  these opponents", but the two matches drift apart as soon as a random choice differs, and bench/abtest.py
  measures it saving 0-20% against an unpaired test.

The differences go, in schedule order, to the exact GSPRT of arena/stats/sprt.py, which stops at "better" or "not
better"; or the test stops at ``max_matches``, undecided. A difference at the table counts NEW's gain and BASE's
loss, head to head, so it is about twice a difference against the field for the same two bots (bench/sprt.py
measures the ratio on its pools): the default margin per pairing, :data:`DEFAULT_MARGINS`, makes the two pairings
look for the same gain in strength.

It is stored like any tournament (bots NEW, BASE, then the opponents; one group per deal), under a name made from
the bots and a hash of everything that decides the results, so running the same command again resumes it, and
``arena standings``/``matches``/``show`` and the site show it. The verdict is decided on whole deals in schedule
order; once it is reached the deals after it are dropped from the store (matches that finished early in parallel
included), so what is stored, and the verdict, are the same whatever the number of workers, and a resumed test
stops where an uninterrupted one would. It is a policy of the run loop (arena/run/loop.py), which holds the test
by a lease and resumes it after a stop.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

from arena.bots.manifest import BotSpec
from arena.run import loop
from arena.run.config import TournamentConfig
from arena.run.jobs import JobResult, MatchJob, in_chains
from arena.run.loop import FinalRatings
from arena.run.plan import (
    Plan,
    TournamentError,
    build_cache_for,
    identity_hash,
    load_entrants,
    pending_jobs,
    prepare,
    refuse_reuse_on_a_cluster,
    settings_of,
    unique_names,
)
from arena.run.players import player_for
from arena.schedule import ScheduledMatch, deal_seed, rotations
from arena.stats.sprt import MARGIN, Running, Settings, Status, paired_difference
from arena.stats.standings import seat_results
from arena.store import Store

NEW, BASE = 0, 1
"""Slots of NEW and BASE in the tournament's bot list; the opponents follow."""
DEFAULT_MAX_MATCHES = 3000
Pairing = Literal["table", "field"]
PAIRINGS: tuple[Pairing, ...] = ("table", "field")
DEFAULT_MARGINS: dict[Pairing, float] = {"table": 2 * MARGIN, "field": MARGIN}
"""The gain worth detecting, in places per match of each pairing's own difference: 0.1 of a place against the field
is 0.2 head to head at the table."""


@dataclass(frozen=True)
class ABTest:
    """A test to run: ``config.bots`` is (NEW, BASE, *opponents); its ``name`` is generated (:func:`make_test`)."""

    config: TournamentConfig
    settings: Settings
    max_matches: int
    pairing: Pairing = "table"

    @property
    def opponents(self) -> int:
        return len(self.config.bots) - 2

    @property
    def matches_per_deal(self) -> int:
        """Every rotation of both orders at the table (heads-up: the two orders are the two rotations), or every
        rotation for each of NEW and BASE against the field."""
        return 2 if self.config.players == 2 and self.pairing == "table" else 2 * self.config.players

    @property
    def places_per_side(self) -> int:
        """How many places NEW (and BASE) get in one deal: one per match at the table, half the matches else."""
        return self.matches_per_deal if self.pairing == "table" else self.config.players

    @property
    def deals(self) -> int:
        return self.max_matches // self.matches_per_deal

    @property
    def bound(self) -> int:
        """The largest difference a deal can give: K - 1 places at K seats."""
        return self.config.players - 1

    def identity(self) -> dict[str, Any]:
        return self.config.identity() | {"test": {
            "alpha": self.settings.alpha, "beta": self.settings.beta, "margin": self.settings.margin,
            "statistic": "gsprt", "max_matches": self.max_matches, "pairing": self.pairing}}


def make_test(new: Path, base: Path, opponents: tuple[Path, ...], players: int | None, settings: Settings,
              max_matches: int, seed: int, name: str | None = None, pairing: Pairing = "table",
              **config: Any) -> ABTest:
    """Validate the test's shape and name it; ``config`` holds further :class:`TournamentConfig` fields (rules,
    limits, sandbox, workers). Raises :class:`TournamentError` naming the option at fault."""
    bots = tuple(path.resolve() for path in (new, base, *opponents))
    if len(set(bots)) != len(bots):
        raise TournamentError("NEW, BASE and --opponents: a bot directory is named twice; they must differ")
    if pairing not in PAIRINGS:
        raise TournamentError(f"--pairing: expected one of {', '.join(PAIRINGS)}, got {pairing!r}")
    # at the table NEW and BASE take two seats, against the field one
    taken = 2 if pairing == "table" else 1
    if players is None:
        players = max(2, min(8, len(opponents) + taken))
    if players - taken > len(opponents):
        raise TournamentError(f"--players: {players} seats with --pairing {pairing} need {players - taken} "
                              f"--opponents, got {len(opponents)}")
    if opponents and players == taken:
        raise TournamentError(f"--opponents: a heads-up table has no seat for them; pass --players "
                              f"{min(8, len(opponents) + taken)} or --pairing field")
    per_deal = 2 if players == 2 and pairing == "table" else 2 * players
    if max_matches < per_deal:
        raise TournamentError(f"--max-matches: expected at least {per_deal} (one deal), got {max_matches}")
    if settings.margin >= players - 1:
        raise TournamentError(f"--margin: expected fewer places than a deal's largest difference, {players - 1} at "
                              f"{players} seats, got {settings.margin}")
    test = ABTest(TournamentConfig(name="-", bots=bots, players=players, seed=seed, **config), settings,
                  max_matches, pairing)
    if name is None:
        slug = "-".join(re.sub(r"[^a-z0-9_-]+", "-", path.name.lower()).strip("-_")[:10] for path in bots[:2])
        name = f"test-{slug}-{identity_hash(test.identity())[:8]}"
    return dataclasses.replace(test, config=dataclasses.replace(test.config, name=name))


def schedule(test: ABTest) -> list[ScheduledMatch]:
    """Every match the test may play, deal by deal: group = deal, all on the deal's seed. At the table: the
    rotations of (NEW, BASE, opponents...), then (for 3 seats or more) those of (BASE, NEW, opponents...). Against
    the field: rotation by rotation, NEW's match then BASE's in the same seats."""
    players = test.config.players
    table = test.pairing == "table"
    fields = list(combinations(range(2, 2 + test.opponents), players - (2 if table else 1)))
    matches: list[ScheduledMatch] = []
    for deal in range(test.deals):
        seed = deal_seed(test.config.seed if test.config.seed is not None else "", "deal", deal)
        others = fields[deal % len(fields)]  # every set of opponents in turn
        groups = ([(NEW, BASE, *others)] + ([(BASE, NEW, *others)] if players > 2 else []) if table
                  else [(NEW, *others), (BASE, *others)])
        # rotation by rotation, each group's seating of it in turn
        seatings = [seats for rotated in zip(*map(rotations, groups)) for seats in rotated]
        for rotation, seats in enumerate(seatings):
            matches.append(ScheduledMatch(len(matches), deal, rotation, seed, seats))
    return matches


def load_test_bots(test: ABTest, build_cache: Path | None = None) -> tuple[BotSpec, ...]:
    """The bots, NEW and BASE told apart by ``@new`` and ``@base`` when they carry the same name (two versions of
    one bot, the usual case)."""
    bots = load_entrants(test.config.bots, build_cache)
    if bots[NEW].name == bots[BASE].name:
        bots[NEW] = dataclasses.replace(bots[NEW], name=f"{bots[NEW].name}@new")
        bots[BASE] = dataclasses.replace(bots[BASE], name=f"{bots[BASE].name}@base")
    return unique_names(bots, "--opponents")


class Tally:
    """The places of NEW and BASE per deal, as results arrive in any order; the test runs over the whole deals
    in schedule order only, so its course does not depend on the order of arrival."""

    def __init__(self, test: ABTest) -> None:
        self.test = test
        self.per_side = test.places_per_side
        self.places: dict[int, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        self.running = Running(test.settings, test.bound)
        self.status = self.running.status()

    def add(self, deal: int, slot: int, place: int) -> Status | None:
        """Record a place of NEW or BASE; the test's status if it moved (a verdict stops it moving)."""
        if slot not in (NEW, BASE):
            return None
        self.places[deal][slot].append(place)
        moved = False
        while self.running.verdict == "undecided" and self.complete(self.running.n):
            new, base = self.places[self.running.n]
            self.running.add(paired_difference(new, base))
            moved = True
        if moved:  # the estimate once per arrival, however many deals it completed
            self.status = self.running.status()
        return self.status if moved else None

    def complete(self, deal: int) -> bool:
        new, base = self.places.get(deal, ((), ()))
        return len(new) == len(base) == self.per_side

    @property
    def deals(self) -> int:
        return self.running.n


@dataclass(frozen=True)
class TestReport:
    tid: int
    name: str
    bots: tuple[str, ...]
    status: Status
    matches: int
    """Matches behind the status (whole deals)."""
    played: int
    failed: int
    interrupted: bool
    seconds: float


class SprtPolicy:
    """The A/B test's policy: every pending deal in one batch, each result fed to the :class:`Tally`; the verdict
    stops the batch, and the deals after it are dropped."""

    def __init__(self, test: ABTest, on_status: Callable[[Status, int], None] | None = None) -> None:
        self.test = test
        self.name = test.config.name
        self.ratings = FinalRatings(test.config.rating)
        self.on_status = on_status
        self.tally = Tally(test)
        self._slots: dict[int, tuple[int, ...]] = {}
        self._groups: dict[int, int] = {}

    def plan(self, store: Store, fresh: bool) -> Plan:
        """Create the test in the store, or check the stored one is the same one, as a tournament's is."""
        bots = load_test_bots(self.test, build_cache_for(store))
        planned = prepare(store, self.name, self.test.identity(), bots, schedule(self.test), fresh, kind="test",
                          source="--name")
        self._slots = {match.index: match.bots for match in planned.schedule}
        self._groups = {match.index: match.group for match in planned.schedule}
        bot_slot = {row["id"]: row["slot"] for row in store.bots(planned.tid)}
        for result in seat_results(store, planned.tid):
            self.tally.add(result.group, bot_slot[result.bot], result.place)
        return planned

    def batches(self, plan: Plan, store: Store) -> Generator[Sequence[MatchJob], None, None]:
        if self.tally.status.verdict == "undecided":
            todo = pending_jobs(plan, settings_of(self.test.config))
            reuse = self.test.config.reuse
            # With reuse, chains of the whole schedule (arena/run/lanes.py), as a tournament's: the verdict is taken
            # on whole deals in schedule order, and a deal's results depend only on its chains' earlier deals, so
            # the deals before the verdict are the same whatever the workers; a chain's deals after it are dropped.
            yield todo if reuse is None else in_chains(todo, plan.schedule, reuse)

    def add(self, job: MatchJob, result: JobResult) -> bool:
        if result.result is None:
            return False
        moved = None
        for slot, seat in zip(self._slots[job.index], result.result.players):
            moved = self.tally.add(self._groups[job.index], slot, seat.place) or moved
        if moved is not None and self.on_status is not None:
            self.on_status(moved, self.matches)
        return self.tally.status.verdict != "undecided"

    def dropped(self, plan: Plan) -> Sequence[int]:
        if self.tally.status.verdict == "undecided":
            return ()
        return [match.index for match in plan.schedule if match.index >= self.matches]

    @property
    def matches(self) -> int:
        """Matches behind the status (whole deals, in schedule order)."""
        return self.tally.deals * self.test.matches_per_deal


def run_test(test: ABTest, store: Store, fresh: bool = False, workers: int | None = None,
             on_status: Callable[[Status, int], None] | None = None, cluster: str | None = None,
             stop: threading.Event | None = None) -> TestReport:
    """Play deals until the verdict (or the cap), store them, drop what was played past the verdict, rate.

    ``on_status(status, matches)`` is called whenever another whole deal is in. As every run of the loop
    (arena/run/loop.py), the test is held by a lease, and ``KeyboardInterrupt`` or SIGTERM stops the workers and
    returns a report with ``interrupted=True``; the same call again resumes. ``cluster`` plays it on a Dask cluster.
    """
    refuse_reuse_on_a_cluster(test.config.reuse, cluster or test.config.cluster, "--reuse")
    policy = SprtPolicy(test, on_status)
    with closing(player_for(cluster or test.config.cluster, workers or test.config.workers)) as player:
        report = loop.run(store, policy, player, fresh, stop=stop)
    return TestReport(report.tid, report.name, tuple(row["name"] for row in store.bots(report.tid)),
                      policy.tally.status, policy.matches, report.played, report.failed, report.interrupted,
                      report.seconds)
