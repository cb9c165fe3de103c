"""Benchmark: what a fresh planner process pays before its caches are warm, the cost of every lane it plays in.

With bots kept up (``reuse``), each lane is a process of its own, and no process may see a deal twice, so a
tournament starts three planner processes per block of deals where an in-process run keeps one. Each rebuilds the
planner's look-ahead caches (``Lookahead`` in ``sample_bots/planner/bot.py``). This bench measures, in CPU
seconds of this process, each run ``--runs`` times in a new interpreter (the caches are module-level):

* ``warm_up_ms``: the look-ahead's warm-up at ``hello`` (every hand of up to five ranks);
* ``lane_cold_s`` and ``lane_warm_s``: the 16 matches of a lane of ``bench/limit.py``'s tournament (the three
  Python sample bots, in-process, ``arena.match.local.play_local``) played in a fresh process, then the same 16
  again in it; ``lane_cold_extra_s`` is the difference: what a lane's start costs the planner beyond its matches.

Prints ONE JSON object (medians).

    python bench/planner_start.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LANE = 16


def measure() -> dict[str, float]:
    """One fresh process's figures (run as ``--child``)."""
    sys.path[:0] = [str(ROOT), str(ROOT / "protocol")]
    from arena.game.rules import Rules
    from arena.match.local import play_local
    from arena.schedule import make_schedule
    from bench.limit import BOTS, RULES, SEED, load_class

    classes = [load_class(name) for name in BOTS]
    planner = sys.modules[classes[list(BOTS).index("planner")].__module__]
    started = time.process_time()
    planner.Lookahead(planner.RuleSet.from_message({})).warm_up()  # its own instance: the shared one stays cold
    warm_up = time.process_time() - started
    names = list(BOTS)
    matches = make_schedule(len(names), 3, LANE, SEED)[:LANE]
    rules = Rules.from_dict(RULES)
    lanes = []
    for _ in range(2):
        started = time.process_time()
        for match in matches:
            play_local([classes[bot]() for bot in match.bots], match.seed, rules, names=[names[b] for b in match.bots])
        lanes.append(time.process_time() - started)
    return {"warm_up_ms": 1000 * warm_up, "lane_cold_s": lanes[0], "lane_warm_s": lanes[1],
            "lane_cold_extra_s": lanes[0] - lanes[1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure()))
        return
    runs = [json.loads(subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True,
                                      check=True).stdout) for _ in range(args.runs)]
    report: dict[str, float | int] = {key: round(statistics.median(run[key] for run in runs), 3) for key in runs[0]}
    print(json.dumps(report | {"runs": args.runs, "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
