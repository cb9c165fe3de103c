"""The league server's read-only store connections keep a small page cache, whatever the size of the store (issue
44): it opens one per web thread, and each used to hold as much of the store as it read, up to 2 MB."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from arena.registry.versions import Registry
from arena.server.views import Views
from arena.store import READER_CACHE_KIB, Store
from tests.sitestore import fill_store

READERS = 4


def sqlite_heap() -> int:
    """The bytes SQLite's own allocator holds in this process (every connection's page cache among them)."""
    try:
        library = ctypes.CDLL("libsqlite3.so.0")  # the library Python's sqlite3 module is linked to here
    except OSError:
        pytest.skip("no shared libsqlite3 to ask for its memory")
    library.sqlite3_memory_used.restype = ctypes.c_int64
    return int(library.sqlite3_memory_used())


@pytest.mark.slow
def test_read_only_connections_hold_a_bounded_cache_whatever_the_store_size(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    tid = fill_store(store, "ladder", bots=("a", "b", "c", "d", "e"), players=3, repeats=60, logs=False)
    store.close()
    size = (tmp_path / "arena.db").stat().st_size
    assert size > 3 * READER_CACHE_KIB * 1024  # else a cache of the whole file would pass too
    before = sqlite_heap()
    views = [Views(tmp_path / "arena.db", Registry(tmp_path / "bots")) for _ in range(READERS)]
    readers = [view.store() for view in views]  # as the server's web threads open theirs
    for reader in readers:
        assert len(reader.match_list(tid)) > 1000  # every page of the league read
    per_reader = (sqlite_heap() - before) / READERS
    for reader, view in zip(readers, views, strict=True):
        reader.close()
        view.close()
    # The cache and what a connection needs besides (its schema, statements): well under the file's size.
    assert per_reader < 2 * READER_CACHE_KIB * 1024, (per_reader, size)
