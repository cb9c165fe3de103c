"""The results store: one SQLite file (WAL) for any number of tournaments.

Schema changes are named, ordered migrations (arena/store/schema.py) recorded in ``_migrations``, each applied
atomically with its record.
Every finished match is written in one transaction (its row and its seats), so a runner killed at any moment
leaves only whole matches behind, and resuming is exact. A match is written as the referee's
:class:`~arena.game.results.MatchResult` and read back as the same (inside a :class:`StoredMatch`), faults with their
reason codes included. Queries for the CLI and the site live here too, so no
template or command touches SQL; the store does SQL and nothing else: the standings' statistics read it through
these queries (arena/stats/standings.py).

Only ``arena run`` opens a store for writing (creating it when the file does not exist); every other command opens
it read-only, so it works on a read-only file and never writes a schema into a file that is not a store. Any SQLite
error, whenever it surfaces (a damaged page is often found only by a query), becomes a :class:`StoreError` naming
the file. A tournament is run by one runner at a time: the runner holds a :class:`Lease` in the store.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from arena import procfs
from arena.game.results import Fault, MatchResult, SeatResult, SeatStats, reason_of
from arena.game.rules import Rules
from arena.schedule import ScheduledMatch
from arena.store.connection import DiskFullError as DiskFullError
from arena.store.connection import LeaseHeldError as LeaseHeldError
from arena.store.connection import StoreError as StoreError
from arena.store.connection import _Connection, _Cursor
from arena.store.connection import disk_full as disk_full
from arena.store.connection import nearly_full as nearly_full
from arena.store.records import Lease as Lease
from arena.store.records import MatchStamp as MatchStamp
from arena.store.records import Rated as Rated
from arena.store.records import StoredMatch as StoredMatch
from arena.store.schema import MIGRATIONS as MIGRATIONS
from arena.store.schema import MOVED

DONE_SEATS = "FROM seats s JOIN matches m ON m.id = s.match_id WHERE m.tournament_id = ? AND m.status = 'done'"
"""The seats of a tournament's finished matches (its id the one parameter), for a query to add to."""
SEALED = ("EXISTS (SELECT 1 FROM matches o WHERE o.tournament_id = m.tournament_id AND o.grp = m.grp "
          "AND o.status != 'done')")
"""Whether match ``m``'s group is sealed (:meth:`Store.sealed_groups`' rule, for a read of a few matches): one
look-up in the index of the matches not done."""
TOURNAMENT_COLUMNS = "id, name, json_remove(config, '$.seed') AS config, config_hash, created_at, finished_at"
"""What a tournament's row shows: never its secret, nor a seed left in the config of a store not yet migrated (read
by a read-only command)."""

