"""League benchmark: the new user's league of issue 23 (house bots greedy and random, three uploaded bots, a new
version of one of them mid-way), played by the real League policy over the real run loop and store, then compared
with a round-robin of the same bots. Prints ONE JSON object.

    python bench/league.py                      # 500 league matches, the new version after 250, 3 seats
    python bench/league.py --matches 200 --round-robin-repeats 6     # a smoke run
    python bench/league.py --slow-bot-ms 100 --matches 240 --swap-at 60  # a slow bot enters: with and without
                                                                          # the matchmaker's throttle

What is real: the store (SQLite, in a scratch directory), the registry with the admission check of every upload
(each checked in the process sandbox, as ``arena serve`` does), :class:`arena.run.league.League` and
:func:`arena.run.loop.run` (entrants, the matchmaker, storing, rating), and the bots' own code: each match is
played by :func:`arena.match.local.play_local` on the sample bots' ``bot.py`` (their ``arena_bot.Bot``), through the same
messages as the referee sends. What is not: bot processes. Playing 500 + 600 matches in the sandbox costs about
3 s of a loaded 2-core machine each (an hour for one run), so the player here runs each bot's code in-process; the
league's matchmaking and its store are the same either way (``arena serve``'s pool plays the same MatchJobs).

The uploads are copies of the sample bots under other names: ``cautious`` (greedy declaring at 2 or less),
``bold`` (greedy declaring at 9 or less; its version 2 declares at 7) and ``plotter`` (the planner). Reported:
the pair-meeting spread of the bots in the field at the end (fewest and most meetings of a pair, their ratio;
the goal is >= 1/3), each bot's matches against its fair share (goal: at most 1.25x), the league's order of the
bots in the field and the round-robin's (goal: equal), and what choosing a batch's groups costs with 1,000 active
bots. This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import random
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Generator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "protocol"))

import arena_bot

from arena.bots.manifest import BotSpec, load_bot
from arena.game.results import MatchResult, SeatResult
from arena.game.rules import Rules
from arena.match.local import play_local
from arena.registry.check import check_bot
from arena.registry.versions import Registry
from arena.run import loop
from arena.run.config import LeagueConfig
from arena.run.jobs import JobResult, MatchJob
from arena.run.league import League, tally_from_store
from arena.run.matchmaking import Tally, choose_groups, spread
from arena.schedule import make_schedule
from arena.stats.confidence import confidence
from arena.stats.standings import seat_results, standings
from arena.store import Store, is_active

SAMPLES = ROOT / "sample_bots"


def bot_class(directory: Path) -> type[arena_bot.Bot]:
    """The ``arena_bot.Bot`` subclass of ``directory/bot.py``, loaded once per directory."""
    key = f"league_bench_{abs(hash(str(directory)))}"
    module = sys.modules.get(key)
    if module is None:
        spec = importlib.util.spec_from_file_location(key, directory / "bot.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module  # dataclasses look their module up while the class is built
        spec.loader.exec_module(module)
    assert isinstance(module, ModuleType)
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, arena_bot.Bot) and value.__module__ == module.__name__:
            return value
    raise SystemExit(f"{directory}/bot.py defines no arena_bot.Bot")


class Timed:
    """A bot whose replies are timed: its own think time, which the referee counts per seat and the league's
    throttle reads (without it every seat read 0 and the throttle never engaged here)."""

    def __init__(self, bot: Any) -> None:
        self.bot = bot
        self.seconds = 0.0

    def reply(self, message: dict[str, Any]) -> dict[str, Any] | None:
        started = time.monotonic()
        try:
            return self.bot.reply(message)  # type: ignore[no-any-return]
        finally:
            self.seconds += time.monotonic() - started


def play(bots: Sequence[BotSpec], seed: int, rules: Rules) -> MatchResult:
    """One scheduled match on the bots' own code, in-process."""
    started = time.monotonic()
    seated = [Timed(bot_class(Path(bot.directory))()) for bot in bots]
    match = play_local(seated, seed, rules, [bot.name for bot in bots])
    assert match.outcome is not None
    stats = match.seat_stats()
    players = tuple(SeatResult(seat=seat, name=bot.name, files_hash=bot.files_hash, place=match.outcome.places[seat],
                               score=match.outcome.scores[seat], stats=stats[seat], fault=None, stderr_tail="",
                               bank_left_ms=0, think_ms=round(seated[seat].seconds * 1000))
                    for seat, bot in enumerate(bots))
    return MatchResult(seed=seed, rules=rules, termination=match.outcome.termination, rounds=match.round,
                       turns=sum(seat.turns for seat in stats), players=players,
                       duration_s=time.monotonic() - started, log_path=None)


