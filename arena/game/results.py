"""The result of a match, in one model from the referee to the page: faults with reason codes, per-seat statistics.

A :class:`Fault` says why a bot forfeited as data: a :class:`Reason` code (``"timeout.move"``,
``"illegal.not_in_hand"``...) whose prefix is the :class:`FaultKind`, a sentence for people (the detail), and the structured
facts behind it (the offending line, the exit status, the signal). Code that reacts to a fault (the checker's
advice, the site's labels) switches on the reason, never on the wording. :class:`SeatStats` are counted by the
engine as the match is played; :class:`MatchResult` is what the referee returns, what the store keeps and what
``arena show`` and the site read back, with its :class:`Termination`. Pure values: nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any

from arena.game.rules import Rules


class FaultKind(str, Enum):
    """The five ways a bot can fail, coarsest first: what the standings count."""

    TIMEOUT = "timeout"
    CRASH = "crash"
    INVALID = "invalid"
    ILLEGAL = "illegal"
    LIMIT = "limit"


class Reason(str, Enum):
    """Why exactly a bot faulted: ``kind.code``. New codes may be added; stored codes are never renamed."""

    TIMEOUT_HELLO = "timeout.hello"
    """No complete reply to hello within ``hello_ms``."""
    TIMEOUT_MOVE = "timeout.move"
    """No move within ``move_ms`` plus what was left of the time bank."""
    TIMEOUT_NOT_READING = "timeout.not_reading"
    """The bot stopped reading its stdin and the referee's buffer for it filled up."""
    TIMEOUT_DONE = "timeout.done"
    """A bot kept for more matches did not answer ``match_end`` with ``done`` in time (it is ended, not faulted)."""

    CRASH_EXIT = "crash.exit"
    """The process ended (an exit status or a signal) while the match went on."""
    CRASH_CLOSED_STDOUT = "crash.closed_stdout"
    """The process closed its stdout but was still running."""
    CRASH_CLOSED_STDIN = "crash.closed_stdin"
    """The process closed its stdin but was still running."""

    INVALID_NOT_UTF8 = "invalid.not_utf8"
    INVALID_NOT_JSON = "invalid.not_json"
    INVALID_NOT_OBJECT = "invalid.not_object"
    """Valid JSON, but not an object."""
    INVALID_READY = "invalid.ready"
    """The answer to hello was not ``{"type": "ready"}``."""
    INVALID_MOVE = "invalid.move"
    """An object that is not a move (wrong type, no discard, a discard that is not a list...)."""
    INVALID_CARD = "invalid.card"
    """A move naming something that is not a card (``10H``, ``XX``)."""
    INVALID_LINE_TOO_LONG = "invalid.line_too_long"
    INVALID_UNSOLICITED = "invalid.unsolicited"
    """A line when no reply was asked for (debug output on stdout, or two replies to one request)."""
    INVALID_DONE = "invalid.done"
    """A bot kept for more matches answered ``match_end`` with something other than ``done`` (it is ended)."""

    ILLEGAL_FIRST_TURN_DECLARE = "illegal.first_turn_declare"
    ILLEGAL_DECLARE_OVER_MAX = "illegal.declare_over_max"
    """A declaration with a hand total above the rules' ``declare_max``."""
    ILLEGAL_NOT_IN_HAND = "illegal.not_in_hand"
    ILLEGAL_NOT_A_SET = "illegal.not_a_set"
    ILLEGAL_TAKE_NOT_ON_FLOOR = "illegal.take_not_on_floor"
    ILLEGAL_OUT_OF_TURN = "illegal.out_of_turn"
    """A recorded move by a seat whose turn it was not (replays only)."""
    ILLEGAL_MATCH_OVER = "illegal.match_over"

    LIMIT_MEMORY = "limit.memory"
    LIMIT_CPU = "limit.cpu"
    LIMIT_FILE_SIZE = "limit.file_size"
    LIMIT_OTHER = "limit.other"

    # One generic code per kind: a fault recorded before reason codes existed (store rows migrated by
    # ``0002_fault_reasons``, format 1 logs), or a code this version does not know (see :func:`reason_of`).
    TIMEOUT_OTHER = "timeout.other"
    CRASH_OTHER = "crash.other"
    INVALID_OTHER = "invalid.other"
    ILLEGAL_OTHER = "illegal.other"

    @property
    def kind(self) -> FaultKind:
        return FaultKind(self.value.partition(".")[0])


def reason_of(code: str) -> Reason:
    """The reason for a stored code, or a bare kind (``"crash"``); a code this version does not know (written by
    a newer arena) becomes its kind's generic ``KIND.other``. Raises ValueError when not even the kind is known."""
    try:
        return Reason(code)
    except ValueError:
        return Reason(f"{FaultKind(code.partition('.')[0]).value}.other")


