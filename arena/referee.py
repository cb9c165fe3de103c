"""The referee: plays one match between bot programs, enforcing the rules, the protocol and the time limits.

It owns the conversation with each bot (through the sandbox's :class:`~arena.sandbox.BotProcess`), never blocks on
a bot (all pipes are non-blocking and polled against absolute deadlines), and turns every way a bot can misbehave
into a :class:`~arena.results.Fault` with a reason code. A faulting bot is killed and forfeits; play goes on for the others. A failure
of the host instead raises :class:`InfrastructureError`: such a match is retried, never rated.
"""

from __future__ import annotations

import logging
import selectors
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from arena import protocol
from arena.game import IllegalMoveError, Match
from arena.manifest import BotSpec
from arena.matchlog import FORMAT, MatchLog
from arena.protocol import MAX_LINE, InvalidReplyError, Limits
from arena.results import Fault, FaultKind, MatchResult, Reason, SeatResult, limit_reason
from arena.rules import Rules
from arena.sandbox import BotProcess, Exit, Sandbox, SandboxError, SandboxLimits

LOGGER = logging.getLogger(__name__)

STDERR_TAIL = 64 * 1024
PENDING_CAP = 1 << 20
"""Bytes we hold for a bot that does not read its stdin before calling it a fault."""
BATCH_BYTES = 16 * 1024
"""Messages that want no reply wait in a seat's buffer until one that does (or this much) is queued: one write
and one wake-up of the bot per turn instead of one per message, in the same order (PROTOCOL.md, "Delivery")."""
EXIT_GRACE_S = 1.0
"""How long bots get to exit by themselves after ``match_end`` before they are killed."""


@contextmanager
def _stop_signals_held() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # Python runs signal handlers in the main thread only; nothing to hold elsewhere
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


class InfrastructureError(RuntimeError):
    """The host failed (the sandbox could not start, say); the match is void, to be retried and never rated."""


class _Seat:
    """The referee's side of one bot's pipes: buffers, the pending reply, the time bank and any fault."""

    def __init__(self, seat: int, bot: BotSpec, process: BotProcess, bank_ms: int) -> None:
        self.seat = seat
        self.bot = bot
        self.process = process
        self.outbuf = bytearray()
        self.partial = bytearray()
        self.stderr = bytearray()
        self.expecting = False
        self.reply: bytes | None = None
        self.bank_ms = bank_ms
        self.fault: Fault | None = None
        self.closed = False  # stdout reached end of file
        self.exit: Exit | None = None

    @property
    def active(self) -> bool:
        return self.fault is None and self.exit is None

    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")


