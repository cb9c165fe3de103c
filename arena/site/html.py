"""Rendering the results site: page data (from :mod:`arena.site.pages`) into HTML strings. The filters and helpers the
templates use (cards, numbers, links relative to a page, a listing's rows made without a macro), the Jinja2
environment over ``site/templates``, and the ``render_*`` functions: pure, a page's data in, its HTML out. Nothing
here reads the store or writes a file (:mod:`arena.site.build` does). Autoescaping is on for every template: bot
names, fault details and stderr tails come from untrusted programs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import cache, lru_cache
from typing import Any

from jinja2 import BytecodeCache, Environment, FileSystemBytecodeCache, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from arena.match.stderr import error_view
from arena.resources import data_dir
from arena.site import common, replay, snapshot, svg, urls
from arena.site.pages import bot as bot_data
from arena.site.pages import faults as faults_data
from arena.site.pages import highlights as highlights_data
from arena.site.pages import home as home_data
from arena.site.pages import listings as listings_data
from arena.site.pages import match as match_data
from arena.site.pages import pair as pair_data
from arena.site.pages import tournament as tournament_data
from arena.site.rows import MatchListRow

SITE_DIR = data_dir("site")
TEMPLATE_DIR = SITE_DIR / "templates"
ANY_BOT = "*"
"""A bot's directory no bot's slug can be (:func:`arena.site.urls.slug`): a bot listing's rows are linked from it,
the same on every bot's pages."""
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


def relative(href: str, page: str) -> str:
    """The site-relative ``href`` as a link from the page at site-relative ``page``: the shortest way there, which
    on a listing (thousands of rows, four links each) is half the bytes of going up to the root and down again.

    >>> relative("t/a/bots/b/index.html", "t/a/bots/c/matches-2.html"), relative("t/a/matches/4.html", "t/a/x.html")
    ('../b/index.html', 'matches/4.html')
    >>> relative("index.html", "t/a/matches/page-2.html"), relative("t/ab/x.html", "t/a/y.html")
    ('../../../index.html', '../ab/x.html')
    >>> relative("t/a/index.html", "index.html"), relative("t/a/m/b.html", "t/a/m/c/d.html")
    ('t/a/index.html', '../b.html')
    """
    here = page[:page.rfind("/") + 1]  # its directory, with the slash
    if href.startswith(here):
        return href[len(here):]  # this directory or below: most links of a listing (string slices, not splits)
    cut = href.rfind("/") + 1
    return _way(here, href[:cut]) + href[cut:]


@lru_cache(maxsize=16384)
def _way(here: str, there: str) -> str:
    # From one directory to another, found once: a listing's rows link a few directories (a thousand bots') from
    # the same few pages' directories, half a million times in a big league's build.
    same = 0
    while True:
        end = here.find("/", same) + 1
        if not end or there[same:end] != here[same:end]:
            break
        same = end
    return "../" * here.count("/", same) + there[same:]


def number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def probability(value: float | None) -> str:
    """A probability as a whole percent that never claims more than it knows: rounding 0.995 up to "100%" would
    read as a certainty, so it is ">99%" (and 0.004 "<1%").

    >>> probability(0.995), probability(0.5), probability(1.0), probability(0.004), probability(None)
    ('>99%', '50%', '>99%', '<1%', '–')
    """
    if value is None:
        return "–"
    if value >= 0.995:
        return ">99%"
    if value < 0.005:
        return "<1%"
    return f"{100 * value:.0f}%"


def share(value: float) -> str:
    """A share of matches as a whole percent: 100% and 0% only when it is all or none.

    >>> share(1.0), share(0.996), share(0.0), share(0.003), share(0.25)
    ('100%', '>99%', '0%', '<1%', '25%')
    """
    return "100%" if value >= 1 else "0%" if value <= 0 else probability(value)


def setting(value: Any) -> str:
    """A config value as its organiser would write it: strings bare, everything else as JSON.

    >>> setting([3, 5]), setting(None), setting("process"), setting({"beta": 25 / 6})
    ('[3, 5]', 'null', 'process', '{"beta": 4.16667}')
    """
    return value if isinstance(value, str) else json.dumps(_tidy(value))


