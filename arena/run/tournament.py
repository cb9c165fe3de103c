"""Running a tournament: its schedule played to the end, or round by round until the standings settle.

A tournament is a policy of the run loop (arena/run/loop.py): the whole schedule is created in the store at the
first run, and every run plays what is still pending in one batch. With ``stop:`` in the config it is the stop
rule's policy instead (arena/run/stoprule.py). Results are stored as they arrive, in any order; ratings are
computed afterwards from the store in schedule order, so they are the same whatever the number of workers or where
they are (the local pool or a Dask cluster), and a resumed run ends exactly where an uninterrupted one would.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from typing import Any

from arena.run import loop
from arena.run.config import TournamentConfig
from arena.run.jobs import JobResult, MatchJob, in_chains
from arena.run.lanes import blocks
from arena.run.loop import FinalRatings, Progress, RunReport
from arena.run.plan import Plan, TournamentError, load_bots, pending_jobs, plan_tournament, settings_of
from arena.run.players import player_for
from arena.run.stoprule import SettleRule, round_of
from arena.schedule import design_for, make_schedule, new_secret
from arena.store import Store

SECONDS_PER_TURN_ESTIMATE = 0.00025
SECONDS_PER_MATCH_START = 0.25


class AllPending:
    """The tournament's policy: every pending match, in one batch."""

    def __init__(self, config: TournamentConfig, watched: bool = False) -> None:
        self.watched = watched
        self.config = config
        self.name = config.name
        self.ratings = FinalRatings(config.rating)

    def plan(self, store: Store, fresh: bool) -> Plan:
        return plan_tournament(self.config, store, fresh)

    def batches(self, plan: Plan, store: Store) -> Generator[Sequence[MatchJob], None, None]:
        todo = pending_jobs(plan, settings_of(self.config, self.watched))
        reuse = self.config.reuse
        if reuse is not None:
            # Chains from the whole schedule, so that a resumed run's chains are the first run's (arena/run/lanes.py).
            todo = in_chains(todo, plan.schedule, reuse)
        yield todo

    def add(self, job: MatchJob, result: JobResult) -> bool:
        return False

    def dropped(self, plan: Plan) -> Sequence[int]:
        return ()


def run_tournament(
    config: TournamentConfig,
    store: Store,
    fresh: bool = False,
    workers: int | None = None,
    on_result: Callable[[Progress], None] | None = None,
    cluster: str | None = None,
    on_start: Callable[[Progress], None] | None = None,
    watched: bool = False,
) -> RunReport:
    """Play every match not yet done (or, with a stop rule, round after round until the standings settle), store
    each as it finishes, then rate in schedule order.

    ``KeyboardInterrupt`` or SIGTERM stops the run (the matches in flight are discarded, their bots killed) and
    returns a report with ``interrupted=True``; running again resumes. The tournament is held by a lease in the
    store meanwhile: a second runner gets :class:`~arena.store.LeaseHeldError`. A full disk stops the run with
    :class:`~arena.store.DiskFullError`, what is stored kept. ``cluster`` (default: the config's ``cluster:``)
    plays the matches on a Dask cluster instead of the local pool (arena/run/cluster.py); the results are the same.
    ``on_start`` is called once the run is planned, before the first match (arena/run/loop.py). ``watched``: each
    match writes its spectators' feed beside its log while it plays (arena/match/livefeed.py; ``arena watch``).
    """
    policy: loop.Policy = (AllPending(config, watched) if config.stop is None else SettleRule(config, watched))
    if config.reuse is not None and (cluster or config.cluster) is not None:
        raise TournamentError(f"{config.source}: reuse: a Dask cluster does not keep bots up yet; set reuse: false "
                              "to play on one, or play on the local pool")
    with closing(player_for(cluster or config.cluster, workers or config.workers)) as player:
        return loop.run(store, policy, player, fresh, on_result, on_start=on_start)


def chains_at_once(config: TournamentConfig) -> int | None:
    """With reuse, the most chains that may play at once (arena/run/lanes.py's :func:`~arena.run.lanes.blocks`;
    with a stop rule, of one round, which is what a batch holds); None without reuse. The group structure does not
    depend on the secret, so any seed counts."""
    if config.reuse is None:
        return None
    schedule = make_schedule(len(config.bots), config.players, config.repeats, 0, config.deals)
    if config.stop is not None:
        schedule = [match for match in schedule
                    if round_of(match.group, len(config.bots), config.players, config.repeats) == 0]
    return blocks(schedule, config.reuse.matches)


def reuse_warning(config: TournamentConfig, workers: int) -> str | None:
    """A one-line warning when reuse leaves some of ``workers`` idle, else None."""
    at_once = chains_at_once(config)
    if config.reuse is None or at_once is None or at_once >= workers:
        return None
    return (f"warning: {config.source or config.name}: reuse.matches: blocks of {config.reuse.matches} groups leave "
            f"{at_once} chain{'s' if at_once > 1 else ''} to play at once for {workers} workers (a block's chains "
            "share its deals and play one after another): a smaller reuse.matches keeps every worker busy")


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
    # Without a seed any secret counts the same deals: the run makes its own when it is created.
    schedule = make_schedule(len(bots), config.players, config.repeats,
                             new_secret() if config.seed is None else config.seed, config.deals)
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
        "reuse": None if config.reuse is None else {"matches": config.reuse.matches,
                                                     "memory_fraction": config.reuse.memory_fraction,
                                                     "chains_at_once": chains_at_once(config)},
        "open_ended": None if config.stop is None else {"confidence": config.stop.confidence,
                                                        "max_matches": len(schedule),
                                                        "margin": config.stop.margin},
    }

