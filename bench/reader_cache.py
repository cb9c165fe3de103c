"""What a league server's web threads hold in SQLite's heap, by the size of the store (issue 44). Prints ONE JSON
object.

    python bench/reader_cache.py --matches 1000 3000 --readers 8    # builds the stores as bench/startup_memory.py
    python bench/reader_cache.py --db a/arena.db b/arena.db          # stores already built by it

The server's :class:`~arena.server.views.Views` open a read-only store connection in each web thread that reads
(anyio's pool: up to 40). Here ``--readers`` threads each open one and read what ``/api/standings`` and the site's
match list read (the standings, every match's row), as the threads of a server that has served for a while have;
then SQLite's own heap (``sqlite3_memory_used``: the connections' page caches, schemas and statements) and the RSS
added are read, with the connections still open. A measurement, not a test: tests/store/test_reader_cache.py
asserts the bound.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import tempfile
import threading
from pathlib import Path
from typing import Any

import startup_memory

import arena.store
from arena.stats.standings import standings
from arena.store import Store


def measure(db: Path, readers: int) -> dict[str, Any]:
    library = ctypes.CDLL("libsqlite3.so.0")  # the library Python's sqlite3 module is linked to on this host
    library.sqlite3_memory_used.restype = ctypes.c_int64
    gc.collect()
    before, rss = int(library.sqlite3_memory_used()), startup_memory.rss_mb()
    done = threading.Semaphore(0)
    measured = threading.Event()

    def read() -> None:
        # as the server's web threads open theirs (arena/server/views.py); closed by its own thread: SQLite's rule
        store = Store(db, readonly=True, cache_kib=arena.store.READER_CACHE_KIB)
        tid = store.tournament(startup_memory.NAME)["id"]
        standings(store, tid)
        store.match_list(tid)
        done.release()
        measured.wait()
        store.close()

    threads = [threading.Thread(target=read) for _ in range(readers)]
    for thread in threads:
        thread.start()
    for _ in threads:
        done.acquire()
    gc.collect()
    found = {"store_bytes": db.stat().st_size, "readers": readers, "cache_kib": arena.store.READER_CACHE_KIB,
             "sqlite_heap_bytes": int(library.sqlite3_memory_used()) - before,
             "rss_added_mb": round(startup_memory.rss_mb() - rss, 1)}
    measured.set()
    for thread in threads:
        thread.join()
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, nargs="*", default=[])
    parser.add_argument("--db", type=Path, nargs="*", default=[])
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--cache-kib", type=int, default=arena.store.READER_CACHE_KIB,
                        help="the read-only connections' page cache (2000: SQLite's default, as before issue 44)")
    args = parser.parse_args(argv)
    arena.store.READER_CACHE_KIB = args.cache_kib
    rows = [measure(db, args.readers) for db in args.db]
    for matches in args.matches:
        with tempfile.TemporaryDirectory() as scratch:
            startup_memory.build(Path(scratch), matches)
            rows.append({"matches": matches, **measure(Path(scratch) / "arena.db", args.readers)})
    print(json.dumps({"bench": "reader-cache", "runs": rows}, indent=2))


if __name__ == "__main__":
    main()
