"""Two bots side by side: a page per pair of bots that met, with their ratings and rank intervals, their places deal
by deal in the matches they shared (a duplicate deal played from each seat rotation is one row), their think times
and their faults by kind in those matches.

Only the pairs of the head-to-head grid have pages (:attr:`arena.site.snapshot.Snapshot.grid`): every pair of a small
field that met, and in a big field the pairs among its top :data:`arena.site.snapshot.SMALL_FIELD`; 1,000 bots would
be half a million pages. A page lists the latest :data:`DEALS_SHOWN` deals and links the list of every match the two
shared (search.js filters it), so that a pair that shared a thousand matches is a page of kilobytes, not of a
megabyte (bench/site.py: the 10,000-match site has 160 MB to spend in all)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from arena.site.common import tournament_crumbs
from arena.site.pages.listings import filtered_href
from arena.site.rows import StandingRow
from arena.site.snapshot import Snapshot
from arena.site.urls import Crumb, match_href, pair_href

DEALS_SHOWN = 20
"""The latest deals a pair's page lists one by one (the totals count them all): 60 matches at 3 seats, a page of
18.6 KB (bench/site.py's ``pair_page_kb_mean``; 40 deals made pages of 33.2 KB, 0.93 MB of the 10,000-match site's
160)."""


@dataclass(frozen=True)
class PairSeat:
    """One of the two bots in one match: its seat, place, think time and fault."""

    seat: int
    place: int | None
    think_ms: int | None
    fault: str | None
    """The fault's kind (``crash``, ``timeout`` ...), None without one."""


@dataclass(frozen=True)
class PairMatch:
    id: int
    href: str
    first: PairSeat
    second: PairSeat


@dataclass(frozen=True)
class PairDeal:
    """The matches of one deal (one schedule group: its seat rotations, with duplicate deals) both bots played."""

    group: int
    matches: tuple[PairMatch, ...]

    @property
    def places(self) -> tuple[int, int]:
        """The sum of each bot's places over the deal's matches (a match without a place counts none)."""
        return (sum(m.first.place or 0 for m in self.matches), sum(m.second.place or 0 for m in self.matches))

    @property
    def ahead(self) -> int:
        """1: the first bot's places sum lower (better) over the deal, -1 the second's, 0 level."""
        first, second = self.places
        return (first < second) - (first > second)


@dataclass(frozen=True)
class PairSide:
    """One of the two bots: its line of the standings and what it did in the matches the two shared."""

    bot: str
    href: str
    standing: StandingRow
    mean_place: float | None
    """Its mean place in the shared matches."""
    think_mean_ms: float | None
    """Its mean think time a match (all its moves of the match) over the shared matches that kept one."""
    think_max_ms: int | None
    think_matches: int
    """The shared matches that kept its think time."""
    faults: dict[str, int]
    """Its faults in the shared matches, by kind."""


@dataclass(frozen=True)
class PairPage:
    name: str
    slug: str
    path: str
    crumbs: tuple[Crumb, ...]
    first: PairSide
    second: PairSide
    above: int
    """Of their shared matches, those the first bot placed above the second, as the head-to-head grid counts."""
    below: int
    matches: int
    """Their shared finished matches."""
    deals_total: int
    deals_ahead: tuple[int, int, int]
    """Deals the first bot did better on (lower sum of places), level, the second did better on."""
    deals: tuple[PairDeal, ...]
    """The latest :data:`DEALS_SHOWN` deals, latest first."""
    matches_href: str
    """The list of every match the two shared (filtered by search.js)."""

    @property
    def ties(self) -> int:
        return self.matches - self.above - self.below


