"""How many bits a bot can pass to another bot running at the same time through the load of the machine: a residual
channel between concurrently running matches (docs/SECURITY.md, "What a bot can learn").

Two sandboxes start at once, as two bots of different matches do with ``workers: 2``. From a start time both know
(CLOCK_MONOTONIC is the same clock in every sandbox), the sender spends one slot per bit of a random message busy (in
``--spinners`` processes, as a bot may fork) or asleep; the receiver counts its own loop turns in each slot and reads
a slot with fewer turns than the median as a 1. Nothing is shared but the cores. Prints JSON: the bits sent and
right, the slot, the rate, and ``bits_per_match``: what that rate carries in a match's time (``--match-s``).

    python bench/load_channel.py [--backend process|docker] [--bytes 8] [--slot-ms 50] [--spinners 2] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)  # not bench/, whose docker.py would shadow the docker SDK

from arena.bots.manifest import load_bot
from arena.sandbox import Sandbox, SandboxLimits
from tests.channels import write_probe_bot
from tests.support.probe import ask

START_DELAY_S = 3.0
"""Between the request and the first slot: time for both sandboxes to have read it, on a loaded machine."""


def sandbox_for(backend: str) -> Sandbox:
    if backend == "docker":
        from arena.sandbox.docker import DockerSandbox

        return DockerSandbox(warm=0)
    from arena.sandbox.process import ProcessSandbox

    return ProcessSandbox(isolate=True)


def binary_capacity(error: float) -> float:
    """Bits per use of a channel that flips a bit with probability ``error`` (1 - H(error))."""
    if error <= 0 or error >= 1:
        return 1.0
    return 1 + error * math.log2(error) + (1 - error) * math.log2(1 - error)


def one_run(sandbox: Sandbox, nbytes: int, slot_ns: int, spinners: int) -> tuple[int, int]:
    bot = load_bot(write_probe_bot(Path(os.environ.get("TMPDIR", "/tmp")) / f"load-{os.getpid()}"))
    limits = SandboxLimits(memory_mb=256, processes=16)
    message = secrets.token_bytes(nbytes)
    sender, receiver = sandbox.launch(bot, limits), sandbox.launch(bot, limits)
    answers: dict[str, dict[str, Any]] = {}
    try:
        ask(sender, {"do": "probe"})  # both started: the interpreter is up
        ask(receiver, {"do": "probe"})
        start = time.monotonic_ns() + int(START_DELAY_S * 1e9)
        common = {"channel": "load", "start_ns": start, "slot_ns": slot_ns}
        thread = threading.Thread(target=lambda: answers.__setitem__("sent", ask(sender, {
            "do": "send", "message": message.hex(), "spinners": spinners, **common})))
        thread.start()
        answers["got"] = ask(receiver, {"do": "receive", "nbytes": nbytes, **common})
        thread.join()
    finally:
        sender.kill()
        receiver.kill()
    turns = answers["got"]["turns"]
    middle = statistics.median(turns)
    bits = [message[index // 8] >> (index % 8) & 1 for index in range(nbytes * 8)]
    right = sum((count < middle) == bool(bit) for count, bit in zip(turns, bits))
    return right, len(bits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("process", "docker"), default="process")
    parser.add_argument("--bytes", type=int, default=8, help="message length (default 8: 64 bits)")
    parser.add_argument("--slot-ms", type=float, default=50.0)
    parser.add_argument("--spinners", type=int, default=2, help="busy processes of the sender (default 2: the cores)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--match-s", type=float, default=10.0, help="a match's length for bits_per_match")
    args = parser.parse_args()
    sandbox = sandbox_for(args.backend)
    try:
        results = [one_run(sandbox, args.bytes, int(args.slot_ms * 1e6), args.spinners) for _ in range(args.runs)]
    finally:
        sandbox.close()
    right = sum(r for r, _ in results)
    total = sum(n for _, n in results)
    error = 1 - right / total
    per_second = binary_capacity(error) * 1000 / args.slot_ms
    print(json.dumps({
        "backend": args.backend, "cores": os.cpu_count(), "spinners": args.spinners, "slot_ms": args.slot_ms,
        "runs": args.runs, "bits": total, "bits_right": right, "error_rate": round(error, 3),
        "capacity_bits_per_s": round(per_second, 1), "match_s": args.match_s,
        "bits_per_match": round(per_second * args.match_s)}))


if __name__ == "__main__":
    main()
