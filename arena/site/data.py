"""What each page of the results site shows: the store's results (:class:`~arena.store.StoredMatch` holding the
referee's :class:`~arena.game.results.SeatResult` values, used as they are) with the links and sums a page adds, and the
narration of each match's log (:mod:`arena.game.narrate`, logs read by :mod:`arena.match.matchlog`). A match's move list and
its replay's data are :mod:`arena.site.replay`'s, from the match's view (:mod:`arena.match.matchview`: what its log
decides, kept beside it; the log itself is read only when the view is missing or stale).

Nothing here renders or writes: :mod:`arena.site.render` turns these into HTML. A tournament is read into a
:class:`Snapshot`: its standings, ratings and totals in a handful of bulk queries, every match's stamp (a match
without its result), and the matches' results a block at a time as pages ask for them (:class:`Matches`), so that
building 10,000 match pages does not cost 10,000 round trips to SQLite, and a rebuild that makes the pages of 100
new matches reads the results of those, not of all. Every page is a pure function of the snapshot.

Links are site-relative paths (``t/demo/index.html``); a page turns them into links relative to itself, so the
site works from ``file://`` and under any prefix of a static host. File names come from bot and tournament names
only when those are slugs: anything else a store may hold gets a name built from its row id instead.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import pickle
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from typing import Any, overload
from urllib.parse import quote_plus

from arena.game.narrate import narrate
from arena.game.results import Fault, SeatResult, Termination
from arena.game.rules import Rules
from arena.match.matchlog import LoadedLog, LogError, find_log, load, locate_log
from arena.match.matchview import MatchView, derive, plain_names, source_view
from arena.match.thinktime import Mark, Tally
from arena.site.replay import FOLD_LINES, MoveBlock, card_text, fold_line, move_blocks
from arena.stats.confidence import Confidence, PAbove, PairTest
from arena.stats.ratings import Rating
from arena.stats.standings import Standing, rating_history, standings_and_confidence
from arena.stats.standings import head_to_head as read_head_to_head
from arena.stats.standings import standings as read_standings
from arena.store import MatchStamp, Store, StoredMatch

SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
MATCHES_PER_PAGE = 50
FAULTS_SHOWN = 50
CHART_POINTS = 300
"""At most this many points per line of a rating chart: enough to see the shape, small enough to load fast."""
SMALL_FIELD = 30
"""A field of at most this many bots is shown whole on the tournament page (every standing, the head-to-head of
every pair, every bot's rating line); a bigger one shows the top this many there, the rest of the standings on
pages of :data:`STANDINGS_PER_PAGE`, and each bot's results against every opponent on the bot's own page, so that
no page grows with the square of the field (at a thousand bots the whole matrix was 42 MB)."""
STANDINGS_PER_PAGE = 100
TOP_CHART_POINTS = 60
"""A big field's rating chart on the tournament page: at most this many points per line of its top's, so that the
chart (a point and its tooltip each) stays a few hundred kilobytes however long the tournament."""


# -- links ----------------------------------------------------------------------------------------------------------


def slug(name: str, row_id: int, prefix: str) -> str:
    """``name`` when it is safe as a file name, else a name no slug can take (it starts with ``_``), made unique by
    the row id.

    >>> slug("greedy", 3, "b"), slug("greedy@2", 3, "b"), slug("<script>", 4, "b")
    ('greedy', '_b3-greedy-2', '_b4-script')
    """
    if SLUG.fullmatch(name):
        return name
    readable = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-")[:40]
    return f"_{prefix}{row_id}" + (f"-{readable}" if readable else "")


def tournament_href(tslug: str) -> str:
    return f"t/{tslug}/index.html"


def matches_href(tslug: str, page: int = 1) -> str:
    return f"t/{tslug}/matches/index.html" if page == 1 else f"t/{tslug}/matches/page-{page}.html"


def match_href(tslug: str, match_id: int) -> str:
    """A match's page, named by the number its heading, ``arena matches`` and ``arena show`` give it (its store
    id), so that ``matches/103.html`` is "Match #103" (not the 103rd of the schedule)."""
    return f"t/{tslug}/matches/{match_id}.html"


def match_data_href(tslug: str, match_id: int) -> str:
    """The data file of a match's replay: a script (a page opened from disk may load a script, but not fetch a
    file) that hands replay.js the match's names and compact events."""
    return f"t/{tslug}/matches/{match_id}.js"


def match_index_href(tslug: str) -> str:
    """The tournament's match index (:func:`match_index`): a script, as a match's data file is."""
    return f"t/{tslug}/matches/index.js"


def match_log_href(tslug: str, match_id: int) -> str:
    """A match's event log in the site, to download: the log as the runner wrote it (gzip-compressed JSON lines),
    or, on a site without the bots' stderr (the league server's public one), that log without it."""
    return f"t/{tslug}/matches/{match_id}.jsonl.gz"


def standings_href(tslug: str, page: int = 1) -> str:
    """A page of a big field's standings: the first is the tournament's page."""
    return tournament_href(tslug) if page == 1 else f"t/{tslug}/standings-{page}.html"


def standings_index_href(tslug: str) -> str:
    """Every bot's rank and name (:func:`standings_index`), what the standings' filter searches."""
    return f"t/{tslug}/standings.js"


def bot_href(tslug: str, bslug: str, page: int = 1) -> str:
    return f"t/{tslug}/bots/{bslug}/index.html" if page == 1 else f"t/{tslug}/bots/{bslug}/matches-{page}.html"


def faults_href(tslug: str, bslug: str) -> str:
    """A bot's page of all its faults (its own page shows the latest)."""
    return f"t/{tslug}/bots/{bslug}/faults.html"


def step_href(href: str, step: int | None) -> str:
    """``href`` (a match's page) opened at replay step ``step`` (1-based, as the replay's counter and its
    ``#step=N`` address count), or at its default step when not known."""
    return href if step is None else f"{href}#step={step}"


