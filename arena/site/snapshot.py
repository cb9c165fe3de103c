"""One tournament read from the store: a :class:`Snapshot` holds its standings, ratings and totals in a handful of bulk
queries, every match's stamp (a match without its result), and the matches' results a block at a time as pages ask
for them (:class:`Matches`), so that building 10,000 match pages does not cost 10,000 round trips to SQLite, and a
rebuild that makes the pages of 100 new matches reads the results of those, not of all. Every page is a pure function
of the snapshot (:mod:`arena.site.pages`)."""

from __future__ import annotations

import hashlib
import json
import pickle
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, overload

from arena.game.results import SeatResult
from arena.site.rows import MatchListRow, StandingRow
from arena.site.urls import MATCHES_PER_PAGE, bot_href, page_spans, slug
from arena.stats.confidence import Confidence, PAbove
from arena.stats.display import Shown
from arena.stats.ratings import Rating
from arena.stats.standings import Standing, rating_history, shown_standings, standings_and_confidence
from arena.stats.standings import head_to_head as read_head_to_head
from arena.store import MatchStamp, Store, StoredMatch

SMALL_FIELD = 30
"""A field of at most this many bots is shown whole on the tournament page (every standing, the head-to-head of
every pair, every bot's rating line); a bigger one shows the top this many there, the rest of the standings on
pages of :data:`arena.site.common.STANDINGS_PER_PAGE`, and each bot's results against every opponent on the bot's
own page, so that no page grows with the square of the field (at a thousand bots the whole matrix was 42 MB)."""


@dataclass(frozen=True)
class BotInfo:
    id: int
    slot: int
    name: str
    slug: str
    files_hash: str
    manifest: dict[str, Any]


class Matches(Sequence[StoredMatch]):
    """A tournament's matches in schedule order, with their results, read from the store a block at a time as
    pages ask for them: a rebuild after a league's batch makes the pages of a few hundred matches of tens of
    thousands, and reads only those (what every match has to say for itself is in :class:`MatchStamp`). Pickled,
    it keeps only where the store is, and a build's worker process reads its own blocks from there."""

    BLOCK = 256

    def __init__(self, store_path: Path, tournament_id: int, stamps: Sequence[MatchStamp], stderr: bool = True,
                 store: Store | None = None) -> None:
        self.store_path = store_path
        self.tournament_id = tournament_id
        self.stamps = stamps
        self.stderr = stderr
        self._store = store
        self._loaded: dict[int, StoredMatch] = {}

    def __len__(self) -> int:
        return len(self.stamps)

    @overload
    def __getitem__(self, position: int) -> StoredMatch: ...

    @overload
    def __getitem__(self, position: slice) -> list[StoredMatch]: ...

    def __getitem__(self, position: int | slice) -> StoredMatch | list[StoredMatch]:
        if isinstance(position, slice):
            wanted = range(*position.indices(len(self.stamps)))
            self.fetch(wanted)
            return [self[i] for i in wanted]
        if position < 0:
            position += len(self.stamps)
        if not 0 <= position < len(self.stamps):
            raise IndexError(position)
        if position not in self._loaded:
            block = position // self.BLOCK * self.BLOCK
            self.load(range(block, min(block + self.BLOCK, len(self.stamps))))
        try:
            return self._loaded[position]
        except KeyError:
            raise MatchGone(self.stamps[position].idx) from None

    def load(self, positions: range | None = None) -> None:
        """Read the matches at ``positions`` (default: all) in one go."""
        positions = range(len(self.stamps)) if positions is None else positions
        if not positions:
            return
        self._keep(positions, self._open().matches(
            self.tournament_id, self.stamps[positions[0]].idx, self.stamps[positions[-1]].idx, self.stderr))

    def fetch(self, positions: Sequence[int]) -> list[StoredMatch]:
        """The matches at ``positions`` in one read of those not read yet: by their schedule indices when they are
        close together (a listing's page), else by their ids (the latest faults), never the blocks around them.
        Those removed from the store since the stamps were read are left out (a stopped test drops matches)."""
        missing = [i for i in positions if i not in self._loaded]
        if missing and max(missing) - min(missing) < 2 * len(missing):
            self.load(range(min(missing), max(missing) + 1))
        elif missing:
            self._keep(missing, self._open().matches_by_id([self.stamps[i].id for i in missing], self.stderr))
        return [self._loaded[i] for i in positions if i in self._loaded]

    def _open(self) -> Store:
        if self._store is None:
            self._store = Store(self.store_path, readonly=True)
        return self._store

    def _keep(self, positions: Iterable[int], matches: Iterable[StoredMatch]) -> None:
        found = {match.id: match for match in matches}
        for i in positions:
            match = found.get(self.stamps[i].id)
            if match is not None:  # else removed since the stamps were read: MatchGone if asked for
                self._loaded[i] = match

    def index_seats(self) -> list[tuple[int, int, int, int, str | None, int, int, int, str]]:
        """Every seat of every finished match, as :meth:`arena.store.Store.index_seats` reads them."""
        return self._open().index_seats(self.tournament_id)

    def pair_seats(self, bot_ids: Sequence[int] | None = None) -> list[tuple[int, int, int, int | None, int | None,
                                                                             str | None]]:
        """Every seat of every finished match (of ``bot_ids`` only, if given), as
        :meth:`arena.store.Store.pair_seats` reads them."""
        return self._open().pair_seats(self.tournament_id, bot_ids)

    def forget(self) -> None:
        """Let go of the matches read so far (they are read again if asked for)."""
        self._loaded.clear()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_store": None, "_loaded": {}}


