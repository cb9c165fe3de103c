"""Scale benchmark: how standings, a league batch's scheduling, the schedule itself and the site grow with the field.

For each size (bots x matches per bot) a real SQLite store is written into arena's schema (the tournament and its
bots through the Store API, the finished matches, their seats and a rating row per seat by bulk inserts: nothing
is played). The schedule is arena's balanced random design at 4 seats, cut to the size; the places come from a
Plackett-Luce model of known log strengths (Gumbel noise on a seeded normal skill per bot), every draw from one
seeded ``random.Random``. On each store it times, in CPU seconds of this process:

- ``standings``: what ``arena standings --json`` computes: the seats read once, the store's standings (its fit
  included), :func:`arena.stats.confidence.confidence` from that fit (rank intervals from 400 resamples), and the shared
  ranks, P(above next) and chains of ties of the table; plus how well the fit orders the known truth (Spearman,
  beside mean place's) and the share of bots whose 95% rank interval holds its true rank;
- ``league``: one league batch's scheduling with every bot active (the tally read from the store once, then
  ``choose_groups`` for ``groups_per_batch`` groups, the spread the league shows, the 100-resample confidence the
  matchmaker's closeness comes from, recomputed at checkpoints, and a batch chosen with that closeness, the P(above)
  of each pair it looks at worked out then);
- ``site`` (up to ``--site-max-matches``): a full build (CPU of the build and its worker processes); the site's
  files, its HTML pages and the largest of each kind; then ``--add`` more matches (one league batch) and the
  incremental rebuild, and how many files it wrote.

Then, once: the balanced random design and ``arena run --dry-run`` (its summary, reading every bot's manifest)
at ``--schedule-bots`` bots (default 10,000). Prints ONE JSON object.

    python bench/scale.py                      # 100, 1,000, 10,000 bots x 10, 100 matches each, and 1,000 x 400
    python bench/scale.py --quick              # 100 bots x 10 and 100, 1,000 x 10; the schedule at 1,000 bots
    python bench/scale.py --sizes 1000x400 --no-site     # one size: 1,000 bots, 100,000 matches
    python bench/scale.py --sizes 1000x400 --schedule-bots 0             # the same with the site
    python bench/scale.py --sizes 1000x400 --no-site --schedule-bots 0 --repeats 3   # the standings' least of 3

This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import resource
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from arena.run.league import closeness_checkpoint, tally_from_store
from arena.run.matchmaking import choose_groups, closeness_of, spread
from arena.schedule import make_schedule
from arena.stats.confidence import confidence
from arena.stats.ratings import RatingConfig
from arena.stats.standings import seat_columns, standings_with_confidence
from arena.stats.standings import standings as read_standings
from arena.store import Store

PLAYERS = 4
GROUPS_PER_BATCH = 8
"""A league's batch: ``groups_per_batch`` defaults to its workers; 8 is a large machine's."""
SIZES = "100x10,100x100,1000x10,1000x100,1000x400,10000x10,10000x100"
QUICK_SIZES = "100x10,100x100,1000x10"
T = TypeVar("T")


def cpu() -> float:
    """CPU seconds of this process and its finished children (a site build's workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(work: Callable[[], T]) -> tuple[T, float]:
    started = cpu()
    value = work()
    return value, cpu() - started


Rows = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]
"""Rows of the matches, seats and ratings tables."""


