"""How long a big field's site build waits for its worker processes: the time the building process is blocked
making the pool, and the time until both workers are ready for work. Prints ONE JSON object.

The store is :mod:`bench.scale`'s synthetic one (``--bots`` bots, about ``--per-bot`` matches each, seed 1), made
once. Each run makes the pool as a full build does (arena/site/build.py), waits for both workers, and ends it.
Run with another checkout's Python to compare (``--store`` reuses a store); before 7caafa5 the snapshot went with
the pool's arguments, and this measures that way for such a checkout.

    python bench/site_pool_start.py
    python bench/site_pool_start.py --runs 5 --store /tmp/store.db

This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import inspect
import json
import multiprocessing
import pickle
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any


def once(store_path: Path, workers: int) -> dict[str, float]:
    from arena.site import output
    try:
        from arena.site import build, snapshot
    except ImportError:  # a checkout from before issue 37 cut arena/site/data.py and render.py by job
        from arena.site import data as snapshot
        from arena.site import render as build
    from arena.store import Store

    store = Store(store_path)
    snap = snapshot.snapshot(store, store.tournaments()[0]["name"], whole=False)
    with tempfile.TemporaryDirectory() as out:
        manifest = output.Manifest(Path(out), {}, staged=True)
        started = time.perf_counter()
        if hasattr(build, "_workers"):
            since = "version" in inspect.signature(build._workers).parameters  # a full build keyed by its workers
            making = build._workers(snap, manifest, "v", workers) if since else build._workers(snap, manifest, workers)
            pool = making.__enter__()
        else:  # before 7caafa5
            needed = pickle.dumps(replace(snap, history={}, standings=[], head_to_head={}, seat_totals={},
                                          faulted=[], shared_wins=Counter(), match_list=[]))
            pool = multiprocessing.get_context("spawn").Pool(workers, build._start_worker,
                                                             (needed, manifest.out, True))
        made = time.perf_counter() - started
        pool.map(time.sleep, [0.0] * workers, chunksize=1)
        ready = time.perf_counter() - started
        pool.terminate()
        return {"pool_made_s": round(made, 2), "workers_ready_s": round(ready, 2)}


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scale import bench_store, store_options

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    store_options(parser)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with bench_store(args, "arena-pool-start-") as (_, store):
        runs: list[dict[str, Any]] = [once(store, args.workers) for _ in range(args.runs)]
    print(json.dumps({"bots": args.bots, "per_bot": args.per_bot, "workers": args.workers, "runs": runs}))


if __name__ == "__main__":
    main()
