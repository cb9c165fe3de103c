"""What each page of the results site shows, as plain dataclasses read from the store (and the match logs).

Nothing here renders or writes: :mod:`arena.site.render` turns these into HTML. A tournament is read once into a
:class:`Snapshot` (a handful of bulk queries, whatever the number of matches), and every page of that tournament is
a pure function of the snapshot, so building 10,000 match pages does not cost 10,000 round trips to SQLite.

Links are site-relative paths (``t/demo/index.html``); a page turns them into links relative to itself, so the
site works from ``file://`` and under any prefix of a static host. File names come from bot and tournament names
only when those are slugs: anything else a store may hold gets a name built from its row id instead.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.ratings import Rating
from arena.store import Standing, Store

SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
MATCHES_PER_PAGE = 50
FAULTS_SHOWN = 50
CHART_POINTS = 300
"""At most this many points per line of a rating chart: enough to see the shape, small enough to load fast."""


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


def match_href(tslug: str, idx: int) -> str:
    return f"t/{tslug}/matches/{idx}.html"


def bot_href(tslug: str, bslug: str, page: int = 1) -> str:
    return f"t/{tslug}/bots/{bslug}/index.html" if page == 1 else f"t/{tslug}/bots/{bslug}/matches-{page}.html"


@dataclass(frozen=True)
class Crumb:
    label: str
    href: str | None  # None: the current page


@dataclass(frozen=True)
class Pager:
    page: int
    pages: int
    hrefs: tuple[str, ...]
    """The href of every page, first to last."""

    @property
    def prev(self) -> str | None:
        return self.hrefs[self.page - 2] if self.page > 1 else None

    @property
    def next(self) -> str | None:
        return self.hrefs[self.page] if self.page < self.pages else None

    def window(self, radius: int = 3) -> list[int | None]:
        """Page numbers to show: the first, the last and those near the current one; None marks a gap."""
        keep = {1, self.pages, *range(self.page - radius, self.page + radius + 1)}
        shown: list[int | None] = []
        for number in range(1, self.pages + 1):
            if number in keep:
                shown.append(number)
            elif shown and shown[-1] is not None:
                shown.append(None)
        return shown


def pages_of(count: int, per_page: int) -> int:
    return max(1, math.ceil(count / per_page))


# -- the snapshot: one tournament read from the store ----------------------------------------------------------------


@dataclass(frozen=True)
class BotInfo:
    id: int
    slot: int
    name: str
    slug: str
    files_hash: str
    manifest: dict[str, Any]


@dataclass(frozen=True)
class SeatRow:
    seat: int
    bot_id: int
    place: int | None
    score: int | None
    fault_kind: str | None
    fault_detail: str | None
    fault_round: int | None
    stderr_tail: str | None
    rounds: int | None
    turns: int | None
    points: int | None
    declares_ok: int | None
    declares_failed: int | None


@dataclass(frozen=True)
class MatchRow:
    id: int
    idx: int
    seed: int
    status: str
    attempts: int
    rounds: int | None
    turns: int | None
    termination: str | None
    duration_s: float | None
    log_path: str | None
    error: str | None
    finished_at: str | None
    seats: tuple[SeatRow, ...]


@dataclass
class Snapshot:
    """Everything the pages of one tournament need, read in a few bulk queries."""

    id: int
    name: str
    slug: str
    config: dict[str, Any]
    created_at: str
    finished_at: str | None
    bots: list[BotInfo]
    matches: list[MatchRow]
    standings: list[Standing]
    head_to_head: dict[tuple[int, int], tuple[int, int]]
    history: dict[int, list[tuple[int, Rating]]]
    store_dir: Path
    bot_by_id: dict[int, BotInfo] = field(init=False)

    def __post_init__(self) -> None:
        self.bot_by_id = {bot.id: bot for bot in self.bots}

    def bot_link(self, bot_id: int) -> tuple[str, str]:
        bot = self.bot_by_id[bot_id]
        return bot.name, bot_href(self.slug, bot.slug)


def snapshot(store: Store, name: str) -> Snapshot:
    """Read tournament ``name`` (KeyError if the store has none by that name)."""
    row = store.tournament(name)
    if row is None:
        raise KeyError(name)
    tid = row["id"]
    config = json.loads(row["config"])
    bots = [BotInfo(b["id"], b["slot"], b["name"], slug(b["name"], b["id"], "b"), b["files_hash"],
                    json.loads(b["manifest"])) for b in store.bots(tid)]
    seats: dict[int, list[SeatRow]] = defaultdict(list)
    for s in store.seat_rows(tid):
        seats[s["match_id"]].append(SeatRow(
            s["seat"], s["bot_id"], s["place"], s["score"], s["fault_kind"], s["fault_detail"], s["fault_round"],
            s["stderr_tail"], s["rounds"], s["turns"], s["points"], s["declares_ok"], s["declares_failed"]))
    matches = [MatchRow(m["id"], m["idx"], m["seed"], m["status"], m["attempts"], m["rounds"], m["turns"],
                        m["termination"], m["duration_s"], m["log_path"], m["error"], m["finished_at"],
                        tuple(seats[m["id"]]))
               for m in store.match_rows(tid)]
    return Snapshot(
        id=tid, name=row["name"], slug=slug(row["name"], tid, "t"), config=config, created_at=row["created_at"],
        finished_at=row["finished_at"], bots=bots, matches=matches,
        standings=store.standings(tid), head_to_head=store.head_to_head(tid),
        history=store.rating_history(tid), store_dir=store.path.parent)


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
    fault: str | None


@dataclass(frozen=True)
class MatchListRow:
    idx: int
    id: int
    href: str
    status: str
    rounds: int | None
    turns: int | None
    termination: str | None
    players: tuple[PlayerCell, ...]
    """Best place first; seats without a place (a match not played) in seat order."""
    place_of: int | None = None
    """On a bot's pages: the place that bot took."""


