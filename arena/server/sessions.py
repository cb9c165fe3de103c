"""Browser sessions of authors, and the CSRF tokens of the server's forms.

An author's API token is a bearer token for scripts; a person in a browser types it once into the login form
and gets a session instead (``/me``). The session id is 32 random bytes in an ``HttpOnly``, ``SameSite=Strict``
cookie (``Secure`` behind TLS); the server keeps only its SHA-256, with the author's id and when it expires, in
memory: a stolen copy of the server's memory holds no usable id, logging out ends the session on the server (not
just in the browser), and a restart logs everyone out, which costs an author one more login. Every use of a
session checks that its author's token is still live, so ``arena author revoke`` ends their sessions at once.

Logins are bounded so that no author can log another out (a loop of 10,000 logins once evicted every other
session): each author has at most :data:`MAX_PER_AUTHOR` sessions, their new login ending their own oldest, so the
global cap (:data:`MAX_SESSIONS`) takes that many authors to fill; and :class:`LoginGate` rate-limits logins per
client address (failed ones counted) and per author (``429`` with ``Retry-After``).

Forms that change something (upload, login, logout) carry a double-submit CSRF token: the same random value in
a hidden field and in an ``HttpOnly``, ``SameSite=Strict`` cookie. A page on another site can post the form but
can neither read nor set the cookie, so its post never matches.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from arena.server.ratelimit import Window

SESSION_COOKIE = "arena_session"
CSRF_COOKIE = "arena_csrf"
SESSION_S = 12 * 3600
"""How long a login lasts."""
MAX_SESSIONS = 10_000
"""Live sessions kept at most, the oldest going first when full: with :data:`MAX_PER_AUTHOR`, only 1,000 authors
can fill it, never one."""
MAX_PER_AUTHOR = 10
"""Live sessions of one author at most (browsers, devices); a new login ends that author's own oldest."""
HOUR = 3600.0


@dataclass(frozen=True)
class Session:
    author_id: int
    expires: float


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


class Sessions:
    """The live sessions of one server (thread-safe); times come from ``clock`` (seconds, monotonic)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, lifetime: float = SESSION_S) -> None:
        self._clock = clock
        self._lifetime = lifetime
        self._lock = threading.Lock()
        self._live: dict[str, Session] = {}  # in insertion order, so the first is the oldest
        self._of: dict[int, dict[str, None]] = {}  # each author's session keys, oldest first

    def start(self, author_id: int) -> str:
        """A new session for the author; returns its id (the only time it exists in clear). It ends the author's
        oldest if they have :data:`MAX_PER_AUTHOR`, and the oldest of all if the server has :data:`MAX_SESSIONS`."""
        session_id = secrets.token_urlsafe(32)
        key = _digest(session_id)
        with self._lock:
            mine = self._of.setdefault(author_id, {})
            while len(mine) >= MAX_PER_AUTHOR:
                self._drop(next(iter(mine)))
            while len(self._live) >= MAX_SESSIONS:
                self._drop(next(iter(self._live)))
            self._live[key] = Session(author_id, self._clock() + self._lifetime)
            self._of.setdefault(author_id, {})[key] = None
        return session_id

    def count(self, author_id: int | None = None) -> int:
        """How many sessions are kept: the author's, or everyone's."""
        with self._lock:
            return len(self._live) if author_id is None else len(self._of.get(author_id, ()))

    def _drop(self, key: str) -> None:
        """Forget session ``key`` (the lock held)."""
        found = self._live.pop(key, None)
        if found is None:
            return
        mine = self._of.get(found.author_id)
        if mine is not None:
            mine.pop(key, None)
            if not mine:
                del self._of[found.author_id]

    def author_id(self, session_id: str) -> int | None:
        """The author of this session, or None if it is unknown or expired. A lookup by hash is safe from timing:
        learning how much of a hash matched tells nothing about an id that hashes to it."""
        key = _digest(session_id)
        with self._lock:
            found = self._live.get(key)
            if found is None:
                return None
            if found.expires <= self._clock():
                self._drop(key)
                return None
            return found.author_id

    def end(self, session_id: str) -> None:
        with self._lock:
            self._drop(_digest(session_id))


@dataclass(frozen=True)
class LoginLimits:
    """``server: logins_per_hour, login_attempts_per_hour`` (docs/SERVER.md)."""

    per_author: int = 20
    """Successful logins of one author in any hour."""
    per_address: int = 60
    """Login attempts from one client address in any hour, failed ones included."""


class LoginGate:
    """The login rate limits of one server (thread-safe): :meth:`attempt` before a login form is read,
    :meth:`login` once its token names an author."""

    def __init__(self, limits: LoginLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._addresses = Window(limits.per_address, HOUR, clock)
        self._authors = Window(limits.per_author, HOUR, clock)

    def attempt(self, address: str) -> int | None:
        """Count a login attempt from ``address``; None, or the seconds to wait if it has had too many."""
        return self._addresses.hit(address)

    def login(self, author_id: int) -> int | None:
        """Count a login of the author; None, or the seconds to wait if they have logged in too often."""
        return self._authors.hit(str(author_id))


def secure(request: Request) -> bool:
    """Whether cookies may be marked Secure: the request came over TLS (to us, or to a proxy that says so)."""
    return request.url.scheme == "https"


def csrf_token(request: Request) -> str:
    """The form token to put in the page: the one in the cookie, or a new one (set it with :func:`set_csrf`)."""
    return request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)


def set_csrf(response: Response, request: Request, token: str, path: str) -> None:
    response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path=path, secure=secure(request))


def csrf_ok(request: Request, field: object) -> bool:
    """Whether the form's token matches the cookie's."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    return bool(cookie) and isinstance(field, str) and hmac.compare_digest(cookie, field)
