"""Tournaments on a Dask cluster: the matches of ``arena run --cluster ADDRESS`` go to Dask workers.

The runner stays the only writer: it submits :class:`~arena.run.jobs.MatchJob` s to a Dask ``Client`` in
schedule order, a bounded window at a time (about two per worker thread), never two of one deal at once (a job
goes only once no other of its deal is in flight: arena/run/dispatch.py), and stores each result as it comes back,
with the match's event log as bytes. Workers are plain ``dask worker`` processes on machines with arena installed;
they share no filesystem with the runner:

- **Bots travel by content.** Each bot directory is packed once (a tar.gz keyed by ``BotSpec.files_hash``, the
  registry's hash) and sent once to each worker as it joins; the worker unpacks it into a local cache directory
  named by the hash, checks that the files hash to it, and reuses it for every later match.
- **Workers are checked before they play.** On joining, a worker reports its arena and protocol versions and what
  its sandbox guarantees (what ``arena doctor`` reports); a worker with other versions, or whose sandbox is weaker
  than the runner's own for the config's backend, is refused with a message naming it, and no match is ever
  submitted to it. The same check runs again inside every match task, so a race cannot slip past it.
- **Faults.** A worker that dies mid-match loses its task; Dask runs it again elsewhere and the runner receives
  one result, stored once. Losing the scheduler ends a play with :class:`SchedulerLost`, and arena/run/players.py's
  :class:`~arena.run.players.DaskCluster` connects again and plays what is left (a runner for a while, then it
  stops with :class:`ClusterError`: the matches stored so far count and the same command resumes; the league
  for as long as it runs). Ctrl-C cancels what is in flight.

Dask is imported only here (arena/run/players.py's :class:`DaskCluster` plays through :class:`Connection`), and
only once a cluster plays: ``arena --help`` and a run on the local pool never load it.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import os
import shutil
import signal
import socket
import stat
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.bots.manifest import BotSpec, hash_files
from arena.match.matchview import keep_moved_view, view_path
from arena.run.dispatch import DealQueue, deal_of
from arena.run.jobs import JobResult, MatchJob, run_job

LOCAL_PREFIX = "local:"
WINDOW_PER_THREAD = 2
"""Matches in flight per worker thread: one playing, one queued so a thread never waits for the runner."""
CONNECT_TIMEOUT_S = 30.0
WORKER_WAIT_S = 60.0
"""How long the run waits for a fit worker when it has none (at the start, or after losing them all)."""
POLL_S = 0.5
CACHE_ENV = "ARENA_BOT_CACHE"
"""Where a worker keeps unpacked bots (default: ``arena-bots-UID`` in the system's temporary directory)."""
CHECKED_GUARANTEES = ("filesystem", "network", "proc_and_signals", "scratch_cap", "processes", "per_bot_uid",
                      "memory_limit_fault", "tree_kill", "no_shared_locks", "private_caches")
"""What a worker's process sandbox must guarantee where the runner's does: a worker without the channel rules
(no_shared_locks) would let two bots it plays at once talk through locks, and one without private views
(private_caches) would let a bot leave bits in its page cache for a later match, so each is refused like one
without bwrap."""


class ClusterError(RuntimeError):
    """The cluster cannot play the matches (scheduler unreachable or lost, no fit worker): a failure, exit 1."""


class SchedulerLost(ClusterError):
    """The scheduler cannot be reached, or the connection to it was lost: connecting again may succeed
    (arena/run/players.py's :class:`~arena.run.players.DaskCluster` does, for a while)."""


class WorkerUnfit(RuntimeError):
    """Raised inside a match task on a worker that fails the fitness check (args: its address, the problems); the
    runner refuses that worker and submits the match again."""


class BotsMissing(RuntimeError):
    """Raised inside a match task on a worker whose cache lacks a bot (args: its address, the hashes); the runner
    sends it the bots and submits the match again."""


# -- what a worker is checked against --------------------------------------------------------------------------


@dataclass(frozen=True)
class Requirements:
    """What every worker must match: the runner's versions, and the sandbox guarantees the config's backend has
    on the runner's own host (a worker may be stronger, never weaker)."""

    arena: str
    protocol: int
    sandbox: str
    guarantees: tuple[str, ...]


@dataclass(frozen=True)
class WorkerReport:
    """What a worker says about itself: host, versions, threads and its sandbox's guarantees."""

    address: str
    host: str
    arena: str
    protocol: int
    nthreads: int
    guarantees: tuple[tuple[str, bool, str], ...]

    def problems(self, wanted: Requirements) -> list[str]:
        """Why this worker must not play (empty: it may)."""
        found = []
        if self.arena != wanted.arena:
            found.append(f"arena {self.arena}, the runner has {wanted.arena}")
        if self.protocol != wanted.protocol:
            found.append(f"protocol {self.protocol}, the runner speaks {wanted.protocol}")
        have = {name: (ok, reason) for name, ok, reason in self.guarantees}
        for name in wanted.guarantees:
            ok, reason = have.get(name, (False, "not reported"))
            if not ok:
                found.append(f"its {wanted.sandbox} sandbox does not guarantee {name} ({reason})")
        return found


def sandbox_guarantees(sandbox: str) -> tuple[tuple[str, bool, str], ...]:
    """This host's guarantees for ``sandbox``, as ``arena doctor`` reports them."""
    from arena.sandbox import doctor

    if sandbox == "docker":
        from arena.sandbox import docker_engine_status

        return (("docker_engine", *docker_engine_status()),)
    return tuple((name, ok, reason) for name, (ok, reason) in doctor.sandbox_guarantees().items())


def requirements(sandbox: str) -> Requirements:
    """The runner's side of the check: its versions, and every guarantee that holds here for ``sandbox``."""
    import arena
    from arena.match.protocol import VERSION

    if sandbox == "docker":
        return Requirements(arena.__version__, VERSION, sandbox, ("docker_engine",))
    held = tuple(name for name, ok, _ in sandbox_guarantees(sandbox) if ok and name in CHECKED_GUARANTEES)
    return Requirements(arena.__version__, VERSION, sandbox, held)


_REPORTS: dict[str, WorkerReport] = {}
_REPORT_LOCK = threading.Lock()


def worker_report(sandbox: str, worker: Any = None) -> WorkerReport:
    """Runs on a worker: what it is, computed once per worker process and sandbox."""
    from distributed import get_worker

    import arena
    from arena.match.protocol import VERSION

    with _REPORT_LOCK:
        if sandbox not in _REPORTS:
            worker = worker or get_worker()
            _REPORTS[sandbox] = WorkerReport(worker.address, socket.gethostname(), arena.__version__, VERSION,
                                             worker.state.nthreads, sandbox_guarantees(sandbox))
        return _REPORTS[sandbox]


def prepare_worker(wanted: Requirements, blobs: dict[str, bytes],
                   dask_worker: Any = None) -> tuple[WorkerReport, list[str]]:
    """Runs on a joining worker (``Client.run``, which passes ``dask_worker``): check it, and when it is fit
    unpack the bots into its cache."""
    report = worker_report(wanted.sandbox, dask_worker)
    problems = report.problems(wanted)
    if not problems:
        for files_hash, blob in blobs.items():
            materialise(files_hash, blob)
    return report, problems


# -- bots by content --------------------------------------------------------------------------------------------


def pack_bot(bot: BotSpec) -> bytes:
    """The bot's files (the ones its hash covers) as tar.gz bytes, world-readable, owned by nobody in particular."""
    def tidy(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        name = Path(info.name)
        if info.name.endswith(".pyc") or any(p == "__pycache__" or p.startswith(".git") for p in name.parts):
            return None  # not hashed, so not shipped
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        executable = info.isdir() or info.mode & 0o111
        info.mode = 0o755 if executable else 0o644
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as archive:
        for entry in sorted(bot.directory.iterdir()):
            archive.add(entry, arcname=entry.name, recursive=True, filter=tidy)
    return buffer.getvalue()


def cache_root() -> Path:
    """This worker's bot cache; created private to its user but readable, since bots run as other uids."""
    root = Path(os.environ.get(CACHE_ENV) or Path(tempfile.gettempdir()) / f"arena-bots-{os.getuid()}")
    root.mkdir(mode=0o755, parents=True, exist_ok=True)
    info = root.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        # Someone else's directory (or one others can write) could hold bots that only claim their hash.
        raise WorkerUnfit(f"bot cache {root} is not a directory owned and only writable by uid {os.getuid()}")
    return root


def cached_bot(files_hash: str) -> Path | None:
    path = cache_root() / files_hash
    return path if path.is_dir() else None


def materialise(files_hash: str, blob: bytes) -> Path:
    """Unpack ``blob`` into the cache under ``files_hash`` unless it is there; refuse it if it hashes otherwise."""
    found = cached_bot(files_hash)
    if found is not None:
        return found
    root = cache_root()
    staging = Path(tempfile.mkdtemp(prefix=f".{files_hash[:12]}.", dir=root))
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as archive:
            archive.extractall(staging, filter="data")  # no absolute paths, no escapes, no devices
        actual = hash_files(staging)
        if actual != files_hash:
            raise WorkerUnfit(f"the bot sent as {files_hash[:12]} unpacks to files hashing to {actual[:12]}")
        staging.chmod(0o755)
        try:
            staging.rename(root / files_hash)
        except OSError:
            if cached_bot(files_hash) is None:  # not a concurrent unpack of the same bot that won the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root / files_hash


# -- the task ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Played:
    """What a match task sends back: the result, the event log's bytes and the worker that played it, and the
    bytes of the log's view (arena/match/matchview.py) when the worker made one."""

    result: JobResult
    log: bytes | None
    worker: str
    view: bytes | None = None


_PLAYING: dict[int, int] = {}
"""The deals this worker process is playing now, each with how many of its matches (a task that Dask was told to
cancel included: Dask cannot stop a running task, so it plays to its end)."""
_PLAYING_LOCK = threading.Lock()


@contextmanager
def _playing(deal: int) -> Iterator[None]:
    with _PLAYING_LOCK:
        _PLAYING[deal] = _PLAYING.get(deal, 0) + 1
    try:
        yield
    finally:
        with _PLAYING_LOCK:
            _PLAYING[deal] -= 1
            if not _PLAYING[deal]:
                del _PLAYING[deal]


def deals_playing(dask_worker: Any = None) -> list[int]:
    """Runs on a worker (``Client.run``, beside its tasks): the deals of the matches it is playing now, whoever
    submitted them."""
    with _PLAYING_LOCK:
        return sorted(_PLAYING)


def play_remote(job: MatchJob, wanted: Requirements) -> Played:
    """The match task: check this worker, put the bots' cached copies in the job, play it with :func:`run_job`
    into a local log, and return the log's bytes with the result."""
    report = worker_report(wanted.sandbox)
    problems = report.problems(wanted)
    if problems:
        raise WorkerUnfit(report.address, "; ".join(problems))
    try:
        missing = [bot.files_hash for bot in job.bots if cached_bot(bot.files_hash) is None]
        root = cache_root()
    except WorkerUnfit as error:
        raise WorkerUnfit(report.address, str(error)) from None
    if missing:
        raise BotsMissing(report.address, ",".join(missing))
    bots = tuple(dataclasses.replace(bot, directory=root / bot.files_hash) for bot in job.bots)
    scratch = Path(tempfile.mkdtemp(prefix="arena-match-"))
    try:
        log_path = scratch / Path(job.log_path).name
        with _playing(deal_of(job)):
            result = run_job(dataclasses.replace(job, bots=bots, log_path=str(log_path)))
        log = log_path.read_bytes() if result.result is not None and log_path.is_file() else None
        view = view_path(log_path)
        made = view.read_bytes() if log is not None and view.is_file() else None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Played(result, log, report.address, made)


# -- the runner's side ------------------------------------------------------------------------------------------


def _distributed() -> Any:
    """Dask's ``distributed`` package; untyped for mypy, and imported only once a cluster is asked for."""
    import distributed

    return distributed


def connect(address: str, security: Any = None) -> tuple[Any, Any]:
    """A client of the cluster at ``address``, and the ``LocalCluster`` it started for ``local:N`` (else None).

    ``tls://`` addresses take their certificates from ``security`` or, by default, from Dask's configuration
    (``DASK_DISTRIBUTED__COMM__TLS__...``; docs/CLUSTER.md).
    """
    distributed = _distributed()
    if address.startswith(LOCAL_PREFIX):
        # The worker processes inherit an ignored SIGINT (Python keeps it ignored): Ctrl-C in a terminal reaches
        # the whole process group, and stopping the workers is the runner's job, not a traceback in each of them.
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            cluster = distributed.LocalCluster(
                n_workers=int(address[len(LOCAL_PREFIX):]), threads_per_worker=1, processes=True,
                host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        try:
            return distributed.Client(cluster), cluster
        except BaseException:
            cluster.close()
            raise
    if address.startswith("tls://") and security is None:
        security = distributed.security.Security()  # from Dask's configuration, which reads the DASK_... variables
        if not (security.tls_ca_file and security.tls_client_cert):
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: tls:// needs certificates; set "
                               "DASK_DISTRIBUTED__COMM__TLS__CA_FILE, DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT "
                               "and DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY (docs/CLUSTER.md)")
    try:
        return distributed.Client(address, security=security, timeout=CONNECT_TIMEOUT_S), None
    except (OSError, TimeoutError, ValueError, TypeError) as error:
        raise SchedulerLost(f"cannot reach the Dask scheduler at {address}: {error}") from None


@dataclass
class ClusterStats:
    """What the progress display and ``--json`` show about the cluster."""

    address: str
    workers: int = 0
    per_worker: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    refused: dict[str, str] = field(default_factory=dict)
    reconnects: int = 0
    """How many times the connection to the scheduler was lost mid-play (each time a new one is sought)."""

    def to_dict(self) -> dict[str, Any]:
        """As ``arena run --json`` and the league server's ``/api/league`` show it."""
        return {"address": self.address, "workers": self.workers,
                "matches_per_worker": dict(sorted(self.per_worker.items())), "refused": dict(self.refused),
                "reconnects": self.reconnects}


def say(message: str) -> None:
    print(f"arena: {message}", file=sys.stderr, flush=True)


class _Runner:
    """One run's client-side state: admitted and refused workers, the window of futures, the bots' blobs."""

    def __init__(self, client: Any, todo: list[MatchJob], wanted: Requirements, stats: ClusterStats,
                 notify: Callable[[str], None], tick: Callable[[], None], one_per_deal: bool = True) -> None:
        self.client = client
        self.tick = tick
        self.queue = DealQueue(todo, one_per_deal)  # schedule order, never two jobs of one deal in flight
        self.wanted = wanted
        self.stats = stats
        self.notify = notify
        self.blobs: dict[str, bytes] = {}
        for job in todo:
            for bot in job.bots:
                if bot.files_hash not in self.blobs:
                    self.blobs[bot.files_hash] = pack_bot(bot)
        self.fit: dict[str, int] = {}  # address -> threads
        self.refused: set[str] = set()
        self.inflight: dict[Any, tuple[MatchJob, frozenset[str]]] = {}  # Dask futures
        self.stored: set[int] = set()

    def admit(self) -> None:
        """Check the workers that joined since last time; forget the ones that left."""
        live = self.client.nthreads()
        for gone in set(self.fit) - set(live):
            del self.fit[gone]
        new = [address for address in live if address not in self.fit and address not in self.refused]
        if new:
            answers = self.client.run(prepare_worker, self.wanted, self.blobs, workers=new, on_error="return")
            for address, answer in answers.items():
                if isinstance(answer, BaseException):
                    self.refuse(address, f"its check failed: {answer!r}")
                    continue
                report, problems = answer
                if problems:
                    self.refuse(address, "; ".join(problems), report.host)
                else:
                    self.fit[address] = report.nthreads
        self.stats.workers = len(self.fit)

    def refuse(self, address: str, why: str, host: str | None = None) -> None:
        self.refused.add(address)
        self.fit.pop(address, None)
        self.stats.refused[address] = why
        self.notify(f"refusing worker {address}{f' ({host})' if host else ''}: {why}")

    def wait_for_workers(self) -> None:
        deadline = time.monotonic() + WORKER_WAIT_S
        while True:
            self.admit()
            if self.fit:
                return
            if time.monotonic() > deadline:
                refused = f" ({len(self.refused)} refused, see above)" if self.refused else ""
                raise ClusterError(f"no fit worker at {self.stats.address} after {WORKER_WAIT_S:.0f} s{refused}")
            self.tick()
            time.sleep(POLL_S)

    def submit(self, job: MatchJob) -> None:
        workers = frozenset(self.fit)
        key = f"arena-match-{job.index}-{uuid.uuid4().hex}"  # readable in the dashboard's task stream
        future = self.client.submit(play_remote, job, self.wanted, key=key, pure=False, workers=sorted(workers),
                                    allow_other_workers=False)
        self.inflight[future] = (job, workers)

    def fill(self) -> None:
        window = WINDOW_PER_THREAD * max(1, sum(self.fit.values()))
        self.queue.workers = max(1, sum(self.fit.values()))  # how many play at once: when a batch's end is near
        while self.queue and len(self.inflight) < window:
            job = self.queue.take()
            if job is None:
                return  # every waiting job's deal is in flight
            self.submit(job)

    def requeue_stranded(self) -> None:
        """Tasks pinned to workers that all left or were refused would wait forever: submit them afresh."""
        for future, (job, workers) in list(self.inflight.items()):
            if not workers & set(self.fit):
                del self.inflight[future]
                future.cancel()
                self.submit(job)

    def hold_busy_deals(self) -> None:
        """Hold back the deals that a worker plays without a future of ours (a match cancelled by an earlier play,
        by a runner that stopped, by a lost scheduler, or another runner's): Dask cannot stop a running task, so
        such a match plays on, and a match of its deal submitted now would play beside it. Asked again while any is
        held, and released once no worker plays it."""
        answers = self.client.run(deals_playing, workers=list(self.fit), on_error="return")
        ours = {deal_of(job) for job, _ in self.inflight.values()}
        busy = {deal for answer in answers.values() if isinstance(answer, list) for deal in answer
                if deal not in ours and self.queue.waits_for(deal)}
        for deal in self.queue.held - busy:
            self.queue.release(deal)
        for deal in busy - self.queue.held:
            self.queue.hold(deal)

    def run(self) -> Iterator[JobResult]:
        wait = _distributed().wait
        self.wait_for_workers()
        self.hold_busy_deals()
        self.fill()
        while self.inflight or self.queue:
            if self.inflight:
                try:
                    done = wait(list(self.inflight), timeout=POLL_S, return_when="FIRST_COMPLETED").done
                except TimeoutError:
                    done = set()
            else:  # every waiting job's deal is still being played by a match not ours: look again soon
                time.sleep(POLL_S)
                done = set()
            self.tick()
            self.check_scheduler()
            for future in done:
                yield from self.settle(future)
            self.admit()
            if not self.fit:
                self.wait_for_workers()
            self.requeue_stranded()
            if self.queue.held:
                self.hold_busy_deals()
            self.fill()

    def check_scheduler(self) -> None:
        if self.client.status not in ("running", "connecting"):
            raise SchedulerLost(f"lost the Dask scheduler at {self.stats.address} (client {self.client.status})")

    def settle(self, future: Any) -> Iterator[JobResult]:
        job, _ = self.inflight.pop(future)
        if future.status == "finished":
            played: Played = future.result()
            self.queue.done(job)  # its match is over and its bots are dead: the deal's next job may go
            if job.index in self.stored:
                return  # never store a match from two attempts
            self.stored.add(job.index)
            self.stats.per_worker[played.worker] += 1
            yield self.keep_log(job, played)
            return
        if future.status == "cancelled":
            if self.client.status != "running":
                raise SchedulerLost(f"lost the Dask scheduler at {self.stats.address}: the connection to it closed")
            self.submit(job)  # cancelled by the scheduler (not by us): play it again
            return
        error = future.exception()
        if isinstance(error, WorkerUnfit) and len(error.args) == 2:
            self.refuse(error.args[0], error.args[1])
            self.submit(job)
        elif isinstance(error, BotsMissing) and len(error.args) == 2:
            self.client.run(prepare_worker, self.wanted, self.blobs, workers=[error.args[0]], on_error="return")
            self.submit(job)
        else:
            self.queue.done(job)
            self.stored.add(job.index)
            yield JobResult(job.index, 1, None, f"on the cluster: {type(error).__name__}: {error}")

    def keep_log(self, job: MatchJob, played: Played) -> JobResult:
        """Write the returned log where the local pool would have (atomically), and point the outcome at it."""
        outcome = played.result.result
        if outcome is None or played.log is None:
            return played.result
        path = Path(job.log_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_bytes(played.log)
        os.replace(partial, path)
        if played.view is not None:
            keep_moved_view(played.view, path)
        return dataclasses.replace(played.result, result=dataclasses.replace(outcome, log_path=path))

    def cancel(self) -> None:
        if self.inflight:
            try:
                self.client.cancel(list(self.inflight), force=True)
            except Exception:  # noqa: BLE001, S110 - whatever a client without its scheduler raises
                pass  # a lost scheduler has nothing left to cancel
            self.inflight.clear()


class Connection:
    """A client of one cluster, kept open for many plays: ``arena run`` plays once, the league server
    (arena/run/league.py) plays each of its batches on the same connection, so a ``local:N`` cluster starts
    once and workers keep the bots they were sent."""

    def __init__(self, address: str, security: Any = None) -> None:
        self.address = address
        self.client, self._local = connect(address, security)

    def play(self, todo: list[MatchJob], stats: ClusterStats, notify: Callable[[str], None] = say,
             tick: Callable[[], None] = lambda: None, one_per_deal: bool = True
             ) -> Generator[JobResult, None, None]:
        """Play ``todo`` and yield each result once, in completion order; closing the generator cancels the
        matches in flight. ``tick`` is called between waits of at most :data:`POLL_S`. Workers are checked (again) at the start of each play; bots they hold are not sent
        twice to the same worker process (they unpack only what their cache lacks)."""
        if not todo:
            return
        runner = _Runner(self.client, todo, requirements(todo[0].sandbox), stats, notify, tick, one_per_deal)
        try:
            yield from runner.run()
        except (OSError, TimeoutError, CancelledError) as error:
            # Only the scheduler cancels futures behind our back, when the connection to it is gone.
            why = "the connection to it closed" if isinstance(error, CancelledError) else str(error)
            logging.getLogger("distributed").setLevel(logging.CRITICAL)  # its reconnect tracebacks add nothing
            raise SchedulerLost(f"lost the Dask scheduler at {self.address}: {why}") from None
        finally:
            runner.cancel()

    def close(self) -> None:
        """Close the client; a local cluster is shut down, which kills its workers and their bots."""
        try:
            self.client.close(timeout=5)
        except Exception:  # noqa: BLE001, S110 - whatever a client without its scheduler raises
            pass  # closing a client whose scheduler is gone may fail; there is nothing left to release
        if self._local is not None:
            self._local.close(timeout=10)

