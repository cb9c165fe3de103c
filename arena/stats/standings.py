"""The standings of a run: its bots' totals, the Plackett-Luce fit that orders them, their confidence, the
TrueSkill ratings read back, and the standings as the CLI's and the site's JSON.

The statistics read the store only through its query methods (:class:`StoreReads`: plain rows and columns), so
the store does SQL and nothing else, and this room stays below it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from arena.stats.confidence import RESAMPLES, Confidence, GroupPlace, SeatColumns, confidence
from arena.stats.display import Shown, shown
from arena.stats.ranking import fit_seats
from arena.stats.ratings import RatedMatch, Rating


class StoreReads(Protocol):
    """What the standings read of a store (:class:`arena.store.Store`'s query methods)."""

    def bot_lines(self, tid: int) -> list[tuple[int, str, bool]]: ...
    def bot_totals(self, tid: int) -> list[tuple[Any, ...]]: ...
    def fault_counts(self, tid: int) -> list[tuple[Any, ...]]: ...
    def place_columns(self, tid: int, before_group: int | None = None) -> tuple[Sequence[int], ...]: ...
    def finished_places(self, tid: int) -> list[tuple[Any, ...]]: ...
    def ordered_places(self, tid: int, after: int = -1) -> list[tuple[Any, ...]]: ...
    def latest_ratings(self, tid: int) -> dict[int, tuple[float, float]]: ...
    def rating_rows(self, tid: int) -> list[tuple[Any, ...]]: ...
    def rating_prior(self, tid: int) -> tuple[float, float]: ...


@dataclass
class Standing:
    """One line of the standings table."""

    bot_id: int
    name: str
    rating: Rating
    matches: int = 0
    wins: int = 0
    place_sum: int = 0
    points: int = 0
    rounds: int = 0
    declares_ok: int = 0
    declares_failed: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    active: bool = True
    """False for a league's version that has left the field (its results stay)."""
    strength: float | None = None
    """The fitted Plackett-Luce log strength (arena/stats/ranking.py), the standings' order; None before a match."""
    rated: bool = True
    """False while no rating is stored for it (before its first match, or while a tournament whose ratings are
    worked out at its end is live): :attr:`rating` is then the prior, shown as "not yet rated"."""

    @property
    def mean_place(self) -> float | None:
        return self.place_sum / self.matches if self.matches else None

    @property
    def points_per_round(self) -> float | None:
        return self.points / self.rounds if self.rounds else None

    def to_dict(self, rank: int) -> dict[str, Any]:
        """The line as JSON; ``rank`` is its position, null for a league's version out of the field (not ranked)."""
        return {
            "rank": rank if self.active else None,
            "bot": self.name,
            "conservative": round(self.rating.conservative, 3) if self.rated else None,
            "mu": round(self.rating.mu, 3) if self.rated else None,
            "sigma": round(self.rating.sigma, 3) if self.rated else None,
            "rated": self.rated,
            "matches": self.matches,
            "wins": self.wins,
            "strength": None if self.strength is None else round(self.strength, 3),
            "mean_place": None if self.mean_place is None else round(self.mean_place, 3),
            "points_per_round": None if self.points_per_round is None else round(self.points_per_round, 3),
            "declares_ok": self.declares_ok,
            "declares_failed": self.declares_failed,
            "faults": dict(sorted(self.faults.items())),
            "active": self.active,
        }


# -- the store's rows as the statistics' values ----------------------------------------------------------------

def seat_columns(store: StoreReads, tid: int, before_group: int | None = None) -> SeatColumns:
    """Every seat of every finished match as columns (group, bot, place, match), without an object per seat: what
    the fit and the bootstrap read; with ``before_group``, only the seats of the groups numbered below it."""
    return SeatColumns(*store.place_columns(tid, before_group))


def seat_results(store: StoreReads, tid: int) -> list[GroupPlace]:
    """Every seat of every finished match as (group, bot, place, match): what arena/stats/confidence.py resamples."""
    return seat_columns(store, tid).results()


def rated_matches(store: StoreReads, tid: int, after: int = -1) -> list[RatedMatch]:
    """Finished matches after schedule index ``after``, in schedule order, as the rater wants them."""
    grouped: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for idx, bot_id, place in store.ordered_places(tid, after):
        grouped[idx].append((bot_id, place))
    return [RatedMatch(idx, tuple(b for b, _ in seats), tuple(p for _, p in seats))
            for idx, seats in sorted(grouped.items())]


def final_ratings(store: StoreReads, tid: int) -> dict[int, Rating]:
    """Per bot, its latest stored rating."""
    return {bot_id: Rating(mu, sigma) for bot_id, (mu, sigma) in store.latest_ratings(tid).items()}


def rating_history(store: StoreReads, tid: int) -> dict[int, list[tuple[int, Rating]]]:
    """Per bot, (schedule index, rating after it) of each stored rating, in schedule order."""
    history: dict[int, list[tuple[int, Rating]]] = defaultdict(list)
    for bot_id, match_idx, mu, sigma in store.rating_rows(tid):
        history[bot_id].append((match_idx, Rating(mu, sigma)))
    return dict(history)


def initial_rating(store: StoreReads, tid: int) -> Rating:
    """A bot's rating before its first match: the prior of the tournament's stored config."""
    return Rating(*store.rating_prior(tid))


# -- the standings ---------------------------------------------------------------------------------------------

def standings(store: StoreReads, tid: int, initial: Rating | None = None, seats: SeatColumns | None = None
              ) -> list[Standing]:
    """Every bot with its rating and totals, best first: by the Plackett-Luce strength fitted to every match's
    places (arena/stats/ranking.py; docs/RATINGS.md says why), then mean place, then mu - 3 sigma, then name; bots
    yet to play last. A league's versions that left the field come after every bot in it, and the bots in it are
    fitted among themselves (their order does not depend on who left). They are shown at ``initial`` (default: the tournament's own prior). ``seats`` is
    :func:`seat_columns` if the caller has read it already."""
    initial = initial or initial_rating(store, tid)
    ratings = final_ratings(store, tid)
    table = {bot_id: Standing(bot_id, name, ratings.get(bot_id, initial), active=active, rated=bot_id in ratings)
             for bot_id, name, active in store.bot_lines(tid)}
    for bot_id, *totals in store.bot_totals(tid):
        line = table[bot_id]
        (line.matches, line.wins, line.place_sum, line.points, line.rounds, line.declares_ok,
         line.declares_failed) = totals
    for bot_id, fault_kind, count in store.fault_counts(tid):
        table[bot_id].faults[fault_kind] = count
    seats = seat_columns(store, tid) if seats is None else seats
    played = [bot_id for bot_id, line in table.items() if line.matches]
    in_field = [bot_id for bot_id in played if table[bot_id].active]
    # A league ranks the bots in its field among themselves; the versions that left are fitted with everyone, to
    # show their strength, and listed below.
    fits = [in_field] if len(in_field) == len(played) else [in_field, played]
    for bots in reversed(fits):
        for bot_id, value in fit_seats(seats.match, seats.bot, seats.place, bots).items():
            table[bot_id].strength = value
    return sorted(table.values(), key=lambda s: (not s.active, s.strength is None, -(s.strength or 0.0),
                                                 s.mean_place or 0.0, -s.rating.conservative, s.name))


def standings_and_confidence(store: StoreReads, tid: int, resamples: int = RESAMPLES
                             ) -> tuple[list[Standing], Confidence]:
    """:func:`standings` and its confidence (rank intervals, P(above) of any two bots: arena/stats/confidence.py),
    from one read of the seats and one fit: the confidence's resamples start from the standings' fit. Only the
    bots in the field are ranked (a league's versions that left are not in the confidence)."""
    seats = seat_columns(store, tid)
    table = standings(store, tid, seats=seats)
    in_field = [line for line in table if line.active]  # a league's versions that left are not ranked
    return table, confidence(seats, [line.bot_id for line in in_field], resamples, point={
        line.bot_id: line.strength for line in in_field if line.strength is not None})


def head_to_head(store: StoreReads, tid: int) -> dict[tuple[int, int], tuple[int, int]]:
    """(a, b) -> (matches where a placed above b, matches they shared)."""
    counts: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    seats: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for match_id, bot_id, place in store.finished_places(tid):
        seats[match_id].append((bot_id, place))
    for entries in seats.values():
        for a, place_a in entries:
            for b, place_b in entries:
                if a != b:
                    counts[(a, b)][1] += 1
                    counts[(a, b)][0] += place_a < place_b
    return {key: (above, shared) for key, (above, shared) in counts.items()}


def shown_standings(table: Sequence[Standing], sure: Confidence) -> Shown:
    """How ``table`` is shown (arena/stats/display.py): its ranked bots' intervals as ranks, P(above next), the
    note on bots not ranked yet."""
    return shown(sure, [line.bot_id for line in table])


def standings_with_confidence(table: Sequence[Standing], sure: Confidence, view: Shown | None = None
                              ) -> list[dict[str, Any]]:
    """The standings as JSON, each line with its rank as shown (``shared_rank``: ``"2-3"``, the ranks its 95%
    interval spans, ``"2"`` when it is one; ``"-"`` when not yet ranked; ``"left"`` for a league's version out of
    the field), that interval (``rank_interval_95``), and P(above the next) (null when not yet meaningful) with its
    text as printed. ``view`` is :func:`shown_standings` if the caller has it."""
    view = shown_standings(table, sure) if view is None else view
    lines = view.by_bot()
    found = []
    for rank, line in enumerate(table, 1):
        seen = lines[line.bot_id]
        found.append(line.to_dict(rank) | {
            "shared_rank": seen.rank, "rank_interval_95": None if seen.interval is None else list(seen.interval),
            "p_above_next": None if seen.p_above_next is None else round(seen.p_above_next, 3),
            "p_above_next_text": seen.p_text})
    return found
