"""The lists of a tournament's matches (by page, grouped by deal) and the match index the lists' filter reads."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any
from urllib.parse import quote_plus

from arena.game.rules import Rules
from arena.site.common import big_field, match_list_row, tournament_crumbs
from arena.site.rows import MatchListRow
from arena.site.snapshot import Snapshot, seated
from arena.site.urls import MATCHES_PER_PAGE, Crumb, Pager, match_index_href, matches_href, page_spans, pager
from arena.store import MatchStamp


@dataclass(frozen=True)
class DealSummary:
    """One bot over the matches of a deal (all its seat rotations): how it placed on average."""

    bot: str
    href: str
    matches: int
    mean_place: float


@dataclass(frozen=True)
class DealSection:
    """A run of a page's matches from one group: with duplicate deals, every rotation of one deal, the format's
    fairness feature (each bot gets each seat on the same cards), so they are read together."""

    group: int | None
    seed: int | None
    """The deal's seed when every match of the group shares it (duplicate deals) and the group is over, else
    None."""
    rows: list[MatchListRow]
    summary: list[DealSummary]
    """Every bot of the group, best mean place first, over all the group's finished matches (on any page)."""
    size: int
    """Matches in the whole group."""
    sealed: bool = False
    """The group can still be played: its seed is not shown yet (:meth:`arena.store.Store.sealed_groups`)."""


def group_members(snap: Snapshot) -> dict[int, list[int]]:
    """The positions in ``snap.matches`` of each group's matches."""
    members: dict[int, list[int]] = defaultdict(list)
    for position, match in enumerate(snap.stamps):
        members[match.group].append(position)
    return members


def deal_sections(snap: Snapshot, rows: Sequence[MatchListRow],
                  members: dict[int, list[int]] | None = None) -> list[DealSection]:
    """``rows`` split into runs of one group each, with each group's summary (``members``: what
    :func:`group_members` gives, made once for all the pages of a listing)."""
    members = group_members(snap) if members is None else members
    sections: list[DealSection] = []
    for row in rows:
        group = snap.groups.get(row.idx)
        if sections and sections[-1].group == group and group is not None:
            sections[-1].rows.append(row)
            continue
        matches = snap.matches.fetch(members.get(group, [])) if group is not None else []
        places: dict[int, list[int]] = defaultdict(list)
        for match in matches:
            for _, bot_id, result in seated(match):
                if result is not None:
                    places[bot_id].append(result.place)
        summary = sorted((DealSummary(*snap.bot_link(bot_id), len(got), sum(got) / len(got))
                          for bot_id, got in places.items()), key=lambda d: (d.mean_place, d.bot))
        seeds = {match.seed for match in matches}
        sealed = any(match.sealed for match in matches)
        shared = len(seeds) == 1 and len(matches) > 1
        sections.append(DealSection(group, seeds.pop() if shared and not sealed else None, [row], summary,
                                    len(matches), sealed and shared))
    return sections


@dataclass(frozen=True)
class MatchListPage:
    title: str
    rows: list[MatchListRow]
    pager: Pager
    total: int | None
    """How many matches the listing has: on its first page only (the others stay the same as matches are added)."""
    crumbs: tuple[Crumb, ...]
    path: str
    for_bot: str | None = None
    """The bot whose matches these are (each row then shows its place), or None for all matches."""
    sections: list[DealSection] = field(default_factory=list)
    """All matches: the rows grouped by deal. Empty on a bot's pages (its rows stand alone)."""
    bots: tuple[str, ...] = ()
    """The tournament's bots (to filter the rows by)."""
    index_href: str = ""
    """The tournament's match index (:func:`match_index`), which the filter searches: every match, not this page's."""


@dataclass(frozen=True)
class Listing:
    """A page of a match listing before it is made: ``inputs`` is everything the page is made from, in a form cheap
    to make (the stamps of its matches and of every match of its deals, its pager, its title's names), so that a
    rebuild can tell the page unchanged without making it: a big tournament's listings are hundreds of pages of
    fifty rows, and adding matches changes only the last ones."""

    path: str
    inputs: tuple[Any, ...]
    make: Callable[[], MatchListPage]
    last: int = -1
    """The position of its last match (a listing is in schedule order), -1 for none: a build makes a page of a
    bot's matches once every match on it is made (:class:`arena.site.build.LaterListings`)."""