class InProcessPlayer:
    """A :class:`arena.run.players.Player` that plays each job in this process; after ``swap_at`` matches it calls
    ``swap`` once (a new version is uploaded), and once ``stop_at`` are stored it sets ``stop``."""

    stats = None

    def __init__(self, stop: threading.Event, stop_at: int, swap_at: int, swap: Any) -> None:
        self.stop, self.stop_at, self.swap_at, self.swap = stop, stop_at, swap_at, swap
        self.played = 0
        self.forfeits = 0
        self.finished: list[float] = []
        """When each match finished (monotonic seconds)."""

    def play(self, jobs: Sequence[MatchJob], tick: Any) -> Generator[JobResult, None, None]:
        for job in jobs:
            if self.played >= self.stop_at:
                self.stop.set()  # the loop's tick stops the run: the rest of the batch stays pending
            tick()
            result = play(job.bots, job.seed, job.rules)
            self.forfeits += sum(seat.place is None for seat in result.players)
            self.played += 1
            self.finished.append(time.monotonic())
            if self.played == self.swap_at:
                self.swap()
            yield JobResult(job.index, 1, result)

    def close(self) -> None:
        pass


def upload(registry: Registry, name: str, source: str, declare_at: int | None = None, sleep_ms: int = 0) -> str:
    """Copy a sample bot under ``name`` (greedy with another declare threshold, or sleeping ``sleep_ms`` before
    each move, if given) and submit it."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / name
        shutil.copytree(SAMPLES / source, copy, ignore=shutil.ignore_patterns("__pycache__"))
        manifest = copy / "bot.yaml"
        manifest.write_text(re.sub(r"(?m)^name: .*$", f"name: {name}", manifest.read_text()))
        if declare_at is not None:
            code = copy / "bot.py"
            code.write_text(re.sub(r"(?m)^DECLARE_AT = \d+", f"DECLARE_AT = {declare_at}", code.read_text()))
        if sleep_ms:
            code = copy / "bot.py"
            code.write_text(code.read_text().replace(
                "        hand: list[str] = message[\"hand\"]\n",
                f"        __import__('time').sleep({sleep_ms / 1000})\n        hand: list[str] = message[\"hand\"]\n", 1))
        stored = registry.submit(copy, lambda bot, built: check_bot(bot, "process", built=built))
        if stored.status != "stored":
            raise SystemExit(f"upload {name} refused: {stored.reason}")
        return f"{name}@{stored.version}"


def order_of(store: Store, tid: int, names: Sequence[str] | None = None) -> list[str]:
    """The standings' order (the store's own ordering), of ``names`` only if given."""
    return [line.name for line in standings(store, tid) if names is None or line.name in names]


def round_robin(store: Store, league_tid: int, players: int, repeats: int, seed: int) -> dict[str, Any]:
    """Every ``players``-bot group of the league's bots in the field, duplicate deals, ``repeats`` times; stored as
    a tournament and ordered by the same standings."""
    bots = [row for row in store.bots(league_tid) if is_active(row)]
    specs = [dataclasses.replace(load_bot(row["directory"]), name=row["name"]) for row in bots]
    schedule = make_schedule(len(bots), players, repeats, seed)
    league = json.loads(store.db.execute("SELECT config FROM tournaments WHERE id = ?", (league_tid,)).fetchone()[0])
    config = {"name": "round-robin", "players": players, "seed": seed, "repeats": repeats, "rating": league["rating"]}
    tid = store.create_tournament("round-robin", config, "0" * 64, [spec.to_dict() for spec in specs], schedule)
    for match in schedule:
        store.record_match(tid, match.index, play([specs[slot] for slot in match.bots], match.seed, Rules()), 1)
    sure = confidence(seat_results(store, tid), [line.bot_id for line in standings(store, tid)])
    table = standings(store, tid)
    order = [line.bot_id for line in table]
    above = sure.p_above_next(order)
    return {"matches": len(schedule), "order": [line.name for line in table],
            "mean_place": {line.name: round(line.mean_place or 0.0, 3) for line in table},
            "p_above_next": {line.name: None if above[line.bot_id] is None else round(above[line.bot_id], 3)
                             for line in table}}


def scheduler_cost(bots: int, players: int, groups: int, batches: int = 20) -> float:
    """CPU milliseconds a batch of ``groups`` groups costs the matchmaker with ``bots`` active bots."""
    tally = Tally(players)
    active = list(range(bots))
    started = time.process_time()
    for batch in range(batches):
        choose_groups(tally, active, groups, random.Random(batch))
    return (time.process_time() - started) / batches * 1000


def new_league(root: Path, players: int, seed: int) -> tuple[Registry, Store, League]:
    """The new user's league in ``root``: house greedy and random, and the three uploads in its registry."""
    registry = Registry(root / "bots")
    for name, source, declare_at in (("cautious", "greedy", 2), ("bold", "greedy", 9), ("plotter", "planner", None)):
        upload(registry, name, source, declare_at)
    config = LeagueConfig(name="ladder", entries=(str(SAMPLES / "greedy"), str(SAMPLES / "random"), "registry:*"),
                          players=players, seed=seed, registry=root / "bots")
    store = Store(root / "arena.db")
    return registry, store, League(config, store.path)