def fill(path: Path, bots: int, per_bot: int, seed: int, extra: int = 0) -> tuple[Store, int, list[float], Rows]:
    """A store at ``path`` with one finished tournament of ``bots`` bots, each in about ``per_bot`` matches; the
    store, the tournament's id, each bot's true log strength (by slot) and the rows of ``extra`` more matches of
    the same design, for :func:`insert` to add as a league's next batch would."""
    rng = random.Random(seed)
    matches = bots * per_bot // PLAYERS // PLAYERS * PLAYERS  # whole groups of PLAYERS rotations
    rounds = -(-(matches + extra) // (bots * PLAYERS))  # the balanced random design plays PLAYERS matches per bot and round
    schedule = make_schedule(bots, PLAYERS, rounds, seed)[:matches + extra]
    config = {"name": "scale", "players": PLAYERS, "seed": seed, "repeats": rounds, "format": "balanced-random",
              "rules": {"threshold": 100}, "limits": {"move_ms": 1000}, "sandbox_limits": {"memory_mb": 512},
              "sandbox": "process", "rating": RatingConfig().__dict__}
    entrants = [{"name": f"bot-{i}", "directory": f"/bots/bot-{i}", "files_hash": f"{i:064x}",
                 "command": ["python3", "bot.py"], "language": "python"} for i in range(bots)]
    store = Store(path)
    tid = store.create_tournament("scale", config, "0" * 64, entrants, ())
    ids = [int(row["id"]) for row in store.bots(tid)]
    truth = [rng.gauss(0, 1) for _ in range(bots)]
    match_rows, seat_rows, rating_rows = [], [], []
    for match in schedule:
        match_id = match.index + 1
        keyed = [truth[slot] - math.log(-math.log(rng.random() or 1e-300)) for slot in match.bots]
        ranked = sorted(range(PLAYERS), key=lambda seat: -keyed[seat])
        places = [0] * PLAYERS
        for place, seat in enumerate(ranked, 1):
            places[seat] = place
        rounds_played = rng.randint(4, 14)
        match_rows.append((match_id, tid, match.index, match.group, match.rotation, match.seed, rounds_played,
                           rounds_played * 6 * PLAYERS, "last_standing", 0.5, "2026-12-02T00:00:00Z"))
        for seat, slot in enumerate(match.bots):
            seat_rows.append((match_id, seat, ids[slot], places[seat], rng.randint(0, 120), rounds_played,
                              rounds_played * 6, rng.randint(0, 120), rng.randint(0, 4), rng.randint(0, 2), 10000))
            rating_rows.append((tid, ids[slot], match.index, 25.0 + truth[slot], 8.0 / (1 + match.index / bots)))
    seats = len(seat_rows) * matches // len(match_rows) if match_rows else 0
    insert(store, (match_rows[:matches], seat_rows[:seats], rating_rows[:seats]))
    with store.atomic() as db:
        db.execute("UPDATE tournaments SET finished_at = '2026-12-02T00:00:00Z' WHERE id = ?", (tid,))
    return store, tid, truth, (match_rows[matches:], seat_rows[seats:], rating_rows[seats:])


def store_options(parser: argparse.ArgumentParser) -> None:
    """The options of a bench that works on one synthetic store (bench/site_*.py): its size, or one already filled,
    which several benches, or another checkout's runs of one, can then share."""
    parser.add_argument("--bots", type=int, default=1000)
    parser.add_argument("--per-bot", type=int, default=400)
    parser.add_argument("--store", type=Path, help="A store bench/scale.py filled (made here when not given).")


@contextmanager
def bench_store(args: argparse.Namespace, prefix: str) -> Iterator[tuple[Path, Path]]:
    """A temporary directory and the store to measure (:func:`store_options`): ``--store``, or one of ``--bots``
    bots with about ``--per-bot`` matches each (seed 1) filled in that directory."""
    with tempfile.TemporaryDirectory(prefix=prefix) as directory:
        store = args.store
        if store is None:
            store = Path(directory) / "store.db"
            fill(store, args.bots, args.per_bot, 1)
        yield Path(directory), store


def insert(store: Store, rows: Rows) -> None:
    """Bulk-insert finished matches with their seats and rating rows (as :func:`fill` made them)."""
    match_rows, seat_rows, rating_rows = rows
    with store.atomic() as db:
        db.executemany("INSERT INTO matches (id, tournament_id, idx, grp, rotation, seed, status, attempts, rounds, "
                       "turns, termination, duration_s, finished_at) VALUES (?, ?, ?, ?, ?, ?, 'done', 1, ?, ?, ?, ?, ?)",
                       match_rows)
        db.executemany("INSERT INTO seats (match_id, seat, bot_id, place, score, rounds, turns, points, declares_ok, "
                       "declares_failed, bank_left_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", seat_rows)
        db.executemany("INSERT INTO ratings VALUES (?, ?, ?, ?, ?)", rating_rows)


def spearman(order: Sequence[int], truth: Sequence[float]) -> float:
    """Rank correlation of a standings order (slots, best first) with the true strengths."""
    true_rank = {slot: rank for rank, slot in enumerate(sorted(range(len(truth)), key=lambda s: -truth[s]))}
    n = len(order)
    return 1 - 6 * sum((rank - true_rank[slot]) ** 2 for rank, slot in enumerate(order)) / (n * (n * n - 1))


def standings(store: Store, tid: int, truth: Sequence[float]) -> dict[str, Any]:
    """``arena standings --json``'s work (arena/stats/standings.py's standings_and_confidence, then the table),
    step by step, in CPU seconds."""
    seats, seat_read = timed(lambda: seat_columns(store, tid))
    table, read = timed(lambda: read_standings(store, tid, seats=seats))
    point = {line.bot_id: line.strength for line in table if line.strength is not None}
    sure, boot = timed(lambda: confidence(seats, [line.bot_id for line in table], point=point))
    lines, shown = timed(lambda: standings_with_confidence(table, sure))
    slot = {int(row["id"]): int(row["slot"]) for row in store.bots(tid)}
    widths = [high - low + 1 for low, high in (line["rank_interval_95"] for line in lines)]
    true_rank = {s: rank for rank, s in enumerate(sorted(range(len(truth)), key=lambda s: -truth[s]), 1)}
    by_place = sorted(table, key=lambda line: line.mean_place or 0.0)
    return {"cpu_s": round(read + seat_read + boot + shown, 2), "store_standings_s": round(read, 2),
            "seat_columns_s": round(seat_read, 2), "confidence_s": round(boot, 2), "table_s": round(shown, 3),
            "spearman_with_truth": round(spearman([slot[line.bot_id] for line in table], truth), 4),
            "spearman_of_mean_place": round(spearman([slot[line.bot_id] for line in by_place], truth), 4),
            "intervals_holding_true_rank": round(sum(
                low <= true_rank[slot[line.bot_id]] <= high
                for line, (low, high) in zip(table, (line["rank_interval_95"] for line in lines))) / len(table), 4),
            "rank_interval_width_median": sorted(widths)[len(widths) // 2],
            "bots_that_could_be_first": sum(bool(line["rank_interval_95"]) and line["rank_interval_95"][0] == 1
                                            for line in lines)}


def league_batch(store: Store, tid: int, seed: int) -> dict[str, Any]:
    """One league batch's scheduling with every bot of the store active, in CPU milliseconds: as the league does
    it (arena/run/league.py), the closeness from a 100-resample confidence of the groups before its checkpoint."""
    active = [int(row["id"]) for row in store.bots(tid)]
    tally, read = timed(lambda: tally_from_store(store, tid, PLAYERS))
    rng = random.Random(seed)
    _, choose = timed(lambda: choose_groups(tally, active, GROUPS_PER_BATCH, rng))
    _, spread_cost = timed(lambda: spread(tally, active))
    upto = closeness_checkpoint(store.schedule_end(tid)[1])
    sure, sure_cost = timed(lambda: confidence(seat_columns(store, tid, before_group=upto), sorted(active),
                                               resamples=100, seed=upto))
    close = closeness_of(sure.p_above, active)
    # The next batch with the closeness: its look-ups are what each pair's P(above) costs when first asked.
    _, with_closeness = timed(lambda: choose_groups(tally, active, GROUPS_PER_BATCH, rng, close))
    return {"tally_from_store_ms": round(read * 1000, 1), "choose_groups_ms": round(choose * 1000, 2),
            "spread_ms": round(spread_cost * 1000, 1), "closeness_confidence_ms": round(sure_cost * 1000, 1),
            "choose_groups_with_closeness_ms": round(with_closeness * 1000, 2),
            "closeness_pairs_worked_out": len(close.known)}


def site(store: Store, out: Path, workers: int | None, batch: Rows) -> dict[str, Any]:
    """A full site build of the store, its pages and the largest; then ``batch`` added to the store (a league's
    next matches) and the site built again in place (the incremental rebuild)."""
    try:
        from arena.site.build import build_site
    except ImportError:  # a checkout from before issue 37 cut arena/site/data.py and render.py by job
        from arena.site.render import build_site

    started = time.perf_counter()
    report, used = timed(lambda: build_site(store, out, workers=workers, full=True))
    wall = time.perf_counter() - started
    result = {"build_cpu_s": round(used, 1), "build_wall_s": round(wall, 1), "pages": report.pages,
              **sizes(out)}
    insert(store, batch)
    started = time.perf_counter()
    again, used = timed(lambda: build_site(store, out, workers=workers))
    result.update({"added_matches": len(batch[0]), "rebuild_cpu_s": round(used, 1),
                   "rebuild_wall_s": round(time.perf_counter() - started, 1), "rebuild_written": again.written})
    return result


def sizes(out: Path) -> dict[str, Any]:
    """The site's files: how many and their megabytes; its HTML pages: how many, the largest and the largest of
    each kind (the tournament's page, a standings page, a bot's page, a listing, a match's page); the largest
    other files (the match index, the downloads)."""
    files = [(path.stat().st_size, path.relative_to(out).as_posix()) for path in out.rglob("*") if path.is_file()]
    pages = sorted(((size, name) for size, name in files if name.endswith(".html")), reverse=True)
    kinds: dict[str, tuple[int, str]] = {}
    for size, name in pages:
        parts = name.split("/")
        kind = ("home" if len(parts) == 1 else "tournament" if parts[-1] == "index.html" and len(parts) == 3
                else "standings" if parts[-1].startswith("standings-") else "faults" if parts[-1] == "faults.html"
                else "bot" if parts[2] == "bots" and parts[-1] == "index.html" else "listing"
                if parts[-1].startswith(("matches-", "page-")) or parts[-1] == "index.html" else "match")
        kinds.setdefault(kind, (size, name))
    others = sorted(((size, name) for size, name in files if not name.endswith(".html")), reverse=True)
    return {"files": len(files), "mb": round(sum(size for size, _ in files) / 2**20, 1), "html_pages": len(pages),
            "largest_page_kb": round(pages[0][0] / 1024, 1) if pages else 0,
            "largest_page_by_kind_kb": {kind: [round(size / 1024, 1), name] for kind, (size, name) in kinds.items()},
            "largest_other_kb": [[round(size / 1024, 1), name] for size, name in others[:4]]}


def schedule_and_dry_run(bots: int, root: Path, seed: int) -> dict[str, Any]:
    """The balanced random design and ``arena run --dry-run``'s summary over ``bots`` bot directories."""
    from arena.run.config import load_config
    from arena.run.tournament import dry_run

    rounds = 4
    made, design = timed(lambda: make_schedule(bots, PLAYERS, rounds, seed))
    source = Path(__file__).resolve().parent.parent / "sample_bots" / "random" / "bot.py"
    entries = []
    for number in range(bots):
        directory = root / f"b{number}"
        directory.mkdir(parents=True)
        (directory / "bot.py").symlink_to(source)
        (directory / "bot.yaml").write_text(f"name: b{number}\ncommand: python3 bot.py\nlanguage: python\n")
        entries.append(f"b{number}")
    config_file = root / "scale.yaml"
    config_file.write_text(json.dumps({"name": "scale", "bots": entries, "players": PLAYERS, "repeats": rounds,
                                       "seed": seed}))
    config, load = timed(lambda: load_config(config_file))
    summary, dry = timed(lambda: dry_run(config))  # type: ignore[arg-type]
    return {"bots": bots, "matches": len(made), "make_schedule_s": round(design, 2),
            "load_config_s": round(load, 2), "dry_run_s": round(dry, 2),
            "dry_run_matches": summary["matches"],
            "dry_run_matches_per_bot": sorted(set(summary["matches_per_bot"].values()))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, help=f"BOTSxMATCHES_PER_BOT, comma-separated (default {SIZES}).")
    parser.add_argument("--quick", action="store_true", help=f"Sizes {QUICK_SIZES}; the schedule at 1,000 bots.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1, help="Time the standings this many times: the least.")
    parser.add_argument("--site-max-matches", type=int, default=100_000,
                        help="Build the site only for stores of at most this many matches (0: never).")
    parser.add_argument("--no-site", action="store_true")
    parser.add_argument("--add", type=int, default=GROUPS_PER_BATCH * PLAYERS,
                        help=f"Matches added after the full site build before it is built again (default "
                             f"{GROUPS_PER_BATCH * PLAYERS}: one league batch of {GROUPS_PER_BATCH} groups).")
    parser.add_argument("--workers", type=int, default=None, help="Site build processes (default: the CPUs).")
    parser.add_argument("--schedule-bots", type=int, default=None,
                        help="Bots for the design and the dry run (default 10,000; 1,000 with --quick; 0: skip).")
    args = parser.parse_args(argv)
    sizes = [tuple(int(x) for x in size.split("x")) for size in
             (args.sizes or (QUICK_SIZES if args.quick else SIZES)).split(",")]
    schedule_bots = args.schedule_bots if args.schedule_bots is not None else 1000 if args.quick else 10_000
    cases = []
    with tempfile.TemporaryDirectory() as scratch:
        for number, (bots, per_bot) in enumerate(sizes):
            started = time.perf_counter()
            store, tid, truth, batch = fill(Path(scratch) / f"{number}.db", bots, per_bot, args.seed, args.add)
            matches = store.status_counts(tid).get("done", 0)
            case: dict[str, Any] = {"bots": bots, "matches_per_bot": per_bot, "matches": matches,
                                    "fill_s": round(time.perf_counter() - started, 1),
                                    "store_mb": round(os.path.getsize(store.path) / 2**20, 1)}
            # The least CPU of --repeats runs: on a shared machine the load adds, never subtracts.
            case["standings"] = min((standings(store, tid, truth) for _ in range(args.repeats)),
                                    key=lambda found: float(found["cpu_s"]))
            case["league"] = league_batch(store, tid, args.seed)
            if not args.no_site and matches <= args.site_max_matches:
                case["site"] = site(store, Path(scratch) / f"site-{number}", args.workers, batch)
            cases.append(case)
            store.close()
            print(json.dumps(case), flush=True, file=__import__("sys").stderr)  # progress, for long runs
        scheduled = (schedule_and_dry_run(schedule_bots, Path(scratch) / "dry", args.seed)
                     if schedule_bots else None)
    print(json.dumps({"cases": cases, "schedule": scheduled, "players": PLAYERS,
                      "groups_per_batch": GROUPS_PER_BATCH, "load_average": round(os.getloadavg()[0], 2),
                      "python": platform.python_version(), "sqlite": sqlite3.sqlite_version}))


if __name__ == "__main__":
    main()
