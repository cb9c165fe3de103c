"""The league server's web application: the HTTP API, the live standings page and the public results site.

Starlette on uvicorn (see docs/SERVER.md for why): the API is a handful of JSON routes, so a small ASGI toolkit
with streaming request bodies (the upload cap is enforced while reading) and a static-files mount is all it needs.
Handlers do no blocking work on the event loop: the store, the archive guards and the admission check run in
worker threads. Reads go through :class:`~arena.server.views.Views` (a store connection per thread, public
answers cached until the store or the registry changes). The league runs in one background thread started and
stopped with the application (its lifespan).

:func:`create_app` makes what the handlers share (:class:`~arena.server.state.Shared`, in ``app.state``) and the
route table; each handler is a function of its request alone. The pages are templates of the results site
(``site/templates/live.html``, ``upload.html``; :mod:`arena.server.pages`).

Routes: ``POST /api/bots`` (an upload, ``Authorization: Bearer TOKEN``), ``GET /api/bots``, ``GET /api/standings``,
``GET /api/league``, ``GET /api/me`` (an author's own bots, check reports and latest seats with faults and stderr),
``GET /me`` with ``/me/login`` and ``/me/logout`` (the same for a person in a browser,
:mod:`arena.server.authorpage`; with ``/api/me`` the only places that show stderr, and only the author's own),
``GET``/``POST /upload`` (the upload page for people, with a double-submit CSRF cookie), ``GET /`` (standings
that refresh themselves), ``/site/`` (the static site, without stderr). The JSON API is at ``/api/v1/...`` too, with
its OpenAPI document (:mod:`arena.server.openapi`); ``/healthz``, ``/readyz`` and ``/metrics`` are the operator's
(:mod:`arena.server.metrics`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import secrets
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from arena.bots.archive import ArchiveLimits
from arena.bots.manifest import ManifestError, load_bot
from arena.registry.check import check_bot
from arena.registry.versions import REGISTRY_PREFIX, Registry, RegistryError
from arena.run.league import League
from arena.server import authorpage, debugpage, heap, metrics, play, watch
from arena.server.admission import Admission
from arena.server.authorpage import author_data
from arena.server.authors import Author, all_owners
from arena.server.config import ServeConfig
from arena.server.guard import SecurityHeaders, trust
from arena.server.intake import Checker, Intake, IntakeSettings, Reply
from arena.server.metrics import Metrics, RequestMetrics
from arena.server.openapi import API, API_V1, get_openapi
from arena.server.pages import environment, form_page, render
from arena.server.public import league_href, publish_apart
from arena.server.sessions import CSRF_COOKIE, LoginGate, Sessions, csrf_ok
from arena.server.state import Shared, shared
from arena.server.uploadform import FormRefused, read_form
from arena.server.views import Views
from arena.stats.standings import standings as read_standings
from arena.store import Store

REFRESH_S = 10
"""How often the live standings page reloads itself."""


@dataclass(frozen=True)
class ServerSettings:
    db: Path
    config: ServeConfig
    site_dir: Path
    scratch: Path
    run_league: bool = True


def json_body(data: Any) -> bytes:
    """JSON as Starlette's JSONResponse writes it, so cached bodies read the same as fresh ones."""
    return json.dumps(data, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"status": "rejected", "error": message}, status, headers=headers)


FORM_OVERHEAD = 64 << 10
"""Room for the multipart framing and the small fields around the archive."""
BEARER = {"WWW-Authenticate": 'Bearer realm="arena"'}
CSRF_FAILED = ("the form expired or came from another site (CSRF check): reload this page and submit again")


