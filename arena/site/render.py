"""Rendering the results site: page data (from :mod:`arena.site.data`) into HTML strings, and writing the site.

The ``render_*`` functions are pure: a page's data in, its HTML out. :func:`write_site` is the only function of
the site that writes files, and :func:`build_site` is the one entry point that reads the store, renders every page
and hands them to it, built in a staged copy of the site that is swapped in whole. Templates and assets live in ``site/`` at the top of the repository. Autoescaping is on for
every template: bot names, fault details and stderr tails come from untrusted programs.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from arena.narrate import Line
from arena.resources import data_dir
from arena.site import data, svg
from arena.sandbox import procfs
from arena.store import Store

SITE_DIR = data_dir("site")
TEMPLATE_DIR = SITE_DIR / "templates"
ASSET_DIR = SITE_DIR / "assets"
ASSETS = ("style.css", "replay.js", "matches.js", "favicon.svg")
PARALLEL_FROM = 500
"""Match pages from which a process pool pays for its start-up (about a second)."""
CHUNK = 250
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


def move_items(moves: Sequence[Line]) -> Markup:
    """The move list's ``<li>`` items (one per engine event: replay.js shows item i at step i), built here rather
    than in a template loop: a long match has hundreds of lines, and a Jinja loop costs several times this per line
    on the build's hottest page.

    >>> print(move_items([Line("play", 1, "a <b> throws 5♣")]))
    <li class="play">a &lt;b&gt; throws 5♣</li>
    """
    return Markup("\n".join(f'<li class="{escape(m.kind)}">{escape(m.text)}</li>' for m in moves))


def script_json(text: str) -> Markup:
    """JSON text made safe inside a ``<script type="application/json">`` element: ``<``, ``>``, ``&`` and ``'``
    become ``\\u`` escapes (the same JSON value), so no string in it (a bot's name) can close the element.

    >>> print(script_json('{"name":"</script>"}'))
    {"name":"\\u003c/script\\u003e"}
    """
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
                  .replace("'", "\\u0027"))


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
    env.filters.update(card=card, cards=cards, number=number, setting=setting, script_json=script_json, move_items=move_items)
    env.globals.update(rating_bar=svg.rating_bar, rating_axis=svg.rating_axis, line_chart=svg.line_chart)
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


def match_files(snap: data.Snapshot, positions: Iterable[int],
                corrupt: list[str] | None = None) -> Iterator[tuple[str, str]]:
    """The pages of the matches at ``positions`` in ``snap.matches``, each read from its log when there is one;
    the paths of logs that are there but unreadable are added to ``corrupt``."""
    for position in positions:
        match = snap.matches[position]
        log, unreadable = data.match_log(snap, match)
        if unreadable is not None and corrupt is not None:
            corrupt.append(str(unreadable))
        yield (data.match_href(snap.slug, match.idx),
               render_match(data.match_page(snap, position, log, unreadable is not None), snap.slug))


def tournament_files(snap: data.Snapshot, matches: bool = True,
                     corrupt: list[str] | None = None) -> Iterator[tuple[str, str]]:
    """Every page of one tournament (with ``matches=False``, all but the match pages), as (site-relative path,
    HTML)."""
    yield data.tournament_href(snap.slug), render_tournament(data.tournament_page(snap))
    for listing in data.match_list_pages(snap):
        yield listing.path, render_match_list(listing)
    for bot in snap.bots:
        page, more = data.bot_pages(snap, bot.id)
        yield page.matches.path, render_bot(page)
        for listing in more:
            yield listing.path, render_match_list(listing)
    if matches:
        yield from match_files(snap, range(len(snap.matches)), corrupt)


_worker: tuple[data.Snapshot, Path] | None = None


def _start_worker(snap: data.Snapshot, out: Path) -> None:
    global _worker
    _worker = (snap, out)  # sent once per worker, not once per chunk


def _write_span(span: tuple[int, int]) -> tuple[int, list[str]]:
    assert _worker is not None
    snap, out = _worker
    corrupt: list[str] = []
    return write_site(out, match_files(snap, range(*span), corrupt)), corrupt


def write_matches_in_parallel(snap: data.Snapshot, out: Path, workers: int) -> tuple[int, list[str]]:
    """Render and write the match pages with a process pool: they are most of a big build (a log to read and a
    replay to render each). Each worker writes its own pages, through :func:`write_site` like everything else,
    so that hundreds of megabytes of HTML do not travel back through pipes."""
    spans = [(start, min(start + CHUNK, len(snap.matches))) for start in range(0, len(snap.matches), CHUNK)]
    # spawn, like the tournament runner: a fork would copy the store's open SQLite connection.
    count, corrupt = 0, []
    with multiprocessing.get_context("spawn").Pool(min(workers, len(spans)), _start_worker, (snap, out)) as pool:
        for written, unreadable in pool.imap_unordered(_write_span, spans):
            count += written
            corrupt += unreadable
    return count, sorted(corrupt)


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
        # A new file, never a rewrite in place: a staged site shares its unchanged files with the live one.
        target.unlink(missing_ok=True)
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
    corrupt_logs: tuple[str, ...] = ()
    """Logs found but unreadable: their match pages say so, and the build warns."""

    @property
    def index(self) -> Path:
        return self.out / "index.html"


def build_site(store: Store, out: Path, names: Sequence[str] | None = None, workers: int | None = None,
               parallel_from: int = PARALLEL_FROM) -> BuildReport:
    """Render the home page and every page of the tournaments ``names`` (default: all) into ``out``; the match
    pages of a tournament with ``parallel_from`` matches or more by up to ``workers`` processes (default: the CPUs).

    Raises KeyError naming a tournament the store does not have.
    """
    workers = workers if workers is not None else os.cpu_count() or 1
    started = time.monotonic()
    wanted = [row["name"] for row in store.tournaments()] if names is None else list(names)
    snaps = [data.snapshot(store, name) for name in wanted]
    built = {snap.slug for snap in snaps}
    existing = {path.parent.name for path in (out / "t").glob("*/index.html")} if (out / "t").is_dir() else set()

    pooled = [snap for snap in snaps if workers > 1 and len(snap.matches) >= parallel_from]

    def files() -> Iterator[tuple[str, str | bytes]]:
        for asset in ASSETS:
            yield f"assets/{asset}", (ASSET_DIR / asset).read_bytes()
        for snap in snaps:
            yield from tournament_files(snap, matches=snap not in pooled, corrupt=corrupt)
        yield "index.html", render_home(data.home_page(store, built | existing))

    corrupt: list[str] = []
    stage = _stage(out)
    try:
        count = write_site(stage, files(), replace=[f"t/{slug}" for slug in sorted(built)])
        for snap in pooled:
            written, unreadable = write_matches_in_parallel(snap, stage, workers)
            count += written
            corrupt += unreadable
        _swap(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return BuildReport(out, tuple(wanted), count, time.monotonic() - started, tuple(corrupt))


def _stage(out: Path) -> Path:
    """A new directory beside ``out`` holding a copy of it (hard links: cheap) to build the next site in, so a
    build stopped part-way (a kill, a full disk) leaves the old site whole. Stages of dead builds are swept."""
    for leftover in out.parent.glob(f".{out.name}.*"):
        pid, _, kind = leftover.name[len(out.name) + 2:].partition(".")
        if kind in ("tmp", "old") and pid.isdigit() and not procfs.running(int(pid)):
            shutil.rmtree(leftover, ignore_errors=True)
    stage = out.parent / f".{out.name}.{os.getpid()}.tmp"
    shutil.rmtree(stage, ignore_errors=True)
    if out.is_dir():
        shutil.copytree(out, stage, copy_function=_link, symlinks=True)
    else:
        stage.mkdir(parents=True)
    return stage


def _link(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)  # a file system without hard links


RENAME_EXCHANGE = 2


def _swap(stage: Path, out: Path) -> None:
    """Put the staged site in place of ``out`` in one step (Linux's atomic exchange of two paths), then remove
    the old one; elsewhere in two renames."""
    if not out.exists():
        os.rename(stage, out)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    at_cwd = -100
    if renameat2 is None or renameat2(at_cwd, os.fsencode(stage), at_cwd, os.fsencode(out), RENAME_EXCHANGE) != 0:
        old = out.with_name(f".{out.name}.{os.getpid()}.old")
        os.rename(out, old)
        os.rename(stage, out)
        stage = old
    shutil.rmtree(stage, ignore_errors=True)