@dataclass(frozen=True)
class Crumb:
    label: str
    href: str | None  # None: the current page


@dataclass(frozen=True)
class Pager:
    """The page links of one page of a listing: the first page, those near this one and (from the first page, or
    near the end) the last. A page far from the end names no page count, so it stays the same file while a league
    adds pages after it (an incremental build rewrites only what changed)."""

    page: int
    links: tuple[tuple[int, str] | None, ...]
    """The page numbers shown with their hrefs, in order (this page among them); None marks a gap."""
    prev: str | None
    next: str | None


def pager(page: int, hrefs: Sequence[str], radius: int = 3) -> Pager:
    """The pager of page ``page`` (1-based) of the pages at ``hrefs``.

    >>> [link and link[0] for link in pager(10, [str(n) for n in range(20)], 2).links]
    [1, None, 8, 9, 10, 11, 12, None]
    >>> [link and link[0] for link in pager(1, [str(n) for n in range(20)], 2).links]
    [1, 2, 3, None, 20]
    """
    count = len(hrefs)
    keep = {1, *range(page - radius, page + radius + 1)} | ({count} if page == 1 else set())
    links: list[tuple[int, str] | None] = []
    shown = 0
    # The pages shown, not every page: a big league's 2,000 listing pages each have a pager.
    for number in sorted(number for number in keep if 1 <= number <= count):
        if number > shown + 1:
            links.append(None)
        links.append((number, hrefs[number - 1]))
        shown = number
    if links and shown < count:
        links.append(None)
    return Pager(page, tuple(links) if count > 1 else (), hrefs[page - 2] if page > 1 else None,
                 hrefs[page] if page < count else None)


def page_spans(groups: Sequence[int | None], per_page: int) -> list[range]:
    """Pages of a listing whose items belong to ``groups`` (a match's deal group, in listing order): at most
    ``per_page`` items a page, a page never breaking a run of one group (the rotations of one deal are read
    together) unless that run alone is longer than a page. Earlier pages do not change as items are appended.

    >>> page_spans([0, 0, 0, 1, 1, 1, 2, 2, 2], 4), page_spans([0] * 5, 2), page_spans([], 3)
    ([range(0, 3), range(3, 6), range(6, 9)], [range(0, 2), range(2, 4), range(4, 5)], [range(0, 0)])
    """
    spans: list[range] = []
    start = 0
    run = 0  # the first item of the current group's run
    for position in range(1, len(groups) + 1):
        if position < len(groups) and groups[position] == groups[run] and groups[run] is not None:
            continue
        # the run [run, position) ends here
        if position - start > per_page and run > start:
            spans.append(range(start, run))  # the run does not fit after what the page holds: it starts the next
            start = run
        while position - start > per_page:
            spans.append(range(start, start + per_page))  # a run longer than a page is cut
            start += per_page
        run = position
    if start < len(groups) or not spans:
        spans.append(range(start, len(groups)))
    return spans


# -- the snapshot: one tournament read from the store ----------------------------------------------------------------


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
        self._inherited: Store | None = None
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

    def forked(self) -> None:
        """In a forked copy of the process: read from a connection of its own from now on. An SQLite connection
        must not be used across a fork; the inherited one is kept, unused and never closed (the copy ends with
        ``os._exit``)."""
        self._inherited, self._store = self._store, None

    def index_seats(self) -> list[tuple[int, int, int, int, str | None]]:
        """Every seat of every finished match, as :meth:`arena.store.Store.index_seats` reads them."""
        return self._open().index_seats(self.tournament_id)

    def forget(self) -> None:
        """Let go of the matches read so far (they are read again if asked for)."""
        self._loaded.clear()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_store": None, "_inherited": None, "_loaded": {}}


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
    """Each match's row in the listings (by schedule index), made once: see :func:`match_list_row`."""
    standing_cache: list[StandingRow] | None = field(init=False, repr=False, default=None)
    """The standings as :func:`standing_rows` makes them, once: the tournament page and every bot page show them."""
    key_cache: list[tuple[Any, ...]] | None = field(init=False, repr=False, default=None)
    """Each match's :func:`stamp_key`, in the order of :attr:`matches`."""
    page_cache: list[int] | None = field(init=False, repr=False, default=None)
    """The page of the list of all matches each match is on (:func:`listing_page`)."""
    forfeit_cache: dict[int, dict[int, int]] = field(init=False, repr=False, default_factory=dict)
    """Each match's :func:`forfeit_steps` by match id, once its log was read: a fault is in the tables of the
    tournament page, its bot's page and its bot's faults page."""
    seats_cache: int | None = field(init=False, repr=False, default=None)
    """:func:`seats_of`, found once."""
    context_cache: str | None = field(init=False, repr=False, default=None)
    """:func:`context`, made once."""
    place_cache: dict[int, int] | None = field(init=False, repr=False, default=None)
    """Each bot's line in :attr:`standings` by bot id (:func:`standing_of`)."""
    played_cache: dict[int, list[int]] | None = field(init=False, repr=False, default=None)
    """Each bot's matches (positions), made in one pass over the matches (:func:`played_by`)."""
    met_cache: dict[int, list[tuple[int, int, int]]] | None = field(init=False, repr=False, default=None)
    """Each bot's opponents met, with its head-to-head counts (:func:`met_by`)."""
    row_html: dict[int, BotRow] = field(init=False, repr=False, default_factory=dict)
    """By position, a match's row in its bots' listings, made by arena/site/render.py where the match was read for
    its page (a build's worker): every match is in four bots' listings, which are then made without reading their
    matches again."""
    match_list: list[dict[str, Any]] = field(default_factory=list, repr=False)
    """Every match with its seats as ``arena matches --json`` gives them (:meth:`arena.store.Store.match_list`): the
    tournament's results to download."""

    def __post_init__(self) -> None:
        self.bot_by_id = {bot.id: bot for bot in self.bots}
        self.groups = {stamp.idx: stamp.group for stamp in self.stamps}

    def bot_link(self, bot_id: int) -> tuple[str, str]:
        bot = self.bot_by_id[bot_id]
        return bot.name, bot_href(self.slug, bot.slug)