def create_app(settings: ServerSettings, checker: Checker = check_bot) -> Starlette:
    """The application: what its handlers share (:class:`~arena.server.state.Shared`, in ``app.state``) and the
    route table."""
    config = settings.config
    name = config.league.name
    settings.scratch.mkdir(parents=True, exist_ok=True)
    settings.site_dir.mkdir(parents=True, exist_ok=True)
    registry = Registry(config.league.registry)
    meters = Metrics()
    app = Starlette(routes=[
        Route("/", home),
        *api_routes(API), *api_routes(API_V1),
        Route("/upload", get_upload, methods=["GET"]),
        Route("/upload", post_upload, methods=["POST"]),
        *authorpage.ROUTES,
        *debugpage.ROUTES,
        *watch.ROUTES,
        *play.ROUTES,
        *metrics.ROUTES,
        Route("/site", to_site),
        Mount("/site", StaticFiles(directory=settings.site_dir, html=True, check_dir=False)),
    ], lifespan=lifespan, middleware=[Middleware(RequestMetrics, metrics=meters), Middleware(SecurityHeaders)],
        exception_handlers={ClientDisconnect: cut_off})
    intake_settings = IntakeSettings(db=settings.db, registry=config.league.registry, scratch=settings.scratch,
                                     sandbox=config.check_sandbox, uploads_per_hour=config.uploads_per_hour,
                                     archive=ArchiveLimits(max_archive_bytes=config.max_upload_bytes),
                                     build=config.build, house=house_names(config.league.entries))
    views = Views(settings.db, registry)
    app.state.tables = play.Tables()
    app.state.server = Shared(
        name=name,
        league=League(config.league, settings.db, publish=lambda store, ids: published(store, name, settings.site_dir)),
        intake=Intake(intake_settings, checker, live=lambda author: views.author(author.id) is not None),
        admission=Admission(dataclasses.replace(config.admission, slots=intake_settings.check_slots)),
        registry=registry, views=views, sessions=Sessions(), logins=LoginGate(config.logins),
        templates=environment(),
        scratch=settings.scratch, site=settings.site_dir, cap=config.max_upload_bytes, run_league=settings.run_league)
    app.state.metrics = meters
    app.state.league_thread = None
    meters.watch(app.state.server, lambda: app.state.league_thread)
    return app


def published(store: Store, name: str, site_dir: Path) -> None:
    """Publish the league's site, in a process of its own (:func:`arena.server.public.publish_apart`), then give
    the heap's free pages back: the standings the web threads worked out since the last publish peak with the
    league's size too (:mod:`arena.server.heap`)."""
    publish_apart(store.path, name, site_dir)
    heap.give_back()


def api_routes(prefix: str) -> list[Route]:
    """The JSON API under ``prefix``: it is served at ``/api/v1`` and, for the clients written before that, at
    ``/api`` (:mod:`arena.server.openapi` describes both)."""
    return [Route(f"{prefix}/bots", bots, methods=["GET", "POST"]),
            Route(f"{prefix}/standings", get_standings, methods=["GET"]),
            Route(f"{prefix}/league", get_league, methods=["GET"]),
            Route(f"{prefix}/me", get_me, methods=["GET"]),
            Route(f"{prefix}/openapi.json", get_openapi, methods=["GET"]),
            *watch.api_routes(prefix)]


async def bots(request: Request) -> Response:
    """``/api/bots``: one route for both methods, so that any other gets ``405`` with ``Allow: GET, HEAD, POST``."""
    return await (post_bot(request) if request.method == "POST" else get_bots(request))


async def to_site(request: Request) -> Response:
    """``/site`` to ``/site/`` by a relative address: Starlette's own slash redirect names the request's Host
    header, which a caching proxy keyed on something else would serve to everyone."""
    return RedirectResponse("/site/", 307)


async def cut_off(request: Request, failure: Exception) -> Response:
    """A client that went (or was closed for stalling, :mod:`arena.server.guard`) before its body was read: no
    one is there to read the answer, and it is no error of ours to log."""
    return Response("the request was cut off\n", 400, media_type="text/plain")


def house_names(entries: tuple[str, ...]) -> tuple[str, ...]:
    """The names of the league's house bots: its ``bots:`` that are directories, not ``registry:`` entries."""
    names = []
    for entry in entries:
        if entry.startswith(REGISTRY_PREFIX):
            continue
        try:
            names.append(load_bot(entry).name)
        except ManifestError:
            continue  # the league reports it when it loads its bots
    return tuple(names)


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """The league's thread runs while the application does."""
    server: Shared = app.state.server
    stop = threading.Event()
    thread = None
    if server.run_league:
        thread = threading.Thread(target=server.league.run, args=(stop,), name=f"league-{server.name}", daemon=True)
        thread.start()
    app.state.league_thread = thread  # /readyz and /metrics look at it
    try:
        yield
    finally:
        stop.set()
        if thread is not None:
            await run_in_threadpool(thread.join, 60)
        server.views.close()


# -- uploads ------------------------------------------------------------------------------------------------------

