"""The one run loop: play what a policy asks for, on a player, store each result, rate in schedule order.

Every way of playing many matches (a tournament, a stop rule, an A/B test, the league) is a :class:`Policy` over
:func:`run`, as cutechess's tournament takes ``nextPair()``: the policy plans the run in the store, says what to
play next (all pending; round by round; endless), takes each result as it is stored, and says when it is done. The
loop owns what every runner must get right once:

- **the lease**: the run is held in the store for this process (a second runner gets
  :class:`~arena.store.LeaseHeldError`), renewed while matches play, released at the end;
- **stopping**: Ctrl-C, SIGTERM (taken as Ctrl-C: a resumable stop) or a ``stop`` event end the run with
  ``interrupted=True``; the matches in flight are discarded (their bots killed), what is stored counts, and running
  again resumes. A second signal waits for the first stop to be carried out;
- **a full disk**: one :class:`~arena.store.DiskFullError` naming where, what is stored kept;
- **recording** each result as it arrives, in any order, and the progress shown;
- **verdicts**: a policy that has its answer stops the batch; the matches it drops (those after the verdict in
  schedule order, played in parallel or not) are deleted with their logs, so what is stored is the same whatever
  the number of workers;
- **rating** from the store in schedule order (:class:`FinalRatings` at the end, or :class:`RunningRatings` after
  every batch for a run that never ends), so a resumed run ends exactly where an uninterrupted one would.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from arena.match.livefeed import Sweeper
from arena.match.matchlog import log_path_for
from arena.match.matchview import view_path
from arena.run.cluster import ClusterStats
from arena.run.jobs import JobResult, MatchJob
from arena.run.plan import Plan
from arena.run.players import Player, stop_signals_held
from arena.stats.confidence import GroupPlace, confidence
from arena.stats.ratings import RatedMatch, Rater, Rating, RatingConfig, rate_all
from arena.stats.standings import Standing, rated_matches, standings
from arena.store import Lease, Store, StoreError, disk_full

HEARTBEAT_S = 10.0
"""How often a runner renews its lease on the run while it waits for results."""


class Ratings(Protocol):
    """When a run's ratings are computed: after each batch, or once at the end."""

    def after_batch(self, store: Store, tid: int) -> None: ...

    def at_end(self, store: Store, tid: int) -> None: ...


class Policy(Protocol):
    """What a runner decides; the loop does the rest (see the module docstring)."""

    @property
    def name(self) -> str:
        """The run's name in the store: what the lease holds."""
        ...

    @property
    def ratings(self) -> Ratings: ...

    def plan(self, store: Store, fresh: bool) -> Plan:
        """Create or resume the run in the store (arena/run/plan.py); called while the lease is held."""
        ...

    def batches(self, plan: Plan, store: Store) -> Generator[Sequence[MatchJob], None, None]:
        """What to play next. Resumed only once the batch it gave is stored (and rated, with running ratings), so
        it may read the store; it ends when the run is done. An empty batch means nothing to play yet."""
        ...

    def add(self, job: MatchJob, result: JobResult) -> bool:
        """Take one stored result; True once the verdict is in: the rest of the batch is not needed."""
        ...

    def dropped(self, plan: Plan) -> Sequence[int]:
        """Schedule indices that are not part of the run after all (those after its verdict)."""
        ...


@dataclass
class Progress:
    """What the progress display shows; updated as results arrive."""

    total: int
    done: int
    started: float = field(default_factory=time.monotonic)
    played: int = 0
    failed: int = 0
    place_sum: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    matches: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    cluster: ClusterStats | None = None
    """Workers and matches per worker of a run on a Dask cluster (arena/run/cluster.py)."""
    watched: bool = True
    """Whether someone follows the progress (a runner's display): only then are :attr:`seats` kept."""
    seats: list[GroupPlace] = field(default_factory=list)
    """Every seat played now, grouped by deal (a duplicate group shares its deal seed), for the leader's confidence;
    empty in a run nobody watches, such as a league, where it grew by a seat a match for as long as the server ran."""
    ids: dict[str, int] = field(default_factory=dict)
    _sure: tuple[float, int, float | None, str | None] = (0.0, -1, None, None)
    """When the leader's confidence was last computed, on how many seats, P(leader above the next bot), and the
    leader then (by the standings' fit)."""

    def add(self, result: JobResult, job: MatchJob) -> None:
        self.played += 1
        if result.result is None:
            self.failed += 1
            return
        for bot, seat in zip(job.bots, result.result.players):
            self.place_sum[bot.name] += seat.place
            self.matches[bot.name] += 1
            if self.watched:
                self.seats.append(GroupPlace(job.seed, self.ids.setdefault(bot.name, len(self.ids)), seat.place,
                                             job.index))

    def leader_settled(self, every_s: float = 2.0) -> float | None:
        """P(the leader is truly above the next bot), from the standings' fit and its resampling of whole deals;
        recomputed at most every ``every_s`` seconds (it reads every seat so far), and with it :attr:`leader`.
        None before two bots have played."""
        when, seen, p, leader = self._sure
        if seen != len(self.seats) and time.monotonic() - when >= every_s:
            p = leader = None
            if len(self.matches) >= 2:
                sure = confidence(self.seats, resamples=200)
                first, second = sure.order()[:2]
                p = sure.p_above[(first, second)]
                leader = next(name for name, bot in self.ids.items() if bot == first)
            self._sure = (time.monotonic(), len(self.seats), p, leader)
        return self._sure[2]

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.played / elapsed if elapsed > 0 else 0.0

    @property
    def leader(self) -> str | None:
        """The first bot of the standings' fit when :meth:`leader_settled` last ran, until then the best mean
        place so far (ratings come at the end, in schedule order)."""
        if not self.matches:
            return None
        return self._sure[3] or min(self.matches, key=lambda name: (self.place_sum[name] / self.matches[name], name))


