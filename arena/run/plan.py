"""Create or resume a run in the store: the one planner under every runner (tournament, stop rule, A/B test, league).

A run is a tournament in the store, named and identified by everything that decides its results (its
*identity*: bots, seats, seed, rules, limits, ...; never the number of workers or where they are). The first
run creates it with its bots, its secret (the config's seed, or one made then: :func:`run_secret`) and its whole
schedule, all pending; a later one with the same name checks that the
identity and the bots' files are the same, and plays what is still pending or failed. ``fresh`` discards what is
stored under the name first. Matches dropped after a verdict (a stop rule, an SPRT) are not in the store, so the
plan's schedule leaves them out too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena import procfs
from arena.bots.manifest import BotSpec, ManifestError, load_bot
from arena.game.rules import Rules
from arena.match.livefeed import SUFFIX as FEED_SUFFIX
from arena.match.livefeed import feeds
from arena.match.matchlog import log_dir_for, log_path_for
from arena.match.protocol import Limits
from arena.registry.build import playable
from arena.registry.versions import entrant_names
from arena.run.config import TournamentConfig
from arena.run.jobs import MatchJob
from arena.sandbox import SandboxLimits
from arena.schedule import ScheduledMatch, make_schedule, new_secret
from arena.store import Store


class TournamentError(ValueError):
    """The run cannot go on as asked (its config or bots changed, a bot is broken); an input error."""


@dataclass(frozen=True)
class Plan:
    """A run ready to play: its id in the store, its bots, its schedule and what is left to play."""

    tid: int
    name: str
    bots: tuple[BotSpec, ...]
    schedule: tuple[ScheduledMatch, ...]
    """The matches in the store, in schedule order (those dropped after a verdict left out)."""
    pending: tuple[int, ...]
    """Schedule indices not yet done (pending, or failed for infrastructure reasons: tried again)."""
    done: int
    log_dir: Path
    secret: str = field(default="", repr=False)
    """The run's secret (docs/SECURITY.md), from the store: what a league's new deals follow from."""


@dataclass(frozen=True)
class JobSettings:
    """How every match of a run is played: the parts of a job that are not the match's own."""

    rules: Rules
    limits: Limits
    sandbox_limits: SandboxLimits
    sandbox: str
    retries: int
    watched: bool = False
    """Each match may be followed while it plays (a league's, ``arena run --live``'s)."""


def identity_hash(identity: dict[str, Any]) -> str:
    """The hash a stored run is checked against when it resumes: of its identity as canonical JSON."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


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


def unique_names(bots: Sequence[BotSpec], where: str) -> tuple[BotSpec, ...]:
    """``bots`` as a tuple, or :class:`TournamentError` (naming ``where`` they come from) if two share a name."""
    seen: set[str] = set()
    for bot in bots:  # a set, not a count per name: a field of 10,000 bots would take 10^8 comparisons
        if bot.name in seen:
            raise TournamentError(f"{where}: two bots are named {bot.name!r}; names must be unique")
        seen.add(bot.name)
    return tuple(bots)


def load_bots(config: TournamentConfig, build_cache: Path | None = None) -> tuple[BotSpec, ...]:
    """A tournament's bots (built into ``build_cache`` first, if given), their names unique."""
    return unique_names(load_entrants(config.bots, build_cache), f"{config.source}: bots")


def settings_of(config: TournamentConfig, watched: bool = False) -> JobSettings:
    """The settings of a tournament's jobs; ``watched``: each match writes its spectators' feed as it plays
    (``arena run --live``, arena/match/livefeed.py)."""
    return JobSettings(config.rules, config.limits, config.sandbox_limits, config.sandbox, config.retries,
                       watched=watched)


def refuse_reuse_on_a_cluster(reuse: object, cluster: str | None, key: str) -> None:
    """Raise :class:`TournamentError` naming ``key`` if bots are to be kept up on a Dask cluster, which plays one
    match per task and so cannot play a chain whole (arena/run/lanes.py)."""
    if reuse is not None and cluster is not None:
        raise TournamentError(f"{key}: a Dask cluster does not keep bots up yet; leave reuse off to play on one, "
                              "or play on the local pool")


def plan_tournament(config: TournamentConfig, store: Store, fresh: bool = False) -> Plan:
    """Create the tournament in the store, or check that the stored one is the same and find what is left."""
    bots = load_bots(config, build_cache_for(store))
    secret = run_secret(store, config.name, config.seed, fresh)
    schedule = make_schedule(len(bots), config.players, config.repeats, secret, config.deals)
    return prepare(store, config.name, config.identity(), bots, schedule, fresh, source=config.source, secret=secret)


def run_secret(store: Store, name: str, seed: int | str | None, fresh: bool = False) -> str:
    """The secret run ``name``'s deals follow from: its configured seed, else the one the store keeps for it (a
    resume plays the same deals), else a new one (a run created now, or started over with ``fresh``)."""
    if seed is not None:
        return str(seed)
    existing = None if fresh else store.tournament(name)
    kept = None if existing is None else store.secret(existing["id"])
    return kept if kept is not None else new_secret()


