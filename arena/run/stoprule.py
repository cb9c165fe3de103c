"""An open-ended tournament: ``stop: {confidence: 0.95, max_matches: N}`` in the config (arena/run/config.py).

The schedule is the usual one with as many repeats as ``max_matches`` allows (arena/schedule.py), played round by
round: a round is every group of the design once, all its seat rotations, so after each round every bot has
played the same number of matches in each seat. After each whole round, and only then, the results of the rounds
so far go to arena/stats/confidence.py, and every adjacent pair of the standings is tested (arena.stats.confidence.PairTest):
*apart*, *equal* within ``margin``, or not yet either. When every pair is decided, the later rounds are dropped from
the store and the tournament is finished; the standings then show the equal pairs as sharing a rank. The test
spends 1 - ``confidence`` over the rounds, so that looking after every round does not make equal bots part
(bench/stoprule.py measures the error rates and the matches taken). The decision sees only
whole rounds, in schedule order, with a fixed bootstrap seed, so the same config stops after the same round whatever
the number of workers (on the local pool or a cluster), and a resumed run (which re-checks the stored rounds in
order) stops where an uninterrupted one would. It is a policy of the run loop (arena/run/loop.py); a round's
matches are one batch, played in parallel. With ``reuse:`` a round's groups make their own chains
(arena/run/lanes.py), each stored whole: what a process remembers never spans two rounds, so the rule's decision
after a round is taken on the same results whatever the workers.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from itertools import pairwise

from arena.run.config import StopRule, TournamentConfig
from arena.run.jobs import JobResult, MatchJob, in_chains
from arena.run.loop import FinalRatings
from arena.run.plan import Plan, pending_jobs, plan_tournament, settings_of
from arena.schedule import design_for
from arena.stats.confidence import Confidence, PairTest, confidence
from arena.stats.display import MIN_GROUPS
from arena.stats.standings import seat_results
from arena.store import Store


def round_of(group: int, bots: int, players: int, repeats: int) -> int:
    """Which round a group belongs to: round-robin schedules list a group's repeats together, balanced random
    ones list round after round (arena/schedule.py)."""
    if design_for(bots, players) == "round-robin":
        return group % repeats
    return group // bots


def pair_test(stop: StopRule, rounds: int) -> PairTest:
    """The test of each adjacent pair, spending the error over ``rounds`` looks (the tournament's most rounds)."""
    return PairTest(1 - stop.confidence, rounds, stop.margin)


def decided(sure: Confidence, test: PairTest, bots: int) -> bool:
    """Every adjacent pair of ``sure``'s order (every bot measured in enough groups to be ranked at all:
    arena/stats/display.py's MIN_GROUPS) decided by ``test``, apart or equal."""
    order = sure.order()
    return (len(order) == bots and all(line.groups >= MIN_GROUPS for line in sure.bots)
            and all(sure.verdict(a, b, test) is not None for a, b in pairwise(order)))


def settled(store: Store, tid: int, config: TournamentConfig, rounds: int) -> bool:
    """Every adjacent pair of the standings after the first ``rounds`` rounds decided by the stop rule's test.
    Only those rounds count: a resumed run may have later ones stored."""
    assert config.stop is not None
    bots = [row["id"] for row in store.bots(tid)]
    results = [result for result in seat_results(store, tid)
               if round_of(result.group, len(bots), config.players, config.repeats) < rounds]
    return decided(confidence(results, bots), pair_test(config.stop, config.repeats), len(bots))


class SettleRule:
    """The stop rule's policy: one round a batch, until the standings settle or the rounds run out. A round with
    a failed match cannot be judged: the run stops there, and running it again retries the match."""

    def __init__(self, config: TournamentConfig, watched: bool = False) -> None:
        self.watched = watched
        assert config.stop is not None
        self.config = config
        self.name = config.name
        self.ratings = FinalRatings(config.rating)
        self.failed = False
        self.later: list[int] = []

    def plan(self, store: Store, fresh: bool) -> Plan:
        return plan_tournament(self.config, store, fresh)

    def batches(self, plan: Plan, store: Store) -> Generator[Sequence[MatchJob], None, None]:
        config = self.config

        def round_(group: int) -> int:
            return round_of(group, len(plan.bots), config.players, config.repeats)

        todo = pending_jobs(plan, settings_of(config, self.watched))
        number_of = {match.index: round_(match.group) for match in plan.schedule}
        for number in range(config.repeats):
            batch = [job for job in todo if number_of[job.index] == number]
            if batch and config.reuse is not None:
                # Chains within the round (a round-robin's round is not a run of consecutive groups), from the
                # whole round so that a resumed round's chains are the first run's: a chain never outlives the
                # round the rule judges it in.
                batch = in_chains(batch, [match for match in plan.schedule if number_of[match.index] == number],
                                  config.reuse)
            if batch:
                yield batch
                if self.failed:
                    return
            if number + 1 < config.repeats and settled(store, plan.tid, config, number + 1):
                self.later = [match.index for match in plan.schedule if round_(match.group) > number]
                return

    def add(self, job: MatchJob, result: JobResult) -> bool:
        self.failed = self.failed or result.result is None
        return False

    def dropped(self, plan: Plan) -> Sequence[int]:
        return self.later
