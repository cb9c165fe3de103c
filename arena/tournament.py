"""Running a tournament: schedule it, play the pending matches in parallel, store each result, rate the bots.

:func:`run_job` plays one scheduled match and is the unit of parallel work: a plain top-level function of a frozen,
picklable :class:`MatchJob`, so the same job can go to a local process pool today and to a cluster later.
Results are stored as they arrive, in any order; ratings are computed afterwards from the store in schedule order,
so they are the same whatever the number of workers, and a resumed run ends exactly where an uninterrupted one would.
"""

from __future__ import annotations

import ctypes
import dataclasses
import multiprocessing
import os
import shutil
import signal
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing import resource_tracker
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.build import playable
from arena.confidence import GroupPlace, confidence
from arena import procfs
from arena.config import TournamentConfig
from arena.manifest import BotSpec, ManifestError, load_bot
from arena.matchlog import log_dir_for, log_path_for
from arena.protocol import Limits
from arena.ratings import RatingConfig, rate_all
from arena.referee import InfrastructureError, play_match
from arena.registry import entrant_names
from arena.results import MatchResult
from arena.rules import Rules
from arena.sandbox import Sandbox, SandboxError, SandboxLimits, get_sandbox
from arena.schedule import ScheduledMatch, design_for, make_schedule
from arena.store import Lease, Standing, Store, StoreError, disk_full

if TYPE_CHECKING:
    from arena.cluster import ClusterStats

PR_SET_PDEATHSIG = 1
SECONDS_PER_TURN_ESTIMATE = 0.00025
SECONDS_PER_MATCH_START = 0.25


class TournamentError(ValueError):
    """The tournament cannot run as asked (its config or bots changed, a bot is broken); an input error."""


@dataclass(frozen=True)
class MatchJob:
    index: int
    seed: int
    bots: tuple[BotSpec, ...]
    rules: Rules
    limits: Limits
    sandbox_limits: SandboxLimits
    sandbox: str
    log_path: str
    retries: int


@dataclass(frozen=True)
class JobResult:
    index: int
    attempts: int
    result: MatchResult | None
    """Without its engine events (they are in the log): only what the store keeps crosses the process pipe."""
    error: str | None = None


_SANDBOXES: dict[str, Sandbox] = {}
_IN_MATCH = False
_IN_WORKER = False
_STOPPING = False
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
STOP_GRACE_S = 10.0
STOP_ALARM_S = 3
HEARTBEAT_S = 10.0
"""How often a runner renews its lease on the tournament while it waits for results."""


def store_result(store: Store, tid: int, done: JobResult) -> None:
    """Store what a job came back with: its match, or its failure once every attempt failed."""
    if done.result is not None:
        store.record_match(tid, done.index, done.result, done.attempts)
    else:
        store.record_failure(tid, done.index, done.error or "unknown", done.attempts)


def rate_and_finish(store: Store, tid: int, rating: RatingConfig) -> None:
    """Rate every stored match of the tournament in schedule order and store the ratings and their history."""
    _, history = rate_all([row["id"] for row in store.bots(tid)], store.rated_matches(tid), rating)
    store.finish(tid, history)


def run_job(job: MatchJob) -> JobResult:
    """Play one scheduled match, retrying infrastructure errors; a bot's faults are results, never retried."""
    try:
        return _play(job)
    except BaseException:
        # Once told to stop, a worker exits whatever its clean-up raised on the way (a full disk while closing a
        # log, say): an exception here would go back to the pool, and the worker would wait for the next task
        # on a queue lock the stopping runner holds, deadlocking it.
        if _STOPPING:
            os._exit(128 + signal.SIGTERM)
        raise


def _play(job: MatchJob) -> JobResult:
    error = ""
    for attempt in range(1, job.retries + 2):
        try:
            if job.sandbox not in _SANDBOXES:
                _SANDBOXES[job.sandbox] = get_sandbox(job.sandbox)
            with _match_in_flight():
                result = play_match(job.bots, job.seed, _SANDBOXES[job.sandbox], job.rules, job.limits,
                                    job.sandbox_limits, Path(job.log_path))
            return JobResult(job.index, attempt, dataclasses.replace(result, events=()))
        except (InfrastructureError, SandboxError) as failure:
            error = f"attempt {attempt}: {failure}"
            broken = _SANDBOXES.pop(job.sandbox, None)  # a broken backend is rebuilt for the next attempt
            if broken is not None:
                try:
                    broken.close()
                except SandboxError:
                    pass  # it is broken: that is why it goes
            time.sleep(min(0.2 * attempt, 1.0))
    return JobResult(job.index, job.retries + 1, None, error)


