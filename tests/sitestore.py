"""Test helper for the results site: a small store filled through its API, with real engine matches and logs.

Matches are played in-process by the engine with a seeded random legal policy (no bot processes), and each gets a
real event log written with :class:`arena.match.matchlog.MatchLog`, protocol lines included, so the site reads logs as it
would after ``arena run``. Every fifth match one seat forfeits with a crash and a stderr tail.

:func:`broken_links` checks a built site without a browser: every link and asset reference must be relative and
name a file of the site (and a #fragment an element of it, or a step of its replay).
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections.abc import Callable, Sequence
from html.parser import HTMLParser
from pathlib import Path

from arena.game.engine import Match
from arena.game.results import Fault, MatchResult, Reason, SeatResult
from arena.game.rules import Rules
from arena.match.matchlog import FORMAT, MatchLog
from arena.schedule import make_schedule
from arena.stats.ratings import RatingConfig, rate_all
from arena.stats.standings import rated_matches
from arena.store import Store

RULES = {"threshold": 30}
CRASH = Fault(Reason.CRASH_EXIT, "exited with status 1", 2, exit_status=1)
STDERR = "Traceback (most recent call last):\n  File \"bot.py\", line 1\nRuntimeError: <script>alert('stderr')</script>\n"


THINK_MS = (0, 3, 17, 40, 999, 1000, 1001, 1350, 2500)
"""The think times of :func:`fill_store`'s timed turns: around the move's own time of 1,000 ms, and beyond it."""


def write_turns(log: MatchLog, events: Sequence[dict[str, object]], players: int, rng: random.Random) -> None:
    """A turn sent and its reply received for every move of ``events``, as the referee logs them, with think times
    of :data:`THINK_MS`: what a move thinks beyond 1,000 ms comes out of its seat's bank of 10,000 ms, which the
    referee (its own clock) now and then counts a millisecond longer than the log's stamps say."""
    banks, now = [10_000] * players, 0
    for event in events:
        seat = event.get("seat")
        if event.get("type") not in ("play", "declare") or not isinstance(seat, int):
            continue
        budget = 1000 + banks[seat]
        think = min(budget, rng.choice(THINK_MS))
        log.write_sent(seat, now, b'{"type":"turn","time_left_ms":%d,"bank_ms":%d}\n' % (budget, banks[seat]))
        now += think
        log.write_received(seat, now, b'{"type":"declare"}')
        banks[seat] = max(0, banks[seat] - max(0, think + (rng.random() < 0.3) - 1000))


def fill_store(store: Store, name: str = "t", bots: Sequence[str] = ("alpha", "beta", "gamma"), players: int = 2,
               repeats: int = 2, seed: int = 5, logs: bool = True, limit: int | None = None,
               think: bool = False, fault_of: Callable[[str, Match], Fault] | None = None,
               finish: bool = True) -> int:
    """A tournament of real engine matches in ``store``, with a log each when ``logs`` (with every move's turn and
    reply, think times, when ``think``: :func:`write_turns`), finished and rated unless not ``finish`` (then as a
    live run leaves it: its ratings are worked out at its end); returns its id. Every fifth match seat 1 forfeits in
    round 2 with :data:`CRASH`, or with what ``fault_of`` makes of its bot's name and the match's state then."""
    # The deal seeds these tests were written against (a seeded stream's, as schedules drew them before they were
    # keyed: arena/schedule.py): the pages they check (a forfeit in round 2, ...) depend on the deals. The schedule
    # is the store's, so the site reads whatever seeds it holds.
    old = random.Random(f"{seed}/deals")
    schedule = make_schedule(len(bots), players, repeats, seed)
    deals = {group: old.getrandbits(63) for group in sorted({match.group for match in schedule})}
    schedule = [dataclasses.replace(match, seed=deals[match.group]) for match in schedule]
    if limit is not None:
        schedule = schedule[:limit]
    config = {"name": name, "bots": [f"bots/{b}" for b in bots], "players": players, "seed": seed,
              "repeats": repeats, "format": "round-robin", "rules": Rules.from_dict(RULES).to_dict(),
              "limits": {"move_ms": 1000, "bank_ms": 10000, "hello_ms": 10000},
              "sandbox_limits": {"memory_mb": 512}, "sandbox": "process", "rating": RatingConfig().__dict__}
    entrants = [{"name": b, "directory": f"/bots/{b}", "files_hash": f"{i:064x}", "command": ["python3", "bot.py"],
                 "language": "python", "description": f"the {b} bot"} for i, b in enumerate(bots)]
    tid = store.create_tournament(name, config, "0" * 64, entrants, schedule)
    log_dir = store.path.parent / "logs" / name
    for scheduled in schedule:
        rng = random.Random(scheduled.seed)
        rules = Rules.from_dict(RULES)
        match = Match(players, scheduled.seed, rules)
        faulty = scheduled.index % 5 == 4
        fault = CRASH
        while match.outcome is None:
            if faulty and match.round == 2 and match.in_play(1):
                fault = CRASH if fault_of is None else fault_of(bots[scheduled.bots[1]], match)
                match.forfeit(1, fault.kind.value)
                continue
            match.apply(rng.choice(list(match.legal_moves())))
        assert match.outcome is not None
        stats = match.seat_stats()
        log_path = log_dir / f"{scheduled.index:06d}.jsonl.gz"
        if logs:
            log = MatchLog(log_path)
            log.write({"t": "header", "format": FORMAT, "seed": scheduled.seed, "players": players,
                       "rules": rules.to_dict(), "limits": config["limits"], "sandbox": "process",
                       "sandbox_limits": config["sandbox_limits"],
                       "bots": [entrants[slot] for slot in scheduled.bots]})
            for seat in range(players):
                log.write_message("send", seat, 0, b'{"type":"hello","seat":%d}' % seat)
                log.write_message("recv", seat, 1, b'{"type":"ready"}\n')
            if think:
                write_turns(log, match.events, players, random.Random(scheduled.seed))
            for event in match.events:
                log.write({"t": "event", "event": event})
            if faulty:
                log.write({"t": "fault", "seat": 1, **fault.to_dict(), "stderr_tail": STDERR})
            log.write({"t": "result", "result": {"seed": scheduled.seed, "players": [
                {"seat": s, "place": match.outcome.places[s], "score": match.outcome.scores[s]}
                for s in range(players)]}})
            log.close()
        seats = tuple(
            SeatResult(seat=s, name=bots[slot], files_hash=entrants[slot]["files_hash"],
                       place=match.outcome.places[s], score=match.outcome.scores[s], stats=stats[s],
                       fault=fault if faulty and s == 1 else None, stderr_tail=STDERR if faulty and s == 1 else "",
                       bank_left_ms=10000)
            for s, slot in enumerate(scheduled.bots))
        store.record_match(tid, scheduled.index, MatchResult(
            scheduled.seed, rules, match.outcome.termination, match.round, sum(st.turns for st in stats), seats,
            0.01, log_path if logs else None), 1)
    if finish:
        _, history = rate_all([row["id"] for row in store.bots(tid)], rated_matches(store, tid), RatingConfig())
        store.finish(tid, history)
    return tid


