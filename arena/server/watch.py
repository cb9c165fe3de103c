"""Watching the league's matches while they are played (issue 43): ``GET /api/live`` lists the matches in play,
``GET /api/live/{index}?from=N`` gives one's public events from the N-th on, for a spectator's page or script to
poll move by move; ``GET /live/{index}`` is that page (the card table of the replay, the hands face down, polling
the API: ``site/assets/watch.js``), and ``GET /live/{index}/replay`` sends its reader on to the match's replay once
it is published.

What is served is the match's live feed (:mod:`arena.match.livefeed`), which holds only what every player at the
table was told of each move (no hand, no card drawn from the deck): the deal group's secrecy (docs/SECURITY.md)
allows that while the group's other rotations are still to be played. A match that ended is served a while longer
(its ended feed, ``"over": true``) so a spectator a poll behind gets its last moves; a match never played, or that
ended long ago, is 404: its page on the results site takes over once its group is over. Not cached by anyone: it
changes every move.
"""

from __future__ import annotations

import time
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from arena.match.livefeed import feed_path, in_play, read_feed
from arena.match.matchlog import log_dir_for, log_path_for
from arena.match.spectator import public_line
from arena.server.pages import SITE_ROOT, render
from arena.server.public import league_href
from arena.server.state import Shared, shared
from arena.site import urls

NO_STORE = {"Cache-Control": "no-store"}
POLL_MS = 500
"""How often the live page asks for new moves: twice a second, as quick as a person follows a table."""


def rejected(status: int, error: str) -> JSONResponse:
    """The API's error shape (arena/schemas/openapi.yaml's ``Rejected``), never cached."""
    return JSONResponse({"status": "rejected", "error": error}, status, headers=NO_STORE)


def _log_dir(server: Shared) -> Path:
    return log_dir_for(server.league.db.parent, server.name)


def matches_in_play(server: Shared) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """The matches in play, each with its seats' names, looked for again at most once a second (the home page
    lists them, and is asked for far more often than that)."""
    log_dir = _log_dir(server)

    def look() -> tuple[tuple[int, tuple[str, ...]], ...]:
        found = []
        for index in in_play(log_dir):
            feed = read_feed(feed_path(log_path_for(log_dir, index)), start=1 << 30)  # the names, no event
            if feed is not None:
                found.append((index, feed.names))
        return tuple(found)

    return server.views.cached("in-play", int(time.monotonic()), look)


async def get_in_play(request: Request) -> Response:
    """``GET /api/live``: the matches in play, by their place in the league's schedule."""
    found = await run_in_threadpool(in_play, _log_dir(shared(request)))
    return JSONResponse({"in_play": [{"index": index, "href": f"/api/live/{index}", "page": f"/live/{index}"}
                                     for index in found]}, headers=NO_STORE)


async def get_feed(request: Request) -> Response:
    """``GET /api/live/{index}?from=N``: the seats' names, the public events from the N-th on (0 by default), each
    in words (``said``), the ``from`` to ask next, and whether the match is ``over``; 404 when the match is not in
    play and did not just end."""
    try:
        start = max(0, int(request.query_params.get("from", "0")))
    except ValueError:
        return rejected(400, "from: a whole number of events")
    index = request.path_params["index"]
    if not index.isdigit() or not index.isascii():  # the API's answers are JSON, even to /api/live/-1
        return rejected(404, "not in play: a match is named by its index in the schedule, 0 or more")
    path = feed_path(log_path_for(_log_dir(shared(request)), int(index)))
    found = await run_in_threadpool(read_feed, path, start)
    if found is None:
        return rejected(404, "not in play: no match with that index is being played or has just ended")
    return JSONResponse({"names": found.names, "events": found.events,
                         "said": [public_line(event, found.names) for event in found.events],
                         "next": start + len(found.events), "over": found.over}, headers=NO_STORE)


def _crumbs(server: Shared, label: str) -> list[urls.Crumb]:
    href = server.views.cached("league-href", server.views.refresh(),
                               lambda: league_href(server.views.store(), server.name))
    return [urls.Crumb(server.name, href or "index.html"), urls.Crumb(label, None)]


def _page(server: Shared, index: int, code: int = 200, over: str | None = None) -> Response:
    label = f"Match {index}: live" if over is None else f"Match {index}"
    html = render(server.templates, "watch.html", path="live", page={"crumbs": _crumbs(server, label)},
                  league=server.name, index=index, feed=f"/api/live/{index}", replay=f"/live/{index}/replay",
                  poll_ms=POLL_MS, over=over)
    return HTMLResponse(html, code, headers=NO_STORE)


async def live_page(request: Request) -> Response:
    """``GET /live/{index}``: the page that follows match ``index`` while it is played."""
    server = shared(request)
    return await run_in_threadpool(_page, server, int(request.path_params["index"]))


def replay_of(server: Shared, index: int) -> Response:
    """The match's published replay (a redirect), or a page saying when it will be."""
    store = server.views.store()
    row = store.tournament(server.name)
    try:
        match = store.match(store.match_ids(row["id"], [index])[0]) if row is not None else None
    except (KeyError, OverflowError):  # not in the schedule (yet), or beyond what SQLite can number
        match = None
    if row is not None and match is not None and match.status == "done" and not match.sealed:
        tslug = urls.slug(server.name, row["id"], "t")
        # The store says the replay is public before the next publish (every 5 s at most) has written it: its page
        # may not be there yet, or still be the sealed one, which has no replay data beside it.
        if (server.site / urls.match_data_href(tslug, match.id)).is_file():
            return RedirectResponse(SITE_ROOT + urls.match_href(tslug, match.id), 303, headers=NO_STORE)
        why = "it is being published now: come back to this address in a moment."
    elif match is not None and match.status == "done":
        why = ("its replay is published once every rotation of its deal has been played (each hand stays secret "
               "until then): come back to this address later.")
    else:
        why = "it is not stored yet (it is being played, or has just ended): come back to this address in a moment."
    return _page(server, index, 404, over=why)


async def get_replay(request: Request) -> Response:
    """``GET /live/{index}/replay``."""
    return await run_in_threadpool(replay_of, shared(request), int(request.path_params["index"]))


def api_routes(prefix: str) -> list[Route]:
    """The live API under ``prefix`` (``/api`` and ``/api/v1``): ``GET .../live`` and ``GET .../live/{index}``."""
    return [Route(f"{prefix}/live", get_in_play, methods=["GET"]),
            Route(f"{prefix}/live/{{index}}", get_feed, methods=["GET"])]


ROUTES = (Route("/live/{index:int}", live_page, methods=["GET"]),
          Route("/live/{index:int}/replay", get_replay, methods=["GET"]))
"""The live pages: ``GET /live/{index}`` and its ``/replay``."""