def stamp_key(match: MatchStamp) -> tuple[Any, ...]:
    """What stands for everything a match's pages and listing rows show of it, in a form cheap to compare: a
    match is written once when it is over (one transaction with its finish time) and never changes after, so its
    row id, status, attempts and finish time stand for its whole result; a match not yet over has nothing more to
    show. (The bots' names and the tournament's rules are the snapshot's: :func:`context`.)"""
    # Whether its group is sealed (docs/SECURITY.md) changes when another match of the group finishes: the page
    # then shows the seed and the replay it withheld.
    return (match.id, match.idx, match.status, match.attempts, match.finished_at, match.error, match.bot_ids,
            match.public_seed, match.sealed)


def stamp_keys(snap: Snapshot) -> list[tuple[Any, ...]]:
    """Every match's :func:`stamp_key`, made once per snapshot (tuples: cheap to hash, for every match of every
    rebuild)."""
    if snap.key_cache is None:
        snap.key_cache = [stamp_key(match) for match in snap.stamps]
    return snap.key_cache


def context(snap: Snapshot) -> str:
    """What every page of a tournament is made from besides its matches: its names, its bots' names and links, and
    the rules (a seat's elimination round is read against the threshold); as a digest made once, since it is part
    of the key of every listing page (thousands of pages of a thousand bots' names each, in a big league)."""
    if snap.context_cache is None:
        whole = (snap.slug, snap.name, snap.config.get("rules"), [(bot.id, bot.name, bot.slug) for bot in snap.bots])
        snap.context_cache = hashlib.sha1(pickle.dumps(whole, protocol=5)).hexdigest()
    return snap.context_cache


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
    snap.standing_cache = snap.place_cache = None  # made from the standings: made again from these


# -- shared pieces ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StandingRow:
    rank: int
    bot: str
    href: str
    conservative: float
    mu: float
    sigma: float
    matches: int
    wins: int
    mean_place: float | None
    points_per_round: float | None
    declares_ok: int
    declares_failed: int
    faults: dict[str, int]
    shared_rank: str = ""
    """The rank as shown: ``2=`` when its order with a neighbour is not settled at 95%, or not separated by the
    stop rule's test (arena/stats/confidence.py)."""
    p_above_next: float | None = None
    """P(this bot is truly above the next one), None for the last."""
    wins_shared: int = 0
    """Of ``wins``, the matches whose first place it shared (a tie counts as a win for each)."""
    active: bool = True
    """False for a league's version that has left the field."""
    strength: float | None = None
    """The fitted Plackett-Luce log strength, the standings' order (arena/stats/ranking.py)."""
    tied: tuple[int, int] = (0, 0)
    """The first and last position of its chain of shared ranks (its own position twice when not shared)."""
    rank95: tuple[int, int] | None = None
    """Its 95% rank interval, best and worst (``arena standings`` shows it as rank95), when it has one."""

    @property
    def win_pct(self) -> float | None:
        return 100 * self.wins / self.matches if self.matches else None


@dataclass(frozen=True)
class Series:
    """One line of a rating chart: points (match index, value), and optionally a band (index, low, high)."""

    name: str
    points: tuple[tuple[float, float], ...]
    band: tuple[tuple[float, float, float], ...] = ()


@dataclass(frozen=True)
class PlayerCell:
    seat: int
    bot: str
    href: str
    place: int | None
    score: int | None
    fault: Fault | None
    out_round: int | None = None
    """The round it went out over the threshold, when its place was decided by elimination."""


@dataclass(frozen=True)
class MatchListRow:
    idx: int
    id: int
    href: str
    status: str
    rounds: int | None
    turns: int | None
    termination: Termination | None
    players: tuple[PlayerCell, ...]
    """Best place first; seats without a place (a match not played) in seat order."""
    place_of: int | None = None
    """On a bot's pages: the place that bot took."""
    html: tuple[str, str] | None = None
    """On a bot's pages, the row as HTML before and after its place (:attr:`Snapshot.row_html`), in which case
    only ``idx``, ``id`` and ``place_of`` are set."""


@dataclass(frozen=True)
class FaultRow:
    """A fault in a table of faults: the seat's result (which holds the fault) with its match and bot links."""

    match_idx: int
    match_href: str
    bot_href: str
    player: SeatResult
    match_id: int = 0
    """The match's number as every page and ``arena show`` give it (its store id)."""
    step: int | None = None
    """The replay step of the forfeit (1-based), when the match's log was read for it."""

    @property
    def fault(self) -> Fault:
        assert self.player.fault is not None
        return self.player.fault

    @property
    def step_href(self) -> str:
        """The match's page at the forfeit's replay step (its default step when the step is not known)."""
        return step_href(self.match_href, self.step)


def downsample(points: Sequence[Any], limit: int = CHART_POINTS) -> tuple[Any, ...]:
    """At most ``limit`` points, evenly spaced, always keeping the first and the last.

    >>> downsample(list(range(10)), 4)
    (0, 3, 6, 9)
    """
    if len(points) <= limit:
        return tuple(points)
    step = (len(points) - 1) / (limit - 1)
    return tuple(points[round(i * step)] for i in range(limit))


def standing_rows(snap: Snapshot) -> list[StandingRow]:
    """The rows of the standings (made once per snapshot: the tournament page and every bot page show them)."""
    if snap.standing_cache is None:
        snap.standing_cache = _standing_rows(snap)
    return snap.standing_cache


