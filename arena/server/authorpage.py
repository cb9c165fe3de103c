"""An author's own page (``/me``): their bots' versions with check (and build) reports, and their latest league
seats with faults and stderr tails; the login that opens it and the logout that closes it.

The same data is ``GET /api/me`` for scripts (:func:`author_data`). This page and that route are the only places
a bot's stderr is shown, and only to its own author: the data is chosen by the session's (or the token's) author,
never by anything in the request. The pages are templates of the results site (``site/templates/login.html``,
``author.html``, extending its ``base.html``) with its stylesheet, so they look like the rest of the site.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from arena.registry.versions import Registry
from arena.server.authors import Author, owned_by
from arena.server.pages import form_page
from arena.server.public import league_href
from arena.server.sessions import SESSION_COOKIE, SESSION_S, csrf_ok, secure
from arena.server.state import Shared, shared
from arena.site import urls
from arena.store import Store

RECENT_MATCHES = 50
"""How many of their latest league seats an author sees."""
PATH = "/me"
"""Where the author pages live; their cookies are scoped to it."""
FORM_FIELDS = 4


def author_data(store: Store, registry: Registry, league: str, author: Author,
                throttled: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, Any]:
    """The author's bots (every version with its check report, its build report when it has one, and how the
    league throttles it if it does: ``throttled``, the league state's) and their latest finished seats in the
    league, newest first, with faults and stderr tails."""
    owned = owned_by(store, author)
    throttled = throttled or {}
    bots = [{"name": bot, "versions": [v.to_dict() | {"directory": None,
                                                      "throttled": throttled.get(f"{bot}@{v.version}")}
                                       for v in registry.versions(bot)]}
            for bot in owned]
    row = store.tournament(league)
    matches: list[dict[str, Any]] = []
    if row is not None:
        mine = [b["id"] for b in store.bots(row["id"]) if b["name"].partition("@")[0] in owned
                and Path(b["directory"]).is_relative_to(registry.root)]
        matches = store.recent_seats(row["id"], mine, RECENT_MATCHES)
        tslug = urls.slug(league, row["id"], "t")
        for seat in matches:
            seat["href"] = urls.match_href(tslug, seat["match"])
            seat["debug_href"] = f"{PATH}/matches/{seat['match']}"  # arena.server.debugpage: stderr by move
    return {"author": author.name, "bots": bots, "matches": matches}


def render(request: Request, template: str, code: int = 200, **context: Any) -> Response:
    server = shared(request)
    crumbs = [urls.Crumb(server.name, league_href_of(server)), urls.Crumb(context.pop("crumb"), None)]
    response = form_page(request, template, code, PATH, path="me", page={"crumbs": crumbs}, league=server.name,
                         **context)
    response.headers["Cache-Control"] = "no-store"  # a private page: no shared cache may keep it
    return response


def league_href_of(server: Shared) -> str:
    views = server.views
    href = views.cached("league-href", views.refresh(), lambda: league_href(views.store(), server.name))
    return href or "index.html"


def session_author(request: Request) -> Author | None:
    server = shared(request)
    session_id = request.cookies.get(SESSION_COOKIE)
    author_id = None if not session_id else server.sessions.author_id(session_id)
    if author_id is None:
        return None
    return server.views.author(author_id)  # a revoked author's sessions end here, at their next request


async def login_page(request: Request, code: int = 200, message: str | None = None) -> Response:
    return await run_in_threadpool(lambda: render(request, "login.html", code, crumb="Your bots", message=message))


def my_page(request: Request) -> Response:
    author = session_author(request)
    if author is None:
        return RedirectResponse(f"{PATH}/login", 303)
    server = shared(request)
    found = author_data(server.views.store(), server.registry, server.name, author, server.league.state.throttled)
    return render(request, "author.html", crumb=f"{author.name}'s bots", **found)


async def get_me(request: Request) -> Response:
    return await run_in_threadpool(my_page, request)


async def get_login(request: Request) -> Response:
    if await run_in_threadpool(session_author, request) is not None:
        return RedirectResponse(PATH, 303)
    return await login_page(request)


async def too_many(request: Request, wait: int, whose: str) -> Response:
    response = await login_page(request, 429, f"Too many logins {whose}: try again in {wait} s.")
    response.headers["Retry-After"] = str(wait)
    return response


async def post_login(request: Request) -> Response:
    """``POST /me/login``: every attempt counts toward its client address's limit, before the form is read (a
    failed one too); a valid token then counts toward its author's."""
    server = shared(request)
    # Behind a proxy on this host, uvicorn has put the client's address here from X-Forwarded-For.
    wait = server.logins.attempt(request.client.host if request.client else "unknown")
    if wait is not None:
        return await too_many(request, wait, "from your address")
    async with request.form(max_files=0, max_fields=FORM_FIELDS) as form:
        if not csrf_ok(request, form.get("csrf")):
            return await login_page(request, 403, "The form expired or came from another site (CSRF "
                                                  "check): log in again from this page.")
        token = form.get("token")
    author = await server.author(token)
    if author is None:
        return await login_page(request, 401, "That API token is not valid.")
    wait = server.logins.login(author.id)
    if wait is not None:
        return await too_many(request, wait, "with this token")
    response = RedirectResponse(PATH, 303)
    response.set_cookie(SESSION_COOKIE, server.sessions.start(author.id), max_age=SESSION_S, httponly=True,
                        samesite="strict", path=PATH, secure=secure(request))
    return response


async def post_logout(request: Request) -> Response:
    async with request.form(max_files=0, max_fields=FORM_FIELDS) as form:
        if not csrf_ok(request, form.get("csrf")):
            return await login_page(request, 403, "The form expired or came from another site (CSRF check).")
    session_id = request.cookies.get(SESSION_COOKIE)
    if session_id:
        shared(request).sessions.end(session_id)
    response = await login_page(request, 200, "You are logged out.")
    response.delete_cookie(SESSION_COOKIE, path=PATH, httponly=True, samesite="strict", secure=secure(request))
    return response


ROUTES = (Route(PATH, get_me, methods=["GET"]),
          Route(f"{PATH}/login", get_login, methods=["GET"]),
          Route(f"{PATH}/login", post_login, methods=["POST"]),
          Route(f"{PATH}/logout", post_logout, methods=["POST"]))
"""The routes of the author pages: ``GET /me``, ``GET``/``POST /me/login``, ``POST /me/logout``."""
