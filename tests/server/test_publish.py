"""A league server's publish happens in a process of its own (arena/server/public.py's ``publish_apart``): what a
publish reads of the whole league never enters the server's heap, where CPython would keep the arenas its peak
spread over for the rest of the server's life (issue 44, docs/SERVER.md "Memory")."""

from __future__ import annotations

# Imported before the measure: a module's import is not a publish's.
import concurrent.futures.process  # noqa: F401
import multiprocessing.forkserver  # noqa: F401
import tracemalloc
from pathlib import Path

from arena.server.app import published
from arena.site import output
from tests.sitestore import make_store

PEAK_BYTES = 256 * 1024
"""What a publish may add to the server's traced heap at its peak, whatever the league's size. Published in the
server's own process, this 60-match league's peaked at 1.05 MB (its snapshot, every page rendered); apart, 60 KB."""


def site_files(out: Path) -> list[str]:
    return sorted(path.relative_to(out).as_posix() for path in out.rglob("*")
                  if path.is_file() and path.name != output.MANIFEST)


def test_a_publish_peaks_outside_the_servers_heap_and_writes_the_same_site(tmp_path: Path) -> None:
    store = make_store(tmp_path, bots=("alpha", "beta", "gamma", "delta"), players=3, repeats=5)
    published(store, "t", tmp_path / "first")  # it starts the process that publishes are forked from
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        published(store, "t", tmp_path / "public")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(site_files(tmp_path / "public")) > 100, "the publish wrote the league's site"
    assert site_files(tmp_path / "public") == site_files(tmp_path / "first")
    assert peak - before < PEAK_BYTES, f"a publish raised the server's heap by {peak - before:,} bytes at its peak"
