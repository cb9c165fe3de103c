"""What starting and stopping one bot costs the runner: its own CPU (user + system, ``RUSAGE_SELF``) and the wall
time of ``launch`` + ``kill`` per bot, for the ``process`` backend with per-bot uids and cgroups (bwrap, as root)
and without (bwrap without cgroups; the plain variant without cgroups), on the host as it is and with 2,000 extra
idle processes, which the bench starts and ends itself. Prints ONE JSON object.

    python bench/launch.py --bots 40

Each bot is the ``greedy`` sample bot: launched, sent ``hello``, killed once it answers ``ready`` (the wait for
``ready`` is not counted: it is the bot's time, not the runner's). The variants take turns bot by bot, so that a
change in the machine's speed hits them alike. This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.bots.manifest import load_bot
from arena.game.rules import Rules
from arena.match.protocol import Limits, hello
from arena.sandbox import SandboxLimits
from arena.sandbox.process import ProcessSandbox

VARIANTS = {
    "uids+cgroups": {"isolate": True, "use_cgroups": True},
    "uids": {"isolate": True, "use_cgroups": False},
    "plain": {"isolate": False, "use_cgroups": False},
}
"""bwrap with per-bot uids and cgroups; bwrap with per-bot uids, no cgroups; the plain variant, no cgroups."""


def cpu(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def host_processes() -> int:
    return sum(1 for entry in os.listdir("/proc") if entry.isdigit())


def start_idle(count: int) -> subprocess.Popen[bytes]:
    """``count`` idle processes: children of one shell, each a ``sleep`` (exec'd, so a process of its own)."""
    script = f"i=0; while [ $i -lt {count} ]; do sleep 100000 & i=$((i+1)); done; echo up; wait"
    shell = subprocess.Popen(["/bin/sh", "-c", script], stdout=subprocess.PIPE, start_new_session=True)
    assert shell.stdout is not None
    shell.stdout.readline()
    return shell


def stop_idle(shell: subprocess.Popen[bytes]) -> None:
    os.killpg(shell.pid, signal.SIGKILL)
    shell.wait()


def wait_ready(process: Any, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    buffered = b""
    while time.monotonic() < deadline:
        fds = process.read_fds()
        if not fds:
            return False
        ready, _, _ = select.select(fds, [], [], 0.5)
        for fd in ready:
            for stream, data in process.read(fd):
                if stream == "stdout":
                    buffered += data
        if b'"ready"' in buffered:
            return True
    return False


def one(sandbox: ProcessSandbox, bot: Any, message: bytes) -> dict[str, float] | None:
    limits = SandboxLimits()
    cpu0, wall0 = cpu(resource.RUSAGE_SELF), time.perf_counter()
    process = sandbox.launch(bot, limits)
    cpu1, wall1 = cpu(resource.RUSAGE_SELF), time.perf_counter()
    process.write(message)
    ready = wait_ready(process)
    cpu2, wall2 = cpu(resource.RUSAGE_SELF), time.perf_counter()
    process.kill()
    cpu3, wall3 = cpu(resource.RUSAGE_SELF), time.perf_counter()
    if not ready:
        return None
    return {"cpu_ms": ((cpu1 - cpu0) + (cpu3 - cpu2)) * 1e3, "wall_ms": ((wall1 - wall0) + (wall3 - wall2)) * 1e3,
            "to_ready_ms": (wall2 - wall1) * 1e3}


def measure(sandboxes: dict[str, ProcessSandbox], bots: int) -> dict[str, Any]:
    bot = load_bot(ROOT / "sample_bots" / "greedy")
    message = json.dumps(hello(0, ["greedy", "other"], Rules(), Limits())).encode() + b"\n"
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in sandboxes}
    failed = {name: 0 for name in sandboxes}
    for name, sandbox in sandboxes.items():
        one(sandbox, bot, message)  # warm: the first launch of a sandbox pays for imports and its uid's first lease
    for _ in range(bots):
        for name, sandbox in sandboxes.items():
            sample = one(sandbox, bot, message)
            if sample is None:
                failed[name] += 1
            else:
                samples[name].append(sample)
    result: dict[str, Any] = {"host_processes": host_processes()}
    for name, rows in samples.items():
        result[name] = {
            "runner_cpu_ms_per_bot": round(statistics.mean(row["cpu_ms"] for row in rows), 2),
            "runner_cpu_ms_median": round(statistics.median(row["cpu_ms"] for row in rows), 2),
            "wall_ms_median": round(statistics.median(row["wall_ms"] for row in rows), 1),
            "to_ready_ms_median": round(statistics.median(row["to_ready_ms"] for row in rows), 1),
            "not_ready": failed[name],
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, default=40, help="bots per variant and host load")
    parser.add_argument("--idle", type=int, default=2000, help="extra idle processes for the loaded runs")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/launch.py measures per-bot uids: run it as root")
    import logging

    logging.disable(logging.WARNING)  # the plain variant's warning
    sandboxes = {name: ProcessSandbox(**VARIANTS[name]) for name in args.variants.split(",")}  # type: ignore[arg-type]
    output: dict[str, Any] = {"bots": args.bots, "load_before": os.getloadavg()[0]}
    output["host"] = measure(sandboxes, args.bots)
    shell = start_idle(args.idle)
    try:
        output[f"host+{args.idle}"] = measure(sandboxes, args.bots)
    finally:
        stop_idle(shell)
    for name in sandboxes:
        base = output["host"][name]["runner_cpu_ms_per_bot"]
        loaded = output[f"host+{args.idle}"][name]["runner_cpu_ms_per_bot"]
        output[f"host+{args.idle}"][name]["ratio_to_host"] = round(loaded / base, 2) if base else None
    output["load_after"] = os.getloadavg()[0]
    print(json.dumps(output, indent=1))


if __name__ == "__main__":
    main()
