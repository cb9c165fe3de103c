"""A person's seat in the terminal: the table in plain lines, one key per choice.

Plain lines rather than a full-screen library (textual, prompt_toolkit): every line is a sentence a screen reader
reads in order, the same text works in a pipe and in a log, and the table of a card game of five cards a hand fits
in a dozen lines; nothing here needs a dependency. On a terminal each choice is one key, read without Enter
(cbreak mode, restored on the way out); from a pipe each line is one choice, so a test or a script can play.

The person is told what a bot is told, in the same order, and nothing more: :class:`Console` builds its screen
from the protocol messages alone.
"""

from __future__ import annotations

import os
import select
import sys
import termios
import threading
import time
import tty
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, TextIO

from arena.game.cards import hand_total
from arena.game.rules import Rules, legal_discards
from arena.play.coach import Coach
from arena.play.seat import LeftTable

THROW_KEYS = "123456789abeghijklmnoprstuvwxyz"
"""Keys for the legal throws, in order: digits, then letters but c (the coach), d (the deck), f, q (leave)."""
POLL_S = 0.2
"""How often a wait for a key looks whether the referee is done with the seat (a timeout, the match's end)."""


class Keys:
    """Choices typed by the person: single keys on a terminal, lines from a pipe. :meth:`next` returns None once
    :meth:`stop` was called or the input ended. Used as a context manager, it holds a terminal in cbreak mode (keys
    without Enter) for the whole match and gives it back as it was: switched once, with no wait for output to drain,
    which a switch per key would make on every key (and which stalls while the other end of a pseudo-terminal is
    busy)."""

    def __init__(self, source: TextIO) -> None:
        self.source = source
        self.fd = source.fileno()
        self.terminal = os.isatty(self.fd)
        self._stopped = threading.Event()
        self._pending = ""
        self._saved: list[Any] | None = None

    def __enter__(self) -> Self:
        if self.terminal:
            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd, termios.TCSANOW)
        return self

    def __exit__(self, *_: object) -> None:
        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSANOW, self._saved)
            self._saved = None

    def stop(self) -> None:
        self._stopped.set()

    def next(self) -> str | None:
        while not self._stopped.is_set():
            if "\n" in self._pending:  # a pipe's lines come several to a read
                line, self._pending = self._pending.split("\n", 1)
                return line.strip()
            ready, _, _ = select.select([self.fd], [], [], POLL_S)
            if not ready:
                continue
            chunk = os.read(self.fd, 1 if self.terminal else 4096).decode(errors="replace")
            if not chunk or chunk == "\x04":  # the end of the input, or Ctrl-D on a terminal
                return None
            if self.terminal:
                if chunk.strip():  # Enter or a space on a terminal chooses nothing yet
                    return chunk
                continue
            self._pending += chunk
        return None


@dataclass
class Table:
    """What the person knows, from the messages their seat was sent."""

    seat: int = 0
    players: list[str] = field(default_factory=list)
    rules: Rules = field(default_factory=Rules)
    limits: dict[str, int] = field(default_factory=dict)
    round: int = 0
    last_moves: dict[int, str] = field(default_factory=dict)

    def name(self, seat: int) -> str:
        return "you" if seat == self.seat else self.players[seat]