def build_cache_for(store: Store) -> Path:
    """Where the bot directories of a store's runs are built: beside the store, like their logs."""
    return store.path.parent / "builds"


def prepare(store: Store, name: str, identity: dict[str, Any], bots: Sequence[BotSpec],
            schedule: Sequence[ScheduledMatch], fresh: bool = False, *, kind: str = "tournament",
            source: object = None, secret: str | None = None) -> Plan:
    """Create the run in the store, or check that the stored one is the same and find what is left.

    ``secret`` is what the schedule's deals were made from (:func:`run_secret`); a run created without one (a
    league, which deals as it goes) gets the identity's seed, else a new secret. ``kind`` and ``source`` (the config
    file, or the option that named the run) word the refusals."""
    log_dir = log_dir_for(store.path.parent, name)
    existing = store.tournament(name)
    if existing is not None and fresh:
        store.delete_tournament(name)
        shutil.rmtree(log_dir, ignore_errors=True)
        existing = None
    digest = identity_hash(identity)
    if existing is None:
        if secret is None:
            secret = str(identity["seed"]) if identity.get("seed") is not None else new_secret()
        tid = store.create_tournament(name, identity, digest, [bot.to_dict() for bot in bots], schedule, secret)
    else:
        tid = existing["id"]
        if existing["config_hash"] != digest:
            remedy = ("give it a new name" if kind == "league" else
                      "run it under a new name, or pass --fresh to discard its results and start over")
            raise TournamentError(f"{source}: {kind} {name!r} is already in {store.path} with a different config "
                                  f"(or as another kind of run); its results would mix two {kind}s: {remedy}")
        for stored, bot in zip(store.bots(tid), bots):
            if stored["files_hash"] != bot.files_hash:
                raise TournamentError(
                    f"{bot.directory}: the files of bot {bot.name!r} changed since {kind} {name!r} started; its "
                    "results would mix two versions. Pass --fresh to start over, or use a new name")
    remove_partial_logs(log_dir)
    rows = store.matches_with_status(tid, "pending", "failed", "done")
    # Each match on the deal seed it was stored with: a run stored before deal seeds were keyed (arena/schedule.py)
    # plays its pending rotations on its groups' own deals.
    kept = {row["idx"]: row["seed"] for row in rows}
    pending = tuple(row["idx"] for row in rows if row["status"] != "done")
    matches = tuple(dataclasses.replace(match, seed=kept[match.index]) for match in schedule if match.index in kept)
    stored_secret = store.secret(tid)
    if secret is not None and stored_secret is not None and stored_secret != secret:
        # Only a store changed by hand gets here: the identity (its seed included) matched.
        raise TournamentError(f"{source}: {kind} {name!r} in {store.path} was dealt from another secret; pass "
                              "--fresh to start over, or use a new name")
    return Plan(tid, name, tuple(bots), matches, pending, len(matches) - len(pending), log_dir,
                secret=stored_secret or "")


def remove_partial_logs(log_dir: Path) -> None:
    """Delete the half-written logs (``NAME.PID.tmp``) of matches that were in flight when a run was stopped or
    killed, and their spectators' feeds; those matches are played again. A log whose writer is still alive is left
    alone."""
    writing = set()  # the logs still being written, by the name of their finished log
    try:
        with os.scandir(log_dir) as entries:  # an entry at a time: a league's directory has a log per match
            partials = [Path(entry.path) for entry in entries if entry.name.endswith(".tmp")]
    except (FileNotFoundError, NotADirectoryError):
        partials = []
    for partial in partials:
        pid = partial.suffixes[-2].lstrip(".") if len(partial.suffixes) >= 2 else ""
        if pid.isdigit() and not procfs.running(int(pid)):
            partial.unlink(missing_ok=True)
        else:
            writing.add(partial.name.rsplit(".", 2)[0])
    # A spectators' feed (arena/match/livefeed.py) whose match has no log being written is of a runner killed
    # mid-match: left, it would say the match is in play for ever.
    for feed in feeds(log_dir, FEED_SUFFIX):
        if feed.name[:-len(FEED_SUFFIX)] not in writing:
            feed.unlink(missing_ok=True)


def jobs(matches: Sequence[ScheduledMatch], bots: Sequence[BotSpec] | Mapping[int, BotSpec], settings: JobSettings,
         log_dir: Path) -> list[MatchJob]:
    """The jobs that play ``matches`` (their ``bots`` are keys of ``bots``: slots), each logging into ``log_dir``."""
    return [MatchJob(index=match.index, seed=match.seed, bots=tuple(bots[slot] for slot in match.bots),
                     rules=settings.rules, limits=settings.limits, sandbox_limits=settings.sandbox_limits,
                     sandbox=settings.sandbox, log_path=str(log_path_for(log_dir, match.index)),
                     retries=settings.retries, watched=settings.watched)
            for match in matches]


def pending_jobs(plan: Plan, settings: JobSettings) -> list[MatchJob]:
    """The jobs of the plan's matches not yet done, in schedule order."""
    todo = set(plan.pending)
    return jobs([match for match in plan.schedule if match.index in todo], plan.bots, settings, plan.log_dir)
