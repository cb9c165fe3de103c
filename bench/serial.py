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
cost of the exclusion in percent (the goal: at most 5% fewer matches per second for the demo), per pair of runs
played one after the other and of the medians. On a shared machine the load moves those by more than the
exclusion does, so each run's matches also give a *modelled* cost: how long each batch takes on 2 workers with
and without the exclusion, dispatched as the players do, given the seconds each of its matches took (per-batch
overheads left out, so it overstates the share). Run it under ``nice -n -5`` on a busy machine.

    python bench/serial.py [--runs 5] [--league-matches 48] [--only demo|league] [--groups-per-batch 2,4]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from arena.game.rules import Rules
from arena.match.protocol import Limits
from arena.run import loop
from arena.run.config import LeagueConfig, load_config
from arena.run.dispatch import DealQueue
from arena.run.jobs import MatchJob
from arena.run.league import League
from arena.run.players import LocalPool
from arena.run.tournament import AllPending
from arena.sandbox import SandboxLimits
from arena.store import Store

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"
WORKERS = 2


Played = tuple[int, float, list[list[tuple[int, float]]]]
"""Matches played, wall seconds, and each batch's matches in schedule order as (deal seed, seconds it took)."""


def batches_of(store: Store, tid: int, size: int | None) -> list[list[tuple[int, float]]]:
    """The run's stored matches as (deal seed, duration), cut into batches of ``size`` (None: one batch)."""
    matches = [(match.seed, match.result.duration_s) for match in store.matches(tid, stderr=False)
               if match.result is not None]
    size = size or len(matches)
    return [matches[start:start + size] for start in range(0, len(matches), size)]


def makespan(batch: list[tuple[int, float]], workers: int, one_per_deal: bool) -> float:
    """How long ``batch`` takes on ``workers`` workers fed by arena/run/dispatch.py's DealQueue (with or without the
    exclusion), given how long each match took: the dispatch alone, without the machine's load in it."""
    jobs = [MatchJob(index, seed, (), Rules(), Limits(), SandboxLimits(), "process", "", 0)
            for index, (seed, _) in enumerate(batch)]
    deals = DealQueue(jobs, one_per_deal, workers)
    running: list[tuple[float, int]] = []
    now = 0.0
    while deals or running:
        while len(running) < workers and (job := deals.take()) is not None:
            heapq.heappush(running, (now + batch[job.index][1], job.index))
        now, index = heapq.heappop(running)
        deals.done(jobs[index])
    return now


def demo_once(work: Path, one_per_deal: bool) -> Played:
    """Matches played, wall seconds and the matches of one whole demo tournament."""
    config = load_config(ROOT / "tournaments" / "demo.yaml")
    store = Store(work / "demo.db")
    started = time.perf_counter()
    with closing(LocalPool(WORKERS, one_per_deal)) as pool:
        report = loop.run(store, AllPending(config), pool)
    seconds = time.perf_counter() - started
    if report.failed or report.interrupted:
        raise SystemExit(f"the demo failed: {report}")
    batches = batches_of(store, report.tid, None)
    store.close()
    return report.played, seconds, batches


def league_once(work: Path, one_per_deal: bool, matches: int, groups: int) -> Played:
    """Matches stored, wall seconds and the matches of a league of the sample bots stopped after ``matches``
    matches."""
    config = LeagueConfig(name="bench", entries=tuple(str(SAMPLES / name) for name in
                                                      ("random", "greedy", "planner", "js-greedy")),
                          players=3, seed=11, workers=WORKERS, groups_per_batch=groups, throttle=False,
                          registry=work / "registry", rules=Rules.from_dict({"threshold": 50}))
    league = League(config, work / "league.db")
    store = Store(work / "league.db")
    stop = threading.Event()

    def enough(progress: loop.Progress) -> None:
        if progress.played >= matches:
            stop.set()

    started = time.perf_counter()
    with closing(LocalPool(WORKERS, one_per_deal)) as pool:
        report = loop.run(store, league, pool, on_result=enough, stop=stop)
    seconds = time.perf_counter() - started
    if report.failed:
        raise SystemExit(f"the league failed: {report}")
    batches = batches_of(store, report.tid, groups * 3)  # a group is 3 matches: one per seat rotation
    store.close()
    return report.played, seconds, batches


def summary(rates: list[float]) -> dict[str, Any]:
    return {"matches_per_s": [round(rate, 3) for rate in rates], "median": round(statistics.median(rates), 3),
            "lowest": round(min(rates), 3), "highest": round(max(rates), 3)}


def costs(on: list[float], off: list[float]) -> dict[str, Any]:
    """The exclusion's cost in percent of matches per second: of each pair of runs played one after the other
    (what a load that drifts between pairs moves least), and of the medians."""
    pairs = [100 * (1 - with_ / without) for with_, without in zip(on, off, strict=True)]
    return {"cost_percent_per_pair": [round(cost, 1) for cost in pairs],
            "cost_percent_median_of_pairs": round(statistics.median(pairs), 1),
            "cost_percent_of_medians": round(100 * (1 - statistics.median(on) / statistics.median(off)), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="Runs of each variant, alternated.")
    parser.add_argument("--league-matches", type=int, default=48)
    parser.add_argument("--only", choices=("demo", "league"))
    parser.add_argument("--groups-per-batch", default="2",
                        help="The league's groups_per_batch, comma-separated to measure several (default: 2).")
    args = parser.parse_args()
    found: dict[str, Any] = {"workers": WORKERS, "runs": args.runs, "cpus": os.cpu_count(),
                             "loadavg_at_start": [round(load, 2) for load in os.getloadavg()],
                             "python": platform.python_version()}
    setups = [("demo", 0)] if args.only in (None, "demo") else []
    if args.only in (None, "league"):
        setups += [("league", int(groups)) for groups in args.groups_per_batch.split(",")]
    for setup, groups in setups:
        rates: dict[bool, list[float]] = {True: [], False: []}
        modelled: list[float] = []
        played_counts: set[int] = set()
        for run in range(args.runs):
            # Alternate which variant goes first, so a drift in the machine's load falls on both alike.
            for one_per_deal in (True, False) if run % 2 == 0 else (False, True):
                with tempfile.TemporaryDirectory() as tmp:
                    work = Path(tmp)
                    work.chmod(0o755)  # the sandbox runs bots as users of their own
                    count, seconds, batches = (demo_once(work, one_per_deal) if setup == "demo" else
                                               league_once(work, one_per_deal, args.league_matches, groups))
                played_counts.add(count)
                apart = sum(makespan(batch, WORKERS, True) for batch in batches)
                modelled.append(100 * (1 - sum(makespan(batch, WORKERS, False) for batch in batches) / apart))
                rates[one_per_deal].append(count / seconds)
        key = setup if setup == "demo" else f"league_groups_per_batch_{groups}"
        found[key] = {"matches": sorted(played_counts), "one_per_deal": summary(rates[True]),
                      "any_order": summary(rates[False]), **costs(rates[True], rates[False]),
                      "modelled_cost_percent": {"per_run": [round(cost, 1) for cost in modelled],
                                                "median": round(statistics.median(modelled), 1)}}
    found["loadavg_at_end"] = [round(load, 2) for load in os.getloadavg()]
    print(json.dumps(found))


if __name__ == "__main__":
    main()
