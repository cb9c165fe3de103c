"""What the league server tells an operator: ``/healthz``, ``/readyz`` and ``/metrics`` (Prometheus).

- ``GET /healthz``: the process answers (``200 ok``); nothing else is looked at, so a load balancer or systemd's
  watchdog can tell a hung event loop from a busy league.
- ``GET /readyz``: ``200`` only when the league's thread is alive and its state is neither failed (paused by an
  error, stopped) nor stalled (paused by a full disk, waiting for its Dask scheduler); else ``503``. The body is
  JSON and says the state either way, so a server whose league pauses on an error (a store it cannot write, a
  lease lost) is visibly not ready while its pages still answer.
- ``GET /metrics``: the Prometheus text format, made by prometheus-client from a registry of this application's
  own (never the module-global one: tests run several applications in one process). The league's, the upload
  queue's and the connections' figures are read when scraped (:class:`ServerCollector`); the requests' counts and
  latencies are counted by :class:`RequestMetrics`, labelled by the route's path template (``/me/play/{game}/state``),
  never the raw path, so a client cannot grow the label set.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, StateSetMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Match, Route

from arena.server.guard import ASGIApp, Message, Receive, Scope, Send
from arena.server.state import Shared, shared

PHASES = ("starting", "running", "waiting", "connecting", "disk full", "failed", "stalled", "stopped")
"""What the league is doing, in a bounded set (its state is free text: it names the error and the next try)."""
READY = ("running", "waiting")
UNMATCHED = "<unmatched>"
"""The route label of a request no route matched (a 404): one label for every such path."""


def phase(state: str) -> str:
    """The league's state (:class:`arena.run.league.LeagueState`'s ``state``) as one of :data:`PHASES`."""
    for prefix, name in (("running", "running"), ("waiting", "waiting"), ("starting", "starting"),
                         ("connecting", "connecting"), ("paused: the disk is full", "disk full"),
                         ("paused", "failed"), ("stopped", "stopped")):
        if state.startswith(prefix):
            return name
    return "stalled"  # what the cluster player says: a lost scheduler, a refused worker, when it tries next


def league_thread(request: Request) -> threading.Thread | None:
    found = getattr(request.app.state, "league_thread", None)
    return found if isinstance(found, threading.Thread) else None


def readiness(server: Shared, thread: threading.Thread | None) -> tuple[bool, dict[str, Any]]:
    """Whether the server is ready (its league plays or waits for bots), and the body that says why."""
    state = server.league.state
    if thread is None or not thread.is_alive():
        reason = "this server does not run its league" if not server.run_league else "the league's thread is gone"
        return False, {"ready": False, "phase": "stopped", "state": state.state, "reason": reason}
    current = phase(state.state)
    body: dict[str, Any] = {"ready": current in READY, "phase": current, "state": state.state}
    if state.error is not None:
        body["error"] = state.error
    return current in READY, body


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok\n", headers={"Cache-Control": "no-store"})


async def readyz(request: Request) -> Response:
    ready, body = readiness(shared(request), league_thread(request))
    return JSONResponse(body, 200 if ready else 503, headers={"Cache-Control": "no-store"})


async def metrics(request: Request) -> Response:
    registry: Metrics = request.app.state.metrics
    return Response(generate_latest(registry.registry), media_type=CONTENT_TYPE_LATEST,
                    headers={"Cache-Control": "no-store"})


ROUTES = (Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"]),
          Route("/metrics", metrics, methods=["GET"]))


class ServerCollector(Collector):
    """The figures the server keeps anyway, read at each scrape: nothing is counted twice."""

    def __init__(self, server: Shared, thread: Callable[[], threading.Thread | None],
                 connections: Callable[[], int | None]) -> None:
        self.server = server
        self.thread = thread
        self.connections = connections

    def collect(self) -> Iterator[Metric]:
        league = self.server.league.state
        yield CounterMetricFamily("arena_league_matches_played", "Matches the league played since the server "
                                  "started (failed ones included).", value=league.matches_played)
        yield CounterMetricFamily("arena_league_batches", "Batches the league played since the server started.",
                                  value=league.batches)
        yield CounterMetricFamily("arena_league_errors", "Times an error paused the league (it tries again).",
                                  value=league.errors)
        current = phase(league.state)
        yield StateSetMetricFamily("arena_league_phase", "What the league is doing.",
                                   value={name: name == current for name in PHASES})
        ready, _ = readiness(self.server, self.thread())
        yield GaugeMetricFamily("arena_ready", "1 when /readyz answers 200.", value=int(ready))
        yield GaugeMetricFamily("arena_league_active_bots", "Bot versions in the league's field.",
                                value=len(league.active))
        admission = self.server.admission
        checking = int(admission.limiter.borrowed_tokens)
        yield GaugeMetricFamily("arena_check_slots_in_use", "Uploads being checked now.", value=checking)
        yield GaugeMetricFamily("arena_check_slots", "Uploads that can be checked at once.",
                                value=float(admission.limiter.total_tokens))
        yield GaugeMetricFamily("arena_upload_queue", "Uploads taken on and waiting for a check slot.",
                                value=max(0, admission.in_flight - checking))
        open_connections = self.connections()
        if open_connections is not None:
            yield GaugeMetricFamily("arena_open_connections", "HTTP connections open now.", value=open_connections)


class Metrics:
    """One application's registry: its request metrics and its :class:`ServerCollector`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("arena_http_requests", "HTTP requests answered, by route template.",
                                ("method", "route", "status"), registry=self.registry)
        self.latency = Histogram("arena_http_request_duration_seconds", "From a request's start to its answer's "
                                 "last byte, by route template.", ("method", "route"), registry=self.registry)
        self._connections: Callable[[], int] | None = None

    def watch(self, server: Shared, thread: Callable[[], threading.Thread | None]) -> None:
        self.registry.register(ServerCollector(server, thread, self.open_connections))

    def count_connections(self, count: Callable[[], int]) -> None:
        """Where the open connections are counted (the HTTP server's own set, once it is made)."""
        self._connections = count

    def open_connections(self) -> int | None:
        return None if self._connections is None else self._connections()


def route_template(scope: Scope) -> str:
    """The path template of the route that answered (``scope["route"]``, set by Starlette's router), or of the first
    route that matches, for a Starlette that does not set it."""
    route = scope.get("route")
    router = scope.get("router")
    if route is None and router is not None:
        routes: Sequence[BaseRoute] = router.routes
        route = next((candidate for candidate in routes if candidate.matches(scope)[0] is Match.FULL), None)
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED


class RequestMetrics:
    """ASGI middleware: counts each HTTP request and times it to its answer's last byte, labelled by route
    template. A request whose client went before the answer is counted with status 499 (nginx's word for it)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 499

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception:
            status = 500
            raise
        finally:
            route = route_template(scope)
            self.metrics.requests.labels(scope["method"], route, str(status)).inc()
            self.metrics.latency.labels(scope["method"], route).observe(time.perf_counter() - started)