def filter_names(snap: Snapshot) -> tuple[str, ...]:
    """The bots a listing's filter offers on the page itself: none for a big field, whose names the filter takes
    from the match index it loads anyway (a thousand names twice on each of thousands of listing pages)."""
    return () if big_field(snap) else tuple(bot.name for bot in snap.bots)


def match_listings(snap: Snapshot, per_page: int = MATCHES_PER_PAGE) -> list[Listing]:
    """The pages of the tournament's matches in schedule order, up to ``per_page`` a page, broken between deals
    (:func:`page_spans`)."""
    spans = listing_spans(snap, per_page)
    count = len(spans)
    hrefs = tuple(matches_href(snap.slug, n) for n in range(1, count + 1))
    names = filter_names(snap)
    marks = snap.stamp_keys
    members = group_members(snap)

    def make(n: int) -> MatchListPage:
        rows = [match_list_row(snap, m) for m in snap.matches.fetch(spans[n - 1])]
        return MatchListPage(
            f"All matches of {snap.name}" + (f", page {n}" if n > 1 else ""), rows, pager(n, hrefs),
            len(snap.matches) if n == 1 else None,
            tournament_crumbs(snap, Crumb("Matches", hrefs[0] if n > 1 else None),
                              *((Crumb(f"page {n}", None),) if n > 1 else ())), hrefs[n - 1],
            sections=deal_sections(snap, rows, members), bots=names, index_href=match_index_href(snap.slug))

    listings = []
    for n in range(1, count + 1):
        shown = spans[n - 1]
        deals = sorted({snap.stamps[i].group for i in shown})
        inputs = (snap.context, pager(n, hrefs), len(snap.matches) if n == 1 else None, [marks[i] for i in shown],
                  [[marks[i] for i in members[deal]] for deal in deals])
        listings.append(Listing(hrefs[n - 1], inputs, partial(make, n), shown[-1] if shown else -1))
    return listings


def listing_spans(snap: Snapshot, per_page: int = MATCHES_PER_PAGE) -> list[range]:
    """The positions (in ``snap.matches``) on each page of the list of all matches."""
    return page_spans([stamp.group for stamp in snap.stamps], per_page)


def listing_page(snap: Snapshot, position: int) -> int:
    """The page (from 1) of the list of all matches that shows the match at ``position``."""
    return snap.listing_page[position]


def match_list_pages(snap: Snapshot, per_page: int = MATCHES_PER_PAGE) -> list[MatchListPage]:
    """The tournament's matches in schedule order, ``per_page`` a page."""
    return [listing.make() for listing in match_listings(snap, per_page)]


# -- the match index ----------------------------------------------------------------------------------------------------

INDEX_FORMAT = 2
"""2: a finished match also has its rounds, turns and ending, and its seats' rounds out (the columns of the list)."""

IndexSeat = tuple[int, int, int, int, str | None, int, int, int, str]
"""A finished seat as :meth:`arena.store.Store.index_seats` reads it."""


def match_index(snap: Snapshot) -> dict[str, Any]:
    """Every match of the tournament in a few tens of bytes each (:func:`index_of`): what the matches list and the
    bot pages filter in the browser (by bot, opponent, fault and result) over the whole tournament rather than
    one page of it."""
    threshold = int(snap.config.get("rules", {}).get("threshold", Rules().threshold))
    return index_of([(bot.id, bot.name, bot.slug) for bot in snap.bots], snap.stamps, snap.matches.index_seats(),
                    threshold)


