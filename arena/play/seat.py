"""A seat taken by someone in this process (a person at the terminal) behind the pipes the referee expects of a bot.

The referee drives every seat the same way: it writes protocol lines to a process's stdin and reads its answers
from stdout, with its clocks and fault rules. :class:`SeatProcess` gives it those pipes for a seat whose player is
an object in this process, served by a thread: the person's seat is refereed by exactly the code that referees a
bot, and the log, the faults and the result are a bot match's. :class:`SeatedSandbox` launches the bots of the
other seats in the real sandbox, with none of their limits relaxed.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from arena.bots.manifest import BotSpec
from arena.sandbox import BotProcess, Exit, Sandbox, SandboxLimits, Stream, launch_in_order

PERSON_LANGUAGE = "person"
"""What a person's seat gives as its ``language``: the event log, the store and the site mark the seat by it."""
READ_CHUNK = 1 << 16


class Player(Protocol):
    """Whoever plays a seat from this process: answers each protocol message (a dict, as decoded from the wire)
    with a reply, or None where the protocol expects none. Raising :class:`LeftTable` leaves the match."""

    def reply(self, message: dict[str, Any]) -> dict[str, Any] | None: ...

    def stop(self) -> None:
        """The referee is done with this seat (the match ended, or the seat faulted): stop waiting for input."""


class LeftTable(Exception):
    """The person left the match: the seat's "process" ends, and the referee forfeits it as it would a bot's."""


def person_spec(name: str) -> BotSpec:
    """The spec a person's seat plays under: no directory, no command; marked by its language."""
    return BotSpec(name=name, directory=Path(os.devnull), command=(), files_hash=f"person:{name}",
                   language=PERSON_LANGUAGE)


class SeatProcess(BotProcess):
    """A seat played by ``player`` in a thread of this process, behind two pipes: the referee's "stdin" and
    "stdout" of it. Each line the referee writes is decoded and passed to the player; its reply is written back as
    one line. The seat "exits" with status 0 when the referee closes its stdin, 1 when the person leaves or the
    player fails."""

    def __init__(self, player: Player) -> None:
        self.player = player
        self._to_seat, self._stdin = os.pipe()
        self._stdout, self._from_seat = os.pipe()
        os.set_blocking(self._stdin, False)
        os.set_blocking(self._stdout, False)
        self._stdin_open = self._stdout_open = True
        self._exit: Exit | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="person-seat", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        status = 1
        try:
            with open(self._to_seat, "rb") as lines, open(self._from_seat, "wb", buffering=0) as answers:
                for line in lines:
                    reply = self.player.reply(json.loads(line))
                    if reply is not None:
                        answers.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
            status = 0
        except (LeftTable, BrokenPipeError):
            pass
        finally:
            with self._lock:
                self._exit = self._exit or Exit(status)

    def read_fds(self) -> list[int]:
        return [self._stdout] if self._stdout_open else []

    def read(self, fd: int) -> list[tuple[Stream, bytes]]:
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return []
        if not data:
            self._close_stdout()
            return [("stdout", b""), ("stderr", b"")]
        return [("stdout", data)]

    def write_fd(self) -> int | None:
        return self._stdin if self._stdin_open else None

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if not self._stdin_open:
            raise BrokenPipeError("the seat's player has left")
        return os.write(self._stdin, data)

    def close_stdin(self) -> None:
        if self._stdin_open:
            self._stdin_open = False
            os.close(self._stdin)

    def _close_stdout(self) -> None:
        if self._stdout_open:
            self._stdout_open = False
            os.close(self._stdout)

    def poll(self) -> Exit | None:
        with self._lock:
            return self._exit

    def kill(self) -> Exit:
        self.player.stop()
        self.close_stdin()
        self._thread.join(5)
        self._close_stdout()
        with self._lock:
            self._exit = self._exit or Exit(1)
            return self._exit


class SeatedSandbox(Sandbox):
    """``inner`` for the bots; the seats in ``players`` are played from this process (see :class:`SeatProcess`)."""

    def __init__(self, inner: Sandbox, players: Mapping[int, Player]) -> None:
        self.inner = inner
        self.players = dict(players)
        self.name = inner.name

    @property
    def variant(self) -> str:
        return self.inner.variant

    def guarantees(self) -> dict[str, tuple[bool, str]]:
        return self.inner.guarantees()

    def launch(self, bot: BotSpec, limits: SandboxLimits) -> BotProcess:
        return self.inner.launch(bot, limits)

    def launch_all(self, bots: list[BotSpec], limits: SandboxLimits) -> list[BotProcess]:
        return launch_in_order([partial(SeatProcess, self.players[seat]) if seat in self.players
                                else partial(self.inner.launch, bot, limits) for seat, bot in enumerate(bots)])

    def close(self) -> None:
        self.inner.close()
