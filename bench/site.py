"""Speed benchmark of the results-site build: a synthetic store of N matches (default 10,000), then one build.

The store is filled directly through its API (create_tournament, record_match, finish with rate_all), so no match
is played: places come from fixed bot strengths plus noise, and a few seats fault with a stderr tail. By default
there are no event logs, so every match page takes the "log missing" path; with ``--logs N``, N real engine
matches (a greedy policy, like the greedy sample bot) are logged once and every stored match points at one of them, so each match page
reads a real log and renders a real replay, as after ``arena run``. Each match has a log file of its own (a hard
link to one of the N: a view is kept per file), with its view (arena/match/matchview.py) as the runner makes one after a
match: ``view_cpu_ms_per_log`` is its CPU time, what the runner spends on it per match. With ``--no-views`` the
logs have none, and the full build reads and derives every match's log, keeping its view (a store of an arena
before views; the rebuilds after it have them). Prints ONE JSON object.

    python bench/site.py --matches 10000 --bots 8 --players 3
    python bench/site.py --matches 10000 --logs 50 --add 100
    python bench/site.py --matches 10000 --logs 50 --workers 2 --no-views

After the full build, ``--add`` more matches (default 100) are recorded and rated, and the site is built again
into the same directory: the incremental rebuild (only the files whose data changed are written). Then the live
builds of ``arena run --live`` (arena/site/live.py): one that marks the pages live, and one after ``--add`` more
matches (``live_rebuild_*``, what a live build costs while a long tournament plays).

Each build runs in a process of its own (spawned), so that its peak resident memory is its own, not the filling's:
``*_peak_rss_mb`` is the building process's, ``*_worker_rss_mb`` the largest of its worker processes' (a full
build renders match pages in ``--workers`` of them).

Page weight: ``match_page_kb_mean`` is a match page's own HTML, ``replay_assets_kb`` the replay's style and scripts
that every match page loads once for the whole site (the card table's among them), ``site_mb_without_logs`` all of it;
``pair_pages_kb`` the pages of two bots side by side, ``highlights_kb`` and ``moments_kb`` the highlights' page and
what a rebuild keeps of them.

This is a measurement, not a test: numbers depend on the machine, so nothing here asserts on them.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from arena.game.cards import VALUE, hand_total
from arena.game.engine import DECK_TAKE, Declare, Match, Move, Play
from arena.game.results import Fault, MatchResult, Reason, SeatResult, SeatStats, Termination
from arena.game.rules import Rules
from arena.match.matchlog import FORMAT, MatchLog
from arena.match.matchview import view_log, view_path
from arena.match.protocol import Limits, encode, tell, turn_line
from arena.schedule import make_schedule

try:
    from arena.site.build import build_site
except ImportError:  # a checkout from before issue 37 cut arena/site/data.py and render.py by job
    from arena.site.render import build_site
from arena.stats.ratings import RatingConfig, rate_all
from arena.stats.standings import rated_matches
from arena.store import Store

FAULT_CHANCE = 0.01
FAULT_REASONS = (Reason.TIMEOUT_MOVE, Reason.CRASH_EXIT, Reason.INVALID_NOT_JSON, Reason.ILLEGAL_NOT_IN_HAND,
                 Reason.LIMIT_MEMORY)


def greedy(match: Match, rng: random.Random) -> Move:
    """Roughly the greedy sample bot, so that logs have the length of real ones: declare at 5 or less, else throw
    the highest set and draw (random legal movers rarely declare and play every round to the turn cap)."""
    moves = list(match.legal_moves())
    if isinstance(moves[0], Declare) and hand_total(match.hands[match.turn]) <= 5:
        return moves[0]
    plays = [move for move in moves if isinstance(move, Play) and move.take == DECK_TAKE]
    best = max(sum(VALUE[card] for card in move.discard) for move in plays)
    return rng.choice([move for move in plays if sum(VALUE[card] for card in move.discard) == best])


def write_logs(directory: Path, count: int, players: int, seed: int) -> list[Path]:
    """``count`` real logs of engine matches between greedy movers: the header, the engine events and the result,
    and the messages a referee logs (a turn to the mover and its reply, a few ms later, with the budget and the
    bank as the referee counts them; what every seat is told of each event), so that a log is as long as one
    ``arena run`` writes and has think times to read."""
    paths = []
    rules = Rules.from_dict({"threshold": 100})
    limits = Limits()
    for number in range(count):
        rng = random.Random(seed * 1000 + number)
        match = Match(players, rng.randrange(2**62), rules)
        path = directory / f"{number:06d}.jsonl.gz"
        log = MatchLog(path)
        log.write({"t": "header", "format": FORMAT, "seed": match.seed, "players": players, "rules": rules.to_dict(),
                   "limits": limits.to_dict(), "bots": [{"name": f"seat-{seat}"} for seat in range(players)]})
        banks, now, told = [limits.bank_ms] * players, 0, 0
        while match.outcome is None:
            seat = match.turn
            budget = limits.move_ms + banks[seat]
            log.write_sent(seat, now, turn_line(match, seat, budget, banks[seat]))
            think = rng.choice((1, 2, 3, 5, 8, 40, 1200))
            banks[seat] -= max(0, think - limits.move_ms)
            now += think
            move = greedy(match, rng)
            log.write_received(seat, now, encode(move.to_json())[:-1])
            match.apply(move)
            for event in match.events[told:]:
                for other, message in enumerate(tell(event, match)):
                    if message is not None:
                        log.write_sent(other, now, message)
            told = len(match.events)
        for event in match.events:
            log.write({"t": "event", "event": event})
        log.write({"t": "result", "result": {"places": list(match.outcome.places)}})
        log.close()
        paths.append(path)
    return paths


def fill(store: Store, matches: int, bots: int, players: int, seed: int, logs: list[Path] | None = None,
         record: int | None = None) -> tuple[int, list[MatchResult]]:
    """A tournament of ``matches`` scheduled matches, the first ``record`` of them (default: all) recorded and
    rated; returns its id and the results of the others, to record later (:func:`record_more`)."""
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
    later: list[MatchResult] = []
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
            seats.append(SeatResult(
                seat=seat, name=f"bot-{match.bots[seat]}", files_hash=f"{match.bots[seat]:064x}",
                place=players if faulted else places[seat], score=rng.randint(0, 120),
                stats=SeatStats(rounds=rounds, turns=rounds * 6, points=rng.randint(0, 120),
                                declares_ok=rng.randint(0, 4), declares_failed=rng.randint(0, 2)),
                fault=Fault(rng.choice(FAULT_REASONS), "no reply within 1000 ms", rng.randint(1, rounds))
                if faulted else None,
                stderr_tail="Traceback (most recent call last):\n  ...\nValueError: boom\n" if faulted else "",
                bank_left_ms=10000))
        log_path = own_log(logs[match.index % len(logs)], match.index) if logs else None
        later.append(MatchResult(match.seed, Rules(), Termination.LAST_STANDING, rounds, rounds * 6 * players,
                                 tuple(seats), 0.5, log_path))
    done = len(schedule) if record is None else record
    for index, result in enumerate(later[:done]):
        store.record_match(tid, index, result, 1)
    rate(store, tid)
    return tid, later[done:]


def own_log(log: Path, index: int) -> Path:
    """A log file of match ``index``'s own, a hard link to ``log``, with a copy of ``log``'s view if it has one
    (valid: the link has the log's size and time)."""
    path = log.with_name(f"match-{index:06d}.jsonl.gz")
    os.link(log, path)
    if view_path(log).exists():
        shutil.copyfile(view_path(log), view_path(path))
    return path


def rate(store: Store, tid: int) -> None:
    _, history = rate_all([row["id"] for row in store.bots(tid)], rated_matches(store, tid), RatingConfig())
    store.finish(tid, history)


def record_more(store: Store, tid: int, first: int, results: list[MatchResult]) -> None:
    """Record ``results`` as the matches from schedule index ``first`` on, and rate again: a tournament that goes
    on (or a league's next batches)."""
    for offset, result in enumerate(results):
        store.record_match(tid, first + offset, result, 1)
    rate(store, tid)


def measured_build(db: Path, site: Path, workers: int | None, full: bool,
                   live_refresh_s: int | None = None) -> dict[str, Any]:
    """One build in a spawned process: its wall and CPU time (its own and its workers'), its peak RSS and its
    largest worker's, and what it wrote."""
    context = multiprocessing.get_context("spawn")
    queue: Any = context.Queue()
    cpu, wall = cpu_seconds(), time.perf_counter()
    process = context.Process(target=_build, args=(db, site, workers, full, live_refresh_s, queue))
    process.start()
    result: dict[str, Any] = queue.get()
    process.join()
    result["cpu_seconds"] = round(cpu_seconds() - cpu, 2)
    result["seconds"] = round(time.perf_counter() - wall, 2)
    return result


def _build(db: Path, site: Path, workers: int | None, full: bool, live_refresh_s: int | None, queue: Any) -> None:
    report = build_site(Store(db, readonly=True), site, workers=workers, full=full, live_refresh_s=live_refresh_s)
    kinds: dict[str, int] = {}
    for path in report.written_files:
        kind = page_kind(path)
        kinds[kind] = kinds.get(kind, 0) + 1
    queue.put({"pages": report.pages, "written": report.written, "removed": report.removed, "written_kinds": kinds,
               "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
               "worker_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)})


def page_kind(path: str) -> str:
    """What kind of file a site path is, for the count of what a rebuild wrote."""
    parts = path.split("/")
    if parts[0] != "t":
        return path if parts[0] != "assets" else "assets"
    rest = "/".join(parts[2:])
    if rest.startswith("matches/"):
        name = parts[-1]
        return "match page" if name[0].isdigit() and name.endswith(".html") else (
            "match data" if name[0].isdigit() else "match listing")
    if rest.startswith("bots/"):
        return "bot page" if parts[-1] == "index.html" else "bot listing"
    return "tournament page" if rest == "index.html" else rest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=10_000)
    parser.add_argument("--bots", type=int, default=8)
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--logs", type=int, default=0, help="Real engine logs shared by the matches (0: none).")
    parser.add_argument("--workers", type=int, default=None, help="Build processes (default: the CPUs).")
    parser.add_argument("--add", type=int, default=100,
                        help="Matches recorded after the full build, then an incremental rebuild (0: none).")
    parser.add_argument("--no-views", action="store_true",
                        help="Logs without their views: the full build reads and derives every log.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "arena.db"
        store = Store(db)
        started = time.perf_counter()
        logs = write_logs(Path(scratch) / "logs-src", args.logs, args.players, args.seed) if args.logs else None
        view_ms = None
        if logs and not args.no_views:
            view_cpu = time.process_time()
            for path in logs:  # as the runner does after each match (arena/run/jobs.py)
                assert view_log(path, args.players) is not None
            view_ms = round(1000 * (time.process_time() - view_cpu) / len(logs), 2)
        tid, more = fill(store, args.matches + 2 * args.add, args.bots, args.players, args.seed, logs, args.matches)
        filled = time.perf_counter() - started
        site = Path(scratch) / "site"
        report = measured_build(db, site, args.workers, full=True)
        size = sum(path.stat().st_size for path in site.rglob("*") if path.is_file())
        # The event logs offered for download, apart: as big as the runner's logs, whatever the site makes.
        logs_size = sum(path.stat().st_size for path in site.rglob("*.jsonl.gz"))
        record_more(store, tid, args.matches, more[:args.add])
        again = measured_build(db, site, args.workers, full=False)
        marked = measured_build(db, site, args.workers, full=False, live_refresh_s=10)
        record_more(store, tid, args.matches + args.add, more[args.add:])
        live = measured_build(db, site, args.workers, full=False, live_refresh_s=10)
        match_kb = [path.stat().st_size / 1024 for path in (site / "t" / "bench" / "matches").glob("[0-9]*")
                    if not path.name.endswith(".jsonl.gz")]
        index_kb = (site / "t" / "bench" / "matches" / "index.js").stat().st_size / 1024  # the search's index
        # A match page's own bytes (its HTML and its data file), and the replay's scripts and style every match page
        # loads once for the whole site (the card table's among them, when there is one).
        pages_kb = [path.stat().st_size / 1024 for path in (site / "t" / "bench" / "matches").glob("[0-9]*.html")]
        replay_assets_kb = sum(path.stat().st_size for name in ("style.css", "replay.js", "cardtable.js")
                               if (path := site / "assets" / name).exists()) / 1024
        # The pages of two bots side by side (every pair of the field that met), and the highlights page with the
        # moments a rebuild keeps (issue 43): what they add to the site.
        pairs_kb = [path.stat().st_size / 1024 for path in (site / "t" / "bench").glob("pairs/*/*.html")]
        extra_kb = {name: (site / "t" / "bench" / name).stat().st_size / 1024
                    for name in ("highlights.html", "moments.json") if (site / "t" / "bench" / name).exists()}
    print(json.dumps({
        "matches": args.matches, "bots": args.bots, "players": args.players, "real_logs": args.logs,
        "views": bool(logs) and not args.no_views, "view_cpu_ms_per_log": view_ms,
        "workers": args.workers or os.cpu_count(),
        "pages": report["pages"], "build_seconds": report["seconds"], "build_cpu_seconds": report["cpu_seconds"],
        "build_peak_rss_mb": report["peak_rss_mb"], "build_worker_rss_mb": report["worker_rss_mb"],
        "ms_per_page": round(1000 * report["seconds"] / report["pages"], 3), "site_mb": round(size / 2**20, 1),
        "site_mb_without_logs": round((size - logs_size) / 2**20, 1), "logs_mb": round(logs_size / 2**20, 1),
        "match_files_kb_mean": round(sum(match_kb) / max(1, len(match_kb)), 1), "index_kb": round(index_kb, 1),
        "match_page_kb_mean": round(sum(pages_kb) / max(1, len(pages_kb)), 2),
        "replay_assets_kb": round(replay_assets_kb, 1),
        "pair_pages": len(pairs_kb), "pair_page_kb_mean": round(sum(pairs_kb) / max(1, len(pairs_kb)), 2),
        "pair_pages_kb": round(sum(pairs_kb), 1), "highlights_kb": round(extra_kb.get("highlights.html", 0), 1),
        "moments_kb": round(extra_kb.get("moments.json", 0), 1),
        "added": args.add, "rebuild_seconds": again["seconds"], "rebuild_cpu_seconds": again["cpu_seconds"],
        "rebuild_peak_rss_mb": again["peak_rss_mb"],
        "rebuild_written": again["written"], "rebuild_removed": again["removed"],
        "rebuild_written_kinds": again["written_kinds"],
        "live_mark_seconds": marked["seconds"], "live_mark_written": marked["written"],
        "live_rebuild_seconds": live["seconds"], "live_rebuild_cpu_seconds": live["cpu_seconds"],
        "live_rebuild_peak_rss_mb": live["peak_rss_mb"], "live_rebuild_written": live["written"],
        "live_rebuild_written_kinds": live["written_kinds"],
        "fill_seconds": round(filled, 2), "load_average": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
    }))


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the build's worker processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    main()
