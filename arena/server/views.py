"""What the web threads read: one store connection per thread, and public answers cached until the data changes.

Profiled under ``bench/server.py``, a public request used to open a store (which checks the whole file with
``PRAGMA quick_check`` and looks at the migrations), recompute the standings from every seat, and read every
bot's ``versions.json`` (check reports and all) from disk: that, not the answer, was most of its time. Now:

- **A connection per thread.** A web worker thread opens its read-only store once and keeps it
  (:meth:`Views.store`); SQLite wants a connection per thread, and the pool's threads are few and long-lived.
- **A data version.** One read-only connection, never used to write, is asked ``PRAGMA data_version`` before a
  cached answer is used: SQLite changes that number whenever *another* connection commits, whichever process it
  is in (the league recording a match, an upload landing, ``arena author add`` or ``revoke`` on the command line).
  Each change bumps :attr:`Views.generation`; a cache entry made under an older generation is stale.
- **A registry signature.** ``GET /api/bots`` reads the registry too, which a local ``arena submit`` changes
  without touching the store: its key adds the modification time and size of every bot's ``versions.json``
  (rewritten atomically with every new version), a few dozen ``stat`` calls.
- **Answers cached as bytes.** The standings JSON, the standings page and the bot listing are rendered once per
  key and served as they are; the authors' token hashes are cached the same way, so refusing a bad token (or
  accepting a good one) reads nothing from disk.

Private answers (an author's own bots, check reports and stderr) are never cached: they are per author and rare.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TypeVar

from arena.bots.files import VERSIONS_FILE
from arena.registry.versions import Registry
from arena.server.authors import Author, live_authors, match_token
from arena.store import READER_CACHE_KIB, Store

T = TypeVar("T")


class Views:
    """Read access to one store and registry for many web threads (thread-safe)."""

    def __init__(self, db: Path, registry: Registry) -> None:
        self.db = db
        self.registry = registry
        self._local = threading.local()
        self._lock = threading.Lock()
        # Shared by every thread under the lock; check_same_thread is off for that reason only.
        self._probe = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None,
                                      check_same_thread=False)
        self._seen: int | None = None
        self.generation = 0
        self._cache: dict[str, tuple[Hashable, object]] = {}
        self._making: dict[str, threading.Lock] = {}

    def close(self) -> None:
        with self._lock:
            self._probe.close()

    def store(self) -> Store:
        """This thread's read-only store, opened on its first call."""
        store: Store | None = getattr(self._local, "store", None)
        if store is None:
            # Unchecked: the server checked the file when it opened it, and a check per thread read all of it.
            store = self._local.store = Store(self.db, readonly=True, cache_kib=READER_CACHE_KIB, check=False)
        return store

    def refresh(self) -> int:
        """The current generation: bumped when anything committed to the store since the last call."""
        with self._lock:
            version = int(self._probe.execute("PRAGMA data_version").fetchone()[0])
            if version != self._seen:
                self._seen = version
                self.generation += 1
            return self.generation

    def registry_signature(self) -> tuple[tuple[str, int, int], ...]:
        """What changes whenever a version is added to the registry (see the module docstring)."""
        root = self.registry.root
        if not root.is_dir():
            return ()
        found = []
        for entry in root.iterdir():
            try:
                info = (entry / VERSIONS_FILE).stat()
            except OSError:
                continue  # not a bot (.incoming, a half-made directory): Registry.names() skips it too
            found.append((entry.name, info.st_mtime_ns, info.st_size))
        return tuple(sorted(found))

    def cached(self, name: str, key: Hashable, make: Callable[[], T], stale_ok: bool = True) -> T:
        """The entry ``name`` if it was made under ``key``, else ``make()`` stored under it.

        Made once however many threads miss at once: the first makes it, and while it does the others get the
        entry made under the previous key (a second-old answer, rather than every waiting request computing the
        standings again: a flood of 200 clients once made each answer take 6 s); only when there is no entry yet
        do they wait for the one being made (and always, with ``stale_ok`` false)."""
        with self._lock:
            entry = self._cache.get(name)
            making = self._making.setdefault(name, threading.Lock())
        if entry is not None and entry[0] == key:
            return entry[1]  # type: ignore[return-value]
        if entry is not None and stale_ok and not making.acquire(blocking=False):
            return entry[1]  # type: ignore[return-value]
        if entry is None or not stale_ok:
            making.acquire()
        try:
            with self._lock:
                entry = self._cache.get(name)
            if entry is not None and entry[0] == key:
                return entry[1]  # type: ignore[return-value]  # made while this thread waited
            value = make()
            with self._lock:
                self._cache[name] = (key, value)
            return value
        finally:
            making.release()

    def live_authors(self) -> tuple[tuple[str, Author], ...]:
        """(token hash, author) of every live author, as of this generation."""
        # Never a stale answer: a revoked token must stop working at once.
        return self.cached("authors", self.refresh(), lambda: tuple(live_authors(self.store())), stale_ok=False)

    def authenticate(self, token: str) -> Author | None:
        """The live author whose token this is, or None (every live hash is compared, as in
        :func:`arena.server.authors.authenticate`)."""
        return match_token(self.live_authors(), token)

    def author(self, author_id: int) -> Author | None:
        """The author with this id if their token is live (a revoked author is None)."""
        return next((author for _, author in self.live_authors() if author.id == author_id), None)