def move_list(blocks: Sequence[replay.MoveBlock]) -> Markup:
    """The move list: a fold per round (its deal the summary, its grid of turns, its end), the match's start and
    end as lines of their own; every narrated line carries its event's index (``data-e``), which is where replay.js
    takes a step's text from. Built here rather than in a template loop: it is on every match page. One tab stop
    for all the grids (the widest), set once on the list rather than on each round's grid.

    >>> print(move_list([replay.MoveBlock(((0, "a <b> starts"),)),
    ...                  replay.MoveBlock(((1, "Round 1"), (3, "ends")), "x", 8)]))
    <div class="moves" data-moves style="tab-size:8">
    <p data-e="0">a &lt;b&gt; starts</p>
    <details><summary data-e="1">Round 1</summary><pre tabindex=0>x</pre><p data-e="3">ends</p></details>
    </div>
    """
    def said(lines: Sequence[tuple[int, str]]) -> str:
        return "".join(f'<p data-e="{index}">{escape(text)}</p>' for index, text in lines)

    tab = max((block.tab for block in blocks), default=0)
    stop = f' style="tab-size:{tab}"' if tab else ""
    parts = [f'<div class="moves" data-moves{stop}>']
    for block in blocks:
        if not block.grid:
            parts.append(said(block.lines))
            continue
        head, rest = (block.lines[0], block.lines[1:]) if block.lines else (None, ())
        summary = "<summary>Turns</summary>" if head is None else f'<summary data-e="{head[0]}">{escape(head[1])}</summary>'
        parts.append(f"<details>{summary}<pre tabindex=0>{escape(block.grid)}</pre>{said(rest)}</details>")
    parts.append("</div>")
    return Markup("\n".join(parts))


def listing_row(m: MatchListRow, show_place: bool, page: str) -> Markup:
    """A match's row in a listing, one line with its end tags left implied and its links relative to ``page``.
    Made here rather than by a template macro: every match is in four listings, and the macro's handling of each
    value was most of the time a full build spent on them.

    >>> from arena.game.results import Termination
    >>> from arena.site.rows import PlayerCell
    >>> row = MatchListRow(4, 5, "t/a/matches/4.html", "done", 3, 40, Termination.LAST_STANDING, (
    ...     PlayerCell(0, "<b>", "t/a/bots/b/index.html", 1, 12, None, None),
    ...     PlayerCell(1, "c", "t/a/bots/c/index.html", 2, 120, None, 3)))
    >>> print(listing_row(row, False, "t/a/matches/index.html"))  # doctest: +NORMALIZE_WHITESPACE
    <tr class="rowlink" data-bots="&lt;b&gt;
    c"><th scope="row"><a href="4.html" class="whole">#5</a><td class="players"><span class="player winner"><b>1.</b>
    <a href="../bots/b/index.html">&lt;b&gt;</a> <i>12</i></span> <span class="player"><b>2.</b>
    <a href="../bots/c/index.html">c</a> <i>120</i> <span class="outtag">out r3</span></span><td class="num opt">3<td
    class="num opt">40<td class="opt">last standing
    """
    if show_place:
        # A bot's pages link their bot as they link the others (../b/index.html, not index.html), so that a match's
        # row is the same on its four bots' pages but for the place: made once, where the match is read.
        folder = page.rfind("/", 0, page.rfind("/"))  # the bots' directory, t/T/bots/
        head, tail = m.html or row_parts(m, f"{page[:folder]}/{ANY_BOT}/")
        return Markup(f'{head}<td class="num place-{m.place_of}">{_dash(m.place_of)}{tail}')
    head, tail = row_parts(m, page)
    return Markup(head + tail)


def listing_rows(rows: Iterable[MatchListRow], show_place: bool, page: str) -> Markup:
    """A listing's rows (:func:`listing_row`), a line each: one call from the template for a page of fifty, whose
    loop's handling of each row was a third of a listing page's time."""
    return Markup("\n".join([listing_row(m, show_place, page) for m in rows]))