@dataclass(frozen=True)
class FaultRow:
    match_idx: int
    match_href: str
    bot: str
    bot_href: str
    seat: int
    kind: str
    round: int | None
    detail: str
    stderr_tail: str


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
    rows = []
    for rank, line in enumerate(snap.standings, 1):
        bot = snap.bot_by_id[line.bot_id]
        rows.append(StandingRow(rank, line.name, bot_href(snap.slug, bot.slug), line.rating.conservative,
                                line.rating.mu, line.rating.sigma, line.matches, line.wins, line.mean_place,
                                line.points_per_round, line.declares_ok, line.declares_failed,
                                dict(sorted(line.faults.items()))))
    return rows


def match_list_row(snap: Snapshot, match: MatchRow, for_bot: int | None = None) -> MatchListRow:
    players = []
    place_of = None
    for s in sorted(match.seats, key=lambda s: (s.place is None, s.place or 0, s.seat)):
        name, href = snap.bot_link(s.bot_id)
        players.append(PlayerCell(s.seat, name, href, s.place, s.score, s.fault_kind))
        if s.bot_id == for_bot:
            place_of = s.place
    return MatchListRow(match.idx, match.id, match_href(snap.slug, match.idx), match.status, match.rounds,
                        match.turns, match.termination, tuple(players), place_of)


def fault_rows(snap: Snapshot, bot_id: int | None = None) -> list[FaultRow]:
    """Every fault of the tournament (or of one bot), latest match first."""
    found = []
    for match in reversed(snap.matches):
        for s in match.seats:
            if s.fault_kind and (bot_id is None or s.bot_id == bot_id):
                name, href = snap.bot_link(s.bot_id)
                found.append(FaultRow(match.idx, match_href(snap.slug, match.idx), name, href, s.seat,
                                      s.fault_kind, s.fault_round, s.fault_detail or "", s.stderr_tail or ""))
    return found


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


@dataclass(frozen=True)
class HomePage:
    tournaments: list[TournamentSummary]
    crumbs: tuple[Crumb, ...] = (Crumb("Home", None),)


def home_page(store: Store, linked: Iterable[str] | None = None) -> HomePage:
    """Every tournament in the store, newest first; ``linked`` (slugs) limits which get a link."""
    allowed = None if linked is None else set(linked)
    summaries = []
    for row in reversed(store.tournaments()):
        tid = row["id"]
        tslug = slug(row["name"], tid, "t")
        counts = store.status_counts(tid)
        table = store.standings(tid)
        leader = table[0] if table and table[0].matches else None
        leader_bot = None if leader is None else slug(leader.name, leader.bot_id, "b")
        linked_here = allowed is None or tslug in allowed
        summaries.append(TournamentSummary(
            row["name"], tournament_href(tslug) if linked_here else None, row["created_at"], row["finished_at"],
            len(table), sum(counts.values()), counts.get("done", 0),
            None if leader is None else leader.name,
            None if leader_bot is None or not linked_here else bot_href(tslug, leader_bot)))
    return HomePage(summaries)


