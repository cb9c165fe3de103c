"""The rows several pages of the results site show: a line of the standings, a rating chart's line, a match's row in a
listing (and a player's cell in it), a fault's row. Plain values: :mod:`arena.site.common` makes them from a
snapshot, :mod:`arena.site.html` renders them."""

from __future__ import annotations

from dataclasses import dataclass

from arena.game.results import Fault, SeatResult, Termination
from arena.site.urls import step_href


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
    """The rank as shown (arena/stats/display.py): ``2-3``, the ranks its 95% interval spans (``2`` when one),
    ``-`` not yet ranked (too few deals), ``left`` for a league's version out of the field."""
    p_above_next: float | None = None
    """P(this bot is truly above the next one), None for the last."""
    wins_shared: int = 0
    """Of ``wins``, the matches whose first place it shared (a tie counts as a win for each)."""
    active: bool = True
    """False for a league's version that has left the field."""
    strength: float | None = None
    """The fitted Plackett-Luce log strength, the standings' order (arena/stats/ranking.py)."""
    rank95: tuple[int, int] | None = None
    """Its 95% rank interval as shown, best and worst (``arena standings`` shows it as rank95), when it has one."""
    p_text: str = "-"
    """P(above next) as printed: never a certainty (arena/stats/display.py's ``p_text``)."""
    rated: bool = True
    """False while it has no stored rating (a live tournament rates at its end): shown as "not yet rated"."""

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
    """On a bot's pages, the row as HTML before and after its place
    (:attr:`arena.site.snapshot.BuildCache.row_html`), in which case only ``idx``, ``id`` and ``place_of`` are set."""


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