def row_parts(m: MatchListRow, page: str) -> tuple[str, str]:
    """A match's row in a listing (:func:`listing_row`) before and after the place cell, its links relative to the
    page at (or the directory) ``page``."""
    status = "" if m.status == "done" else f" status-{escape(m.status)}"
    bots = "\n".join(_escaped(p.bot) for p in m.players)
    head = (f'<tr class="rowlink{status}" data-bots="{bots}"><th scope="row">'
            f'<a href="{escape(relative(m.href, page))}" class="whole">#{m.id}</a>')
    html = ['<td class="players">']
    if m.status != "done":
        html.append(f'<span class="tag">{escape(m.status)}</span> ')
    cells = []
    for p in m.players:
        cell = (f'<span class="player{" winner" if p.place == 1 else ""}"><b>{_dash(p.place)}.</b> '
                f'<a href="{escape(relative(p.href, page))}">{_escaped(p.bot)}</a>')
        if p.score is not None:
            cell += f" <i>{p.score}</i>"
        if p.out_round:
            cell += f' <span class="outtag">out r{p.out_round}</span>'
        if p.fault:
            cell += f' <span class="fault" title="{escape(p.fault.reason.value)}">{escape(p.fault.kind.value)}</span>'
        cells.append(cell + "</span>")
    html.append(" ".join(cells))
    html.append(f'<td class="num opt">{_dash(m.rounds)}<td class="num opt">{_dash(m.turns)}'
                f'<td class="opt">{escape("–" if m.termination is None else m.termination.text)}')
    return head, "".join(html)


def bot_row_html(snap: snapshot.Snapshot, position: int) -> snapshot.BotRow | None:
    """The match at ``position`` as its row on its bots' pages (:attr:`arena.site.snapshot.BuildCache.row_html`), once
    it is read; None when it is not in the store any more."""
    try:
        match = snap.matches[position]
    except snapshot.MatchGone:
        return None
    head, tail = row_parts(common.match_list_row(snap, match), urls.bot_href(snap.slug, ANY_BOT))
    places = (tuple(seat.place for seat in match.result.players) if match.result is not None
              else (None,) * len(match.bot_ids))
    return snapshot.BotRow(match.id, head, tail, places)


def opponent_rows(opponents: Sequence[bot_data.Opponent], root: str) -> Markup:
    """A bot page's rows of its results against each opponent, a line each. Made here rather than by a template
    loop, as :func:`listing_row` is: a bot in a big league met hundreds of opponents, and a thousand bot pages'
    rows by the template's handling of each value were a tenth of a full build.

    >>> print(opponent_rows([bot_data.Opponent("<b>", "t/a/bots/b/index.html", 2, 1, 4, "t/a/m.html?bot=a&vs=b"),
    ...                      bot_data.Opponent("c", "t/a/bots/c/index.html", 0, 0, 0)], "../../"))
    <tr><th scope="row"><a href="../../t/a/bots/b/index.html">&lt;b&gt;</a></th><td class="num">2</td><td class="num">1</td><td class="num">1</td><td class="num"><a href="../../t/a/m.html?bot=a&amp;vs=b" aria-label="the 4 matches against &lt;b&gt;">4</a></td><td class="num">62%</td></tr>
    <tr><th scope="row"><a href="../../t/a/bots/c/index.html">c</a></th><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">–</td></tr>
    """
    rows = []
    for o in opponents:
        name = _escaped(o.bot)
        tied = o.shared - o.above - o.below
        if o.shared:
            shared = (f'<a href="{escape(root + o.matches_href)}" aria-label="the {o.shared} matches against '
                      f'{name}">{o.shared}</a>')
            score = f"{round(100 * (o.above + tied / 2) / o.shared)}%"
            if o.pair_href is not None:
                score = f'<a href="{escape(root + o.pair_href)}" aria-label="{score}: side by side with {name}">{score}</a>'
        else:
            shared, score = "0", "–"
        rows.append(f'<tr><th scope="row"><a href="{escape(root + o.href)}">{name}</a></th><td class="num">{o.above}'
                    f'</td><td class="num">{tied}</td><td class="num">{o.below}</td><td class="num">{shared}</td>'
                    f'<td class="num">{score}</td></tr>')
    return Markup("\n".join(rows))


@lru_cache(maxsize=4096)
def _escaped(name: str) -> str:
    # A bot's name escaped once, not twice in every row of the five listings of each of its matches.
    return str(escape(name))


