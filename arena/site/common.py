"""What several pages of the results site make alike from a snapshot: the rows of :mod:`arena.site.rows` (the
standings, a match's row in a listing, a fault's row), the breadcrumbs of a tournament, and a match's view as its log
decides it (:mod:`arena.match.matchview`, kept beside the log; the log itself is read only when the view is missing or
stale). Nothing here renders or writes: :mod:`arena.site.html` turns these into HTML."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.match.matchlog import LoadedLog, LogError, find_log, load, locate_log
from arena.match.matchview import MatchView, derive, plain_names, source_view
from arena.site.rows import FaultRow, MatchListRow, PlayerCell
from arena.site.snapshot import SMALL_FIELD, Snapshot, out_round, seated
from arena.site.urls import Crumb, match_href, tournament_href
from arena.store import MatchStamp, StoredMatch

FAULTS_SHOWN = 50
CHART_POINTS = 300
"""At most this many points per line of a rating chart: enough to see the shape, small enough to load fast."""
STANDINGS_PER_PAGE = 100
TOP_CHART_POINTS = 60
"""A big field's rating chart on the tournament page: at most this many points per line of its top's, so that the
chart (a point and its tooltip each) stays a few hundred kilobytes however long the tournament."""


def downsample(points: Sequence[Any], limit: int = CHART_POINTS) -> tuple[Any, ...]:
    """At most ``limit`` points, evenly spaced, always keeping the first and the last.

    >>> downsample(list(range(10)), 4)
    (0, 3, 6, 9)
    """
    if len(points) <= limit:
        return tuple(points)
    step = (len(points) - 1) / (limit - 1)
    return tuple(points[round(i * step)] for i in range(limit))



def match_list_row(snap: Snapshot, match: StoredMatch, for_bot: int | None = None) -> MatchListRow:
    """A match's row in a listing; on a bot's pages (``for_bot``) with that bot's place. Each match's row is made
    once per snapshot: every match is in the list of all matches and in the list of each of its bots."""
    row = snap.rows.get(match.idx)
    if row is None or row.id != match.id:
        row = snap.rows[match.idx] = _match_list_row(snap, match)
    if for_bot is None:
        return row
    place = None
    if match.result is not None and for_bot in match.bot_ids:
        place = match.result.players[match.bot_ids.index(for_bot)].place
    # Made field by field rather than by dataclasses.replace, several times slower: a row per match per seat.
    return MatchListRow(row.idx, row.id, row.href, row.status, row.rounds, row.turns, row.termination, row.players,
                        place)


def _match_list_row(snap: Snapshot, match: StoredMatch) -> MatchListRow:
    players = []
    for seat, bot_id, result in seated(match):
        name, href = snap.bot_link(bot_id)
        players.append(PlayerCell(seat, name, href, None if result is None else result.place,
                                  None if result is None else result.score, None if result is None else result.fault,
                                  out_round(match, result)))
    players.sort(key=lambda p: (p.place is None, p.place or 0, p.seat))
    return MatchListRow(match.idx, match.id, match_href(snap.slug, match.id), match.status,
                        None if match.result is None else match.result.rounds,
                        None if match.result is None else match.result.turns,
                        None if match.result is None else match.result.termination, tuple(players))


def fault_rows(snap: Snapshot, bot_id: int | None = None, limit: int | None = FAULTS_SHOWN,
               steps: bool = False) -> list[FaultRow]:
    """The latest ``limit`` faults (None: all) of the tournament (or of one bot), latest match first: only their
    matches are read (how many faults of each kind there are is in the standings); with ``steps``, their logs too,
    for the replay step of each forfeit (each log once a snapshot: :attr:`arena.site.snapshot.BuildCache.forfeits`),
    so that every table of faults links each to its step."""
    positions: list[int] = []
    for position, seat_bot in reversed(snap.faulted):
        if bot_id in (None, seat_bot) and (not positions or positions[-1] != position):
            positions.append(position)
            if len(positions) == limit:
                break  # a match with a fault gives at least one row
    found = []
    for match in snap.matches.fetch(positions):
        if steps and match.id not in snap.cache.forfeits:
            view = match_view(snap, match)[0]
            snap.cache.forfeits[match.id] = {} if view is None else view.forfeits
        where = snap.cache.forfeits[match.id] if steps else {}
        for seat, seat_bot, result in seated(match):
            if result is not None and result.fault is not None and bot_id in (None, seat_bot):
                found.append(FaultRow(match.idx, match_href(snap.slug, match.id), snap.bot_link(seat_bot)[1], result,
                                      match.id, where.get(seat)))
    return found[:limit]


def standing_of(snap: Snapshot, bot_id: int) -> int | None:
    """Where the bot is in :attr:`Snapshot.standings` (and in :attr:`Snapshot.standing_rows`), None if it is not:
    found in a map made once (:attr:`Snapshot.standing_index`), since each of a big field's thousand bot pages
    asks."""
    return snap.standing_index.get(bot_id)


def fault_counts(snap: Snapshot, bot_id: int | None = None) -> Counter[str]:
    """How many faults of each kind the tournament's finished matches had (or one bot's)."""
    counts: Counter[str] = Counter()
    if bot_id is None:
        for line in snap.standings:
            counts.update(line.faults)
    elif (i := standing_of(snap, bot_id)) is not None:
        counts.update(snap.standings[i].faults)
    return counts


def tournament_crumbs(snap: Snapshot, *more: Crumb) -> tuple[Crumb, ...]:
    return (Crumb("Home", "index.html"), Crumb(snap.name, tournament_href(snap.slug)), *more)


def big_field(snap: Snapshot) -> bool:
    """Whether the field is too big to show whole on one page (:data:`SMALL_FIELD`)."""
    return len(snap.bots) > SMALL_FIELD


def without_local_paths(value: Any) -> Any:
    """``value`` with every absolute path (of the organiser's machine, as a manifest's ``directory`` holds) cut to its
    last part: a public page has no business showing how someone's disk is laid out.

    >>> without_local_paths({"directory": "/home/ann/bots/greedy", "command": ["python3", "bot.py"], "n": 1})
    {'directory': 'greedy', 'command': ['python3', 'bot.py'], 'n': 1}
    >>> without_local_paths(["C:\\\\bots\\\\x", "~/bots/y", "relative/z"])
    ['x', 'y', 'relative/z']
    """
    if isinstance(value, str):
        if value.startswith(("/", "~")) or re.match(r"[A-Za-z]:[\\/]", value):
            return re.split(r"[\\/]", value.rstrip("/\\"))[-1] or value
        return value
    if isinstance(value, dict):
        return {key: without_local_paths(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_local_paths(item) for item in value]
    return value


# -- matches ------------------------------------------------------------------------------------------------------------


def match_log(snap: Snapshot, match: StoredMatch) -> tuple[LoadedLog | None, Path | None]:
    """The match's log, or None when it is missing or unreadable (the page then says which) or its group is sealed
    (it holds the deal the group's other rotations play); and the path of a log that is there but unreadable
    (corrupt), which the build reports."""
    if match.sealed:
        return None, None
    path = find_log(match.log_path, snap.store_dir, snap.name, match.idx)
    try:
        return (None, None) if path is None else (load(path), None)
    except LogError:
        return None, path


def match_view(snap: Snapshot, match: StoredMatch | MatchStamp) -> tuple[MatchView | None, Path | None]:
    """What the match's page takes from its log (:func:`arena.match.matchview.source_view`: the view kept beside the
    log, or the log read), None when the log is missing or unreadable or the match's group is sealed (its replay
    would give the deal the group's other rotations play: docs/SECURITY.md); and the path of a log that is there
    but unreadable (corrupt), which the build reports."""
    if match.sealed:
        return None, None
    found = locate_log(match.log_path, snap.store_dir, snap.name, match.idx)
    if found is None:
        return None, None
    try:
        return source_view(found[0], found[1], len(match.bot_ids)), None
    except LogError:
        return None, Path(found[0])


def view_for(source: LoadedLog | MatchView | None, names: Sequence[str]) -> MatchView | None:
    """A view that serves a page with ``names`` in its seats: ``source`` itself, or made from its log (a log read,
    or a view of plain names for names that are not: read from the log again; None if it is no longer there)."""
    if isinstance(source, MatchView):
        if source.fits(names):
            return source
        try:
            source = load(Path(source.log))
        except LogError:
            return None
    if source is None:
        return None
    return derive(source, len(names), () if plain_names(names) else names)
