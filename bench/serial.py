"""Benchmark: what keeping one deal's matches apart costs (arena/run/dispatch.py), with 2 workers. Prints ONE JSON
object.

Two set-ups, each run alternately with the exclusion on (what every runner does) and off (the old dispatch: the
batch in order, whatever plays), ``--runs`` times each, a fresh store every run:

- **demo**: ``tournaments/demo.yaml`` (48 matches: 16 duplicate deals of 3 seat rotations) on the local pool of 2
  workers, in the process sandbox, through the real run loop, as ``arena run tournaments/demo.yaml`` plays it;
- **league**: a league of the four sample bots (house bots, 3 seats, ``groups_per_batch`` = workers = 2, the
  matchmaker's throttle off so both variants schedule the same matches), played by the real League policy over
  the real run loop on the local pool of 2 workers until ``--league-matches`` matches are stored.

Reported per set-up and variant: matches per second of each run (wall clock, from the run's start to its end,
the pool's start included as ``arena run`` pays it), the median, the spread (lowest and highest) and the median's
cost of the exclusion in percent (the goal: at most 5% fewer matches per second for the demo).

    python bench/serial.py [--runs 5] [--league-matches 48] [--only demo|league]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from arena.game.rules import Rules
from arena.run import loop
from arena.run.config import LeagueConfig, load_config
from arena.run.league import League
from arena.run.players import LocalPool, played
from arena.run.tournament import AllPending
from arena.store import Store

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"
WORKERS = 2


def demo_once(work: Path, one_per_deal: bool) -> tuple[int, float]:
    """Matches played and wall seconds of one whole demo tournament."""
    config = load_config(ROOT / "tournaments" / "demo.yaml")
    store = Store(work / "demo.db")
    started = time.perf_counter()
    with played(LocalPool(WORKERS, one_per_deal)) as pool:
        report = loop.run(store, AllPending(config), pool)
    seconds = time.perf_counter() - started
    store.close()
    if report.failed or report.interrupted:
        raise SystemExit(f"the demo failed: {report}")
    return report.played, seconds


def league_once(work: Path, one_per_deal: bool, matches: int) -> tuple[int, float]:
    """Matches stored and wall seconds of a league of the sample bots stopped after ``matches`` matches."""
    config = LeagueConfig(name="bench", entries=tuple(str(SAMPLES / name) for name in
                                                      ("random", "greedy", "planner", "js-greedy")),
                          players=3, seed=11, workers=WORKERS, groups_per_batch=WORKERS, throttle=False,
                          registry=work / "registry", rules=Rules.from_dict({"threshold": 50}))
    league = League(config, work / "league.db")
    store = Store(work / "league.db")
    stop = threading.Event()

    def enough(progress: loop.Progress) -> None:
        if progress.played >= matches:
            stop.set()

    started = time.perf_counter()
    with played(LocalPool(WORKERS, one_per_deal)) as pool:
        report = loop.run(store, league, pool, on_result=enough, stop=stop)
    seconds = time.perf_counter() - started
    store.close()
    if report.failed:
        raise SystemExit(f"the league failed: {report}")
    return report.played, seconds


def summary(rates: list[float]) -> dict[str, Any]:
    return {"matches_per_s": [round(rate, 3) for rate in rates], "median": round(statistics.median(rates), 3),
            "lowest": round(min(rates), 3), "highest": round(max(rates), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="Runs of each variant, alternated.")
    parser.add_argument("--league-matches", type=int, default=48)
    parser.add_argument("--only", choices=("demo", "league"))
    args = parser.parse_args()
    found: dict[str, Any] = {"workers": WORKERS, "runs": args.runs, "cpus": os.cpu_count(),
                             "loadavg_at_start": [round(load, 2) for load in os.getloadavg()],
                             "python": platform.python_version()}
    setups = [name for name in ("demo", "league") if args.only in (None, name)]
    for setup in setups:
        rates: dict[str, list[float]] = {"one_per_deal": [], "any_order": []}
        played_counts: set[int] = set()
        for run in range(args.runs):
            # Alternate which variant goes first, so a drift in the machine's load falls on both alike.
            order = (True, False) if run % 2 == 0 else (False, True)
            for one_per_deal in order:
                with tempfile.TemporaryDirectory() as tmp:
                    work = Path(tmp)
                    work.chmod(0o755)  # the sandbox runs bots as users of their own
                    count, seconds = (demo_once(work, one_per_deal) if setup == "demo" else
                                      league_once(work, one_per_deal, args.league_matches))
                played_counts.add(count)
                rates["one_per_deal" if one_per_deal else "any_order"].append(count / seconds)
        on, off = summary(rates["one_per_deal"]), summary(rates["any_order"])
        found[setup] = {"matches": sorted(played_counts), "one_per_deal": on, "any_order": off,
                        "cost_percent": round(100 * (1 - on["median"] / off["median"]), 1)}
    found["loadavg_at_end"] = [round(load, 2) for load in os.getloadavg()]
    print(json.dumps(found))


if __name__ == "__main__":
    main()
