"""Browser sessions of authors, and the CSRF tokens of the server's forms.

An author's API token is a bearer token for scripts; a person in a browser types it once into the login form
and gets a session instead (``/me``). The session id is 32 random bytes in an ``HttpOnly``, ``SameSite=Strict``
cookie (``Secure`` behind TLS); the server keeps only its SHA-256, with the author's id and when it expires, in
memory: a stolen copy of the server's memory holds no usable id, logging out ends the session on the server (not
just in the browser), and a restart logs everyone out, which costs an author one more login. Every use of a
session checks that its author's token is still live, so ``arena author revoke`` ends their sessions at once.

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

SESSION_COOKIE = "arena_session"
CSRF_COOKIE = "arena_csrf"
SESSION_S = 12 * 3600
"""How long a login lasts."""
MAX_SESSIONS = 10_000
"""Live sessions kept at most; the oldest go first (an author who logs in in a loop cannot fill the memory)."""


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

    def start(self, author_id: int) -> str:
        """A new session for the author; returns its id (the only time it exists in clear)."""
        session_id = secrets.token_urlsafe(32)
        with self._lock:
            while len(self._live) >= MAX_SESSIONS:
                del self._live[next(iter(self._live))]
            self._live[_digest(session_id)] = Session(author_id, self._clock() + self._lifetime)
        return session_id

    def author_id(self, session_id: str) -> int | None:
        """The author of this session, or None if it is unknown or expired. A lookup by hash is safe from timing:
        learning how much of a hash matched tells nothing about an id that hashes to it."""
        key = _digest(session_id)
        with self._lock:
            found = self._live.get(key)
            if found is None:
                return None
            if found.expires <= self._clock():
                del self._live[key]
                return None
            return found.author_id

    def end(self, session_id: str) -> None:
        with self._lock:
            self._live.pop(_digest(session_id), None)


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