def _standing_rows(snap: Snapshot) -> list[StandingRow]:
    order = [line.bot_id for line in snap.standings]
    test = PairTest.stored(snap.config)
    labels, above = snap.sure.shared_ranks(order, test), snap.sure.p_above_next(order)
    spans = snap.sure.tie_groups(order, test)
    shared = snap.shared_wins
    intervals = {line.bot: (line.rank_low, line.rank_high) for line in snap.sure.bots}
    rows = []
    for rank, line in enumerate(snap.standings, 1):
        bot = snap.bot_by_id[line.bot_id]
        rows.append(StandingRow(rank, line.name, bot_href(snap.slug, bot.slug), line.rating.conservative,
                                line.rating.mu, line.rating.sigma, line.matches, line.wins, line.mean_place,
                                line.points_per_round, line.declares_ok, line.declares_failed,
                                dict(sorted(line.faults.items())), labels.get(line.bot_id, str(rank)),
                                above.get(line.bot_id), shared[line.bot_id], line.active, line.strength,
                                spans.get(line.bot_id, (rank, rank)), intervals.get(line.bot_id)))
    return rows


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
    for the replay step of each forfeit (each log once a snapshot: :attr:`Snapshot.forfeit_cache`), so that every
    table of faults links each to its step."""
    positions: list[int] = []
    for position, seat_bot in reversed(snap.faulted):
        if bot_id in (None, seat_bot) and (not positions or positions[-1] != position):
            positions.append(position)
            if len(positions) == limit:
                break  # a match with a fault gives at least one row
    found = []
    for match in snap.matches.fetch(positions):
        if steps and match.id not in snap.forfeit_cache:
            view = match_view(snap, match)[0]
            snap.forfeit_cache[match.id] = {} if view is None else view.forfeits
        where = snap.forfeit_cache[match.id] if steps else {}
        for seat, seat_bot, result in seated(match):
            if result is not None and result.fault is not None and bot_id in (None, seat_bot):
                found.append(FaultRow(match.idx, match_href(snap.slug, match.id), snap.bot_link(seat_bot)[1], result,
                                      match.id, where.get(seat)))
    return found[:limit]


def standing_of(snap: Snapshot, bot_id: int) -> int | None:
    """Where the bot is in :attr:`Snapshot.standings` (and in :func:`standing_rows`), None if it is not: found in a
    map made once, since each of a big field's thousand bot pages asks."""
    if snap.place_cache is None:
        snap.place_cache = {line.bot_id: i for i, line in enumerate(snap.standings)}
    return snap.place_cache.get(bot_id)


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


# -- home ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TournamentSummary:
    name: str
    href: str | None
    """None when this build does not include the tournament and no earlier build wrote it."""
    created_at: str
    finished_at: str | None
    bots: int
    matches_total: int
    matches_done: int
    leader: str | None
    leader_href: str | None
    live: Live | None = None


@dataclass(frozen=True)
class HomePage:
    tournaments: list[TournamentSummary]
    crumbs: tuple[Crumb, ...] = (Crumb("Home", None),)
    live: Live | None = None
    """Set when a tournament on it is live: the home page then reloads itself too."""


def home_page(store: Store, linked: Iterable[str] | None = None,
              read: Mapping[int, Snapshot] | None = None) -> HomePage:
    """Every tournament in the store, newest first; ``linked`` (slugs) limits which get a link; ``read`` (by
    tournament id) the snapshots already read, whose standings are not read again."""
    allowed = None if linked is None else set(linked)
    summaries = []
    for row in reversed(store.tournaments()):
        tid = row["id"]
        tslug = slug(row["name"], tid, "t")
        counts = store.status_counts(tid)
        table = read[tid].standings if read is not None and tid in read else read_standings(store, tid)
        leader = table[0] if table and table[0].matches else None
        leader_bot = None if leader is None else slug(leader.name, leader.bot_id, "b")
        linked_here = allowed is None or tslug in allowed
        summaries.append(TournamentSummary(
            row["name"], tournament_href(tslug) if linked_here else None, row["created_at"], row["finished_at"],
            len(table), sum(counts.values()), counts.get("done", 0),
            None if leader is None else leader.name,
            None if leader_bot is None or not linked_here else bot_href(tslug, leader_bot),
            read[tid].live if read is not None and tid in read else None))
    live = next((summary.live for summary in summaries if summary.live is not None), None)
    return HomePage(summaries, live=None if live is None else live.uncounted())


# -- tournament -------------------------------------------------------------------------------------------------------


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


def duel(snap: Snapshot, a: int, b: int) -> Duel | None:
    """Bot ``a`` against bot ``b``, None if they never shared a match."""
    above, shared = snap.head_to_head.get((a, b), (0, 0))
    below, _ = snap.head_to_head.get((b, a), (0, 0))
    return Duel(above, below, shared) if shared else None


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
    """A field bigger than :data:`SMALL_FIELD`: the pages of its standings, this page the first."""
    standings_index: str | None = None
    """A field bigger than :data:`SMALL_FIELD`: what its standings' filter searches (:func:`standings_index`)."""
    top: int | None = None
    """A field bigger than :data:`SMALL_FIELD`: the head-to-head and the rating chart show only its top ``top``."""


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


def rating_scale(rows: Sequence[StandingRow]) -> tuple[float, float]:
    if not rows:
        return (0.0, 1.0)
    low = min(r.mu - 3 * r.sigma for r in rows)
    high = max(r.mu + 3 * r.sigma for r in rows)
    return (low, high) if high > low else (low - 1, high + 1)


def head_to_head(snap: Snapshot, order: Sequence[int]) -> HeadToHead:
    bots = [snap.bot_link(bot_id) for bot_id in order]
    cells = [[None if a == b else duel(snap, a, b) for b in order] for a in order]
    return HeadToHead(bots, cells)


def big_field(snap: Snapshot) -> bool:
    """Whether the field is too big to show whole on one page (:data:`SMALL_FIELD`)."""
    return len(snap.bots) > SMALL_FIELD


def standings_pages(snap: Snapshot) -> list[list[StandingRow]]:
    """The standings cut into pages of :data:`STANDINGS_PER_PAGE` (one page, all of them, for a small field)."""
    rows = standing_rows(snap)
    if not big_field(snap):
        return [rows]
    return [rows[start:start + STANDINGS_PER_PAGE] for start in range(0, len(rows), STANDINGS_PER_PAGE)] or [[]]


