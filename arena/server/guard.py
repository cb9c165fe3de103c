"""What the league server does before a request reaches the application: a cap on open connections, deadlines on
request headers and bodies, rate-limited log lines, and the headers every answer carries.

uvicorn holds a connection that sends nothing, half a header block or half a body for as long as the client likes
(its keep-alive timeout starts only after a response), and it accepts connections until the process runs out of
descriptors: 1,100 idle connections stopped an unguarded server. :func:`guarded_protocol` is uvicorn's own h11
protocol with three additions, all per connection and all on the event loop (no thread, no task):

- **a connection cap**: at ``max_connections`` open connections, a new one closes the connection that has waited
  longest for a request's headers, if that is over :data:`EVICT_AFTER_S` (an idle or a slowloris one: a real client
  sends its headers at once, so it is never the oldest waiting), or else gets an immediate ``503`` with
  ``Retry-After``; descriptors stay bounded whatever a client opens, and clients that send requests are served;
- **a header deadline**: a request's headers must be complete within ``header_timeout_s`` of the connection's
  start (or of the previous response), however slowly they trickle in; else ``408`` and the connection is closed;
- **a body deadline**: while the application is reading a request body, the client must send some of it every
  ``body_timeout_s`` and all of it within ``body_total_s``; else the connection is closed and the application sees
  a disconnect. Time the application itself takes (checking an upload) is never counted.

:class:`RateLimitedLog` caps log lines per source and message per minute (an out-of-descriptors error once wrote
379 MB of identical tracebacks in 90 s); :class:`SecurityHeaders` is the ASGI middleware that adds CSP,
anti-framing and ``nosniff`` headers to every answer.
"""

from __future__ import annotations

import dataclasses
import logging
import resource
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import h11
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
    body_timeout_s: float = 15.0
    """The longest silence while a body is being sent."""
    body_total_s: float = 120.0
    """The longest a whole body may take (5 MiB at 44 KB/s)."""


def _raw(status: str, retry_after: int | None = None) -> bytes:
    text = status.encode()
    head = [b"HTTP/1.1 " + text, b"content-type: text/plain; charset=utf-8",
            b"content-length: " + str(len(text) + 1).encode(), b"connection: close"]
    if retry_after is not None:
        head.append(b"retry-after: " + str(retry_after).encode())
    return b"\r\n".join(head) + b"\r\n\r\n" + text + b"\n"


EVICT_AFTER_S = 1.0
"""A connection waiting this long for its request's headers may be closed for a new one (a fresh one may be a real
client whose headers are on their way)."""
FULL = _raw("503 Service Unavailable", retry_after=5)
SLOW_HEADERS = _raw("408 Request Timeout")


