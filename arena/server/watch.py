"""Watching the league's matches while they are played (issue 43): ``GET /api/live`` lists the matches in play,
``GET /api/live/{index}?from=N`` gives one's public events from the N-th on, for a spectator's page or script to
poll move by move.

What is served is the match's live feed (:mod:`arena.match.livefeed`), which holds only what every player at the
table was told of each move (no hand, no card drawn from the deck): the deal group's secrecy (docs/SECURITY.md)
allows that while the group's other rotations are still to be played. A match that is not in play (over, or not
begun) is 404: its page on the results site takes over once its group is over. Not cached by anyone: it changes
every move.
"""

from __future__ import annotations

from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from arena.match.livefeed import feed_path, in_play, read_feed
from arena.match.matchlog import log_dir_for, log_path_for
from arena.server.state import shared

NO_STORE = {"Cache-Control": "no-store"}


def _log_dir(request: Request) -> Path:
    server = shared(request)
    return log_dir_for(server.league.db.parent, server.name)


async def get_in_play(request: Request) -> Response:
    """``GET /api/live``: the matches in play, by their place in the league's schedule."""
    found = await run_in_threadpool(in_play, _log_dir(request))
    return JSONResponse({"in_play": [{"index": index, "href": f"/api/live/{index}"} for index in found]},
                        headers=NO_STORE)


async def get_feed(request: Request) -> Response:
    """``GET /api/live/{index}?from=N``: the seats' names, the public events from the N-th on (0 by default) and
    the ``from`` to ask next; 404 when the match is not in play."""
    try:
        start = max(0, int(request.query_params.get("from", "0")))
    except ValueError:
        return JSONResponse({"error": "from: a whole number of events"}, 400, headers=NO_STORE)
    path = feed_path(log_path_for(_log_dir(request), int(request.path_params["index"])))
    found = await run_in_threadpool(read_feed, path, start)
    if found is None:
        return JSONResponse({"error": "not in play"}, 404, headers=NO_STORE)
    return JSONResponse({"names": found.names, "events": found.events, "next": start + len(found.events),
                         "over": found.over}, headers=NO_STORE)


ROUTES = (Route("/api/live", get_in_play, methods=["GET"]),
          Route("/api/live/{index:int}", get_feed, methods=["GET"]))
"""The live routes: ``GET /api/live``, ``GET /api/live/{index}``."""
