"""One bot's end of the conversation: its pipes, line framing, caps, stderr tail and protocol state.

A :class:`BotChannel` moves bytes between the referee and one :class:`~arena.sandbox.BotProcess`, cuts what the bot
writes into lines, logs every line in both directions as it goes, and tracks where the conversation is with an
explicit :class:`State` (every transition is checked against :data:`TRANSITIONS`, in the manner of python-chess's
``BaseCommand``). It knows nothing of the rules, the clock or the match: when the bot breaks the protocol it says so
through ``on_fault`` and the referee decides what that costs. :class:`Poller` is the one epoll every channel of a
match registers with; the referee waits on it.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from arena.game.results import Reason, limit_reason
from arena.match import protocol
from arena.match.protocol import MAX_LINE, InvalidReplyError
from arena.match.stderr import CLEAN_BYTES, FAULT_BYTES, StderrKeeper
from arena.sandbox import BotProcess, Exit


@dataclass(frozen=True)
class Caps:
    """How much of a bot's output and unread input the referee holds before it is a fault (or, for stderr, cut)."""

    line_bytes: int = MAX_LINE
    """A reply line longer than this (newline excluded) is ``invalid.line_too_long``."""
    pending_bytes: int = 1 << 20
    """Bytes held for a bot that does not read its stdin before it is ``timeout.not_reading``."""
    stderr_bytes: int = FAULT_BYTES
    """The head and the tail of stderr kept for the result of a seat that faulted (arena/match/stderr.py)."""
    clean_stderr_bytes: int = CLEAN_BYTES
    """What a seat that ends without a fault keeps of that: the store's growth per clean seat and match."""
    batch_bytes: int = 16 * 1024
    """Messages that want no reply wait in the buffer until one that does (or this much) is queued: one write and
    one wake-up of the bot per turn instead of one per message, in the same order (PROTOCOL.md, "Delivery")."""


class State(Enum):
    """Where the conversation with one bot is."""

    STARTING = "starting"
    """Launched and sent hello; its ``ready`` has not arrived."""
    ANSWERED = "answered"
    """A reply (to hello or to a turn) arrived and is held until the referee takes it."""
    IDLE = "idle"
    """Nothing is asked of the bot: any line now is unsolicited."""
    AWAITING_MOVE = "awaiting_move"
    """Sent a turn; its next line is the move."""
    FINISHED = "finished"
    """The match is over: what the bot says no longer matters; it is told the end and left to exit."""
    PARTING = "parting"
    """The match is over for a bot that plays several matches per process: its next line is ``done``."""
    PARTED = "parted"
    """Said ``done`` (held until the referee takes it): any further line is unsolicited."""
    KEPT = "kept"
    """Handed back alive for another match: this channel no longer touches it."""
    CLOSED = "closed"
    """Killed (a fault, or the end of the match); nothing more goes either way."""

    # Members are singletons: hashing by identity is the same mapping as Enum's hash of the name, without a Python
    # call (three state changes a turn each look up TRANSITIONS).
    __hash__ = object.__hash__


TRANSITIONS: dict[State, frozenset[State]] = {
    State.STARTING: frozenset({State.ANSWERED, State.FINISHED, State.CLOSED}),
    State.ANSWERED: frozenset({State.IDLE, State.FINISHED, State.CLOSED}),
    State.IDLE: frozenset({State.AWAITING_MOVE, State.FINISHED, State.PARTING, State.CLOSED}),
    State.AWAITING_MOVE: frozenset({State.ANSWERED, State.FINISHED, State.CLOSED}),
    State.FINISHED: frozenset({State.CLOSED}),
    State.PARTING: frozenset({State.PARTED, State.CLOSED}),
    State.PARTED: frozenset({State.KEPT, State.CLOSED}),
    State.KEPT: frozenset(),
    State.CLOSED: frozenset(),
}
"""Every legal change of state; anything else is a bug in the referee, and asserted."""

FaultHook = Callable[["BotChannel", Reason, str, "str | None", "Exit | None"], None]
"""``on_fault(channel, reason, detail, line, ended)``: the bot broke the protocol or ended; ``ended`` is how its
process ended by itself, when it did. The referee may kill the channel (it then becomes CLOSED) or ignore it."""


