"""What the league server does before a request reaches the application: a cap on open connections, a deadline
on every state of a connection, rate-limited log lines, and the headers every answer carries.

uvicorn holds a connection that sends nothing, half a header block, half a body, or never reads its answer, for as
long as the client likes (its keep-alive timeout starts only after a response, and closing a connection waits for
its unsent answer), and it accepts connections until the process runs out of descriptors: 1,100 idle
connections stopped an unguarded server, and 500 that trickled a form's body, or 560 that never read, held every
slot of a guarded one that watched only headers (the 2026-12-04 retest). :func:`guarded_protocol` is uvicorn's
own h11 protocol, each connection in one of these states (:class:`Phase`), all on the event loop:

- **headers**: a request's headers must be complete within ``header_timeout_s`` of the connection's start (or
  of the previous answer), however slowly they trickle in; else ``408`` and the connection is closed;
- **an untrusted body**: a body the application has not vouched for (:func:`trust`: an upload whose token
  passed) must be complete within ``header_timeout_s`` of its headers (the login form and the upload form's
  fields before its archive are a few hundred bytes), and never silent for ``body_timeout_s``;
- **a trusted body** (an author's archive): never silent for ``body_timeout_s``, complete within
  ``body_total_s``;
- **sending**: while the client does not take the answer (the socket's buffers are full), it must take some of
  it every ``send_timeout_s``; else the connection is dropped, its unsent answer with it;
- **the application's turn** (reading, checking an upload, writing an answer the client takes): no deadline.

Time the application itself takes is never counted against the client. The first four states wait on the client,
so they are what the cap takes back: at ``max_connections`` less a reserve (:data:`RESERVE_SHARE`), a new
connection closes the one that has waited on its client longest, if that is over :data:`EVICT_AFTER_S` (a real
client sends its request and reads its answer at once, so it is never the oldest waiting); in the reserve it is
taken anyway; at ``max_connections`` the oldest waiting is closed whatever its age. Only when every connection
is the application's turn does a new one get ``503`` with ``Retry-After``. So descriptors stay bounded whatever
a client opens, and a visitor's request always finds a slot.

A request with both ``Content-Length`` and ``Transfer-Encoding`` is refused (``400``, connection closed): h11
would believe the second, and a proxy in front that believed the first would be desynchronised.

:class:`RateLimitedLog` caps log lines per source and message per minute (an out-of-descriptors error once wrote
379 MB of identical tracebacks in 90 s); :class:`SecurityHeaders` is the ASGI middleware that adds CSP,
anti-framing and ``nosniff`` headers to every answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import fcntl
import itertools
import logging
import resource
import signal
import socket
import struct
import termios
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from types import FrameType
from typing import Any, ClassVar, Protocol

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

LOGGER = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class ConnectionLimits:
    """The connection-level limits (``server:`` keys of the same names, docs/SERVER.md)."""

    max_connections: int = 500
    header_timeout_s: float = 10.0
    """The longest a request's headers may take; also an untrusted body's whole time."""
    body_timeout_s: float = 15.0
    """The longest silence while a body is being sent."""
    body_total_s: float = 120.0
    """The longest a trusted body may take (5 MiB at 44 KB/s)."""
    send_timeout_s: float = 15.0
    """The longest a client may leave its answer untaken while the server's buffers for it are full."""
    listen_backlog: int = 128
    """The kernel's queue of connections not yet accepted (:data:`ACCEPT_BATCH` is taken from it at a time)."""


def _raw(status: str, retry_after: int | None = None) -> bytes:
    text = status.encode()
    head = [b"HTTP/1.1 " + text, b"content-type: text/plain; charset=utf-8",
            b"content-length: " + str(len(text) + 1).encode(), b"connection: close"]
    if retry_after is not None:
        head.append(b"retry-after: " + str(retry_after).encode())
    return b"\r\n".join(head) + b"\r\n\r\n" + text + b"\n"


