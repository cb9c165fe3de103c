"""The league server's web application: the HTTP API, the live standings page and the public results site.

Starlette on uvicorn (see docs/SERVER.md for why): the API is a handful of JSON routes, so a small ASGI toolkit
with streaming request bodies (the upload cap is enforced while reading) and a static-files mount is all it needs.
Handlers do no blocking work on the event loop: the store, the archive guards and the admission check run in
worker threads. Reads go through :class:`~arena.server.views.Views` (a store connection per thread, public
answers cached until the store or the registry changes). The league runs in one background thread started and
stopped with the application (its lifespan).

Routes: ``POST /api/bots`` (an upload, ``Authorization: Bearer TOKEN``), ``GET /api/bots``, ``GET /api/standings``,
``GET /api/league``, ``GET /api/me`` (an author's own bots, check reports and latest seats with faults and stderr),
``GET /me`` with ``/me/login`` and ``/me/logout`` (the same for a person in a browser,
:mod:`arena.server.authorpage`; with ``/api/me`` the only places that show stderr, and only the author's own),
``GET``/``POST /upload`` (the upload page for people, with a double-submit CSRF cookie), ``GET /`` (standings
that refresh themselves), ``/site/`` (the static site, without stderr).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from jinja2 import Environment
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from arena.archive import ArchiveLimits
from arena.checker import check_bot
from arena.registry import Registry, RegistryError
from arena.run.league import League
from arena.server import authorpage
from arena.server.authorpage import author_data
from arena.server.authors import Author, all_owners
from arena.server.config import ServeConfig
from arena.server.intake import Checker, Intake, IntakeSettings
from arena.server.public import league_href, publish
from arena.server.sessions import Sessions, csrf_ok, csrf_token, set_csrf
from arena.server.views import Views
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


STANDINGS_PAGE = Environment(autoescape=True).from_string("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="{{ refresh }}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ league }}: live standings</title><link rel="stylesheet" href="/site/assets/style.css"></head>
<body><main>
<h1>{{ league }}: live standings</h1>
<p>{{ state }}; {{ done }} matches played{% if pending %}, {{ pending }} in play{% endif %}.
This page reloads every {{ refresh }} s.{% if href %} <a href="/site/{{ href }}">Matches, bots and replays</a>.{% endif %}</p>
<table id="standings"><thead><tr><th>#</th><th>Bot</th><th class="num">Rating</th><th class="num">mu</th>
<th class="num">sigma</th><th class="num">Matches</th><th class="num">Wins</th><th>Faults</th></tr></thead><tbody>
{% for line in standings %}<tr{% if not line.active %} class="retired"{% endif %}><td>{{ line.rank }}</td>
<td>{{ line.bot }}{% if not line.active %} (retired){% endif %}</td><td class="num">{{ "%.2f"|format(line.conservative) }}</td>
<td class="num">{{ "%.2f"|format(line.mu) }}</td><td class="num">{{ "%.2f"|format(line.sigma) }}</td>
<td class="num">{{ line.matches }}</td><td class="num">{{ line.wins }}</td>
<td>{% for kind, count in line.faults.items() %}{{ kind }} {{ count }} {% endfor %}</td></tr>
{% else %}<tr><td colspan="8">No bots yet: submit one (see the API: POST /api/bots).</td></tr>{% endfor %}
</tbody></table></main></body></html>
""")