# -- tournament -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeadToHead:
    """cells[i][j] = (times bot i placed above bot j, matches they shared), None on the diagonal or if never met."""

    bots: list[tuple[str, str]]
    cells: list[list[tuple[int, int] | None]]


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


def rating_scale(rows: Sequence[StandingRow]) -> tuple[float, float]:
    if not rows:
        return (0.0, 1.0)
    low = min(r.mu - 3 * r.sigma for r in rows)
    high = max(r.mu + 3 * r.sigma for r in rows)
    return (low, high) if high > low else (low - 1, high + 1)


def head_to_head(snap: Snapshot, order: Sequence[int]) -> HeadToHead:
    bots = [snap.bot_link(bot_id) for bot_id in order]
    cells = [[None if a == b else snap.head_to_head.get((a, b)) for b in order] for a in order]
    return HeadToHead(bots, cells)


def tournament_page(snap: Snapshot) -> TournamentPage:
    rows = standing_rows(snap)
    order = [line.bot_id for line in snap.standings]
    history = [Series(snap.bot_by_id[bot_id].name,
                      downsample([(idx, r.conservative) for idx, r in snap.history.get(bot_id, [])]))
               for bot_id in order]
    config = snap.config
    limits = {**config.get("limits", {}), **config.get("sandbox_limits", {})}
    settings = {key: value for key, value in config.items()
                if key not in ("rules", "limits", "sandbox_limits", "bots", "name")}
    faults = fault_rows(snap)
    statuses = Counter(m.status for m in snap.matches)
    return TournamentPage(
        name=snap.name, slug=snap.slug, created_at=snap.created_at, finished_at=snap.finished_at,
        standings=rows, scale=rating_scale(rows), head_to_head=head_to_head(snap, order), history=history,
        settings=settings, rules=dict(config.get("rules", {})), limits=limits,
        fault_totals=dict(sorted(Counter(f.kind for f in faults).items())), faults=faults[:FAULTS_SHOWN],
        fault_count=len(faults), matches_total=len(snap.matches), matches_done=statuses["done"],
        matches_failed=statuses["failed"], matches_href=matches_href(snap.slug),
        crumbs=(Crumb("Home", "index.html"), Crumb(snap.name, None)))


# -- match lists ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MatchListPage:
    title: str
    rows: list[MatchListRow]
    pager: Pager
    total: int
    crumbs: tuple[Crumb, ...]
    path: str
    for_bot: str | None = None
    """The bot whose matches these are (each row then shows its place), or None for all matches."""


def match_list_pages(snap: Snapshot, per_page: int = MATCHES_PER_PAGE) -> list[MatchListPage]:
    """The tournament's matches in schedule order, ``per_page`` a page."""
    count = pages_of(len(snap.matches), per_page)
    hrefs = tuple(matches_href(snap.slug, n) for n in range(1, count + 1))
    return [MatchListPage(
        f"All matches, page {n} of {count}", [match_list_row(snap, m) for m in
                                              snap.matches[(n - 1) * per_page:n * per_page]],
        Pager(n, count, hrefs), len(snap.matches),
        tournament_crumbs(snap, Crumb("Matches", hrefs[0] if n > 1 else None),
                          *((Crumb(f"page {n}", None),) if n > 1 else ())), hrefs[n - 1])
        for n in range(1, count + 1)]


# -- bots ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeatResult:
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


@dataclass(frozen=True)
class BotPage:
    name: str
    slug: str
    rank: int
    standing: StandingRow
    files_hash: str
    manifest: dict[str, Any]
    history: list[Series]
    seats: list[SeatResult]
    opponents: list[Opponent]
    matches: MatchListPage
    faults: list[FaultRow]
    fault_count: int
    crumbs: tuple[Crumb, ...]


