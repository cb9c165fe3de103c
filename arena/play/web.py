"""A person's seat in the browser: ``arena play --web`` serves one table on 127.0.0.1.

The page polls the seat's state (what the person has been told, as the terminal's sentences, and the turn in front
of them with its legal throws) and posts the person's choice, which is checked here as the terminal checks a key:
a choice that is not one of the turn's legal ones is refused with the reason, and nothing the page sends can reach
the referee but a legal move. The standard library's HTTP server is enough for one person at one table on
loopback; the page is the site's style with a small script of its own (site/play/).

Only this machine's browser can reach it: it listens on 127.0.0.1, answers only requests whose Host is that address
(a page of another site that resolves its name to 127.0.0.1 gets 403), and takes a move only with the table's
token, which only the served page knows.
"""

from __future__ import annotations

import html
import io
import json
import queue
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from arena.game.cards import hand_total
from arena.game.results import MatchResult
from arena.game.rules import legal_discards
from arena.play.coach import Advice, Coach
from arena.play.console import Console
from arena.play.seat import LeftTable
from arena.resources import data_dir

MAX_BODY = 4096
"""The largest move the table reads: a move is a few dozen bytes."""


class _Lines(io.StringIO):
    """The console's sentences, one list entry per line, for the page to fetch."""

    def __init__(self, lines: list[str], lock: threading.Lock) -> None:
        super().__init__()
        self.lines = lines
        self.lock = lock
        self._partial = ""

    def write(self, text: str) -> int:
        with self.lock:
            self._partial += text
            *whole, self._partial = self._partial.split("\n")
            self.lines.extend(whole)
        return len(text)


@dataclass(frozen=True)
class Choice:
    """A move the page asked for: a throw (by its index in the turn's legal throws) and a take, a declaration,
    or leaving."""

    throw: int | None = None
    take: str | None = None
    declare: bool = False
    leave: bool = False


class WebTable:
    """Plays a seat for a person in a browser (:class:`arena.play.seat.Player`); its state is read and its
    choices given by :class:`TableServer`."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, coach: Coach | None = None) -> None:
        self.lock = threading.Lock()
        self.lines: list[str] = []
        self.narrator = Console(None, _Lines(self.lines, self.lock), clock, coach)
        self.clock = clock
        self.choices: queue.Queue[Choice] = queue.Queue()
        self.turn: dict[str, Any] | None = None
        self.throws: list[tuple[str, ...]] = []
        self.deadline = 0.0
        self.over = False
        self._stopped = threading.Event()

    def stop(self) -> None:
        self._stopped.set()

    def reply(self, message: dict[str, Any]) -> dict[str, Any] | None:
        if message.get("type") != "turn":
            answer = self.narrator.reply(message)
            if message.get("type") == "match_end":
                self.over = True
            return answer
        with self.lock:
            while not self.choices.empty():  # a choice posted too late for the last turn is not this one's
                self.choices.get_nowait()
            self.narrator.sent.append(message)  # the narrator saw the rest; the coach is asked with all of it
            self.turn = message
            self.throws = legal_discards(message["hand"], self.narrator.table.rules)
            self.deadline = self.clock() + message["time_left_ms"] / 1000
        try:
            return self._wait_for_choice()
        finally:
            with self.lock:
                self.turn = None

    def finish(self, result: MatchResult) -> None:
        """The match is over: a person who left it (or lost their seat to a fault) is told how it ended too."""
        if self.over:
            return
        order = sorted(result.players, key=lambda player: (player.place, player.seat))
        self.narrator.say("Match over: " + ", ".join(
            f"{player.place}. {self.narrator.table.name(player.seat)} ({player.score})" for player in order) + ".")
        self.over = True

    def _wait_for_choice(self) -> dict[str, Any]:
        while not self._stopped.is_set():
            try:
                choice = self.choices.get(timeout=0.2)
            except queue.Empty:
                continue
            if choice.leave:
                self.narrator.say("You leave the table: your seat forfeits, and the bots play the match out.")
                raise LeftTable("the person left")
            if choice.declare:
                return {"type": "declare"}
            assert choice.throw is not None and choice.take is not None  # checked by refusal()
            return {"type": "play", "discard": list(self.throws[choice.throw]), "take": choice.take}
        raise LeftTable("the seat was closed")

    def advice(self) -> Advice | str:
        """What the coach bot would play in the turn in front of the person, or why it cannot be asked."""
        coach = self.narrator.coach
        with self.lock:
            if coach is None:
                return "No coach at this table (arena play --coach BOT)."
            if self.turn is None:
                return "It is not your turn."
            sent = list(self.narrator.sent)
        return coach.advise(sent)  # outside the lock: the page keeps polling, the clock keeps running

    def refusal(self, choice: Choice) -> str | None:
        """Why ``choice`` cannot be played now, or None: it is then queued for the seat."""
        with self.lock:
            turn = self.turn
            if choice.leave:
                pass
            elif not self.choices.empty():
                return "Your move is already on its way."
            elif turn is None:
                return "It is not your turn."
            elif choice.declare:
                refused = self.narrator.declare_refusal(turn)
                if refused is not None:
                    return refused
            elif choice.throw is None or not 0 <= choice.throw < len(self.throws):
                return f"No such throw: choose one of the {len(self.throws)} listed."
            elif choice.take != "deck" and choice.take not in turn["floor"]:
                return "Take the deck or one card of the floor."
            self.choices.put(choice)
            return None

    def state(self, since: int) -> dict[str, Any]:
        """What the page shows: the sentences from ``since`` on, and the turn in front of the person, if any."""
        with self.lock:
            table = self.narrator.table
            turn = None
            if self.turn is not None:
                hand = self.turn["hand"]
                turn = {"round": self.turn["round"], "hand": hand, "total": hand_total(hand),
                        "floor": self.turn["floor"], "throws": [list(throw) for throw in self.throws],
                        "may_declare": self.turn["may_declare"], "scores": self.turn["scores"],
                        "hand_sizes": self.turn["hand_sizes"], "deck_size": self.turn["deck_size"],
                        "seconds_left": max(0, int(self.deadline - self.clock()))}
            coach = self.narrator.coach
            return {"lines": self.lines[since:], "next": len(self.lines), "turn": turn, "over": self.over,
                    "coach": None if coach is None else coach.name,
                    "seat": table.seat, "players": [table.name(seat) for seat in range(len(table.players))]}


def choice_from_json(body: bytes) -> Choice | str:
    """A posted move as a :class:`Choice`, or what was wrong with it."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return "expected a JSON object"
    if not isinstance(data, dict):
        return "expected a JSON object"
    if data.get("leave") is True:
        return Choice(leave=True)
    if data.get("declare") is True:
        return Choice(declare=True)
    throw, take = data.get("throw"), data.get("take")
    if not isinstance(throw, int) or isinstance(throw, bool) or not isinstance(take, str):
        return 'expected {"throw": N, "take": "deck" or a floor card}, {"declare": true} or {"leave": true}'
    return Choice(throw=throw, take=take)