def guarded_protocol(limits: ConnectionLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with ``limits`` (pass it as ``uvicorn.Config(http=...)``)."""

    waiting: dict[Guarded, None] = {}  # connections in the header phase, oldest first (a dict keeps the order)
    evicted: set[Guarded] = set()  # closed by the cap, not yet gone from the server's connections

    class Guarded(H11Protocol):
        _refused = False
        _watch: Any = None
        _idle_since = 0.0
        _last_data = 0.0
        _request_at = 0.0
        _cycle: object = None

        def connection_made(self, transport: Any) -> None:
            if len(self.connections) - len(evicted) >= limits.max_connections:
                oldest = next(iter(waiting), None)
                now = self.loop.time()
                if oldest is None or now - oldest._idle_since < EVICT_AFTER_S:
                    # Before joining the server's connections: it costs a descriptor for a moment, no more.
                    self._refused = True
                    self.transport = transport
                    transport.write(FULL)
                    transport.close()
                    LOGGER.warning("refused a connection: %d open, all busy (server.max_connections)",
                                   len(self.connections))
                    return
                LOGGER.warning("closed the connection waiting longest for its request: %d open "
                               "(server.max_connections)", len(self.connections))
                oldest._evict()
            super().connection_made(transport)
            self._idle_since = self._last_data = self.loop.time()
            waiting[self] = None
            self._check()

        def _evict(self) -> None:
            waiting.pop(self, None)
            evicted.add(self)
            self._disarm()
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return
            waiting.pop(self, None)
            evicted.discard(self)
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            self._last_data = self.loop.time()
            before = self.cycle
            super().data_received(data)
            if self.cycle is not before and self.cycle is not None:
                self._request_at = self._last_data  # a new request's headers are in: the body's deadlines now
                waiting.pop(self, None)
                self._disarm()
            if self._watch is None:
                self._check()

        def on_response_complete(self) -> None:
            self._idle_since = self.loop.time()
            self._disarm()
            if self not in evicted:
                waiting[self] = None
            super().on_response_complete()
            if self.cycle is not None and not self.cycle.response_complete:
                waiting.pop(self, None)  # a pipelined request started at once
            if not self.transport.is_closing() and self._watch is None:
                self._check()

        def _disarm(self) -> None:
            if self._watch is not None:
                self._watch.cancel()
                self._watch = None

        def _deadline(self) -> tuple[str, float] | None:
            cycle = self.cycle
            if cycle is None or cycle.response_complete:
                return "headers", self._idle_since + limits.header_timeout_s
            if cycle.more_body and not self.flow.read_paused:
                return "body", min(self._last_data + limits.body_timeout_s, self._request_at + limits.body_total_s)
            return None

        def _check(self) -> None:
            self._watch = None
            if self.transport is None or self.transport.is_closing():
                return
            now = self.loop.time()
            due = self._deadline()
            if due is None:
                cycle = self.cycle
                if cycle is not None and not cycle.response_complete and cycle.more_body:
                    # The application has not read what came (flow control paused reading): not the client's
                    # silence. Look again later, counting from now.
                    self._last_data = now
                    self._watch = self.loop.call_later(limits.body_timeout_s, self._check)
                return  # the application's turn: on_response_complete arms the next deadline
            phase, at = due
            if now < at:
                self._watch = self.loop.call_later(at - now, self._check)
                return
            if phase == "headers":
                LOGGER.info("closed a connection whose request headers took more than %g s",
                            limits.header_timeout_s)
                if self.conn.our_state is h11.IDLE:  # nothing of a response sent yet
                    self.transport.write(SLOW_HEADERS)
            else:
                LOGGER.info("closed a connection whose request body stalled (%g s without data, or %g s in all)",
                            limits.body_timeout_s, limits.body_total_s)
            self.transport.close()

    return Guarded


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


ACCEPT_BACKLOG = 128
"""The listening socket's backlog, and so the most connections accepted in one go (kept under the room that
:func:`run` leaves between the connection cap and the descriptor limit)."""


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


def run(app: ASGIApp, host: str, port: int, limits: ConnectionLimits, own_logs: bool = False,
        count_connections: Callable[[Callable[[], int]], None] | None = None) -> None:
    """Serve ``app`` with uvicorn under ``limits``, its logs rate-limited, until SIGINT or SIGTERM.

    The connection cap stays below the descriptor limit (with room for the store, the league's pipes and the
    sandboxes): past the limit, accept() fails and the loop cannot even refuse politely. ``own_logs``: uvicorn's
    records go to the root logger's handlers (as configured by :mod:`arena.server.logs`) instead of its own.
    ``count_connections`` is given how to count the open connections (for ``/metrics``)."""
    import uvicorn

    soft = raise_descriptor_limit()
    cap = min(limits.max_connections, max(8, soft - 256))
    if cap < limits.max_connections:
        LOGGER.warning("server.max_connections lowered from %d to %d: the open-files limit is %d",
                       limits.max_connections, cap, soft)
    # backlog: asyncio accepts up to this many connections at a time before any protocol sees one (uvicorn's
    # default, 2,048, ran a 1,024-descriptor server out of descriptors in one burst before the cap could act).
    config = uvicorn.Config(app, host=host, port=port, log_level="info", http=guarded_protocol(
        dataclasses.replace(limits, max_connections=cap)), timeout_keep_alive=5, backlog=ACCEPT_BACKLOG,
        log_config=None if own_logs else uvicorn.config.LOGGING_CONFIG)
    rate_limit_logs()
    server = uvicorn.Server(config)
    if count_connections is not None:
        count_connections(lambda: len(server.server_state.connections))
    server.run()