def index_of(bots: Sequence[tuple[int, str, str]], stamps: Sequence[MatchStamp], seats: Iterable[IndexSeat],
             threshold: int = Rules().threshold) -> dict[str, Any]:
    """The match index of the matches ``stamps`` (schedule order) between ``bots`` (row id, name, page slug), their
    finished seats ``seats`` as :meth:`arena.store.Store.index_seats` reads them; a seat whose score is over
    ``threshold`` (without a fault) went out in its last round.

    Made small for a league of a thousand bots and a hundred thousand matches: each name, fault reason and ending
    once, in ``bots`` (with ``slugs``, their pages' directories), ``reasons`` and ``endings``; each match (``m``,
    schedule order) an array ``[id step, group step, [bot, ...], [place, ...], [score, ...], faults, rounds, turns,
    ending, [out, ...]]`` whose id and deal group are the difference to the previous match's (mostly 1, and 0 or
    1), bots are indices into ``bots`` in seat order, faults are 0 when no seat faulted, else per seat 0 or 1 + an
    index into ``reasons``, ending an index into ``endings``, and the last (left out when no seat went out) per
    seat the round it went out in, or 0. A match not done is ``[id step, group step, [bot, ...], status]``. The
    list shows a filter's matches with the same columns as without one.

    >>> from arena.store import MatchStamp
    >>> stamps = [MatchStamp(7, 0, 1, 0, "done", 1, None, "x", (3, 4), None),
    ...           MatchStamp(8, 1, 1, 0, "pending", 0, None, None, (4, 3), None)]
    >>> index_of([(3, "a", "a"), (4, "b<", "_b4-b")], stamps, [(7, 3, 2, 40, "crash.exit", 3, 3, 20, "forfeits"),
    ...          (7, 4, 1, 5, None, 3, 3, 20, "forfeits")], 30)
    {'v': 2, 'bots': ['a', 'b<'], 'slugs': ['a', '_b4-b'], 'reasons': ['crash.exit'], 'endings': ['forfeits'], 'm': [[7, 0, [0, 1], [2, 1], [40, 5], [1, 0], 3, 20, 0], [1, 0, [1, 0], 'pending']]}
    """
    number = {bot_id: i for i, (bot_id, _, _) in enumerate(bots)}
    by_match: dict[int, list[IndexSeat]] = defaultdict(list)
    for seat in seats:
        by_match[seat[0]].append(seat)
    reasons: dict[str, int] = {}
    endings: dict[str, int] = {}
    rows: list[list[Any]] = []
    last_id = last_group = 0
    for stamp in stamps:
        row: list[Any] = [stamp.id - last_id, stamp.group - last_group, [number[bot] for bot in stamp.bot_ids]]
        last_id, last_group = stamp.id, stamp.group
        mine = by_match.get(stamp.id)
        if stamp.status != "done" or not mine:
            row.append(stamp.status)
        else:
            row += [[s[2] for s in mine], [s[3] for s in mine]]
            row.append([0 if s[4] is None else 1 + reasons.setdefault(s[4], len(reasons)) for s in mine]
                       if any(s[4] for s in mine) else 0)
            row += [mine[0][6], mine[0][7], endings.setdefault(mine[0][8], len(endings))]
            outs = [s[5] if s[4] is None and s[3] > threshold else 0 for s in mine]
            if any(outs):
                row.append(outs)
        rows.append(row)
    return {"v": INDEX_FORMAT, "bots": [name for _, name, _ in bots], "slugs": [bslug for _, _, bslug in bots],
            "reasons": list(reasons), "endings": list(endings), "m": rows}


def filtered_href(snap: Snapshot, bot: str, vs: str) -> str:
    """The list of all matches filtered (by search.js) to those ``bot`` and ``vs`` shared (the query as
    ``urlencode`` makes it)."""
    return f"{matches_href(snap.slug)}?bot={_query(bot)}&vs={_query(vs)}"


@cache
def _query(name: str) -> str:
    # A name quoted once, not once per pair: a big field's bot pages link a few hundred opponents each.
    return quote_plus(name)


def match_index_inputs(snap: Snapshot) -> tuple[Any, ...]:
    """What the match index is made from, cheap to compare: the names and every match's stamp (a match's result
    is written once, with its stamp's finish time)."""
    return (snap.context, snap.stamp_keys)