class Recorder(Protocol):
    """Where a channel logs the lines it moves (:class:`arena.match.matchlog.MatchLog` is one)."""

    def write_sent(self, seat: int, at_ms: int, line: bytes) -> None: ...

    def write_received(self, seat: int, at_ms: int, line: bytes) -> None: ...


class Poller:
    """One epoll for every channel of a match: which descriptor belongs to which channel, and which want writing."""

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._owners: dict[int, BotChannel] = {}
        self._writing: set[int] = set()

    def register(self, fd: int, channel: BotChannel) -> None:
        self._epoll.register(fd, select.EPOLLIN)
        self._owners[fd] = channel

    def unregister(self, fd: int) -> None:
        if self._owners.pop(fd, None) is not None:
            self._writing.discard(fd)
            try:
                self._epoll.unregister(fd)
            except (OSError, ValueError):  # already closed by its process
                pass

    def want_write(self, fd: int, channel: BotChannel, want: bool) -> None:
        if want is (fd in self._writing):
            return  # as it is: the usual case, every flush of a bot that reads its input
        if want:
            self._epoll.register(fd, select.EPOLLOUT)
            self._owners[fd] = channel
            self._writing.add(fd)
        else:
            self.unregister(fd)

    def wait(self, timeout_s: float) -> list[tuple[BotChannel, int, bool]]:
        """The ready descriptors as ``(channel, fd, writable)``, waiting at most ``timeout_s``."""
        owners, writing = self._owners, self._writing
        return [(owners[fd], fd, fd in writing) for fd, _ in self._epoll.poll(timeout_s) if fd in owners]

    def close(self) -> None:
        self._epoll.close()


