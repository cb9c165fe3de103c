"""The league server's HTML pages: the results site's templates, rendered with the form's CSRF token.

The server's own pages (the live standings, the upload form, the author pages) are templates of the results site
(``site/templates/``) and use its stylesheet, so they look like the rest of the site. Every page with a form sets
the double-submit CSRF cookie it checks (:mod:`arena.server.sessions`), scoped to the form's path.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from arena.resources import data_dir
from arena.server.sessions import csrf_token, set_csrf
from arena.server.state import shared

SITE_ROOT = "/site/"
"""Where the server serves the static site: the server's pages link into it by absolute paths."""


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(str(data_dir("site") / "templates")), autoescape=True,
                      undefined=StrictUndefined)
    # The static site links from page to page by the shortest relative path (arena.site.html.relative); these
    # pages live outside it, at /me, so their links into it are absolute.
    env.filters["relative"] = lambda href, _page: SITE_ROOT + href
    return env


def render(templates: Environment, template: str, **context: Any) -> str:
    return templates.get_template(template).render(root=SITE_ROOT, **context)


def form_page(request: Request, template: str, status: int, cookie_path: str, **context: Any) -> Response:
    """The page ``template`` with its forms' CSRF token, and the cookie it is checked against, sent back only to
    ``cookie_path`` (where those forms post)."""
    token = csrf_token(request)
    html = render(shared(request).templates, template, csrf=token, **context)
    response = HTMLResponse(html, status)
    set_csrf(response, request, token, cookie_path)
    return response
