"""A tournament's page and its standings pages: the standings, the ratings chart, the head-to-head of a small field, the
faults; a big field's standings on pages of :data:`arena.site.common.STANDINGS_PER_PAGE`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arena.site.common import (
    CHART_POINTS,
    STANDINGS_PER_PAGE,
    TOP_CHART_POINTS,
    big_field,
    downsample,
    fault_counts,
    fault_rows,
    tournament_crumbs,
    without_local_paths,
)
from arena.site.downloads import DOWNLOADS
from arena.site.pages.pair import pair_of
from arena.site.rows import FaultRow, Series, StandingRow
from arena.site.snapshot import SMALL_FIELD, Live, Snapshot
from arena.site.urls import (
    Crumb,
    Pager,
    faults_href,
    matches_href,
    pager,
    results_href,
    standings_href,
    standings_index_href,
)


@dataclass(frozen=True)
class Duel:
    """How one bot did against another over the matches they shared: placed above, below, or level (a tie)."""

    above: int
    below: int
    shared: int

    @property
    def ties(self) -> int:
        return self.shared - self.above - self.below

    @property
    def score(self) -> float:
        """The share of the matches it won against the other, a tie counting one half (0.5: even)."""
        return (self.above + self.ties / 2) / self.shared if self.shared else 0.5


@dataclass(frozen=True)
class HeadToHead:
    """cells[i][j]: how bot i did against bot j; None on the diagonal or if they never met."""

    bots: list[tuple[str, str]]
    cells: list[list[Duel | None]]
    pairs: list[list[str | None]] | None = None
    """pairs[i][j]: the page of bots i and j side by side (arena/site/pages/pair.py), None if they have none."""


def duel(snap: Snapshot, a: int, b: int) -> Duel | None:
    """Bot ``a`` against bot ``b``, None if they never shared a match."""
    above, shared = snap.head_to_head.get((a, b), (0, 0))
    below, _ = snap.head_to_head.get((b, a), (0, 0))
    return Duel(above, below, shared) if shared else None


@dataclass(frozen=True)
class Band:
    """Bots the data cannot order: a run of the standings whose 95% rank intervals (arena/stats/display.py's) all
    hold ranks ``low`` to ``high``, so that each of them could be at any of those ranks and none is shown apart
    from another of the band."""

    low: int
    high: int
    bots: tuple[tuple[str, str], ...]
    """(name, href) in the standings' order."""


def bands(snap: Snapshot) -> tuple[tuple[Band, ...], tuple[tuple[str, str], ...]]:
    """The ranked bots cut, in the standings' order, into :class:`Band` s: a band takes the next bot while its
    interval meets the ranks every bot of the band could hold, else the bot starts the next band. Not bands of
    intervals that meet one another in a chain: with few deals a chain runs through the whole field (60 bots of
    12 deals each made one band of 60), which says nothing. Also the bots not yet ranked (an interval of the whole
    field), in the standings' order."""
    found: list[Band] = []
    unranked: list[tuple[str, str]] = []
    for line in snap.shown.lines:
        if not line.ranked or line.interval is None:
            if line.bot in snap.bot_by_id:
                unranked.append(snap.bot_link(line.bot))
            continue
        low, high = line.interval
        if found and max(found[-1].low, low) <= min(found[-1].high, high):
            last = found[-1]
            found[-1] = Band(max(last.low, low), min(last.high, high), (*last.bots, snap.bot_link(line.bot)))
        else:
            found.append(Band(low, high, (snap.bot_link(line.bot),)))
    return tuple(found), tuple(unranked)


@dataclass(frozen=True)
class TournamentPage:
    name: str
    slug: str
    created_at: str
    finished_at: str | None
    standings: list[StandingRow]
    scale: tuple[float, float]
    """The rating range every uncertainty bar is drawn on: the lowest mu - 3 sigma to the highest mu + 3 sigma."""
    head_to_head: HeadToHead
    history: list[Series]
    settings: dict[str, Any]
    """The tournament's settings other than rules and limits (players, repeats, seed, rating, ...)."""
    rules: dict[str, Any]
    limits: dict[str, Any]
    fault_totals: dict[str, int]
    faults: list[FaultRow]
    """The latest faults (at most FAULTS_SHOWN)."""
    fault_count: int
    matches_total: int
    matches_done: int
    matches_failed: int
    matches_href: str
    crumbs: tuple[Crumb, ...]
    stop_rule: bool = False
    """Whether the shared ranks are the stop rule's verdicts (an open-ended tournament) rather than 95% P(above)."""
    fault_pages: tuple[tuple[str, str, int], ...] = ()
    """(bot, its page of every fault, how many) for each bot with faults, in the standings' order."""
    live: Live | None = None
    downloads: tuple[tuple[str, str], ...] = ()
    """The results to download: (file name, site-relative href)."""
    field_size: int = 0
    """How many bots the standings hold (``standings`` holds the first page of them)."""
    standings_pager: Pager | None = None
    """A field bigger than :data:`~arena.site.snapshot.SMALL_FIELD`: the pages of its standings, this page the first."""
    standings_index: str | None = None
    """A field bigger than :data:`~arena.site.snapshot.SMALL_FIELD`: what its standings' filter searches (:func:`standings_index`)."""
    top: int | None = None
    """A field bigger than :data:`~arena.site.snapshot.SMALL_FIELD`: the head-to-head and the rating chart show only its top ``top``."""
    note: str | None = None
    """Why bots are not ranked yet ("3 deals: too few to rank ..."), if some are not (arena/stats/display.py)."""
    bands: tuple[Band, ...] | None = None
    """A field bigger than :data:`~arena.site.snapshot.SMALL_FIELD`: its bots in bands the data cannot order (:func:`bands`)."""
    unranked: tuple[tuple[str, str], ...] = ()
    """With ``bands``: the bots not yet ranked."""


@dataclass(frozen=True)
class StandingsPage:
    """A further page of a big field's standings (the first is on the tournament's page)."""

    name: str
    slug: str
    standings: list[StandingRow]
    scale: tuple[float, float]
    field_size: int
    standings_pager: Pager
    standings_index: str
    crumbs: tuple[Crumb, ...]
    path: str
    stop_rule: bool = False
    live: Live | None = None
    note: str | None = None
    """As :attr:`TournamentPage.note`."""


def rating_scale(rows: Sequence[StandingRow]) -> tuple[float, float]:
    if not rows:
        return (0.0, 1.0)
    low = min(r.mu - 3 * r.sigma for r in rows)
    high = max(r.mu + 3 * r.sigma for r in rows)
    return (low, high) if high > low else (low - 1, high + 1)


def head_to_head(snap: Snapshot, order: Sequence[int]) -> HeadToHead:
    bots = [snap.bot_link(bot_id) for bot_id in order]
    cells = [[None if a == b else duel(snap, a, b) for b in order] for a in order]
    return HeadToHead(bots, cells, [[pair_of(snap, a, b) for b in order] for a in order])


def standings_pages(snap: Snapshot) -> list[list[StandingRow]]:
    """The standings cut into pages of :data:`STANDINGS_PER_PAGE` (one page, all of them, for a small field)."""
    rows = snap.standing_rows
    if not big_field(snap):
        return [rows]
    return [rows[start:start + STANDINGS_PER_PAGE] for start in range(0, len(rows), STANDINGS_PER_PAGE)] or [[]]


def standings_pager(snap: Snapshot, page: int) -> Pager:
    count = len(standings_pages(snap))
    return pager(page, [standings_href(snap.slug, n) for n in range(1, count + 1)])


def standings_page(snap: Snapshot, page: int) -> StandingsPage:
    """Page ``page`` (from 2) of a big field's standings."""
    rows = standings_pages(snap)[page - 1]
    return StandingsPage(snap.name, snap.slug, rows, rating_scale(snap.standing_rows), len(snap.standings),
                         standings_pager(snap, page), standings_index_href(snap.slug),
                         tournament_crumbs(snap, Crumb(f"standings page {page}", None)),
                         standings_href(snap.slug, page), bool(snap.config.get("stop")),
                         None if snap.live is None else snap.live.uncounted(), snap.shown.note)


def standings_index(snap: Snapshot) -> dict[str, Any]:
    """Every bot of the standings in their order as the filter of a big field's standings searches them: its
    shown rank, name and page slug (the standings page it is on follows from its position), and its 95% rank
    interval (best, worst; nulls without one), which its own page shows from here (:attr:`BotPage.ranks_href`)."""
    rows = snap.standing_rows
    return {"per_page": STANDINGS_PER_PAGE,
            "bots": [[row.shared_rank, row.bot, snap.bot_by_id[line.bot_id].slug, *(row.rank95 or (None, None))]
                     for row, line in zip(rows, snap.standings)]}


def tournament_page(snap: Snapshot) -> TournamentPage:
    rows = snap.standing_rows
    order = [line.bot_id for line in snap.standings]
    big = big_field(snap)
    top = order[:SMALL_FIELD] if big else order
    points = TOP_CHART_POINTS if big else CHART_POINTS
    history = [Series(snap.bot_by_id[bot_id].name,
                      downsample([(idx, r.conservative) for idx, r in snap.history.get(bot_id, [])], points))
               for bot_id in top]
    config = snap.config
    limits = {**config.get("limits", {}), **config.get("sandbox_limits", {})}
    settings = {key: value for key, value in config.items()
                if key not in ("rules", "limits", "sandbox_limits", "bots", "name")}
    faults = fault_rows(snap, steps=True)
    counts = fault_counts(snap)
    banded, unranked = bands(snap) if big else (None, ())
    statuses = Counter(m.status for m in snap.stamps)
    return TournamentPage(
        name=snap.name, slug=snap.slug, created_at=snap.created_at, finished_at=snap.finished_at,
        standings=standings_pages(snap)[0], scale=rating_scale(rows), head_to_head=head_to_head(snap, top),
        history=history,
        settings=without_local_paths(settings), rules=dict(config.get("rules", {})), limits=limits,
        fault_totals=dict(sorted(counts.items())), faults=faults, fault_count=sum(counts.values()),
        matches_total=len(snap.matches), matches_done=statuses["done"],
        matches_failed=statuses["failed"], matches_href=matches_href(snap.slug),
        crumbs=(Crumb("Home", "index.html"), Crumb(snap.name, None)), stop_rule=bool(config.get("stop")),
        fault_pages=fault_pages(snap, top), live=snap.live,
        downloads=tuple((kind, results_href(snap.slug, kind)) for kind in DOWNLOADS), field_size=len(rows),
        standings_pager=standings_pager(snap, 1) if big else None,
        standings_index=standings_index_href(snap.slug) if big else None, top=len(top) if big else None,
        note=snap.shown.note, bands=banded, unranked=unranked)


def fault_pages(snap: Snapshot, order: Sequence[int]) -> tuple[tuple[str, str, int], ...]:
    """Each bot of ``order`` with faults: its name, its page of every fault and how many."""
    counts = Counter(bot for _, bot in snap.faulted)
    return tuple((snap.bot_by_id[bot].name, faults_href(snap.slug, snap.bot_by_id[bot].slug), counts[bot])
                 for bot in order if counts[bot])