def too_large(server: Shared) -> str:
    return f"the upload is larger than {server.cap} bytes (at most {server.cap >> 10} KiB)"


@contextlib.contextmanager
def scratch_file(server: Shared, prefix: str) -> Iterator[Path]:
    """A new name in the scratch directory for a file not yet made (made only once its upload is authorised, so
    a held request costs no file), removed afterwards whatever happens."""
    upload = server.scratch / f"{prefix}{secrets.token_hex(12)}"
    try:
        yield upload
    finally:
        upload.unlink(missing_ok=True)


async def save(server: Shared, chunks: AsyncIterator[bytes], upload: Path) -> int | None:
    """Write the chunks to ``upload``; None as soon as they pass the cap (counted, not trusted)."""
    size = 0
    # The file's writes in a worker thread (anyio's): a slow disk must not stall every other request.
    async with await anyio.open_file(upload, "xb") as sink:
        async for chunk in chunks:
            size += len(chunk)
            if size > server.cap:
                return None
            await sink.write(chunk)
    return size


async def post_bot(request: Request) -> Response:
    """``POST /api/bots``: the body is the bot's archive. The token, the size and the upload queue are checked
    before a byte of the body is read."""
    server = shared(request)
    author = await author_of(request)
    if author is None:
        return error(401, "a valid API token is required: Authorization: Bearer TOKEN (the organiser gives you "
                          "one with arena author add)", BEARER)
    trust(request.scope)  # an author's body: the longer deadlines, and the connection cap leaves it be
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > server.cap):
        return error(413, too_large(server))
    refusal = server.admission.take(author.name)
    if refusal is not None:
        return error(refusal.status, refusal.error, {"Retry-After": str(refusal.retry_after)})
    try:
        with scratch_file(server, "upload-") as upload:
            try:
                # Counted while streaming too: a chunked body has no Content-Length to check first.
                size = await save(server, request.stream(), upload)
            except ClientDisconnect:
                return error(400, "the upload was cut off")
            if size is None:
                return error(413, too_large(server))
            if size == 0:
                return error(400, "an empty body: send the bot as a .tar.gz or .zip (curl --data-binary @bot.tar.gz)")
            reply = await check_upload(server, author, upload)
    finally:
        server.admission.release(author.name)
    return JSONResponse(reply.body, reply.status, headers=reply.headers)


async def check_upload(server: Shared, author: Author, upload: Path) -> Reply:
    """The intake's work on one admitted upload, in the uploads' own threads (never the public pages')."""
    reply: Reply = await anyio.to_thread.run_sync(server.intake.submit, author, upload,
                                                  limiter=server.admission.limiter)
    return reply


def upload_page(request: Request, code: int = 200, result: dict[str, Any] | None = None) -> Response:
    server = shared(request)
    return form_page(request, "upload.html", code, "/upload", league=server.name, cap_kb=server.cap >> 10,
                     result=result, code=code)


def refused(request: Request, code: int, message: str) -> Response:
    return upload_page(request, code, {"status": "rejected", "error": message})


async def get_upload(request: Request) -> Response:
    return upload_page(request)


async def post_upload(request: Request) -> Response:
    """``POST /upload``: the upload form (the CSRF field, the token, then the archive), read as it streams: the
    CSRF field, the token and the upload queue are checked before a byte of the archive is kept
    (:mod:`arena.server.uploadform`)."""
    server = shared(request)
    length = request.headers.get("content-length")
    if length is None or not length.isdigit():
        return refused(request, 411, "the form must have a Content-Length")
    if int(length) > server.cap + FORM_OVERHEAD:
        return refused(request, 413, too_large(server))
    if not request.cookies.get(CSRF_COOKIE):
        return refused(request, 403, CSRF_FAILED)
    author: Author | None = None

    def check(name: str, value: str) -> None:
        if name == "csrf" and not csrf_ok(request, value):
            raise FormRefused(403, CSRF_FAILED)

    async def authorize(fields: dict[str, str]) -> None:
        nonlocal author
        if not csrf_ok(request, fields.get("csrf")):
            raise FormRefused(403, CSRF_FAILED)
        found = await server.author(fields.get("token"))
        if found is None:
            raise FormRefused(401, "that API token is not valid")
        refusal = server.admission.take(found.name)
        if refusal is not None:
            raise FormRefused(refusal.status, refusal.error)
        author = found
        trust(request.scope)

    try:
        with scratch_file(server, "form-") as upload:
            try:
                _, size = await read_form(request.stream(), request.headers.get("content-type", ""), upload,
                                          server.cap, authorize, check)
            except FormRefused as failure:
                return refused(request, failure.status, failure.message)
            except ClientDisconnect:
                return refused(request, 400, "the upload was cut off")
            assert author is not None
            if size == 0:
                return refused(request, 400, "choose an archive to upload")
            reply = await check_upload(server, author, upload)
    finally:
        if author is not None:
            server.admission.release(author.name)
    return upload_page(request, reply.status, reply.body)