def standings_pager(snap: Snapshot, page: int) -> Pager:
    count = len(standings_pages(snap))
    return pager(page, [standings_href(snap.slug, n) for n in range(1, count + 1)])


def standings_page(snap: Snapshot, page: int) -> StandingsPage:
    """Page ``page`` (from 2) of a big field's standings."""
    rows = standings_pages(snap)[page - 1]
    return StandingsPage(snap.name, snap.slug, rows, rating_scale(standing_rows(snap)), len(snap.standings),
                         standings_pager(snap, page), standings_index_href(snap.slug),
                         tournament_crumbs(snap, Crumb(f"standings page {page}", None)),
                         standings_href(snap.slug, page), bool(snap.config.get("stop")),
                         None if snap.live is None else snap.live.uncounted())


def standings_index(snap: Snapshot) -> dict[str, Any]:
    """Every bot of the standings in their order as the filter of a big field's standings searches them: its
    shown rank, name and page slug (the standings page it is on follows from its position), and its 95% rank
    interval (best, worst; nulls without one), which its own page shows from here (:attr:`BotPage.ranks_href`)."""
    rows = standing_rows(snap)
    return {"per_page": STANDINGS_PER_PAGE,
            "bots": [[row.shared_rank, row.bot, snap.bot_by_id[line.bot_id].slug, *(row.rank95 or (None, None))]
                     for row, line in zip(rows, snap.standings)]}


def tournament_page(snap: Snapshot) -> TournamentPage:
    rows = standing_rows(snap)
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
        standings_index=standings_index_href(snap.slug) if big else None, top=len(top) if big else None)


def fault_pages(snap: Snapshot, order: Sequence[int]) -> tuple[tuple[str, str, int], ...]:
    """Each bot of ``order`` with faults: its name, its page of every fault and how many."""
    counts = Counter(bot for _, bot in snap.faulted)
    return tuple((snap.bot_by_id[bot].name, faults_href(snap.slug, snap.bot_by_id[bot].slug), counts[bot])
                 for bot in order if counts[bot])


# -- downloads --------------------------------------------------------------------------------------------------------


def results_href(tslug: str, kind: str) -> str:
    """A tournament's results to download: ``results.json`` (standings and matches), ``standings.csv``,
    ``matches.csv``."""
    return f"t/{tslug}/{kind}"


DOWNLOADS = ("results.json", "standings.csv", "matches.csv")


def results_json(snap: Snapshot, standings: list[dict[str, Any]]) -> dict[str, Any]:
    """The tournament's results as ``arena standings --json`` and ``arena matches --json`` give them, in one
    object (``standings``: what the first gives, made by the same function)."""
    return {"tournament": snap.name, "finished_at": snap.finished_at, "standings": standings,
            "matches": snap.match_list}


STANDINGS_CSV = ("rank", "shared_rank", "bot", "strength", "conservative", "mu", "sigma", "matches", "wins",
                 "mean_place", "points_per_round", "declares_ok", "declares_failed", "rank_interval_95",
                 "p_above_next", "tied", "faults", "active")
MATCHES_CSV = ("id", "index", "seed", "status", "rounds", "turns", "termination", "duration_s", "error", "seat",
               "bot", "place", "score", "fault")


def standings_csv(standings: Sequence[dict[str, Any]]) -> str:
    """The standings (each line as ``arena standings --json`` gives it) as CSV, a bot a row; a pair (the rank
    interval, the tied span) as ``low-high``, the faults as ``kind count`` joined by ``;``."""
    def cell(value: Any) -> Any:
        if isinstance(value, list):
            return "-".join(map(str, value))
        if isinstance(value, dict):
            return "; ".join(f"{key} {count}" for key, count in value.items())
        return "" if value is None else value
    return _csv(STANDINGS_CSV, ([cell(line.get(name)) for name in STANDINGS_CSV] for line in standings))


def matches_csv(matches: Sequence[dict[str, Any]]) -> str:
    """The matches (as ``arena matches --json`` gives them) as CSV, a seat a row: the match's fields repeated on
    each of its seats' rows."""
    rows = ([*("" if match[name] is None else match[name] for name in MATCHES_CSV[:9]),
             *("" if player[name] is None else player[name] for name in MATCHES_CSV[9:])]
            for match in matches for player in match["players"])
    return _csv(MATCHES_CSV, rows)


def _csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


# -- match lists ------------------------------------------------------------------------------------------------------


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
    bot's matches once every match on it is made (:class:`arena.site.render.LaterListings`)."""


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
    marks = stamp_keys(snap)
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
        inputs = (context(snap), pager(n, hrefs), len(snap.matches) if n == 1 else None, [marks[i] for i in shown],
                  [[marks[i] for i in members[deal]] for deal in deals])
        listings.append(Listing(hrefs[n - 1], inputs, partial(make, n), shown[-1] if shown else -1))
    return listings


def listing_spans(snap: Snapshot, per_page: int = MATCHES_PER_PAGE) -> list[range]:
    """The positions (in ``snap.matches``) on each page of the list of all matches."""
    return page_spans([stamp.group for stamp in snap.stamps], per_page)


def listing_page(snap: Snapshot, position: int) -> int:
    """The page (from 1) of the list of all matches that shows the match at ``position``."""
    if snap.page_cache is None:
        snap.page_cache = [n for n, span in enumerate(listing_spans(snap), 1) for _ in span]
    return snap.page_cache[position]


def match_list_pages(snap: Snapshot, per_page: int = MATCHES_PER_PAGE) -> list[MatchListPage]:
    """The tournament's matches in schedule order, ``per_page`` a page."""
    return [listing.make() for listing in match_listings(snap, per_page)]


# -- the match index ----------------------------------------------------------------------------------------------------

INDEX_FORMAT = 1


