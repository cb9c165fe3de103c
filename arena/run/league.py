"""The continuous league: a policy of the run loop (arena/run/loop.py) whose batches never end.

A league is a run in the store like any other (named by its config, arena/run/config.py's :class:`LeagueConfig`), so
``arena standings``, ``matches`` and ``show`` work on it, and it is held by the loop's lease while it plays; what
differs is that its bots and matches are not fixed up front. Each batch:

1. **entrants**: the config's entries are resolved again (``registry:*`` finds the versions accepted since the last
   batch); a new version gets a new bot row, named ``NAME@VERSION``; with ``versions: latest`` (the default) an
   author's older versions stop being scheduled (they keep their rows and results);
2. **schedule**: ``groups_per_batch`` duplicate-deal groups are appended (one deal seed, one match per seat
   rotation, exactly like a tournament's; group ``n``'s deal seed is arena/schedule.py's
   ``deal_seed(secret, "league", n)``, keyed by the league's secret: its configured ``seed``, or one made when the
   league was created and kept in the store). Who sits in a group is arena/run/matchmaking.py's rule: every active bot
   near its fair share of matches, every pair of active bots meeting within a bounded ratio of each other, the rest
   spent on the pairs whose order is uncertain (P(above) near 1/2 in the standings' confidence; a new version is
   uncertain against everyone), a bot whose matches take far longer than the median's scheduled for its share of
   worker time only, and the remaining choices drawn from a :class:`random.Random` seeded from the secret and the
   batch's first group number (never a deal seed): the schedule is a function of the store;
3. **play** the pending matches on the league's player (a local pool kept for the life of the league, or a Dask
   cluster), storing each as it finishes;
4. **rate** every finished match in schedule order (the same TrueSkill as a tournament, brought up to date after
   each batch: :class:`~arena.run.loop.RunningRatings`), clear the stderr of each bot version's seats but its
   latest ``keep_stderr`` matches (so the store's growth from stderr is bounded per version), and publish the site.

Everything the loop needs is in the store, so a restart (even after ``kill -9``) resumes: the pending matches of
the last batch are played first, then scheduling goes on where it stopped. A league that loses its Dask scheduler
connects again and plays on (arena/run/players.py's :class:`~arena.run.players.DaskCluster` does, with no limit on
how long it tries); the interrupted batch's matches not yet stored are played first. Any other error (a full disk
included) pauses the league, says why without the server's paths, and tries again after a delay that doubles up to
:data:`RETRY_S`' second value: a league never needs a restart to go on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.bots.manifest import BotSpec, ManifestError, load_bot
from arena.registry.versions import REGISTRY_PREFIX, Registry, RegistryError
from arena.run import loop
from arena.run.cluster import ClusterStats
from arena.run.config import LeagueConfig
from arena.run.jobs import JobResult, MatchJob, in_chains
from arena.run.loop import RunningRatings
from arena.run.matchmaking import Closeness, Tally, choose_groups, closeness_of, spread, throttle_weights
from arena.run.plan import JobSettings, Plan, TournamentError, jobs, prepare, refuse_reuse_on_a_cluster
from arena.run.players import DaskCluster, Player, player_for
from arena.schedule import ScheduledMatch, deal_seed, rotations
from arena.stats.confidence import confidence
from arena.stats.standings import seat_columns
from arena.store import Lease, LeaseHeldError, Store, StoreError, disk_full, entered_group, is_active

log = logging.getLogger("arena.league")

IDLE_POLL_S = 1.0
"""How often an idle league (fewer active bots than seats) looks for new versions."""
RETRY_S = (1.0, 60.0)
"""A league stopped by an error (a full disk, a store it cannot use, too many open files) tries again after the
first delay, doubling up to the second; a full disk is looked at again at least every :data:`DISK_POLL_S`."""
DISK_POLL_S = 10.0
CLOSENESS_EVERY = 10
"""The confidence the matchmaker reads is that of the groups before the last multiple of this many groups (of a
larger power of ten once the league is past a thousand groups: :func:`closeness_checkpoint`): recomputed once in
so many groups, and the same after a restart."""
SPREAD_EVERY_S = 5.0
"""How often the pair-meeting spread shown by ``/api/league`` is recomputed (its cost grows with the pairs that have
met, about 0.1 s at 1,000 bots: bench/scale.py)."""
PUBLISH_EVERY_S = 5.0
"""The public site lags the store by at most this (or four times a publish's own cost, if that is more)."""


def closeness_checkpoint(first: int) -> int:
    """The group before which the matchmaker's confidence is taken, for a batch from group ``first``: the last
    multiple of :data:`CLOSENESS_EVERY`, or past a thousand groups of the power of ten a hundredth or less of
    ``first``. A recomputation costs about linearly in the matches (2 s at 100,000 of 1,000 bots: bench/scale.py),
    so it comes once in a growth of the data by 1-10%, not once in every few batches."""
    step = CLOSENESS_EVERY
    while step * 100 <= first:
        step *= 10
    return first // step * step


class LeagueError(ValueError):
    """A league that cannot run as configured; the message names the file or the store and the reason."""


@dataclass(frozen=True)
class BatchReport:
    """What one turn of the loop did."""

    entrants: int
    scheduled: int
    played: int
    failed: int
    seconds: float
    rate_seconds: float
    publish_seconds: float


@dataclass
class LeagueState:
    """What ``GET /api/league`` shows of the running loop (read by the web threads, written by the loop)."""

    state: str = "starting"
    batches: int = 0
    matches_played: int = 0
    active: tuple[str, ...] = ()
    last_batch: BatchReport | None = None
    error: str | None = None
    """Why the loop stopped, once it has."""
    """The last error that paused the league (without the server's paths), until a batch plays again."""
    errors: int = 0
    """How many times an error paused the league (it tried again each time)."""
    cluster: ClusterStats | None = None
    spread: dict[str, Any] | None = None
    """How evenly the active bots meet (arena/run/matchmaking.py's :class:`~arena.run.matchmaking.Spread`)."""
    throttled: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    """Bots scheduled for less than their share because their matches take far longer than the median's."""

    def to_dict(self) -> dict[str, Any]:
        cluster = self.cluster
        return {"state": self.state, "batches": self.batches, "matches_played": self.matches_played,
                "active": list(self.active),
                "last_batch": None if self.last_batch is None else dataclasses.asdict(self.last_batch),
                "error": self.error, "errors": self.errors, "spread": self.spread, "throttled": self.throttled,
                "cluster": None if cluster is None else cluster.to_dict()}


_PATH = re.compile(r"(?<![\w.~])/[^\s'\":,;()\[\]]*")
"""An absolute path in a message: from a slash that does not follow a word, up to a space, quote or punctuation."""


def public_error(error: BaseException) -> str:
    """An error as the public may see it: its kind and message, each absolute path cut to its last part."""
    return f"{type(error).__name__}: {_PATH.sub(lambda found: found[0].rstrip('/').rsplit('/', 1)[-1] or '/', str(error))}"


def tally_from_store(store: Store, tid: int, players: int) -> Tally:
    """The matchmaker's tally of a league as its store has it: every scheduled group, and each bot's fair share from
    when it entered and left the field (one pass over the groups)."""
    tally = Tally(players)
    rows = store.bots(tid)
    entries = sorted((entered_group(row), int(row["id"])) for row in rows)
    leaving = sorted(row["left_group"] for row in rows if not is_active(row))
    entered = left = 0
    members: list[int] = []
    group = -1

    def close(group: int) -> None:
        nonlocal entered, left
        while entered < len(entries) and entries[entered][0] <= group:
            tally.enter(entries[entered][1])
            entered += 1
        while left < len(leaving) and leaving[left] <= group:
            left += 1
        tally.add_group(members, entered - left)

    for grp, bot in store.group_members(tid):
        if grp != group and members:
            close(group)
            members = []
        group = grp
        members.append(bot)
    if members:
        close(group)
    for _, bot in entries[entered:]:
        tally.enter(bot)
    return tally


class League:
    """One league in one store: a policy of the run loop. :meth:`run` plays it in one thread, which owns its own
    store connection, until a stop event is set."""

    def __init__(self, config: LeagueConfig, db: Path,
                 publish: Callable[[Store, tuple[int, ...] | None], object] | None = None) -> None:
        self.config = config
        self.name = config.name
        self.db = db
        self.publish = publish
        self.state = LeagueState()
        self.ratings = RunningRatings(config.rating)
        # Watched: spectators follow a league while it plays (the server's /api/live follows each match move by move).
        self.settings = JobSettings(config.rules, config.limits, config.sandbox_limits, config.sandbox,
                                    config.retries, watched=True)
        self._stop = threading.Event()
        self._player: Player | None = None
        self._specs: dict[str, BotSpec] = {}
        self._published_once = False
        self._unpublished: list[int] = []
        self._published_at = 0.0
        self._publish_cost = 0.0
        self._played = self._failed = 0
        self._tally: Tally | None = None
        self._closeness: tuple[int, Closeness] = (-1, closeness_of({}, ()))
        self._weights: dict[int, float] = {}
        self._timing: dict[int, tuple[int, float]] = {}
        """Per bot id, its finished matches and its own think time in them (read once, then added to as they
        finish)."""
        self._ids: dict[str, int] = {}
        self._spread_at = 0.0
        self._lease: Lease | None = None
        self._secret = ""
        """What the deals follow from (docs/SECURITY.md): read from the store by :meth:`plan`."""

    # -- the policy -----------------------------------------------------------------------------------------------

    def claim(self, store: Store) -> None:
        """Hold the league for this process for as long as it runs, and check its identity against the store: what
        a server does before it serves, so that a second server on the store (:class:`~arena.store.LeaseHeldError`)
        or a changed config (:class:`LeagueError`) is refused rather than retried forever."""
        lease = store.acquire(self.name, kind="league")
        try:
            self._prepare(store)
        except BaseException:
            loop.release(store, lease)
            raise
        self._lease = lease

    def _prepare(self, store: Store) -> Plan:
        try:
            refuse_reuse_on_a_cluster(self.config.reuse, self.config.cluster, f"{self.config.source}: league.reuse")
            return prepare(store, self.name, self.config.identity(), (), (), kind="league", source=self.config.source)
        except TournamentError as error:
            raise LeagueError(str(error)) from None

    def plan(self, store: Store, fresh: bool) -> Plan:
        """The league's run: created on first start with no bots and no matches, checked against the config on
        every other."""
        planned = self._prepare(store)
        if self.publish is not None and not self._published_once:
            self.publish(store, None)  # the whole site once: a restart may follow a crash mid-publish
            self._published_at = time.monotonic()
            self._published_once = True
        planned.log_dir.mkdir(parents=True, exist_ok=True)
        self._secret = planned.secret
        return planned

    def batches(self, plan: Plan, store: Store) -> Generator[Sequence[MatchJob], None, None]:
        """Batch after batch, forever: the pending matches (after a restart), else newly scheduled groups; an empty
        batch, after a pause, while fewer bots than seats are active."""
        while True:
            started = time.monotonic()
            active = self.entrants(store, plan.tid)
            todo = self.pending_jobs(store, plan)
            scheduled = 0
            if not todo:
                scheduled = self.schedule(store, plan.tid, active, self.config.groups_per_batch)
                todo = self.pending_jobs(store, plan)
            if not todo:
                self.state.state = "waiting for bots"
                self._stop.wait(IDLE_POLL_S)
                yield []
                continue
            if not self._connecting():
                self.state.state = "running"
            self._played = self._failed = 0
            yield todo  # resumed once every match is stored and the ratings are up to date
            store.clear_old_stderr(plan.tid, self.config.keep_stderr)  # the store's growth stays bounded
            publish_seconds = self.maybe_publish(store, store.match_ids(plan.tid, [job.index for job in todo]))
            report = BatchReport(len(active), scheduled, self._played, self._failed,
                                 round(time.monotonic() - started, 3), round(self.ratings.seconds, 3),
                                 round(publish_seconds, 3))
            self.state.batches += 1
            self.state.matches_played += report.played
            self.state.last_batch = report
            self.state.error = None  # it plays again

    def add(self, job: MatchJob, result: JobResult) -> bool:
        self.state.state = "running"
        self._played += 1
        self._failed += result.result is None
        if result.result is not None and self._tally is not None:
            for seat in result.result.players:  # each bot its own think time: never its table's
                if seat.name in self._ids:
                    count, seconds = self._timing.get(self._ids[seat.name], (0, 0.0))
                    self._timing[self._ids[seat.name]] = (count + 1, seconds + seat.think_ms / 1000)
        return False

    def dropped(self, plan: Plan) -> Sequence[int]:
        return ()

    def _connecting(self) -> bool:
        """Whether the next batch must connect to the cluster first (the state then says so until it plays)."""
        return isinstance(self._player, DaskCluster) and not self._player.connected

    # -- entrants and schedule ------------------------------------------------------------------------------------

    def resolve(self) -> list[tuple[str | None, Path]]:
        """The active entrants now: (league name or None for a house bot's own name, directory)."""
        registry = Registry(self.config.registry)
        found: list[tuple[str | None, Path]] = []
        for entry in self.config.entries:
            if not entry.startswith(REGISTRY_PREFIX):
                found.append((None, Path(entry)))
                continue
            try:
                versions = registry.resolve(entry[len(REGISTRY_PREFIX):], self.config.versions)
            except RegistryError:
                continue  # nothing submitted under that entry yet: a league may start empty
            found.extend((f"{v.name}@{v.version}", v.directory) for v in versions if v.fit)
        unique: dict[Path, str | None] = {}
        for name, directory in found:
            unique.setdefault(directory, name)
        return [(name, directory) for directory, name in unique.items()]

    def entrants(self, store: Store, tid: int) -> list[int]:
        """Bot ids of the active entrants, adding a bot row for each new one."""
        rows = {row["directory"]: (int(row["id"]), row["name"], row["files_hash"]) for row in store.bots(tid)}
        names = {name for _, name, _ in rows.values()}
        active: list[tuple[int, str]] = []
        for name, directory in self.resolve():
            spec = self._spec(directory, name)
            if spec is None:
                continue
            known = rows.get(str(directory))
            if known is None:
                if spec.name in names:
                    raise LeagueError(f"{directory}: a second bot named {spec.name!r} in league {self.config.name!r}")
                known = (store.add_bot(tid, spec.to_dict()), spec.name, spec.files_hash)
                rows[str(directory)] = known
                names.add(spec.name)
                log.info("%s: %s enters the league", self.config.name, spec.name)
            elif known[2] != spec.files_hash:  # only a house bot can change: registry versions are read-only
                raise LeagueError(f"{directory}: the files of {spec.name!r} changed since it entered league "
                                  f"{self.config.name!r}; its results would mix two bots: use a new league name")
            active.append((known[0], spec.name))
        self.state.active = tuple(sorted(name for _, name in active))
        ids = [bot_id for bot_id, _ in active]
        store.set_active(tid, ids)
        return ids

    def _spec(self, directory: Path, name: str | None) -> BotSpec | None:
        key = str(directory)
        if key not in self._specs:
            try:
                spec = load_bot(directory)
            except ManifestError as error:
                log.warning("%s: left out: %s", self.config.name, error)
                return None
            self._specs[key] = dataclasses.replace(spec, name=name or spec.name)
        return self._specs[key]

    def schedule(self, store: Store, tid: int, active: list[int], groups: int) -> int:
        """Append ``groups`` duplicate-deal groups chosen by arena/run/matchmaking.py; returns matches added."""
        players = self.config.players
        if len(active) < players:
            return 0
        if self._tally is None:  # once a process: then kept up to date as it schedules and plays
            self._tally = tally_from_store(store, tid, players)
            self._timing = store.think_seconds(tid)
        index, first = store.schedule_end(tid)
        rows = store.bots(tid)
        slot_of = {int(row["id"]): int(row["slot"]) for row in rows}
        names = {int(row["id"]): str(row["name"]) for row in rows}
        self._ids = {name: bot for bot, name in names.items()}
        in_field = set(active)
        timing = {bot: seconds for bot, seconds in self._timing.items() if bot in in_field}
        self._weights = throttle_weights(timing) if self.config.throttle else {}
        self.state.throttled = {names[bot]: {"weight": round(weight, 4),
                                             "seconds_per_match": round(timing[bot][1] / timing[bot][0], 3)}
                                for bot, weight in sorted(self._weights.items())}
        if not self._secret:
            raise LeagueError(f"{self.db}: league {self.name!r} has no secret in the store to deal from")
        # Tie-breaks only: no deal seed is drawn from this generator (its seed is secret all the same).
        rng = random.Random(f"{self._secret}/league/{first}")
        chosen = choose_groups(self._tally, active, groups, rng, self.closeness(store, tid, active, first),
                               self._weights)
        matches: list[ScheduledMatch] = []
        for number, group in enumerate(chosen, first):
            seed = deal_seed(self._secret, "league", number)
            for rotation, seats in enumerate(rotations(group)):
                matches.append(ScheduledMatch(index, number, rotation, seed, tuple(slot_of[bot] for bot in seats)))
                index += 1
        store.append_matches(tid, matches)
        if time.monotonic() - self._spread_at >= SPREAD_EVERY_S or not self.state.spread:
            self.state.spread = spread(self._tally, active, self._weights).to_dict(names)
            self._spread_at = time.monotonic()
        return len(matches)

    def closeness(self, store: Store, tid: int, active: list[int], first: int) -> Closeness:
        """How uncertain each pair's order is (arena/run/matchmaking.py's ``closeness``), from the standings'
        confidence over the groups before :func:`closeness_checkpoint`; each pair's worked out when looked up."""
        upto = closeness_checkpoint(first)
        if self._closeness[0] != upto or not set(active) <= self._closeness[1].bots:
            seats = seat_columns(store, tid, before_group=upto)
            sure = confidence(seats, sorted(active), resamples=100, seed=upto)
            self._closeness = (upto, closeness_of(sure.p_above, active))
        return self._closeness[1]

    def pending_jobs(self, store: Store, plan: Plan) -> list[MatchJob]:
        """The league's pending matches as jobs for :func:`~arena.run.jobs.run_job`; with reuse, in the chains
        that the pending matches make (arena/run/lanes.py). Those are the chains the batch had when it was
        scheduled, after a restart too: a chain is stored whole or not at all, so the pending matches are whole
        blocks of the batch's groups, which cut into the same blocks again."""
        bots: dict[int, BotSpec] = {}
        for row in store.bots(plan.tid):
            spec = self._spec(Path(row["directory"]), row["name"])
            if spec is None:
                raise LeagueError(f"{row['directory']}: a bot of league {self.config.name!r} is no longer loadable")
            bots[row["slot"]] = spec
        pending = store.scheduled(plan.tid, "pending")
        todo = jobs(pending, bots, self.settings, plan.log_dir)
        return todo if self.config.reuse is None else in_chains(todo, pending, self.config.reuse)

    def maybe_publish(self, store: Store, new: tuple[int, ...], force: bool = False) -> float:
        """Publish the site if it is due; returns the seconds spent. Publishing re-renders the league's standings,
        bot and list pages, which grow with the league, so it runs at most once every :data:`PUBLISH_EVERY_S`
        and never takes more than a fifth of the loop's time (the live standings at ``/`` are always current)."""
        if self.publish is None:
            return 0.0  # nothing to publish to: keeping the ids would grow the list by one a match
        self._unpublished.extend(new)
        now = time.monotonic()
        if not force and now - self._published_at < max(PUBLISH_EVERY_S,
                                                                                  4 * self._publish_cost):
            return 0.0
        self.publish(store, tuple(self._unpublished))
        self._unpublished.clear()
        self._published_at = time.monotonic()
        self._publish_cost = self._published_at - now
        return self._publish_cost

    # -- running it -----------------------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Schedule, play, rate and publish until ``stop`` is set; the matches in flight are then killed. An error
        pauses the league, not the web server: the state says why, and it tries again (see the module docstring)."""
        self._stop = stop
        player = self._player = player_for(self.config.cluster, self.config.workers, notify=self._cluster_says,
                                           patience=None)
        self.state.cluster = player.stats
        retry = RETRY_S[0]
        store: Store | None = None
        try:
            with closing(player):
                while not stop.is_set():
                    self.state.state = f"connecting to {self.config.cluster}" if self._connecting() else "running"
                    batches = self.state.batches
                    try:
                        if store is None:
                            store = Store(self.db)
                        if self._lease is None:  # not claimed (a league run without a server), or lost
                            self._lease = store.acquire(self.name, kind="league")
                        loop.run(store, self, player, stop=stop, lease=self._lease)
                        return
                    except Exception as error:  # noqa: BLE001 - any error pauses the league; the loop goes on
                        if self.state.batches > batches:
                            retry = RETRY_S[0]  # it had played again since the last error
                        if isinstance(error, LeaseHeldError):
                            self._lease = None  # lost (it expired and another took it): the next try asks anew
                        wait = self._paused(error, retry)
                        if store is not None:
                            store.close()  # a fresh connection next time: this one may be mid-transaction
                            store = None
                        stop.wait(wait)
                        retry = min(2 * retry, RETRY_S[1])
        finally:
            self.state.state = "stopped"
            self._let_go(store)

    def release(self) -> None:
        """Let go of what :meth:`claim` took, the league not having run (its server could not start)."""
        self._let_go(None)

    def _let_go(self, store: Store | None) -> None:
        """Release the lease :meth:`claim` took (on a connection of this thread) and close the store."""
        if self._lease is not None:
            with contextlib.suppress(StoreError):
                store = store or Store(self.db)
            if store is not None:
                loop.release(store, self._lease)
            self._lease = None
        if store is not None:
            store.close()

    def _cluster_says(self, message: str) -> None:
        """What the cluster player reports (a refused worker, a lost scheduler, when it tries next) is the state
        until the next match is played (the batch's matches not yet stored stay pending meanwhile)."""
        log.warning("league %s: %s", self.config.name, message)
        self.state.state = message

    def _paused(self, error: Exception, retry: float) -> float:
        """Say why the league pauses; how long to wait before trying again."""
        self.state.errors += 1
        self._tally = None  # the error may have come between a schedule and its commit: read it again
        full = disk_full(error, self.db)
        if full is not None:
            wait = min(retry, DISK_POLL_S)
            log.warning("league %s paused: %s", self.config.name, full)
            self.state.error = public_error(full)
            self.state.state = (f"paused: the disk is full (no space left for the league's results or logs); it "
                                f"goes on by itself when space returns (next look in {wait:.0f} s)")
            return wait
        log.exception("league %s stopped by an error; trying again in %.0f s", self.config.name, retry)
        self.state.error = public_error(error)
        self.state.state = f"paused by an error: trying again in {retry:.0f} s"
        return retry
