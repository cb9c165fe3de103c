"""Where match jobs run: a local process pool or a Dask cluster, behind one small interface.

A :class:`Player` plays a batch of jobs and yields each result once, in completion order, never playing two jobs of
one deal at once (both players hand jobs out through arena/run/dispatch.py's
:class:`~arena.run.dispatch.DealQueue`: a bot never has a copy of itself at another seat of the deal it plays);
closing the generator early (a stop, a verdict that needs no more matches) kills or cancels what is still in
flight, and the player can play the next batch afterwards. ``tick`` is called at least every :data:`TICK_S` while
the player waits, so its caller can renew a lease and notice a stop. This is the only module that starts match
worker processes (:class:`LocalPool`); arena/run/cluster.py is the only one that talks to Dask
(:class:`DaskCluster` holds its connection). Who plays next and what is stored is arena/run/loop.py's business, not
the player's.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.pool
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing import resource_tracker
from typing import Protocol

from arena import procfs
from arena.run.cluster import ClusterError, ClusterStats, Connection, SchedulerLost, say
from arena.run.dispatch import ChainQueue, DealQueue
from arena.run.jobs import STOP_SIGNALS, JobResult, MatchJob, ready_jobs, run_jobs, worker_started
from arena.sandbox import reaper

LOGGER = logging.getLogger(__name__)

TICK_S = 0.5
"""How often a waiting player calls its ``tick``: a league's stop is seen within this."""
RECONNECT_S = (1.0, 30.0)
"""A Dask scheduler that cannot be reached is tried again after the first delay, doubling up to the second (each
try waits up to arena/run/cluster.py's ``CONNECT_TIMEOUT_S`` for an answer): a scheduler restarted, or started
after the runner, is found within half a minute."""
RECONNECT_PATIENCE_S = 120.0
"""How long a runner (``arena run``, ``arena test``) goes without a connection to its scheduler before it stops
with a resumable failure; the league server never does."""
STOP_GRACE_S = 10.0
"""A pool worker still alive this long after a stop began is killed (a backstop: SIGTERM kills them at once)."""

Tick = Callable[[], None]


class WorkerLost(RuntimeError):
    """A local pool's worker died mid-batch (see :meth:`LocalPool._check_workers`)."""


class Player(Protocol):
    @property
    def stats(self) -> ClusterStats | None:
        """Workers and matches per worker on a cluster; None for the local pool."""
        ...

    def play(self, jobs: Sequence[MatchJob], tick: Tick) -> Generator[JobResult, None, None]:
        """Each job's result once, in any order, no two jobs of one deal in flight at once (arena/run/dispatch.py);
        closing early stops what is in flight."""
        ...

    def close(self) -> None:
        """Let the workers go (the local pool's processes end, a ``local:N`` cluster shuts down)."""
        ...


class Units(Protocol):
    """What a pool's worker plays next: a whole unit (one match, or a chain of them), no two sharing a deal."""

    def take(self) -> tuple[MatchJob, ...] | None: ...

    def done(self, unit: tuple[MatchJob, ...]) -> None: ...

    def upcoming(self) -> tuple[MatchJob, ...] | None:
        """The unit :meth:`take` hands out next once one in flight is done, if one waits for that (a chain whose
        deals another plays)."""

    def __len__(self) -> int: ...


class _OneJob:
    """A :class:`~arena.run.dispatch.DealQueue`'s jobs as units of one match each."""

    def __init__(self, deals: DealQueue) -> None:
        self.deals = deals
        self._count = deals.waiting

    def take(self) -> tuple[MatchJob, ...] | None:
        job = self.deals.take()
        return None if job is None else (job,)

    def done(self, unit: tuple[MatchJob, ...]) -> None:
        self.deals.done(unit[0])

    def upcoming(self) -> tuple[MatchJob, ...] | None:
        return None  # a match starts its own bots

    def __len__(self) -> int:
        return self._count