# -- reading ------------------------------------------------------------------------------------------------------

async def author_of(request: Request) -> Author | None:
    """The author whose token is in the request's ``Authorization: Bearer`` header, or None."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return await shared(request).author(token)


async def get_bots(request: Request) -> Response:
    try:
        return Response(await run_in_threadpool(bot_listing, shared(request)), media_type="application/json")
    except RegistryError as failure:
        return error(500, str(failure))


def bot_listing(server: Shared) -> bytes:
    """The body of ``GET /api/bots``, made again only when the store or the registry changed."""
    views = server.views
    return views.cached("bots", (views.refresh(), views.registry_signature()),
                        lambda: json_body(bot_data(views.store(), server.registry)))


def bot_data(store: Store, registry: Registry) -> dict[str, Any]:
    bots = []
    owners = all_owners(store)
    for bot in registry.names():
        versions = registry.versions(bot)
        # No check reports here: they hold the bot's stderr, which only its author may see.
        bots.append({"name": bot, "owner": owners.get(bot), "latest": versions[-1].version,
                     "versions": [{"version": v.version, "files_hash": v.files_hash,
                                   "submitted_at": v.submitted_at, "fit": v.fit} for v in versions]})
    return {"bots": bots}


async def get_me(request: Request) -> Response:
    server = shared(request)
    author = await author_of(request)
    if author is None:
        return error(401, "a valid API token is required: Authorization: Bearer TOKEN", BEARER)
    found = await run_in_threadpool(lambda: author_data(server.views.store(), server.registry, server.name, author,
                                                        server.league.state.throttled))
    # Private (stderr): no shared cache between the author and us may keep it.
    return JSONResponse(found, headers={"Cache-Control": "no-store"})


def standings(server: Shared, page: str) -> bytes:
    """The body of ``/api/standings`` (``api``), ``/api/league`` (``league``) or ``/`` (``home``), made
    again only when the store or the loop's state changed."""
    views = server.views
    state = server.league.state
    key = (views.refresh(), state.state, state.active, state.batches, state.error)
    body = views.cached("standings", key, lambda: standings_data(server, views.store()))
    if page == "league":
        # The loop's own counters change without a commit (a batch that stored nothing): not cached.
        return json_body({"league": server.name, **state.to_dict(), "matches": body["matches"]})
    if page == "api":
        return views.cached("standings-json", (key, id(body)), lambda: json_body(
            {k: v for k, v in body.items() if k != "href"}))
    playing = watch.matches_in_play(server)
    return views.cached("home", (key, id(body), playing), lambda: render(
        server.templates, "live.html", league=server.name, state=body["state"],
        done=body["matches"].get("done", 0), pending=body["matches"].get("pending", 0),
        standings=body["standings"], href=body["href"], refresh=REFRESH_S, playing=playing).encode())


def standings_data(server: Shared, store: Store) -> dict[str, Any]:
    row = store.tournament(server.name)
    lines: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    if row is not None:
        lines = [line.to_dict(rank) for rank, line in enumerate(read_standings(store, row["id"]), 1)]
        counts = store.status_counts(row["id"])
    return {"league": server.name, "state": server.league.state.state, "matches": counts, "standings": lines,
            "href": league_href(store, server.name)}


async def get_standings(request: Request) -> Response:
    return Response(await run_in_threadpool(standings, shared(request), "api"), media_type="application/json")


async def get_league(request: Request) -> Response:
    return Response(await run_in_threadpool(standings, shared(request), "league"), media_type="application/json")


async def home(request: Request) -> Response:
    return HTMLResponse(await run_in_threadpool(standings, shared(request), "home"))