class MatchGone(LookupError):
    """A match removed from the store after the snapshot was read (a tournament that stopped itself drops the
    matches after its decision): its page is not made."""


@dataclass(frozen=True)
class Live:
    """A tournament being played while its site is built (``arena run --site``, a league): its pages say so, how
    far it is, and reload themselves every ``refresh_s`` seconds (site/assets/live.js) until a build without it,
    the one at the run's end, writes them again without it, which stops the reloading."""

    done: int | None
    """Matches finished; None on a page that shows no count (a bot's page: it would change with every match)."""
    total: int | None
    """Matches scheduled; None for a run with no end (a league)."""
    refresh_s: int

    @property
    def text(self) -> str:
        """What the page says of the run: ``live, 12 of 60 matches``.

        >>> Live(12, 60, 10).text, Live(1, None, 5).text, Live(None, None, 5).text
        ('live, 12 of 60 matches', 'live, 1 match played', 'live: being played')
        """
        if self.done is None:
            return "live: being played"
        if self.total is None:
            return f"live, {self.done} match{'' if self.done == 1 else 'es'} played"
        return f"live, {self.done} of {self.total} matches"

    def uncounted(self) -> Live:
        return Live(None, None, self.refresh_s)


def live_of(snap: Snapshot, refresh_s: int, open_ended: bool = False) -> Live:
    """The live state of ``snap`` as its stamps show it (``open_ended``: no total, a league)."""
    done = sum(1 for stamp in snap.stamps if stamp.status == "done")
    return Live(done, None if open_ended else len(snap.stamps), refresh_s)


@dataclass(frozen=True)
class BotRow:
    """A match's row on its bots' listings as HTML, the same on each of them but for the place."""

    match_id: int
    head: str
    """The row before the place cell."""
    tail: str
    """The row after it."""
    places: tuple[int | None, ...]
    """Each seat's place (None until the match is done)."""