def match_index(snap: Snapshot) -> dict[str, Any]:
    """Every match of the tournament in a few tens of bytes each (:func:`index_of`): what the matches list and the
    bot pages filter in the browser (by bot, opponent, fault and result) over the whole tournament rather than
    one page of it."""
    return index_of([(bot.id, bot.name, bot.slug) for bot in snap.bots], snap.stamps, snap.matches.index_seats())


def index_of(bots: Sequence[tuple[int, str, str]], stamps: Sequence[MatchStamp],
             seats: Iterable[tuple[int, int, int, int, str | None]]) -> dict[str, Any]:
    """The match index of the matches ``stamps`` (schedule order) between ``bots`` (row id, name, page slug), their
    finished seats ``seats`` as :meth:`arena.store.Store.index_seats` reads them.

    Made small for a league of a thousand bots and a hundred thousand matches: each name and fault reason once, in
    ``bots`` (with ``slugs``, their pages' directories) and ``reasons``; each match (``m``, schedule order) an array
    ``[id step, group step, [bot, ...], [place, ...], [score, ...], [fault, ...]]`` whose id and deal group are
    the difference to the previous match's (mostly 1, and 0 or 1), bots are indices into ``bots`` in seat order,
    and faults (left out when no seat faulted) are per seat 0, or 1 + an index into ``reasons``. A match not done
    is ``[id step, group step, [bot, ...], status]``.

    >>> from arena.store import MatchStamp
    >>> stamps = [MatchStamp(7, 0, 1, 0, "done", 1, None, "x", (3, 4), None),
    ...           MatchStamp(8, 1, 1, 0, "pending", 0, None, None, (4, 3), None)]
    >>> index_of([(3, "a", "a"), (4, "b<", "_b4-b")], stamps, [(7, 3, 2, 40, "crash.exit"), (7, 4, 1, 5, None)])
    {'v': 1, 'bots': ['a', 'b<'], 'slugs': ['a', '_b4-b'], 'reasons': ['crash.exit'], 'm': [[7, 0, [0, 1], [2, 1], [40, 5], [1, 0]], [1, 0, [1, 0], 'pending']]}
    """
    number = {bot_id: i for i, (bot_id, _, _) in enumerate(bots)}
    by_match: dict[int, list[tuple[int, int, int, int, str | None]]] = defaultdict(list)
    for seat in seats:
        by_match[seat[0]].append(seat)
    reasons: dict[str, int] = {}
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
            if any(s[4] for s in mine):
                row.append([0 if s[4] is None else 1 + reasons.setdefault(s[4], len(reasons)) for s in mine])
        rows.append(row)
    return {"v": INDEX_FORMAT, "bots": [name for _, name, _ in bots], "slugs": [bslug for _, _, bslug in bots],
            "reasons": list(reasons), "m": rows}


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
    return (context(snap), stamp_keys(snap))


# -- bots ---------------------------------------------------------------------------------------------------------------


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
    """The first page of its matches; None in the page's key (:func:`arena.site.render.tournament_pages` keys it
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


def played_by(snap: Snapshot, bot_id: int) -> list[int]:
    """The positions in ``snap.matches`` of the bot's matches, all bots' found in one pass (a pass per bot was a
    thousand passes over a hundred thousand matches in a big league)."""
    if snap.played_cache is None:
        played: dict[int, list[int]] = defaultdict(list)
        for position, match in enumerate(snap.stamps):
            for bot in dict.fromkeys(match.bot_ids):
                played[bot].append(position)
        snap.played_cache = dict(played)
    return snap.played_cache.get(bot_id, [])


def bot_listings(snap: Snapshot, bot_id: int, per_page: int = MATCHES_PER_PAGE) -> list[Listing]:
    """The pages of the bot's matches (the first is on the bot's own page), each row with the bot's place."""
    bot = snap.bot_by_id[bot_id]
    played = played_by(snap, bot_id)
    marks = stamp_keys(snap)
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

    return [Listing(hrefs[n - 1], (context(snap), bot_id, pager(n, hrefs), len(played) if n == 1 else None,
                                   [marks[i] for i in pages[n - 1]]), partial(make, n),
                    pages[n - 1][-1] if pages[n - 1] else -1)
            for n in range(1, count + 1)]


def bot_rows(snap: Snapshot, positions: Sequence[int], bot_id: int) -> list[MatchListRow]:
    """The rows of the matches at ``positions`` on a page of the bot's matches: from :attr:`Snapshot.row_html`
    where it has them, the others from their matches, read (those no longer in the store are left out)."""
    given = {p: row for p in positions if (row := snap.row_html.get(p)) and row.match_id == snap.stamps[p].id}
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


def seats_of(snap: Snapshot) -> int:
    """The most seats a match of the tournament has, found once (every bot's page has a row per seat)."""
    if snap.seats_cache is None:
        snap.seats_cache = max((len(m.bot_ids) for m in snap.stamps), default=0)
    return snap.seats_cache


def own_standing(row: StandingRow) -> StandingRow:
    """A bot's line of the standings without what moves when other bots play (its rank, shared rank, interval and
    fitted strength): what only its own matches change (its ratings are TrueSkill's, updated by its matches only)."""
    return replace(row, rank=0, shared_rank="", p_above_next=None, strength=None, tied=(0, 0), rank95=None)


def met_by(snap: Snapshot, bot_id: int) -> list[tuple[int, int, int]]:
    """Every (opponent, matches placed above it, matches shared) of ``bot_id`` that it met, all bots' found in one
    pass over the head-to-head counts (a pass over the field per bot was a million look-ups in a big league)."""
    if snap.met_cache is None:
        met: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        for (a, b), (above, shared) in snap.head_to_head.items():
            if shared:
                met[a].append((b, above, shared))
        snap.met_cache = dict(met)
    return snap.met_cache.get(bot_id, [])


