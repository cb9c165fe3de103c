"""The unit of parallel work: one scheduled match as a picklable job, and what a worker process does with it.

:func:`run_job` is a plain top-level function of a frozen :class:`MatchJob`, so the same job goes to a local
process pool or to a Dask worker (arena/run/players.py). A worker is set up by :func:`worker_started` to die with
its runner and to leave Ctrl-C to it; SIGTERM during a match unwinds through the referee, which kills the match's
bots, and outside one ends the worker at once.
"""

from __future__ import annotations

import ctypes
import dataclasses
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.bots.manifest import BotSpec
from arena.game.results import MatchResult
from arena.game.rules import Rules
from arena.match.live import LiveBots, Reuse
from arena.match.matchview import view_log
from arena.match.protocol import Limits
from arena.match.referee import InfrastructureError, play_match
from arena.run.lanes import Chain, chains
from arena.sandbox import Sandbox, SandboxError, SandboxLimits, get_sandbox
from arena.schedule import ScheduledMatch

LOGGER = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
STOP_ALARM_S = 3


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
    chain: Chain | None = None
    """With reuse on: the chain the match is played in, and each seat's lane (arena/run/lanes.py)."""
    memory_fraction: float = Reuse.memory_fraction
    """With reuse on: the share of its memory cap above which a live process is recycled."""
    watched: bool = False
    """Spectators may follow it while it plays (a feed beside its log: :mod:`arena.match.livefeed`)."""


@dataclass(frozen=True)
class JobResult:
    index: int
    attempts: int
    result: MatchResult | None
    """Without its engine events (they are in the log): only what the store keeps crosses the process pipe."""
    error: str | None = None
    rest: int = 0
    """How many results of the same chain follow this one: the loop stores a chain's results together."""


def in_chains(jobs: Sequence[MatchJob], schedule: Sequence[ScheduledMatch], reuse: Reuse) -> list[MatchJob]:
    """``jobs`` placed in the chains that ``schedule``'s matches make (arena/run/lanes.py), to be played with
    ``reuse``: the schedule is what the chains follow from, so it must be the same whenever the jobs are played
    again (a tournament's whole schedule; a league's pending matches, whose chains are stored whole or not at all)."""
    placed = chains(schedule, reuse.matches)
    return [dataclasses.replace(job, chain=placed[job.index], memory_fraction=reuse.memory_fraction) for job in jobs]


_SANDBOXES: dict[str, Sandbox] = {}
_IN_MATCH = False
_IN_WORKER = False
_STOPPING = False


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


def run_jobs(jobs: tuple[MatchJob, ...]) -> list[JobResult]:
    """Play one job (:func:`run_job`), or a chain's matches in order (arena/run/lanes.py), each seat's persistent
    bot kept up along its lane and every process ended at the chain's end; each result of a chain says how many of
    the chain's follow it."""
    if jobs[0].chain is None:
        return [run_job(job) for job in jobs]
    try:
        live = LiveBots(Reuse(len(jobs) + 1, jobs[0].memory_fraction))  # the chain's length bounds a lane
        try:
            _start_lanes(jobs, live)
            results = [_play(job, live) for job in jobs]
        finally:
            live.close()
        return [dataclasses.replace(result, rest=len(results) - 1 - n) for n, result in enumerate(results)]
    except BaseException:
        if _STOPPING:  # as run_job
            os._exit(128 + signal.SIGTERM)
        raise


def ready_jobs(jobs: tuple[MatchJob, ...]) -> None:
    """Have a chain's bots started ahead in this worker's sandbox (:meth:`~arena.sandbox.Sandbox.ready`) while the
    chain waits for another worker's to end: the chain then takes them, on whichever worker it plays (the one that
    played before keeps its own). Best effort: a failure only means the chain starts its bots itself."""
    try:
        _sandbox(jobs[0].sandbox).ready(list(_lanes(jobs).values()), jobs[0].sandbox_limits)
    except SandboxError as failure:
        _drop_sandbox(jobs[0].sandbox)
        LOGGER.info("could not start a chain's bots ahead: %s", failure)


def _start_lanes(jobs: Sequence[MatchJob], live: LiveBots) -> None:
    """Start every lane of a chain before its first match, all at once (:meth:`LiveBots.start`). Best effort: on a
    failure of the backend none is started, and each match launches its own as without this, retries included."""
    try:
        with _match_in_flight():
            live.start(_sandbox(jobs[0].sandbox), _lanes(jobs), jobs[0].sandbox_limits)
    except SandboxError as failure:
        _drop_sandbox(jobs[0].sandbox)
        LOGGER.warning("could not start a chain's bots ahead of its matches: %s", failure)


def _lanes(jobs: Sequence[MatchJob]) -> dict[str, BotSpec]:
    """A chain's lanes, each with its bot."""
    lanes: dict[str, BotSpec] = {}
    for job in jobs:
        assert job.chain is not None
        for bot, lane in zip(job.bots, job.chain.lanes):
            lanes.setdefault(lane, bot)
    return lanes


def _sandbox(name: str) -> Sandbox:
    """This worker's sandbox of backend ``name``, made on first use."""
    if name not in _SANDBOXES:
        _SANDBOXES[name] = get_sandbox(name)
    return _SANDBOXES[name]


def _drop_sandbox(name: str) -> None:
    """Close and forget this worker's sandbox of backend ``name``: a broken backend is made anew on next use."""
    broken = _SANDBOXES.pop(name, None)
    if broken is not None:
        try:
            broken.close()
        except SandboxError:
            pass  # it is broken: that is why it goes


def _play(job: MatchJob, live: LiveBots | None = None) -> JobResult:
    error = ""
    lanes = None if job.chain is None else job.chain.lanes
    for attempt in range(1, job.retries + 2):
        try:
            with _match_in_flight():
                result = play_match(job.bots, job.seed, _sandbox(job.sandbox), job.rules, job.limits,
                                    job.sandbox_limits, Path(job.log_path), live=live, lanes=lanes,
                                    watched=job.watched)
            # The site's view of the log, made here, where the match was played (spread over the workers that
            # play), rather than by every site build: best effort, a build without it reads the log.
            view_log(Path(job.log_path), len(job.bots))
            return JobResult(job.index, attempt, dataclasses.replace(result, events=()))
        except (InfrastructureError, SandboxError) as failure:
            error = f"attempt {attempt}: {failure}"
            _drop_sandbox(job.sandbox)
            if attempt <= job.retries:  # a pause lets a passing outage pass; none after the last attempt
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


def worker_started(runner: int) -> None:
    """A pool worker's set-up (the initializer, with the runner's pid): signals, and death with the runner."""
    # Workers are born with the stop signals blocked (the runner's mask while it starts them), so one that comes
    # while they import is held; they are let through once the dispositions are set. Ctrl-C is the runner's to
    # handle (workers ignore it from birth: players.sigint_ignored_by_new_processes); SIGTERM (the runner
    # stopping, or dying: PDEATHSIG) kills a worker (see _match_in_flight).
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
