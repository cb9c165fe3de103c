"""Sliding-window counts of events per key (an author, a client address): how the league server says "at most N an
hour" for upload attempts (:mod:`arena.server.admission`) and logins (:mod:`arena.server.sessions`).

The counts live in memory (a restart forgets them) and are bounded: a key's window keeps at most its limit of
times, and keys whose windows are empty are dropped once there are :data:`MAX_KEYS` of them, so a client that
comes from many addresses cannot grow the table without bound.
"""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Callable

MAX_KEYS = 100_000
"""Keys kept before the ones with empty windows are dropped."""


class Window:
    """At most ``limit`` events per key in any ``seconds`` (thread-safe); times from ``clock`` (monotonic)."""

    def __init__(self, limit: int, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.seconds = seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._times: dict[str, collections.deque[float]] = {}

    def hit(self, key: str) -> int | None:
        """Count an event of ``key`` and return None, or, if ``key`` has had ``limit`` in the window, count nothing
        and return the whole seconds until the next is allowed (for ``Retry-After``)."""
        with self._lock:
            now = self.clock()
            times = self._times.get(key)
            if times is None:
                if len(self._times) >= MAX_KEYS:
                    self._prune(now)
                times = self._times[key] = collections.deque()
            while times and times[0] <= now - self.seconds:
                times.popleft()
            if len(times) >= self.limit:
                return max(1, math.ceil(times[0] + self.seconds - now))
            times.append(now)
            return None

    def _prune(self, now: float) -> None:
        for key in [key for key, times in self._times.items() if not times or times[-1] <= now - self.seconds]:
            del self._times[key]
        if len(self._times) >= MAX_KEYS:
            # Every key is busy (a flood from that many addresses): forget the oldest half rather than grow.
            for key in list(self._times)[:MAX_KEYS // 2]:
                del self._times[key]
