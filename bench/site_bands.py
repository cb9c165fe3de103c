"""What a big field's tournament page can show of who is apart: for fields filled as bench/scale.py fills them (a
balanced random design, places from fixed strengths plus noise), how many opponents a bot met, the share of the top
30's head-to-head grid that is "never met", and the bands of bots the data cannot order (arena/site/pages/tournament.py's
``bands``): how many, the largest, the bots not yet ranked, and as many for bands of intervals that meet in a
chain, the alternative not taken. Prints ONE JSON object.

    python bench/site_bands.py --sizes 60x48 200x8 200x48

This is a measurement, not a test: nothing here asserts on the numbers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from arena.site.pages.tournament import bands
from arena.site.snapshot import SMALL_FIELD, snapshot


def measure(directory: Path, bots: int, per_bot: int, seed: int) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scale import fill

    store, _, _, _ = fill(directory / f"{bots}x{per_bot}.db", bots, per_bot, seed)
    snap = snapshot(store, "scale")
    met = [len(opponents) for opponents in snap.met.values()]
    top = [line.bot_id for line in snap.standings[:SMALL_FIELD]]
    cells = [(a, b) for a in top for b in top if a != b]
    never = sum(1 for a, b in cells if not snap.head_to_head.get((a, b), (0, 0))[1])
    found, unranked = bands(snap)
    # The alternative not taken: bands of intervals that meet in a chain (a bot joins the band before it if its
    # interval meets any of the band's).
    chained: list[int] = []
    reach = 0
    for line in snap.shown.lines:
        if line.ranked and line.interval is not None:
            if chained and line.interval[0] <= reach:
                chained[-1] += 1
            else:
                chained.append(1)
            reach = max(reach, line.interval[1])
    store.close()
    return {"bots": bots, "matches_per_bot": per_bot, "opponents_met_median": statistics.median(met),
            "opponents_met_max": max(met), "top_grid_never_met_share": round(never / len(cells), 3),
            "bands": len(found), "largest_band": max((len(band.bots) for band in found), default=0),
            "unranked": len(unranked), "chained_bands": len(chained), "largest_chained": max(chained, default=0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["60x48", "200x8", "200x48"],
                        help="Fields as BOTSxMATCHES_PER_BOT.")
    parser.add_argument("--seed", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        fields = [measure(Path(scratch), *map(int, size.split("x")), options.seed) for size in options.sizes]
    print(json.dumps({"fields": fields}))


if __name__ == "__main__":
    main()