def bot_page(snap: Snapshot, bot_id: int, matches: MatchListPage | None, think: Tally | None = None) -> BotPage:
    """The bot's page, with ``matches`` (the first page of its :func:`bot_listings`) and its ``think`` times. In a
    big field it shows only what its own matches make (:attr:`BotPage.ranks_href`), and lists the opponents it met,
    most matches shared first (the field's order would change with every match any of them plays)."""
    bot = snap.bot_by_id[bot_id]
    place = standing_of(snap, bot_id)
    if place is None:
        raise KeyError(f"bot {bot.name!r} is not in the standings of {snap.name!r}")
    standing = standing_rows(snap)[place]
    points = snap.history.get(bot_id, [])
    series = Series(bot.name, downsample([(idx, r.mu) for idx, r in points]),
                    downsample([(idx, r.mu - 3 * r.sigma, r.mu + 3 * r.sigma) for idx, r in points]))
    players = seats_of(snap)
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
        opponents.append(Opponent(name, href, above, below, shared, filtered_href(snap, bot.name, name)))
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


# -- a bot's faults ---------------------------------------------------------------------------------------------------

FAULT_HISTOGRAM_BARS = 20
"""At most this many bars in a faults page's histogram by round: rounds are put together in equal spans past it."""


@dataclass(frozen=True)
class FaultGroup:
    """A bot's faults with the same reason and detail (39 crashes that all "exited with status 1"), latest first:
    listed once, with how many and where each happened."""

    faults: tuple[FaultRow, ...]

    @property
    def latest(self) -> FaultRow:
        return self.faults[0]


@dataclass(frozen=True)
class RoundBar:
    """A bar of a faults histogram: the faults that happened in rounds ``low`` to ``high``."""

    low: int
    high: int
    count: int


@dataclass(frozen=True)
class FaultsPage:
    """Every fault of one bot: a summary first (counts per reason code, the first and the latest, a histogram by
    round), then the faults grouped by reason and detail, each linked to the replay step where it happened."""

    name: str
    bot_href: str
    path: str
    count: int
    reasons: tuple[tuple[str, str, int], ...]
    """(kind, reason code, how many), most first."""
    first: FaultRow
    latest: FaultRow
    by_round: tuple[RoundBar, ...]
    groups: tuple[FaultGroup, ...]
    """Most faults first (then the latest first)."""
    crumbs: tuple[Crumb, ...]


def faulted_by(snap: Snapshot, bot_id: int) -> list[int]:
    """The positions in ``snap.matches`` of the finished matches in which the bot faulted, in schedule order."""
    return [position for position, seat_bot in snap.faulted if seat_bot == bot_id]


def faults_page_inputs(snap: Snapshot, bot_id: int) -> tuple[Any, ...]:
    """What a bot's faults page is made from, cheap to make: its matches' stamps (the page reads their logs for
    the replay steps only when it is made)."""
    marks = stamp_keys(snap)
    return (context(snap), bot_id, [marks[position] for position in faulted_by(snap, bot_id)])


