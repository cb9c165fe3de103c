"""Play a seat yourself on the league server: a logged-in author against the house bots and their own bots, in
the browser (``/me/play``).

The match is refereed as any match (:mod:`arena.play`): the bots in the league's sandbox with the league's limits,
the author under a person's clock. It is private and unrated: it is stored in a run of the author's own
(``play-by-<author id>``), which the league's site never publishes and no rating reads, and only its author's
session can open its table, read its state or move in it. An author plays one table at a time (:data:`AT_ONCE`).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from arena.bots.manifest import BotSpec
from arena.play.session import PERSON_LIMITS, play_with_person, record, seat_person
from arena.play.web import Choice, WebTable, choice_from_json, table_page
from arena.resources import data_dir
from arena.run.plan import TournamentError, load_entrants
from arena.sandbox import SandboxError, get_sandbox
from arena.server.authorpage import PATH, render, session_author
from arena.server.authors import Author, owned_by
from arena.server.pages import SITE_ROOT
from arena.server.sessions import csrf_ok
from arena.server.state import Shared, shared
from arena.store import Store

AT_ONCE = 1
"""Tables an author may play at once: each holds the bots' processes for the length of a match."""
PLAY = f"{PATH}/play"
MAX_MOVE_BYTES = 4096


@dataclass
class Game:
    """One author's table: the seat's player, and the match's thread."""

    id: str
    author_id: int
    table: WebTable
    token: str
    thread: threading.Thread | None = None
    outcome: str | None = None
    """How the match ended, once it has: stored, or why it could not be played."""


@dataclass
class Tables:
    """The tables being played on this server, by id."""

    games: dict[str, Game] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def open(self, author: Author) -> Game | None:
        """A new table for ``author``, or None if they already play :data:`AT_ONCE`."""
        with self.lock:
            playing = sum(1 for game in self.games.values() if game.author_id == author.id and game.outcome is None)
            if playing >= AT_ONCE:
                return None
            game = Game(secrets.token_urlsafe(12), author.id, WebTable(), secrets.token_urlsafe(16))
            self.games[game.id] = game
            return game

    def of(self, game_id: str, author: Author | None) -> Game | None:
        """The table ``game_id`` if it is ``author``'s: nobody else can even learn it exists."""
        with self.lock:
            game = self.games.get(game_id)
        return game if game is not None and author is not None and game.author_id == author.id else None


def tables_of(request: Request) -> Tables:
    """This server's tables (``app.state.tables``, made by :func:`arena.server.app.create_app`)."""
    found = request.app.state.tables
    assert isinstance(found, Tables), "an application not made by create_app"
    return found


def opponents(server: Shared, author: Author) -> dict[str, Path]:
    """Whom ``author`` may play: the league's house bots and their own bots' latest fit versions, by name."""
    found: dict[str, Path] = {}
    for entry in server.league.config.entries:
        if not entry.startswith("registry:"):
            found[Path(entry).name] = Path(entry)
    for name in owned_by(server.views.store(), author):
        latest = server.registry.latest(name)
        if latest is not None and latest.fit:
            found[f"{name}@{latest.version}"] = latest.directory
    return found


def play_match(server: Shared, store_path: Path, author: Author, game: Game, bots: Sequence[BotSpec]) -> None:
    """The match of ``game`` (its thread): played, then stored in the author's own run."""
    config = server.league.config
    seats = seat_person(bots, author.name, 0)
    try:
        sandbox = get_sandbox(config.sandbox)
        try:
            result = play_with_person(seats, 0, game.table, secrets.randbits(63), sandbox, config.rules,
                                      config.limits, PERSON_LIMITS, sandbox_limits=config.sandbox_limits)
        finally:
            sandbox.close()
    except Exception as error:  # noqa: BLE001 - an infrastructure failure is told to the person, not raised
        game.outcome = f"the match could not be played: {error}"
        game.table.narrator.say(f"The match could not be played: {error}")
        game.table.over = True
        return
    game.table.finish(result)
    store = Store(store_path)
    try:
        run, match_id = record(store, seats, result, config.rules, config.limits, config.sandbox,
                               run=f"play-by-{author.id}")
    finally:
        store.close()
    game.outcome = f"stored as match {match_id} of {run}"


def choose_page(request: Request, author: Author, code: int = 200, message: str | None = None) -> Response:
    server = shared(request)
    names = sorted(opponents(server, author))
    return render(request, "play.html", code, crumb="Play", names=names, players=server.league.config.players,
                  message=message)


