"""A scripted bot at the sandbox boundary (python-chess's ``MockTransport`` for the referee): no processes.

A :class:`ScriptedBot` is a :class:`~arena.sandbox.BotProcess` whose conversation follows a script: each message
the referee writes is checked against the next :class:`Step` (its ``type``), and the step's answer is written to
the bot's stdout at once. Once the script is done the bot plays on correctly (ready to hello, a legal move to each
turn, exit when stdin closes). Its stdout and stderr are real pipes, so the real :class:`~arena.match.referee.Referee`
and :class:`~arena.match.channel.BotChannel` run unchanged, on their real poller, with real deadlines.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from arena.bots.manifest import BotSpec
from arena.game.cards import VALUE
from arena.sandbox import GUARANTEES, BotProcess, Exit, Sandbox, SandboxLimits, Stream

READY = b'{"type":"ready"}\n'
Then = Literal["exit", "close_stdout", "stop_reading", "close_stdin"] | None


@dataclass(frozen=True)
class Step:
    """Expect a message of type ``expect``; answer ``answer`` (raw bytes, newline and all, or a part of a line);
    then, optionally: ``exit`` (with ``status``, or killed by ``signal`` for the sandbox's ``limit``),
    ``close_stdout`` (while still running), ``stop_reading`` (stdin fills up), ``close_stdin``."""

    expect: str
    answer: bytes | None = b""
    """None: what a correct bot would answer."""
    then: Then = None
    status: int | None = 1
    signal: int | None = None
    limit: str | None = None


def legal_answer(message: dict[str, Any]) -> bytes:
    """What a correct bot answers (nothing to messages that want no reply)."""
    if message["type"] == "hello":
        return READY
    if message["type"] != "turn":
        return b""
    hand = message["hand"]
    if message["may_declare"] and sum(VALUE[card] for card in hand) <= 5:
        return b'{"type":"declare"}\n'
    return b'{"type":"play","discard":["%s"],"take":"deck"}\n' % max(hand, key=VALUE.__getitem__).encode()


class ScriptedBot(BotProcess):
    def __init__(self, *script: Step) -> None:
        self.script = list(script)
        self.received: list[dict[str, Any]] = []
        """Every message the referee sent, decoded."""
        self._stdout_r, self._stdout_w = os.pipe()
        self._stderr_r, self._stderr_w = os.pipe()
        self._stdin_r, self._stdin_w = os.pipe()  # only its write end is used: for the poller, and to fill up
        for fd in (self._stdout_r, self._stderr_r, self._stdin_w, self._stdout_w):
            os.set_blocking(fd, False)
        self._streams: dict[int, Stream] = {self._stdout_r: "stdout", self._stderr_r: "stderr"}
        self._exit: Exit | None = None
        self._reading = True
        self._stdin_open = True
        self._pending = b""

    # -- the bot's side -----------------------------------------------------------------------------------------

    def _hear(self, message: dict[str, Any]) -> None:
        self.received.append(message)
        if not self.script:
            self._say(legal_answer(message))
            return
        step = self.script.pop(0)
        assert message["type"] == step.expect, f"expected {step.expect}, the referee sent {message}"
        self._say(legal_answer(message) if step.answer is None else step.answer)
        if step.then == "exit":
            self._exit = Exit(step.status if step.signal is None else None, step.signal, step.limit)
            self._close_outputs()
        elif step.then == "close_stdout":
            self._close_fd("_stdout_w")
        elif step.then == "stop_reading":
            self._reading = False
            try:
                while os.write(self._stdin_w, b"\0" * 65536):  # nobody reads: the pipe fills as a real one would
                    pass
            except BlockingIOError:
                pass
        elif step.then == "close_stdin":
            self._stdin_open = False

    def _say(self, data: bytes) -> None:
        if data and self._stdout_w >= 0:
            os.write(self._stdout_w, data)

    def _close_fd(self, name: str) -> None:
        fd = getattr(self, name)
        if fd >= 0:
            os.close(fd)
            setattr(self, name, -1)

    def _close_outputs(self) -> None:
        self._close_fd("_stdout_w")
        self._close_fd("_stderr_w")

    def stderr(self, text: bytes) -> None:
        os.write(self._stderr_w, text)

    # -- BotProcess ---------------------------------------------------------------------------------------------

    def read_fds(self) -> list[int]:
        return list(self._streams)

    def read(self, fd: int) -> list[tuple[Stream, bytes]]:
        stream = self._streams[fd]
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return []
        if not data:
            del self._streams[fd]
        return [(stream, data)]

    def write_fd(self) -> int | None:
        return self._stdin_w if self._stdin_w >= 0 else None

    def write(self, data: bytes | memoryview) -> int:
        if self._exit is not None or not self._stdin_open:
            raise BrokenPipeError("stdin closed")
        if not self._reading:
            return 0
        lines = (self._pending + bytes(data)).split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            self._hear(json.loads(line))
        return len(data)

    def close_stdin(self) -> None:
        self._close_fd("_stdin_w")
        if self._exit is None and self._reading:  # a correct bot exits when its input ends
            self._exit = Exit(0)
            self._close_outputs()

    def poll(self) -> Exit | None:
        return self._exit

    def kill(self) -> Exit:
        if self._exit is None:
            self._exit = Exit(None, 9)
        self._close_outputs()
        self._close_fd("_stdin_w")
        for fd in list(self._streams):
            os.close(fd)
        self._streams.clear()
        self._close_fd("_stdin_r")
        return self._exit


class ScriptedSandbox(Sandbox):
    """Hands out the given bots in seat order, whatever the specs say."""

    name = "scripted"

    def __init__(self, *bots: ScriptedBot) -> None:
        self.bots = list(bots)

    def guarantees(self) -> dict[str, tuple[bool, str]]:
        return {key: (False, "scripted bots run in the test process, unsandboxed") for key in GUARANTEES}

    def launch(self, bot: BotSpec, limits: SandboxLimits) -> BotProcess:
        return self.bots.pop(0)


def spec(name: str) -> BotSpec:
    return BotSpec(name=name, directory=Path("."), command=("scripted",), files_hash="0" * 16)
