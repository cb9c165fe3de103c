"""The coach: what a chosen bot would play in the person's exact position, shown and never played.

The bot is asked with exactly the view the person has: the protocol messages the person's seat was sent so far
(hello, round_start, played, ..., and the turn in front of them), replayed in order to a fresh process of that bot,
launched in the same sandbox and under the same limits as the match's bots. Its answer to the last turn is the
advice; its answers to the earlier turns (and its ready) are read and dropped, as they were already played by the
person. The process is killed after each answer, so no coach remembers anything the person was not shown.

The exchange is referee-free on purpose: nothing is recorded, nothing is scored, and a coach that crashes, says
something that is not a move, or runs out of time is reported as such (:class:`Advice` with ``problem``) instead of
faulting anyone. Its clock is a bot's (:class:`arena.match.protocol.Limits`: ``hello_ms`` to be ready, then
``move_ms`` a turn with a shared bank), while the person's own clock keeps running: the referee is not told.
"""

from __future__ import annotations

import json
import select
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arena.bots.manifest import BotSpec
from arena.game.rules import Rules, legal_discards
from arena.match.protocol import Limits, encode
from arena.sandbox import BotProcess, Sandbox, SandboxError, SandboxLimits

MAX_LINE = 1 << 16
"""The longest reply line the coach reads: a move is a few dozen bytes; a bot that floods is a faulty coach."""
EXIT_POLL_S = 0.05
"""How often a coach that stopped answering is looked at until its exit is known."""


class CoachFault(Exception):
    """The coach bot did not give a usable answer: the reason, as the person is told it."""


@dataclass(frozen=True)
class Advice:
    """What the coach bot answered for the turn: its move (``play`` or ``declare``, checked legal for the
    person's hand), or the problem that stopped it."""

    bot: str
    move: dict[str, Any] | None = None
    problem: str | None = None

    def sentence(self) -> str:
        """The advice as the person reads it: "planner would throw 7H 7S and take from the deck"."""
        if self.move is None:
            return f"{self.bot} gave no advice: {self.problem}."
        if self.move["type"] == "declare":
            return f"{self.bot} would declare."
        take = "from the deck" if self.move["take"] == "deck" else self.move["take"]
        return f"{self.bot} would throw {' '.join(self.move['discard'])} and take {take}."

    def to_dict(self) -> dict[str, Any]:
        return {"bot": self.bot, "move": self.move, "problem": self.problem, "sentence": self.sentence()}


def checked_move(reply: bytes, turn: dict[str, Any], rules: Rules) -> dict[str, Any]:
    """The coach's reply to ``turn`` as a legal move, the throw in the hand's order; :class:`CoachFault` if it
    is not one."""
    try:
        move = json.loads(reply)
    except (ValueError, UnicodeDecodeError):
        raise CoachFault("its answer was not JSON") from None
    if not isinstance(move, dict):
        raise CoachFault("its answer was not a JSON object")
    if move.get("type") == "declare":
        if not turn["may_declare"]:
            raise CoachFault("it would declare, which the rules do not allow now")
        return {"type": "declare"}
    discard, take = move.get("discard"), move.get("take")
    if move.get("type") != "play" or not isinstance(discard, list) or not isinstance(take, str):
        raise CoachFault("its answer was not a move")
    throws = {frozenset(throw): throw for throw in legal_discards(turn["hand"], rules)}
    key = frozenset(card for card in discard if isinstance(card, str))
    if len(key) != len(discard) or key not in throws:
        raise CoachFault(f"it would throw {' '.join(map(str, discard))}, which is not a legal throw of this hand")
    if take != "deck" and take not in turn["floor"]:
        raise CoachFault(f"it would take {take}, which is neither the deck nor a floor card")
    return {"type": "play", "discard": list(throws[key]), "take": take}