UPLOAD_PAGE = Environment(autoescape=True).from_string("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ league }}: submit a bot</title><link rel="stylesheet" href="/site/assets/style.css"></head>
<body><main>
<h1>{{ league }}: submit a bot</h1>
{% if result %}<section id="result" class="{{ 'ok' if result.status in ('stored', 'unchanged') else 'failed' }}">
<h2>{% if result.status == 'stored' %}Stored {{ result.label }}{% elif result.status == 'unchanged' %}Unchanged
{% else %}Rejected, nothing stored{% endif %}</h2>
<p>HTTP {{ code }}{% if result.error %}: {{ result.error }}{% endif %}{% if result.reason %}: {{ result.reason }}{% endif %}</p>
{% if result.check %}<table id="check"><thead><tr><th>Step</th><th>OK</th><th>Expected</th><th>Got</th><th>Advice</th></tr></thead><tbody>
{% for step in result.check.steps %}<tr><td>{{ step.step }}</td><td>{{ {True: '✓', False: '✗', None: '-'}[step.ok] }}</td>
<td>{{ step.expected }}</td><td>{{ step.got }}</td><td>{{ step.advice|join(' ') }}
{% if step.stderr_tail %}<details{% if step.step == 'build' and not step.ok %} open{% endif %}><summary>{{ 'build log' if step.step == 'build' else 'stderr' }} (your bot's, shown only to you)</summary><pre>{{ step.stderr_tail }}</pre></details>{% endif %}</td></tr>
{% endfor %}</tbody></table>{% endif %}</section>{% endif %}
<form method="post" action="/upload" enctype="multipart/form-data">
<input type="hidden" name="csrf" value="{{ csrf }}">
<p><label>API token <input type="password" name="token" required autocomplete="off"></label></p>
<p><label>Bot archive (.tar.gz or .zip, at most {{ cap_kb }} KiB) <input type="file" name="archive" required
accept=".zip,.tar.gz,.tgz,application/zip,application/gzip"></label></p>
<p><button type="submit">Submit</button> The admission check runs before the answer: allow a minute.</p>
</form><p><a href="/">Live standings</a></p></main></body></html>
""")
FORM_OVERHEAD = 64 << 10
"""Room for the multipart framing and the small fields around the archive."""


def create_app(settings: ServerSettings, checker: Checker = check_bot) -> Starlette:
    config = settings.config
    name = config.league.name
    settings.scratch.mkdir(parents=True, exist_ok=True)
    settings.site_dir.mkdir(parents=True, exist_ok=True)
    league = League(config.league, settings.db,
                    publish=lambda store, ids: publish(store, name, settings.site_dir))
    intake = Intake(IntakeSettings(db=settings.db, registry=config.league.registry, scratch=settings.scratch,
                                   sandbox=config.check_sandbox, uploads_per_hour=config.uploads_per_hour,
                                   archive=ArchiveLimits(max_archive_bytes=config.max_upload_bytes),
                                   build=config.build), checker)
    registry = Registry(config.league.registry)
    views = Views(settings.db, registry)
    cap = config.max_upload_bytes

    async def in_thread(work: Callable[[Store], Any]) -> Any:
        return await run_in_threadpool(lambda: work(views.store()))

    async def author_of(request: Request) -> Author | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        found: Author | None = await run_in_threadpool(views.authenticate, token.strip())
        return found

    def too_large() -> str:
        return f"the upload is larger than {cap} bytes (at most {cap >> 10} KiB)"

    async def save(chunks: AsyncIterator[bytes], upload: Path) -> int | None:
        """Write the chunks to ``upload``; None as soon as they pass the cap (counted, not trusted)."""
        size = 0
        # The file's writes in a worker thread (anyio's): a slow disk must not stall every other request.
        async with await anyio.open_file(upload, "wb") as sink:
            async for chunk in chunks:
                size += len(chunk)
                if size > cap:
                    return None
                await sink.write(chunk)
        return size

    def upload_page(request: Request, code: int = 200, result: dict[str, Any] | None = None) -> Response:
        token = csrf_token(request)
        html = UPLOAD_PAGE.render(league=name, csrf=token, cap_kb=cap >> 10, result=result, code=code)
        response = HTMLResponse(html, code)
        set_csrf(response, request, token, "/upload")
        return response

    async def get_upload(request: Request) -> Response:
        return upload_page(request)

    async def post_upload(request: Request) -> Response:
        length = request.headers.get("content-length")
        if length is None or not length.isdigit():
            return upload_page(request, 411, {"status": "rejected", "error": "the form must have a Content-Length"})
        if int(length) > cap + FORM_OVERHEAD:
            return upload_page(request, 413, {"status": "rejected", "error": too_large()})
        fd, path = tempfile.mkstemp(prefix="form-", dir=settings.scratch)
        os.close(fd)
        upload = Path(path)
        try:
            async with request.form(max_files=1, max_fields=4) as form:
                if not csrf_ok(request, form.get("csrf")):
                    return upload_page(request, 403, {"status": "rejected", "error": "the form expired or came from "
                                                      "another site (CSRF check): reload this page and submit again"})
                token = form.get("token")
                author = None
                if isinstance(token, str) and token.strip():
                    author = await run_in_threadpool(views.authenticate, token.strip())
                if author is None:
                    return upload_page(request, 401, {"status": "rejected", "error": "that API token is not valid"})
                archive = form.get("archive")
                if not isinstance(archive, UploadFile):
                    return upload_page(request, 400, {"status": "rejected", "error": "choose an archive to upload"})

                async def chunks() -> AsyncIterator[bytes]:
                    while block := await archive.read(1 << 16):
                        yield block

                size = await save(chunks(), upload)
            if size is None:
                return upload_page(request, 413, {"status": "rejected", "error": too_large()})
            reply = await run_in_threadpool(intake.submit, author, upload)
        except MultiPartException as failure:
            return upload_page(request, 400, {"status": "rejected", "error": f"a malformed form: {failure.message}"})
        finally:
            upload.unlink(missing_ok=True)
        return upload_page(request, reply.status, reply.body)

    async def post_bot(request: Request) -> Response:
        author = await author_of(request)
        if author is None:
            return error(401, "a valid API token is required: Authorization: Bearer TOKEN (the organiser gives you "
                              "one with arena author add)", {"WWW-Authenticate": 'Bearer realm="arena"'})
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > cap):
            return error(413, too_large())
        fd, path = tempfile.mkstemp(prefix="upload-", dir=settings.scratch)
        os.close(fd)
        upload = Path(path)
        try:
            # Counted while streaming too: a chunked body has no Content-Length to check first.
            size = await save(request.stream(), upload)
            if size is None:
                return error(413, too_large())
            if size == 0:
                return error(400, "an empty body: send the bot as a .tar.gz or .zip (curl --data-binary @bot.tar.gz)")
            reply = await run_in_threadpool(intake.submit, author, upload)
        except ClientDisconnect:
            return error(400, "the upload was cut off")
        finally:
            upload.unlink(missing_ok=True)
        return JSONResponse(reply.body, reply.status, headers=reply.headers)

    def bot_listing() -> bytes:
        """The body of ``GET /api/bots``, made again only when the store or the registry changed."""
        return views.cached("bots", (views.refresh(), views.registry_signature()),
                            lambda: json_body(bot_data(views.store())))

    def bot_data(store: Store) -> dict[str, Any]:
        bots = []
        owners = all_owners(store)
        for bot in registry.names():
            versions = registry.versions(bot)
            # No check reports here: they hold the bot's stderr, which only its author may see.
            bots.append({"name": bot, "owner": owners.get(bot), "latest": versions[-1].version,
                         "versions": [{"version": v.version, "files_hash": v.files_hash,
                                       "submitted_at": v.submitted_at, "fit": v.fit} for v in versions]})
        return {"bots": bots}

    async def get_bots(request: Request) -> Response:
        try:
            return Response(await run_in_threadpool(bot_listing), media_type="application/json")
        except RegistryError as failure:
            return error(500, str(failure))

    async def get_me(request: Request) -> Response:
        author = await author_of(request)
        if author is None:
            return error(401, "a valid API token is required: Authorization: Bearer TOKEN",
                         {"WWW-Authenticate": 'Bearer realm="arena"'})
        # Private (stderr): no shared cache between the author and us may keep it.
        return JSONResponse(await in_thread(lambda store: author_data(store, registry, name, author)),
                            headers={"Cache-Control": "no-store"})

    def standings(page: str) -> bytes:
        """The body of ``/api/standings`` (``api``), ``/api/league`` (``league``) or ``/`` (``home``), made
        again only when the store or the loop's state changed."""
        state = league.state
        key = (views.refresh(), state.state, state.active, state.batches, state.error)
        if page == "league":
            # The loop's own counters change without a commit (a batch that stored nothing): not cached.
            return json_body({"league": name, **state.to_dict(),
                              "matches": views.cached("standings", key, lambda: standings_data(views.store()))[
                                  "matches"]})
        body = views.cached("standings", key, lambda: standings_data(views.store()))
        if page == "api":
            return views.cached("standings-json", key, lambda: json_body(
                {k: v for k, v in body.items() if k != "href"}))
        return views.cached("home", key, lambda: STANDINGS_PAGE.render(
            league=name, state=body["state"], done=body["matches"].get("done", 0),
            pending=body["matches"].get("pending", 0), standings=body["standings"], href=body["href"],
            refresh=REFRESH_S).encode())

    def standings_data(store: Store) -> dict[str, Any]:
        row = store.tournament(name)
        lines: list[dict[str, Any]] = []
        counts: dict[str, int] = {}
        if row is not None:
            active = set(league.state.active)
            lines = [{**line.to_dict(rank), "active": line.name in active}
                     for rank, line in enumerate(store.standings(row["id"]), 1)]
            counts = store.status_counts(row["id"])
        return {"league": name, "state": league.state.state, "matches": counts, "standings": lines,
                "href": league_href(store, name)}

    async def get_standings(request: Request) -> Response:
        return Response(await run_in_threadpool(standings, "api"), media_type="application/json")

    async def get_league(request: Request) -> Response:
        return Response(await run_in_threadpool(standings, "league"), media_type="application/json")

    async def home(request: Request) -> Response:
        return HTMLResponse(await run_in_threadpool(standings, "home"))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        stop = threading.Event()
        thread = None
        if settings.run_league:
            thread = threading.Thread(target=league.run, args=(stop,), name=f"league-{name}", daemon=True)
            thread.start()
        try:
            yield
        finally:
            stop.set()
            if thread is not None:
                await run_in_threadpool(thread.join, 60)
            views.close()

    app = Starlette(routes=[
        Route("/", home),
        Route("/api/bots", post_bot, methods=["POST"]),
        Route("/api/bots", get_bots, methods=["GET"]),
        Route("/api/standings", get_standings),
        Route("/api/league", get_league),
        Route("/api/me", get_me),
        Route("/upload", get_upload, methods=["GET"]),
        Route("/upload", post_upload, methods=["POST"]),
        *authorpage.routes(views, registry, name, Sessions()),
        Mount("/site", StaticFiles(directory=settings.site_dir, html=True, check_dir=False)),
    ], lifespan=lifespan)
    app.state.league = league
    return app
