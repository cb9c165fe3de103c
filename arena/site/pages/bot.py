"""A bot's page: its standing, rating line, seats, opponents met, think time and its matches' listings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from arena.match.thinktime import Mark, Tally
from arena.site.common import (
    big_field,
    downsample,
    fault_counts,
    fault_rows,
    match_list_row,
    standing_of,
    tournament_crumbs,
    without_local_paths,
)
from arena.site.pages.faults import faulted_by
from arena.site.pages.listings import Listing, MatchListPage, filter_names, filtered_href
from arena.site.pages.pair import pair_of
from arena.site.rows import FaultRow, MatchListRow, Series, StandingRow
from arena.site.snapshot import Live, Snapshot
from arena.site.urls import (
    MATCHES_PER_PAGE,
    Crumb,
    bot_href,
    faults_href,
    match_href,
    match_index_href,
    page_spans,
    pager,
    standings_index_href,
    step_href,
)


@dataclass(frozen=True)
class SeatSummary:
    """How a bot did from one seat."""

    seat: int
    matches: int
    wins: int
    mean_place: float | None


@dataclass(frozen=True)
class Opponent:
    bot: str
    href: str
    above: int
    """Matches where this page's bot placed above the opponent."""
    below: int
    shared: int
    matches_href: str = ""
    """The list of all matches filtered to those the two shared (``?bot=...&vs=...``, read by search.js)."""
    pair_href: str | None = None
    """The page of the two side by side (arena/site/pages/pair.py), when they have one."""


@dataclass(frozen=True)
class BotThink:
    """A bot's think times over the tournament's finished matches (:mod:`arena.match.thinktime`), with links to the
    replay steps of its move closest to the limit and of the move that left its bank lowest."""

    moves: int
    unanswered: int
    mean_ms: float | None
    p95_ms: int | None
    max_ms: int | None
    closest: Mark | None
    closest_href: str | None
    least_bank: Mark | None
    least_bank_href: str | None


def mark_href(tslug: str, mark: Mark | None) -> str | None:
    """The replay step of a move: its match page at ``#step=N`` (:func:`step_href`)."""
    if mark is None or mark.match_id is None:
        return None
    return step_href(match_href(tslug, mark.match_id), mark.step)


def bot_think(snap: Snapshot, tally: Tally | None) -> BotThink | None:
    if tally is None or not tally.moves and not tally.unanswered:
        return None
    return BotThink(tally.moves, tally.unanswered, tally.mean_ms(), tally.percentile_ms(0.95), tally.max_ms(),
                    tally.closest, mark_href(snap.slug, tally.closest), tally.least_bank,
                    mark_href(snap.slug, tally.least_bank))


@dataclass(frozen=True)
class BotPage:
    name: str
    slug: str
    rank: int
    standing: StandingRow
    files_hash: str
    manifest: dict[str, Any]
    history: list[Series]
    seats: list[SeatSummary]
    opponents: list[Opponent]
    matches: MatchListPage | None
    """The first page of its matches; None in the page's key (:func:`arena.site.build.tournament_pages` keys it
    on that listing's inputs, not on the listing made)."""
    faults: list[FaultRow]
    fault_count: int
    crumbs: tuple[Crumb, ...]
    all_faults: str | None = None
    """Its page of every fault (:func:`faults_page`), when it has faults."""
    live: Live | None = None
    """Without the count (:meth:`Live.uncounted`): a bot's page then changes only when its own matches do."""
    think: BotThink | None = None
    """Its think times, from the logs (None when no log of its matches was read)."""
    opponents_met: bool = False
    """Whether ``opponents`` holds only the bots it met (a big field), not every other bot."""
    ranks_href: str | None = None
    """A big field's standings index (:func:`standings_index`), where the page's script finds its rank and rank
    interval: those move with every match of any bot, and a page that held them would be written again after
    every league batch, a thousand pages for a few dozen matches. Then ``rank`` is 0 and ``standing`` holds only
    what its own matches make (:func:`own_standing`), and the page without JavaScript links to the standings."""


def played_by(snap: Snapshot, bot_id: int) -> list[int]:
    """The positions in ``snap.matches`` of the bot's matches, all bots' found in one pass (a pass per bot was a
    thousand passes over a hundred thousand matches in a big league)."""
    return snap.played.get(bot_id, [])


def bot_listings(snap: Snapshot, bot_id: int, per_page: int = MATCHES_PER_PAGE) -> list[Listing]:
    """The pages of the bot's matches (the first is on the bot's own page), each row with the bot's place."""
    bot = snap.bot_by_id[bot_id]
    played = played_by(snap, bot_id)
    marks = snap.stamp_keys
    pages = [[played[i] for i in span] for span in page_spans([snap.stamps[p].group for p in played], per_page)]
    count = len(pages)
    hrefs = tuple(bot_href(snap.slug, bot.slug, n) for n in range(1, count + 1))
    names = filter_names(snap)

    def make(n: int) -> MatchListPage:
        crumbs = tournament_crumbs(snap, Crumb(bot.name, hrefs[0] if n > 1 else None),
                                   *((Crumb(f"matches page {n}", None),) if n > 1 else ()))
        return MatchListPage(
            f"Matches of {bot.name}" + (f", page {n}" if n > 1 else ""), bot_rows(snap, pages[n - 1], bot_id),
            pager(n, hrefs), len(played) if n == 1 else None, crumbs, hrefs[n - 1], for_bot=bot.name, bots=names,
            index_href=match_index_href(snap.slug))

    return [Listing(hrefs[n - 1], (snap.context, bot_id, pager(n, hrefs), len(played) if n == 1 else None,
                                   [marks[i] for i in pages[n - 1]]), partial(make, n),
                    pages[n - 1][-1] if pages[n - 1] else -1)
            for n in range(1, count + 1)]