@contextmanager
def _match_in_flight() -> Iterator[None]:
    """In a worker, SIGTERM raises during a match, so that the referee's clean-up kills the match's bots; out of
    one it kills at once. Not a Python handler there: one that comes just before the worker blocks on the pool's
    task queue would only run when the block ends, which after the runner stops is never."""
    global _IN_MATCH
    if _IN_WORKER:
        signal.signal(signal.SIGTERM, _exit_on_term)
    _IN_MATCH = True
    try:
        yield
    finally:
        _IN_MATCH = False
        if _IN_WORKER:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if _STOPPING:  # told to stop, whatever became of the exception: never back to the task queue
            os._exit(128 + signal.SIGTERM)


def worker_pool(processes: int) -> multiprocessing.pool.Pool:
    """A pool of match workers: spawned, each set up by :func:`worker_started` to die with this process and to
    leave Ctrl-C to it. Every runner (tournaments, leagues, tests, series) takes its workers from here."""
    return multiprocessing.get_context("spawn").Pool(processes, initializer=worker_started, initargs=(os.getpid(),))


def worker_started(runner: int) -> None:
    """A pool worker's set-up (the initializer, with the runner's pid): signals, and death with the runner."""
    # Workers are born with the stop signals blocked (the runner's mask while it starts them), so one that comes
    # while they import is held; they are let through once the dispositions are set. Ctrl-C is the runner's to
    # handle (workers ignore it from birth: _sigint_ignored_by_new_processes); SIGTERM (the runner stopping, or
    # dying: PDEATHSIG) kills a worker (see _match_in_flight).
    global _IN_WORKER
    _IN_WORKER = True
    sys.unraisablehook = _quiet_when_stopping
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    if os.getppid() != runner:  # it died before PDEATHSIG was set: nobody would take our results
        os._exit(128 + signal.SIGTERM)


def _quiet_when_stopping(unraisable: Any) -> None:
    if _STOPPING and unraisable.exc_type is SystemExit:
        return  # our stop, raised where Python cannot raise it (see _exit_on_term): no "Exception ignored" noise
    sys.__unraisablehook__(unraisable)


def _exit_on_term(signum: int, frame: Any) -> None:
    global _STOPPING
    _STOPPING = True
    if _IN_MATCH:
        # A handler can run where Python ignores what it raises (an at-fork hook while the referee starts a bot
        # prints "Exception ignored" and goes on): then the alarm's default action ends the worker, and its bots
        # die with it (the sandbox ties them to their parent). Unwinding normally ends in os._exit long before.
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(STOP_ALARM_S)
        raise SystemExit(128 + signum)  # unwinds through the referee, which kills the match's bots
    os._exit(128 + signum)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM stops a runner as Ctrl-C does: in flight discarded, the rest resumable


@dataclass(frozen=True)
class Plan:
    """A tournament ready to run: its id in the store, its bots, its schedule and what is left to play."""

    tid: int
    bots: tuple[BotSpec, ...]
    schedule: tuple[ScheduledMatch, ...]
    pending: tuple[int, ...]
    done: int
    log_dir: Path


def load_entrants(paths: Sequence[Path], build_cache: Path | None = None) -> list[BotSpec]:
    """The bots at ``paths`` with their entrant names (greedy@1 and greedy@2 when two versions of a registry bot
    play). With ``build_cache``, bots with a ``build:`` are built there first, as they will play (a dry run passes
    none: it runs no bot code). Raises :class:`TournamentError` for a bad manifest, :class:`BuildFailed` for a build
    that fails."""
    bots = []
    for path in paths:
        try:
            bot = load_bot(path)
        except ManifestError as error:
            raise TournamentError(str(error)) from None
        bots.append(bot if build_cache is None else playable(bot, build_cache))
    return entrant_names(bots)


def build_cache_for(store: Store) -> Path:
    """Where the bot directories of a store's tournaments are built: beside the store, like their logs."""
    return store.path.parent / "builds"


