"""What the league server's request handlers share, and how a handler finds it.

The handlers of :mod:`arena.server.app` and :mod:`arena.server.authorpage` are module-level functions of one
request each. What they share (the league, the intake, the views of the store, the sessions, the templates) is one
:class:`Shared`, made by :func:`arena.server.app.create_app` and kept in the Starlette application's ``state``,
where :func:`shared` finds it, typed, from any request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from arena.registry.versions import Registry
from arena.run.league import League
from arena.server.admission import Admission
from arena.server.authors import Author
from arena.server.intake import Intake
from arena.server.sessions import LoginGate, Sessions
from arena.server.views import Views


@dataclass(frozen=True)
class Shared:
    """One server's league and everything its handlers read (each part is thread-safe)."""

    name: str
    """The league's name."""
    league: League
    intake: Intake
    admission: Admission
    """Which uploads are taken on now, and their threads (never the public pages')."""
    registry: Registry
    views: Views
    sessions: Sessions
    logins: LoginGate
    """The login rate limits (per client address and per author)."""
    templates: Environment
    scratch: Path
    """Where uploads are written while they are read."""
    site: Path
    """Where the league's site is published (served under :data:`arena.server.pages.SITE_ROOT`)."""
    cap: int
    """The largest upload accepted, in bytes."""
    run_league: bool

    async def author(self, token: object) -> Author | None:
        """The live author whose API token this is (a form field, or a header's), or None."""
        if not isinstance(token, str) or not token.strip():
            return None
        found: Author | None = await run_in_threadpool(self.views.authenticate, token.strip())
        return found


def shared(request: Request) -> Shared:
    """What the server that answers this request shares (see :func:`arena.server.app.create_app`)."""
    found = request.app.state.server
    assert isinstance(found, Shared), "an application not made by create_app"
    return found
