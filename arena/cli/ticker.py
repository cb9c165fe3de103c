"""Progress for a log file. On a terminal ``arena run`` and ``arena test`` redraw one status line; written to a file
(a CI log, ``nohup``, a pipe) that line would be noise, and nothing was printed until the end. There they print a
line every :data:`SHARE` of the matches or :data:`EVERY_S` seconds instead, whichever comes first, as cutechess
and fastchess print one line per game (a line per game would be thousands of lines for a long run)."""

from __future__ import annotations

import time
from collections.abc import Callable

SHARE = 0.1
"""A line at least every tenth of the matches."""
EVERY_S = 30.0
"""A line at least this often while matches finish."""


class Ticker:
    """Says when the next progress line is due: after :data:`SHARE` of ``total`` matches, or :data:`EVERY_S`
    seconds, since the last one (times from ``clock``)."""

    def __init__(self, total: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = max(1, int(total * SHARE))
        self.clock = clock
        self._count = 0
        self._at = clock()

    def due(self, count: int) -> bool:
        """Whether ``count`` finished matches call for a line (and, if so, count from here)."""
        now = self.clock()
        if count - self._count < self.every and now - self._at < EVERY_S:
            return False
        self._count, self._at = count, now
        return True
