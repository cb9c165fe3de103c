"""An open-ended tournament: ``stop: {confidence: 0.95, max_matches: N}`` in the config (arena/config.py).

The schedule is the usual one with as many repeats as ``max_matches`` allows (arena/schedule.py), played round by
round: a round is every group of the design once, all its seat rotations, so after each round every bot has
played the same number of matches in each seat. After each whole round, and only then, the results of the rounds
so far go to arena/confidence.py; when every adjacent pair of the standings is ordered with P(above) at least
``confidence``, the later rounds are dropped from the store and the tournament is finished. The decision sees only
whole rounds, in schedule order, with a fixed bootstrap seed, so the same config stops after the same round whatever
the number of workers, and a resumed run (which re-checks the stored rounds in order) stops where an uninterrupted
one would. Matches are played by arena/tournament.py's jobs and workers; a round's matches run in parallel.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from itertools import pairwise

from arena.confidence import confidence
from arena.config import TournamentConfig
from arena.schedule import design_for
from arena.store import Store
from arena.tournament import Progress, RunReport, jobs, plan, rate_and_finish, run_job, store_result, worker_pool


def round_of(group: int, bots: int, players: int, repeats: int) -> int:
    """Which round a group belongs to: round-robin schedules list a group's repeats together, balanced random
    ones list round after round (arena/schedule.py)."""
    if design_for(bots, players) == "round-robin":
        return group % repeats
    return group // bots


def settled(store: Store, tid: int, config: TournamentConfig, rounds: int) -> bool:
    """Every adjacent pair of the standings (by mean place) after the first ``rounds`` rounds ordered at the stop
    rule's confidence. Only those rounds count: a resumed run may have later ones stored."""
    assert config.stop is not None
    level = config.stop.confidence
    bots = [row["id"] for row in store.bots(tid)]
    results = [result for result in store.seat_results(tid)
               if round_of(result.group, len(bots), config.players, config.repeats) < rounds]
    found = confidence(results, bots, level=level)
    order = found.order()
    return len(order) == len(bots) and all(found.p_above[(a, b)] >= level for a, b in pairwise(order))


def run_until_settled(config: TournamentConfig, store: Store, fresh: bool = False, workers: int | None = None,
                      on_result: Callable[[Progress], None] | None = None,
                      heartbeat: Callable[[], None] | None = None) -> RunReport:
    """Play round after round until the standings are settled or the rounds run out; then rate, as
    :func:`arena.tournament.run_tournament` does (and with the same report). ``heartbeat`` is called with each
    result (the runner keeps its lease on the tournament with it)."""
    assert config.stop is not None
    started = time.monotonic()
    prepared = plan(config, store, fresh)
    bots = len(prepared.bots)
    rounds: dict[int, list[int]] = {}
    for match in prepared.schedule:
        rounds.setdefault(round_of(match.group, bots, config.players, config.repeats), []).append(match.index)
    todo = {job.index: job for job in jobs(config, prepared)}
    progress = Progress(total=len(prepared.schedule), done=prepared.done)
    interrupted = False
    later: list[int] = []
    pool = None
    try:
        for number in range(config.repeats):
            batch = [todo[index] for index in rounds[number] if index in todo]
            if batch:
                if pool is None:
                    pool = worker_pool(workers or config.workers)
                for result in pool.imap_unordered(run_job, batch):
                    if heartbeat is not None:
                        heartbeat()
                    store_result(store, prepared.tid, result)
                    progress.add(result, todo[result.index])
                    if on_result is not None:
                        on_result(progress)
                if progress.failed:
                    break  # a round with a failed match cannot be judged: a run again retries it
            if number + 1 < config.repeats and settled(store, prepared.tid, config, number + 1):
                later = [index for after in range(number + 1, config.repeats) for index in rounds[after]]
                store.drop_matches(prepared.tid, later)
                break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
    rate_and_finish(store, prepared.tid, config.rating)
    return RunReport(tid=prepared.tid, name=config.name, total=sum(store.status_counts(prepared.tid).values()),
                     done_before=prepared.done,
                     played=progress.played, failed=progress.failed, interrupted=interrupted,
                     seconds=time.monotonic() - started, standings=tuple(store.standings(prepared.tid)))