class Termination(StrEnum):
    """Why a match ended, as the engine decides it (:class:`arena.game.engine.Match`) and the store keeps it. New values may
    be added; stored values are never renamed.

    A StrEnum, not ``(str, Enum)`` like :class:`Reason`: a termination is written into sentences and pages
    (f-strings, templates), where a StrEnum is its value and a ``(str, Enum)`` is ``Termination.FORFEITS``.
    """

    LAST_STANDING = "last_standing"
    """A round's end left at most one seat in play."""
    FIRST_OUT = "first_out"
    """A seat was eliminated and the rules' ``until`` is ``first_out``."""
    MAX_ROUNDS = "max_rounds"
    """The rules' ``max_rounds`` were played."""
    FORFEITS = "forfeits"
    """Forfeits left at most one seat in play."""
    OTHER = "other"
    """An ending this version does not know, stored by a newer arena (see :func:`termination_of`); never made here."""

    @property
    def text(self) -> str:
        """For people: ``last standing``."""
        return self.value.replace("_", " ")


def termination_of(code: str) -> Termination:
    """The termination for a stored value; one this version does not know (written by a newer arena) becomes
    :attr:`Termination.OTHER`, as :func:`reason_of` makes an unknown fault code its kind's generic one."""
    try:
        return Termination(code)
    except ValueError:
        return Termination.OTHER


_LIMITS = {"memory": Reason.LIMIT_MEMORY, "cpu time": Reason.LIMIT_CPU, "file size": Reason.LIMIT_FILE_SIZE}


def limit_reason(limit: str) -> Reason:
    """The reason code for a sandbox's name of the limit that killed a bot (``Exit.limit``)."""
    return _LIMITS.get(limit, Reason.LIMIT_OTHER)


@dataclass(frozen=True)
class Fault:
    """Why a bot forfeited: the reason code, a sentence for people, and the facts it was decided on."""

    reason: Reason
    detail: str
    """What was expected and what happened, in plain words (may quote the bot's output: escape it to show it)."""
    round: int
    line: str | None = None
    """The offending line as the bot sent it (decoded with replacement, at most 200 characters), if one was."""
    exit_status: int | None = None
    """The exit status, if the bot's process had exited when the fault was decided."""
    signal: int | None = None
    """The signal that ended the process, if one did."""

    @property
    def kind(self) -> FaultKind:
        return self.reason.kind

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "reason": self.reason.value, "detail": self.detail, "round": self.round,
                "line": self.line, "exit_status": self.exit_status, "signal": self.signal}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fault:
        """Read :meth:`to_dict`'s form back; a format 1 record (a kind, no reason) gets its kind's generic code."""
        return cls(reason_of(data.get("reason") or data["kind"]), data["detail"], data["round"], data.get("line"),
                   data.get("exit_status"), data.get("signal"))


@dataclass(frozen=True)
class SeatStats:
    """What one seat did over a match, counted by the engine as it was played."""

    rounds: int = 0
    """Rounds the seat was dealt into."""
    turns: int = 0
    """Moves it made (plays and declarations)."""
    points: int = 0
    """Points scored over the match (lower is better)."""
    declares_ok: int = 0
    declares_failed: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"rounds": self.rounds, "turns": self.turns, "points": self.points,
                "declares_ok": self.declares_ok, "declares_failed": self.declares_failed}


@dataclass(frozen=True)
class SeatResult:
    """One seat's result: its place and score, what it did, and its fault if it forfeited."""

    seat: int
    name: str
    files_hash: str
    place: int
    score: int
    stats: SeatStats
    fault: Fault | None
    stderr_tail: str
    bank_left_ms: int

    def to_dict(self, stderr: bool = False) -> dict[str, Any]:
        """As JSON; with ``stderr``, what was kept of the bot's stderr too (its author's business: a local run
        shows it, a league's public answers never)."""
        return {
            "seat": self.seat,
            "name": self.name,
            "files_hash": self.files_hash,
            "place": self.place,
            "score": self.score,
            "stats": self.stats.to_dict(),
            "fault": None if self.fault is None else self.fault.to_dict(),
            "bank_left_ms": self.bank_left_ms,
        } | ({"stderr": self.stderr_tail} if stderr else {})


@dataclass(frozen=True)
class MatchResult:
    """A finished match as the referee returns it."""

    seed: int
    rules: Rules
    termination: Termination
    """How the match ended; a string given here (the store passes its column as it is) is read with
    :func:`termination_of`."""
    rounds: int
    turns: int
    players: tuple[SeatResult, ...]
    duration_s: float
    log_path: Path | None
    events: tuple[dict[str, Any], ...] = field(repr=False, default=())

    def __post_init__(self) -> None:
        # The store builds a result from its column's text: read it as a stored fault code is read (reason_of), so
        # that a newer arena's value is OTHER, not a ValueError that would keep its tournament from being shown.
        if not isinstance(self.termination, Termination):
            object.__setattr__(self, "termination", termination_of(self.termination))

    def summary(self) -> str:
        """``1 round, 12 turns, last_standing``: how long the match went and how it ended, for people."""
        return f"{counted(self.rounds, 'round')}, {counted(self.turns, 'turn')}, {self.termination}"

    def to_dict(self, stderr: bool = False) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "rounds": self.rounds,
            "turns": self.turns,
            "termination": self.termination.value,
            "duration_s": round(self.duration_s, 3),
            "log": None if self.log_path is None else str(self.log_path),
            "rules": self.rules.to_dict(),
            "players": [player.to_dict(stderr) for player in self.players],
        }


def counted(n: int, noun: str) -> str:
    """``1 round``, ``2 rounds``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
