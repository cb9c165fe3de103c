"""Size and cost of the site's match index (t/<slug>/matches/index.js, what the matches list and the bot pages
filter in the browser): a synthetic store of N matches, then the index made from it as the build makes it.

The store is filled directly through its API (create_tournament, record_match), no match played: places are a
shuffle, scores random, and a seat faults with probability ``--faults`` (a reason of five). No ratings are made:
the index does not read them. Prints ONE JSON object: the index's bytes (and gzipped, as a static host serves it),
bytes per match, the CPU seconds to read and make it, and, when ``node`` is on the PATH, the milliseconds Node takes
to load it and filter it the way assets/search.js does (a bot and an opponent).

    python bench/search_index.py --matches 315 --bots 7 --players 3
    python bench/search_index.py --matches 100000 --bots 1000 --players 4

This is a measurement, not a test: numbers depend on the machine, so nothing here asserts on them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from arena.game.results import Fault, MatchResult, Reason, SeatResult, SeatStats, Termination
from arena.game.rules import Rules
from arena.schedule import make_schedule
from arena.site import urls
from arena.site.html import script_json
from arena.site.pages import listings as listings_data
from arena.store import Store

REASONS = (Reason.TIMEOUT_MOVE, Reason.CRASH_EXIT, Reason.INVALID_NOT_JSON, Reason.ILLEGAL_NOT_IN_HAND,
           Reason.LIMIT_MEMORY)

# Load the index and filter it as search.js does: decode the steps, then keep the matches of bot 0 against bot 1.
NODE_FILTER = """
const fs = require("fs");
const started = process.hrtime.bigint();
const window = {};
eval(fs.readFileSync(process.argv[1], "utf8"));
const index = window.arenaIndex;
let id = 0, group = 0;
const matches = index.m.map(row => { id += row[0]; group += row[1];
  return {id, group, bots: row[2], places: Array.isArray(row[3]) ? row[3] : null}; });
const loaded = process.hrtime.bigint();
const hits = matches.filter(m => m.bots.includes(0) && m.bots.includes(1)).length;
const filtered = process.hrtime.bigint();
console.log(JSON.stringify({load_ms: Number(loaded - started) / 1e6, filter_ms: Number(filtered - loaded) / 1e6,
                            hits}));
"""


def fill(store: Store, matches: int, bots: int, players: int, seed: int, faults: float) -> None:
    rng = random.Random(seed)
    per_round = len(make_schedule(bots, players, 1, seed))
    schedule = make_schedule(bots, players, -(-matches // per_round), seed)[:matches]
    config = {"name": "bench", "players": players, "seed": seed, "repeats": 1, "rules": {"threshold": 100}}
    entrants = [{"name": f"bot-{i}", "directory": f"/bots/bot-{i}", "files_hash": f"{i:064x}",
                 "command": ["python3", "bot.py"], "language": "python"} for i in range(bots)]
    tid = store.create_tournament("bench", config, "0" * 64, entrants, schedule)
    for match in schedule:
        places = list(range(1, players + 1))
        rng.shuffle(places)
        seats = tuple(SeatResult(
            seat=seat, name=f"bot-{slot}", files_hash=f"{slot:064x}", place=places[seat], score=rng.randint(0, 140),
            stats=SeatStats(rounds=8, turns=40, points=50, declares_ok=1, declares_failed=0),
            fault=Fault(rng.choice(REASONS), "a fault", 3) if rng.random() < faults else None,
            stderr_tail="", bank_left_ms=10000) for seat, slot in enumerate(match.bots))
        store.record_match(tid, match.index, MatchResult(match.seed, Rules(), Termination.LAST_STANDING, 8,
                                                         40 * players, seats, 0.5, None), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=10_000)
    parser.add_argument("--bots", type=int, default=8)
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--faults", type=float, default=0.05, help="Chance that a seat faults.")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        store = Store(Path(scratch) / "arena.db")
        store.db.execute("PRAGMA synchronous = OFF")  # a scratch store: filling it need not wait for the disk
        started = time.perf_counter()
        fill(store, args.matches, args.bots, args.players, args.seed, args.faults)
        filled = time.perf_counter() - started
        cpu = time.process_time()
        tid = store.tournament("bench")["id"]
        bots = [(row["id"], row["name"], urls.slug(row["name"], row["id"], "b")) for row in store.bots(tid)]
        index = listings_data.index_of(bots, store.match_stamps(tid), store.index_seats(tid))
        text = f"window.arenaIndex = {script_json(json.dumps(index, ensure_ascii=False, separators=(',', ':')))};\n"
        made = time.process_time() - cpu
        raw = text.encode()
        packed = gzip.compress(raw, 6)
        node = None
        if shutil.which("node"):
            path = Path(scratch) / "index.js"
            path.write_bytes(raw)
            run = subprocess.run(["node", "-e", NODE_FILTER, str(path)], capture_output=True, text=True, check=True)
            node = json.loads(run.stdout)
    print(json.dumps({
        "matches": args.matches, "bots": args.bots, "players": args.players, "fault_chance": args.faults,
        "index_bytes": len(raw), "bytes_per_match": round(len(raw) / args.matches, 1),
        "gzip_bytes": len(packed), "gzip_bytes_per_match": round(len(packed) / args.matches, 1),
        "index_cpu_seconds": round(made, 3), "node": node, "fill_seconds": round(filled, 1),
        "load_average": round(os.getloadavg()[0], 2), "python": platform.python_version(),
    }))


if __name__ == "__main__":
    main()