def bot_rows(snap: Snapshot, positions: Sequence[int], bot_id: int) -> list[MatchListRow]:
    """The rows of the matches at ``positions`` on a page of the bot's matches: from
    :attr:`arena.site.snapshot.BuildCache.row_html` where it has them, the others from their matches, read (those no
    longer in the store are left out)."""
    given = {p: row for p in positions if (row := snap.cache.row_html.get(p)) and row.match_id == snap.stamps[p].id}
    missing = [p for p in positions if p not in given]
    read = {match.id: match for match in snap.matches.fetch(missing)} if missing else {}
    rows = []
    for position in positions:
        stamp = snap.stamps[position]
        if (row := given.get(position)) is not None:
            rows.append(MatchListRow(stamp.idx, stamp.id, "", "", None, None, None, (),
                                     row.places[stamp.bot_ids.index(bot_id)], (row.head, row.tail)))
        elif stamp.id in read:
            rows.append(match_list_row(snap, read[stamp.id], bot_id))
    return rows



def own_standing(row: StandingRow) -> StandingRow:
    """A bot's line of the standings without what moves when other bots play (its rank, shared rank, interval and
    fitted strength): what only its own matches change (its ratings are TrueSkill's, updated by its matches only)."""
    return replace(row, rank=0, shared_rank="", p_above_next=None, strength=None, rank95=None,
                   p_text="-")


def met_by(snap: Snapshot, bot_id: int) -> list[tuple[int, int, int]]:
    """Every (opponent, matches placed above it, matches shared) of ``bot_id`` that it met, all bots' found in one
    pass over the head-to-head counts (a pass over the field per bot was a million look-ups in a big league)."""
    return snap.met.get(bot_id, [])


def bot_page(snap: Snapshot, bot_id: int, matches: MatchListPage | None, think: Tally | None = None) -> BotPage:
    """The bot's page, with ``matches`` (the first page of its :func:`bot_listings`) and its ``think`` times. In a
    big field it shows only what its own matches make (:attr:`BotPage.ranks_href`), and lists the opponents it met,
    most matches shared first (the field's order would change with every match any of them plays)."""
    bot = snap.bot_by_id[bot_id]
    place = standing_of(snap, bot_id)
    if place is None:
        raise KeyError(f"bot {bot.name!r} is not in the standings of {snap.name!r}")
    standing = snap.standing_rows[place]
    points = snap.history.get(bot_id, [])
    series = Series(bot.name, downsample([(idx, r.mu) for idx, r in points]),
                    downsample([(idx, r.mu - 3 * r.sigma, r.mu + 3 * r.sigma) for idx, r in points]))
    players = snap.seats
    seats = []
    for seat in range(players):
        played, wins, place_sum = snap.seat_totals.get((bot_id, seat), (0, 0, 0))
        seats.append(SeatSummary(seat, played, wins, place_sum / played if played else None))
    big = big_field(snap)
    if big:
        met = [(snap.bot_by_id[other].name, other, above, shared) for other, above, shared in met_by(snap, bot_id)]
        met.sort(key=lambda row: (-row[3], row[0], row[1]))
        pairs = [(other, above, shared) for _, other, above, shared in met]
    else:
        pairs = [(other.bot_id, *snap.head_to_head.get((bot_id, other.bot_id), (0, 0)))
                 for other in snap.standings if other.bot_id != bot_id]
    opponents = []
    for other_id, above, shared in pairs:
        below, _ = snap.head_to_head.get((other_id, bot_id), (0, 0))
        name, href = snap.bot_link(other_id)
        opponents.append(Opponent(name, href, above, below, shared, filtered_href(snap, bot.name, name),
                                  pair_of(snap, bot_id, other_id)))
    faults = fault_rows(snap, bot_id, steps=True)
    fault_count = sum(fault_counts(snap, bot_id).values())
    return BotPage(bot.name, bot.slug, 0 if big else standing.rank, own_standing(standing) if big else standing,
                   bot.files_hash, without_local_paths(bot.manifest), [series], seats, opponents, matches, faults,
                   fault_count, tournament_crumbs(snap, Crumb(bot.name, None)),
                   faults_href(snap.slug, bot.slug) if faulted_by(snap, bot_id) else None,
                   None if snap.live is None else snap.live.uncounted(),
                   bot_think(snap, think), big, standings_index_href(snap.slug) if big else None)


def bot_pages(snap: Snapshot, bot_id: int, per_page: int = MATCHES_PER_PAGE) -> tuple[BotPage, list[MatchListPage]]:
    """The bot's page (with the first page of its matches) and the further pages of its matches."""
    listings = [listing.make() for listing in bot_listings(snap, bot_id, per_page)]
    return bot_page(snap, bot_id, listings[0]), listings[1:]
