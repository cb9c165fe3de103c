"""Benchmark: matches per CPU second of a real league server with bots kept up between matches (``league.reuse``)
against a process per match (issue 41).

Starts ``arena serve`` on loopback with the throughput bench's four sample bots as house bots (3 seats, threshold 50,
the process sandbox, ``--workers``, the throttle off), once with ``reuse: {matches: N}`` and once without,
interleaved run by run, and counts the CPU of the server and everything it starts (its pool, the sandboxes and the
bots, the site it publishes) in a cpuacct cgroup. The figure is taken at the margin, between batch ends (a chain's
matches are stored together, so only there is nothing played and not yet stored): from the end of the batch in
which ``--warmup`` matches are stored to the end of the one in which ``--matches`` more are, so the server's
start-up and its first batch are left out. With reuse a batch is ``workers`` x N groups (the league's default: 96
matches with 2 workers and N = 16), without it ``workers`` groups (6 matches). Needs a host with a cgroup v1 cpuacct
hierarchy (root). Prints ONE JSON object.

    python bench/league_reuse.py [--runs 2] [--matches 96] [--warmup 24] [--reuse 16] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from throughput import BOTS, CPUACCT  # the same bots and the same CPU count as the tournament bench


def config_text(workers: int, reuse: int | None) -> str:
    bots = ", ".join(str(ROOT / "sample_bots" / bot) for bot in BOTS)
    return (f"league:\n  name: bench\n  bots: [{bots}]\n  players: 3\n  seed: 7\n  rules: {{threshold: 50}}\n"
            "  limits: {move_ms: 1000, bank_ms: 10000, memory_mb: 512}\n  sandbox: process\n"
            f"  workers: {workers}\n  throttle: false\n" + ("" if reuse is None else f"  reuse: {{matches: {reuse}}}\n"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def progress(port: int) -> tuple[int, int] | None:
    """Matches the league has stored and batches it has finished, or None while the server does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/league", timeout=5) as answer:
            league = json.load(answer)
            return int(league["matches"].get("done", 0)), int(league["batches"])
    except OSError:
        return None


def run_once(work: Path, config: Path, warmup: int, matches: int) -> tuple[float, float, int]:
    """CPU seconds, wall seconds and matches of one server's margin (see the module docstring)."""
    group = CPUACCT / f"arena-league-bench-{os.getpid()}"
    group.mkdir(exist_ok=True)
    db = work / "arena.db"
    db.unlink(missing_ok=True)
    port = free_port()
    with open(work / "serve.log", "wb") as log:
        server = subprocess.Popen(["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "serve",
                                   sys.executable, "-m", "arena", "serve", str(config), "--db", str(db), "--port",
                                   str(port)], cwd=work, stdout=log, stderr=log)
    try:
        def when(count: int) -> tuple[float, float, int]:
            """CPU, time and matches at the end of the batch in which ``count`` matches are stored: a chain's
            matches are stored together, so only a batch's end has nothing played and not yet stored."""
            deadline = time.monotonic() + 1800
            batches = None
            while time.monotonic() < deadline:
                found = progress(port)
                if found is not None and found[0] >= count:
                    if batches is not None and found[1] > batches:
                        return int((group / "cpuacct.usage").read_text()) / 1e9, time.monotonic(), found[0]
                    batches = found[1] if batches is None else batches
                if server.poll() is not None:
                    raise SystemExit(f"arena serve ended: {(work / 'serve.log').read_text()[-2000:]}")
                time.sleep(0.1)
            raise SystemExit(f"the league did not store {count} matches in 30 minutes")

        cpu0, wall0, done0 = when(warmup)
        cpu1, wall1, done1 = when(done0 + matches)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)
        deadline = time.monotonic() + 30
        while (group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.05)
        group.rmdir()
    return cpu1 - cpu0, wall1 - wall0, done1 - done0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--matches", type=int, default=96, help="Matches measured, after the warm-up.")
    parser.add_argument("--warmup", type=int, default=24, help="Matches stored before the measure starts.")
    parser.add_argument("--reuse", type=int, default=16, help="reuse.matches of the league with reuse.")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if not (CPUACCT / "cpuacct.usage").exists():
        raise SystemExit(f"{CPUACCT}: no cpuacct cgroup here: the bots' CPU could not be counted")
    runs: dict[str, list[tuple[float, float, int]]] = {"fresh": [], "reuse": []}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # the sandbox runs bots as users of their own
        configs = {"fresh": work / "fresh.yaml", "reuse": work / "reuse.yaml"}
        configs["fresh"].write_text(config_text(args.workers, None))
        configs["reuse"].write_text(config_text(args.workers, args.reuse))
        for _ in range(args.runs):
            for name, config in configs.items():  # interleaved: a slow minute slows both
                runs[name].append(run_once(work, config, args.warmup, args.matches))
    fresh, reuse = summary(runs["fresh"]), summary(runs["reuse"])
    print(json.dumps({"python": platform.python_version(), "runs": args.runs, "workers": args.workers,
                      "reuse_matches": args.reuse, "load": round(load, 1), "load_after": round(os.getloadavg()[0], 1),
                      "fresh": fresh, "reuse": reuse,
                      "reuse_ratio": round(reuse["matches_per_cpu_s"] / fresh["matches_per_cpu_s"], 2),
                      "wall_ratio": round(fresh["wall_s_per_match"] / reuse["wall_s_per_match"], 2)}))


def summary(found: list[tuple[float, float, int]]) -> dict[str, float]:
    """The medians of one mode's runs (CPU seconds, wall seconds, matches each)."""
    return {"matches_per_cpu_s": round(statistics.median(m / cpu for cpu, _, m in found), 3),
            "cpu_s_per_match": round(statistics.median(cpu / m for cpu, _, m in found), 4),
            "wall_s_per_match": round(statistics.median(wall / m for _, wall, m in found), 4),
            "matches": statistics.median(m for _, _, m in found)}


if __name__ == "__main__":
    main()
