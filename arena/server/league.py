"""The continuous league: its ``league:`` config, and the loop that keeps scheduling and playing it.

A league is a tournament in the store like any other (named by its config), so ``arena standings``, ``matches``
and ``show`` work on it; what differs is that its bots and matches are not fixed up front. Each batch:

1. **entrants**: the config's entries are resolved again (``registry:*`` finds the versions accepted since the last
   batch); a new version gets a new bot row, named ``NAME@VERSION``; with ``versions: latest`` (the default) an
   author's older versions stop being scheduled (they keep their rows and results);
2. **schedule**: ``groups_per_batch`` duplicate-deal groups are appended (one deal seed, one match per seat
   rotation, exactly like a tournament's). Who sits in a group: the *anchor* is the active bot whose rating is
   least certain (highest TrueSkill sigma; ties: fewest matches), and the other seats go to the bots that have
   played least (matches scheduled so far, ties: highest sigma), any remaining tie broken by a shuffle seeded from
   the config's seed and the group number. Why: a new version starts at the prior's sigma, the highest there is, so
   it anchors every group until its sigma has come down to the field's, which is what "its rating settles
   quickly" means; filling the other seats by fewest matches keeps the whole field sampled evenly, so no old bot's
   rating goes stale and no pair meets far more than the others;
3. **play** the pending matches on a process pool kept for the life of the league (the same :func:`run_job` as
   ``arena run``), storing each as it finishes;
4. **rate** every finished match in schedule order (the same TrueSkill as a tournament), and publish the site.

Everything the loop needs is in the store, so a restart (even after ``kill -9``) resumes: the pending matches of
the last batch are played first, then scheduling goes on where it stopped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import multiprocessing
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from arena.build import DEFAULT_BUILD_LIMITS, BuildLimits
from arena.cluster import ClusterError, ClusterStats, Connection  # Dask itself only when a cluster plays
from arena.config import CLUSTER_EXPECTED, TOURNAMENT_NAME, ConfigError, _limits, _rating, cluster_address_problem
from arena.manifest import BotSpec, ManifestError, load_bot
from arena.protocol import Limits
from arena.ratings import Rater, Rating, RatingConfig, rate_all
from arena.registry import REGISTRY_PREFIX, VERSION_MODES, Registry, RegistryError
from arena.rules import Rules, RulesError
from arena.sandbox import BACKENDS as SANDBOXES
from arena.sandbox import SandboxLimits
from arena.store import Store
from arena.tournament import JobResult, MatchJob, remove_partial_logs, run_job, worker_pool
from arena.yamlfile import load_yaml

log = logging.getLogger("arena.league")

LEAGUE_KEYS = {"name", "bots", "players", "seed", "rules", "limits", "sandbox", "workers", "rating", "retries",
               "versions", "registry", "groups_per_batch", "cluster"}
SERVER_KEYS = {"uploads_per_hour", "max_upload_kb", "check_sandbox", "build_seconds", "build_memory_mb"}
IDLE_POLL_S = 1.0
"""How often an idle league (fewer active bots than seats) looks for new versions."""
RECONNECT_S = (1.0, 30.0)
"""A league that lost its Dask scheduler (or cannot reach it yet) tries again after the first delay, doubling up to
the second: a scheduler restarted, or started after the server, is found within half a minute."""
PUBLISH_EVERY_S = 5.0
"""The public site lags the store by at most this (or four times a publish's own cost, if that is more)."""


class LeagueError(ValueError):
    """A league that cannot run as configured; the message names the file or the store and the reason."""


@dataclass(frozen=True)
class LeagueConfig:
    name: str
    entries: tuple[str, ...]
    """``registry:*``, ``registry:NAME`` (pinned versions too), or absolute bot directories (house bots)."""
    players: int
    seed: int
    registry: Path
    versions: str = "latest"
    rules: Rules = Rules()
    limits: Limits = Limits()
    sandbox_limits: SandboxLimits = SandboxLimits()
    sandbox: str = "process"
    workers: int = 1
    rating: RatingConfig = RatingConfig()
    retries: int = 2
    groups_per_batch: int = 1
    cluster: str | None = None
    """A Dask scheduler address (arena/cluster.py) to play on instead of the local pool; not part of the
    identity: the results are the same."""
    source: Path | None = field(default=None, compare=False)

    def identity(self) -> dict[str, Any]:
        """What decides the results (not workers, batch size or where the registry is), as plain data."""
        return {"league": True, "name": self.name, "bots": list(self.entries), "players": self.players,
                "seed": self.seed, "versions": self.versions, "rules": self.rules.to_dict(),
                "limits": self.limits.to_dict(), "sandbox_limits": dataclasses.asdict(self.sandbox_limits),
                "sandbox": self.sandbox, "rating": dataclasses.asdict(self.rating)}

    def hash(self) -> str:
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class ServeConfig:
    """A server config file: the ``league:`` and the optional ``server:`` settings."""

    league: LeagueConfig
    uploads_per_hour: int = 10
    max_upload_bytes: int = 5 << 20
    check_sandbox: str = "process"
    build: BuildLimits = DEFAULT_BUILD_LIMITS
    """The limits of an upload's ``build:`` (``server: build_seconds, build_memory_mb``)."""


def load_serve_config(path: Path, default_registry: Path) -> ServeConfig:
    """Read a server config (``league:`` and ``server:``), or raise :class:`ConfigError` naming the key."""
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: cannot read the config: {error}") from None

    def bad(key: str, expected: str, value: object) -> ConfigError:
        return ConfigError(f"{path}: {key}: expected {expected}, got {value!r}")

    if not isinstance(data, Mapping) or not isinstance(data.get("league"), Mapping):
        raise ConfigError(f"{path}: league: missing (a server config is a mapping with a league: section and an "
                          "optional server: section)")
    unknown = sorted(str(key) for key in data if key not in ("league", "server"))
    if unknown:
        raise ConfigError(f"{path}: {unknown[0]}: unknown key (known: league, server)")
    league = _league(data["league"], path, default_registry, bad)
    server = data.get("server") or {}
    if not isinstance(server, Mapping):
        raise bad("server", "a mapping such as {uploads_per_hour: 10, max_upload_kb: 5120}", server)
    for key in server:
        if key not in SERVER_KEYS:
            raise bad(f"server.{key}", "one of " + ", ".join(sorted(SERVER_KEYS)), key)
    uploads = server.get("uploads_per_hour", 10)
    if type(uploads) is not int or uploads < 1:
        raise bad("server.uploads_per_hour", "a positive integer", uploads)
    upload_kb = server.get("max_upload_kb", 5120)
    if type(upload_kb) is not int or not 1 <= upload_kb <= 1 << 20:
        raise bad("server.max_upload_kb", "an integer from 1 to 1048576", upload_kb)
    check_sandbox = server.get("check_sandbox", league.sandbox)
    if check_sandbox not in SANDBOXES:
        raise bad("server.check_sandbox", "one of " + ", ".join(SANDBOXES), check_sandbox)
    seconds = server.get("build_seconds", DEFAULT_BUILD_LIMITS.seconds)
    if type(seconds) not in (int, float) or not 1 <= seconds <= 3600:
        raise bad("server.build_seconds", "a number of seconds from 1 to 3600", seconds)
    memory = server.get("build_memory_mb", DEFAULT_BUILD_LIMITS.memory_mb)
    if type(memory) is not int or not 64 <= memory <= 16384:
        raise bad("server.build_memory_mb", "an integer from 64 to 16384", memory)
    build = BuildLimits(seconds=float(seconds), memory_mb=memory)
    return ServeConfig(league, uploads, upload_kb << 10, check_sandbox, build)


def _league(data: Mapping[str, Any], path: Path, default_registry: Path, bad: Any) -> LeagueConfig:
    unknown = sorted(str(key) for key in data if key not in LEAGUE_KEYS)
    if unknown:
        raise ConfigError(f"{path}: league.{unknown[0]}: unknown key (known: {', '.join(sorted(LEAGUE_KEYS))})")
    for required in ("name", "bots", "players", "seed"):
        if required not in data:
            raise ConfigError(f"{path}: league.{required}: missing (required: name, bots, players, seed)")
    name = data["name"]
    if not isinstance(name, str) or not TOURNAMENT_NAME.fullmatch(name):
        raise bad("league.name", "a slug matching [a-z0-9][a-z0-9_-]{0,39}", name)
    bots = data["bots"]
    if not isinstance(bots, list) or not bots or not all(isinstance(entry, str) and entry for entry in bots):
        raise bad("league.bots", "a list of entries such as registry:* or bot directories", bots)
    base = path.resolve().parent
    entries: list[str] = []
    for index, entry in enumerate(bots):
        if entry.startswith(REGISTRY_PREFIX):
            entries.append(entry)
            continue
        directory = (base / entry).resolve()
        if not directory.is_dir():
            raise ConfigError(f"{path}: league.bots[{index}]: expected registry:... or a bot directory, {entry!r} is "
                              f"not one (relative paths are read from {base})")
        entries.append(str(directory))
    numbers: dict[str, int] = {}
    for key, low, high, default in (("players", 2, 8, None), ("seed", 0, 2**63 - 1, None), ("workers", 1, 256, 1),
                                    ("retries", 0, 10, 2), ("groups_per_batch", 1, 1000, None)):
        value = data.get(key, default)
        if key == "groups_per_batch" and value is None:
            value = numbers["workers"]  # one group per worker keeps the pool busy without stale schedules
        if type(value) is not int or not low <= value <= high:
            raise bad(f"league.{key}", f"an integer from {low} to {high}", value)
        numbers[key] = value
    versions = data.get("versions", "latest")
    if versions not in VERSION_MODES:
        raise bad("league.versions", "one of " + ", ".join(VERSION_MODES), versions)
    sandbox = data.get("sandbox", "process")
    if sandbox not in SANDBOXES:
        raise bad("league.sandbox", "one of " + ", ".join(SANDBOXES), sandbox)
    cluster = data.get("cluster")
    if cluster is not None and (not isinstance(cluster, str) or cluster_address_problem(cluster)):
        raise bad("league.cluster", CLUSTER_EXPECTED, cluster)
    registry = data.get("registry")
    if registry is not None and (not isinstance(registry, str) or not registry):
        raise bad("league.registry", "a registry directory (relative to the config file)", registry)
    try:
        rules = Rules.from_dict(data.get("rules") or {})
    except RulesError as error:
        raise ConfigError(f"{path}: league.{error}") from None
    limits, sandbox_limits = _limits(data.get("limits") or {}, bad, sandbox)
    return LeagueConfig(
        name=name, entries=tuple(entries), players=numbers["players"], seed=numbers["seed"],
        registry=(base / registry).resolve() if registry else default_registry.resolve(), versions=versions,
        rules=rules, limits=limits, sandbox_limits=sandbox_limits, sandbox=sandbox, workers=numbers["workers"],
        rating=_rating(data.get("rating") or {}, bad), retries=numbers["retries"],
        groups_per_batch=numbers["groups_per_batch"], cluster=cluster, source=path)


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
    cluster: ClusterStats | None = None
    reconnects: int = 0
    """How many times the league lost its Dask scheduler and connected again."""

    def to_dict(self) -> dict[str, Any]:
        cluster = self.cluster
        return {"state": self.state, "batches": self.batches, "matches_played": self.matches_played,
                "active": list(self.active),
                "last_batch": None if self.last_batch is None else dataclasses.asdict(self.last_batch),
                "error": self.error,
                "cluster": None if cluster is None else {**cluster.to_dict(), "reconnects": self.reconnects}}


class League:
    """One league in one store. The loop runs in one thread (:meth:`run`), which owns its own store connection."""

    def __init__(self, config: LeagueConfig, db: Path,
                 publish: Callable[[Store, tuple[int, ...] | None], object] | None = None) -> None:
        self.config = config
        self.db = db
        self.log_dir = db.parent / "logs" / config.name
        self.publish = publish
        self.state = LeagueState()
        self._specs: dict[str, BotSpec] = {}
        self._ratings: dict[int, Rating] | None = None
        self._rated_upto = -1
        self._unpublished: list[int] = []
        self._published_at = 0.0
        self._publish_cost = 0.0

    # -- the store ------------------------------------------------------------------------------------------------

    def prepare(self, store: Store) -> int:
        """The league's tournament id: created on first start, checked against the config on every other."""
        row = store.tournament(self.config.name)
        if row is None:
            return store.create_tournament(self.config.name, self.config.identity(), self.config.hash(), [], [])
        if row["config_hash"] != self.config.hash():
            raise LeagueError(f"{self.config.source}: league {self.config.name!r} is already in {store.path} with a "
                              "different config (players, seed, rules, limits, rating or bots); its results would "
                              "mix two leagues: give it a new name")
        return int(row["id"])

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
                known = (_add_bot(store, tid, len(rows), spec), spec.name, spec.files_hash)
                rows[str(directory)] = known
                names.add(spec.name)
                log.info("%s: %s enters the league", self.config.name, spec.name)
            elif known[2] != spec.files_hash:  # only a house bot can change: registry versions are read-only
                raise LeagueError(f"{directory}: the files of {spec.name!r} changed since it entered league "
                                  f"{self.config.name!r}; its results would mix two bots: use a new league name")
            active.append((known[0], spec.name))
        self.state.active = tuple(sorted(name for _, name in active))
        return [bot_id for bot_id, _ in active]

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
        """Append ``groups`` duplicate-deal groups chosen by the rule in the module docstring; returns matches added."""
        players = self.config.players
        if len(active) < players:
            return 0
        initial = Rating(self.config.rating.mu, self.config.rating.sigma)
        ratings = store.final_ratings(tid)
        sigma = {bot: ratings.get(bot, initial).sigma for bot in active}
        counts = _scheduled_counts(store, tid)
        played = {bot: counts.get(bot, 0) for bot in active}
        added = 0
        with store.atomic() as db:
            idx, grp = db.execute("SELECT coalesce(max(idx) + 1, 0), coalesce(max(grp) + 1, 0) FROM matches "
                                  "WHERE tournament_id = ?", (tid,)).fetchone()
            for _ in range(groups):
                rng = random.Random(f"{self.config.seed}/league/{grp}")
                order = sorted(active)
                rng.shuffle(order)
                anchor = max(order, key=lambda bot: (round(sigma[bot], 9), -played[bot]))
                rest = sorted((bot for bot in order if bot != anchor),
                              key=lambda bot: (played[bot], -round(sigma[bot], 9)))[:players - 1]
                group = (anchor, *rest)
                deal = rng.getrandbits(63)
                for rotation in range(players):
                    seats = group[rotation:] + group[:rotation]
                    match_id = db.execute("INSERT INTO matches (tournament_id, idx, grp, rotation, seed) "
                                          "VALUES (?, ?, ?, ?, ?)", (tid, idx, grp, rotation, deal)).lastrowid
                    db.executemany("INSERT INTO seats (match_id, seat, bot_id) VALUES (?, ?, ?)",
                                   [(match_id, seat, bot) for seat, bot in enumerate(seats)])
                    idx += 1
                    added += 1
                for bot in group:
                    played[bot] += players
                grp += 1
        return added

    def pending_jobs(self, store: Store, tid: int) -> tuple[list[MatchJob], dict[int, int]]:
        """The league's pending matches as jobs for :func:`run_job`, and match index -> match id."""
        rows = store.db.execute(
            "SELECT m.id, m.idx, m.seed, s.seat, b.directory FROM matches m JOIN seats s ON s.match_id = m.id "
            "JOIN bots b ON b.id = s.bot_id WHERE m.tournament_id = ? AND m.status = 'pending' "
            "ORDER BY m.idx, s.seat", (tid,)).fetchall()
        names = {row["directory"]: row["name"] for row in store.bots(tid)}
        seated: dict[int, list[BotSpec]] = {}
        seeds: dict[int, int] = {}
        ids: dict[int, int] = {}
        for row in rows:
            spec = self._spec(Path(row["directory"]), names[row["directory"]])
            if spec is None:
                raise LeagueError(f"{row['directory']}: a bot of league {self.config.name!r} is no longer loadable")
            seated.setdefault(row["idx"], []).append(spec)
            seeds[row["idx"]] = row["seed"]
            ids[row["idx"]] = row["id"]
        jobs = [MatchJob(index=idx, seed=seeds[idx], bots=tuple(bots), rules=self.config.rules,
                         limits=self.config.limits, sandbox_limits=self.config.sandbox_limits,
                         sandbox=self.config.sandbox, log_path=str(self.log_dir / f"{idx:06d}.jsonl.gz"),
                         retries=self.config.retries)
                for idx, bots in seated.items()]
        return jobs, ids

    def rate(self, store: Store, tid: int) -> None:
        """Bring the ratings up to date, in schedule order, as a tournament's are.

        The first call in a process rates every finished match; later calls apply only the matches finished since,
        which gives the same numbers (each batch's matches come after every match already rated: a batch is
        scheduled only when the last one is played, and failed matches are never rated) at a cost that does not
        grow with the league's age.
        """
        matches = store.rated_matches(tid)
        if self._ratings is None:
            self._ratings, history = rate_all([row["id"] for row in store.bots(tid)], matches, self.config.rating)
            store.finish(tid, history)
        else:
            rater = Rater(self.config.rating)
            ratings = self._ratings
            history = []
            for match in matches:
                if match.index > self._rated_upto:
                    ratings = rater.update({**{bot: rater.initial for bot in match.bots}, **ratings}, match)
                    history.append((match.index, {bot: ratings[bot] for bot in match.bots}))
            self._ratings = ratings
            with store.atomic() as db:
                db.executemany("INSERT INTO ratings VALUES (?, ?, ?, ?, ?)",
                               [(tid, bot, idx, r.mu, r.sigma) for idx, rated in history for bot, r in rated.items()])
        self._rated_upto = max((match.index for match in matches), default=-1)
        # A league never finishes: finish() marks it finished when nothing is pending, which is only true between
        # two batches.
        with store.atomic() as db:
            db.execute("UPDATE tournaments SET finished_at = NULL WHERE id = ?", (tid,))

    def maybe_publish(self, store: Store, new: tuple[int, ...], force: bool = False) -> float:
        """Publish the site if it is due; returns the seconds spent. Publishing re-renders the league's standings,
        bot and list pages, which grow with the league, so it runs at most once every :data:`PUBLISH_EVERY_S`
        and never takes more than a fifth of the loop's time (the live standings at ``/`` are always current)."""
        self._unpublished.extend(new)
        now = time.monotonic()
        if self.publish is None or not force and now - self._published_at < max(PUBLISH_EVERY_S,
                                                                                  4 * self._publish_cost):
            return 0.0
        self.publish(store, tuple(self._unpublished))
        self._unpublished.clear()
        self._published_at = time.monotonic()
        self._publish_cost = self._published_at - now
        return self._publish_cost

    # -- the loop -------------------------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Schedule, play, rate and publish until ``stop`` is set; the pool's matches in flight are then killed."""
        store = Store(self.db)
        pool = connection = None
        stats: ClusterStats | None = None
        try:
            tid = self.prepare(store)
            if self.publish is not None:
                self.publish(store, None)  # the whole site once: a restart may follow a crash mid-publish
                self._published_at = time.monotonic()
            self.log_dir.mkdir(parents=True, exist_ok=True)
            remove_partial_logs(self.log_dir)
            if self.config.cluster is None:
                pool = worker_pool(self.config.workers)
                play = pool_player(pool, stop)
            else:
                stats = self.state.cluster = ClusterStats(self.config.cluster)
            self.state.state = "running"
            while not stop.is_set():
                if stats is not None and connection is None:
                    connection = self.connect(stop)
                    if connection is None:
                        break  # stopped while waiting for the scheduler
                    play = cluster_player(connection, stats, stop)
                try:
                    report = self.batch(store, tid, play, stop)
                except ClusterError as error:
                    if connection is None:
                        raise
                    # The batch's matches not yet stored stay pending in the store: the next batch plays them.
                    log.warning("league %s: %s; connecting again", self.config.name, error)
                    connection.close()
                    connection = None
                    self.state.reconnects += 1
                    self.state.state = f"{error}: connecting again"
                    continue
                if report is None:
                    self.state.state = "waiting for bots"
                    stop.wait(IDLE_POLL_S)
                    continue
                self.state.state = "running"
                self.state.batches += 1
                self.state.matches_played += report.played
                self.state.last_batch = report
        except Exception as error:  # the web server stays up and says why the league stopped
            log.exception("league %s stopped", self.config.name)
            self.state.error = f"{type(error).__name__}: {error}"
        finally:
            self.state.state = "stopped"
            if pool is not None:
                pool.terminate()
                pool.join()
            if connection is not None:
                connection.close()
            store.close()

    def connect(self, stop: threading.Event) -> Connection | None:
        """A connection to the league's Dask scheduler (:class:`arena.cluster.Connection`), trying again with a
        growing delay while it cannot be reached, as the league's state says; None if stopped first."""
        address = self.config.cluster
        assert address is not None
        delay, longest = RECONNECT_S
        while not stop.is_set():
            self.state.state = f"connecting to {address}"
            try:
                connection = Connection(address)
            except ClusterError as error:
                self.state.state = f"{error}: trying again in {delay:.0f} s"
                log.warning("league %s: %s; trying again in %.0f s", self.config.name, error, delay)
                stop.wait(delay)
                delay = min(2 * delay, longest)
                continue
            self.state.state = "running"
            return connection
        return None

    def batch(self, store: Store, tid: int, play: Player, stop: threading.Event) -> BatchReport | None:
        """One turn of the loop; None when there is nothing to play (fewer active bots than seats)."""
        started = time.monotonic()
        active = self.entrants(store, tid)
        jobs, ids = self.pending_jobs(store, tid)
        scheduled = 0
        if not jobs:
            scheduled = self.schedule(store, tid, active, self.config.groups_per_batch)
            if not scheduled:
                return None
            jobs, ids = self.pending_jobs(store, tid)
        played = failed = 0
        for result in play(jobs):
            played += 1
            if result.result is not None:
                store.record_match(tid, result.index, result.result, result.attempts)
            else:
                failed += 1
                store.record_failure(tid, result.index, result.error or "unknown", result.attempts)
        if played < len(jobs):
            return None  # stopped: the rest of the batch is played after the restart
        rated = time.monotonic()
        self.rate(store, tid)
        rate_seconds = time.monotonic() - rated
        new = tuple(ids[job.index] for job in jobs)
        publish_seconds = self.maybe_publish(store, new)
        return BatchReport(len(active), scheduled, played, failed, round(time.monotonic() - started, 3),
                           round(rate_seconds, 3), round(publish_seconds, 3))


Player = Callable[[list[MatchJob]], Iterator[JobResult]]
"""Plays a batch's jobs and yields each result once, in any order; stops early (yielding fewer) when the league's
stop event is set."""
STOP_POLL_S = 0.5


def pool_player(pool: Any, stop: threading.Event) -> Player:
    """Batches on the league's process pool (the same :func:`run_job` as ``arena run``)."""
    def play(jobs: list[MatchJob]) -> Iterator[JobResult]:
        results = pool.imap_unordered(run_job, jobs)
        for _ in jobs:
            while True:
                if stop.is_set():
                    return
                try:
                    yield results.next(timeout=STOP_POLL_S)
                    break
                except multiprocessing.TimeoutError:
                    continue
    return play


def cluster_player(connection: Connection, stats: ClusterStats, stop: threading.Event) -> Player:
    """Batches on a Dask cluster, through ``arena run --cluster``'s machinery (:class:`arena.cluster.Connection`):
    bots by content, workers checked, a bounded window, one result per match."""
    def play(jobs: list[MatchJob]) -> Iterator[JobResult]:
        played = connection.play(jobs, stats, notify=lambda message: log.warning("%s", message))
        try:
            for result in played:
                yield result
                if stop.is_set():
                    return
        finally:
            played.close()  # cancels what is still in flight
    return play


def _add_bot(store: Store, tid: int, slot: int, spec: BotSpec) -> int:
    with store.atomic() as db:
        bot_id = db.execute("INSERT INTO bots (tournament_id, slot, name, directory, files_hash, manifest) "
                            "VALUES (?, ?, ?, ?, ?, ?)",
                            (tid, slot, spec.name, str(spec.directory), spec.files_hash,
                             json.dumps(spec.to_dict()))).lastrowid
    assert bot_id is not None
    return int(bot_id)


def _scheduled_counts(store: Store, tid: int) -> dict[int, int]:
    """Matches per bot, played or pending (an infrastructure failure is not a match played)."""
    return dict(store.db.execute(
        "SELECT s.bot_id, count(*) FROM seats s JOIN matches m ON m.id = s.match_id "
        "WHERE m.tournament_id = ? AND m.status != 'failed' GROUP BY s.bot_id", (tid,)).fetchall())
