"""``arena match A B ... --games N``: a quick series without a config or a store, cutechess-style.

The N matches are the first N of arena's own schedule for these bots at one table (arena/schedule.py): every seat
rotation of a deal, deal after deal (duplicate deals), so each bot gets each seat's cards. They are played on the
local pool of arena/run/players.py, with no store, and summed per bot: wins (first alone), ties (first shared),
mean place and mean score, each with a 95% interval over the deals (a deal's rotations share their luck, so the
deal, not the match, is the independent unit).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from arena.bots.manifest import BotSpec
from arena.game.results import MatchResult
from arena.game.rules import Rules
from arena.match.protocol import Limits
from arena.run.plan import JobSettings, jobs
from arena.run.players import LocalPool, stop_signals_held
from arena.sandbox import SandboxLimits
from arena.schedule import ScheduledMatch, make_schedule
from arena.stats.sprt import Z95


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float]:
        return {"mean": round(self.mean, 3), "low": round(self.low, 3), "high": round(self.high, 3)}


@dataclass(frozen=True)
class BotTotal:
    name: str
    matches: int
    wins: int
    """First place alone."""
    ties: int
    """First place shared."""
    place: Interval
    score: Interval

    def to_dict(self) -> dict[str, object]:
        return {"bot": self.name, "matches": self.matches, "wins": self.wins, "ties": self.ties,
                "place": self.place.to_dict(), "score": self.score.to_dict()}


def series_schedule(bots: int, games: int, seed: int) -> list[ScheduledMatch]:
    """The first ``games`` matches of the one-table schedule: whole deals of ``bots`` rotations, then part of one
    if ``games`` is not a multiple (seats are balanced only over whole deals)."""
    return make_schedule(bots, bots, math.ceil(games / bots), seed)[:games]


@dataclass(frozen=True)
class Series:
    """What a series played: each finished match with its result (None: failed for infrastructure reasons), in
    schedule order, and whether a stop (Ctrl-C, SIGTERM) cut it short."""

    played: tuple[tuple[ScheduledMatch, MatchResult | None], ...]
    interrupted: bool


def play_series(bots: Sequence[BotSpec], games: int, seed: int, rules: Rules, limits: Limits, sandbox: str,
                workers: int, log_dir: Path, on_result: Callable[[int], None] | None = None) -> Series:
    """Play the series; a stop ends it with the matches finished so far (those in flight are discarded)."""
    schedule = series_schedule(len(bots), games, seed)
    todo = jobs(schedule, bots, JobSettings(rules, limits, SandboxLimits(), sandbox, 2), log_dir)
    results: dict[int, MatchResult | None] = {}
    interrupted = False
    with closing(LocalPool(workers)) as pool:
        games_ = pool.play(todo, tick=lambda: None)
        try:
            for done in games_:
                results[done.index] = done.result
                if on_result is not None:
                    on_result(len(results))
        except KeyboardInterrupt:
            interrupted = True
        finally:
            with stop_signals_held():  # a second Ctrl-C waits for the bots in flight to be killed
                games_.close()
    return Series(tuple((match, results[match.index]) for match in schedule if match.index in results), interrupted)


def totals(names: Sequence[str], played: Sequence[tuple[ScheduledMatch, MatchResult | None]]) -> list[BotTotal]:
    """Per bot, in the order of ``names``: the series' totals, failed matches left out."""
    places: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    scores: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    wins = [0] * len(names)
    ties = [0] * len(names)
    for match, result in played:
        if result is None:
            continue
        firsts = sum(1 for player in result.players if player.place == 1)
        for slot, player in zip(match.bots, result.players):
            places[slot][match.group].append(player.place)
            scores[slot][match.group].append(player.score)
            if player.place == 1:
                wins[slot] += firsts == 1
                ties[slot] += firsts > 1
    return [BotTotal(name, sum(map(len, places[slot].values())), wins[slot], ties[slot],
                     _interval(places[slot]), _interval(scores[slot])) for slot, name in enumerate(names)]


def _interval(by_deal: dict[int, list[int]]) -> Interval:
    """The mean per match and a normal 95% interval from the spread of the per-deal means."""
    values = [value for deal in by_deal.values() for value in deal]
    if not values:
        return Interval(math.nan, math.nan, math.nan)
    mean = sum(values) / len(values)
    means = [sum(deal) / len(deal) for deal in by_deal.values()]
    if len(means) < 2:
        return Interval(mean, -math.inf, math.inf)
    centre = sum(means) / len(means)
    half = Z95 * math.sqrt(sum((m - centre) ** 2 for m in means) / (len(means) - 1) / len(means))
    return Interval(mean, mean - half, mean + half)


def table(totals_: Sequence[BotTotal], games: int, failed: int) -> list[str]:
    """The cutechess-style summary lines."""
    names = " vs ".join(total.name for total in totals_)
    lines = [f"Score of {names}: {games - failed} matches" + (f" ({failed} failed)" if failed else "")]
    width = max(len(total.name) for total in totals_)
    lines.append(f"{'bot':<{width}}  {'matches':>7} {'wins':>5} {'ties':>5}  {'place':>5} {'95%':<13}  "
                 f"{'score':>6} 95%")
    for total in totals_:
        lines.append(f"{total.name:<{width}}  {total.matches:>7} {total.wins:>5} {total.ties:>5}  "
                     f"{total.place.mean:>5.2f} [{total.place.low:.2f}, {total.place.high:.2f}]  "
                     f"{total.score.mean:>6.1f} [{total.score.low:.1f}, {total.score.high:.1f}]")
    return lines
