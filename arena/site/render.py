"""Rendering the results site: page data (from :mod:`arena.site.data`) into HTML strings, and writing the site.

The ``render_*`` functions are pure: a page's data in, its HTML out. :func:`write_site` is the only function of
the site that writes files, and :func:`build_site` is the one entry point that reads the store, renders every page
and hands them to it. Templates and assets live in ``site/`` at the top of the repository. Autoescaping is on for
every template: bot names, fault details and stderr tails come from untrusted programs.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from arena.site import data, svg
from arena.store import Store

SITE_DIR = Path(__file__).resolve().parents[2] / "site"
TEMPLATE_DIR = SITE_DIR / "templates"
ASSET_DIR = SITE_DIR / "assets"
ASSETS = ("style.css", "replay.js")
SUITS = {"C": ("\u2663", "black"), "D": ("\u2666", "red"), "H": ("\u2665", "red"), "S": ("\u2660", "black")}


def card(code: str) -> Markup:
    """A card code (``TH``) as a small chip (10♥); anything else is shown escaped, as is.

    >>> str(card("TH"))
    '<span class="card red">10\u2665</span>'
    >>> str(card("<b>"))
    '<span class="card">&lt;b&gt;</span>'
    """
    if isinstance(code, str) and len(code) == 2 and code[1] in SUITS:
        symbol, colour = SUITS[code[1]]
        rank = "10" if code[0] == "T" else code[0]
        return Markup(f'<span class="card {colour}">{escape(rank)}{symbol}</span>')
    return Markup('<span class="card">{}</span>').format(code)


def cards(codes: Iterable[str]) -> Markup:
    return Markup("").join(card(code) for code in codes)


def number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def setting(value: Any) -> str:
    """A config value as its organiser would write it: strings bare, everything else as JSON.

    >>> setting([3, 5]), setting(None), setting("process"), setting({"beta": 25 / 6})
    ('[3, 5]', 'null', 'process', '{"beta": 4.16667}')
    """
    return value if isinstance(value, str) else json.dumps(_tidy(value))


def _tidy(value: Any) -> Any:
    # 25/6 as 4.166666666666667 is noise on a page; six significant digits say all an organiser set.
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {key: _tidy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_tidy(item) for item in value]
    return value


@cache
def environment() -> Environment:
    if not TEMPLATE_DIR.is_dir():
        raise FileNotFoundError(f"{TEMPLATE_DIR}: the site templates are missing (an install without site/?)")
    env = Environment(loader=FileSystemLoader(str(TEMPLATE_DIR)), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(card=card, cards=cards, number=number, setting=setting)
    env.globals.update(rating_bar=svg.rating_bar, line_chart=svg.line_chart)
    return env


def _render(template: str, path: str, **context: Any) -> str:
    # Every link in a template is site-relative; prefixing it with the way back to the site's root makes it
    # relative to the page, which is what file:// needs.
    root = "../" * path.count("/")
    return environment().get_template(template).render(root=root, path=path, **context)


def render_home(page: data.HomePage) -> str:
    return _render("home.html", "index.html", page=page)


def render_tournament(page: data.TournamentPage) -> str:
    return _render("tournament.html", data.tournament_href(page.slug), page=page)


def render_match_list(page: data.MatchListPage) -> str:
    return _render("matches.html", page.path, page=page)


def render_bot(page: data.BotPage) -> str:
    return _render("bot.html", page.matches.path, page=page)


def render_match(page: data.MatchPage, slug: str) -> str:
    return _render("match.html", data.match_href(slug, page.idx), page=page)


def tournament_files(snap: data.Snapshot) -> Iterator[tuple[str, str]]:
    """Every page of one tournament, as (site-relative path, HTML)."""
    yield data.tournament_href(snap.slug), render_tournament(data.tournament_page(snap))
    for listing in data.match_list_pages(snap):
        yield listing.path, render_match_list(listing)
    for bot in snap.bots:
        page, more = data.bot_pages(snap, bot.id)
        yield page.matches.path, render_bot(page)
        for listing in more:
            yield listing.path, render_match_list(listing)
    for position, match in enumerate(snap.matches):
        path = data.find_log(snap, match)
        log = None if path is None else data.read_log(path)
        yield data.match_href(snap.slug, match.idx), render_match(data.match_page(snap, position, log), snap.slug)


def write_site(out: Path, files: Iterable[tuple[str, str | bytes]], replace: Sequence[str] = ()) -> int:
    """Write ``files`` (site-relative path, content) under ``out``; the directories in ``replace`` are emptied
    first, so a rebuilt tournament keeps no stale pages. Returns the number of files written."""
    for directory in replace:
        shutil.rmtree(out / directory, ignore_errors=True)
    made: set[Path] = set()
    count = 0
    for relative, content in files:
        target = out / relative
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
        count += 1
    return count


@dataclass(frozen=True)
class BuildReport:
    out: Path
    tournaments: tuple[str, ...]
    pages: int
    seconds: float

    @property
    def index(self) -> Path:
        return self.out / "index.html"


def build_site(store: Store, out: Path, names: Sequence[str] | None = None) -> BuildReport:
    """Render the home page and every page of the tournaments ``names`` (default: all) into ``out``.

    Raises KeyError naming a tournament the store does not have.
    """
    started = time.monotonic()
    wanted = [row["name"] for row in store.tournaments()] if names is None else list(names)
    snaps = [data.snapshot(store, name) for name in wanted]
    built = {snap.slug for snap in snaps}
    existing = {path.parent.name for path in (out / "t").glob("*/index.html")} if (out / "t").is_dir() else set()

    def files() -> Iterator[tuple[str, str | bytes]]:
        for asset in ASSETS:
            yield f"assets/{asset}", (ASSET_DIR / asset).read_bytes()
        for snap in snaps:
            yield from tournament_files(snap)
        yield "index.html", render_home(data.home_page(store, built | existing))

    count = write_site(out, files(), replace=[f"t/{slug}" for slug in sorted(built)])
    return BuildReport(out, tuple(wanted), count, time.monotonic() - started)