@dataclass
class Snapshot:
    """Everything the pages of one tournament need: the bulk facts in a few queries, and its matches' results as
    pages ask for them (:class:`Matches`)."""

    id: int
    name: str
    slug: str
    config: dict[str, Any]
    created_at: str
    finished_at: str | None
    bots: list[BotInfo]
    matches: Matches
    """The matches in schedule order, read as pages ask for them."""
    stamps: list[MatchStamp]
    """Each match without its result, in the same order: what a rebuild reads of every match."""
    standings: list[Standing]
    head_to_head: dict[tuple[int, int], tuple[int, int]]
    history: dict[int, list[tuple[int, Rating]]]
    store_dir: Path
    sure: Confidence
    """How settled the order of the standings is (shared ranks, P(above the next)): arena/stats/confidence.py."""
    shared_wins: Counter[int] = field(default_factory=Counter)
    """Per bot, the wins it shared with another seat placed first."""
    seat_totals: dict[tuple[int, int], tuple[int, int, int]] = field(default_factory=dict)
    """(bot, seat) -> (finished matches, wins, sum of places): :meth:`arena.store.Store.seat_totals`."""
    faulted: list[tuple[int, int]] = field(default_factory=list)
    """(position, bot) of every seat that faulted in a finished match, in schedule order."""
    live: Live | None = None
    """Set while the tournament is being played and its site built meanwhile (:class:`Live`)."""
    bot_by_id: dict[int, BotInfo] = field(init=False)
    groups: dict[int, int] = field(init=False)
    """Each match's group by schedule index: the rotations of one deal with duplicate deals (arena/schedule.py)."""
    rows: dict[int, MatchListRow] = field(init=False, repr=False, default_factory=dict)
    """Each match's row in the listings (by schedule index), made once as pages ask: see
    :func:`arena.site.common.match_list_row` (a build's worker empties it after each chunk of match pages)."""
    cache: BuildCache = field(init=False, repr=False, default_factory=lambda: BuildCache())
    """What a build hands between its processes and keeps between builds (:class:`BuildCache`)."""
    match_list: list[dict[str, Any]] = field(default_factory=list, repr=False)
    """Every match with its seats as ``arena matches --json`` gives them (:meth:`arena.store.Store.match_list`): the
    tournament's results to download."""

    def __post_init__(self) -> None:
        self.bot_by_id = {bot.id: bot for bot in self.bots}
        self.groups = {stamp.idx: stamp.group for stamp in self.stamps}

    def bot_link(self, bot_id: int) -> tuple[str, str]:
        bot = self.bot_by_id[bot_id]
        return bot.name, bot_href(self.slug, bot.slug)

    # Each value below is made once per snapshot, when first asked for (functools.cached_property, kept in the
    # instance's __dict__ and so pickled with it to a build's workers): the pages of a big field ask thousands of
    # times. :meth:`forget_standings` drops those made from the standings when these are read again.

    @cached_property
    def stamp_keys(self) -> list[tuple[Any, ...]]:
        """Every match's :func:`stamp_key`, in the order of :attr:`matches` (tuples: cheap to hash, for every
        match of every rebuild)."""
        return [stamp_key(match) for match in self.stamps]

    @cached_property
    def context(self) -> str:
        """What every page of a tournament is made from besides its matches: its names, its bots' names and links,
        and the rules (a seat's elimination round is read against the threshold); as a digest, since it is part of
        the key of every listing page (thousands of pages of a thousand bots' names each, in a big league)."""
        whole = (self.slug, self.name, self.config.get("rules"), [(bot.id, bot.name, bot.slug) for bot in self.bots])
        return hashlib.sha1(pickle.dumps(whole, protocol=5)).hexdigest()

    @cached_property
    def shown(self) -> Shown:
        """How the standings are shown (arena/stats/display.py): ranks, intervals, P(above next), the note."""
        return shown_standings(self.standings, self.sure)

    @cached_property
    def standing_rows(self) -> list[StandingRow]:
        """The rows of the standings: the tournament page and every bot page show them."""
        view = self.shown.by_bot()
        shared = self.shared_wins
        rows = []
        for rank, line in enumerate(self.standings, 1):
            bot = self.bot_by_id[line.bot_id]
            seen = view[line.bot_id]
            rows.append(StandingRow(rank, line.name, bot_href(self.slug, bot.slug), line.rating.conservative,
                                    line.rating.mu, line.rating.sigma, line.matches, line.wins, line.mean_place,
                                    line.points_per_round, line.declares_ok, line.declares_failed,
                                    dict(sorted(line.faults.items())), seen.rank, seen.p_above_next,
                                    shared[line.bot_id], line.active, line.strength, seen.interval, seen.p_text,
                                    line.rated))
        return rows

    @cached_property
    def standing_index(self) -> dict[int, int]:
        """Each bot's line in :attr:`standings` (and in :attr:`standing_rows`) by bot id: each of a big field's
        thousand bot pages asks."""
        return {line.bot_id: i for i, line in enumerate(self.standings)}

    @cached_property
    def played(self) -> dict[int, list[int]]:
        """Each bot's matches (their positions in :attr:`matches`), all bots' found in one pass (a pass per bot was
        a thousand passes over a hundred thousand matches in a big league)."""
        played: dict[int, list[int]] = defaultdict(list)
        for position, match in enumerate(self.stamps):
            for bot in dict.fromkeys(match.bot_ids):
                played[bot].append(position)
        return dict(played)

    @cached_property
    def met(self) -> dict[int, list[tuple[int, int, int]]]:
        """Each bot's (opponent, matches placed above it, matches shared) of every opponent it met, all bots' found
        in one pass over the head-to-head counts (a pass over the field per bot was a million look-ups in a big
        league)."""
        met: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        for (a, b), (above, shared) in self.head_to_head.items():
            if shared:
                met[a].append((b, above, shared))
        return dict(met)

    @cached_property
    def grid(self) -> tuple[int, ...]:
        """The bots of the tournament page's head-to-head grid, in the standings' order: every bot of a small field,
        the top :data:`SMALL_FIELD` of a big one. The pairs of them that met have pages of their
        own (arena/site/pages/pair.py): all pairs of a big field would be half a million pages."""
        return tuple(line.bot_id for line in self.standings[:SMALL_FIELD])

    @cached_property
    def grid_set(self) -> frozenset[int]:
        return frozenset(self.grid)

    @cached_property
    def pair_seats(self) -> dict[int, tuple[tuple[int, int, int | None, int | None, str | None], ...]]:
        """By match id, each seat of the finished matches of the :attr:`grid`'s bots as (seat, bot, place, think
        time in ms, fault kind): what the pages of two bots side by side show (read when first asked for, in one
        query, and only the grid's bots of a big field). A sealed match's think times are left out until its group
        is over, as from every sum of think times (docs/SECURITY.md, "What is published when")."""
        among = None if len(self.grid) == len(self.bots) else self.grid
        sealed = {stamp.id for stamp in self.stamps if stamp.sealed}
        seats: dict[int, list[tuple[int, int, int | None, int | None, str | None]]] = defaultdict(list)
        for match_id, seat, bot, place, think_ms, fault in self.matches.pair_seats(among):
            seats[match_id].append((seat, bot, place, None if match_id in sealed else think_ms, fault))
        return {match_id: tuple(row) for match_id, row in seats.items()}

    @cached_property
    def seats(self) -> int:
        """The most seats a match of the tournament has (every bot's page has a row per seat)."""
        return max((len(m.bot_ids) for m in self.stamps), default=0)

    @cached_property
    def listing_page(self) -> list[int]:
        """By position, the page (from 1) of the list of all matches that shows the match
        (:func:`arena.site.pages.listings.listing_spans`)."""
        return [n for n, span in enumerate(page_spans([stamp.group for stamp in self.stamps], MATCHES_PER_PAGE), 1)
                for _ in span]

    def forget_standings(self) -> None:
        """Drop what was made from :attr:`standings`, to be made again from new ones."""
        for made in ("shown", "standing_rows", "standing_index", "grid", "grid_set", "pair_seats"):
            self.__dict__.pop(made, None)