EVICT_AFTER_S = 1.0
"""A connection waiting on its client this long may be closed for a new one below the reserve (a fresh one may
be a real client whose request is on its way)."""
RESERVE_SHARE = 0.1
"""The share of ``max_connections`` kept for new connections: past the rest, the oldest waiting is closed for a
new one however young it is."""
SEND_BACKLOG = 64 << 10
"""Unsent bytes past which a connection waits on its client to take its answer (uvicorn's own high-water mark)."""
SEND_POLL_S = 1.0
FULL = _raw("503 Service Unavailable", retry_after=5)
SLOW_HEADERS = _raw("408 Request Timeout")
TRUST = "arena.trust"
"""The scope key of the callable by which the application vouches for a request's sender (:func:`trust`)."""


def trust(scope: Scope) -> None:
    """The application knows this request's sender (a valid token): its body gets the longer deadlines and its
    connection is no longer the cap's to close. A no-op outside the guard (tests' in-process clients)."""
    vouch = scope.get(TRUST)
    if vouch is not None:
        vouch()


class Phase(enum.Enum):
    """What a connection waits for; the first four wait on the client."""

    HEADERS = "headers"
    UNTRUSTED_BODY = "an untrusted body"
    TRUSTED_BODY = "a body"
    SENDING = "the client to take its answer"
    PIPELINED = "answers to requests sent before their turn"
    """The application's turn, but for a client that pipelines requests (no browser does): its connection is
    closed after this answer, the requests queued behind it unanswered (560 such clients asking 100 times each for
    a style sheet kept every slot busy answering them, and the public pages waited 1.7 s)."""
    APPLICATION = "the application"


EVICTABLE = frozenset({Phase.HEADERS, Phase.UNTRUSTED_BODY, Phase.SENDING, Phase.PIPELINED})
"""What the cap may close: a trusted body is an author's upload, bounded by the upload queue."""


