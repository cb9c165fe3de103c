"""Protocol v1: the JSON-lines messages between the referee and a bot, built from the engine's events.

This module decides what each seat is told, so information hiding lives here and only here: a message to a seat
never holds another seat's hidden cards or the deck's order before ``round_end``. It parses replies too. It does
no I/O; the referee moves the bytes. ``protocol/PROTOCOL.md`` is the user-facing description of the same messages.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arena.game.engine import InvalidMoveError, Match, Move, SeatView, move_from_json
from arena.game.results import Reason
from arena.game.rules import Rules

VERSION = 1
MAX_LINE = 64 * 1024
"""A reply line longer than this (in bytes, newline excluded) is an ``invalid`` fault."""


class InvalidReplyError(ValueError):
    """A reply that is not one UTF-8 JSON object of the expected shape; the message says what was expected and
    :attr:`reason` which rule of the protocol the reply broke."""

    def __init__(self, message: str, reason: Reason) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Limits:
    """Time limits of a match, in milliseconds (see PROTOCOL.md, "Time")."""

    hello_ms: int = 10_000
    move_ms: int = 1_000
    bank_ms: int = 10_000

    def to_dict(self) -> dict[str, int]:
        return {"hello_ms": self.hello_ms, "move_ms": self.move_ms, "bank_ms": self.bank_ms}


def encode(message: dict[str, Any]) -> bytes:
    """One message as one line of compact UTF-8 JSON."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def hello(seat: int, names: list[str], rules: Rules, limits: Limits) -> dict[str, Any]:
    return {
        "type": "hello",
        "protocol": VERSION,
        "seat": seat,
        "players": names,
        "rules": rules.to_dict(),
        "limits": limits.to_dict(),
    }


def turn(view: SeatView, time_left_ms: int, bank_left_ms: int) -> dict[str, Any]:
    return {
        "type": "turn",
        "round": view.round,
        "hand": list(view.hand),
        "floor": list(view.floor),
        "may_declare": view.may_declare,
        "deck_size": view.deck_size,
        "hand_sizes": list(view.hand_sizes),
        "scores": list(view.scores),
        "live": list(view.live),
        "time_left_ms": time_left_ms,
        "bank_ms": bank_left_ms,
    }


_QUOTE_OPEN, _QUOTED, _QUOTE_CLOSE = '["', '","', '"]'


def _cards(cards: Sequence[str]) -> str:
    # Cards are two plain characters each (arena.game.cards): nothing in them needs escaping.
    return _QUOTE_OPEN + _QUOTED.join(cards) + _QUOTE_CLOSE if cards else "[]"


def _ints(values: Sequence[int]) -> str:
    return "[" + ",".join(map(str, values)) + "]"


def turn_line(match: Match, seat: int, time_left_ms: int, bank_left_ms: int) -> bytes:
    """``encode(turn(match.view(seat), time_left_ms, bank_left_ms))``, byte for byte, built without the view, the
    dict or the JSON encoder: it is sent every turn."""
    live = match.seats_in_play
    players = match.players
    flags = _LIVE.get((players, live))
    if flags is None:
        flags = _LIVE[players, live] = ",".join("true" if s in live else "false" for s in range(players))
    hand = match.hands[seat]
    floor = match.floor
    may = "true" if seat == match.turn and match.may_declare() else "false"
    return (f'{{"type":"turn","round":{match.round},"hand":{_QUOTE_OPEN + _QUOTED.join(hand) + _QUOTE_CLOSE if hand else "[]"},'
            f'"floor":{_QUOTE_OPEN + _QUOTED.join(floor) + _QUOTE_CLOSE if floor else "[]"},'
            f'"may_declare":{may},"deck_size":{len(match.deck)},'
            f'"hand_sizes":[{",".join(map(str, map(len, match.hands)))}],"scores":[{",".join(map(str, match.scores))}],'
            f'"live":[{flags}],"time_left_ms":{time_left_ms},"bank_ms":{bank_left_ms}}}\n').encode()


_LIVE: dict[tuple[int, tuple[int, ...]], str] = {}
"""The ``live`` flags of a turn message, by the number of seats and the seats in play: a few per match."""


def play_fields(event: dict[str, Any]) -> tuple[bytes, bytes]:
    """A ``play`` event's fields after its type, encoded once for the message to every seat and for the log:
    ``(seat, discard and take, drew)``; ``drew`` is empty when the card was taken from the floor."""
    common = (f',"seat":{event["seat"]},"discard":{_cards(event["discard"])},"take":"{event["take"]}"').encode()
    drew = f',"drew":"{event["drew"]}"'.encode() if "drew" in event else b""
    return common, drew


PLAYED = b'{"type":"played"'
"""How every ``played`` message starts; the rest is the ``play`` event's fields (see :func:`play_fields`)."""


