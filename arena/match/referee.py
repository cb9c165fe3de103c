"""The referee: plays one match between bot programs, enforcing the rules, the protocol and the time limits.

It sequences the match (hello, turns, what every seat is told, goodbye) and keeps time; each bot's pipes, line
framing and protocol state are its :class:`~arena.match.channel.BotChannel`'s. It never blocks on a bot (all pipes are
non-blocking and polled against absolute deadlines), and turns every way a bot can misbehave into a
:class:`~arena.game.results.Fault` with a reason code. A faulting bot is killed and forfeits; play goes on for the
others. A failure of the host instead raises :class:`InfrastructureError`: such a match is retried, never rated.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from operator import attrgetter
from pathlib import Path
from time import monotonic
from typing import Any

from arena.bots.manifest import BotSpec
from arena.game.engine import IllegalMoveError, Match
from arena.game.results import Fault, FaultKind, MatchResult, Reason, SeatResult, limit_reason
from arena.game.rules import Rules
from arena.match import protocol
from arena.match.channel import BotChannel, Caps, Poller, State, shown
from arena.match.live import Live, LiveBots
from arena.match.livefeed import LiveFeed, feed_path
from arena.match.matchlog import FORMAT, MatchLog
from arena.match.protocol import InvalidReplyError, Limits
from arena.sandbox import Exit, Sandbox, SandboxError, SandboxLimits

LOGGER = logging.getLogger(__name__)

_LIVE = attrgetter("live")
MOVES = ("play", "declare")
"""The engine events a seat's move makes (one a move)."""

EXIT_GRACE_S = 1.0
"""How long bots get to exit by themselves after ``match_end`` before they are killed (or, for a bot that stays up
for another match, to answer ``done``)."""


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


