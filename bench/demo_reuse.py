"""Benchmark: the demo tournament with bots kept up between matches (``reuse``) and without, on either backend.

Plays ``tournaments/demo.yaml`` (48 matches of the four sample bots, 3 seats, 2 workers) through ``arena run`` with
``--sandbox``'s backend, once with ``reuse: {matches: N}`` and once without, alternated ``--runs`` times, and prints
ONE JSON object: the median wall seconds and CPU seconds (everything the run started, bench/throughput.py's
``counted``) of each, and their ratios. On docker a kept bot's container stays up for its lane; the containers'
CPU is the engine's cgroups', not counted: compare wall time there.

    python bench/demo_reuse.py [--sandbox docker] [--runs 1] [--reuse 16]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.throughput import counted  # the CPU of a run and all it started: one way for every bench


def run_once(work: Path, sandbox: str, reuse: int | None) -> tuple[float, float, int]:
    config = yaml.safe_load((ROOT / "tournaments" / "demo.yaml").read_text())
    config["bots"] = [str((ROOT / "tournaments" / bot).resolve()) for bot in config["bots"]]
    config["sandbox"] = sandbox
    config["reuse"] = {"matches": reuse} if reuse else False
    path = work / "demo.yaml"
    path.write_text(yaml.safe_dump(config))
    db = work / "demo.db"
    db.unlink(missing_ok=True)
    started = time.perf_counter()
    cpu, done = counted([sys.executable, "-m", "arena", "run", str(path), "--db", str(db), "--no-site", "--json"],
                        work, os.environ | {"PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"arena run failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, cpu, int(json.loads(done.stdout)["played"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", default="process", choices=("process", "docker"))
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--reuse", type=int, default=16)
    args = parser.parse_args()
    found: dict[str, list[tuple[float, float, int]]] = {"reuse": [], "fresh": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # the sandbox runs bots as users of their own
        for _ in range(args.runs):
            found["reuse"].append(run_once(work, args.sandbox, args.reuse))
            found["fresh"].append(run_once(work, args.sandbox, None))
    report: dict[str, object] = {"sandbox": args.sandbox, "runs": args.runs, "load": os.getloadavg()[0]}
    for label, runs in found.items():
        report[label] = {"wall_s": round(statistics.median(w for w, _, _ in runs), 2),
                         "cpu_s": round(statistics.median(c for _, c, _ in runs), 2), "matches": runs[0][2]}
    reuse, fresh = report["reuse"], report["fresh"]
    assert isinstance(reuse, dict) and isinstance(fresh, dict)
    report["wall_ratio"] = round(fresh["wall_s"] / reuse["wall_s"], 2)
    report["cpu_ratio"] = round(fresh["cpu_s"] / reuse["cpu_s"], 2)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