def load_bots(config: TournamentConfig, build_cache: Path | None = None) -> tuple[BotSpec, ...]:
    bots = load_entrants(config.bots, build_cache)
    names = [bot.name for bot in bots]
    for name in names:
        if names.count(name) > 1:
            raise TournamentError(f"{config.source}: bots: two bots are named {name!r}; names must be unique")
    return tuple(bots)


def plan(config: TournamentConfig, store: Store, fresh: bool = False) -> Plan:
    """Create the tournament in the store, or check that the stored one is the same and find what is left."""
    bots = load_bots(config, build_cache_for(store))
    schedule = make_schedule(len(bots), config.players, config.repeats, config.seed, config.deals)
    log_dir = log_dir_for(store.path.parent, config.name)
    existing = store.tournament(config.name)
    if existing is not None and fresh:
        store.delete_tournament(config.name)
        shutil.rmtree(log_dir, ignore_errors=True)
        existing = None
    if existing is None:
        tid = store.create_tournament(config.name, config.identity(), config.hash(),
                                      [bot.to_dict() for bot in bots], schedule)
    else:
        tid = existing["id"]
        if existing["config_hash"] != config.hash():
            raise TournamentError(
                f"{config.source}: tournament {config.name!r} is already in {store.path} with a different config; "
                "run it under a new name, or pass --fresh to discard its results and start over")
        for stored, bot in zip(store.bots(tid), bots):
            if stored["files_hash"] != bot.files_hash:
                raise TournamentError(
                    f"{bot.directory}: the files of bot {bot.name!r} changed since tournament {config.name!r} "
                    "started; its results would mix two versions. Pass --fresh to start over, or use a new name")
    remove_partial_logs(log_dir)
    pending = tuple(row["idx"] for row in store.matches_with_status(tid, "pending", "failed"))
    return Plan(tid, bots, tuple(schedule), pending, len(schedule) - len(pending), log_dir)


def remove_partial_logs(log_dir: Path) -> None:
    """Delete the half-written logs (``NAME.PID.tmp``) of matches that were in flight when a run was stopped or
    killed; those matches are played again. A log whose writer is still alive is left alone."""
    for partial in log_dir.glob("*.tmp") if log_dir.is_dir() else ():
        pid = partial.suffixes[-2].lstrip(".") if len(partial.suffixes) >= 2 else ""
        if pid.isdigit() and not procfs.running(int(pid)):
            partial.unlink(missing_ok=True)


def jobs(config: TournamentConfig, plan_: Plan) -> list[MatchJob]:
    return [
        MatchJob(
            index=match.index,
            seed=match.seed,
            bots=tuple(plan_.bots[slot] for slot in match.bots),
            rules=config.rules,
            limits=config.limits,
            sandbox_limits=config.sandbox_limits,
            sandbox=config.sandbox,
            log_path=str(log_path_for(plan_.log_dir, match.index)),
            retries=config.retries,
        )
        for match in (plan_.schedule[index] for index in plan_.pending)
    ]


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
    """Workers and matches per worker of a run on a Dask cluster (arena/cluster.py)."""
    seats: list[GroupPlace] = field(default_factory=list)
    """Every seat played now, grouped by deal (a duplicate group shares its deal seed), for the leader's confidence."""
    ids: dict[str, int] = field(default_factory=dict)
    _sure: tuple[float, int, float | None] = (0.0, -1, None)
    """When the leader's confidence was last computed, on how many seats, and P(leader above the next bot)."""

    def add(self, result: JobResult, job: MatchJob) -> None:
        self.played += 1
        if result.result is None:
            self.failed += 1
            return
        for bot, seat in zip(job.bots, result.result.players):
            self.place_sum[bot.name] += seat.place
            self.matches[bot.name] += 1
            self.seats.append(GroupPlace(job.seed, self.ids.setdefault(bot.name, len(self.ids)), seat.place))

    def leader_settled(self, every_s: float = 2.0) -> float | None:
        """P(the leader is truly above the next bot), from resampling whole deals as the standings do; recomputed
        at most every ``every_s`` seconds (it reads every seat so far). None before two bots have played."""
        when, seen, p = self._sure
        if seen != len(self.seats) and time.monotonic() - when >= every_s:
            order = sorted(self.matches, key=lambda name: (self.place_sum[name] / self.matches[name], name))
            p = None
            if len(order) >= 2:
                sure = confidence(self.seats, resamples=200)
                p = sure.p_above[(self.ids[order[0]], self.ids[order[1]])]
            self._sure = (time.monotonic(), len(self.seats), p)
        return self._sure[2]

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.played / elapsed if elapsed > 0 else 0.0

    @property
    def leader(self) -> str | None:
        """The bot with the best mean place so far (ratings come at the end, in schedule order)."""
        if not self.matches:
            return None
        return min(self.matches, key=lambda name: (self.place_sum[name] / self.matches[name], name))


