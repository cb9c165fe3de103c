"""When each step of a big field's full site build starts and ends, in the building process: what runs while its
workers make the match pages, and what runs alone after. Prints ONE JSON object.

The store is :mod:`bench.scale`'s synthetic one (``--bots`` bots, about ``--per-bot`` matches each, seed 1, no
logs), made once unless ``--store`` names one. The build's steps (functions of arena/site/build.py and
arena/site/snapshot.py, or of render.py and data.py in an older checkout) are wrapped with timers for the run; a
step a checkout does not have is left out. The building process's garbage collections are timed too, by generation
(``gc.callbacks``).

    python bench/site_timeline.py --store /tmp/store.db

This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STEPS = {"build": ("stale_work", "write_matches", "_meanwhile", "write_pages", "bots_think"),
         "snapshot": ("read_rest",)}


def build(store_path: Path, out: Path, workers: int) -> dict[str, Any]:
    try:
        from arena.site import build as site_build
        from arena.site import snapshot
    except ImportError:  # a checkout from before issue 37 cut arena/site/data.py and render.py by job
        from arena.site import data as snapshot
        from arena.site import render as site_build
    from arena.store import Store

    steps: list[dict[str, Any]] = []
    started = time.perf_counter()

    def timer(name: str, step: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(step)
        def timed(*args: Any, **kwargs: Any) -> Any:
            begun, cpu = time.perf_counter(), time.process_time()
            try:
                return step(*args, **kwargs)
            finally:
                steps.append({"step": name, "start_s": round(begun - started, 1),
                              "end_s": round(time.perf_counter() - started, 1),
                              "cpu_s": round(time.process_time() - cpu, 1)})
        return timed

    for module, names in (("build", site_build), ("snapshot", snapshot)):
        for name in STEPS[module]:
            if hasattr(names, name):
                setattr(names, name, timer(name, getattr(names, name)))
    counts, seconds, collecting = [0, 0, 0], [0.0, 0.0, 0.0], [0.0]

    def collection(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collecting[0] = time.perf_counter()
        else:
            counts[info["generation"]] += 1
            seconds[info["generation"]] += time.perf_counter() - collecting[0]

    store = Store(store_path)
    gc.callbacks.append(collection)
    started = time.perf_counter()
    site_build.build_site(store, out, workers=workers, full=True)
    gc.callbacks.remove(collection)
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall_s": round(time.perf_counter() - started, 1),
            "building_process_cpu_s": round(own.ru_utime + own.ru_stime, 1),
            "workers_cpu_s": round(children.ru_utime + children.ru_stime, 1),
            "building_process_collections": {"count": counts, "s": [round(s, 2) for s in seconds]},
            "steps": sorted(steps, key=lambda step: step["start_s"])}


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scale import bench_store, store_options

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    store_options(parser)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with bench_store(args, "arena-site-timeline-") as (directory, store):
        os.sync()  # the store just filled is on disk before the build is timed
        print(json.dumps(build(store, directory / "site", args.workers), indent=1))


if __name__ == "__main__":
    main()
