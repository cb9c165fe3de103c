"""What a league server's start-up leaves in memory, by the size of its store (issue 44). Prints ONE JSON object.

    python bench/startup_memory.py                         # stores of 1,000 and 3,000 matches
    python bench/startup_memory.py --matches 200 600       # a smoke run

For each size it builds a league store the way bench/league.py plays its league (the real League policy, run loop
and store; the sample bots' code played in-process, its bot directories left where they are), publishes its site
once (a restarted server finds its site there), then starts the league again in a fresh process as ``arena serve``'s
league thread does (glibc's arenas capped, :meth:`League.claim`, the run loop up to the end of the first publish,
which gives the heap back) and reads what that left: the process's RSS, pymalloc's arenas and the bytes in its live
blocks (``sys._debugmallocstats``), SQLite's own heap (``sqlite3_memory_used``). A second fresh process does the same
under ``tracemalloc`` (25 frames): the server's traced peak over its start-up (its publishes are forked:
arena/server/public.py), what is still traced after it, all of it and the part allocated from ``arena/``; then, in
the same process, a publish of the whole site as the publishing process makes it: its peak, and what the league's
snapshot holds by the line that allocated it. The slopes are per 1,000 matches between the smallest and the largest store. What is not
here: the web threads and the match workers' pool (``arena serve``'s), whose reads come after start-up. A
measurement, not a test.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import tracemalloc
from contextlib import closing
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import league as league_bench  # bench/league.py: the league and its in-process player

from arena.run import loop
from arena.run.config import LeagueConfig
from arena.run.league import League
from arena.server import heap, public
from arena.server.app import published
from arena.site import snapshot as site_snapshot
from arena.store import Store

NAME = "ladder"


def config(root: Path) -> LeagueConfig:
    return LeagueConfig(name=NAME, players=3, seed=1, registry=root / "bots",
                        entries=(str(league_bench.SAMPLES / "greedy"), str(league_bench.SAMPLES / "random"),
                                 "registry:*"))


def build(root: Path, matches: int) -> None:
    """A league store of ``matches`` played matches in ``root`` (bench/league.py's league, with no new version)."""
    _, store, league = league_bench.new_league(root, 3, 1)
    stop = threading.Event()
    league._stop = stop
    loop.run(store, league, league_bench.InProcessPlayer(stop, matches, matches + 1, None), stop=stop)
    store.close()


def start(root: Path, on_publish: Any = None) -> int:
    """The league thread's start-up on ``root``'s store, up to the end of its first publish; the matches done."""
    league = League(config(root), root / "arena.db")
    stop = threading.Event()

    def publish(store: Store, ids: tuple[int, ...] | None) -> None:
        published(store, NAME, root / "public")
        stop.set()

    league.publish = publish
    store = Store(root / "arena.db")
    league.claim(store)
    league._stop = stop
    assert league._lease is not None
    loop.run(store, league, league_bench.InProcessPlayer(stop, 10**9, 10**9, None), stop=stop, lease=league._lease)
    loop.release(store, league._lease)
    done = store.status_counts(store.tournament(NAME)["id"]).get("done", 0)
    store.close()
    return int(done)


def rss_mb() -> float:
    return next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith("VmRSS:")) / 1024


