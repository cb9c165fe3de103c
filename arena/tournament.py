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
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from arena.config import TournamentConfig
from arena.manifest import BotSpec, ManifestError, load_bot
from arena.matchlog import log_dir_for, log_path_for
from arena.protocol import Limits
from arena.ratings import rate_all
from arena.referee import InfrastructureError, play_match
from arena.registry import entrant_names
from arena.results import MatchResult
from arena.rules import Rules
from arena.sandbox import Sandbox, SandboxError, SandboxLimits, get_sandbox, procfs
from arena.schedule import ScheduledMatch, design_for, make_schedule
from arena.store import Standing, Store

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


def run_job(job: MatchJob) -> JobResult:
    """Play one scheduled match, retrying infrastructure errors; a bot's faults are results, never retried."""
    global _IN_MATCH
    error = ""
    for attempt in range(1, job.retries + 2):
        try:
            if job.sandbox not in _SANDBOXES:
                _SANDBOXES[job.sandbox] = get_sandbox(job.sandbox)
            _IN_MATCH = True
            try:
                result = play_match(job.bots, job.seed, _SANDBOXES[job.sandbox], job.rules, job.limits,
                                    job.sandbox_limits, Path(job.log_path))
            finally:
                _IN_MATCH = False
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


def _worker_started() -> None:
    # Ctrl-C is the parent's to handle; SIGTERM (from the parent stopping, or the parent dying: PDEATHSIG) raises,
    # so the referee's cleanup kills the bots of the match in flight.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_on_term)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _exit_on_term(signum: int, frame: Any) -> None:
    if _IN_MATCH:
        raise SystemExit(128 + signum)  # unwinds through the referee, which kills the match's bots
    os._exit(128 + signum)


@dataclass(frozen=True)
class Plan:
    """A tournament ready to run: its id in the store, its bots, its schedule and what is left to play."""

    tid: int
    bots: tuple[BotSpec, ...]
    schedule: tuple[ScheduledMatch, ...]
    pending: tuple[int, ...]
    done: int
    log_dir: Path


def load_bots(config: TournamentConfig) -> tuple[BotSpec, ...]:
    bots = []
    for path in config.bots:
        try:
            bots.append(load_bot(path))
        except ManifestError as error:
            raise TournamentError(str(error)) from None
    bots = entrant_names(bots)  # greedy@1 and greedy@2 when two versions of a registry bot play
    names = [bot.name for bot in bots]
    for name in names:
        if names.count(name) > 1:
            raise TournamentError(f"{config.source}: bots: two bots are named {name!r}; names must be unique")
    return tuple(bots)


def plan(config: TournamentConfig, store: Store, fresh: bool = False) -> Plan:
    """Create the tournament in the store, or check that the stored one is the same and find what is left."""
    bots = load_bots(config)
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
    _remove_partial_logs(log_dir)
    pending = tuple(row["idx"] for row in store.matches_with_status(tid, "pending", "failed"))
    return Plan(tid, bots, tuple(schedule), pending, len(schedule) - len(pending), log_dir)


def _remove_partial_logs(log_dir: Path) -> None:
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

    def add(self, result: JobResult, job: MatchJob) -> None:
        self.played += 1
        if result.result is None:
            self.failed += 1
            return
        for bot, seat in zip(job.bots, result.result.players):
            self.place_sum[bot.name] += seat.place
            self.matches[bot.name] += 1

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


def estimate_seconds(config: TournamentConfig, matches: int, workers: int) -> float:
    """A rough wall-clock estimate: a match of sample-bot speed is a few hundred turns plus its start-up."""
    turns_per_match = 60 * config.players * max(1, config.rules.threshold // 25)
    per_match = SECONDS_PER_MATCH_START + turns_per_match * SECONDS_PER_TURN_ESTIMATE * config.players
    return matches * per_match / max(1, workers)


def dry_run(config: TournamentConfig, workers: int | None = None) -> dict[str, Any]:
    """The schedule summary, without touching the store or playing; ``workers`` overrides the config's, as in a run."""
    workers = workers or config.workers
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
) -> RunReport:
    """Play every match not yet done, store each as it finishes, then rate in schedule order.

    ``KeyboardInterrupt`` stops the pool (the matches in flight are discarded, their bots killed) and returns a
    report with ``interrupted=True``; running again resumes.
    """
    if config.stop is not None:  # open-ended: played round by round until the standings settle
        from arena.stoprule import run_until_settled
        return run_until_settled(config, store, fresh, workers, on_result)
    started = time.monotonic()
    prepared = plan(config, store, fresh)
    todo = jobs(config, prepared)
    by_index = {job.index: job for job in todo}
    progress = Progress(total=len(prepared.schedule), done=prepared.done)
    interrupted = False
    if todo:
        context = multiprocessing.get_context("spawn")
        pool = context.Pool(min(workers or config.workers, len(todo)), initializer=_worker_started)
        try:
            for result in pool.imap_unordered(run_job, todo):
                job = by_index[result.index]
                if result.result is not None:
                    store.record_match(prepared.tid, result.index, result.result, result.attempts)
                else:
                    store.record_failure(prepared.tid, result.index, result.error or "unknown", result.attempts)
                progress.add(result, job)
                if on_result is not None:
                    on_result(progress)
            pool.close()
        except BaseException as stop:
            interrupted = isinstance(stop, KeyboardInterrupt)
            pool.terminate()
            if not interrupted:
                raise
        finally:
            pool.join()
    _, history = rate_all([row["id"] for row in store.bots(prepared.tid)], store.rated_matches(prepared.tid),
                          config.rating)
    store.finish(prepared.tid, history)
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
    )