def slow_bot(matches: int, arrive_at: int, turn_ms: int, players: int, seed: int, throttle: bool) -> dict[str, Any]:
    """The league of :func:`main` without a new version; after ``arrive_at`` matches ``sloth`` (greedy sleeping
    ``turn_ms`` before each move) enters. Matches a second before it came and over the last third of the run, with
    the matchmaker's throttle or (``throttle`` False) without it."""
    import arena.run.league as league_module

    weights = league_module.throttle_weights
    if not throttle:
        league_module.throttle_weights = lambda timing, minimum=3: {}  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as scratch:
            registry, store, league = new_league(Path(scratch), players, seed)
            stop = threading.Event()
            player = InProcessPlayer(stop, matches, arrive_at,
                                     lambda: upload(registry, "sloth", "greedy", sleep_ms=turn_ms))
            league._stop = stop
            loop.run(store, league, player, stop=stop)
            table = {line.name: line.matches for line in standings(store, 1)}
            store.close()
    finally:
        league_module.throttle_weights = weights
    times = player.finished
    before = (arrive_at // 2 - 1) / (times[arrive_at - 1] - times[arrive_at // 2])
    last = len(times) - len(times) // 3
    after = (len(times) - 1 - last) / (times[-1] - times[last])
    return {"throttle": throttle, "matches_per_s_before": round(before, 3), "matches_per_s_after": round(after, 3),
            "slowdown": round(before / after, 2), "sloth_matches": table.get("sloth@1", 0),
            "others_matches": {name: count for name, count in table.items() if name != "sloth@1"},
            "throttled": league.state.throttled}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=500)
    parser.add_argument("--swap-at", type=int, default=250, help="matches after which bold's version 2 arrives")
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--round-robin-repeats", type=int, default=20)
    parser.add_argument("--slow-bot-ms", type=int, default=0,
                        help="instead: a bot sleeping this long before each move enters after --swap-at matches; "
                             "the league's matches per second before and after, with the throttle and without")
    args = parser.parse_args(argv)
    started = time.monotonic()
    if args.slow_bot_ms:
        runs = [slow_bot(args.matches, args.swap_at, args.slow_bot_ms, args.players, args.seed, throttle)
                for throttle in (True, False)]
        print(json.dumps({"bench": "league-slow-bot", "matches": args.matches, "arrives_at": args.swap_at,
                          "sleep_ms_per_move": args.slow_bot_ms, "players": args.players, "seed": args.seed,
                          "runs": runs, "seconds": round(time.monotonic() - started, 1)}, indent=2))
        return
    with tempfile.TemporaryDirectory() as scratch:
        registry, store, league = new_league(Path(scratch), args.players, args.seed)
        stop = threading.Event()
        swapped: list[str] = []
        player = InProcessPlayer(stop, args.matches, args.swap_at,
                                 lambda: swapped.append(upload(registry, "bold", "greedy", 7)))
        league._stop = stop  # the idle wait of League.batches
        league_started = time.monotonic()
        report = loop.run(store, league, player, stop=stop)
        league_seconds = time.monotonic() - league_started
        tid = report.tid
        rows = store.bots(tid)
        names = {int(row["id"]): str(row["name"]) for row in rows}
        active = [int(row["id"]) for row in rows if is_active(row)]
        found = spread(tally_from_store(store, tid, args.players), active)
        shares = [share.share for share in found.bots if share.share is not None]
        field = [names[bot] for bot in active]
        league_order = order_of(store, tid, field)
        rr = round_robin(store, tid, args.players, args.round_robin_repeats, args.seed)
        counts = store.status_counts(tid)
        store.close()
    print(json.dumps({
        "bench": "league",
        "matches": counts.get("done", 0),
        "players": args.players,
        "seed": args.seed,
        "new_version": swapped,
        "left_the_field": sorted(set(names.values()) - set(field)),
        "spread": found.to_dict(names),
        "pair_ratio": None if found.ratio is None else round(found.ratio, 3),
        "pair_ratio_goal": ">= 0.333",
        "max_share": round(max(shares), 3),
        "max_share_goal": "<= 1.25",
        "league_order": league_order,
        "round_robin": rr,
        "orders_equal": league_order == rr["order"],
        "forfeits": player.forfeits,
        "league_seconds": round(league_seconds, 1),
        "scheduler_ms_per_batch": {f"{bots} bots, {groups} groups": round(scheduler_cost(bots, 4, groups), 2)
                                   for bots, groups in ((5, 1), (100, 8), (1000, 8), (1000, 64))},
        "seconds": round(time.monotonic() - started, 1),
    }, indent=2))


if __name__ == "__main__":
    main()
