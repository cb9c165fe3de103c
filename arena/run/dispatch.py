"""Which job a free worker plays next: never one whose deal is already being played.

A bot's copies must never sit at two seats of one deal at the same time: two sandboxes playing at once may find a
way to talk (a shared file's lock bits did, before the sandbox closed that channel), and a copy that learns what
its twin was dealt knows an opponent's cards. So every player of arena/run/players.py (the local pool)
and arena/run/cluster.py (a Dask cluster, which the league uses too) takes its jobs from a :class:`DealQueue`,
which hands out a job only while no other job of the same deal is in flight, and otherwise keeps schedule order:
the next job in the batch whose deal is free (near the batch's end, the free deal with the most jobs left, so that
the workers run out of work together). With at least as many deals in a batch as workers, every worker stays busy,
each on a deal of its own, until the batch's last deals.

The exclusion is keyed by :func:`deal_of`, the job's deal seed, because the seed is what the deal is made from
(``play_match(bots, seed, ...)``), so two jobs that share a deal share it, whichever runner built them:

- a tournament or stop-rule run (arena/schedule.py): every seat rotation of a duplicate group has the group's seed;
  with ``deals: independent`` every match has a seed of its own, and such matches may play at once, since no two
  of them share a card;
- an A/B test (arena/run/abtest.py): all the matches of a deal, NEW's and BASE's alike (the ``field`` pairing plays
  them as separate matches on the same seed and seats), have the deal's seed;
- the league (arena/run/league.py): a group's rotations share the group's seed; ``arena match`` (series) plays
  arena's own schedule.

A group number would not do: it is numbered per run and says nothing about the deal of an A/B test's two
matches. Equal seeds under other rules would make other deals; keeping those apart too costs nothing.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Sequence

from arena.run.jobs import MatchJob


def deal_of(job: MatchJob) -> int:
    """What identifies the deal a job plays: its seed (see the module docstring for why that covers every runner)."""
    return job.seed


class DealQueue:
    """A batch's jobs waiting to be dispatched, in batch (schedule) order, at most one per deal in flight.

    :meth:`take` hands out the earliest waiting job whose deal has nothing in flight (or None), :meth:`done` frees
    a job's deal once its result is back (or it was killed or cancelled and will not run again). A job handed out
    again after a lost attempt (a Dask task resubmitted) is not taken again: its deal stays in flight meanwhile.
    :meth:`hold` keeps a deal's jobs back while a match that is not the queue's plays it (one a Dask worker goes on
    playing after it was cancelled), until :meth:`release`.

    ``one_per_deal=False`` turns the exclusion off, handing jobs out in batch order: only bench/serial.py (which
    measures what the exclusion costs) and the test that shows its overlap check can fail use it."""

    def __init__(self, jobs: Sequence[MatchJob], one_per_deal: bool = True, workers: int = 2) -> None:
        self.one_per_deal = one_per_deal
        self.workers = workers
        """How many jobs play at once: near the batch's end (see :meth:`take`) it decides when the end is near."""
        self._in_order: deque[MatchJob] = deque(jobs if not one_per_deal else ())
        self._waiting: dict[int, deque[tuple[int, MatchJob]]] = {}
        for position, job in enumerate(jobs if one_per_deal else ()):
            self._waiting.setdefault(deal_of(job), deque()).append((position, job))
        # Free deals with a job waiting, by the batch position of their first waiting job: the heap's first entry
        # is the earliest job that may start now. A deal in flight is not in the heap; done() puts it back.
        self._free = [(waiting[0][0], deal) for deal, waiting in self._waiting.items()]
        heapq.heapify(self._free)
        self._in_flight: dict[int, int] = {}  # deal -> index of its job in flight
        self._held: set[int] = set()
        self._parked: set[int] = set()  # held deals taken off the heap: back on it when released
        self._left = len(jobs)
        self._group = max((len(waiting) for waiting in self._waiting.values()), default=1)

    def take(self) -> MatchJob | None:
        """The earliest waiting job whose deal is free, now in flight; None if every waiting job's deal is busy.

        Near the batch's end (no more jobs waiting than ``workers`` whole deals) and beside another deal in flight,
        the free deal with the most jobs waiting goes first instead, earliest first among equals: a deal's jobs play
        one after another, so the workers run out of work together only if the longest deals start first (with the demo's matches, a
        simulation of 2 workers puts the tail's cost at 0.2% of the batch's time this way, 2% in plain order)."""
        if self._in_order:
            self._left -= 1
            return self._in_order.popleft()
        if self._in_flight and self._left <= self.workers * self._group:
            self._park_held()
            if not self._free:
                return None
            entry = min(self._free, key=lambda free: (-len(self._waiting[free[1]]), free[0]))
            self._free.remove(entry)
            heapq.heapify(self._free)
            deal = entry[1]
        else:
            while self._free:
                _, deal = heapq.heappop(self._free)
                if deal not in self._held:
                    break
                self._parked.add(deal)
            else:
                return None
        waiting = self._waiting[deal]
        _, job = waiting.popleft()
        if not waiting:
            del self._waiting[deal]
        self._in_flight[deal] = job.index
        self._left -= 1
        return job

    def _park_held(self) -> None:
        """Take the held deals off the heap (they go back when released)."""
        held = [entry for entry in self._free if entry[1] in self._held]
        if held:
            self._free = [entry for entry in self._free if entry[1] not in self._held]
            heapq.heapify(self._free)
            self._parked.update(deal for _, deal in held)

    def done(self, job: MatchJob) -> None:
        """``job`` is no longer in flight: its deal's next waiting job may go."""
        deal = deal_of(job)
        if self._in_flight.get(deal) != job.index:
            return  # the exclusion is off, or this job was done already (its deal may have its next job out)
        del self._in_flight[deal]
        waiting = self._waiting.get(deal)
        if waiting:
            heapq.heappush(self._free, (waiting[0][0], deal))

    def hold(self, deal: int) -> None:
        """Someone else plays ``deal`` (a cancelled match that a Dask worker goes on playing): none of its jobs goes
        until :meth:`release`."""
        if self.one_per_deal:
            self._held.add(deal)

    def release(self, deal: int) -> None:
        self._held.discard(deal)
        if deal in self._parked:
            self._parked.discard(deal)
            if deal not in self._in_flight and self._waiting.get(deal):
                heapq.heappush(self._free, (self._waiting[deal][0][0], deal))

    def waits_for(self, deal: int) -> bool:
        """Whether a job of ``deal`` is still to be handed out."""
        return deal in self._waiting

    @property
    def held(self) -> frozenset[int]:
        return frozenset(self._held)

    @property
    def waiting(self) -> int:
        """Jobs not yet handed out."""
        return self._left

    def __bool__(self) -> bool:
        return self._left > 0


class ChainQueue:
    """The chains of a batch (arena/run/lanes.py), each played whole by one worker: :meth:`take` hands out the
    earliest chain (by its first match) none of whose deals is in flight, :meth:`done` frees a chain's deals. Two
    chains of one block share every deal and so never play at once; chains of other blocks share none."""

    def __init__(self, chains: Sequence[tuple[MatchJob, ...]]) -> None:
        self._waiting = sorted(chains, key=lambda chain: chain[0].index)
        self._count = len(self._waiting)
        self._busy: set[int] = set()

    def take(self) -> tuple[MatchJob, ...] | None:
        for position, chain in enumerate(self._waiting):
            deals = {deal_of(job) for job in chain}
            if not deals & self._busy:
                self._busy |= deals
                del self._waiting[position]
                return chain
        return None

    def done(self, chain: tuple[MatchJob, ...]) -> None:
        self._busy -= {deal_of(job) for job in chain}

    def upcoming(self) -> tuple[MatchJob, ...] | None:
        """The chain :meth:`take` will hand out next once deals are freed, if one waits."""
        return self._waiting[0] if self._waiting else None

    def __len__(self) -> int:
        """How many chains the batch has (handed out or not)."""
        return self._count
