"""Store growth from a stderr-spamming bot (issue 26, item 7): bytes per match and per hour, before and after the
per-seat stderr budget and the league's retention. Prints ONE JSON object.

    python bench/stderr_growth.py                 # 2,000 matches per mode
    python bench/stderr_growth.py --matches 400   # a smoke run

What is real: the store (SQLite files in a scratch directory, written through :meth:`Store.record_match` as a
league does, in batches of ``--batch`` matches, with :meth:`Store.clear_old_stderr` after each batch in the
"after" mode) and the stderr kept by :class:`arena.match.stderr.StderrKeeper` from what the bot writes. What is not: the
matches. Results are synthetic (each seat a plain clean result), since what is measured is what a seat stores, not
how it was played. The spammer writes 66 KB of random base64 to stderr in every match and never faults (the
review's ``spam_bot.py``); its opponent is quiet. Modes, each in its own store:

- ``before``: every seat keeps up to 64 KiB (what ``StderrKeeper(64 KiB).text()`` keeps: the old rule);
- ``budget``: a clean seat keeps ``CLEAN_BYTES`` (4 KiB), no retention;
- ``after``: the budget and ``clear_old_stderr(keep)`` after each batch (the league's default keep, 50);
- ``quiet``: the same matches with no stderr at all: the store's growth without any (what ``after`` tends to).

Per mode: the store's bytes (database and WAL, after a checkpoint) at the end, bytes per match over the second half
of the run (the steady growth), that growth per hour at the review's league pace (327 matches in 120 s: 9,810
matches an hour), and for ``after`` the mean and largest time of one retention pass. A faulted seat still keeps
64 KiB, so a bot that faults every match costs ``keep`` x 64 KiB per version at most under retention.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import tempfile
import time
from pathlib import Path

from arena.game.results import MatchResult, SeatResult, SeatStats, Termination
from arena.game.rules import Rules
from arena.match.stderr import CLEAN_BYTES, FAULT_BYTES, StderrKeeper
from arena.run.config import LeagueConfig
from arena.schedule import make_schedule
from arena.store import Store

MATCHES_PER_HOUR = 327 * 30
"""The red-team review's league pace: 327 matches in 120 s."""
SPAM_BYTES = 66_000
END = Termination.LAST_STANDING


def spam(rng: random.Random) -> StderrKeeper:
    kept = StderrKeeper(FAULT_BYTES)
    data = base64.b64encode(rng.randbytes(SPAM_BYTES * 3 // 4))
    for start in range(0, len(data), 76):  # base64 lines, as the review's bot wrote
        kept.add(data[start:start + 76] + b"\n")
    return kept


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def run(mode: str, matches: int, batch: int, keep: int, where: Path, seed: int) -> dict[str, object]:
    path = where / f"{mode}.db"
    store = Store(path)
    schedule = make_schedule(2, 2, (matches + 1) // 2, seed)[:matches]
    bots = [{"name": name, "directory": f"/bots/{name}", "files_hash": f"{i:064x}", "command": ["python3", "bot.py"],
             "language": "python", "description": name} for i, name in enumerate(("spammer", "quiet"))]
    tid = store.create_tournament("growth", {"name": "growth"}, "0" * 64, bots, schedule)
    rng = random.Random(seed)
    rules = Rules()
    stats = SeatStats(rounds=5, turns=20, points=3, declares_ok=1, declares_failed=0)
    passes: list[float] = []
    half = 0
    for first in range(0, matches, batch):
        for scheduled in schedule[first:first + batch]:
            kept = spam(rng)
            text = "" if mode == "quiet" else kept.text() if mode == "before" else kept.text(CLEAN_BYTES)
            seats = tuple(SeatResult(seat=s, name=bots[slot]["name"], files_hash=bots[slot]["files_hash"],
                                     place=s + 1, score=s * 10, stats=stats, fault=None,
                                     stderr_tail=text if slot == 0 else "", bank_left_ms=9000)
                          for s, slot in enumerate(scheduled.bots))
            store.record_match(tid, scheduled.index, MatchResult(scheduled.seed, rules, END, 5, 40, seats,
                                                                 0.5, None), 1)
        if mode == "after":
            started = time.perf_counter()
            store.clear_old_stderr(tid, keep)
            passes.append(time.perf_counter() - started)
        if not half and first + batch >= matches // 2:
            store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            half, half_bytes = first + batch, size(path)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    end = size(path)
    kept_rows = store.db.execute("SELECT count(*), coalesce(sum(length(CAST(stderr_tail AS BLOB))), 0) FROM seats "
                                 "WHERE stderr_tail IS NOT NULL AND stderr_tail != ''").fetchone()
    free_pages = store.db.execute("PRAGMA freelist_count").fetchone()[0]
    store.close()
    per_match = (end - half_bytes) / (matches - half)
    report: dict[str, object] = {
        "store_bytes": end, "bytes_per_match": round(per_match), "mb_per_hour": round(per_match * MATCHES_PER_HOUR / 1e6, 1),
        "seats_with_stderr": kept_rows[0], "stderr_bytes_kept": kept_rows[1], "free_pages": free_pages}
    if passes:
        report["retention_pass_ms_mean"] = round(1000 * sum(passes) / len(passes), 2)
        report["retention_pass_ms_max"] = round(1000 * max(passes), 2)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matches", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=8, help="matches per league batch")
    parser.add_argument("--keep", type=int, default=LeagueConfig.keep_stderr)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        modes = {mode: run(mode, args.matches, args.batch, args.keep, Path(scratch), args.seed)
                 for mode in ("before", "budget", "after", "quiet")}
    print(json.dumps({"matches": args.matches, "batch": args.batch, "keep": args.keep, "spam_bytes": SPAM_BYTES,
                      "clean_bytes": CLEAN_BYTES, "fault_bytes": FAULT_BYTES, "matches_per_hour": MATCHES_PER_HOUR,
                      **modes}, indent=2))


if __name__ == "__main__":
    main()
