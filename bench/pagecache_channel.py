"""How many bits one sandbox can leave for a later one in the kernel's page cache or dentry cache.

``--channel pagecache``: a sender in one sandbox reads one byte of page ``i`` of a rarely read file under ``/usr``
for each set bit ``i`` of a random message, and exits; a receiver started afterwards in another sandbox (another
uid; on docker another container) times one read of each page: a page in the host's cache answers in microseconds,
one from the disk in a hundred or more. ``--channel dentry``: the sender looks up name ``i`` (a name that does not
exist, under ``/usr/lib``) for each set bit; the receiver times one lookup of each. Nothing is shared but the files
both may read, as in any two matches on one host. Pages of files the host has read since boot are in its cache
already and carry nothing, so the page pool is the large files the host read least (they are checked uncached
first).

Prints JSON: the bits sent; ``bits_right`` at the receiver's fixed threshold (pagecache); ``bits_right_best``, the
most bits any one threshold on the receiver's times would get right (an upper bound for a receiver that calibrates
perfectly); and ``chance_best``, the same for a message the sender never sent (what the best threshold finds in
noise alone).

    python bench/pagecache_channel.py [--backend process|docker] [--channel pagecache|dentry] [--shared-caches]
                                      [--bytes 32] [--pause 1]

``--shared-caches``: without private views (``private_views=False``), as before them.

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


def sandbox_for(backend: str, shared_caches: bool) -> Sandbox:
    if backend == "docker":
        from arena.sandbox.docker import DockerSandbox

        return DockerSandbox(warm=0, private_views=not shared_caches)
    from arena.sandbox.process import ProcessSandbox

    return ProcessSandbox(isolate=True, private_views=not shared_caches)


def best_right(times: list[int], message: bytes) -> int:
    """The most bits of ``message`` that one threshold on ``times`` gets right (quicker than it: a set bit)."""
    bits = [message[index // 8] >> (index % 8) & 1 for index in range(len(times))]
    order = sorted(range(len(times)), key=lambda index: times[index])
    best = right = bits.count(0)  # the threshold below every time: every bit read as 0
    for index in order:
        right += 1 if bits[index] else -1
        best = max(best, right)
    return best


def evict(pages: list[list[object]]) -> None:
    """Out of the host's cache, so that the sender's reads are what puts them there: the bench's own reset, from
    outside any sandbox (a bot's POSIX_FADV_DONTNEED is refused)."""
    for path, offset in pages:
        fd = os.open(str(path), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, int(str(offset)), PAGE, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def auc(times: list[int], bits: list[int]) -> float:
    """The chance that a page (or name) the sender touched reads quicker than one it did not (ties half): 0.5 is
    no signal, 1.0 a perfect channel."""
    touched = [spent for spent, bit in zip(times, bits) if bit]
    other = [spent for spent, bit in zip(times, bits) if not bit]
    if not touched or not other:
        return 0.5
    wins = sum((a < b) + 0.5 * (a == b) for a in touched for b in other)
    return wins / (len(touched) * len(other))


def spread(message: bytes, repeat: int) -> bytes:
    """``message`` with each bit repeated ``repeat`` times in a row (the sender's repetition code)."""
    bits = [message[index // 8] >> (index % 8) & 1 for index in range(len(message) * 8) for _ in range(repeat)]
    return bytes(sum(bits[8 * byte + i] << i for i in range(8)) for byte in range(len(bits) // 8))


def decode(times: list[int], repeat: int) -> list[int]:
    """Each bit from its ``repeat`` pages: 1 when their median time is below the median of all."""
    middle = sorted(times)[len(times) // 2]
    return [int(sorted(times[i:i + repeat])[repeat // 2] < middle) for i in range(0, len(times), repeat)]


def one_run(args: argparse.Namespace, sandbox: Sandbox, rng: random.Random) -> dict[str, object]:
    """Send one random message from one sandbox to a later one; what the receiver got."""
    message = secrets.token_bytes(args.bytes)
    if args.repeat > 1:
        message, sent_message = spread(message, args.repeat), message
    else:
        sent_message = message
    nbits = len(message) * 8
    if args.channel == "pagecache":
        request: dict[str, object] = {"channel": "pagecache", "pages": pages(nbits, rng),
                                      "threshold_ns": THRESHOLD_NS}
        evict(request["pages"])  # type: ignore[arg-type]
    else:
        nonce = secrets.token_hex(8)
        request = {"channel": "dentry", "names": [f"/usr/lib/arena-{nonce}-{index}" for index in range(nbits)]}
    bot = load_bot(write_probe_bot(Path(os.environ.get("TMPDIR", "/tmp")) / f"pagecache-{os.getpid()}"))
    limits = SandboxLimits(memory_mb=256)
    sender = sandbox.launch(bot, limits)
    try:
        sent = ask(sender, {"do": "send", "message": message.hex(), **request})
    finally:
        sender.kill()
    time.sleep(args.pause)
    receiver = sandbox.launch(bot, limits)
    try:
        start = time.perf_counter()
        got = ask(receiver, {"do": "receive", "nbytes": len(message), **request})
        spent = time.perf_counter() - start
    finally:
        receiver.kill()
    received = bytes.fromhex(got.get("got", ""))
    raw: list[int] = got.get("times_ns", [])
    truth = [sent_message[index // 8] >> (index % 8) & 1 for index in range(args.bytes * 8)]
    return {"sent": sent, "message": message, "times": raw, "receive_s": spent,
            "bits_right": nbits - sum((a ^ b).bit_count() for a, b in zip(message, received)) if received else None,
            "decoded_right": sum(a == b for a, b in zip(decode(raw, args.repeat), truth)) if args.repeat > 1 else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("process", "docker"), default="process")
    parser.add_argument("--channel", choices=("pagecache", "dentry"), default="pagecache")
    parser.add_argument("--shared-caches", action="store_true", help="without private views")
    parser.add_argument("--bytes", type=int, default=32, help="message length (default 32: 256 bits)")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between the sender's end and the receiver")
    parser.add_argument("--runs", type=int, default=1, help="messages sent, one after another (default 1)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="pages (names) per bit, a repetition code: the receiver takes each bit's median time")
    args = parser.parse_args()
    rng = random.Random(secrets.randbits(64))
    sandbox = sandbox_for(args.backend, args.shared_caches)
    try:
        runs = [one_run(args, sandbox, rng) for _ in range(args.runs)]
    finally:
        sandbox.close()
    bits = args.bytes * 8 * args.repeat
    times = [spent for run in runs for spent in run["times"]]  # type: ignore[attr-defined]
    sent_bits = [message[index // 8] >> (index % 8) & 1 for run in runs
                 for message in [run["message"]] for index in range(bits)]  # type: ignore[index]
    ordered = sorted(times)
    print(json.dumps({
        "backend": args.backend, "channel": args.channel,
        "private_views": bool(getattr(sandbox, "views", False)), "runs": args.runs, "bits": bits,
        "sent": runs[0]["sent"],
        "bits_right": [run["bits_right"] for run in runs],
        "bits_right_best": [best_right(run["times"], run["message"]) for run in runs],  # type: ignore[arg-type]
        "chance_best": [best_right(run["times"], secrets.token_bytes(bits // 8)) for run in runs],  # type: ignore[arg-type]
        "auc": round(auc(times, sent_bits), 3),
        "auc_chance": round(auc(times, [secrets.randbits(1) for _ in times]), 3),
        "receive_s": round(sum(float(str(run["receive_s"])) for run in runs) / len(runs), 3),
        "read_us_quickest_half_median": round(ordered[len(ordered) // 4] / 1000, 1) if ordered else None,
        "read_us_slowest_half_median": round(ordered[3 * len(ordered) // 4] / 1000, 1) if ordered else None,
        "repeat": args.repeat, "message_bits": args.bytes * 8,
        "decoded_right": [run["decoded_right"] for run in runs] if args.repeat > 1 else None,
        "pause_s": args.pause}))


if __name__ == "__main__":
    main()