def tell(event: dict[str, Any], match: Match) -> list[bytes | None]:
    """Each seat's message about ``event`` (None for nothing), encoded; ``encode(for_seat(event, seat, match))``
    byte for byte, each distinct message encoded once."""
    if event["type"] == "play":
        common, drew = play_fields(event)
        others = PLAYED + common + b"}\n"
        told: list[bytes | None] = [others] * match.players
        if drew:
            told[event["seat"]] = PLAYED + common + drew + b"}\n"
        return told
    told = []
    previous: tuple[dict[str, Any] | None, bytes | None] = (None, None)
    for seat in range(match.players):
        message = for_seat(event, seat, match)
        if message is None:
            told.append(None)
            continue
        if message != previous[0]:  # most messages are the same for every seat
            previous = (message, encode(message))
        told.append(previous[1])
    return told


def for_seat(event: dict[str, Any], seat: int, match: Match) -> dict[str, Any] | None:
    """What ``seat`` is told of an engine event, or None for nothing.

    ``match_start`` is told by ``hello``; ``declare`` by the ``round_end`` that follows it at once.
    """
    kind = event["type"]
    if kind == "round_start":
        return {
            "type": "round_start",
            "round": event["round"],
            "hand": event["hands"][seat],
            "floor": event["floor"],
            "scores": event["scores"],
            "live": [s in event["live"] for s in range(match.players)],
            "starter": event["starter"],
        }
    if kind == "play":
        told = {
            "type": "played",
            "seat": event["seat"],
            "discard": event["discard"],
            "take": event["take"],
        }
        if event["seat"] == seat and "drew" in event:
            told["drew"] = event["drew"]
        return told
    if kind == "reshuffle":
        return {"type": "reshuffle", "deck_size": event["deck_size"]}
    if kind == "forfeit":
        return {"type": "forfeit", "seat": event["seat"]}
    if kind == "round_end":
        # "type" first, as in every other message, so that logs and transcripts read the same way throughout.
        return {"type": "round_end"} | {key: event[key] for key in ("round", "reason", "declarer", "hands", "totals",
                                                                    "points", "scores", "eliminated")}
    if kind == "match_end":
        return {"type": "match_end", "places": event["places"], "scores": event["scores"],
                "termination": event["termination"]}
    return None


def parse_line(line: bytes) -> dict[str, Any]:
    """Decode one reply line into a JSON object, or raise :class:`InvalidReplyError`."""
    if len(line) > MAX_LINE:
        raise InvalidReplyError(f"line longer than {MAX_LINE} bytes", Reason.INVALID_LINE_TOO_LONG)
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidReplyError(f"not UTF-8 ({error.reason} at byte {error.start}): {_show(line)}",
                                Reason.INVALID_NOT_UTF8) from None
    try:
        message = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidReplyError(f"not JSON ({error.msg} at column {error.colno}): {_show(line)}; stdout carries "
                                "protocol lines only, debug output belongs on stderr", Reason.INVALID_NOT_JSON) from None
    if not isinstance(message, dict):
        raise InvalidReplyError(f"expected a JSON object, got {_show(line)}", Reason.INVALID_NOT_OBJECT)
    return message


def parse_ready(line: bytes) -> bool:
    """Check the answer to hello; True when the bot says it can play more matches on the same pipes
    (``"persistent": true``, PROTOCOL.md "Several matches per process"). Only ``true`` counts: a v1 bot's
    ``ready`` says nothing and plays one match."""
    message = parse_line(line)
    if message.get("type") != "ready":
        raise InvalidReplyError(f'expected {{"type": "ready"}} in answer to hello, got {_show(line)}',
                                Reason.INVALID_READY)
    return message.get("persistent") is True


def parse_done(line: bytes) -> None:
    """Check a persistent bot's answer to ``match_end``."""
    message = parse_line(line)
    if message.get("type") != "done":
        raise InvalidReplyError(f'expected {{"type": "done"}} in answer to match_end, got {_show(line)}',
                                Reason.INVALID_DONE)


_MOVES: dict[bytes, Move] = {}
"""Replies already parsed, by their bytes: a bot sends the same few hundred lines over and over, and parsing is a
pure function of the bytes (moves are frozen values), so each distinct line is decoded and checked once."""
MOVES_CACHED = 4096


def parse_move(line: bytes) -> Move:
    move = _MOVES.get(line)
    if move is not None:
        return move
    message = parse_line(line)
    try:
        move = move_from_json(message)
    except InvalidMoveError as error:
        raise InvalidReplyError(f"{error}; the reply was {_show(line)}", error.reason) from None
    if len(_MOVES) >= MOVES_CACHED:
        _MOVES.clear()
    _MOVES[bytes(line)] = move
    return move


def _show(line: bytes, limit: int = 200) -> str:
    """A short printable rendering of what a bot sent, for fault details."""
    text = line[:limit].decode("utf-8", errors="backslashreplace")
    return repr(text) + (f" ... ({len(line)} bytes)" if len(line) > limit else "")