def pymalloc() -> dict[str, int]:
    """pymalloc's arenas in use and the bytes in its live blocks, read from ``sys._debugmallocstats`` (on fd 2)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as out:
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode()

    def number(label: str) -> int:
        found = re.search(rf"# {label}\s*=\s*([\d,]+)", text)
        return -1 if found is None else int(found[1].replace(",", ""))

    return {"arenas": number("arenas allocated current"), "block_bytes": number("bytes in allocated blocks")}


def sqlite_bytes() -> int:
    try:
        library = ctypes.CDLL("libsqlite3.so.0")
    except OSError:
        return -1
    library.sqlite3_memory_used.restype = ctypes.c_int64
    return int(library.sqlite3_memory_used())


def measure(root: Path) -> dict[str, Any]:
    heap.limit_arenas()  # as arena serve does, before any thread starts
    gc.collect()
    before = {"rss_mb": round(rss_mb(), 1), **pymalloc()}
    done = start(root)
    gc.collect()
    heap.give_back()
    after = {"rss_mb": round(rss_mb(), 1), **pymalloc(), "sqlite_bytes": sqlite_bytes()}
    return {"done": done, "before": before, "after": after}


def trace(root: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    tracemalloc.start(25)
    begin = tracemalloc.get_traced_memory()[0]
    start(root)  # the server's side: its publishes are forked (arena/server/public.py's publish_apart)
    found["server_peak_bytes"] = tracemalloc.get_traced_memory()[1] - begin
    gc.collect()
    after = tracemalloc.take_snapshot()
    mine = after.filter_traces([tracemalloc.Filter(True, f"{BENCH.parent}/arena/*", all_frames=True)])
    found["traced_after_bytes"] = sum(stat.size for stat in after.statistics("filename"))
    found["traced_after_by_arena_bytes"] = sum(stat.size for stat in mine.statistics("filename"))
    # What the publishing process peaks at (a publish of the whole site, as a restarted server's first is), and
    # what the league's snapshot holds then: transient, in a process that ends with the publish.
    whole = site_snapshot.snapshot

    def snapshot(*args: Any, **kwargs: Any) -> site_snapshot.Snapshot:
        snap = whole(*args, **kwargs)
        held = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, f"{BENCH.parent}/arena/*")])
        found["snapshot_holds"] = {str(stat.traceback[0]).replace(f"{BENCH.parent}/", ""): stat.size
                                   for stat in held.statistics("lineno")[:8]}
        return snap

    site_snapshot.snapshot = snapshot  # type: ignore[assignment]
    gc.collect()
    begin = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    with closing(Store(root / "arena.db", readonly=True)) as store, tempfile.TemporaryDirectory() as out:
        public.publish(store, NAME, Path(out))
    found["publish_peak_bytes"] = tracemalloc.get_traced_memory()[1] - begin
    return found


def child(mode: str, root: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, f"--{mode}", str(root)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout) if mode != "warm" else {}


def per_1000(rows: list[dict[str, Any]], value: Any) -> float:
    """The change of ``value`` per 1,000 matches between the smallest store and the largest."""
    first, last = rows[0], rows[-1]
    return round((value(last) - value(first)) / (last["matches"] - first["matches"]) * 1000, 2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--trace", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--warm", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure or args.trace or args.warm:
        if args.warm:
            start(args.warm)
        print(json.dumps(measure(args.measure) if args.measure else trace(args.trace) if args.trace else {}))
        return
    rows = []
    for matches in sorted(args.matches):
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            build(root, matches)
            child("warm", root)  # the site a restarted server finds
            rows.append({"matches": matches, **child("measure", root), **child("trace", root)})
    slopes = {} if len(rows) < 2 else {
        "rss_mb": per_1000(rows, lambda row: row["after"]["rss_mb"] - row["before"]["rss_mb"]),
        "pymalloc_arenas": per_1000(rows, lambda row: row["after"]["arenas"]),
        "pymalloc_block_bytes": per_1000(rows, lambda row: row["after"]["block_bytes"]),
        "sqlite_bytes": per_1000(rows, lambda row: row["after"]["sqlite_bytes"]),
        "server_peak_bytes": per_1000(rows, lambda row: row["server_peak_bytes"]),
        "publish_peak_bytes": per_1000(rows, lambda row: row["publish_peak_bytes"]),
        "traced_after_bytes": per_1000(rows, lambda row: row["traced_after_bytes"]),
        "traced_after_by_arena_bytes": per_1000(rows, lambda row: row["traced_after_by_arena_bytes"])}
    print(json.dumps({"bench": "startup-memory", "runs": rows, "per_1000_matches": slopes}, indent=2))


if __name__ == "__main__":
    main()