class LocalPool:
    """A pool of spawned match workers on this machine, started at the first batch and kept for the next ones.

    Workers are born with the stop signals blocked and Ctrl-C ignored (so a stop while they import is neither lost
    nor a traceback in each), die with this process (PDEATHSIG), and are killed, stragglers included, when a batch
    is cut short. Jobs are handed out by a :class:`~arena.run.dispatch.DealQueue`, one per worker: no two of one
    deal play at once."""

    stats = None

    def __init__(self, workers: int, one_per_deal: bool = True) -> None:
        self.workers = workers
        self.one_per_deal = one_per_deal
        """False only to measure what the deal exclusion costs (bench/serial.py) or to show that its test fails."""
        self._pool: multiprocessing.pool.Pool | None = None
        self._workers: list[multiprocessing.process.BaseProcess] = []

    def play(self, jobs: Sequence[MatchJob], tick: Tick) -> Generator[JobResult, None, None]:
        if not jobs:
            return
        units: Units
        if jobs[0].chain is None:
            units = _OneJob(DealQueue(jobs, self.one_per_deal, self.workers))
        else:
            # With reuse on: each chain (arena/run/lanes.py) played whole by one worker, its results back together.
            by_chain: dict[int, list[MatchJob]] = {}
            for job in jobs:
                by_chain.setdefault(job.chain.chain if job.chain else -1, []).append(job)
            units = ChainQueue([tuple(chain) for chain in by_chain.values()])  # each in schedule order already
        size = min(self.workers, len(units))
        if self._pool is not None and size > len(self._workers):
            # Started for a short batch (the first after a start or an error may hold a single match): grown, or
            # the league would play on that one worker for good (the soak saw it play on 1 of 2 after a worker died).
            self.close()
        pool = self._start(size)
        back: queue.SimpleQueue[list[JobResult] | BaseException] = queue.SimpleQueue()
        in_flight: dict[int, tuple[MatchJob, ...]] = {}

        readied: set[int] = set()

        def send() -> None:
            # One unit per worker, no more: a unit queued in the pool would start whenever a worker frees, beside
            # whatever plays then, so only what the dispatcher hands out now may be in the pool.
            while len(in_flight) < self.workers and (unit := units.take()) is not None:
                in_flight[unit[0].index] = unit
                pool.apply_async(run_jobs, (unit,), callback=back.put, error_callback=back.put)
            # A worker left idle because the next chain waits for one in flight gets that chain's bots started
            # (docker's containers): it plays nothing meanwhile, so only the starts' CPU is taken from the others.
            if len(in_flight) < self.workers and (upcoming := units.upcoming()) is not None \
                    and upcoming[0].index not in readied:
                readied.add(upcoming[0].index)
                pool.apply_async(ready_jobs, (upcoming,), error_callback=_not_ready)

        finished = False
        try:
            send()
            left = len(jobs)
            while left:
                while True:
                    try:
                        results = back.get(timeout=TICK_S)
                        break
                    except queue.Empty:
                        self._check_workers()
                        tick()
                if isinstance(results, BaseException):
                    raise results
                # The results are back, so their worker's matches are over and their bots are dead: their deals are
                # free. The next units go before the results are stored, so no worker waits for the store.
                units.done(in_flight.pop(results[0].index))
                send()
                left -= len(results)
                yield from results
            finished = True
        finally:
            if not finished:
                self._stop()

    def close(self) -> None:
        pool, self._pool, workers, self._workers = self._pool, None, self._workers, []
        if pool is not None:
            _unlock_if_lost(pool, workers)
            pool.close()
            with _stragglers_killed(pool):
                pool.join()
            reaper.reap_adopted()

    def _start(self, processes: int) -> multiprocessing.pool.Pool:
        if self._pool is None:
            # Started now, as the pool would start it: its start unblocks the stop signals, which below would lose
            # a Ctrl-C (this process ignores it while the workers are born).
            resource_tracker.ensure_running()
            held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
            try:
                with sigint_ignored_by_new_processes():
                    self._pool = multiprocessing.get_context("spawn").Pool(
                        processes, initializer=worker_started, initargs=(os.getpid(),))
                self._workers = list(getattr(self._pool, "_pool", ()))  # the pool keeps no public list
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a stop that came meanwhile is raised here
        return self._pool

    def _check_workers(self) -> None:
        """Raise :class:`WorkerLost` if a worker died (killed -9, or by the OOM killer): the pool starts another,
        but the job it held never comes back, and the batch would wait for it forever. The batch stops instead
        (the pool with it); its matches not yet stored stay pending for the next one."""
        for worker in self._workers:
            if worker.exitcode is not None:
                raise WorkerLost(f"a match worker (pid {worker.pid}) died with status {worker.exitcode}: the "
                                 "matches in flight are played again")

    def _stop(self) -> None:
        """Kill the workers and what they play; the next batch starts a new pool."""
        # The old workers go with their pool: a process object holds a descriptor (its sentinel) until collected.
        pool, self._pool, workers, self._workers = self._pool, None, self._workers, []
        if pool is not None:
            _unlock_if_lost(pool, workers)
            with stop_signals_held(), _stragglers_killed(pool):
                pool.terminate()
                pool.join()
                _release(pool, [*workers, *getattr(pool, "_pool", ())])
                # A worker ended mid-match leaves its sandboxes to us (a subreaper); they die with it, and are
                # zombies here until reaped.
                reaper.reap_adopted()


