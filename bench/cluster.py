"""Benchmark: what playing on a Dask cluster costs, and how it scales. Prints one JSON object.

(a) the demo tournament (48 matches, 3 at a table) on the local process pool with 2 workers, then on a
``LocalCluster`` of 2 single-threaded worker processes reached over tcp like any scheduler (its start-up and the
workers' first fitness check are timed apart: they happen once per cluster, not per match), and end to end with ``--cluster local:2``; matches/s and the
cluster's extra cost per match. (b) scaling with bots that think: copies of the greedy sample bot that sleep
``--think-ms`` before every move, so that the cores are not what limits; 1, 2, 4, 8 workers, matches/s and the
efficiency against linear (rate with N workers / (N x rate with one)).

The defaults, 60 ms a move and 144 matches (18 a worker at 8), are what keep this machine's two cores from being
the limit: a match costs about 0.3 CPU s (starting the bots, refereeing, the bots' own moves) whatever the think
time, so at 20 ms a move 8 workers would need about 1.7 cores; and with fewer matches a worker the last matches
to finish leave the others idle for a larger share of the run.

    python bench/cluster.py [--think-ms 60] [--workers 1,2,4,8] [--repeats 12]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.run.cluster import connect, prepare_worker, requirements
from arena.run.config import TournamentConfig, load_config, parse_config
from arena.run.tournament import run_tournament
from arena.store import Store


def cpu_seconds() -> float:
    """CPU used by this process and its reaped children (pool workers, a local cluster's worker processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(config: TournamentConfig, directory: Path, **how: object) -> dict[str, float]:
    """One fresh run; its matches per second over the whole run (planning and rating included), and the CPU
    seconds per match it cost this process and its children (a measure that other load on the host does not
    change)."""
    directory.mkdir(parents=True)
    cpu = cpu_seconds()
    report = run_tournament(config, Store(directory / "a.db"), **how)  # type: ignore[arg-type]
    assert report.failed == 0 and report.played > 0, report
    return {"matches": report.played, "seconds": round(report.seconds, 2),
            "matches_per_s": round(report.played / report.seconds, 2),
            "cpu_s_per_match": round((cpu_seconds() - cpu) / report.played, 4)}


def local_cluster(workers: int, sandbox: str) -> tuple[Any, Any, float]:
    """A started LocalCluster whose workers have answered the fitness check once (as a long-lived cluster's have:
    it happens once per worker, not per run or per match); how long that took."""
    started = time.monotonic()
    client, cluster = connect(f"local:{workers}")
    client.wait_for_workers(workers)
    client.run(prepare_worker, requirements(sandbox), {})
    return client, cluster, time.monotonic() - started


def on_started_cluster(config: TournamentConfig, directory: Path, workers: int) -> tuple[dict[str, float], float]:
    """A run on a LocalCluster started beforehand (its start-up returned apart), reached by its tcp address. Its
    workers' CPU is counted once they are reaped, less what an idle cluster of the same size costs to start and
    stop, so ``cpu_s_per_match`` is what the matches cost."""
    cpu = cpu_seconds()
    client, cluster, _ = local_cluster(workers, config.sandbox)
    client.close()
    cluster.close()
    idle = cpu_seconds() - cpu
    cpu = cpu_seconds()
    client, cluster, startup = local_cluster(workers, config.sandbox)
    try:
        run = timed(config, directory, cluster=cluster.scheduler_address)
    finally:
        client.close()
        cluster.close()
    run["cpu_s_per_match"] = round((cpu_seconds() - cpu - idle) / run["matches"], 4)
    return run, startup


def thinking_bots(directory: Path, think_ms: int, count: int) -> list[Path]:
    """Copies of the greedy sample bot that sleep before each move (distinct names, so distinct entrants)."""
    bots = []
    for number in range(count):
        bot = directory / f"thinker{number}"
        shutil.copytree(ROOT / "sample_bots" / "greedy", bot, ignore=shutil.ignore_patterns("__pycache__"))
        source = (bot / "bot.py").read_text()
        source = source.replace("    def on_turn(self, message: dict[str, Any]) -> dict[str, Any]:\n",
                                "    def on_turn(self, message: dict[str, Any]) -> dict[str, Any]:\n"
                                f"        __import__('time').sleep({think_ms / 1000})\n")
        (bot / "bot.py").write_text(source)
        manifest = (bot / "bot.yaml").read_text().replace("name: greedy", f"name: thinker{number}")
        (bot / "bot.yaml").write_text(manifest)
        bots.append(bot)
    return bots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--think-ms", type=int, default=60)
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--repeats", type=int, default=12, help="deals per pairing of the scaling tournament")
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--skip-scaling", action="store_true")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="arena-bench-cluster-"))
    result: dict[str, object] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    try:
        if not args.skip_demo:
            demo = load_config(ROOT / "tournaments" / "demo.yaml")
            pool = timed(demo, scratch / "pool", workers=2)
            cluster, startup = on_started_cluster(demo, scratch / "cluster", 2)
            end_to_end = timed(demo, scratch / "local2", cluster="local:2")
            result["demo"] = {
                "pool_2_workers": pool, "cluster_2_workers": cluster, "cluster_startup_s": round(startup, 2),
                "local_2_end_to_end": end_to_end,
                "cluster_cost_per_match_wall": round(pool["matches_per_s"] / cluster["matches_per_s"] - 1, 3),
                "cluster_cost_per_match_cpu": round(cluster["cpu_s_per_match"] / pool["cpu_s_per_match"] - 1, 3),
            }
        if args.skip_scaling:
            return
        bots = thinking_bots(scratch / "bots", args.think_ms, 4)
        config = parse_config({"name": "thinkers", "bots": [str(bot) for bot in bots], "players": 2,
                               "repeats": args.repeats, "seed": 11, "rules": {"threshold": 25},
                               "limits": {"move_ms": 2000}}, scratch / "thinkers.yaml")
        rows = []
        for workers in (int(n) for n in args.workers.split(",")):
            run, startup = on_started_cluster(config, scratch / f"scale{workers}", workers)
            rows.append({"workers": workers, **run, "startup_s": round(startup, 2)})
        def rate(row: dict[str, Any]) -> float:  # unrounded, so that the efficiency is not off by a rounding
            return float(row["matches"]) / float(row["seconds"])
        base = rate(rows[0]) / rows[0]["workers"]
        for row in rows:
            row["efficiency"] = round(rate(row) / (row["workers"] * base), 3)
        result["scaling"] = {"think_ms": args.think_ms, "matches": rows[0]["matches"], "rows": rows}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