def _dash(value: int | None) -> str:
    return "–" if value is None else str(value)


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
    # No auto_reload: a build renders 20,000 pages from templates that do not change under it, and Jinja would
    # look at each template file's time on every page.
    # Compiled templates kept between builds (Jinja's cache in the user's temporary directory, checked against
    # each template's source): compiling them was a few tenths of a second of every rebuild.
    try:
        compiled: BytecodeCache | None = FileSystemBytecodeCache()
    except (RuntimeError, OSError):
        compiled = None  # no private temporary directory: compile every time
    env = Environment(loader=FileSystemLoader(str(TEMPLATE_DIR)), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, auto_reload=False, bytecode_cache=compiled)
    env.filters.update(card=card, cards=cards, number=number, setting=setting, script_json=script_json, move_list=move_list,
                       relative=relative, stderr_excerpt=error_view)
    env.filters.update(probability=probability, share=share)
    env.globals.update(rating_bar=svg.rating_bar, rating_axis=svg.rating_axis, line_chart=svg.line_chart,
                       chart_values=svg.chart_values, listing_rows=listing_rows,
                       opponent_rows=opponent_rows)
    return env


def _render(template: str, path: str, **context: Any) -> str:
    # Every link in a template is site-relative; prefixing it with the way back to the site's root makes it
    # relative to the page, which is what file:// needs.
    root = "../" * path.count("/")
    return environment().get_template(template).render(root=root, path=path, **context)


def render_home(page: home_data.HomePage) -> str:
    return _render("home.html", "index.html", page=page)


def render_tournament(page: tournament_data.TournamentPage) -> str:
    return _render("tournament.html", urls.tournament_href(page.slug), page=page)


def render_standings(page: tournament_data.StandingsPage) -> str:
    return _render("standings.html", page.path, page=page)


def standings_index_js(snap: snapshot.Snapshot) -> str:
    """A big field's standings index (:func:`arena.site.pages.tournament.standings_index`) as a script for
    filter.js, escaped as the match index is."""
    text = json.dumps(tournament_data.standings_index(snap), ensure_ascii=False, separators=(",", ":"))
    return f"window.arenaStandings = {script_json(text)};\n"


def render_match_list(page: listings_data.MatchListPage) -> str:
    return _render("matches.html", page.path, page=page)


def render_bot(page: bot_data.BotPage) -> str:
    assert page.matches is not None  # made by the caller (see tournament_pages)
    return _render("bot.html", page.matches.path, page=page)


def render_faults(page: faults_data.FaultsPage) -> str:
    return _render("faults.html", page.path, page=page)


def render_faults_of(snap: snapshot.Snapshot, bot_id: int) -> str:
    page = faults_data.faults_page(snap, bot_id)
    assert page is not None  # yielded only for a bot with faults
    return render_faults(page)


def render_highlights(page: highlights_data.HighlightsPage) -> str:
    return _render("highlights.html", page.path, page=page)


def render_pair(page: pair_data.PairPage) -> str:
    return _render("pair.html", page.path, page=page)


def render_match(page: match_data.MatchPage, slug: str) -> str:
    return _render("match.html", urls.match_href(slug, page.id), page=page)


def match_data_js(page: match_data.MatchPage) -> str:
    """A match's data file: a script that hands replay.js the match (a page opened from disk may load a script,
    but not fetch a JSON file). What could close a script element is escaped (the page's own markup never holds
    this text, but a data file opened as a page or pasted into one must not run anything a bot named itself)."""
    assert page.replay_data is not None
    return f"window.arenaMatch = {script_json(page.replay_data)};\n"


def match_index_js(snap: snapshot.Snapshot) -> str:
    """The tournament's match index (:func:`arena.site.pages.listings.match_index`) as a script that hands it to
    search.js (a page opened from disk may load a script, but not fetch a JSON file), escaped as a match's data file
    is."""
    text = json.dumps(listings_data.match_index(snap), ensure_ascii=False, separators=(",", ":"))
    return f"window.arenaIndex = {script_json(text)};\n"


def render_bot_with(page: bot_data.BotPage, first: listings_data.Listing) -> str:
    return render_bot(replace(page, matches=first.make()))


def render_listing(listing: listings_data.Listing) -> str:
    return render_match_list(listing.make())
