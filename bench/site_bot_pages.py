"""What a big field's bot pages cost to make (in a full build, the further pages of the bots' matches are made
while the workers make the match pages, the bots' own pages after them): every bot's page and the further pages
of its matches, made and keyed but not written, from a whole snapshot with every match's listing row in it (as
the workers hand them over). Prints ONE JSON object.

The store is :mod:`bench.scale`'s synthetic one (``--bots`` bots, about ``--per-bot`` matches each, seed 1, no
logs), made once unless ``--store`` names one. Run it with another checkout's Python to compare, alternated.

    python bench/site_bot_pages.py --store /tmp/store.db

This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def measure(store_path: Path) -> dict[str, float]:
    from arena.site import output
    try:
        from arena.site import build, html, snapshot
    except ImportError:  # a checkout from before issue 37 cut arena/site/data.py and render.py by job
        from arena.site import data as snapshot
        from arena.site import render as build
        from arena.site import render as html
    from arena.store import Store

    store = Store(store_path)
    snap = snapshot.snapshot(store, store.tournaments()[0]["name"])
    for position in range(len(snap.stamps)):
        row = html.bot_row_html(snap, position)
        if row is not None:
            snap.cache.row_html[position] = row
    snap.matches.forget()
    snap.rows.clear()
    started, pages = time.process_time(), 0
    for path, inputs, make in build.tournament_pages(snap, None, True):
        output.key("version", path, inputs)
        make()
        pages += 1
    return {"bots": len(snap.bots), "pages": pages, "cpu_s": round(time.process_time() - started, 2)}


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scale import bench_store, store_options

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    store_options(parser)
    args = parser.parse_args()
    with bench_store(args, "arena-bot-pages-") as (_, store):
        print(json.dumps(measure(store)))


if __name__ == "__main__":
    main()