def bot_pages(snap: Snapshot, bot_id: int, per_page: int = MATCHES_PER_PAGE) -> tuple[BotPage, list[MatchListPage]]:
    """The bot's page (with the first page of its matches) and the further pages of its matches."""
    bot = snap.bot_by_id[bot_id]
    rows = standing_rows(snap)
    standing = next(row for row in rows if row.bot == bot.name)
    points = snap.history.get(bot_id, [])
    series = Series(bot.name, downsample([(idx, r.mu) for idx, r in points]),
                    downsample([(idx, r.mu - 3 * r.sigma, r.mu + 3 * r.sigma) for idx, r in points]))
    per_seat: dict[int, list[int]] = defaultdict(list)
    played = []
    for match in snap.matches:
        for s in match.seats:
            if s.bot_id == bot_id:
                played.append(match)
                if match.status == "done" and s.place is not None:
                    per_seat[s.seat].append(s.place)
    players = max((len(m.seats) for m in snap.matches), default=0)
    seats = [SeatResult(seat, len(places := per_seat.get(seat, [])), places.count(1),
                        sum(places) / len(places) if places else None) for seat in range(players)]
    opponents = []
    for other in snap.standings:
        if other.bot_id == bot_id:
            continue
        above, shared = snap.head_to_head.get((bot_id, other.bot_id), (0, 0))
        below, _ = snap.head_to_head.get((other.bot_id, bot_id), (0, 0))
        name, href = snap.bot_link(other.bot_id)
        opponents.append(Opponent(name, href, above, below, shared))
    faults = fault_rows(snap, bot_id)
    count = pages_of(len(played), per_page)
    hrefs = tuple(bot_href(snap.slug, bot.slug, n) for n in range(1, count + 1))
    listings = []
    for n in range(1, count + 1):
        crumbs = tournament_crumbs(snap, Crumb(bot.name, hrefs[0] if n > 1 else None),
                                   *((Crumb(f"matches page {n}", None),) if n > 1 else ()))
        listings.append(MatchListPage(
            f"Matches of {bot.name}, page {n} of {count}",
            [match_list_row(snap, m, bot_id) for m in played[(n - 1) * per_page:n * per_page]],
            Pager(n, count, hrefs), len(played), crumbs, hrefs[n - 1], for_bot=bot.name))
    page = BotPage(bot.name, bot.slug, standing.rank, standing, bot.files_hash, bot.manifest, [series], seats,
                   opponents, listings[0], faults[:FAULTS_SHOWN], len(faults), listings[0].crumbs)
    return page, listings[1:]


# -- matches ------------------------------------------------------------------------------------------------------------


@dataclass
class LogView:
    """What the site uses of a match log: the header, the engine events (parsed, and as their JSON text), the
    faults and the result."""

    path: Path
    header: dict[str, Any]
    events: list[dict[str, Any]]
    faults: list[dict[str, Any]]
    result: dict[str, Any] | None
    events_json: list[str] = field(default_factory=list)
    """Each event as JSON text, ready to embed in a page without encoding it again."""


EVENT_PREFIX = b'{"t":"event","event":'
"""How :class:`arena.matchlog.MatchLog` starts an event line: the event's own JSON follows, then one ``}``."""


def read_log(path: Path) -> LogView | None:
    """The log at ``path``, or None when it is missing or unreadable (the page then says so).

    Faster than :func:`arena.matchlog.load` for this purpose: the file is decompressed in one call, the protocol
    messages (most of a log from a real match) are skipped by their prefix without being parsed, and each event's
    JSON text is kept as well, since a match page embeds every event.
    """
    header: dict[str, Any] | None = None
    texts: list[str] = []
    faults: list[dict[str, Any]] = []
    result = None
    try:
        for raw in gzip.decompress(path.read_bytes()).splitlines():
            if raw.startswith(EVENT_PREFIX) and raw.endswith(b"}"):
                texts.append(raw[len(EVENT_PREFIX):-1].decode())
                continue
            if raw.startswith((b'{"t":"send"', b'{"t":"recv"')) or not raw:
                continue
            record = json.loads(raw)
            kind = record.get("t")
            if kind == "header":
                header = record
            elif kind == "event":  # not our writer's layout: encode it ourselves
                texts.append(json.dumps(record["event"], separators=(",", ":"), ensure_ascii=False))
            elif kind == "fault":
                faults.append(record)
            elif kind == "result":
                result = record["result"]
        # One parse of all the events: hundreds of json.loads calls would cost more than the rest of the page.
        events = json.loads("[" + ",".join(texts) + "]")
    except (OSError, EOFError, ValueError, KeyError, AttributeError, TypeError):
        return None
    if header is None:
        return None
    return LogView(path, header, events, faults, result, texts)


