"""Play a match in-process between bot objects, with the same messages the referee sends over pipes.

For bot authors' and our own quick experiments (strength measurements of the sample bots, protocol tests): no
processes, no time limits. A bot here is any object with ``reply(message) -> dict | None`` (``arena_bot.Bot`` has
it). Messages pass through JSON both ways, so a bot sees exactly what it would see on the wire. A bot that said
``"persistent": true`` answers ``match_end`` with ``done`` and may be passed to the next match, as a runner that
keeps it up would send that match's hello on the same pipes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from arena.game.engine import Match
from arena.game.rules import Rules
from arena.match import protocol
from arena.match.protocol import InvalidReplyError, Limits


class MessageBot(Protocol):
    def reply(self, message: dict[str, Any]) -> dict[str, Any] | None: ...


def _wire(message: dict[str, Any]) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(protocol.encode(message))
    return decoded


def play_local(
    bots: Sequence[MessageBot],
    seed: int,
    rules: Rules = Rules(),
    names: Sequence[str] | None = None,
    transcript: list[tuple[int, dict[str, Any]]] | None = None,
    observer: Callable[[int, dict[str, Any], Match, int], None] | None = None,
) -> Match:
    """Play one match; a bot whose reply is invalid or illegal forfeits. Returns the finished match.

    With ``transcript``, every message sent is appended to it as ``(seat, message)``; ``observer`` is called with
    each message, the match, and the index of the last engine event the seat may know of when the message
    arrives (for information-hiding checks: the match itself may already be further on).
    """
    match = Match(len(bots), seed, rules)
    names = list(names or [f"bot{seat}" for seat in range(len(bots))])
    limits = Limits()

    def send(seat: int, message: dict[str, Any], event_index: int | None = None) -> dict[str, Any] | None:
        message = _wire(message)
        if transcript is not None:
            transcript.append((seat, message))
        if observer is not None:
            observer(seat, message, match, len(match.events) - 1 if event_index is None else event_index)
        answer = bots[seat].reply(message)
        return None if answer is None else _wire(answer)

    # The same judgements as the referee, so that a bot that passes here does not forfeit there.
    persistent = [False] * len(bots)
    for seat in range(len(bots)):
        try:
            persistent[seat] = protocol.parse_ready(
                protocol.encode(send(seat, protocol.hello(seat, names, rules, limits)) or {}))
        except InvalidReplyError as error:
            match.forfeit(seat, f"invalid: {error}")
    told = 0
    while True:
        while told < len(match.events):  # a forfeit while telling adds an event, which is told too
            index, told = told, told + 1
            for seat in range(len(bots)):
                if seat not in match.forfeits:
                    message = protocol.for_seat(match.events[index], seat, match)
                    if message is None:
                        continue
                    answer = send(seat, message, index)
                    if answer is None or persistent[seat] and message["type"] == "match_end" and _done(answer):
                        continue
                    match.forfeit(seat, f"invalid: replied to {message['type']}, which wants no reply")
        if match.outcome is not None:
            return match
        seat = match.turn
        answer = send(seat, protocol.turn(match.view(seat), limits.move_ms + limits.bank_ms, limits.bank_ms))
        try:
            move = protocol.parse_move(protocol.encode(answer or {}))
            match.apply(move)
        except (InvalidReplyError, ValueError) as error:
            match.forfeit(seat, str(error))


def _done(answer: dict[str, Any]) -> bool:
    try:
        protocol.parse_done(protocol.encode(answer))
    except InvalidReplyError:
        return False
    return True