@dataclass(frozen=True)
class RunReport:
    tid: int
    name: str
    total: int
    """Matches in the run as stored at its end (those dropped after a verdict are not)."""
    done_before: int
    played: int
    failed: int
    interrupted: bool
    seconds: float
    standings: tuple[Standing, ...]
    cluster: ClusterStats | None = None


class FinalRatings:
    """Every stored match rated in schedule order once the run ends, and the run marked finished if nothing is
    left to play: the ratings of a tournament, whatever order its matches finished in."""

    def __init__(self, config: RatingConfig) -> None:
        self.config = config

    def after_batch(self, store: Store, tid: int) -> None:
        pass

    def at_end(self, store: Store, tid: int) -> None:
        rate_since_stored(store, tid, self.config)


def rate_since_stored(store: Store, tid: int, config: RatingConfig) -> tuple[dict[int, Rating], list[RatedMatch]]:
    """Bring the stored ratings up to date and return the latest and the matches they cover: the matches whose
    ratings are stored are kept as far as they are every finished match, in schedule order (the first run's, a
    resumed run's earlier matches, a league's earlier batches); from the first one that is not (a match finished
    since, before some rated one), every match is rated again, from the stored ratings just before it. The numbers
    are those of rating every match from the start: TrueSkill is applied in the same order to the same floats."""
    matches = rated_matches(store, tid)
    rated = store.rated_indices(tid)
    kept = 0
    while kept < min(len(matches), len(rated)) and matches[kept].index == rated[kept]:
        kept += 1
    ends = [*([matches[kept].index] if kept < len(matches) else []), *([rated[kept]] if kept < len(rated) else [])]
    since = min(ends) if ends else (rated[-1] + 1 if rated else 0)
    start = {bot: Rating(mu, sigma) for bot, (mu, sigma) in store.ratings_before(tid, since).items()}
    ratings, history = rate_all([row["id"] for row in store.bots(tid)], matches[kept:], config, start)
    store.finish(tid, history, since)
    return ratings, matches


class RunningRatings:
    """Ratings brought up to date after every batch, for a run that never finishes (the league).

    The first batch in a process starts from the stored ratings (:func:`rate_since_stored`: a server start rates
    only what finished since they were stored); later ones apply only the matches finished since,
    which gives the same numbers (each batch's matches come after every match already rated: a batch is scheduled
    only when the last one is played, and failed matches are never rated) at a cost that does not grow with the
    run's age."""

    def __init__(self, config: RatingConfig) -> None:
        self.config = config
        self._ratings: dict[int, Rating] | None = None
        self._rated_upto = -1
        self.seconds = 0.0
        """What the last update took."""

    def after_batch(self, store: Store, tid: int) -> None:
        started = time.monotonic()
        if self._ratings is None:
            # A server start: the stored ratings, and only the matches finished since they were stored.
            self._ratings, matches = rate_since_stored(store, tid, self.config)
        else:
            # Only the matches since: reading every match each batch cost time and memory that grew with the league.
            matches = rated_matches(store, tid, after=self._rated_upto)
            rater = Rater(self.config)
            ratings = self._ratings
            history = []
            for match in matches:
                ratings = rater.update({**{bot: rater.initial for bot in match.bots}, **ratings}, match)
                history.append((match.index, {bot: ratings[bot] for bot in match.bots}))
            self._ratings = ratings
            store.append_ratings(tid, history)
        self._rated_upto = max((match.index for match in matches), default=self._rated_upto)
        # It never finishes: finish() marks a run finished when nothing is pending, true only between batches.
        store.reopen(tid)
        self.seconds = time.monotonic() - started

    def at_end(self, store: Store, tid: int) -> None:
        pass


class Stopped(Exception):
    """The run's ``stop`` event was set: it ends as an interrupted run does."""


