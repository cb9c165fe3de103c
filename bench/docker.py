"""Benchmark: what the docker backend costs compared with the process backend.

(a) container start latency: ``DockerSandbox.launch`` (create, attach, start) of one bot, median, cold (no warm
pool) and from the warm pool (a container started ahead, woken); (b) the launch overhead of a match with 2 and 4
seats: starting every container with the backend's concurrent ``launch_all`` versus one seat after the other, cold,
and from the warm pool (refilled between matches, as a match's play gives it time to), and killing and removing them
all (live bots: the worst case); (c) time per turn
through the referee with minimal fast bots, from the first turn sent to the last reply, docker versus process
backend; (d) where a start's time goes (create, attach, start, one container and four at once). Prints one
JSON object. Container starts cost engine CPU: concurrency helps up to about the host's CPUs.

    python bench/docker.py [--starts 10] [--repeats 3] [--matches 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from uuid import uuid4

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's directory comes first on sys.path, and this file would then shadow the docker SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from arena.bots.manifest import BotSpec, load_bot
from arena.game.rules import Rules
from arena.match.protocol import Limits
from arena.match.referee import play_match
from arena.sandbox import Sandbox, SandboxLimits
from arena.sandbox.docker import DockerSandbox, engine_status
from arena.sandbox.process import ProcessSandbox
from bench.protocol import FAST_BOT

LIMITS = SandboxLimits()


def start_latency(sandbox: DockerSandbox, bot: BotSpec, count: int) -> float:
    """Median seconds for one launch (cold: create, attach, start; warm: take and wake); the kill and the pool's
    refill are not timed."""
    times = []
    for _ in range(count):
        sandbox.pool.settle()
        start = time.perf_counter()
        process = sandbox.launch(bot, LIMITS)
        times.append(time.perf_counter() - start)
        process.kill()
    return statistics.median(times)


def start_phases(sandbox: DockerSandbox, bot: BotSpec, seats: int, repeats: int) -> dict[str, float]:
    """Where a start's time goes: the docker SDK calls of ``launch`` (create, attach, start) timed one by one, for
    ``seats`` containers started at once in threads as ``launch_all`` does; medians over containers, and the wall
    time of the whole set. Shows whether concurrency can help: the engine's start is CPU work on this host."""
    options = sandbox.container_options(bot, LIMITS, sandbox.image_for(bot))

    def one(_: int) -> tuple[float, float, float]:
        began = time.perf_counter()
        container = sandbox.client.containers.create(**options | {"name": f"{options['name']}-{uuid4().hex[:8]}"})
        created = time.perf_counter()
        container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        attached = time.perf_counter()
        container.start()
        started = time.perf_counter()
        container.remove(force=True)
        return created - began, attached - created, started - attached

    phases, walls = [], []
    with ThreadPoolExecutor(max_workers=seats) as pool:
        for _ in range(repeats):
            began = time.perf_counter()
            phases.extend(pool.map(one, range(seats)))
            walls.append(time.perf_counter() - began)
    return {"create": statistics.median(p[0] for p in phases), "attach": statistics.median(p[1] for p in phases),
            "start": statistics.median(p[2] for p in phases), "all": statistics.median(walls)}


def match_overhead(sandbox: DockerSandbox, bot: BotSpec, seats: int, repeats: int,
                   concurrent: bool) -> tuple[float, float]:
    """Median seconds to start every seat of a match, and to kill and remove them all afterwards (one after the
    other, as the referee does)."""
    starts, teardowns = [], []
    for _ in range(repeats):
        sandbox.pool.settle()
        start = time.perf_counter()
        if concurrent:
            running = sandbox.launch_all([bot] * seats, LIMITS)
        else:
            running = Sandbox.launch_all(sandbox, [bot] * seats, LIMITS)  # the base class: one after the other
        started = time.perf_counter()
        for process in running:
            process.kill()
        starts.append(started - start)
        teardowns.append(time.perf_counter() - started)
    return statistics.median(starts), statistics.median(teardowns)


def per_turn(sandbox: Sandbox, bot: BotSpec, matches: int, log_dir: Path) -> float:
    """Median seconds per turn from the first turn sent to the last reply (start-up excluded)."""
    results = []
    for seed in range(matches):
        log = log_dir / f"{sandbox.name}-{seed}.jsonl.gz"
        result = play_match([bot, bot], seed, sandbox, Rules(threshold=500, max_rounds=60), Limits(), log_path=log)
        with gzip.open(log) as handle:
            records = [json.loads(line) for line in handle if line.startswith((b'{"t":"send"', b'{"t":"recv"'))]
        first_turn = next(r["at"] for r in records if r["t"] == "send" and r["msg"]["type"] == "turn")
        last_reply = [r["at"] for r in records if r["t"] == "recv"][-1]
        results.append((last_reply - first_turn) / 1000 / result.turns)
    return statistics.median(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--matches", type=int, default=3)
    args = parser.parse_args()
    works, reason = engine_status()
    if not works:
        sys.exit(f"bench/docker.py: {reason}")
    docker_sandbox = DockerSandbox(warm=0)
    warm_sandbox = DockerSandbox()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            bot_dir = root / "fast"
            bot_dir.mkdir()
            bot_dir.chmod(0o755)  # the bot's uid in the container must read it
            (bot_dir / "bot.py").write_text(FAST_BOT)
            (bot_dir / "bot.yaml").write_text("name: fast\ncommand: python3 bot.py\n")
            bot = load_bot(bot_dir)
            report: dict[str, object] = {"engine": engine_status()[1], "cpus": os.cpu_count()}
            cold_start = start_latency(docker_sandbox, bot, args.starts)
            report["start_latency_ms"] = round(cold_start * 1000, 1)
            match_overhead(warm_sandbox, bot, 4, 2, True)  # fills the pool with four of the bot (from its 2nd launch)
            report["warm_start_latency_ms"] = round(start_latency(warm_sandbox, bot, args.starts) * 1000, 1)
            for seats in (2, 4):
                concurrent, teardown = match_overhead(docker_sandbox, bot, seats, args.repeats, True)
                sequential, _ = match_overhead(docker_sandbox, bot, seats, args.repeats, False)
                warm, _ = match_overhead(warm_sandbox, bot, seats, args.repeats, True)
                report[f"match_overhead_{seats}_seats_ms"] = {
                    "start_concurrent": round(concurrent * 1000, 1), "start_sequential": round(sequential * 1000, 1),
                    "start_warm": round(warm * 1000, 1), "kill_and_remove_all": round(teardown * 1000, 1)}
                report[f"warm_{seats}_seats_vs_cold_1"] = round(warm / cold_start, 2)
            phases = {seats: start_phases(docker_sandbox, bot, seats, args.repeats) for seats in (1, 4)}
            report["start_phases_ms"] = {f"{seats}_at_once": {k: round(v * 1000, 1) for k, v in found.items()}
                                         for seats, found in phases.items()}
            report["start_4_vs_1"] = round(phases[4]["all"] / phases[1]["all"], 2)
            docker_turn = per_turn(docker_sandbox, bot, args.matches, root)
            process_turn = per_turn(ProcessSandbox(), bot, args.matches, root)
            report["turn_us"] = {"docker": round(docker_turn * 1e6, 1), "process": round(process_turn * 1e6, 1),
                                 "ratio": round(docker_turn / process_turn, 2)}
    finally:
        docker_sandbox.close()
        warm_sandbox.close()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
