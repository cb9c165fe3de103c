"""An author's debug output of one league match (``/me/matches/{id}``): each line their bot wrote on stderr beside
the move it was written during (issue 43).

Like ``/me`` itself (:mod:`arena.server.authorpage`), the page is the session's author's only: it shows the lines
of the seats whose bot is theirs, and refuses a match with none (404, the same answer as a match that does not
exist, so the page does not tell whose matches are whose). The moves beside the lines are what every player at the
table was told (:func:`arena.match.spectator.public_event`): the match's deal group may still be playing other
rotations of its deal, so no hand and no card drawn from the deck is shown, not even once the match is over.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from arena.match.matchlog import LogError, find_log, load
from arena.match.spectator import public_event, public_line
from arena.match.stderr import debug_by_step
from arena.registry.versions import Registry
from arena.server.authorpage import PATH, render, session_author
from arena.server.authors import Author, owned_by
from arena.server.state import shared
from arena.site import urls
from arena.store import Store


@dataclass(frozen=True)
class DebugStep:
    """A step of the match during which the author's bot wrote on stderr: its move, in public words, and the lines."""

    step: int
    """The replay's step (an engine event's index): the public replay's ``#step=`` is one more."""
    move: str
    lines: tuple[tuple[str, str], ...]
    """(the seat's bot, the line), in the order written."""


@dataclass(frozen=True)
class MatchDebug:
    match: int
    bots: tuple[str, ...]
    """The author's bots in the match."""
    steps: tuple[DebugStep, ...]
    replay_href: str | None
    """The match's public page, once its deal group is over (its replay is public then)."""
    note: str = ""
    """Why there are no lines, when there are none."""


def match_debug(store: Store, registry: Registry, league: str, author: Author, match_id: int) -> MatchDebug | None:
    """The author's debug output of match ``match_id`` of the league; None when it is not a finished league match
    with a seat of theirs."""
    match = store.match(match_id)
    row = store.tournament(league)
    if match is None or row is None or match.tournament != league or match.status != "done":
        return None
    owned = set(owned_by(store, author))
    directories = {bot["id"]: bot["directory"] for bot in store.bots(row["id"])}
    seats = [seat for seat, (bot_id, name) in enumerate(zip(match.bot_ids, match.names))
             if name.partition("@")[0] in owned and Path(directories.get(bot_id, "/")).is_relative_to(registry.root)]
    if not seats:
        return None
    mine = tuple(match.names[seat] for seat in seats)
    href = None if match.sealed else urls.match_href(urls.slug(league, row["id"], "t"), match.id)
    found = find_log(match.log_path, store.path.parent, league, match.idx)
    if found is None:
        return MatchDebug(match.id, mine, (), href, "Its event log is no longer kept.")
    try:
        log = load(found)
    except LogError:
        return MatchDebug(match.id, mine, (), href, "Its event log cannot be read.")
    names = [str(bot.get("name", f"seat {seat}")) for seat, bot in enumerate(log.header.get("bots", []))]
    by_step = debug_by_step(log.debug, seats, len(log.events) - 1)
    steps = tuple(DebugStep(step, public_line(public_event(log.events[step]), names),
                            tuple((names[line.seat], line.text) for line in lines))
                  for step, lines in sorted(by_step.items()))
    return MatchDebug(match.id, mine, steps, href, "" if steps else "Your bot wrote nothing on stderr in this match.")


def debug_page(request: Request) -> Response:
    author = session_author(request)
    if author is None:
        return RedirectResponse(f"{PATH}/login", 303)
    server = shared(request)
    found = match_debug(server.views.store(), server.registry, server.name, author,
                        int(request.path_params["match"]))
    if found is None:
        return render(request, "debug.html", 404, crumb="Debug output", found=None)
    return render(request, "debug.html", crumb=f"Match #{found.match}: debug output", found=found)


async def get_debug(request: Request) -> Response:
    return await run_in_threadpool(debug_page, request)


ROUTES = (Route(f"{PATH}/matches/{{match:int}}", get_debug, methods=["GET"]),)
"""``GET /me/matches/{id}``."""
