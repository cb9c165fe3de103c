"""How many bits one sandbox can leave for a later one in the kernel's page cache: a residual channel between bots.

A sender in one sandbox reads one byte of page ``i`` of a rarely read file under ``/usr`` for each set bit ``i`` of
a random message, and exits; a receiver started afterwards in another sandbox (another uid; on docker another
container) times one read of each page: a page in the cache answers in microseconds, one from the disk in a hundred
or more. Nothing is shared but the files both may read, as in any two matches on one host. Prints JSON: the bits
sent, how many the receiver got right, and its time.

    python bench/pagecache_channel.py [--backend process|docker] [--bytes 32] [--pause 1]

docs/SECURITY.md ("What a bot can learn") quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)  # not bench/, whose docker.py would shadow the docker SDK

from arena.bots.manifest import load_bot
from arena.sandbox import Sandbox, SandboxLimits
from tests.channels import write_probe_bot
from tests.support.probe import ask

PAGE = 4096
THRESHOLD_NS = 50_000
"""Quicker than this, a read came from the cache: 0-2 us measured from the cache, 150-380 us from this disk."""


def big_files(minimum: int = 8 << 20) -> list[Path]:
    """Large regular files under /usr, which every sandbox reads the same: the pool of pages to pick from."""
    found = []
    for directory, _, names in os.walk("/usr/lib"):
        for name in names:
            path = Path(directory) / name
            try:
                if not path.is_symlink() and path.is_file() and path.stat().st_size >= minimum:
                    found.append(path)
            except OSError:
                continue
    return sorted(found)


def pages(count: int, rng: random.Random) -> list[list[object]]:
    """``count`` random pages of the big files, one each from distinct files where there are enough."""
    files = big_files()
    chosen = []
    for index in range(count):
        path = files[rng.randrange(len(files))] if len(files) < count else files[index * len(files) // count]
        chosen.append([str(path), rng.randrange(path.stat().st_size // PAGE) * PAGE])
    rng.shuffle(chosen)
    return chosen


def sandbox_for(backend: str) -> Sandbox:
    if backend == "docker":
        from arena.sandbox.docker import DockerSandbox

        return DockerSandbox(warm=0)
    from arena.sandbox.process import ProcessSandbox

    return ProcessSandbox(isolate=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("process", "docker"), default="process")
    parser.add_argument("--bytes", type=int, default=32, help="message length (default 32: 256 bits)")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between the sender's end and the receiver")
    args = parser.parse_args()
    rng = random.Random(secrets.randbits(64))
    message = secrets.token_bytes(args.bytes)
    request = {"channel": "pagecache", "pages": pages(args.bytes * 8, rng)}
    sandbox = sandbox_for(args.backend)
    bot = load_bot(write_probe_bot(Path(os.environ.get("TMPDIR", "/tmp")) / f"pagecache-{os.getpid()}"))
    limits = SandboxLimits(memory_mb=256)
    try:
        sender = sandbox.launch(bot, limits)
        try:
            sent = ask(sender, {"do": "send", "message": message.hex(), **request})
        finally:
            sender.kill()
        time.sleep(args.pause)
        receiver = sandbox.launch(bot, limits)
        try:
            start = time.perf_counter()
            got = ask(receiver, {"do": "receive", "nbytes": args.bytes, "threshold_ns": THRESHOLD_NS, **request})
            spent = time.perf_counter() - start
        finally:
            receiver.kill()
    finally:
        sandbox.close()
    received = bytes.fromhex(got.get("got", ""))
    bits = args.bytes * 8
    wrong = sum((a ^ b).bit_count() for a, b in zip(message, received)) if received else bits
    times = sorted(got.get("times_ns", []))
    print(json.dumps({
        "backend": args.backend, "sent": sent, "bits": bits, "bits_right": bits - wrong,
        "receive_s": round(spent, 3), "bits_per_s": round(bits / spent) if spent else None,
        "read_us_quickest_half_median": round(times[len(times) // 4] / 1000, 1) if times else None,
        "read_us_slowest_half_median": round(times[3 * len(times) // 4] / 1000, 1) if times else None,
        "pause_s": args.pause}))


if __name__ == "__main__":
    main()