def find_log(snap: Snapshot, match: MatchRow) -> Path | None:
    """The match's log: where the store says (relative paths are tried as given, then beside the store), else
    where the runner puts logs beside the store."""
    candidates = []
    if match.log_path:
        stored = Path(match.log_path)
        candidates += [stored] if stored.is_absolute() else [stored, snap.store_dir / stored]
    candidates.append(snap.store_dir / "logs" / snap.name / f"{match.idx:06d}.jsonl.gz")
    return next((path for path in candidates if path.is_file()), None)


@dataclass(frozen=True)
class MatchPlayer:
    seat: int
    bot: str
    href: str
    place: int | None
    score: int | None
    points: int | None
    declares_ok: int | None
    declares_failed: int | None
    fault_kind: str | None
    fault_detail: str | None
    fault_round: int | None
    stderr_tail: str


@dataclass(frozen=True)
class RoundRow:
    round: int
    reason: str
    declarer: str | None
    points: tuple[int | None, ...]
    """Per seat; None for a seat no longer in play."""
    scores: tuple[int, ...]
    totals: tuple[int | None, ...]
    eliminated: tuple[str, ...]


@dataclass(frozen=True)
class Move:
    """One line of the static move list: its kind (for styling) and the line itself."""

    kind: str
    round: int
    text: str


SUIT_SYMBOLS = {"C": "\u2663", "D": "\u2666", "H": "\u2665", "S": "\u2660"}


def card_text(code: str) -> str:
    """A card as people write it.

    >>> card_text("TH"), card_text("AS"), card_text("??")
    ('10\u2665', 'A\u2660', '??')
    """
    if len(code) == 2 and code[1] in SUIT_SYMBOLS:
        return ("10" if code[0] == "T" else code[0]) + SUIT_SYMBOLS[code[1]]
    return code


def cards_text(codes: Iterable[str]) -> str:
    return " ".join(card_text(code) for code in codes)


@dataclass(frozen=True)
class MatchPage:
    tournament: str
    idx: int
    id: int
    seed: int
    status: str
    rounds: int | None
    turns: int | None
    termination: str | None
    duration_s: float | None
    error: str | None
    players: list[MatchPlayer]
    """In seat order."""
    standings: list[MatchPlayer]
    """Best place first."""
    round_rows: list[RoundRow]
    moves: list[Move]
    replay_json: str | None
    """What replay.js steps through, as JSON: the names, the faults and the engine events. None without a log."""
    log_path: str | None
    log_found: bool
    prev_href: str | None
    next_href: str | None
    crumbs: tuple[Crumb, ...]
    log_corrupt: bool = False
    """The log is there but cannot be read (cut off, garbled): the page says so rather than "missing"."""