READER_CACHE_KIB = 256
"""The page cache of the league server's readers, in KiB (SQLite's default is 2,000): it opens one read-only
connection a web thread (up to anyio's 40), and each filled its cache with as much of the store as it read, the
whole file up to the cap at once by the opening quick_check: memory that grew with the league times the threads
(issue 44). Its pages are read again from the system's file cache: /api/standings' work on a 3,000-match store
took the same CPU with 256. Other readers (one site build, one command) keep SQLite's default."""
COLUMN_BLOCK = 1024
"""Rows read at a time into columns (:meth:`Store.place_columns`)."""
LEASE_SECONDS = 60.0
"""How long a lease lasts without a heartbeat: a holder on another host cannot be checked any other way."""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Store:
    def __init__(self, path: str | Path, readonly: bool = False, cache_kib: int | None = None,
                 check: bool = True) -> None:
        """Open the store at ``path``: read-only, or for writing (``arena run``), which alone creates a store, and
        only where there is no file yet; ``cache_kib``: the connection's page cache (SQLite's default if None).
        Not ``check``: without reading the whole file for damage first, for another connection of a process (or
        its helper's) that opened the file checked already: the server's web threads, its publishes."""
        self.path = Path(path)
        self.readonly = readonly
        new = not self.path.exists()
        if new and readonly:
            raise StoreError(f"{self.path}: no results store here yet (run a tournament first, or pass --db)")
        if not new and self.path.is_file() and self.path.stat().st_size == 0:
            raise StoreError(f"{self.path}: not a usable arena store (an empty file, not a store: delete it or "
                             "pass another --db)")
        try:
            if readonly:
                self.db = self._connect("mode=ro")
                try:
                    self.db.execute("SELECT count(*) FROM sqlite_master")
                except StoreError:
                    # No -shm beside the file and no right to make one (a read-only mount): then no runner can
                    # be writing, and the file can be read as it is.
                    self.db.close()
                    self.db = self._connect("mode=ro&immutable=1")
            else:
                if not new and not (os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)):
                    raise StoreError(f"{self.path}: the store is read-only here; running a tournament writes to it "
                                     "(and beside it)")
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.db = self._connect("mode=rwc")
        except (sqlite3.Error, OSError) as error:
            raise StoreError(f"{self.path}: not a usable arena store ({error})") from None
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA foreign_keys = ON")
        if cache_kib is not None:
            self.db.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
        if not readonly:
            self.db.execute("PRAGMA journal_mode = WAL")  # the site build reads while a runner writes
            self.db.execute("PRAGMA synchronous = NORMAL")
        self._migrate(new)
        self._indexed = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'matches_not_done'").fetchone() is not None
        """Whether the store has the index :data:`SEALED` looks up (a read-only command may read an older store)."""
        if check and not new:
            # A damaged page may lie where one command reads and another does not: every command checks the
            # whole file first, so each says the same thing (a linear read: well under a second for a large store).
            problem = self.db.execute("PRAGMA quick_check(1)").fetchone()[0]
            if problem != "ok":
                raise StoreError(f"{self.path}: not a usable arena store (damaged: {problem})")

    def close(self) -> None:
        self.db.close()

    def _connect(self, mode: str) -> _Connection:
        db = sqlite3.connect(f"{self.path.resolve().as_uri()}?{mode}", uri=True, isolation_level=None, timeout=30,
                             factory=_Connection)
        assert isinstance(db, _Connection)
        db.path = self.path
        return db

    @contextmanager
    def atomic(self) -> Iterator[sqlite3.Connection]:
        """One transaction; rolled back on any exception, including a failed commit."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def _migrate(self, new: bool) -> None:
        tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if new:
            self.db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        elif "_migrations" not in tables:
            raise StoreError(f"{self.path}: not a usable arena store (an SQLite file without arena's tables)")
        self.migrate(MIGRATIONS)

    def migrate(self, migrations: Sequence[tuple[str, str]], prefix: str = "") -> None:
        """Apply the named scripts of a migration set, in order, that the store has not: the store's own
        (:data:`MIGRATIONS`), or another room's over tables of its own (arena/server/authors.py's), whose names
        start with ``prefix``; each atomically with its record in ``_migrations``. A name of the set that this arena
        does not know means a newer arena wrote the store: :class:`StoreError`. A read-only store is only
        checked."""
        applied = {row["name"] for row in self.db.execute("SELECT name FROM _migrations")}
        known = {name for name, _ in migrations}
        ours = {name for name in applied
                if (name.startswith(prefix) if prefix else "/" not in name and name not in MOVED)}
        if ours - known:
            raise StoreError(f"{self.path}: written by a newer arena (migrations {sorted(ours - known)})")
        if self.readonly:
            return  # a reader of an older store reads what there is; the next run migrates it
        for name, script in migrations:
            if name in applied:
                continue
            with self.atomic() as db:
                if db.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone():
                    continue  # another runner opening the store at the same moment applied it
                for statement in script.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT INTO _migrations VALUES (?, ?)", (name, _now()))

    # -- leases -------------------------------------------------------------------------------------------------

    def acquire(self, tournament: str, seconds: float = LEASE_SECONDS, kind: str = "tournament") -> Lease:
        """Hold ``tournament`` for this process, or raise :class:`LeaseHeldError` naming the live holder.

        A holder is dead when its lease expired (it stopped renewing it), or at once when it is a process of this
        host that no longer runs (:func:`arena.procfs.owner_alive`: a reused pid does not pass for it). ``kind``
        (``tournament`` or ``league``) names the run in messages until the store has it (then the store's
        word counts: a league is a league whoever asks)."""
        import uuid  # here: a lease is taken by a runner, never by a command that only reads

        me = procfs.owner()
        with self.atomic():
            kind = self.kind_of(tournament, kind)
            held = self.holder(tournament)
            if held is not None:
                raise LeaseHeldError(f"{kind} {tournament} is being run by {held}")
            lease = Lease(tournament, uuid.uuid4().hex, me.host, me.pid, _now(), kind)
            self.db.execute("INSERT OR REPLACE INTO leases (tournament, token, host, pid, since, expires, started) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (tournament, lease.token, me.host, me.pid, lease.since, time.time() + seconds, me.start_time))
        return lease

    def kind_of(self, tournament: str, unknown: str = "tournament") -> str:
        """``league`` or ``tournament``, as the store has the run named ``tournament``; ``unknown`` if it has none
        (yet)."""
        row = self.db.execute("SELECT config FROM tournaments WHERE name = ?", (tournament,)).fetchone()
        if row is None:
            return unknown
        return "league" if json.loads(row["config"]).get("league") else "tournament"

    def holder(self, tournament: str) -> str | None:
        """Who runs ``tournament`` now (``PID N on HOST since T``), or None if no live runner holds it."""
        held = self.db.execute("SELECT * FROM leases WHERE tournament = ?", (tournament,)).fetchone()
        if held is None or held["expires"] <= time.time() or not procfs.owner_alive(procfs.Owner(
                held["host"], held["pid"], held["started"])):
            return None
        return f"PID {held['pid']} on {held['host']} since {held['since']}"

    def renew(self, lease: Lease, seconds: float = LEASE_SECONDS) -> None:
        """Push the lease's expiry on; :class:`LeaseHeldError` if it was lost (it expired and another took it)."""
        renewed = self.db.execute("UPDATE leases SET expires = ? WHERE tournament = ? AND token = ?",
                                  (time.time() + seconds, lease.tournament, lease.token)).rowcount
        if not renewed:
            raise LeaseHeldError(f"{self.path}: lost the hold on {lease.kind} {lease.tournament} (it expired and "
                                 "another runner took it): stopping")

    def release(self, lease: Lease) -> None:
        self.db.execute("DELETE FROM leases WHERE tournament = ? AND token = ?", (lease.tournament, lease.token))

    # -- writing ------------------------------------------------------------------------------------------------

    def tournament(self, name: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.db.execute(f"SELECT {TOURNAMENT_COLUMNS} FROM tournaments WHERE name = ?",
                                                  (name,)).fetchone()
        return row

    def secret(self, tid: int) -> str | None:
        """The run's secret (docs/SECURITY.md): what its deals follow from. Only a runner reads it; nothing shows
        it."""
        found: str | None = self.db.execute("SELECT secret FROM tournaments WHERE id = ?", (tid,)).fetchone()[0]
        return found

    def sealed_groups(self, tid: int) -> frozenset[int]:
        """The groups of the run that can still be played: those with a match pending or failed (a failed one is
        tried again). The one rule of what may be shown: a group's deal seeds, event logs and replays are public
        once it is not sealed, never before (a bot that learnt them would know the hands of the rotations still to
        play). A group with every match done stays done: nothing is appended to a group once scheduled."""
        return frozenset(grp for (grp,) in self._tuples(
            "SELECT DISTINCT grp FROM matches WHERE tournament_id = ? AND status != 'done'", (tid,)))

    def create_tournament(self, name: str, config: dict[str, Any], config_hash: str,
                          bots: Sequence[dict[str, Any]], schedule: Sequence[ScheduledMatch],
                          secret: str | None = None) -> int:
        """The tournament, its bots and every scheduled match (pending) in one transaction. The config is stored
        without its seed, which is kept as the ``secret`` (given, or the config's seed as text)."""
        shown = {key: value for key, value in config.items() if key != "seed"}
        if secret is None and config.get("seed") is not None:
            secret = str(config["seed"])
        with self.atomic() as db:
            tid = db.execute("INSERT INTO tournaments (name, config, config_hash, created_at, secret) "
                             "VALUES (?, ?, ?, ?, ?)",
                             (name, json.dumps(shown, sort_keys=True), config_hash, _now(), secret)).lastrowid
            assert tid is not None
            bot_ids = [_insert_bot(db, tid, slot, bot) for slot, bot in enumerate(bots)]
            _insert_matches(db, tid, schedule, bot_ids)
        return tid

    def add_bot(self, tid: int, bot: dict[str, Any]) -> int:
        """A bot joins a run that is under way (a league's new version), in the next slot, entering the field at
        the next group; its id."""
        with self.atomic() as db:
            slot = db.execute("SELECT coalesce(max(slot) + 1, 0) FROM bots WHERE tournament_id = ?",
                              (tid,)).fetchone()[0]
            bot_id = _insert_bot(db, tid, slot, bot)
            db.execute("UPDATE bots SET entered_group = (SELECT coalesce(max(grp) + 1, 0) FROM matches WHERE "
                       "tournament_id = ?) WHERE id = ?", (tid, bot_id))
            return bot_id

    def set_active(self, tid: int, active: Sequence[int]) -> None:
        """The league's field is now ``active`` (bot ids): others leave it at the next group, these are (again)
        in it. Writes only when something changed."""
        now = set(active)
        changed = [row["id"] for row in self.bots(tid) if is_active(row) != (row["id"] in now)]
        if not changed:
            return
        with self.atomic() as db:
            next_group = db.execute("SELECT coalesce(max(grp) + 1, 0) FROM matches WHERE tournament_id = ?",
                                    (tid,)).fetchone()[0]
            db.executemany("UPDATE bots SET left_group = ? WHERE id = ?",
                           [(None if bot in now else next_group, bot) for bot in changed])

    def group_members(self, tid: int, first_group: int = 0) -> list[tuple[int, int]]:
        """(group, bot id) of every scheduled group from ``first_group`` on, in group order: who sat together."""
        return self._tuples("SELECT m.grp, s.bot_id FROM matches m JOIN seats s ON s.match_id = m.id "
                            "WHERE m.tournament_id = ? AND m.rotation = 0 AND m.grp >= ? ORDER BY m.grp, s.seat",
                            (tid, first_group))

    def think_seconds(self, tid: int) -> dict[int, tuple[int, float]]:
        """Per bot id, its finished matches with a think time kept (0009_seat_think) and its own seconds of
        thinking in them, in all."""
        return {bot: (count, float(total or 0.0)) for bot, count, total in self._tuples(
            "SELECT s.bot_id, count(*), sum(s.think_ms) / 1000.0 FROM matches m JOIN seats s ON s.match_id = m.id "
            "WHERE m.tournament_id = ? AND m.status = 'done' AND s.think_ms IS NOT NULL GROUP BY s.bot_id", (tid,))}

    def append_matches(self, tid: int, matches: Sequence[ScheduledMatch]) -> None:
        """More scheduled matches (pending) for a run under way; their ``bots`` are the bots' slots."""
        with self.atomic() as db:
            bot_ids = dict(db.execute("SELECT slot, id FROM bots WHERE tournament_id = ?", (tid,)).fetchall())
            _insert_matches(db, tid, matches, bot_ids)

    def schedule_end(self, tid: int) -> tuple[int, int]:
        """The schedule index and the group number the next appended match takes."""
        idx, grp = self.db.execute("SELECT coalesce(max(idx) + 1, 0), coalesce(max(grp) + 1, 0) FROM matches "
                                   "WHERE tournament_id = ?", (tid,)).fetchone()
        return int(idx), int(grp)

    def scheduled(self, tid: int, *statuses: str) -> list[ScheduledMatch]:
        """The stored schedule (of the matches with these statuses), its ``bots`` the bots' slots."""
        marks = ",".join("?" * len(statuses))
        matches: dict[int, tuple[int, int, int]] = {}
        seated: dict[int, list[int]] = {}
        for idx, grp, rotation, seed, slot in self._tuples(
                "SELECT m.idx, m.grp, m.rotation, m.seed, b.slot FROM matches m JOIN seats s ON s.match_id = m.id "
                f"JOIN bots b ON b.id = s.bot_id WHERE m.tournament_id = ? AND m.status IN ({marks}) "
                "ORDER BY m.idx, s.seat", (tid, *statuses)):
            matches[idx] = (grp, rotation, seed)
            seated.setdefault(idx, []).append(slot)
        return [ScheduledMatch(idx, *match, tuple(seated[idx])) for idx, match in matches.items()]

    def match_ids(self, tid: int, indices: Sequence[int]) -> tuple[int, ...]:
        """The ids of these matches (by schedule index), in that order."""
        ids = dict(self._tuples(f"SELECT idx, id FROM matches WHERE tournament_id = ? AND idx IN "
                                f"({','.join('?' * len(indices))})", (tid, *indices)))
        return tuple(ids[index] for index in indices)

    def scheduled_counts(self, tid: int) -> dict[int, int]:
        """Matches per bot id, played or pending (an infrastructure failure is not a match played)."""
        return dict(self.db.execute(
            "SELECT s.bot_id, count(*) FROM seats s JOIN matches m ON m.id = s.match_id "
            "WHERE m.tournament_id = ? AND m.status != 'failed' GROUP BY s.bot_id", (tid,)).fetchall())

    def delete_tournament(self, name: str) -> None:
        with self.atomic() as db:
            db.execute("DELETE FROM tournaments WHERE name = ?", (name,))

    def bots(self, tid: int) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM bots WHERE tournament_id = ? ORDER BY slot", (tid,)).fetchall()

    def matches_with_status(self, tid: int, *statuses: str) -> list[sqlite3.Row]:
        marks = ",".join("?" * len(statuses))
        return self.db.execute(f"SELECT * FROM matches WHERE tournament_id = ? AND status IN ({marks}) ORDER BY idx",
                               (tid, *statuses)).fetchall()

    def record_match(self, tid: int, idx: int, result: MatchResult, attempts: int) -> None:
        with self.atomic() as db:
            self._record_match(db, tid, idx, result, attempts)

    def record_results(self, tid: int, results: Sequence[tuple[int, MatchResult | None, int, str]]) -> None:
        """Record several matches in one transaction, each ``(idx, result, attempts, error)`` (no result: failed
        with ``error``): a chain of matches played by the same processes is stored whole or not at all."""
        with self.atomic() as db:
            for idx, result, attempts, error in results:
                if result is None:
                    self._record_failure(db, tid, idx, error, attempts)
                else:
                    self._record_match(db, tid, idx, result, attempts)

    @staticmethod
    def _record_match(db: sqlite3.Connection, tid: int, idx: int, result: MatchResult, attempts: int) -> None:
        mid = db.execute("SELECT id FROM matches WHERE tournament_id = ? AND idx = ?", (tid, idx)).fetchone()[0]
        db.execute("UPDATE matches SET status = 'done', attempts = ?, rounds = ?, turns = ?, termination = ?, "
                   "duration_s = ?, log_path = ?, error = NULL, finished_at = ? WHERE id = ?",
                   (attempts, result.rounds, result.turns, result.termination, result.duration_s,
                    None if result.log_path is None else str(result.log_path), _now(), mid))
        db.executemany(
            "UPDATE seats SET place = ?, score = ?, fault_kind = ?, fault_reason = ?, fault_detail = ?, "
            "fault_round = ?, fault_line = ?, fault_exit_status = ?, fault_signal = ?, stderr_tail = ?, "
            "rounds = ?, turns = ?, points = ?, declares_ok = ?, declares_failed = ?, bank_left_ms = ?, "
            "think_ms = ? WHERE match_id = ? AND seat = ?",
            [(p.place, p.score, *_fault_columns(p.fault), p.stderr_tail, p.stats.rounds, p.stats.turns,
              p.stats.points, p.stats.declares_ok, p.stats.declares_failed, p.bank_left_ms, p.think_ms, mid, p.seat)
             for p in result.players])

    def clear_old_stderr(self, tid: int, keep: int) -> int:
        """Forget the stderr of each bot's seats but those in its latest ``keep`` matches (by match id, which grows
        as matches are scheduled) in tournament ``tid``; how many seats lost theirs. The seats that still have one
        are always a bot's latest, so each pass ranks only those: about ``keep`` per bot plus the new ones."""
        with self.atomic() as db:
            return db.execute(
                "UPDATE seats SET stderr_tail = NULL WHERE rowid IN (SELECT id FROM ("
                "SELECT s.rowid AS id, row_number() OVER (PARTITION BY s.bot_id ORDER BY s.match_id DESC) AS newer "
                "FROM seats s JOIN bots b ON b.id = s.bot_id WHERE b.tournament_id = ? AND s.stderr_tail IS NOT NULL"
                ") WHERE newer > ?)", (tid, keep)).rowcount

    def record_failure(self, tid: int, idx: int, error: str, attempts: int) -> None:
        with self.atomic() as db:
            self._record_failure(db, tid, idx, error, attempts)

    @staticmethod
    def _record_failure(db: sqlite3.Connection, tid: int, idx: int, error: str, attempts: int) -> None:
        db.execute("UPDATE matches SET status = 'failed', attempts = ?, error = ?, finished_at = ? "
                   "WHERE tournament_id = ? AND idx = ?", (attempts, error, _now(), tid, idx))

    def drop_matches(self, tid: int, indices: Iterable[int]) -> None:
        """Delete these matches (by schedule index), played or not: a test or tournament that stops itself drops
        the matches after its decision, so what is stored is the same whatever ran in parallel."""
        with self.atomic() as db:
            db.executemany("DELETE FROM matches WHERE tournament_id = ? AND idx = ?",
                           [(tid, idx) for idx in indices])

    def finish(self, tid: int, history: Sequence[tuple[int, Mapping[int, Rated]]], since: int = 0) -> None:
        """Replace the tournament's rating history from schedule index ``since`` on (recomputed in schedule order)
        and mark it finished if nothing is left to play."""
        with self.atomic() as db:
            db.execute("DELETE FROM ratings WHERE tournament_id = ? AND match_idx >= ?", (tid, since))
            db.executemany("INSERT INTO ratings VALUES (?, ?, ?, ?, ?)",
                           [(tid, bot, idx, r.mu, r.sigma) for idx, ratings in history for bot, r in ratings.items()])
            pending = db.execute("SELECT count(*) FROM matches WHERE tournament_id = ? AND status != 'done'",
                                 (tid,)).fetchone()[0]
            db.execute("UPDATE tournaments SET finished_at = ? WHERE id = ?", (None if pending else _now(), tid))

    def append_ratings(self, tid: int, history: Sequence[tuple[int, Mapping[int, Rated]]]) -> None:
        """Ratings after further matches, each after the last one stored (a run rated as it goes)."""
        with self.atomic() as db:
            db.executemany("INSERT INTO ratings VALUES (?, ?, ?, ?, ?)",
                           [(tid, bot, idx, r.mu, r.sigma) for idx, ratings in history for bot, r in ratings.items()])

    def reopen(self, tid: int) -> None:
        """Mark the run unfinished: a league is never finished, even between two batches."""
        with self.atomic() as db:
            db.execute("UPDATE tournaments SET finished_at = NULL WHERE id = ?", (tid,))

    # -- reading ------------------------------------------------------------------------------------------------

    def tournaments(self) -> list[sqlite3.Row]:
        return self.db.execute(f"SELECT {TOURNAMENT_COLUMNS} FROM tournaments ORDER BY id").fetchall()

    def latest_tournament(self) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.db.execute(
            f"SELECT {TOURNAMENT_COLUMNS} FROM tournaments ORDER BY id DESC LIMIT 1").fetchone()
        return row

    def matches(self, tid: int, first: int | None = None, last: int | None = None,
                stderr: bool = True) -> list[StoredMatch]:
        """The tournament's matches in schedule order (those of schedule index ``first`` to ``last``, both
        included, when given), each with its result once done (two queries); without the seats' stderr tails
        unless ``stderr`` (what a public page may show)."""
        where, key = "m.tournament_id = ?", [tid]
        for bound, given in (("m.idx >= ?", first), ("m.idx <= ?", last)):
            if given is not None:
                where, key = f"{where} AND {bound}", [*key, given]
        return self._stored(where, key, stderr)

    def match(self, match_id: int) -> StoredMatch | None:
        found = self._stored("m.id = ?", (match_id,))
        return found[0] if found else None

    def match_stamps(self, tid: int) -> list[MatchStamp]:
        """Every match of the tournament in schedule order, without results (two queries, no join)."""
        seats: dict[int, list[int]] = defaultdict(list)
        for match_id, bot_id in self._tuples(
                "SELECT s.match_id, s.bot_id FROM matches m JOIN seats s ON s.match_id = m.id "
                "WHERE m.tournament_id = ? ORDER BY m.idx, s.seat", (tid,)):
            seats[match_id].append(bot_id)
        sealed = self.sealed_groups(tid)
        return [MatchStamp(match_id, idx, seed, group, status, attempts, error, finished_at,
                           tuple(seats[match_id]), log_path, group in sealed)
                for match_id, idx, seed, group, status, attempts, error, finished_at, log_path in self._tuples(
                    "SELECT id, idx, seed, grp, status, attempts, error, finished_at, log_path FROM matches "
                    "WHERE tournament_id = ? ORDER BY idx", (tid,))]

    def _stored(self, where: str, key: Sequence[Any], stderr: bool = True) -> list[StoredMatch]:
        rows = self._tuples(
            f"SELECT m.id, t.name, m.idx, m.seed, m.status, m.attempts, m.error, m.finished_at, t.config, "
            f"m.termination, m.rounds, m.turns, m.duration_s, m.log_path, m.tournament_id, m.grp, "
            f"{SEALED if self._indexed else 'NULL'} FROM matches m JOIN tournaments t "
            f"ON t.id = m.tournament_id WHERE {where} ORDER BY m.idx", key)
        seats: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
        # In the matches' order (their index), so that SQLite need not sort; seat order within a match.
        for seat in self._tuples(
                f"SELECT s.match_id, s.bot_id, s.seat, b.name, b.files_hash, s.place, s.score, s.rounds, s.turns, "
                f"s.points, s.declares_ok, s.declares_failed, {'s.stderr_tail' if stderr else 'NULL'}, "
                f"s.bank_left_ms, s.fault_reason, s.fault_detail, s.fault_round, s.fault_line, s.fault_exit_status, "
                f"s.fault_signal, s.think_ms FROM matches m JOIN seats s ON s.match_id = m.id JOIN bots b ON b.id = s.bot_id "
                f"WHERE {where} ORDER BY m.idx, s.seat", key):
            seats[seat[0]].append(seat)
        rules: dict[str, Rules] = {}  # one per tournament, shared by its matches
        found = []
        groups: dict[int, frozenset[int]] = {}  # a store read before its index existed: each run's, read once
        for (match_id, tournament, idx, seed, status, attempts, error, finished_at, config, termination, rounds, turns,
             duration_s, log_path, tid, group, sealed) in rows:
            if sealed is None:
                if tid not in groups:
                    groups[tid] = self.sealed_groups(tid)
                sealed = group in groups[tid]
            if config not in rules:
                rules[config] = Rules.from_dict(json.loads(config).get("rules", {}))
            mine = seats[match_id]
            result = None
            if status == "done":
                result = MatchResult(
                    seed=seed, rules=rules[config], termination=termination, rounds=rounds, turns=turns,
                    players=tuple(_seat_result(s) for s in mine), duration_s=duration_s,
                    log_path=None if log_path is None else Path(log_path))
            found.append(StoredMatch(match_id, tournament, idx, seed, status, attempts, tuple(s[1] for s in mine),
                                     tuple(s[3] for s in mine), result, error, finished_at, bool(sealed)))
        return found

    def _tuples(self, sql: str, parameters: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The rows of a bulk read as plain tuples, all at once: read by position rather than by name (a Row looks
        a name up among its columns, and a site build reads tens of thousands of rows), and by one call rather
        than one call of the error-translating cursor a row."""
        cursor = self.db.cursor(_Cursor)
        cursor.row_factory = None
        rows: list[tuple[Any, ...]] = cursor.execute(sql, parameters).fetchall()
        return rows

    def status_counts(self, tid: int) -> dict[str, int]:
        """How many matches are pending, done and failed."""
        return dict(self.db.execute("SELECT status, count(*) FROM matches WHERE tournament_id = ? GROUP BY status",
                                    (tid,)).fetchall())

    def ordered_places(self, tid: int, after: int = -1) -> list[tuple[Any, ...]]:
        """(schedule index, bot, place) of every seat of every finished match after schedule index ``after``, in
        schedule and seat order: what the rater reads (arena/stats/standings.py's rated_matches)."""
        return self._tuples(
            "SELECT m.idx, s.bot_id, s.place FROM matches m JOIN seats s ON s.match_id = m.id "
            "WHERE m.tournament_id = ? AND m.idx > ? AND m.status = 'done' ORDER BY m.idx, s.seat", (tid, after))

    def latest_ratings(self, tid: int) -> dict[int, tuple[float, float]]:
        """Per bot, its latest stored rating as (mu, sigma)."""
        # Per bot, its latest rating by two seeks in the primary key, not a look at every rating row (one a seat):
        # CROSS JOIN keeps SQLite from choosing to walk the ratings first.
        return {bot_id: (mu, sigma) for bot_id, mu, sigma in self._tuples(
            "SELECT r.bot_id, r.mu, r.sigma FROM bots b CROSS JOIN ratings r ON r.tournament_id = b.tournament_id "
            "AND r.bot_id = b.id AND r.match_idx = (SELECT max(match_idx) FROM ratings q "
            "WHERE q.tournament_id = b.tournament_id AND q.bot_id = b.id) WHERE b.tournament_id = ?", (tid,))}

    def rated_indices(self, tid: int) -> list[int]:
        """The schedule indices that have stored ratings, in order."""
        return [idx for idx, in self._tuples(
            "SELECT DISTINCT match_idx FROM ratings WHERE tournament_id = ? ORDER BY match_idx", (tid,))]

    def ratings_before(self, tid: int, before: int) -> dict[int, tuple[float, float]]:
        """Per bot, its latest stored rating (mu, sigma) from a match before schedule index ``before``."""
        return {bot_id: (mu, sigma) for bot_id, mu, sigma in self._tuples(
            "SELECT r.bot_id, r.mu, r.sigma FROM ratings r WHERE r.tournament_id = ? AND r.match_idx = ("
            "SELECT max(match_idx) FROM ratings q WHERE q.tournament_id = r.tournament_id AND q.bot_id = r.bot_id "
            "AND q.match_idx < ?)", (tid, before))}

    def rating_rows(self, tid: int) -> list[tuple[Any, ...]]:
        """(bot, schedule index, mu, sigma) of every stored rating, in schedule order."""
        return self._tuples(
            "SELECT bot_id, match_idx, mu, sigma FROM ratings WHERE tournament_id = ? ORDER BY match_idx", (tid,))

    def rating_prior(self, tid: int) -> tuple[float, float]:
        """(mu, sigma) of a bot's rating before its first match: the prior of the tournament's stored config."""
        rating = json.loads(self.db.execute("SELECT config FROM tournaments WHERE id = ?", (tid,)).fetchone()[0])
        return float(rating["rating"]["mu"]), float(rating["rating"]["sigma"])

    def bot_lines(self, tid: int) -> list[tuple[int, str, bool]]:
        """(id, name, whether in the run's field) of each bot, in slot order."""
        return [(row["id"], row["name"], is_active(row)) for row in self.bots(tid)]

    def bot_totals(self, tid: int) -> list[tuple[Any, ...]]:
        """Per bot with a finished match: (bot, matches, wins, sum of places, points, rounds, declares ok,
        declares failed) over its finished matches."""
        # The totals summed by SQLite, in C: a loop in Python over a large field's seats cost seconds.
        return self._tuples(
            "SELECT s.bot_id, count(*), sum(s.place = 1), sum(s.place), sum(s.points), sum(s.rounds), "
            f"sum(s.declares_ok), sum(s.declares_failed) {DONE_SEATS} GROUP BY s.bot_id", (tid,))

    def fault_counts(self, tid: int) -> list[tuple[Any, ...]]:
        """(bot, fault kind, how many) over the finished matches, by bot and kind."""
        return self._tuples(
            f"SELECT s.bot_id, s.fault_kind, count(*) {DONE_SEATS} AND s.fault_kind IS NOT NULL "
            "AND s.fault_kind != '' GROUP BY s.bot_id, s.fault_kind ORDER BY s.bot_id, s.fault_kind", (tid,))

    def finished_places(self, tid: int) -> list[tuple[Any, ...]]:
        """(match, bot, place) of every seat of every finished match: what a head-to-head table counts."""
        return self._tuples(
            "SELECT s.match_id, s.bot_id, s.place FROM seats s JOIN matches m ON m.id = s.match_id "
            "WHERE m.tournament_id = ? AND m.status = 'done'", (tid,))

    def match_list(self, tid: int, bot: str | None = None) -> list[dict[str, Any]]:
        """Every match with its seats, in schedule order, as ``arena matches --json`` gives them (with ``bot``, only
        that bot's)."""
        # Plain tuples read by position, a match's fields once: a big league's site lists 400,000 seats.
        found: list[dict[str, Any]] = []
        entry: dict[str, Any] = {"id": None}
        sealed = self.sealed_groups(tid)  # their deal seeds are not shown yet
        for (match_id, idx, seed, status, rounds, turns, termination, duration_s, error, seat, name, place, score,
             fault, group) in self._tuples(
                "SELECT m.id, m.idx, m.seed, m.status, m.rounds, m.turns, m.termination, m.duration_s, m.error, "
                "s.seat, b.name, s.place, s.score, s.fault_kind, m.grp FROM matches m "
                "JOIN seats s ON s.match_id = m.id "
                "JOIN bots b ON b.id = s.bot_id WHERE m.tournament_id = ? ORDER BY m.idx, s.seat", (tid,)):
            if entry["id"] != match_id:  # a match's seats are read together (ordered by idx, idx unique)
                entry = {
                    "id": match_id, "index": idx, "seed": None if group in sealed else seed, "status": status,
                    "rounds": rounds, "turns": turns,
                    "termination": termination, "duration_s": duration_s, "error": error, "players": []}
                found.append(entry)
            entry["players"].append({"seat": seat, "bot": name, "place": place, "score": score, "fault": fault})
        if bot is not None:
            found = [m for m in found if any(p["bot"] == bot for p in m["players"])]
        return found

    def shared_wins(self, tid: int) -> Counter[int]:
        """Per bot, the finished matches it won with another seat placed first too (a shared win)."""
        return Counter(dict(self._tuples(
            "SELECT s.bot_id, count(*) FROM matches m JOIN seats s ON s.match_id = m.id "
            "WHERE m.tournament_id = ? AND m.status = 'done' AND s.place = 1 AND "
            "(SELECT count(*) FROM seats o WHERE o.match_id = s.match_id AND o.place = 1) > 1 GROUP BY s.bot_id",
            (tid,))))

    def seat_totals(self, tid: int) -> dict[tuple[int, int], tuple[int, int, int]]:
        """(bot, seat) -> (finished matches, wins, the sum of its places) over the tournament."""
        return {(bot_id, seat): (matches, wins, place_sum) for bot_id, seat, matches, wins, place_sum in self._tuples(
            "SELECT s.bot_id, s.seat, count(*), sum(s.place = 1), sum(s.place) FROM matches m "
            "JOIN seats s ON s.match_id = m.id WHERE m.tournament_id = ? AND m.status = 'done' "
            "GROUP BY s.bot_id, s.seat", (tid,))}

    def faulted_seats(self, tid: int) -> list[tuple[int, int]]:
        """(schedule index, bot) of every seat that faulted in a finished match, in schedule order."""
        return self._tuples(
            "SELECT m.idx, s.bot_id FROM matches m JOIN seats s ON s.match_id = m.id WHERE m.tournament_id = ? AND "
            "m.status = 'done' AND s.fault_reason IS NOT NULL ORDER BY m.idx, s.seat", (tid,))

    def matches_by_id(self, ids: Sequence[int], stderr: bool = True) -> list[StoredMatch]:
        """The matches with these row ids, in schedule order."""
        found: list[StoredMatch] = []
        for start in range(0, len(ids), 500):  # within SQLite's limit on a statement's parameters
            part = ids[start:start + 500]
            found += self._stored(f"m.id IN ({','.join('?' * len(part))})", part, stderr)
        return found

    def place_columns(self, tid: int, before_group: int | None = None) -> tuple[array[int], ...]:
        """Every seat of every finished match as four columns (group, bot, place, match), in schedule and seat
        order, without an object per seat: what the fit and the bootstrap read (arena/stats/standings.py's
        seat_columns); with ``before_group``, only the seats of the groups numbered below it.

        Read a block of rows at a time into arrays of machine integers: a league's server works them out after
        every batch, and a tuple and its numbers per seat, all at once, peaked at 0.7 MB a 1,000 matches in the
        Python heap, which keeps an arena for as long as anything else allocated in it meanwhile lives."""
        columns = (array("q"), array("q"), array("q"), array("q"))
        cursor = self.db.cursor(_Cursor)
        cursor.row_factory = None
        cursor.execute("SELECT m.grp, s.bot_id, s.place, m.id FROM matches m JOIN seats s ON s.match_id = m.id "
                       "WHERE m.tournament_id = ? AND m.status = 'done' AND m.grp < ? ORDER BY m.idx, s.seat",
                       (tid, math.inf if before_group is None else before_group))
        while rows := cursor.fetchmany(COLUMN_BLOCK):
            for column, values in zip(columns, zip(*rows)):
                column.extend(values)
        return columns

    def index_seats(self, tid: int) -> list[tuple[int, int, int, int, str | None, int, int, int, str]]:
        """Every seat of every finished match as (match, bot, place, score, fault reason, the seat's rounds, the
        match's rounds, turns and termination), in schedule and seat order: what the site's match index holds of
        each (one query, no stats or stderr)."""
        return [(match_id, bot_id, place, score, reason, seat_rounds or 0, rounds or 0, turns or 0, ended or "")
                for match_id, bot_id, place, score, reason, seat_rounds, rounds, turns, ended in self._tuples(
            "SELECT m.id, s.bot_id, s.place, s.score, s.fault_reason, s.rounds, m.rounds, m.turns, m.termination "
            "FROM matches m JOIN seats s ON s.match_id = m.id "
            "WHERE m.tournament_id = ? AND m.status = 'done' ORDER BY m.idx, s.seat", (tid,))]

    def pair_seats(self, tid: int, bot_ids: Sequence[int] | None = None) -> list[tuple[int, int, int, int | None,
                                                                                      int | None, str | None]]:
        """Every seat of every finished match (of the bots ``bot_ids`` only, if given) as (match, seat, bot,
        place, think time in ms or None, fault kind or None), in schedule and seat order: what the pages of two bots
        side by side show of their shared matches (one query, no stats or stderr)."""
        among = "" if bot_ids is None else f" AND s.bot_id IN ({','.join('?' * len(bot_ids))})"
        return self._tuples(
            "SELECT m.id, s.seat, s.bot_id, s.place, s.think_ms, s.fault_kind FROM matches m "
            f"JOIN seats s ON s.match_id = m.id WHERE m.tournament_id = ? AND m.status = 'done'{among} "
            "ORDER BY m.idx, s.seat", (tid, *(bot_ids or ())))

    # -- what the server reads ---------------------------------------------------------------------------------

    def recent_seats(self, tid: int, bot_ids: Sequence[int], limit: int) -> list[dict[str, Any]]:
        """The latest ``limit`` finished seats of these bots in the tournament, newest first, with faults and
        stderr tails: what an author's own page shows (the caller makes sure they are that author's bots)."""
        if not bot_ids:
            return []
        marks = ",".join("?" * len(bot_ids))
        rows = self.db.execute(
            "SELECT m.id, m.idx, m.finished_at, s.seat, b.name, s.place, s.score, s.fault_kind, s.fault_detail, "
            "s.fault_round, s.stderr_tail FROM seats s JOIN matches m ON m.id = s.match_id "
            "JOIN bots b ON b.id = s.bot_id "
            f"WHERE m.tournament_id = ? AND m.status = 'done' AND s.bot_id IN ({marks}) ORDER BY m.idx DESC LIMIT ?",
            (tid, *bot_ids, limit)).fetchall()
        return [{"match": row["id"], "index": row["idx"], "finished_at": row["finished_at"], "bot": row["name"],
                 "seat": row["seat"], "place": row["place"], "score": row["score"],
                 "fault": None if row["fault_kind"] is None else {
                     "kind": row["fault_kind"], "detail": row["fault_detail"], "round": row["fault_round"]},
                 "stderr_tail": row["stderr_tail"]} for row in rows]

    def last_finished(self, tid: int) -> str | None:
        """When the tournament's latest finished match finished, or None before the first."""
        found: str | None = self.db.execute(
            "SELECT max(finished_at) FROM matches WHERE tournament_id = ? AND status = 'done'", (tid,)).fetchone()[0]
        return found


def is_active(bot: sqlite3.Row) -> bool:
    """Whether a bot row is in its run's field (in a store read before 0005_league_activity, every bot is)."""
    try:
        return bot["left_group"] is None
    except IndexError:
        return True


def entered_group(bot: sqlite3.Row) -> int:
    """The group number at which a bot row entered its run's field (0: from the start)."""
    try:
        return int(bot["entered_group"] or 0)
    except IndexError:
        return 0


def _insert_bot(db: sqlite3.Connection, tid: int, slot: int, bot: dict[str, Any]) -> int:
    bot_id = db.execute("INSERT INTO bots (tournament_id, slot, name, directory, files_hash, manifest) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (tid, slot, bot["name"], bot["directory"], bot["files_hash"], json.dumps(bot))).lastrowid
    assert bot_id is not None
    return bot_id


def _insert_matches(db: sqlite3.Connection, tid: int, matches: Sequence[ScheduledMatch],
                    bot_ids: Sequence[int] | dict[int, int]) -> None:
    for match in matches:
        mid = db.execute("INSERT INTO matches (tournament_id, idx, grp, rotation, seed) VALUES (?, ?, ?, ?, ?)",
                         (tid, match.index, match.group, match.rotation, match.seed)).lastrowid
        db.executemany("INSERT INTO seats (match_id, seat, bot_id) VALUES (?, ?, ?)",
                       [(mid, seat, bot_ids[slot]) for seat, slot in enumerate(match.bots)])


def _fault_columns(fault: Fault | None) -> tuple[Any, ...]:
    """The seats columns of a fault, in the order record_match writes them."""
    if fault is None:
        return (None,) * 7
    return (fault.kind.value, fault.reason.value, fault.detail, fault.round, fault.line, fault.exit_status,
            fault.signal)


def _seat_result(row: tuple[Any, ...]) -> SeatResult:
    """A seat as :meth:`Store._stored` reads it (its match and bot, then seat, name, files hash, place, score,
    the stats, stderr, bank, the fault's columns and the think time)."""
    (_, _, seat, name, files_hash, place, score, rounds, turns, points, declares_ok, declares_failed, stderr_tail,
     bank_left_ms, fault_reason, fault_detail, fault_round, fault_line, fault_exit_status, fault_signal,
     think_ms) = row
    fault = None
    if fault_reason is not None:
        fault = Fault(reason_of(fault_reason), fault_detail or "", fault_round, fault_line, fault_exit_status,
                      fault_signal)
    return SeatResult(
        seat=seat, name=name, files_hash=files_hash, place=place, score=score,
        stats=SeatStats(rounds, turns, points, declares_ok, declares_failed),
        fault=fault, stderr_tail=stderr_tail or "",
        bank_left_ms=bank_left_ms or 0,  # rows stored before 0002_fault_reasons did not keep it
        think_ms=think_ms or 0)  # nor before 0009_seat_think

