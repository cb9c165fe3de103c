"""What one match page of a big field costs, part by part, in one process: its page data, its rendering, its row
on its bots' listings, its files' keys, and writing its file. Prints ONE JSON object (milliseconds a page).

The store is :mod:`bench.scale`'s synthetic one (``--bots`` bots, about ``--per-bot`` matches each, seed 1, no
logs), made once unless ``--store`` names one. The first ``--pages`` matches are read in one go, then each part
is timed over all of them in turn (CPU time). Run it with another checkout's Python to compare, alternated: on a
shared machine the parts drift (writing a file went from 0.03 to 0.17 ms within an hour here).

    python bench/site_match_page.py --store /tmp/store.db

This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path


def measure(store_path: Path, pages: int, out: Path) -> dict[str, float]:
    from arena.site import output
    try:
        from arena.site import build, common, snapshot
        from arena.site import html as site_html
        from arena.site.pages import match as match_data
    except ImportError:  # a checkout from before issue 37 cut arena/site/data.py and render.py by job
        from arena.site import data as common
        from arena.site import data as match_data
        from arena.site import data as snapshot
        from arena.site import render as build
        from arena.site import render as site_html
    from arena.store import Store

    store = Store(store_path)
    snap = snapshot.snapshot(store, store.tournaments()[0]["name"], whole=False)
    count = min(pages, len(snap.stamps))
    snap.matches.load(range(count))
    ms: dict[str, float] = {}

    def timed(name: str, part: Callable[[], object]) -> None:
        started = time.process_time()
        part()
        ms[name] = round((time.process_time() - started) / count * 1000, 3)

    made: list[match_data.MatchPage] = []

    def page_data() -> None:
        for position in range(count):
            view, unreadable = common.match_view(snap, snap.matches[position])
            made.append(match_data.match_page(snap, position, view, unreadable is not None))

    html: list[str] = []
    timed("page_data_ms", page_data)
    timed("render_ms", lambda: html.extend(site_html.render_match(page, snap.slug) for page in made))
    timed("listing_row_ms", lambda: [site_html.bot_row_html(snap, position) for position in range(count)])
    timed("keys_ms", lambda: [build.match_outputs(snap, position, "v") for position in range(count)])
    (out / "m").mkdir(parents=True)
    timed("write_ms", lambda: [output.write_file(out, f"m/{i}.html", text, True) for i, text in enumerate(html)])
    return {"pages": count, "page_bytes": len(html[0].encode()), **ms}


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scale import bench_store, store_options

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    store_options(parser)
    parser.add_argument("--pages", type=int, default=9600)
    args = parser.parse_args()
    with bench_store(args, "arena-match-page-") as (directory, store):
        print(json.dumps(measure(store, args.pages, directory / "site")))


if __name__ == "__main__":
    main()
