"""Speed benchmark of the results-site build: a synthetic store of N matches (default 10,000), then one build.

The store is filled directly through its API (create_tournament, record_match, finish with rate_all), so no match
is played: places come from fixed bot strengths plus noise, a few seats fault with a stderr tail, and there are
no event logs, so every match page takes the "log missing" path. Prints ONE JSON object.

    python bench/site.py --matches 10000 --bots 8 --players 3

This is a measurement, not a test: numbers depend on the machine, so nothing here asserts on them.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import tempfile
import time
from pathlib import Path

from arena.config import RatingConfig
from arena.ratings import rate_all
from arena.schedule import make_schedule
from arena.site.render import build_site
from arena.store import MatchOutcome, SeatOutcome, Store

FAULT_CHANCE = 0.01
FAULT_KINDS = ("timeout", "crash", "invalid", "illegal", "limit")


def fill(store: Store, matches: int, bots: int, players: int, seed: int) -> int:
    rng = random.Random(seed)
    per_round = len(make_schedule(bots, players, 1, seed))
    schedule = make_schedule(bots, players, -(-matches // per_round), seed)[:matches]
    config = {"name": "bench", "players": players, "seed": seed, "repeats": 1, "format": "round-robin",
              "rules": {"threshold": 100}, "limits": {"move_ms": 1000}, "sandbox_limits": {"memory_mb": 512},
              "sandbox": "process", "rating": RatingConfig().__dict__}
    entrants = [{"name": f"bot-{i}", "directory": f"/bots/bot-{i}", "files_hash": f"{i:064x}",
                 "command": ["python3", "bot.py"], "language": "python"} for i in range(bots)]
    tid = store.create_tournament("bench", config, "0" * 64, entrants, schedule)
    strength = [rng.gauss(0, 1) for _ in range(bots)]
    for match in schedule:
        noise = [strength[slot] + rng.gauss(0, 1.5) for slot in match.bots]
        order = sorted(range(players), key=lambda seat: -noise[seat])
        places = [0] * players
        for place, seat in enumerate(order, 1):
            places[seat] = place
        rounds = rng.randint(4, 14)
        seats = []
        for seat in range(players):
            faulted = rng.random() < FAULT_CHANCE
            seats.append(SeatOutcome(
                place=players if faulted else places[seat], score=rng.randint(0, 120),
                fault_kind=rng.choice(FAULT_KINDS) if faulted else None,
                fault_detail="no reply within 1000 ms" if faulted else None,
                fault_round=rng.randint(1, rounds) if faulted else None,
                stderr_tail="Traceback (most recent call last):\n  ...\nValueError: boom\n" if faulted else "",
                rounds=rounds, turns=rounds * 6, points=rng.randint(0, 120), declares_ok=rng.randint(0, 4),
                declares_failed=rng.randint(0, 2)))
        store.record_match(tid, match.index, MatchOutcome(rounds, rounds * 6 * players, "last_standing", 0.5,
                                                          None, tuple(seats)), 1)
    _, history = rate_all([row["id"] for row in store.bots(tid)], store.rated_matches(tid), RatingConfig())
    store.finish(tid, history)
    return tid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=10_000)
    parser.add_argument("--bots", type=int, default=8)
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        store = Store(Path(scratch) / "arena.db")
        started = time.perf_counter()
        fill(store, args.matches, args.bots, args.players, args.seed)
        filled = time.perf_counter() - started
        report = build_site(store, Path(scratch) / "site")
        size = sum(path.stat().st_size for path in (Path(scratch) / "site").rglob("*") if path.is_file())
    print(json.dumps({
        "matches": args.matches, "bots": args.bots, "players": args.players,
        "pages": report.pages, "build_seconds": round(report.seconds, 2),
        "ms_per_page": round(1000 * report.seconds / report.pages, 3), "site_mb": round(size / 2**20, 1),
        "fill_seconds": round(filled, 2), "python": platform.python_version(),
    }))


if __name__ == "__main__":
    main()