class DaskCluster:
    """Batches on a Dask cluster (arena/run/cluster.py): bots sent by content, workers checked, a bounded window of
    matches in flight. The connection opens at the first batch and stays for the next ones.

    A scheduler that cannot be reached, or is lost mid-batch, is tried again after :data:`RECONNECT_S`' first delay,
    doubling up to its second (ticking meanwhile, so a stop is seen and a lease renewed), and the batch goes on with
    the jobs not yet yielded: each job's result is still yielded once. After ``patience`` seconds without a
    connection it gives up with :class:`~arena.run.cluster.ClusterError` (``None``: never, as the league server
    does). Each attempt and loss is told to ``notify``."""

    def __init__(self, address: str, notify: Callable[[str], None] | None = None,
                 patience: float | None = RECONNECT_PATIENCE_S, one_per_deal: bool = True) -> None:
        self.address = address
        self.one_per_deal = one_per_deal
        """False only to measure what the deal exclusion costs or to show that its test fails."""
        self.stats: ClusterStats | None = ClusterStats(address)
        self.notify = notify
        self.patience = patience
        self._connection: Connection | None = None

    def play(self, jobs: Sequence[MatchJob], tick: Tick) -> Generator[JobResult, None, None]:
        left = {job.index: job for job in jobs}
        assert self.stats is not None
        notify = say if self.notify is None else self.notify
        delay = RECONNECT_S[0]
        since: float | None = None  # when the scheduler was first missed (a loss, or the first failed try)
        while left:
            tried = time.monotonic()
            try:
                if self._connection is None:
                    self._connection = Connection(self.address)
                played = self._connection.play(list(left.values()), self.stats, notify, tick, self.one_per_deal)
                try:
                    for result in played:
                        del left[result.index]
                        yield result
                finally:
                    played.close()  # cancels what is still in flight
            except SchedulerLost as error:
                lost = self._connection is not None
                self.reset()
                if lost:  # it was connected: connect again at once, then back off as from a first try
                    self.stats.reconnects += 1
                    delay, since = RECONNECT_S[0], time.monotonic()
                    notify(f"{error}: connecting again")
                    continue
                since = tried if since is None else since
                if self.patience is not None and time.monotonic() - since >= self.patience:
                    raise ClusterError(f"{error} (tried for {self.patience:.0f} s)") from None
                notify(f"{error}: trying again in {delay:.0f} s")
                _waited(delay, tick)
                delay = min(2 * delay, RECONNECT_S[1])

    @property
    def connected(self) -> bool:
        return self._connection is not None

    def reset(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def close(self) -> None:
        self.reset()


def _not_ready(error: BaseException) -> None:
    """A chain's bots could not be started ahead (:func:`~arena.run.jobs.ready_jobs`): the chain starts them."""
    LOGGER.info("a chain's bots were not started ahead: %s", error)


def _waited(seconds: float, tick: Tick) -> None:
    """Sleep ``seconds``, ticking at least every :data:`TICK_S` (a tick that raises ends the wait)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        tick()
        time.sleep(min(TICK_S, left))


def player_for(cluster: str | None, workers: int, notify: Callable[[str], None] | None = None,
               patience: float | None = RECONNECT_PATIENCE_S) -> Player:
    """The local pool of ``workers`` processes, or the Dask cluster at ``cluster`` (``local:N``, ``tcp://...``)
    that gives up after ``patience`` seconds without a connection to its scheduler (``None``: never)."""
    return LocalPool(workers) if cluster is None else DaskCluster(cluster, notify, patience)


@contextmanager
def stop_signals_held() -> Iterator[None]:
    """While a stop is carried out, a second Ctrl-C or SIGTERM waits for it (it is raised once this ends)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _unlock_if_lost(pool: multiprocessing.pool.Pool, workers: Sequence[multiprocessing.process.BaseProcess]) -> None:
    """If a worker died, release the lock on the pool's task queue that it may have died holding (an idle worker
    waits for its next task holding it): ``terminate`` and ``join`` take that lock, and would wait for it forever
    (tested: a league server whose idle worker was killed -9 never stopped). A lock may be released by any process;
    if a live worker held it instead, it is being killed with its pool anyway."""
    if not any(worker.exitcode is not None for worker in workers):
        return
    lock = pool._inqueue._rlock  # type: ignore[attr-defined]  # the pool keeps no public handle on its queue
    if lock.acquire(block=False):
        lock.release()  # nobody held it
        return
    try:
        lock.release()
    except ValueError:
        pass  # its holder let it go meanwhile


def _release(pool: multiprocessing.pool.Pool, workers: Sequence[multiprocessing.process.BaseProcess]) -> None:
    """Close a stopped pool's pipes and its workers' sentinels now: a stop on an error keeps the pool referenced
    from the error's traceback for a while, and its 11 descriptors with it (the soak saw them held for minutes)."""
    for worker in workers:
        try:
            worker.close()
        except ValueError:
            pass  # still running: a straggler that its kill has not ended yet keeps its sentinel
    for name in ("_inqueue", "_outqueue", "_change_notifier"):
        queue_ = getattr(pool, name, None)
        if queue_ is not None:
            queue_.close()


@contextmanager
def _stragglers_killed(pool: multiprocessing.pool.Pool) -> Iterator[None]:
    """Kill the pool's workers that are still alive ``STOP_GRACE_S`` after a stop began, so the stop ends even if
    a worker missed its SIGTERM (it is only a backstop: workers die of SIGTERM at once)."""
    workers = [process.pid for process in getattr(pool, "_pool", ())]  # the pool keeps no public list

    def kill() -> None:
        for pid in workers:
            found = None if pid is None else procfs.stat(pid)
            if found is not None and found.ppid == os.getpid():  # still ours: not reaped, so not a reused pid
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


@contextmanager
def sigint_ignored_by_new_processes() -> Iterator[None]:
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
