"""Which uploads the league server takes on now, and the threads they run in: their own, never the public pages'.

An upload's check and build take tens of seconds. They once ran in the web worker threads that the public pages
use too, one thread held for an upload's whole life (queued or not): 42 failing uploads by one author in flight
made ``GET /`` wait more than 30 s. Now, before an upload's body is read:

- **one at a time per author**: a second upload while the author's first is in flight is ``429``
  (``Retry-After``), not queued;
- **a global cap**: at most ``slots`` uploads checked at once and ``queue`` more waiting; past that ``503`` with
  ``Retry-After``;
- **attempts per hour**: every upload that reaches this point counts, refused ones included (the accepted-upload
  limit of :mod:`arena.server.intake` counts only stored versions), at most ``attempts_per_hour`` per author;
  ``429`` past it.

Admitted uploads run in ``slots`` threads of their own (:attr:`Admission.limiter`) and wait for one without holding
any thread, so however many are queued the public pages have their threads. The counts live in
memory: a restart forgets attempts (the accepted-upload limit is in the store and is kept).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from arena.server.ratelimit import Window

HOUR = 3600.0


@dataclass(frozen=True)
class AdmissionLimits:
    """``server: upload_slots, upload_queue, attempts_per_hour`` (docs/SERVER.md)."""

    slots: int = 1
    queue: int = 8
    attempts_per_hour: int = 60
    retry_after_s: int = 30
    """What ``Retry-After`` says when the queue is full or the author's upload is in flight."""


@dataclass(frozen=True)
class Refusal:
    status: int
    error: str
    retry_after: int


class Admission:
    """The upload queue of one server (used from the event loop only, so it needs no lock)."""

    def __init__(self, limits: AdmissionLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self.limiter = anyio.CapacityLimiter(limits.slots)
        """The uploads' threads: ``slots`` of them; an upload waits for one without holding any thread."""
        self._busy: set[str] = set()
        self._attempts = Window(limits.attempts_per_hour, HOUR, clock)
        self.in_flight = 0

    def take(self, author: str) -> Refusal | None:
        """Take ``author``'s upload on (counted as an attempt; :meth:`release` it when it has its answer), or say
        why not."""
        if author in self._busy:
            return Refusal(429, "another upload of yours is still being checked: one at a time per author; send "
                                "this one when it has its answer", self.limits.retry_after_s)
        if self.in_flight >= self.limits.slots + self.limits.queue:
            return Refusal(503, f"the server is checking {self.in_flight} uploads already (its queue is full); "
                                "try again shortly", self.limits.retry_after_s)
        wait = self._attempts.hit(author)
        if wait is not None:
            return Refusal(429, f"rate limit: {self.limits.attempts_per_hour} uploads an hour, refused ones "
                                f"included; the next is possible in {wait} s", wait)
        self._busy.add(author)
        self.in_flight += 1
        return None

    def release(self, author: str) -> None:
        """``author``'s upload that :meth:`take` took on has its answer."""
        if author in self._busy:
            self._busy.discard(author)
            self.in_flight -= 1
