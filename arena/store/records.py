"""What the store reads and writes besides plain rows: a stored match with its result, a match's stamp for a
listing, a runner's lease, and a rating as the store keeps it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from arena.game.results import MatchResult


class Rated(Protocol):
    """A rating as the store keeps it (arena/stats/ratings.py's Rating)."""

    @property
    def mu(self) -> float: ...
    @property
    def sigma(self) -> float: ...


@dataclass(frozen=True)
class Lease:
    """A runner's hold on a tournament: it renews ``expires`` while it runs and deletes the row when it stops."""

    tournament: str
    token: str
    host: str
    pid: int
    since: str
    kind: str = "tournament"
    """What the run is called in messages: ``tournament`` or ``league``."""


@dataclass(frozen=True)
class StoredMatch:
    """A scheduled match as the store keeps it: its place in the schedule, its status and, once it is done, the
    referee's :class:`~arena.game.results.MatchResult` read back as it was written (without the engine events: those
    are in the match's log)."""

    id: int
    tournament: str
    idx: int
    seed: int
    status: str
    """``pending``, ``done`` or ``failed`` (an infrastructure failure: never rated)."""
    attempts: int
    bot_ids: tuple[int, ...]
    """The bot (its row id) in each seat."""
    names: tuple[str, ...]
    """The bot's name in each seat."""
    result: MatchResult | None
    """The result when the match is done, else None."""
    error: str | None
    finished_at: str | None
    sealed: bool = False
    """Its group can still be played (:meth:`Store.sealed_groups`): its deal seed and its log are not shown."""

    @property
    def log_path(self) -> Path | None:
        return None if self.result is None else self.result.log_path

    @property
    def public_seed(self) -> int | None:
        """The deal seed, once its group is over; None while it is sealed."""
        return None if self.sealed else self.seed

    def to_dict(self, stderr: bool = False) -> dict[str, Any]:
        result = None if self.result is None else self.result.to_dict(stderr)
        if result is not None:
            result["seed"] = self.public_seed
        return {"id": self.id, "tournament": self.tournament, "index": self.idx, "seed": self.public_seed,
                "status": self.status, "attempts": self.attempts, "bots": list(self.names), "error": self.error,
                "finished_at": self.finished_at, "result": result}


@dataclass(frozen=True)
class MatchStamp:
    """A match as a listing of many needs it, without its result: what one cheap query reads of every match of a
    tournament (a site rebuild reads the result only of the matches whose pages it makes again)."""

    id: int
    idx: int
    seed: int
    group: int
    status: str
    attempts: int
    error: str | None
    finished_at: str | None
    bot_ids: tuple[int, ...]
    log_path: str | None
    sealed: bool = False
    """Its group can still be played (:meth:`Store.sealed_groups`): its deal seed and its log are not shown."""

    @property
    def public_seed(self) -> int | None:
        """The deal seed, once its group is over; None while it is sealed."""
        return None if self.sealed else self.seed