class _Heartbeat:
    """Called between results and while waiting for them: renews the lease when due, and notices a stop."""

    def __init__(self, store: Store, lease: Lease, stop: threading.Event | None) -> None:
        self.store = store
        self.lease = lease
        self.stop = stop
        self.renewed = time.monotonic()

    def __call__(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise Stopped
        if time.monotonic() - self.renewed >= HEARTBEAT_S / 2:
            self.store.renew(self.lease)
            self.renewed = time.monotonic()


def store_result(store: Store, tid: int, done: JobResult) -> None:
    """Store what a job came back with: its match, or its failure once every attempt failed."""
    if done.result is not None:
        store.record_match(tid, done.index, done.result, done.attempts)
    else:
        store.record_failure(tid, done.index, done.error or "unknown", done.attempts)


def run(store: Store, policy: Policy, player: Player, fresh: bool = False,
        on_result: Callable[[Progress], None] | None = None, stop: threading.Event | None = None,
        on_start: Callable[[Progress], None] | None = None, lease: Lease | None = None) -> RunReport:
    """Hold the run, plan it, play the policy's batches on ``player``, store and rate; see the module docstring.
    ``on_start`` is called once the run is planned in the store, before any match plays (a live site's first
    build), ``on_result`` after each result is stored. A ``lease`` the caller holds already (a server takes it
    before it serves) is renewed here but left for the caller to release.

    Raises :class:`~arena.store.LeaseHeldError` if another runner holds the run, and what the policy's planning
    raises (:class:`~arena.run.plan.TournamentError` for a run that cannot go on as asked)."""
    started = time.monotonic()
    with _sigterm_interrupts():
        held = lease if lease is not None else store.acquire(policy.name)
        try:
            return _run(store, policy, player, fresh, on_result, _Heartbeat(store, held, stop), started, on_start)
        finally:
            if lease is None:
                release(store, held)


def release(store: Store, lease: Lease) -> None:
    try:
        store.release(lease)
    except StoreError:
        pass  # a full disk, say: the lease expires, and this host sees at once that its holder is gone


def _run(store: Store, policy: Policy, player: Player, fresh: bool, on_result: Callable[[Progress], None] | None,
         tick: _Heartbeat, started: float, on_start: Callable[[Progress], None] | None = None) -> RunReport:
    plan = policy.plan(store, fresh)
    progress = Progress(total=len(plan.schedule), done=plan.done, cluster=player.stats, watched=on_result is not None)
    if on_start is not None:
        on_start(progress)
    interrupted = False
    batches = policy.batches(plan, store)
    sweeper = Sweeper(plan.log_dir)  # the spectators' ended feeds (arena/match/livefeed.py), once stored
    try:
        for batch in batches:
            tick()
            if not batch:
                continue
            if _play(store, plan, policy, player, batch, progress, on_result, tick, sweeper):
                break  # the verdict is in
            policy.ratings.after_batch(store, plan.tid)
    except (KeyboardInterrupt, Stopped):
        interrupted = True
    except BaseException as error:
        full = disk_full(error, plan.log_dir)
        if full is not None:
            raise full from None
        raise
    finally:
        batches.close()
    dropped = policy.dropped(plan)
    if dropped:
        store.drop_matches(plan.tid, dropped)
        for index in dropped:
            log_path_for(plan.log_dir, index).unlink(missing_ok=True)
            view_path(log_path_for(plan.log_dir, index)).unlink(missing_ok=True)
    policy.ratings.at_end(store, plan.tid)
    return RunReport(tid=plan.tid, name=plan.name, total=sum(store.status_counts(plan.tid).values()),
                     done_before=plan.done, played=progress.played, failed=progress.failed, interrupted=interrupted,
                     seconds=time.monotonic() - started, standings=tuple(standings(store, plan.tid)),
                     cluster=player.stats)


def _play(store: Store, plan: Plan, policy: Policy, player: Player, batch: Sequence[MatchJob], progress: Progress,
          on_result: Callable[[Progress], None] | None, tick: _Heartbeat, sweeper: Sweeper) -> bool:
    """Play one batch, storing each result; True if the policy's verdict came in before the batch ended."""
    by_index = {job.index: job for job in batch}
    played = player.play(batch, tick)
    chain: list[JobResult] = []
    try:
        for result in played:
            tick()
            if result.rest or chain:
                # A chain's matches (bots kept up between them, arena/run/lanes.py) are stored whole or not at
                # all: a run killed mid-chain plays it again from the start, with the same lanes' memories.
                chain.append(result)
                if result.rest:
                    continue
                store.record_results(plan.tid, [(done.index, done.result, done.attempts, done.error or "unknown")
                                                for done in chain])
            else:
                store_result(store, plan.tid, result)
            sweeper()
            for done in chain or [result]:
                job = by_index[done.index]
                progress.add(done, job)
                if on_result is not None:
                    on_result(progress)
                if policy.add(job, done):
                    return True
            chain.clear()
        return False
    finally:
        # A stop, or a verdict that needs no more matches: what is still in flight goes (nothing, when the batch
        # ended), and a second Ctrl-C must not cut that short.
        with stop_signals_held():
            played.close()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM stops a runner as Ctrl-C does: in flight discarded, the rest resumable


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (and Python runs them there only)
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
