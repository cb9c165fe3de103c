"""How long ``arena run`` takes to stop after SIGINT (to its process group, as Ctrl-C sends it) and after SIGTERM
(to the runner alone, as ``kill`` sends it), at seeded random moments of a real 2-worker run of the sample bots:
from the signal until the runner has exited and every process it started is gone (stops that came after the
run finished are left out of the times). Prints ONE JSON object.

    python bench/stop.py --stops 6 --seed 1

Each stopped run is resumed by the next; at the end the run is finished and its standings compared with an
uninterrupted run of the same config (``identical``). This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"


def group_alive(pgid: int) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != b"Z":
                return True
    return False


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def standings(db: Path) -> object:
    return json.loads(arena("standings", "--db", str(db), "--json").stdout)["standings"]


def default_sigint() -> None:
    # A job started in the background of a shell ignores Ctrl-C, and so would everything it starts: not here.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop_once(config: Path, db: Path, stop: signal.Signals, after: float) -> dict[str, object]:
    runner = subprocess.Popen([sys.executable, "-m", "arena", "run", str(config), "--db", str(db), "--no-site"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              # No Popen option restores an ignored SIGINT before exec: this must run in the child.
                              start_new_session=True, preexec_fn=default_sigint)  # noqa: PLW1509
    time.sleep(after)
    sent = time.monotonic()
    if stop is signal.SIGINT:
        os.killpg(runner.pid, stop)
    else:
        os.kill(runner.pid, stop)
    stderr = runner.communicate()[1]
    exited = time.monotonic() - sent
    while group_alive(runner.pid):
        time.sleep(0.01)
    if runner.returncode == 0:  # it finished before the signal: start the next one from scratch
        db.unlink()
        shutil.rmtree(db.parent / "logs", ignore_errors=True)
    return {"signal": stop.name, "after_s": round(after, 2), "status": runner.returncode,
            "exit_s": round(exited, 3), "all_gone_s": round(time.monotonic() - sent, 3),
            "traceback": "Traceback" in stderr}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stops", type=int, default=6, help="Stops of each signal.")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    chance = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "t.yaml"
        config.write_text(json.dumps({
            "name": "t", "bots": [str(SAMPLES / "greedy"), str(SAMPLES / "random"), str(SAMPLES / "js-greedy")],
            "players": 2, "repeats": 8, "seed": 3, "rules": {"threshold": 40}, "workers": 2}))
        reference = Path(scratch) / "reference.db"
        arena("run", str(config), "--db", str(reference), "--no-site")
        db = Path(scratch) / "stopped.db"
        plan = [signal.SIGINT, signal.SIGTERM] * args.stops
        chance.shuffle(plan)
        stops = [stop_once(config, db, stop, chance.uniform(0.3, 3.0)) for stop in plan]
        arena("run", str(config), "--db", str(db), "--no-site")
        identical = standings(db) == standings(reference)
    summary = {}
    for name in ("SIGINT", "SIGTERM"):
        times = [s["all_gone_s"] for s in stops if s["signal"] == name and s["status"] == 1]
        summary[name] = {"stops": len(times), "median_s": round(statistics.median(times), 3) if times else None,
                         "max_s": round(max(times), 3) if times else None}
    print(json.dumps({"seed": args.seed, "identical": identical, "stop_to_all_gone": summary,
                      "tracebacks": sum(bool(s["traceback"]) for s in stops),
                      "statuses": sorted({s["status"] for s in stops}), "stops": stops}, indent=2))


if __name__ == "__main__":
    main()