@dataclass
class BuildCache:
    """What a build of the site hands between its processes and keeps between builds, as one object (the build's:
    arena/site/build.py fills it; the pages read it through their snapshot)."""

    row_html: dict[int, BotRow] = field(default_factory=dict)
    """By position, a match's row in its bots' listings, made by the build's worker that read the match for its page
    (:func:`arena.site.html.bot_row_html`): every match is in four bots' listings, which are then made without
    reading their matches again."""
    forfeits: dict[int, dict[int, int]] = field(default_factory=dict)
    """Each match's forfeit steps (seat -> replay step) by match id, once its log (or view) was read, or as a
    build kept them in the site (arena/site/build.py, ``steps.json``): a fault is in the tables of the tournament
    page, its bot's page and its bot's faults page."""


def stamp_key(match: MatchStamp) -> tuple[Any, ...]:
    """What stands for everything a match's pages and listing rows show of it, in a form cheap to compare: a
    match is written once when it is over (one transaction with its finish time) and never changes after, so its
    row id, status, attempts and finish time stand for its whole result; a match not yet over has nothing more to
    show. (The bots' names and the tournament's rules are the snapshot's: :attr:`Snapshot.context`.)"""
    # Whether its group is sealed (docs/SECURITY.md) changes when another match of the group finishes: the page
    # then shows the seed and the replay it withheld.
    return (match.id, match.idx, match.status, match.attempts, match.finished_at, match.error, match.bot_ids,
            match.public_seed, match.sealed)