def table_page(token: str, base: str, style: str) -> str:
    """The table's page (site/play/table.html): its state, moves and script under ``base``, the site's
    stylesheet at ``style``."""
    page = (data_dir("site") / "play" / "table.html").read_text(encoding="utf-8")
    for name, value in (("token", token), ("base", base), ("style", style)):
        page = page.replace("{{ " + name + " }}", html.escape(value, quote=True))
    return page


class TableServer(ThreadingHTTPServer):
    """The table's HTTP server on 127.0.0.1 (``port`` 0: a free one): the page, its state and its moves."""

    daemon_threads = True

    def __init__(self, table: WebTable, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.table = table
        self.token = secrets.token_urlsafe(16)
        self.page = table_page(self.token, "/", "/assets/style.css")
        self.style = (data_dir("site") / "assets" / "style.css").read_bytes()
        self.script = (data_dir("site") / "play" / "table.js").read_bytes()
        self.table_style = (data_dir("site") / "play" / "table.css").read_bytes()
        self.seen_over = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def serve_in_background(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="play-web", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: TableServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the person's terminal shows the table's address, not every poll

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode(), "application/json")

    def _local(self) -> bool:
        host = self.headers.get("Host", "")
        if host != f"127.0.0.1:{self.server.server_address[1]}":
            self._json(HTTPStatus.FORBIDDEN, {"error": "this table answers only http://127.0.0.1"})
            return False
        return True

    def do_GET(self) -> None:
        if not self._local():
            return
        path, _, query = self.path.partition("?")
        if path == "/":
            self._send(HTTPStatus.OK, self.server.page.encode(), "text/html; charset=utf-8")
        elif path == "/assets/style.css":
            self._send(HTTPStatus.OK, self.server.style, "text/css")
        elif path == "/table.css":
            self._send(HTTPStatus.OK, self.server.table_style, "text/css")
        elif path == "/table.js":
            self._send(HTTPStatus.OK, self.server.script, "text/javascript")
        elif path == "/state":
            since = query.removeprefix("since=")
            state = self.server.table.state(int(since) if since.isdigit() else 0)
            if state["over"]:
                self.server.seen_over.set()
            self._json(HTTPStatus.OK, state)
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {path}"})

    def do_POST(self) -> None:
        if not self._local():
            return
        if self.path not in ("/move", "/coach"):
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {self.path}"})
            return
        if self.headers.get("X-Table-Token") != self.server.token:
            self._json(HTTPStatus.FORBIDDEN, {"error": "a move needs this table's token: reload the page"})
            return
        if self.path == "/coach":  # starts a bot: only the served page may ask, as only it may move
            advice = self.server.table.advice()
            if isinstance(advice, str):
                self._json(HTTPStatus.CONFLICT, {"error": advice})
            else:
                self._json(HTTPStatus.OK, advice.to_dict())
            return
        length = self.headers.get("Content-Length", "")
        if not length.isdigit() or int(length) > MAX_BODY:
            self._json(HTTPStatus.BAD_REQUEST, {"error": f"expected a JSON move of at most {MAX_BODY} bytes"})
            return
        choice = choice_from_json(self.rfile.read(int(length)))
        if isinstance(choice, str):
            self._json(HTTPStatus.BAD_REQUEST, {"error": choice})
            return
        refused = self.server.table.refusal(choice)
        if refused is not None:
            self._json(HTTPStatus.CONFLICT, {"error": refused})
            return
        self._json(HTTPStatus.OK, {"ok": True})
