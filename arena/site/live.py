"""A site kept current while a tournament plays (``arena run --live``): incremental builds at most every so often,
and a last one at the end.

:class:`LiveSite` is told of each stored result by the run loop (its ``on_start`` and ``on_result`` hooks:
:meth:`LiveSite.changed`) and builds, in a thread of its own with its own read-only connection to the store, when
one is due: at most every ``every_s`` seconds, and never sooner than four times its own last cost after the last,
so that on a big tournament the builds take at most a fifth of a core. A thread rather than a build in the loop's
own turn: a run held up by one long match (or a batch of them) still gets the results stored before it onto the
site, and the loop never waits for a build. Each is the incremental build of
:func:`arena.site.build.build_site` with ``live_refresh_s`` set: the pages say "live, N of M matches" and reload
themselves; at the end :meth:`LiveSite.finish` builds once more without it, which rewrites those pages without
the reloading. Every file is written to a temporary name and renamed over the old one
(:func:`arena.site.output.write_file`), so a browser or a static server never sees half a page.

What a live build rewrites is what the manifest's keys (arena/site/output.py) say changed. Each kind of file is
keyed by what it is made from; a new page kind is added to :func:`arena.site.build.tournament_pages` (or, for one
file per match, :func:`arena.site.build.match_outputs`) with its inputs, and the live builds follow:

==============================  =====================================================  ==========================
file                            made from (its key)                                    rewritten by a live build
==============================  =====================================================  ==========================
``index.html`` (home)           every tournament's summary, and the live state         every build with news
``t/T/index.html``              standings, ratings, head-to-head, faults, live N of M  every build with news
``t/T/matches/N.html``, data    the match's stamp, neighbours, listing page, its log   new matches (and the one
                                                                                       before: its next link)
``t/T/matches/page-K.html``     the stamps of its page's matches                       the last page(s)
``t/T/bots/B/index.html``       the bot's standing and first page of matches, "live"   bots that played
``t/T/bots/B/matches-K.html``   the stamps of its page's matches                       the bot's last page(s)
``assets/*``                    the asset's bytes                                      never
==============================  =====================================================  ==========================

The store is read afresh for each build (:func:`arena.site.snapshot.snapshot`); match results are read only for the
pages being made.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from arena.store import Store

if TYPE_CHECKING:
    from arena.site.build import BuildReport

EVERY_S = 10.0
"""Default: at most one live build in this many seconds (the pages' own reload period too)."""
COST_FACTOR = 4.0
"""A live build waits at least this many times its last one's cost: builds take at most 1/(1+4) of a core."""


class LiveSite:
    """The site of tournament ``name`` in ``out`` from the store at ``db``, built while it plays (see the module
    docstring): :meth:`start`, :meth:`changed` after each stored result, :meth:`stop`, then :meth:`finish`.
    ``warn`` is told of a live build that failed (a full disk): the run goes on, and the next build tries again."""

    def __init__(self, db: Path, name: str, out: Path, every_s: float = EVERY_S,
                 clock: Callable[[], float] = time.monotonic, warn: Callable[[str], None] | None = None) -> None:
        self.db = db
        self.name = name
        self.out = out
        self.every_s = every_s
        self.clock = clock
        self.warn = warn
        self.builds: list[BuildReport] = []
        """Every live build so far, oldest first (not the last one)."""
        self._last: float | None = None
        self._cost = 0.0
        self._store: Store | None = None
        self._changed = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def refresh_s(self) -> int:
        """How often a live page reloads itself: the build period, at least a second (not its cost-stretched
        value: the bot pages carry it, and a period that moved would rewrite them all)."""
        return max(1, round(self.every_s))

    def wait_s(self) -> float:
        """How long until a build is due (0: now)."""
        if self._last is None:
            return 0.0
        return max(0.0, self._last + max(self.every_s, COST_FACTOR * self._cost) - self.clock())

    def due(self) -> bool:
        return self.wait_s() <= 0

    def maybe(self) -> BuildReport | None:
        """Build the live site now if one is due; the build's report, or None."""
        return self.build() if self.due() else None

    def build(self) -> BuildReport:
        """A live build now: one process (the run's workers have the CPUs), only the files that changed."""
        from arena.site.build import build_site  # here: arena run imports this module for EVERY_S, often with no site

        started = self.clock()
        if self._store is None:
            self._store = Store(self.db, readonly=True)  # opened by the thread that builds: SQLite's rule
        report = build_site(self._store, self.out, [self.name], workers=1, live_refresh_s=self.refresh_s)
        self._last = self.clock()
        self._cost = self._last - started
        self.builds.append(report)
        return report

    # -- the builder thread -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start building in the background: a first build at once, then one when due after each change."""
        self._changed.set()
        self._thread = threading.Thread(target=self._run, name=f"live site {self.name}", daemon=True)
        self._thread.start()

    def changed(self) -> None:
        """A result was stored: a build is wanted (when due)."""
        self._changed.set()

    def stop(self) -> None:
        """Stop the builder (a build under way is finished first: its files are whole either way)."""
        self._stopping.set()
        self._changed.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        try:
            while True:
                self._changed.wait()
                if self._stopping.wait(self.wait_s()) or self._stopping.is_set():
                    return
                self._changed.clear()
                try:
                    self.build()
                except Exception as error:  # noqa: BLE001 - a failed live build must not stop the run
                    self._last = self.clock()  # not again at once: after the period
                    if self.warn is not None:
                        self.warn(f"live site {self.out} not updated: {error}")
        finally:
            if self._store is not None:
                self._store.close()
                self._store = None

    def finish(self, store: Store, workers: int | None = None) -> BuildReport:
        """The build at the end of the run: the pages as they stay, no longer live (still only what changed)."""
        from arena.site.build import build_site  # as in build

        self.stop()
        return build_site(store, self.out, [self.name], workers=workers)