class Console:
    """Plays a seat for a person at a terminal (:class:`arena.play.seat.Player`)."""

    def __init__(self, keys: Keys | None, out: TextIO = sys.stdout,
                 clock: Callable[[], float] = time.monotonic, coach: Coach | None = None) -> None:
        self.keys = keys
        self.out = out
        self.clock = clock
        self.coach = coach
        self.table = Table()
        self.sent: list[dict[str, Any]] = []
        """Every message the seat was sent, in order: the coach is asked with exactly these."""

    def stop(self) -> None:
        if self.keys is not None:
            self.keys.stop()

    def say(self, *lines: str) -> None:
        for line in lines:
            self.out.write(line + "\n")
        self.out.flush()

    def reply(self, message: dict[str, Any]) -> dict[str, Any] | None:
        self.sent.append(message)
        kind = message.get("type")
        handler = getattr(self, f"on_{kind}", None)
        return handler(message) if handler is not None else None

    # -- what the seat is told --------------------------------------------------------------------------------

    def on_hello(self, message: dict[str, Any]) -> dict[str, Any]:
        table = self.table
        table.seat, table.players = message["seat"], list(message["players"])
        table.rules = Rules.from_dict(message["rules"])
        table.limits = dict(message["limits"])
        others = ", ".join(name for seat, name in enumerate(table.players) if seat != table.seat)
        self.say(f"Least Score: you are seat {table.seat} against {others}.",
                 f"Out at {table.rules.threshold} points; lowest total wins. Your clock: "
                 f"{table.limits['move_ms'] // 1000} s a move and {table.limits['bank_ms'] // 1000} s in the bank.",
                 "The rules: protocol/RULES.md. Press ? on your turn for the keys.")
        return {"type": "ready"}

    def on_round_start(self, message: dict[str, Any]) -> None:
        table = self.table
        table.round = message["round"]
        table.last_moves.clear()
        starter = table.name(message["starter"])
        self.say("", f"== Round {table.round} ==", f"Scores: {self.scores(message['scores'])}")
        if not message["live"][table.seat]:
            self.say(f"You are out of the match; the others play on. Floor: {' '.join(message['floor'])}.")
            return
        self.say(f"Your hand: {' '.join(message['hand'])} (total {hand_total(message['hand'])}); "
                 f"floor: {' '.join(message['floor'])}; {starter} {'start' if starter == 'you' else 'starts'}.")

    def on_played(self, message: dict[str, Any]) -> None:
        table = self.table
        seat = message["seat"]
        took = "from the deck" if message["take"] == "deck" else message["take"]
        said = f"threw {' '.join(message['discard'])}, took {took}"
        if "drew" in message:
            said += f" ({message['drew']})"
        table.last_moves[seat] = said
        if seat != table.seat:
            self.say(f"{table.name(seat)} {said}.")
        else:
            self.say(f"You {said}.")

    def on_reshuffle(self, message: dict[str, Any]) -> None:
        self.say(f"The deck ran out: the dead floor cards are shuffled into a new deck of {message['deck_size']}.")

    def on_forfeit(self, message: dict[str, Any]) -> None:
        self.say(f"{self.table.name(message['seat'])} forfeits (a fault) and leaves the match.")

    def on_round_end(self, message: dict[str, Any]) -> None:
        table = self.table
        if message.get("declarer") is not None:
            how = f"{table.name(message['declarer'])} declared"
        else:
            how = f"the round ended ({message['reason']})"
        hands = "; ".join(f"{table.name(seat)} {' '.join(hand)} = {message['totals'][seat]}"
                          for seat, hand in enumerate(message["hands"]) if hand)
        self.say(f"Round {message['round']}: {how}. Hands: {hands}.",
                 f"Points: {self.scores(message['points'])}. Scores: {self.scores(message['scores'])}.")
        for seat in message.get("eliminated") or []:
            self.say(f"{table.name(seat)} {'are' if seat == table.seat else 'is'} out (at or past "
                     f"{table.rules.threshold}).")

    def on_match_end(self, message: dict[str, Any]) -> None:
        table = self.table
        order = sorted(range(len(message["places"])), key=lambda seat: (message["places"][seat], seat))
        self.say("", "Match over: " + ", ".join(f"{message['places'][seat]}. {table.name(seat)} "
                                                f"({message['scores'][seat]})" for seat in order) + ".")

    def on_turn(self, message: dict[str, Any]) -> dict[str, Any]:
        deadline = self.clock() + message["time_left_ms"] / 1000
        hand: list[str] = message["hand"]
        floor: list[str] = message["floor"]
        throws = legal_discards(hand, self.table.rules)
        self.say("", *self.turn_screen(message, throws))
        while True:
            key = self.ask(f"Throw [{THROW_KEYS[0]}-{THROW_KEYS[min(len(throws), len(THROW_KEYS)) - 1]}]"
                           f"{', ! to declare' if message['may_declare'] else ''}"
                           f"{', c for the coach' if self.coach is not None else ''}, ? for help, q to leave: ",
                           deadline)
            if key == "!":
                refusal = self.declare_refusal(message)
                if refusal is None:
                    return {"type": "declare"}
                self.say(refusal)
            elif key == "?":
                self.say(*HELP)
            elif key == "c":
                self.say(self.ask_coach())
            elif key in THROW_KEYS[:len(throws)]:
                throw = throws[THROW_KEYS.index(key)]
                take = self.choose_take(floor, deadline)
                if take is not None:
                    return {"type": "play", "discard": list(throw), "take": take}
            else:
                self.say(f"No throw has the key {key!r}: choose one listed above.")

    def ask_coach(self) -> str:
        """What the coach bot would play now, as a sentence; it is shown, never played."""
        if self.coach is None:
            return "No coach at this table (arena play --coach BOT)."
        self.say(f"Asking {self.coach.name} what it would play (your clock keeps running)...")
        return f"Coach: {self.coach.advise(self.sent).sentence()}"

    def choose_take(self, floor: Sequence[str], deadline: float) -> str | None:
        """The card to take after the throw: the deck, or a floor card; None to choose the throw again."""
        keys = "".join(THROW_KEYS[:len(floor)])
        listed = "  ".join(f"{key} {card}" for key, card in zip(keys, floor))
        while True:
            key = self.ask(f"Take: d the deck, or from the floor {listed} (b: back to the throw): ", deadline)
            if key == "d":
                return "deck"
            if key == "b":
                return None
            if key and key in keys:
                return floor[keys.index(key)]
            self.say(f"No take has the key {key!r}: d for the deck, or a floor card's key.")

    def ask(self, prompt: str, deadline: float) -> str:
        left = max(0, int(deadline - self.clock()))
        self.out.write(f"({left} s) {prompt}")
        self.out.flush()
        assert self.keys is not None, "a console without keys only narrates"
        key = self.keys.next()
        # A terminal echoes nothing in cbreak mode and a pipe's input is not on the screen: say what was chosen.
        self.out.write(f"{key or ''}\n")
        if key is None:
            raise LeftTable("the input ended or the seat was closed")
        if key == "q":
            self.say("You leave the table: your seat forfeits, and the bots play the match out.")
            raise LeftTable("the person left")
        return key

    def declare_refusal(self, message: dict[str, Any]) -> str | None:
        """Why a declaration would be refused now, in RULES.md's words, or None when it is allowed."""
        if message["may_declare"]:
            return None
        total = hand_total(message["hand"])
        cap = self.table.rules.declare_max
        if cap is not None and total > cap:
            return (f"You may not declare: your total is {total} and the most you may declare with is {cap} "
                    "(RULES.md, clause 5).")
        return "You may not declare on your first turn of a round (RULES.md, decision 1.3 and clause 5)."

    # -- the screen ---------------------------------------------------------------------------------------------

    def turn_screen(self, message: dict[str, Any], throws: Sequence[tuple[str, ...]]) -> list[str]:
        table = self.table
        held = ", ".join(f"{table.name(seat)} {size}" for seat, size in enumerate(message["hand_sizes"])
                         if seat != table.seat and message["live"][seat])
        lines = [(f"-- Round {message['round']}, your turn: {message['time_left_ms'] // 1000} s left "
                  f"({message['bank_ms'] // 1000} s of it in your bank) --"),
                 f"Scores: {self.scores(message['scores'])} (out at {table.rules.threshold}).",
                 f"Cards held: {held}; the deck has {message['deck_size']}."]
        for seat, said in table.last_moves.items():
            if seat != table.seat:
                lines.append(f"Last move of {table.name(seat)}: {said}.")
        lines += [f"Floor: {' '.join(message['floor'])}.",
                  f"Your hand: {' '.join(message['hand'])} (total {hand_total(message['hand'])}).",
                  "Throws: " + "   ".join(f"{key} {' '.join(throw)}" for key, throw in zip(THROW_KEYS, throws))]
        if message["may_declare"]:
            lines.append(f"! declare: your total {hand_total(message['hand'])} may end the round now.")
        return lines

    def scores(self, values: Sequence[int]) -> str:
        return ", ".join(f"{self.table.name(seat)} {value}" for seat, value in enumerate(values))


HELP = (
    ("Keys: a throw's key (1, 2, ...) throws that set; then d takes the top card of the deck, or a floor card's key "
     "takes that card; b goes back to the throw."),
    ("! declares (when your total is low enough, and not on your first turn of a round): the round ends and the "
     "lowest total wins it (RULES.md, clause 5)."),
    ("c asks the coach bot (arena play --coach) what it would play here, told exactly what you were told; its "
     "answer is shown, never played, and your clock keeps running while it thinks."),
    "q leaves the match: your seat forfeits. Your clock runs while you choose, as a bot's does.",
)
