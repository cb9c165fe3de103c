"""What the seccomp filter costs a bot per system call: nanoseconds per ``getppid`` (allowed, so it walks every rule
of the filter before it is let through) inside a bwrap sandbox, with no filter, with the keyring and user-namespace
rules only (``close_channels=False``) and with every rule (the default, which also refuses the channels between
sandboxes). Prints ONE JSON object.

    python bench/seccomp.py --calls 1000000 --rounds 5

A round starts one sandbox per variant, in turn, so that a change in the machine's speed hits them alike; each
reports the best of three timed loops. The loop is Python's ``os.getppid``, whose own cost (about 50-100 ns) is in
every variant alike: the differences between variants are the filter's. This is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import select
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.bots.manifest import load_bot
from arena.sandbox import BotProcess, SandboxLimits
from arena.sandbox.process import ProcessSandbox

BOT = '''\
import os, sys, time
calls = int(sys.stdin.readline())
best = None
for _ in range(3):
    start = time.perf_counter_ns()
    for _ in range(calls):
        os.getppid()
    took = time.perf_counter_ns() - start
    best = took if best is None else min(best, took)
print(best / calls, flush=True)
'''


def answer(process: BotProcess) -> str:
    out = b""
    while b"\n" not in out and process.read_fds():
        ready, _, _ = select.select(process.read_fds(), [], [], 60)
        for fd in ready:
            out += b"".join(data for stream, data in process.read(fd) if stream == "stdout")
    return out.decode().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    none = ProcessSandbox(isolate=True)
    none.filter = None
    variants = {"no_filter": none, "base_rules": ProcessSandbox(isolate=True, close_channels=False),
                "all_rules": ProcessSandbox(isolate=True)}
    results: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="arena-bench-seccomp-") as scratch:
        directory = Path(scratch) / "loop"
        directory.mkdir(mode=0o755)
        (directory / "bot.py").write_text(BOT)
        (directory / "bot.yaml").write_text("name: loop\ncommand: python3 bot.py\nlanguage: python\n")
        Path(scratch).chmod(0o755)
        bot = load_bot(directory)
        for _ in range(args.rounds):
            for name, sandbox in variants.items():
                process = sandbox.launch(bot, SandboxLimits(cpu_seconds=120))
                try:
                    process.write(f"{args.calls}\n".encode())
                    results[name].append(float(answer(process)))
                finally:
                    process.kill()
    report: dict[str, Any] = {
        "bench": "seccomp", "calls": args.calls, "rounds": args.rounds,
        "ns_per_getppid_median": {name: round(statistics.median(values), 1) for name, values in results.items()},
        "ns_per_getppid_min": {name: round(min(values), 1) for name, values in results.items()},
        "ns_per_getppid_all": {name: [round(value, 1) for value in values] for name, values in results.items()},
    }
    for kind in ("median", "min"):
        ns = report[f"ns_per_getppid_{kind}"]
        report[f"channel_rules_cost_ns_{kind}"] = round(ns["all_rules"] - ns["base_rules"], 1)
        report[f"whole_filter_cost_ns_{kind}"] = round(ns["all_rules"] - ns["no_filter"], 1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