def make_store(directory: Path, **options: object) -> Store:
    store = Store(directory / "arena.db")
    fill_store(store, **options)  # type: ignore[arg-type]
    return store


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"] or "")
        for key in ("href", "src"):
            if values.get(key) is not None and (tag != "link" or key == "href"):
                self.links.append(values[key] or "")


def broken_links(out: Path) -> list[str]:
    """Every link or script/stylesheet reference in the site under ``out`` that does not resolve, as
    ``page: link`` (a link must be relative, name an existing file and, with a #fragment, an element id there)."""
    parsed: dict[Path, _Links] = {}

    def parse(page: Path) -> _Links:
        if page not in parsed:
            parser = _Links()
            parser.feed(page.read_text(encoding="utf-8"))
            parsed[page] = parser
        return parsed[page]

    problems = []
    for page in sorted(out.rglob("*.html")):
        for link in parse(page).links:
            target, _, fragment = link.partition("#")
            target = target.partition("?")[0]  # a query is read by the page's script (a filter), not a file
            if "://" in link or link.startswith("/"):
                problems.append(f"{page.relative_to(out)}: {link} (not relative)")
                continue
            path = (page.parent / target).resolve() if target else page
            if not path.is_file() or out.resolve() not in path.parents:
                problems.append(f"{page.relative_to(out)}: {link} (no such file)")
            elif fragment.startswith("step="):
                # A replay step (#step=N, read by replay.js): the page must have a replay, N must count from 1.
                if "replay" not in parse(path).ids or not fragment[5:].isdigit() or int(fragment[5:]) < 1:
                    problems.append(f"{page.relative_to(out)}: {link} (no replay step there)")
            elif fragment and path.suffix == ".html" and fragment not in parse(path).ids:
                problems.append(f"{page.relative_to(out)}: {link} (no element with that id)")
    return problems


def as_before_addresses(out: Path, tslug: str, bot: str, bot_id: int) -> str:
    """Make the site in ``out`` look as a build before ``NAME@VERSION`` addresses left it: bot ``bot``'s pages under
    ``_bID-name`` (the old :func:`arena.site.urls.slug`), in its manifest as on disk; returns that old directory."""
    from arena.site.output import MANIFEST

    old = f"_b{bot_id}-" + re.sub(r"[^a-z0-9_-]+", "-", bot).strip("-")
    now, then = f"t/{tslug}/bots/{bot}/", f"t/{tslug}/bots/{old}/"
    (out / now).rename(out / then)
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["files"] = {(then + path[len(now):] if path.startswith(now) else path): entry
                         for path, entry in manifest["files"].items()}
    (out / MANIFEST).write_text(json.dumps(manifest))
    return then