async def _ambiguous_length(send: Send) -> None:
    body = b"a request may not have both Content-Length and Transfer-Encoding\n"
    await send({"type": "http.response.start", "status": 400, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
        (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _framed_twice(scope: Scope) -> bool:
    names = {name for name, _ in scope.get("headers", ())}
    return b"content-length" in names and b"transfer-encoding" in names


class _Waiter(Protocol):
    """What the cap sees of a connection."""

    phase: Phase

    def drop(self) -> None: ...

    def request_waiting(self) -> bool: ...


SCAN = 64
PEEK = 16 << 10
"""How many of the oldest waiting connections the cap looks at for one that sent nothing unread."""


class _Slots:
    """The connections of one server that wait on their clients, oldest first, and those closed by the cap but
    not yet gone from the server's count."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.reserve_at = max(1, round(limits.max_connections * (1 - RESERVE_SHARE)))
        self.waiting: dict[_Waiter, float] = {}  # insertion order is the order of the times
        self.evicted: set[_Waiter] = set()

    def _oldest(self) -> tuple[_Waiter, float] | None:
        """The connection waiting longest on its client, passing over those whose whole request head is in the
        kernel but not yet read (the loop accepts up to 128 connections at a time: a visitor's, its request sent
        at once, could otherwise be the oldest by the time the loop reads it, and be reset)."""
        for waiter, since in itertools.islice(self.waiting.items(), SCAN):
            if waiter.phase is not Phase.HEADERS or not waiter.request_waiting():
                return waiter, since
        return None

    def admit(self, open_now: int, now: float) -> bool:
        """Make room for one more connection if the cap calls for it; False if there is none to make."""
        count = open_now - len(self.evicted)
        if count < self.reserve_at:
            return True
        oldest = self._oldest()
        if oldest is not None and (now - oldest[1] >= EVICT_AFTER_S or count >= self.limits.max_connections):
            LOGGER.warning("closed the connection waiting longest on its client (%s, %.1f s): %d open "
                           "(server.max_connections)", oldest[0].phase.value, now - oldest[1], count)
            oldest[0].drop()
            return True
        if count < self.limits.max_connections:
            return True
        LOGGER.warning("refused a connection: %d open, none waiting on its client (server.max_connections)", count)
        return False


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and the cap of the module docstring; :func:`guarded_protocol`
    makes the subclass that holds one server's limits and slots."""

    limits: ClassVar[ConnectionLimits]
    slots: ClassVar[_Slots]
    _refused = False
    _watch: Any = None
    phase = Phase.HEADERS
    _since = 0.0  # when the current phase began
    _last_data = 0.0
    _request_at = 0.0
    _cycle_seen: object = None
    _trusted: object = None  # the cycle the application vouched for

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._app = self.app
        self.app = self._guarded_app

    async def _guarded_app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if _framed_twice(scope):
            await _ambiguous_length(send)
            return
        cycle = self.cycle
        scope[TRUST] = lambda: self._vouch(cycle)
        await self._app(scope, receive, send)

    def _vouch(self, cycle: object) -> None:
        self._trusted = cycle
        self._update()

    # -- uvicorn's events ---------------------------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        if not self.slots.admit(len(self.connections), self.loop.time()):
            # Before joining the server's connections: it costs a descriptor for a moment, no more.
            self._refused = True
            self.transport = transport
            transport.write(FULL)
            transport.close()
            return
        super().connection_made(transport)
        self._last_data = self.loop.time()
        self._enter(Phase.HEADERS)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self.slots.waiting.pop(self, None)
        self.slots.evicted.discard(self)
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        self._last_data = self.loop.time()
        super().data_received(data)
        self._update()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._update()

    def pause_writing(self) -> None:
        super().pause_writing()
        self._update()

    def resume_writing(self) -> None:
        super().resume_writing()
        self._update()

    # -- the state and its deadline -------------------------------------------------------------------------

    def _current(self) -> Phase:
        cycle = self.cycle
        if self.flow is not None and (self.flow.write_paused or self._unsent() > SEND_BACKLOG):
            return Phase.SENDING
        if cycle is None or cycle.response_complete:
            return Phase.HEADERS
        if cycle.more_body and not self.flow.read_paused:
            return Phase.TRUSTED_BODY if self._trusted is cycle else Phase.UNTRUSTED_BODY
        if self.conn.trailing_data[0]:
            return Phase.PIPELINED
        return Phase.APPLICATION

    def _unsent(self) -> int:
        """Bytes of answers the client has not taken: in the transport's buffer and in the kernel's (a reader
        with a small window leaves megabytes there, with the transport's buffer empty)."""
        return self._socket_count(termios.TIOCOUTQ) + int(self.transport.get_write_buffer_size())

    def request_waiting(self) -> bool:
        """Whether the end of a request's head is among what the client sent and the loop has not read yet."""
        found = self.transport.get_extra_info("socket") if self.transport is not None else None
        if found is None or self._socket_count(termios.FIONREAD) == 0:
            return False
        peek = socket.socket(fileno=found.fileno())  # asyncio's wrapper has no recv; detached below, not closed
        try:
            return b"\r\n\r\n" in peek.recv(PEEK, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:
            return False
        finally:
            peek.detach()

    def _socket_count(self, request: int) -> int:
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is None:
            return 0
        try:
            return int(struct.unpack("i", fcntl.ioctl(sock.fileno(), request, b"\0" * 4))[0])
        except OSError:
            return 0

    def _update(self) -> None:
        if self.transport is None or self._refused:
            return
        if self.cycle is not self._cycle_seen:  # a new request's headers are in: its body's total from now
            self._cycle_seen = self.cycle
            self._request_at = self.loop.time()
        phase = self._current()
        if phase is not self.phase:
            self._enter(phase)

    def _enter(self, phase: Phase) -> None:
        if phase is Phase.PIPELINED and self.cycle is not None:
            self.cycle.keep_alive = False
        self.phase = phase
        self._since = self.loop.time()
        self.slots.waiting.pop(self, None)
        if phase in EVICTABLE and self not in self.slots.evicted:
            self.slots.waiting[self] = self._since
        self._disarm()
        self._check()

    def _deadline(self) -> float | None:
        if self.phase is Phase.HEADERS:
            return self._since + self.limits.header_timeout_s
        if self.phase is Phase.SENDING:
            return self._since + self.limits.send_timeout_s
        if self.phase in (Phase.APPLICATION, Phase.PIPELINED):
            return None
        total = self.limits.body_total_s if self.phase is Phase.TRUSTED_BODY else self.limits.header_timeout_s
        return min(self._last_data + self.limits.body_timeout_s, self._request_at + total)

    def _check(self) -> None:
        self._watch = None
        if self.transport is None:
            return
        if self._current() is not self.phase:
            self._enter(self._current())
            return
        at = self._deadline()
        if at is None:
            if self.cycle is not None and self.cycle.more_body:
                # The application has not read what came (flow control paused reading), and its reading
                # again is no event of ours: look again later, the silence so far not the client's.
                self._last_data = self.loop.time()
                self._watch = self.loop.call_later(self.limits.body_timeout_s, self._check)
            return  # else the application's turn: its next event arms the next deadline
        now = self.loop.time()
        if now < at:
            # A sender is looked at each second: its client may take its answer with no event of ours.
            wait = min(at - now, SEND_POLL_S) if self.phase is Phase.SENDING else at - now
            self._watch = self.loop.call_later(wait, self._check)
            return
        LOGGER.info("closed a connection that waited on %s past its deadline (server.header_timeout_s, "
                    "body_timeout_s, send_timeout_s)", self.phase.value)
        if self.phase is Phase.HEADERS and self.conn.our_state is h11.IDLE and not self.transport.is_closing():
            self.transport.write(SLOW_HEADERS)  # nothing of a response sent yet
        self.drop()

    def _disarm(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None

    def drop(self) -> None:
        """Close the connection now: at once if an answer is stuck in its buffer (closing would wait for the
        client to read it, which a slow reader never does)."""
        self.slots.waiting.pop(self, None)
        self.slots.evicted.add(self)
        self._disarm()
        if self._unsent() == 0:
            self.transport.close()
            return
        sock = self.transport.get_extra_info("socket")
        if sock is not None:  # a reset, not an orphan holding its unsent answer in the kernel
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()



def guarded_protocol(limits: ConnectionLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with ``limits`` (pass it as ``uvicorn.Config(http=...)``)."""
    return type("Guarded", (GuardedProtocol,), {"limits": limits, "slots": _Slots(limits)})


class RateLimitedLog(logging.Filter):
    """Lets through at most ``per_minute`` records of one logger and message template a minute; the first one let
    through after a suppression says how many were dropped."""

    def __init__(self, per_minute: int = 20, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.per_minute = per_minute
        self.clock = clock
        self._windows: dict[tuple[str, str], tuple[float, int, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg)[:200])
        now = self.clock()
        start, count, dropped = self._windows.get(key, (now, 0, 0))
        if now - start >= 60:
            if dropped:
                record.msg = f"[{dropped} more like the next line dropped in the last minute] {record.msg}"
            start, count, dropped = now, 0, 0
        if count >= self.per_minute:
            self._windows[key] = (start, count, dropped + 1)
            return False
        if len(self._windows) > 10_000:
            self._windows.clear()  # many distinct messages: forget the old windows rather than grow
        self._windows[key] = (start, count + 1, dropped)
        return True


def rate_limit_logs(per_minute: int = 20) -> RateLimitedLog:
    """Put one :class:`RateLimitedLog` on every handler of the root logger and of uvicorn's loggers."""
    limiter = RateLimitedLog(per_minute)
    for name in ("", "uvicorn", "uvicorn.error", "uvicorn.access"):
        for handler in logging.getLogger(name).handlers:
            handler.addFilter(limiter)
    return limiter


CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-frame-options", b"DENY"),
           (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin")]


class SecurityHeaders:
    """ASGI middleware: every HTTP answer of ``app`` carries :data:`HEADERS`, so no page of the server or the site
    may be framed (clickjacking of ``/me``'s buttons), run a script from elsewhere, or be sniffed as another type."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *(pair for pair in HEADERS if pair[0] not in present)]
            await send(message)

        await self.app(scope, receive, sending)


ACCEPT_BATCH = 128
"""The most connections the event loop accepts in one go, before any protocol sees one (asyncio takes this from
the ``backlog`` it is given): kept under the room that :func:`run` leaves between the connection cap and the
descriptor limit (uvicorn's default, 2,048, ran a 1,024-descriptor server out of descriptors in one burst)."""

# The kernel's queue (``server.listen_backlog``, capped by ``net.core.somaxconn``) is another matter, measured both
# ways (docs/SERVER.md, "Measured"): at 128, attackers reopening what the eviction closed overflow it, and a
# visitor's connection dropped there is sent again after a second; at 4,096 nothing is dropped, but 1,100 slowloris
# connections keep 700 queued ahead of every visitor, reopened as fast as they are closed (37,000 in 40 s against
# 6,500), and the probe's worst p95 rose from 0.36 to 1.16 s. Queued connections cost the server no descriptor.


DESCRIPTOR_ROOM = 256
"""Descriptors kept for the store, the league's pipes and sandboxes, and a burst of accepts."""
DESCRIPTORS_PER_CONNECTION = 2
"""A connection's socket, and the file it is sending (a page of the site) or receiving (an upload): 560 slow
readers of a style sheet held 1,000 descriptors of a 1,024 limit with the cap at 768 connections."""


def raise_descriptor_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit (systemd's default soft limit is 1,024);
    return the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 16)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (OSError, ValueError):
            pass
    return soft


def listen(host: str, port: int, backlog: int = ConnectionLimits.listen_backlog) -> socket.socket:
    """The server's listening socket, bound before anything is served or played (so a port in use is one line and
    an exit, not a league started for nothing); OSError says why it cannot be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def run(app: ASGIApp, sock: socket.socket, limits: ConnectionLimits, proxies: tuple[str, ...] = (),
        own_logs: bool = False, count_connections: Callable[[Callable[[], int]], None] | None = None,
        on_stop: Callable[[], object] | None = None) -> int | None:
    """Serve ``app`` on the listening ``sock`` with uvicorn under ``limits``, its logs rate-limited, until SIGINT
    or SIGTERM; return the signal that stopped it (None if uvicorn stopped by itself), the application shut down
    (the league's matches stopped, its lease released). ``X-Forwarded-For`` and ``-Proto`` are believed only from
    the addresses in ``proxies``.
    ``own_logs``: uvicorn's records go to the root logger's handlers (as :mod:`arena.server.logs` set them) instead
    of its own; ``count_connections`` is given how to count the open connections (for ``/metrics``); ``on_stop`` is
    called as the stop begins, before uvicorn waits for the requests in flight to be answered (an upload's check
    would otherwise hold the stop for up to its build's time limit: 59 s measured, with the default 60 s limit).

    The connection cap stays below the descriptor limit (with room for the store, the league's pipes and the
    sandboxes): past the limit, accept() fails and the loop cannot even refuse politely."""

    soft = raise_descriptor_limit()
    cap = min(limits.max_connections, max(8, (soft - DESCRIPTOR_ROOM) // DESCRIPTORS_PER_CONNECTION))
    if cap < limits.max_connections:
        LOGGER.warning("server.max_connections lowered from %d to %d: the open-files limit is %d",
                       limits.max_connections, cap, soft)
    self_test(guarded_protocol(limits))
    config = uvicorn.Config(app, log_level="info", http=guarded_protocol(
        dataclasses.replace(limits, max_connections=cap)), timeout_keep_alive=5, backlog=ACCEPT_BATCH,
        proxy_headers=bool(proxies), forwarded_allow_ips=list(proxies) or None,
        log_config=None if own_logs else uvicorn.config.LOGGING_CONFIG)
    rate_limit_logs()
    server = _Server(config, limits.listen_backlog, on_stop)
    if count_connections is not None:
        count_connections(lambda: len(server.server_state.connections))
    stopped_by: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        # The handler in force around uvicorn's own: a signal before uvicorn takes over stops it at its start, and
        # the one it caught is raised again once it has shut down (as a plain KeyboardInterrupt that would end
        # the command as interrupted, exit 1, though the stop asked for is done).
        stopped_by.append(signum)
        server.should_exit = True

    previous = {signum: signal.signal(signum, stop) for signum in STOP_SIGNALS}
    try:
        server.run(sockets=[sock])
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return stopped_by[0] if stopped_by else None


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""What stops the server gracefully: Ctrl-C, and what systemd, Docker and ``kill`` send."""


class _Server(uvicorn.Server):
    """uvicorn's server with the kernel's queue at ``listen_backlog`` though the loop accepts :data:`ACCEPT_BATCH`
    at a time: asyncio sets both from one ``backlog`` (it calls ``listen()`` again when it starts serving), so the
    queue is set again once it has; and which says when its stop begins (``on_stop``, see :func:`run`)."""

    def __init__(self, config: uvicorn.Config, listen_backlog: int, on_stop: Callable[[], object] | None) -> None:
        super().__init__(config)
        self.listen_backlog = listen_backlog
        self.on_stop = on_stop

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        for sock in sockets or ():
            sock.listen(self.listen_backlog)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.on_stop is not None:
            self.on_stop()
        await super().shutdown(sockets)


class GuardMismatch(RuntimeError):
    """The installed uvicorn's H11Protocol is not the one :func:`guarded_protocol` was written against."""


def self_test(protocol: type[H11Protocol]) -> None:
    """One request with a body through ``protocol`` over a socket pair, on a loop of its own, answered by a one-line
    application: the guard reads uvicorn's private state (``cycle``, ``flow.read_paused``, ``conn.our_state``,
    ``connections``), and a release that renamed any of it would fail every client, or leave the server
    unguarded, with nothing said at start-up. Raises :class:`GuardMismatch` naming uvicorn's version."""
    import asyncio

    from uvicorn.server import ServerState

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def exchange() -> tuple[bytes, H11Protocol, ServerState]:
        loop = asyncio.get_running_loop()
        state = ServerState()
        config = uvicorn.Config(app, lifespan="off", log_config=None)
        ours, theirs = socket.socketpair()
        with ours, theirs:
            ours.setblocking(False)
            theirs.setblocking(False)
            served = protocol(config=config, server_state=state, app_state={}, _loop=loop)
            await loop.connect_accepted_socket(lambda: served, theirs)
            # A body in two sends, the second once the headers are in: the guard's body deadline then reads the flow
            # control's state. Turns of the loop, not time: each reads what the socket has.
            await loop.sock_sendall(ours, b"POST / HTTP/1.1\r\nhost: self-test\r\ncontent-length: 2\r\n\r\n{")
            for _ in range(SELF_TEST_TURNS):
                if served.cycle is not None:
                    break
                await asyncio.sleep(0)
            await loop.sock_sendall(ours, b"}")
            answer = await asyncio.wait_for(loop.sock_recv(ours, 4096), SELF_TEST_S) or b"no answer"
            if answer.startswith(b"HTTP/1.1 204") and served._watch is None:  # type: ignore[attr-defined]
                answer = b"an answer, but no header deadline for the next request"
            served.transport.close()
            await asyncio.sleep(0)  # connection_lost runs on the next turn of the loop
            return answer, served, state

    try:
        answer, served, state = asyncio.run(exchange())
        fits = answer.startswith(b"HTTP/1.1 204") and served.cycle is not None and not state.connections
    except (TimeoutError, AttributeError, TypeError, OSError) as error:
        answer, fits = repr(error).encode(), False
    if not fits:
        raise GuardMismatch(f"uvicorn {uvicorn.__version__}: arena's connection guard (arena/server/guard.py) does "
                            f"not fit its H11Protocol ({answer[:200]!r}); install the uvicorn that pyproject.toml's "
                            "server extra allows")


SELF_TEST_TURNS = 10_000
"""The most turns of its loop the self-test gives the protocol to read a request's headers (it takes one or two)."""
SELF_TEST_S = 30.0
"""How long the start-up self-test waits for its one answer: generous, it is a loop's turn on an idle socket."""