class Coach:
    """Asks ``bot`` in ``sandbox`` (the match's bots' sandbox, under their ``limits``) what it would play."""

    def __init__(self, bot: BotSpec, sandbox: Sandbox, limits: Limits = Limits(),
                 sandbox_limits: SandboxLimits = SandboxLimits()) -> None:
        self.bot = bot
        self.sandbox = sandbox
        self.limits = limits
        self.sandbox_limits = sandbox_limits
        self._one_at_a_time = threading.Lock()  # a second click waits for the first answer, never a second bot

    @property
    def name(self) -> str:
        return self.bot.name

    def advise(self, sent: Sequence[dict[str, Any]]) -> Advice:
        """The coach's advice for the last message of ``sent`` (a turn), every message the seat was sent so far."""
        if not sent or sent[-1].get("type") != "turn":
            return Advice(self.name, problem="it is not your turn")
        rules = Rules.from_dict(sent[0]["rules"]) if sent[0].get("type") == "hello" else Rules()
        with self._one_at_a_time:
            try:
                process = self.sandbox.launch(self.bot, self.sandbox_limits)
            except SandboxError as error:
                return Advice(self.name, problem=f"it could not start ({error})")
            try:
                return Advice(self.name, move=checked_move(_Exchange(process, self.limits).replay(sent),
                                                           sent[-1], rules))
            except CoachFault as fault:
                return Advice(self.name, problem=str(fault))
            finally:
                process.kill()  # every answer from a fresh process: the coach remembers nothing between asks


class _Exchange:
    """One replay to one coach process: write each message, read one line where one is due, under a bot's clock."""

    def __init__(self, process: BotProcess, limits: Limits) -> None:
        self.process = process
        self.limits = limits
        self.bank_s = limits.bank_ms / 1000
        self.buffer = b""

    def replay(self, sent: Sequence[dict[str, Any]]) -> bytes:
        """The reply to the last message of ``sent``."""
        reply = b""
        for message in sent:
            self._write(encode(message))
            if message.get("type") == "hello":
                reply = self._line(self.limits.hello_ms / 1000, "to be ready")
            elif message.get("type") == "turn":
                reply = self._line(self.limits.move_ms / 1000, "to answer", bank=True)
        return reply

    def _write(self, data: bytes) -> None:
        # A bot reads its stdin as a bot does; a bot that stops reading is stuck past the hello limit.
        deadline = time.monotonic() + self.limits.hello_ms / 1000
        view = memoryview(data)
        while view:
            fd = self.process.write_fd()
            if fd is None:
                raise CoachFault(self._ended("stopped reading"))
            left = deadline - time.monotonic()
            if left <= 0:
                raise CoachFault("it stopped reading its input")
            _, ready, _ = select.select([], [fd], [], left)
            if ready:
                try:
                    view = view[self.process.write(view):]
                except BrokenPipeError:
                    raise CoachFault(self._ended("stopped reading")) from None

    def _line(self, limit_s: float, doing: str, bank: bool = False) -> bytes:
        started = time.monotonic()
        budget = limit_s + (self.bank_s if bank else 0)
        while b"\n" not in self.buffer:
            if len(self.buffer) > MAX_LINE:
                raise CoachFault(f"its answer was longer than {MAX_LINE} bytes")
            fds = self.process.read_fds()
            left = started + budget - time.monotonic()
            if left <= 0:
                raise CoachFault(f"it took longer than its {budget:g} s {doing} (a bot's limit), and was stopped")
            if not fds:
                raise CoachFault(self._ended("ended without answering"))
            ready, _, _ = select.select(fds, [], [], left)
            for fd in ready:
                for stream, data in self.process.read(fd):
                    if stream == "stdout":
                        if not data and b"\n" not in self.buffer:
                            raise CoachFault(self._ended("ended without answering"))
                        self.buffer += data
        if bank:  # time past the move's limit comes out of the bank, as the referee counts a bot's
            self.bank_s -= max(0.0, time.monotonic() - started - limit_s)
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.rstrip(b"\r")

    def _ended(self, what: str) -> str:
        # Its output closes a moment before its exit is reaped: wait for how it ended (a process that closed its
        # output and lingers is killed after the hello limit, and reported without it).
        deadline = time.monotonic() + self.limits.hello_ms / 1000
        while (exit_ := self.process.poll()) is None and time.monotonic() < deadline:
            time.sleep(EXIT_POLL_S)
        return f"it {what}" + ("" if exit_ is None else f" ({exit_.describe()})")