@dataclass(frozen=True)
class RunReport:
    tid: int
    name: str
    total: int
    done_before: int
    played: int
    failed: int
    interrupted: bool
    seconds: float
    standings: tuple[Standing, ...]
    cluster: ClusterStats | None = None


def estimate_seconds(config: TournamentConfig, matches: int, workers: int) -> float:
    """A rough wall-clock estimate: a match of sample-bot speed is a few hundred turns plus its start-up."""
    turns_per_match = 60 * config.players * max(1, config.rules.threshold // 25)
    per_match = SECONDS_PER_MATCH_START + turns_per_match * SECONDS_PER_TURN_ESTIMATE * config.players
    return matches * per_match / max(1, workers)


def dry_run(config: TournamentConfig, workers: int | None = None, cluster: str | None = None) -> dict[str, Any]:
    """The schedule summary, without touching the store or playing; ``workers`` and ``cluster`` override the
    config's, as in a run. On a cluster the workers are the scheduler's, unknown until it is asked (a local:N
    cluster has N); the time estimate then assumes the local pool's."""
    workers = workers or config.workers
    cluster = cluster or config.cluster
    if cluster is not None and cluster.startswith("local:"):
        workers = int(cluster.removeprefix("local:"))
    bots = load_bots(config)
    schedule = make_schedule(len(bots), config.players, config.repeats, config.seed, config.deals)
    seats: dict[str, list[int]] = {bot.name: [0] * config.players for bot in bots}
    for match in schedule:
        for seat, slot in enumerate(match.bots):
            seats[bots[slot].name][seat] += 1
    return {
        "name": config.name,
        "design": design_for(len(bots), config.players),
        "bots": len(bots),
        "players": config.players,
        "matches": len(schedule),
        "deals": len({match.seed for match in schedule}),
        "deal_mode": config.deals,
        "matches_per_bot": {name: sum(counts) for name, counts in seats.items()},
        "seats_per_bot": seats,
        "workers": workers,
        "cluster": cluster,
        "sandbox": config.sandbox,
        "estimated_seconds": round(estimate_seconds(config, len(schedule), workers), 1),
        # with a stop rule the matches and the time are bounds: it stops once the standings settle
        "open_ended": None if config.stop is None else {"confidence": config.stop.confidence,
                                                        "max_matches": len(schedule)},
    }


def run_tournament(
    config: TournamentConfig,
    store: Store,
    fresh: bool = False,
    workers: int | None = None,
    on_result: Callable[[Progress], None] | None = None,
    cluster: str | None = None,
) -> RunReport:
    """Play every match not yet done, store each as it finishes, then rate in schedule order.

    ``KeyboardInterrupt`` or SIGTERM stops the pool (the matches in flight are discarded, their bots killed) and
    returns a report with ``interrupted=True``; running again resumes. The tournament is held by a lease in the
    store meanwhile: a second runner gets :class:`~arena.store.LeaseHeldError`. A full disk stops the run with
    :class:`~arena.store.DiskFullError`, what is stored kept. ``cluster`` (default: the config's ``cluster:``)
    plays the matches on a Dask cluster instead of the local pool (arena/cluster.py); the results are the same.
    """
    if config.stop is not None and (cluster or config.cluster):
        raise TournamentError(f"{config.source}: stop: an open-ended tournament is not played on a cluster yet; "
                              "drop cluster: (or --cluster), or use repeats")
    started = time.monotonic()
    with _sigterm_interrupts():
        lease = store.acquire(config.name)
        try:
            if config.stop is not None:  # open-ended: played round by round until the standings settle
                from arena.stoprule import run_until_settled

                renewed = time.monotonic()

                def keep_lease() -> None:
                    nonlocal renewed
                    if time.monotonic() - renewed >= HEARTBEAT_S / 2:
                        store.renew(lease)
                        renewed = time.monotonic()

                return run_until_settled(config, store, fresh, workers, on_result, keep_lease)
            return _run(config, store, lease, fresh, workers, on_result, started, cluster)
        finally:
            try:
                store.release(lease)
            except StoreError:
                pass  # a full disk, say: the lease expires, and this host sees at once that its holder is gone


def _run(config: TournamentConfig, store: Store, lease: Lease, fresh: bool, workers: int | None,
         on_result: Callable[[Progress], None] | None, started: float, cluster: str | None) -> RunReport:
    prepared = plan(config, store, fresh)
    todo = jobs(config, prepared)
    by_index = {job.index: job for job in todo}
    progress = Progress(total=len(prepared.schedule), done=prepared.done)
    interrupted = False

    renewed = time.monotonic()

    def keep_lease() -> None:
        nonlocal renewed
        if time.monotonic() - renewed >= HEARTBEAT_S / 2:
            store.renew(lease)
            renewed = time.monotonic()

    def record(result: JobResult) -> None:
        keep_lease()
        job = by_index[result.index]
        store_result(store, prepared.tid, result)
        progress.add(result, job)
        if on_result is not None:
            on_result(progress)

    address = cluster if cluster is not None else config.cluster
    if todo and address is not None:
        from arena import cluster as dask_cluster  # Dask is imported only when a cluster is asked for

        progress.cluster = dask_cluster.ClusterStats(address)
        played = dask_cluster.play(address, todo, progress.cluster)
        try:
            for result in played:
                record(result)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            played.close()  # cancels what is in flight
    elif todo:
        # Started now, as the pool would start it: its start unblocks the stop signals, which below would lose
        # a Ctrl-C (this process ignores it while the workers are born).
        resource_tracker.ensure_running()
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        pool = None
        try:
            with _sigint_ignored_by_new_processes():
                pool = worker_pool(min(workers or config.workers, len(todo)))
            signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a stop that came meanwhile is raised here
            results = pool.imap_unordered(run_job, todo)
            while True:
                try:
                    result = results.next(timeout=HEARTBEAT_S)
                except multiprocessing.TimeoutError:
                    keep_lease()
                    continue
                except StopIteration:
                    break
                record(result)
            pool.close()
        except BaseException as stop:
            signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # a second Ctrl-C must not cut the stop short
            if pool is not None:
                with _stragglers_killed(pool):
                    pool.terminate()
            interrupted = isinstance(stop, KeyboardInterrupt)
            if not interrupted:
                full = disk_full(stop, prepared.log_dir)
                if full is not None:
                    raise full from None
                raise
        finally:
            if pool is not None:
                with _stragglers_killed(pool):
                    pool.join()
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
    rate_and_finish(store, prepared.tid, config.rating)
    standings = store.standings(prepared.tid)
    return RunReport(
        tid=prepared.tid,
        name=config.name,
        total=len(prepared.schedule),
        done_before=prepared.done,
        played=progress.played,
        failed=progress.failed,
        interrupted=interrupted,
        seconds=time.monotonic() - started,
        standings=tuple(standings),
        cluster=progress.cluster,
    )


@contextmanager
def _stragglers_killed(pool: Any) -> Iterator[None]:
    """Kill the pool's workers that are still alive ``STOP_GRACE_S`` after a stop began, so the stop ends even if
    a worker missed its SIGTERM (it is only a backstop: workers die of SIGTERM at once)."""
    workers = [process.pid for process in getattr(pool, "_pool", ())]  # the pool keeps no public list

    def kill() -> None:
        for pid in workers:
            if pid is not None and parent_of(pid) == os.getpid():  # still ours: not reaped, so not a reused pid
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    timer = threading.Timer(STOP_GRACE_S, kill)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


@contextmanager
def _sigint_ignored_by_new_processes() -> Iterator[None]:
    """Processes started meanwhile ignore Ctrl-C from their first instruction (an ignored signal stays ignored
    through exec, and Python keeps it so), so a Ctrl-C while a worker imports is no traceback. This process
    loses none: the caller blocks the signal meanwhile, and a blocked signal is held, not ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


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