def round_bars(rounds: Sequence[int], most: int = FAULT_HISTOGRAM_BARS) -> tuple[RoundBar, ...]:
    """How many of ``rounds`` fall in each round from 1 to the last, in at most ``most`` equal spans.

    >>> [(b.low, b.high, b.count) for b in round_bars([1, 3, 3])]
    [(1, 1, 1), (2, 2, 0), (3, 3, 2)]
    >>> [(b.low, b.high, b.count) for b in round_bars([1, 5, 9, 9], most=2)]
    [(1, 5, 2), (6, 10, 2)]
    """
    if not rounds:
        return ()
    last = max(max(rounds), 1)
    span = math.ceil(last / most)
    counts = Counter((max(r, 1) - 1) // span for r in rounds)
    return tuple(RoundBar(i * span + 1, (i + 1) * span, counts[i]) for i in range(math.ceil(last / span)))


def faults_page(snap: Snapshot, bot_id: int) -> FaultsPage | None:
    """The page of every fault of the bot, None when it has none."""
    bot = snap.bot_by_id[bot_id]
    rows = fault_rows(snap, bot_id, None, steps=True)
    if not rows:
        return None
    grouped: dict[tuple[str, str], list[FaultRow]] = defaultdict(list)
    for row in rows:
        grouped[(row.fault.reason.value, row.fault.detail)].append(row)
    reasons = Counter((row.fault.kind.value, row.fault.reason.value) for row in rows)
    crumbs = tournament_crumbs(snap, Crumb(bot.name, bot_href(snap.slug, bot.slug)), Crumb("Faults", None))
    return FaultsPage(
        bot.name, bot_href(snap.slug, bot.slug), faults_href(snap.slug, bot.slug), len(rows),
        tuple((kind, reason, count) for (kind, reason), count in
              sorted(reasons.items(), key=lambda item: (-item[1], item[0]))),
        rows[-1], rows[0], round_bars([row.fault.round for row in rows]),
        tuple(FaultGroup(tuple(group)) for group in sorted(grouped.values(), key=lambda g: -len(g))), crumbs)


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


@dataclass(frozen=True)
class MatchPlayer:
    """A seat on a match page: its bot, the link to the bot's page, and its result once the match is done."""

    seat: int
    bot: str
    href: str
    result: SeatResult | None
    out_round: int | None = None
    """The round it went out over the threshold, when its place was decided by elimination."""


@dataclass(frozen=True)
class MatchPage:
    tournament: str
    idx: int
    id: int
    seed: int | None
    """None while the match's group is sealed."""
    status: str
    rounds: int | None
    turns: int | None
    termination: Termination | None
    duration_s: float | None
    error: str | None
    threshold: int
    """The score above which a player is out."""
    players: list[MatchPlayer]
    """In seat order."""
    standings: list[MatchPlayer]
    """Best place first."""
    moves: list[MoveBlock]
    """The move list, a block per round (and one each for the match's start and end)."""
    replay_data: str | None
    """What replay.js steps through, as the JSON of the match's data file: the names and the engine events in
    the compact form of :func:`arena.site.replay.compact_events`. None without a log."""
    log_path: str | None
    log_found: bool
    prev_href: str | None
    next_href: str | None
    rules_href: str
    """The tournament page's rules and limits."""
    how_href: str
    """The tournament page's "how Least Score works" (kept there, not repeated on thousands of match pages)."""
    crumbs: tuple[Crumb, ...]
    log_corrupt: bool = False
    """The log is there but cannot be read (cut off, garbled): the page says so rather than "missing"."""
    data_href: str | None = None
    """The match's data file (:func:`match_data_href`), when it has a replay."""
    vs: str = ""
    """The players in seat order, ``a v b v c``: in the page's title and heading."""
    fault_steps: dict[int, int] = field(default_factory=dict)
    """By seat, the replay step (1-based) of each forfeit the log holds."""
    think: tuple[Tally, ...] = ()
    """Each seat's think times (from the log; empty without one)."""
    log_href: str | None = None
    """The match's event log in the site (:func:`match_log_href`), when it has one."""
    sealed: bool = False
    """Its group can still be played: no seed, replay or log until it is over (docs/SECURITY.md)."""

    @property
    def summary(self) -> str:
        """The places in a line, best first (``1. a, 2. b, –. c``), for the page's description. Here rather than as
        a template loop: that loop's ``loop.last`` was a sixth of a match page's rendering."""
        return ", ".join(f"{'–' if p.result is None else p.result.place}. {p.bot}" for p in self.standings)

    @property
    def forfeits(self) -> bool:
        """Whether a seat forfeited (the result's caption then gives rule 8.6)."""
        return any(p.result is not None and p.result.fault is not None for p in self.players)

    @property
    def faulty(self) -> list[MatchPlayer]:
        """The seats that faulted, in seat order (a section each). Here rather than as a chain of the template's
        filters: that chain was a tenth of a match page's rendering, on every one of a league's 100,000."""
        return [p for p in self.players if p.result is not None and p.result.fault is not None]

    @property
    def talkers(self) -> list[MatchPlayer]:
        """The seats without a fault that wrote on stderr, in seat order."""
        return [p for p in self.players if p.result is not None and p.result.fault is None and p.result.stderr_tail]


def match_page(snap: Snapshot, position: int, log: LoadedLog | MatchView | None, corrupt: bool = False) -> MatchPage:
    """The page of ``snap.matches[position]``; ``log`` is its view as :func:`match_view` returns it (or its log
    as :func:`match_log` does), if found (``corrupt``: found, but unreadable)."""
    match = snap.matches[position]
    players = [MatchPlayer(seat, *snap.bot_link(bot_id), result, out_round(match, result))
               for seat, bot_id, result in seated(match)]
    names = [p.bot for p in players]
    view = view_for(log, names)
    replay_data = None
    faults: dict[int, Fault] = {}
    if match.result is not None:
        faults = {p.seat: p.fault for p in match.result.players if p.fault is not None}
    elif view is not None:
        faults = view.faults
    # Only the events that are not turns are narrated: the page shows a grid for the turns, and their sentences
    # (which replay.js writes itself) were most of the narrator's work. The other sentences do not depend on the
    # hands the narrator follows through the turns it is not shown.
    # A deal and a round's end get a short line of the page's own (fold_line): replay.js composes the narrator's
    # longer sentence for their steps from the data file, which has their numbers anyway.
    # Narrated one at a time (a few a match): nothing the narrator says of these depends on the events before.
    def line(event: dict[str, Any]) -> str:
        if event.get("type") in FOLD_LINES:
            return fold_line(event, names)
        return narrate([event], names, faults, card_text, show_hands=False)[0].text

    moves: list[MoveBlock] = []
    if view is not None:
        moves = move_blocks(view.blocks, names, line)
        shown: dict[str, Any] = {"names": names, "events": view.events, "think": view.think,
                                 "bank": view.bank_ms, "move": view.move_ms}
        if faults:  # the replay's last step says why each forfeited seat left: the reason code and its round
            shown["faults"] = {str(seat): [fault.reason.value, fault.round] for seat, fault in faults.items()}
        replay_data = json.dumps(shown, ensure_ascii=False, separators=(",", ":"))
    result = match.result
    prev_m = snap.stamps[position - 1] if position > 0 else None
    next_m = snap.stamps[position + 1] if position + 1 < len(snap.stamps) else None
    return MatchPage(
        tournament=snap.name, idx=match.idx, id=match.id, seed=match.public_seed, sealed=match.sealed,
        status=match.status,
        rounds=None if result is None else result.rounds, turns=None if result is None else result.turns,
        termination=None if result is None else result.termination,
        duration_s=None if result is None else result.duration_s, error=match.error,
        threshold=result.rules.threshold if result is not None else
        int(snap.config.get("rules", {}).get("threshold", Rules().threshold)), players=players,
        standings=sorted(players, key=lambda p: (p.result is None, 0 if p.result is None else p.result.place, p.seat)),
        moves=moves,
        replay_data=replay_data,
        vs=" v ".join(names), data_href=None if view is None else match_data_href(snap.slug, match.id),
        log_path=None if match.log_path is None else str(match.log_path),
        log_found=view is not None, log_corrupt=corrupt or (log is not None and view is None),
        fault_steps={} if view is None else view.forfeits,
        think=tuple(view.tallies_of(match.id)) if view is not None else (),
        log_href=None if view is None else match_log_href(snap.slug, match.id),
        prev_href=None if prev_m is None else match_href(snap.slug, prev_m.id),
        next_href=None if next_m is None else match_href(snap.slug, next_m.id),
        rules_href=tournament_href(snap.slug) + "#rules",
        how_href=tournament_href(snap.slug) + "#how",
        crumbs=tournament_crumbs(snap, Crumb("Matches", matches_href(snap.slug, listing_page(snap, position))),
                                 Crumb(f"Match #{match.id}", None)))