def _moves(events: Sequence[dict[str, Any]], names: Sequence[str], faults: Sequence[dict[str, Any]]) -> list[Move]:
    # Plain lines rather than structured items: a long match has hundreds, and one escaped string per line keeps
    # the match pages small and fast to render.
    fault_by_seat = {record.get("seat"): record for record in faults}
    moves: list[Move] = []
    round_ = 0
    for event in events:
        kind = event.get("type")
        if kind == "round_start":
            round_ = event["round"]
            moves.append(Move(kind, round_, f"Round {round_}: {names[event['starter']]} starts; "
                                            f"floor {cards_text(event['floor'])}"))
        elif kind == "play":
            took = (f"from the deck ({card_text(event['drew'])})" if event["take"] == "deck" and event.get("drew")
                    else "from the deck" if event["take"] == "deck" else f"{card_text(event['take'])} from the floor")
            moves.append(Move(kind, round_, f"{names[event['seat']]} throws {cards_text(event['discard'])}, "
                                            f"takes {took}"))
        elif kind == "declare":
            moves.append(Move(kind, round_, f"{names[event['seat']]} declares"))
        elif kind == "reshuffle":
            moves.append(Move(kind, round_, f"deck empty: {event['deck_size']} dead cards reshuffled"))
        elif kind == "forfeit":
            fault = fault_by_seat.get(event["seat"])
            detail = f"{fault['kind']}: {fault['detail']}" if fault and "kind" in fault else event.get("reason", "")
            moves.append(Move(kind, round_, f"{names[event['seat']]} forfeits: {detail}"))
        elif kind == "round_end":
            who = "nobody (turn cap)" if event["declarer"] is None else names[event["declarer"]]
            scored = ", ".join(f"{names[seat]} {event['totals'][seat]} +{event['points'][seat]}"
                               for seat, hand in enumerate(event["hands"]) if hand)
            moves.append(Move(kind, round_, f"Round {round_} ends: {event['reason'].replace('_', ' ')}, declared by "
                                            f"{who}. Totals and points: {scored}"))
        elif kind == "match_end":
            order = sorted(range(len(names)), key=lambda seat: (event["places"][seat], seat))
            moves.append(Move(kind, round_, f"Match over ({event['termination'].replace('_', ' ')}): " + ", ".join(
                f"{event['places'][seat]}. {names[seat]} {event['scores'][seat]}" for seat in order)))
    return moves


def _round_rows(events: Sequence[dict[str, Any]], names: Sequence[str]) -> list[RoundRow]:
    rows = []
    for event in events:
        if event.get("type") != "round_end":
            continue
        in_play = [bool(hand) for hand in event["hands"]]
        rows.append(RoundRow(
            event["round"], event["reason"].replace("_", " "),
            None if event["declarer"] is None else names[event["declarer"]],
            tuple(p if live else None for p, live in zip(event["points"], in_play)),
            tuple(event["scores"]),
            tuple(t if live else None for t, live in zip(event["totals"], in_play)),
            tuple(names[seat] for seat in event["eliminated"])))
    return rows


def match_page(snap: Snapshot, position: int, log: LogView | None, corrupt: bool = False) -> MatchPage:
    """The page of ``snap.matches[position]``; ``log`` is its log as :func:`read_log` returns it, if found
    (``corrupt``: found, but unreadable)."""
    match = snap.matches[position]
    players = []
    for s in match.seats:
        name, href = snap.bot_link(s.bot_id)
        players.append(MatchPlayer(s.seat, name, href, s.place, s.score, s.points, s.declares_ok,
                                   s.declares_failed, s.fault_kind, s.fault_detail, s.fault_round,
                                   s.stderr_tail or ""))
    names = [p.bot for p in players]
    events = log.events if log is not None else []
    replay_json = None
    if log is not None:
        faults = [{k: f.get(k) for k in ("seat", "kind", "detail", "round")} for f in log.faults]
        # The events' text comes from the log as it is (parsing and re-encoding hundreds of events per page
        # would be most of the build's time); the page escapes what could close its script element.
        replay_json = (f'{{"names":{json.dumps(names, ensure_ascii=False)},'
                       f'"faults":{json.dumps(faults, ensure_ascii=False)},"events":[{",".join(log.events_json)}]}}')
    prev_m = snap.matches[position - 1] if position > 0 else None
    next_m = snap.matches[position + 1] if position + 1 < len(snap.matches) else None
    return MatchPage(
        tournament=snap.name, idx=match.idx, id=match.id, seed=match.seed, status=match.status,
        rounds=match.rounds, turns=match.turns, termination=match.termination, duration_s=match.duration_s,
        error=match.error, players=players,
        standings=sorted(players, key=lambda p: (p.place is None, p.place or 0, p.seat)),
        round_rows=_round_rows(events, names), moves=_moves(events, names, log.faults if log else []),
        replay_json=replay_json, log_path=match.log_path, log_found=log is not None, log_corrupt=corrupt,
        prev_href=None if prev_m is None else match_href(snap.slug, prev_m.idx),
        next_href=None if next_m is None else match_href(snap.slug, next_m.idx),
        crumbs=tournament_crumbs(snap, Crumb("Matches", matches_href(snap.slug, position // MATCHES_PER_PAGE + 1)),
                                 Crumb(f"Match #{match.idx}", None)))