def ordered(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def pairs(snap: Snapshot) -> list[tuple[int, int]]:
    """The pairs with a page: those of the grid's bots that met, each as (lower bot id, higher)."""
    grid = sorted(snap.grid)
    return [(a, b) for i, a in enumerate(grid) for b in grid[i + 1:]
            if snap.head_to_head.get((a, b), (0, 0))[1]]


def pair_of(snap: Snapshot, a: int, b: int) -> str | None:
    """The page of ``a`` and ``b`` side by side, None when they have none (they never met, or a big field's
    pair not both in its top)."""
    if a == b or a not in snap.grid_set or b not in snap.grid_set or not snap.head_to_head.get((a, b), (0, 0))[1]:
        return None
    first, second = ordered(a, b)
    return pair_href(snap.slug, snap.bot_by_id[first].slug, snap.bot_by_id[second].slug)


def shared(snap: Snapshot, a: int, b: int) -> list[int]:
    """The positions (schedule order) of the finished matches both bots played."""
    theirs = set(snap.played.get(b, ()))
    return [p for p in snap.played.get(a, ()) if p in theirs and snap.stamps[p].status == "done"]


def pair_inputs(snap: Snapshot, a: int, b: int) -> tuple[Any, ...]:
    """What the page of ``a`` and ``b`` is made from: the names, what it shows of the two lines of the standings and
    the stamps of their shared matches (a match's stamp stands for its whole result: arena/site/snapshot.py's ``stamp_key``)."""
    keys = snap.stamp_keys
    return (snap.context, _shown(snap, a), _shown(snap, b), [keys[p] for p in shared(snap, a, b)])


def _shown(snap: Snapshot, bot: int) -> tuple[Any, ...]:
    """What a pair's page shows of a bot's line of the standings: a change elsewhere in it (its fitted strength,
    P(above next)) leaves the page as it is."""
    row = snap.standing_rows[snap.standing_index[bot]]
    return (row.shared_rank, row.rated, row.conservative, row.mu, row.sigma)


def _seat(facts: tuple[tuple[int, int, int | None, int | None, str | None], ...], bot: int) -> PairSeat | None:
    for seat, bot_id, place, think_ms, fault in facts:
        if bot_id == bot:
            return PairSeat(seat, place, think_ms, fault)
    return None


def _side(snap: Snapshot, bot: int, seats: list[PairSeat]) -> PairSide:
    name, href = snap.bot_link(bot)
    places = [s.place for s in seats if s.place is not None]
    thought = [s.think_ms for s in seats if s.think_ms is not None]
    faults = Counter(s.fault for s in seats if s.fault is not None)
    return PairSide(name, href, snap.standing_rows[snap.standing_index[bot]],
                    sum(places) / len(places) if places else None,
                    sum(thought) / len(thought) if thought else None, max(thought, default=None), len(thought),
                    dict(sorted(faults.items())))


def pair_page(snap: Snapshot, a: int, b: int, deals_shown: int = DEALS_SHOWN) -> PairPage:
    """The page of bots ``a`` and ``b`` side by side (the lower id first), listing the latest ``deals_shown``
    deals."""
    first, second = ordered(a, b)
    path = pair_of(snap, first, second)
    if path is None:
        raise KeyError(f"bots {first} and {second} of {snap.name!r} have no page side by side")
    matches: list[tuple[int, PairMatch]] = []
    for position in shared(snap, first, second):
        stamp = snap.stamps[position]
        facts = snap.pair_seats.get(stamp.id, ())
        one, other = _seat(facts, first), _seat(facts, second)
        if one is not None and other is not None:
            matches.append((stamp.group, PairMatch(stamp.id, match_href(snap.slug, stamp.id), one, other)))
    deals: list[PairDeal] = []
    for group, match in matches:
        if deals and deals[-1].group == group:
            deals[-1] = PairDeal(group, (*deals[-1].matches, match))
        else:
            deals.append(PairDeal(group, (match,)))
    verdicts = Counter(deal.ahead for deal in deals)
    above = snap.head_to_head.get((first, second), (0, 0))[0]
    below = snap.head_to_head.get((second, first), (0, 0))[0]
    one_name, other_name = snap.bot_by_id[first].name, snap.bot_by_id[second].name
    return PairPage(snap.name, snap.slug, path,
                    tournament_crumbs(snap, Crumb(f"{one_name} and {other_name}", None)),
                    _side(snap, first, [m.first for _, m in matches]),
                    _side(snap, second, [m.second for _, m in matches]), above, below, len(matches), len(deals),
                    (verdicts[1], verdicts[0], verdicts[-1]), tuple(reversed(deals[-deals_shown:])),
                    filtered_href(snap, one_name, other_name))


def pair_pages(snap: Snapshot) -> Iterator[tuple[str, Any, partial[PairPage]]]:
    """Every pair's page as (site-relative path, what it is made from, the function that makes it)."""
    for a, b in pairs(snap):
        path = pair_of(snap, a, b)
        assert path is not None
        yield path, pair_inputs(snap, a, b), partial(pair_page, snap, a, b)