def seated(match: StoredMatch) -> list[tuple[int, int, SeatResult | None]]:
    """Each seat of ``match``: the seat, its bot's row id and its result (None until the match is done)."""
    return [(seat, bot_id, None if match.result is None else match.result.players[seat])
            for seat, bot_id in enumerate(match.bot_ids)]


def out_round(match: StoredMatch, result: SeatResult | None) -> int | None:
    """The round in which a seat went out over the threshold (its place was then decided by elimination), or None
    (still in play at the end, forfeited, or not played). A seat is dealt into every round up to the one it went out
    in, so its round count is that round: no log needed, which keeps the matches list cheap."""
    if match.result is None or result is None or result.fault is not None:
        return None
    return result.stats.rounds if result.score > match.result.rules.threshold else None


def snapshot(store: Store, name: str, stderr: bool = True, whole: bool = True) -> Snapshot:
    """Read tournament ``name`` (KeyError if the store has none by that name); without the seats' stderr tails
    unless ``stderr`` (a public site's). Not ``whole``: its bots, matches and faults only, what its match pages and
    listings are made from; :func:`read_rest` reads the rest (a full build's workers make those pages meanwhile)."""
    row = store.tournament(name)
    if row is None:
        raise KeyError(name)
    tid = row["id"]
    config = json.loads(row["config"])
    bots = [BotInfo(b["id"], b["slot"], b["name"], slug(b["name"], b["id"], "b"), b["files_hash"],
                    json.loads(b["manifest"])) for b in store.bots(tid)]
    marks = store.match_stamps(tid)
    position = {mark.idx: i for i, mark in enumerate(marks)}
    snap = Snapshot(
        id=tid, name=row["name"], slug=slug(row["name"], tid, "t"), config=config, created_at=row["created_at"],
        finished_at=row["finished_at"], bots=bots, matches=Matches(store.path, tid, marks, stderr, store),
        stamps=marks, standings=[], head_to_head={}, history={}, store_dir=store.path.parent, sure=UNREAD,
        faulted=[(position[idx], bot) for idx, bot in store.faulted_seats(tid) if idx in position])
    if whole:
        read_rest(snap, store)
    return snap


UNREAD = Confidence((), PAbove([], {}), 0.95, 0)
"""The confidence of a snapshot whose standings are not read yet (:func:`snapshot`)."""


def read_rest(snap: Snapshot, store: Store) -> None:
    """Read what :func:`snapshot` left out when not ``whole``: the standings and their confidence, the rating
    history, the head-to-head and per-seat totals, and the list of every match to download."""
    tid = snap.id
    snap.standings, snap.sure = standings_and_confidence(store, tid)
    snap.head_to_head = read_head_to_head(store, tid)
    snap.history = rating_history(store, tid)
    snap.shared_wins = store.shared_wins(tid)
    snap.seat_totals = store.seat_totals(tid)
    snap.match_list = store.match_list(tid)
    snap.forget_standings()  # made from the standings: made again from these