class BotChannel:
    """The referee's side of one bot's pipes."""

    def __init__(self, seat: int, process: BotProcess, poller: Poller, on_fault: FaultHook,
                 log: Recorder | None = None, now_ms: Callable[[], int] = lambda: 0, caps: Caps = Caps()) -> None:
        self.seat = seat
        self.process = process
        self.state = State.STARTING
        self.live = True
        """Not closed: the bot is still told what happens (read on every message, so kept, not computed)."""
        self.exit: Exit | None = None
        self.stdout_closed = False
        self.partial = bytearray()
        """The start of a line that has no newline yet."""
        self._outbuf = bytearray()
        self._batch_bytes = caps.batch_bytes
        self._stderr = StderrKeeper(caps.stderr_bytes)
        self._reply: bytes | None = None
        self._poller = poller
        self._on_fault = on_fault
        self._log = log
        self._now_ms = now_ms
        self._caps = caps
        for fd in process.read_fds():
            poller.register(fd, self)

    # -- state --------------------------------------------------------------------------------------------------

    def _to(self, state: State) -> None:
        assert state in TRANSITIONS[self.state], f"seat {self.seat}: {self.state.name} -> {state.name}"
        self.state = state
        self.live = state is not State.CLOSED and state is not State.KEPT

    @property
    def waiting(self) -> bool:
        """A reply is asked for and has not arrived."""
        return self.state is State.STARTING or self.state is State.AWAITING_MOVE

    @property
    def pending(self) -> bool:
        """Bytes are queued for the bot that it has not read."""
        return bool(self._outbuf)

    def take_reply(self) -> bytes:
        """The reply that arrived; the bot is idle again."""
        assert self._reply is not None and self.state is State.ANSWERED, f"seat {self.seat}: {self.state.name}"
        line, self._reply = self._reply, None
        self.state = State.IDLE  # _to(State.IDLE) without the call: the one change TRANSITIONS allows from ANSWERED
        return line

    def finish(self, parting: bool = False) -> None:
        """The match is over: nothing the bot says from now on matters, except, when ``parting`` (a bot that
        plays several matches per process and is idle), the ``done`` that answers ``match_end``."""
        if self.state is State.IDLE and parting:
            self._to(State.PARTING)
        elif self.state not in (State.CLOSED, State.FINISHED, State.PARTING, State.PARTED, State.KEPT):
            self._to(State.FINISHED)

    @property
    def parting(self) -> bool:
        """Told the end, and its ``done`` has not arrived."""
        return self.state is State.PARTING

    def take_done(self) -> bytes:
        """The line that answered ``match_end``."""
        assert self._reply is not None and self.state is State.PARTED, f"seat {self.seat}: {self.state.name}"
        return self._reply

    def keep(self) -> BotProcess:
        """Hand the live process back for another match: its descriptors leave this match's poller, unread bytes
        stay in its pipes (the next match's channel, or the pool's check before it, reads them)."""
        assert self.state is State.PARTED, f"seat {self.seat}: {self.state.name} -> KEPT"
        for fd in self.process.read_fds():
            self._poller.unregister(fd)
        stdin = self.process.write_fd()
        if stdin is not None:
            self._poller.want_write(stdin, self, False)
        self._to(State.KEPT)
        return self.process

    def stderr_text(self, cap: int | None = None) -> str:
        """The head and the tail of stderr, within ``cap`` bytes when given (else all that was kept)."""
        return self._stderr.text(cap)

    # -- writing ------------------------------------------------------------------------------------------------

    def ask(self, data: bytes, at_ms: int | None = None) -> None:
        """Send a turn: the bot's next line is its move."""
        assert self.state is State.IDLE, f"seat {self.seat}: {self.state.name} -> AWAITING_MOVE"
        self.state = State.AWAITING_MOVE  # _to's change without the call (IDLE -> AWAITING_MOVE is in TRANSITIONS)
        self.send(data, urgent=True, at_ms=at_ms)

    def queue(self, data: bytes) -> None:
        """:meth:`send` for a message that wants no reply and that the caller logged."""
        outbuf = self._outbuf
        outbuf += data
        if len(outbuf) > self._batch_bytes:
            self.flush()

    def send(self, data: bytes, urgent: bool = False, at_ms: int | None = None) -> None:
        """Queue one encoded message; it goes now if ``urgent`` (it wants a reply) or the batch is full.
        ``at_ms`` is the time to log it at, when the caller already read the clock (for one event, every seat)."""
        if self._log is not None:
            self._log.write_sent(self.seat, self._now_ms() if at_ms is None else at_ms, data)
        outbuf = self._outbuf
        outbuf += data
        if urgent or len(outbuf) > self._batch_bytes:
            self.flush()

    def flush(self) -> None:
        outbuf = self._outbuf
        if self.state is State.CLOSED or not outbuf:
            return
        process = self.process
        fd = process.write_fd()
        if fd is None:
            return
        try:
            # The buffer itself: a backend's write hands it to os.write, which holds it only during the call.
            written = process.write(outbuf)
        except (BrokenPipeError, ConnectionResetError):
            self._ended(Reason.CRASH_CLOSED_STDIN, "closed its stdin")
            return
        if written == len(outbuf):
            outbuf.clear()  # all of it went (the usual case): nobody waits to write to this bot
            self._poller.want_write(fd, self, False)
            return
        del outbuf[:written]
        if len(outbuf) > self._caps.pending_bytes:
            self._on_fault(self, Reason.TIMEOUT_NOT_READING,
                           f"not reading its input ({len(outbuf)} bytes waiting)", None, None)
            return
        self._poller.want_write(fd, self, True)

    def close_stdin(self) -> None:
        fd = self.process.write_fd()
        if fd is not None:
            self._poller.want_write(fd, self, False)
        self.process.close_stdin()

    # -- reading ------------------------------------------------------------------------------------------------

    def on_ready(self, fd: int, writable: bool) -> None:
        """The poller says ``fd`` is ready."""
        if writable:
            self.flush()
            return
        for stream, data in self.process.read(fd):
            if stream == "stderr":
                if data:
                    self._keep_stderr(data)
                else:
                    self._poller.unregister(fd)
                continue
            if not data:
                self._poller.unregister(fd)
                self.stdout_closed = True
                if self.state is not State.FINISHED and self.state is not State.CLOSED:
                    self._ended(Reason.CRASH_CLOSED_STDOUT, "closed its stdout" if not self.partial else
                                f"closed its stdout in the middle of a line ({len(self.partial)} bytes)")
                return
            self._stdout(data)
            if self.state is State.CLOSED:
                return

    def _keep_stderr(self, data: bytes) -> None:
        self._stderr.add(data)

    def _stdout(self, data: bytes) -> None:
        if self.state is State.FINISHED:
            return  # after match_end nothing a bot says matters
        cap = self._caps.line_bytes
        if not self.partial and data.find(b"\n") == len(data) - 1 and len(data) <= cap and data[-2:-1] != b"\r":
            # One whole line in one chunk (every well-behaved reply): the loop below without its cases.
            line = data[:-1]
            if self._log is not None:
                self._log.write_received(self.seat, self._now_ms(), line)
            self._line(line)
            return
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                if start == len(data):
                    return  # the chunk ended with a line (the usual case)
                self.partial += data[start:]
                if len(self.partial) > cap:
                    self._on_fault(self, Reason.INVALID_LINE_TOO_LONG,
                                   f"a line longer than {cap} bytes (cut off at {len(self.partial)} bytes)",
                                   shown(self.partial), None)
                return
            if self.partial:
                line = bytes(self.partial) + data[start:newline]
                self.partial.clear()
            else:
                line = data[start:newline]
            start = newline + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if self._log is not None:
                self._log.write_received(self.seat, self._now_ms(), line[: cap + 1])
            if len(line) > cap:
                self._on_fault(self, Reason.INVALID_LINE_TOO_LONG, f"a line longer than {cap} bytes "
                                                                   f"({len(line)} bytes)", shown(line), None)
                return
            if not self._line(line):
                return

    def _line(self, line: bytes) -> bool:
        """One complete line from the bot; False when it was a fault (stop reading this chunk)."""
        state = self.state
        if state is State.AWAITING_MOVE or state is State.STARTING:
            self._reply = line
            self.state = State.ANSWERED  # _to's change without the call: TRANSITIONS allows it from both
            return True
        if state is State.PARTING:
            self._reply = line
            self._to(State.PARTED)
            return True
        if self.state is State.ANSWERED:
            # Two lines for one request: when the first is no reply at all (debug text, say), that is what the
            # author needs to hear about, not the second.
            assert self._reply is not None
            try:
                protocol.parse_line(self._reply)
            except InvalidReplyError as error:
                self._on_fault(self, error.reason, str(error), shown(self._reply), None)
                return False
        self._on_fault(self, Reason.INVALID_UNSOLICITED, "sent a line when no reply was asked for: "
                                                         f"{shown(line)!r} (only hello and turn want a reply; "
                                                         "debug output belongs on stderr)", shown(line), None)
        return False

    # -- the end ------------------------------------------------------------------------------------------------

    def _ended(self, reason: Reason, what: str) -> None:
        """A pipe closed: say how the bot ended if it did (an exit is the cause, whichever pipe noticed it)."""
        deadline = time.monotonic() + 0.2
        while self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        ended = self.process.poll()
        if ended is None:
            self._on_fault(self, reason, f"{what} while still running", None, None)
        elif ended.limit:
            self._on_fault(self, limit_reason(ended.limit), f"{ended.describe()} ({what})", None, ended)
        else:
            self._on_fault(self, Reason.CRASH_EXIT, ended.describe(), None, ended)

    def kill(self) -> Exit:
        """Kill the bot's whole tree, keeping what it wrote to stderr until then; the channel is closed. A kept
        process is no longer this channel's: nothing happens to it."""
        if self.state is State.KEPT:
            return Exit(None)
        for fd in self.process.read_fds():
            self._drain(fd)
            self._poller.unregister(fd)
        stdin = self.process.write_fd()
        if stdin is not None:
            self._poller.want_write(stdin, self, False)
        if self.exit is None:
            self.exit = self.process.kill()
        if self.state is not State.CLOSED:
            self._to(State.CLOSED)
        return self.exit

    def _drain(self, fd: int) -> None:
        """Read what is already waiting on ``fd`` (stderr tails matter most when a bot dies)."""
        for _ in range(64):  # bounded: a flooding bot must not keep us here
            chunks = self.process.read(fd)
            if not any(data for _, data in chunks):
                return
            for stream, data in chunks:
                if stream == "stderr":
                    self._keep_stderr(data)


def shown(line: bytes | bytearray, limit: int = 200) -> str:
    """The start of a line a bot sent, as text (for a fault's ``line``)."""
    return bytes(line[:limit]).decode("utf-8", errors="replace")