def seat_names(names: Sequence[str]) -> list[str]:
    """Distinct display names for the seats: a bot entered more than once is ``greedy``, ``greedy-2``, ...

    >>> seat_names(["greedy", "random", "greedy", "greedy"])
    ['greedy', 'random', 'greedy-2', 'greedy-3']
    """
    taken = set(names)
    seen: dict[str, int] = {}
    shown_as = []
    for name in names:
        count = seen[name] = seen.get(name, 0) + 1
        if count > 1:
            while f"{name}-{count}" in taken:  # a bot really called "greedy-2" keeps its name
                count += 1
            seen[name] = count
            taken.add(f"{name}-{count}")
        shown_as.append(name if count == 1 else f"{name}-{count}")
    return shown_as


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
        caps: Caps = Caps(),
        seat_limits: Mapping[int, Limits] | None = None,
        live: LiveBots | None = None,
        lanes: Sequence[str | None] | None = None,
        watched: bool = False,
    ) -> None:
        self.bots = list(bots)
        self.names = seat_names([bot.name for bot in self.bots])
        self.seed = seed
        self.rules = rules
        self.limits = limits
        # A seat may have a clock of its own (a person at the table, arena.play): every other seat keeps ``limits``.
        self.seat_limits = [(seat_limits or {}).get(seat, limits) for seat in range(len(self.bots))]
        self.sandbox = sandbox
        self.sandbox_limits = sandbox_limits
        self.caps = caps
        self.match = Match(len(self.bots), seed, rules)
        self.channels: list[BotChannel] = []
        self.faults: list[Fault | None] = [None] * len(self.bots)
        self.banks = [own.bank_ms for own in self.seat_limits]
        self.thinks = [0] * len(self.seat_limits)
        self.moved: list[int | None] = [None] * len(self.seat_limits)
        """Each seat's last move's event index, until it is asked for its next move."""
        self.poller = Poller()
        self.log = MatchLog(log_path) if log_path is not None else None
        self.log_path = log_path
        # A spectator's view of the match while it plays (a league's, or arena run --live's), beside its log.
        self.feed = LiveFeed(feed_path(log_path), self.names) if watched and log_path is not None else None
        self.started = time.monotonic()
        self._logged_events = 0
        self._told = 0
        self.live = live
        """Where a seat's process comes from and goes back to when it plays several matches (None: one match)."""
        self.lanes: list[str | None] = list(lanes) if lanes is not None and live is not None else [None] * len(bots)
        self.lives: list[Live | None] = [None] * len(self.bots)
        self.persistent = [False] * len(self.bots)
        """Which seats said ``"persistent": true`` in their ``ready``."""

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
                for channel in self.channels:
                    try:
                        channel.kill()  # a no-op on a process kept for the lane's next match
                    except SandboxError as error:  # still kill the other seats before it propagates
                        failure = failure or error
                self.poller.close()
                if self.feed is not None:
                    # Its last moves and its end stay readable a while (a spectator may be a poll behind).
                    self.feed.close(self.match.events if complete else None)
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
        live, limits = self.live, self.sandbox_limits
        if live is not None:
            for seat, (bot, lane) in enumerate(zip(self.bots, self.lanes)):
                if lane is not None:
                    self.lives[seat] = live.take(lane, bot, limits)
        fresh = [bot for bot, kept in zip(self.bots, self.lives) if kept is None]
        try:
            started = iter(self.sandbox.launch_all(fresh, limits)) if fresh else iter(())
        except SandboxError as error:
            for kept in self.lives:
                if kept is not None:
                    kept.process.kill()
            raise InfrastructureError(f"could not start the bots in the {self.sandbox.name} sandbox: {error}") from error
        for seat, bot in enumerate(self.bots):
            kept = self.lives[seat]
            if kept is None:
                process = next(started)
                lane = self.lanes[seat]
                if live is not None and lane is not None:
                    self.lives[seat] = live.fresh(lane, bot, limits, process)
            else:
                process = kept.process
            self.channels.append(BotChannel(seat, process, self.poller, self._fault, self.log, self._now_ms,
                                            self.caps, partial(self._step, seat)))

    def _handshake(self) -> None:
        for channel in self.channels:
            channel.send(protocol.encode(protocol.hello(channel.seat, self.names, self.rules,
                                                        self.seat_limits[channel.seat])), urgent=True)
        deadline = time.monotonic() + max(own.hello_ms for own in self.seat_limits) / 1000
        self._pump(deadline, lambda: not any(channel.waiting for channel in self.channels))
        for channel in self.channels:
            if channel.state is State.STARTING:
                hello_ms = self.seat_limits[channel.seat].hello_ms
                self._fault(channel, Reason.TIMEOUT_HELLO, f"no reply to hello within {hello_ms} ms "
                                                           f"(expected {{\"type\": \"ready\"}})",
                            shown(channel.partial) if channel.partial else None)
            elif channel.state is State.ANSWERED:
                line = channel.take_reply()
                try:
                    self.persistent[channel.seat] = protocol.parse_ready(line)
                except InvalidReplyError as error:
                    self._fault(channel, error.reason, str(error), shown(line))

    def _play_turn(self) -> None:
        seat = self.match.turn
        channel = self.channels[seat]
        bank_ms = self.banks[seat]
        move_ms = self.seat_limits[seat].move_ms
        budget_ms = move_ms + bank_ms
        sent = monotonic()
        self.moved[seat] = None  # asked again: what it writes now is about this turn
        channel.ask(protocol.turn_line(self.match, seat, budget_ms, bank_ms), int((sent - self.started) * 1000))
        if channel.state is not State.AWAITING_MOVE:
            return  # it faulted (or the match ended) on the way
        # _pump(deadline, lambda: not channel.waiting) without the calls: this wait is every turn's.
        deadline = sent + budget_ms / 1000
        wait = self.poller.wait
        while channel.state is State.AWAITING_MOVE:
            remaining = deadline - monotonic()
            if remaining <= 0:
                break
            for ready, fd, writable in wait(remaining):
                if ready.live:
                    ready.on_ready(fd, writable)
        if channel.state is State.AWAITING_MOVE:
            self.thinks[seat] += budget_ms
            self._fault(channel, Reason.TIMEOUT_MOVE, f"no move within {budget_ms} ms ({move_ms} ms "
                                                      f"per move + {bank_ms} ms left in the bank)",
                        shown(channel.partial) if channel.partial else None)
            return
        if channel.state is not State.ANSWERED:
            return
        elapsed_ms = int((monotonic() - sent) * 1000)
        self.thinks[seat] += elapsed_ms
        self.banks[seat] -= max(0, elapsed_ms - move_ms)
        line = channel.take_reply()
        try:
            move = protocol.parse_move(line)
        except InvalidReplyError as error:
            self._fault(channel, error.reason, str(error), shown(line))
            return
        step = len(self.match.events)
        try:
            self.match.apply(move)
        except IllegalMoveError as error:
            self._fault(channel, error.reason, f"{error}; the move was {shown(line)}", shown(line))
            return
        events = self.match.events
        while events[step]["type"] not in MOVES:  # a reshuffle the move's draw made comes first
            step += 1
        self.moved[seat] = step
        if self.match.outcome is not None:
            self._finish()

    def _tell_events(self) -> None:
        """Send every seat what it may know of the engine events since the last call."""
        events = self.match.events
        log = self.log
        while self._told < len(events):
            event = events[self._told]
            self._told += 1
            at_ms = int((monotonic() - self.started) * 1000)
            logging = log is not None and self._logged_events == self._told - 1
            if logging:
                self._logged_events += 1
            if event["type"] == "play":
                self._tell_play(event, at_ms, logging)
                continue
            for channel, message in zip(self.channels, protocol.tell(event, self.match)):
                if message is not None and channel.live:
                    channel.send(message, at_ms=at_ms)
            if logging:
                assert log is not None
                log.write({"t": "event", "event": event})
        if self._logged_events != len(events):
            self._log_events()
        if self.feed is not None:
            self.feed.add(events)

    def _tell_play(self, event: dict[str, Any], at_ms: int, logging: bool) -> None:
        """A move, told to every seat (the mover's message has its draw too; protocol.tell's bytes): every turn's,
        so each seat's message is queued without a call per seat, and the sends and the event logged at once."""
        common, drew = protocol.play_fields(event)
        others = protocol.PLAYED + common + b"}"  # each message without its newline, as the log holds it
        mover = protocol.PLAYED + common + drew + b"}" if drew else others
        seat = event["seat"]
        channels = self.channels
        told: list[bytes | None] = [others] * len(channels)
        told[seat] = mover
        if not all(map(_LIVE, channels)):
            told = [message if channel.live else None for channel, message in zip(channels, told)]
        if self.log is not None:
            # The mover was told every field of the event (its draw too): those bytes are the event's record.
            self.log.write_told(at_ms, told, b'{"t":"event","event":{"type":"play"' + mover[len(protocol.PLAYED):]
                                + b"}\n" if logging else b"")
        others_line = others + b"\n"
        mover_line = mover + b"\n" if drew else others_line
        for channel, message in zip(channels, told):
            if message is not None:
                channel.queue(mover_line if message is mover else others_line)

    def _say_goodbye(self) -> None:
        """Deliver the last messages, close stdin, and give the bots a moment to exit on their own; a bot that stays
        up for its lane's next match has the same moment to answer ``done``, and is then kept or retired."""
        deadline = time.monotonic() + EXIT_GRACE_S
        for channel in self.channels:
            channel.flush()
        self._pump(deadline, lambda: not any(c.pending for c in self.channels if c.live))
        for channel in self.channels:
            if channel.live and not channel.parting:
                channel.close_stdin()
        self._pump(deadline, lambda: all(c.stdout_closed or not c.live or c.state is State.PARTED
                                         for c in self.channels))
        for channel in self.channels:
            if channel.parting:
                self._retire(channel, Reason.TIMEOUT_DONE.value,
                             f'no {{"type": "done"}} within {EXIT_GRACE_S:.0f} s of match_end')
            elif channel.state is State.PARTED:
                self._part(channel)

    def _part(self, channel: BotChannel) -> None:
        """A persistent bot answered ``match_end``: kept for its lane's next match if the answer is ``done`` and the
        pool's rules allow it, else ended."""
        live = self.lives[channel.seat]
        assert live is not None and self.live is not None
        line = channel.take_done()
        try:
            protocol.parse_done(line)
        except InvalidReplyError as error:
            self._retire(channel, Reason.INVALID_DONE.value, str(error))
            return
        why = self.live.keep(live)
        if why is None:
            channel.keep()
        else:
            channel.kill()
            self._log_retired(channel.seat, live, why, self.live.retired[-1].detail if why != "recycle.matches" else "")

    def _retire(self, channel: BotChannel, reason: str, detail: str) -> None:
        """End a persistent bot after the match's end (it is not kept; the match's result stands as it is)."""
        live = self.lives[channel.seat]
        channel.kill()
        if live is not None and self.live is not None:
            self.live.note(live, reason, detail)
            self._log_retired(channel.seat, live, reason, detail)

    def _log_retired(self, seat: int, live: Live, reason: str, detail: str) -> None:
        if self.log is not None:
            self.log.write({"t": "retired", "seat": seat, "lane": live.lane, "matches": live.played,
                            "reason": reason, "detail": detail})

    def _pump(self, deadline: float, done: Callable[[], bool]) -> None:
        """Move bytes in both directions for every bot until ``done()``, the end of the match, or the deadline."""
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            for channel, fd, writable in self.poller.wait(remaining):
                if channel.live:
                    channel.on_ready(fd, writable)

    def _finish(self) -> None:
        """The match is over: every bot is only told so from now on (and nobody waits for a reply but the ``done``
        of a bot kept for its lane's next match)."""
        for channel in self.channels:
            channel.finish(parting=self.persistent[channel.seat] and self.lives[channel.seat] is not None)

    # -- faults -------------------------------------------------------------------------------------------------

    def _fault(self, channel: BotChannel, reason: Reason, detail: str, line: str | None = None,
               ended: Exit | None = None) -> None:
        """Kill the seat's bot and forfeit it. ``ended`` is how the bot ended by itself, when it did."""
        seat = channel.seat
        if (channel.state is State.PARTING or channel.state is State.PARTED) and reason.kind != FaultKind.LIMIT:
            # Said or did something after match_end, or ended, instead of waiting for the next hello: not kept.
            # The match is over and its result stands (a limit is still the seat's fault, as for every bot).
            self._retire(channel, reason.value, detail)
            return
        if self.faults[seat] is not None or self.match.outcome is not None and reason.kind != FaultKind.LIMIT:
            return
        exit_ = channel.kill()
        if exit_.limit and reason.kind in (FaultKind.CRASH, FaultKind.TIMEOUT):
            # What looked like a crash or a silence was the sandbox enforcing a limit: that is the real cause.
            reason, detail, ended = limit_reason(exit_.limit), f"{exit_.describe()} ({detail})", exit_
        fault = self.faults[seat] = Fault(reason, detail, self.match.round, line,
                                          exit_status=None if ended is None else ended.returncode,
                                          signal=None if ended is None else ended.signal)
        LOGGER.info("seat %d (%s) faulted: %s: %s", seat, self.names[seat], reason.value, detail)
        if self.log is not None:
            self.log.write({"t": "fault", "seat": seat, **fault.to_dict(), "stderr_tail": channel.stderr_text()})
        self.match.forfeit(seat, reason.value)
        if self.match.outcome is not None:
            self._finish()  # a forfeit that ends the match ends every wait for a reply, the hello's included

    # -- records ------------------------------------------------------------------------------------------------

    def _step(self, seat: int) -> int:
        """The step a stderr line of ``seat`` arriving now belongs to: from the seat's move until it is asked for
        its next one, that move's (:attr:`moved`); otherwise the index of the event the turn being thought about
        will make. A bot writes its lines while it thinks of its move, but a sandbox that carries stdout and stderr
        apart (docker's attach stream) can hand the referee the move first and the line later, after the move is
        applied and other seats have moved (measured: 41 of 637 lines a step or more late in docker before)."""
        moved = self.moved[seat]
        return len(self.match.events) if moved is None else moved

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
            **({"seat_limits": {str(seat): own.to_dict() for seat, own in enumerate(self.seat_limits)
                                if own != self.limits}} if any(own != self.limits for own in self.seat_limits) else {}),
            "sandbox": self.sandbox.name,
            "sandbox_limits": vars(self.sandbox_limits),
            "bots": [bot.to_dict() | {"name": name} for bot, name in zip(self.bots, self.names)],
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
                seat=seat,
                name=self.names[seat],
                files_hash=bot.files_hash,
                place=outcome.places[seat],
                score=outcome.scores[seat],
                stats=stats[seat],
                fault=self.faults[seat],
                stderr_tail=self.channels[seat].stderr_text(
                    None if self.faults[seat] is not None else self.caps.clean_stderr_bytes) if seat < len(self.channels) else "",
                bank_left_ms=self.banks[seat],
                think_ms=self.thinks[seat],
            )
            for seat, bot in enumerate(self.bots)
        )
        turns = sum(seat.turns for seat in stats)
        return MatchResult(
            seed=self.seed,
            rules=self.rules,
            termination=outcome.termination,
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
    caps: Caps = Caps(),
    seat_limits: Mapping[int, Limits] | None = None,
    live: LiveBots | None = None,
    lanes: Sequence[str | None] | None = None,
    watched: bool = False,
) -> MatchResult:
    """Play one match between ``bots`` (seat i is bots[i]) and return its result; ``caps`` bound what the referee
    holds of each bot's output; ``seat_limits`` gives a seat its own clock (a person's, :mod:`arena.play`). With
    ``live`` and ``lanes``, seat i's process comes from, and a persistent bot's goes back to, lane ``lanes[i]`` of
    ``live`` (None: a process for this match only). ``watched``: spectators may follow it while it plays
    (:mod:`arena.match.livefeed`, beside ``log_path``).

    Raises :class:`InfrastructureError` when the host fails; every misbehaviour of a bot is a fault in the result.
    """
    if not 2 <= len(bots) <= 8:
        raise ValueError(f"a match needs 2 to 8 bots, got {len(bots)}")
    return Referee(bots, seed, sandbox, rules, limits, sandbox_limits, log_path, caps, seat_limits, live, lanes,
                   watched).run()