async def get_play(request: Request) -> Response:
    author = await run_in_threadpool(session_author, request)
    if author is None:
        return RedirectResponse(f"{PATH}/login", 303)
    return await run_in_threadpool(choose_page, request, author)


async def post_play(request: Request) -> Response:
    """``POST /me/play``: a new table against the opponents chosen in the form."""
    server = shared(request)
    author = await run_in_threadpool(session_author, request)
    if author is None:
        return RedirectResponse(f"{PATH}/login", 303)
    async with request.form(max_files=0, max_fields=16) as form:
        if not csrf_ok(request, form.get("csrf")):
            return await run_in_threadpool(choose_page, request, author, 403, "The form expired or came from "
                                                                              "another site (CSRF check).")
        chosen = [str(name) for name in form.getlist("bot")]
    offered = await run_in_threadpool(opponents, server, author)
    seats = server.league.config.players - 1
    if not 1 <= len(chosen) <= seats or any(name not in offered for name in chosen):
        return await run_in_threadpool(choose_page, request, author, 400,
                                       f"Choose 1 to {seats} of the bots listed.")
    try:
        bots = await run_in_threadpool(load_entrants, [offered[name] for name in chosen],
                                       server.scratch / "play-builds")
    except (TournamentError, SandboxError) as error:
        return await run_in_threadpool(choose_page, request, author, 409, f"That bot cannot play: {error}")
    game = tables_of(request).open(author)
    if game is None:
        return await run_in_threadpool(choose_page, request, author, 429,
                                       "You are already playing a table: finish or leave it first.")
    game.thread = threading.Thread(target=play_match, args=(server, server.league.db, author, game, bots),
                                   name=f"play-{game.id}", daemon=True)
    game.thread.start()
    return RedirectResponse(f"{PLAY}/{game.id}/", 303)


async def game_of(request: Request) -> Game | None:
    author = await run_in_threadpool(session_author, request)
    return tables_of(request).of(request.path_params["game"], author)


def not_found() -> Response:
    return JSONResponse({"error": "no such table of yours"}, 404)


async def get_table(request: Request) -> Response:
    game = await game_of(request)
    if game is None:
        return not_found()
    page = table_page(game.token, f"{PLAY}/{game.id}/", f"{SITE_ROOT}assets/style.css")
    return Response(page, 200, media_type="text/html", headers={"Cache-Control": "no-store"})


async def get_asset(request: Request) -> Response:
    if await game_of(request) is None:
        return not_found()
    name = request.path_params["asset"]
    kind = {"table.js": "text/javascript", "table.css": "text/css"}.get(name)
    if kind is None:
        return not_found()
    return Response((data_dir("site") / "play" / name).read_bytes(), 200, media_type=kind)


async def get_state(request: Request) -> Response:
    game = await game_of(request)
    if game is None:
        return not_found()
    since = request.query_params.get("since", "0")
    state: dict[str, Any] = game.table.state(int(since) if since.isdigit() else 0)
    return JSONResponse(state | {"outcome": game.outcome}, headers={"Cache-Control": "no-store"})


async def post_move(request: Request) -> Response:
    game = await game_of(request)
    if game is None:
        return not_found()
    if request.headers.get("x-table-token") != game.token:
        return JSONResponse({"error": "a move needs this table's token: reload the page"}, 403)
    body = await request.body()
    if len(body) > MAX_MOVE_BYTES:
        return JSONResponse({"error": f"expected a JSON move of at most {MAX_MOVE_BYTES} bytes"}, 400)
    choice: Choice | str = choice_from_json(body)
    if isinstance(choice, str):
        return JSONResponse({"error": choice}, 400)
    refused = game.table.refusal(choice)
    if refused is not None:
        return JSONResponse({"error": refused}, 409)
    return JSONResponse({"ok": True})


ROUTES = (Route(PLAY, get_play, methods=["GET"]),
          Route(PLAY, post_play, methods=["POST"]),
          Route(PLAY + "/{game}/", get_table, methods=["GET"]),
          Route(PLAY + "/{game}/state", get_state, methods=["GET"]),
          Route(PLAY + "/{game}/move", post_move, methods=["POST"]),
          Route(PLAY + "/{game}/{asset}", get_asset, methods=["GET"]))
"""``/me/play``: the form and the tables; every route but the form answers only the table's own author."""