class Referee:
    """Runs one match. Use :func:`play_match` unless you need the object."""

    def __init__(
        self,
        bots: Sequence[BotSpec],
        seed: int,
        sandbox: Sandbox,
        rules: Rules = Rules(),
        limits: Limits = Limits(),
        sandbox_limits: SandboxLimits = SandboxLimits(),
        log_path: Path | None = None,
    ) -> None:
        self.bots = list(bots)
        self.seed = seed
        self.rules = rules
        self.limits = limits
        self.sandbox = sandbox
        self.sandbox_limits = sandbox_limits
        self.match = Match(len(self.bots), seed, rules)
        self.seats: list[_Seat] = []
        self.selector = selectors.DefaultSelector()
        self.log = MatchLog(log_path) if log_path is not None else None
        self.log_path = log_path
        self.started = time.monotonic()
        self._logged_events = 0
        self._told = 0

    # -- the match ----------------------------------------------------------------------------------------------

    def run(self) -> MatchResult:
        try:
            return self._run()
        except SandboxError as error:
            # A backend failing mid-match (a container engine going away, say) is the host's failure too.
            raise InfrastructureError(f"the {self.sandbox.name} sandbox failed during the match: {error}") from error

    def _run(self) -> MatchResult:
        complete = False
        try:
            self._write_header()
            self._launch()
            self._handshake()
            while self.match.outcome is None:
                self._tell_events()
                if self.match.outcome is None:
                    self._play_turn()
            self._tell_events()
            self._say_goodbye()
            complete = True
        finally:
            # A stop signal (Ctrl-C, a runner's SIGTERM) must not cut the clean-up short and leave bots running
            # or a log half-written: it is held until the clean-up is done, then delivered.
            with _stop_signals_held():
                failure: SandboxError | None = None
                for seat in self.seats:
                    try:
                        self._kill(seat)
                    except SandboxError as error:  # still kill the other seats before it propagates
                        failure = failure or error
                self.selector.close()
                self._log_events()
                result = self._result() if complete else None
                if self.log is not None:
                    if result is not None:
                        self.log.write({"t": "result", "result": result.to_dict()})
                    self.log.close(complete=complete)
            if failure is not None and complete:  # otherwise the exception in flight says more
                raise failure
        assert result is not None
        return result

    def _launch(self) -> None:
        try:
            processes = self.sandbox.launch_all(self.bots, self.sandbox_limits)
        except SandboxError as error:
            raise InfrastructureError(f"could not start the bots in the {self.sandbox.name} sandbox: {error}") from error
        for index, (bot, process) in enumerate(zip(self.bots, processes)):
            seat = _Seat(index, bot, process, self.limits.bank_ms)
            self.seats.append(seat)
            for fd in process.read_fds():
                self.selector.register(fd, selectors.EVENT_READ, (seat, fd))

    def _handshake(self) -> None:
        names = [bot.name for bot in self.bots]
        for seat in self.seats:
            self._send(seat, protocol.hello(seat.seat, names, self.rules, self.limits), urgent=True)
            seat.expecting = True
        deadline = time.monotonic() + self.limits.hello_ms / 1000
        self._pump(deadline, lambda: all(s.reply is not None or not s.active for s in self.seats))
        for seat in self.seats:
            if not seat.active:
                continue
            if seat.reply is None:
                self._fault(seat, Reason.TIMEOUT_HELLO, f"no reply to hello within {self.limits.hello_ms} ms "
                                                        f"(expected {{\"type\": \"ready\"}})",
                            line=_shown(seat.partial) if seat.partial else None)
                continue
            line, seat.reply = seat.reply, None
            try:
                protocol.parse_ready(line)
            except InvalidReplyError as error:
                self._fault(seat, error.reason, str(error), line=_shown(line))

    def _play_turn(self) -> None:
        seat = self.seats[self.match.turn]
        budget_ms = self.limits.move_ms + seat.bank_ms
        self._send(seat, protocol.turn(self.match.view(seat.seat), budget_ms, seat.bank_ms), urgent=True)
        if not seat.active:
            return
        seat.expecting = True
        sent = time.monotonic()
        self._pump(sent + budget_ms / 1000, lambda: seat.reply is not None or not seat.active)
        if not seat.active:
            return
        if seat.reply is None:
            self._fault(seat, Reason.TIMEOUT_MOVE, f"no move within {budget_ms} ms ({self.limits.move_ms} ms per "
                                                   f"move + {seat.bank_ms} ms left in the bank)",
                        line=_shown(seat.partial) if seat.partial else None)
            return
        elapsed_ms = int((time.monotonic() - sent) * 1000)
        seat.bank_ms -= max(0, elapsed_ms - self.limits.move_ms)
        line, seat.reply = seat.reply, None
        try:
            move = protocol.parse_move(line)
        except InvalidReplyError as error:
            self._fault(seat, error.reason, str(error), line=_shown(line))
            return
        try:
            self.match.apply(move)
        except IllegalMoveError as error:
            self._fault(seat, error.reason, f"{error}; the move was {_shown(line)}", line=_shown(line))

    def _tell_events(self) -> None:
        """Send every seat what it may know of the engine events since the last call."""
        events = self.match.events
        while self._told < len(events):
            event = events[self._told]
            self._told += 1
            previous: tuple[dict[str, Any] | None, bytes] = (None, b"")
            for seat in self.seats:
                if seat.active:
                    message = protocol.for_seat(event, seat.seat, self.match)
                    if message is not None:
                        # Most messages are the same for every seat: encode them once.
                        data = previous[1] if message == previous[0] else protocol.encode(message)
                        previous = (message, data)
                        self._queue(seat, data)
        self._log_events()

    def _say_goodbye(self) -> None:
        """Deliver the last messages, close stdin, and give the bots a moment to exit on their own."""
        deadline = time.monotonic() + EXIT_GRACE_S
        for seat in self.seats:
            self._flush(seat)
        self._pump(deadline, lambda: not any(s.outbuf for s in self.seats if s.active))
        for seat in self.seats:
            if seat.active:
                seat.process.close_stdin()
        self._pump(deadline, lambda: all(s.closed or not s.active for s in self.seats))

    # -- faults -------------------------------------------------------------------------------------------------

    def _fault(self, seat: _Seat, reason: Reason, detail: str, line: str | None = None,
               ended: Exit | None = None) -> None:
        """Kill the seat's bot and forfeit it. ``ended`` is how the bot ended by itself, when it did."""
        if seat.fault is not None or self.match.outcome is not None and reason.kind != FaultKind.LIMIT:
            return
        exit_ = self._kill(seat)
        if exit_.limit and reason.kind in (FaultKind.CRASH, FaultKind.TIMEOUT):
            # What looked like a crash or a silence was the sandbox enforcing a limit: that is the real cause.
            reason, detail, ended = limit_reason(exit_.limit), f"{exit_.describe()} ({detail})", exit_
        seat.fault = Fault(reason, detail, self.match.round, line,
                           exit_status=None if ended is None else ended.returncode,
                           signal=None if ended is None else ended.signal)
        LOGGER.info("seat %d (%s) faulted: %s: %s", seat.seat, seat.bot.name, reason.value, detail)
        if self.log is not None:
            self.log.write({"t": "fault", "seat": seat.seat, **seat.fault.to_dict(), "stderr_tail": seat.stderr_text()})
        self.match.forfeit(seat.seat, reason.value)

    def _kill(self, seat: _Seat) -> Exit:
        """Kill the bot's whole tree and keep what it wrote to stderr until then."""
        for fd in seat.process.read_fds():
            self._drain(seat, fd)
            try:
                self.selector.unregister(fd)
            except (KeyError, ValueError):
                pass
        if seat.exit is None:
            seat.exit = seat.process.kill()
        return seat.exit

    def _crashed(self, seat: _Seat, reason: Reason, what: str) -> None:
        """A pipe closed: say how the bot ended if it did (an exit is the cause, whichever pipe noticed it)."""
        deadline = time.monotonic() + 0.2
        while seat.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        ended = seat.process.poll()
        if ended is None:
            self._fault(seat, reason, f"{what} while still running")
        elif ended.limit:
            self._fault(seat, limit_reason(ended.limit), f"{ended.describe()} ({what})", ended=ended)
        else:
            self._fault(seat, Reason.CRASH_EXIT, ended.describe(), ended=ended)

    # -- pipes --------------------------------------------------------------------------------------------------

    def _send(self, seat: _Seat, message: dict[str, Any], urgent: bool = False) -> None:
        self._queue(seat, protocol.encode(message), urgent)

    def _queue(self, seat: _Seat, data: bytes, urgent: bool = False) -> None:
        if self.log is not None:
            self.log.write_message("send", seat.seat, self._now_ms(), data)
        seat.outbuf += data
        if urgent or len(seat.outbuf) > BATCH_BYTES:
            self._flush(seat)

    def _flush(self, seat: _Seat) -> None:
        if not seat.active or not seat.outbuf:
            return
        fd = seat.process.write_fd()
        if fd is None:
            return
        try:
            written = seat.process.write(seat.outbuf)
        except (BrokenPipeError, ConnectionResetError):
            self._crashed(seat, Reason.CRASH_CLOSED_STDIN, "closed its stdin")
            return
        del seat.outbuf[:written]
        if len(seat.outbuf) > PENDING_CAP:
            self._fault(seat, Reason.TIMEOUT_NOT_READING, f"not reading its input ({len(seat.outbuf)} bytes waiting)")
            return
        self._want_write(seat, fd, bool(seat.outbuf))

    def _want_write(self, seat: _Seat, fd: int, want: bool) -> None:
        key = self.selector.get_map().get(fd)
        if want and key is None:
            self.selector.register(fd, selectors.EVENT_WRITE, (seat, fd))
        elif not want and key is not None:
            self.selector.unregister(fd)

    def _pump(self, deadline: float, done: Any) -> None:
        """Move bytes in both directions for every bot until ``done()`` or the deadline."""
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            for key, mask in self.selector.select(remaining):
                seat, fd = key.data
                if not seat.active:
                    continue
                if mask & selectors.EVENT_WRITE and fd == seat.process.write_fd():
                    self._flush(seat)
                else:
                    self._receive(seat, fd)

    def _drain(self, seat: _Seat, fd: int) -> None:
        """Read what is already waiting on ``fd`` (stderr tails matter most when a bot dies)."""
        for _ in range(64):  # bounded: a flooding bot must not keep us here
            chunks = seat.process.read(fd)
            if not any(data for _, data in chunks):
                return
            for stream, data in chunks:
                if stream == "stderr":
                    self._keep_stderr(seat, data)

    def _keep_stderr(self, seat: _Seat, data: bytes) -> None:
        seat.stderr += data
        if len(seat.stderr) > STDERR_TAIL:
            del seat.stderr[: len(seat.stderr) - STDERR_TAIL]

    def _receive(self, seat: _Seat, fd: int) -> None:
        for stream, data in seat.process.read(fd):
            if stream == "stderr":
                if data:
                    self._keep_stderr(seat, data)
                else:
                    self._unregister(fd)
                continue
            if not data:
                self._unregister(fd)
                seat.closed = True
                if self.match.outcome is None and seat.active:
                    self._crashed(seat, Reason.CRASH_CLOSED_STDOUT, "closed its stdout" if seat.partial == b"" else
                                  f"closed its stdout in the middle of a line ({len(seat.partial)} bytes)")
                return
            self._stdout(seat, data)
            if not seat.active:
                return

    def _unregister(self, fd: int) -> None:
        try:
            self.selector.unregister(fd)
        except (KeyError, ValueError):
            pass

    def _stdout(self, seat: _Seat, data: bytes) -> None:
        if self.match.outcome is not None:
            return  # after match_end nothing a bot says matters
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                seat.partial += data[start:]
                if len(seat.partial) > MAX_LINE:
                    self._fault(seat, Reason.INVALID_LINE_TOO_LONG, f"a line longer than {MAX_LINE} bytes "
                                                                      f"(cut off at {len(seat.partial)} bytes)",
                                line=_shown(seat.partial))
                return
            line = bytes(seat.partial) + data[start:newline]
            seat.partial.clear()
            start = newline + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if self.log is not None:
                self.log.write_message("recv", seat.seat, self._now_ms(), line[: MAX_LINE + 1])
            if len(line) > MAX_LINE:
                self._fault(seat, Reason.INVALID_LINE_TOO_LONG, f"a line longer than {MAX_LINE} bytes "
                                                              f"({len(line)} bytes)", line=_shown(line))
                return
            if not seat.expecting:
                if seat.reply is not None:
                    # Two lines for one request: when the first is no reply at all (debug text, say), that is
                    # what the author needs to hear about, not the second.
                    try:
                        protocol.parse_line(seat.reply)
                    except InvalidReplyError as error:
                        self._fault(seat, error.reason, str(error), line=_shown(seat.reply))
                        return
                self._fault(seat, Reason.INVALID_UNSOLICITED, "sent a line when no reply was asked for: "
                                                              f"{_shown(line)!r} (only hello and turn want a reply; "
                                                              "debug output belongs on stderr)", line=_shown(line))
                return
            seat.expecting = False
            seat.reply = line

    # -- records ------------------------------------------------------------------------------------------------

    def _now_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def _write_header(self) -> None:
        if self.log is None:
            return
        self.log.write({
            "t": "header",
            "format": FORMAT,
            "seed": self.seed,
            "players": len(self.bots),
            "rules": self.rules.to_dict(),
            "limits": self.limits.to_dict(),
            "sandbox": self.sandbox.name,
            "sandbox_limits": vars(self.sandbox_limits),
            "bots": [bot.to_dict() for bot in self.bots],
        })

    def _log_events(self) -> None:
        if self.log is None:
            return
        for event in self.match.events[self._logged_events:]:
            self.log.write({"t": "event", "event": event})
        self._logged_events = len(self.match.events)

    def _result(self) -> MatchResult:
        outcome = self.match.outcome
        assert outcome is not None
        stats = self.match.seat_stats()
        players = tuple(
            SeatResult(
                seat=seat.seat,
                name=seat.bot.name,
                files_hash=seat.bot.files_hash,
                place=outcome.places[seat.seat],
                score=outcome.scores[seat.seat],
                stats=stats[seat.seat],
                fault=seat.fault,
                stderr_tail=seat.stderr_text(),
                bank_left_ms=seat.bank_ms,
            )
            for seat in self.seats
        )
        turns = sum(seat.turns for seat in stats)
        return MatchResult(
            seed=self.seed,
            rules=self.rules,
            termination=outcome.termination.value,
            rounds=self.match.round,
            turns=turns,
            players=players,
            duration_s=time.monotonic() - self.started,
            log_path=self.log_path,
            events=tuple(self.match.events),
        )


def play_match(
    bots: Sequence[BotSpec],
    seed: int,
    sandbox: Sandbox,
    rules: Rules = Rules(),
    limits: Limits = Limits(),
    sandbox_limits: SandboxLimits = SandboxLimits(),
    log_path: Path | None = None,
) -> MatchResult:
    """Play one match between ``bots`` (seat i is bots[i]) and return its result.

    Raises :class:`InfrastructureError` when the host fails; every misbehaviour of a bot is a fault in the result.
    """
    if not 2 <= len(bots) <= 8:
        raise ValueError(f"a match needs 2 to 8 bots, got {len(bots)}")
    return Referee(bots, seed, sandbox, rules, limits, sandbox_limits, log_path).run()


def _shown(line: bytes | bytearray, limit: int = 200) -> str:
    """The start of a line a bot sent, as text (for a fault's ``line``)."""
    return bytes(line[:limit]).decode("utf-8", errors="replace")
