"""Benchmark: what asking a kept docker bot's usage costs (asked after every match of every kept bot).

Starts sample_bots/greedy in a container (it waits for its ``hello``), then times ``DockerBot.usage()``: its first
call, which finds the container's cgroup from an engine inspect, the median of ``--calls`` later ones, which read
the cgroup's files, and the median of ``--stats`` calls of the engine's stats API (``container.stats(stream=False)``),
the other way to learn the same. Prints ONE JSON object.

    python bench/docker_usage.py [--calls 1000] [--stats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's directory comes first on sys.path, where bench/docker.py would shadow the docker SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))
from arena.bots.manifest import load_bot
from arena.sandbox import SandboxLimits
from arena.sandbox.docker import DockerBot, DockerSandbox


def timed_ms(call: Callable[[], object]) -> float:
    began = time.perf_counter()
    call()
    return (time.perf_counter() - began) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--stats", type=int, default=3)
    args = parser.parse_args()
    sandbox = DockerSandbox(warm=0)
    try:
        bot = sandbox.launch(load_bot(ROOT / "sample_bots" / "greedy"), SandboxLimits())
        assert isinstance(bot, DockerBot)
        first = timed_ms(bot.usage)
        later = [timed_ms(bot.usage) for _ in range(args.calls)]
        stats = [timed_ms(lambda: bot.container.stats(stream=False)) for _ in range(args.stats)]
        usage = bot.usage()
        bot.kill()
    finally:
        sandbox.close()
    print(json.dumps({
        "first_usage_ms": round(first, 3),
        "usage_ms_median": round(statistics.median(later), 4),
        "stats_api_ms_median": round(statistics.median(stats), 1),
        "usage": None if usage is None else {"memory_mb": None if usage.memory_bytes is None else
                                             round(usage.memory_bytes / (1 << 20), 1),
                                             "processes": usage.processes},
    }))


if __name__ == "__main__":
    main()
