"""Where each page of the results site is: site-relative paths (``t/demo/index.html``), which a page turns into links
relative to itself (:func:`arena.site.html.relative`), so the site works from ``file://`` and under any prefix of a
static host; and the breadcrumbs and pagers that link them. File names come from bot and tournament names only when
those are slugs: anything else a store may hold gets a name built from its row id instead."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}(@[0-9]{1,9})?")
"""A name used as it is: a bot's or a tournament's, or a league's ``NAME@VERSION`` (so ``bots/bob@2/`` is where
anyone would look for bob's second version)."""


MATCHES_PER_PAGE = 50
"""A list of matches (all, or a bot's) shows this many a page (:func:`page_spans`)."""


def slug(name: str, row_id: int, prefix: str) -> str:
    """``name`` when it is safe as a file name, else a name no slug can take (it starts with ``_``), made unique by
    the row id.

    >>> slug("greedy", 3, "b"), slug("greedy@2", 3, "b"), slug("<script>", 4, "b"), slug("a@b", 5, "b")
    ('greedy', 'greedy@2', '_b4-script', '_b5-a-b')
    """
    if SLUG.fullmatch(name):
        return name
    readable = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-")[:40]
    return f"_{prefix}{row_id}" + (f"-{readable}" if readable else "")


def tournament_href(tslug: str) -> str:
    return f"t/{tslug}/index.html"


def matches_href(tslug: str, page: int = 1) -> str:
    return f"t/{tslug}/matches/index.html" if page == 1 else f"t/{tslug}/matches/page-{page}.html"


def match_href(tslug: str, match_id: int) -> str:
    """A match's page, named by the number its heading, ``arena matches`` and ``arena show`` give it (its store
    id), so that ``matches/103.html`` is "Match #103" (not the 103rd of the schedule)."""
    return f"t/{tslug}/matches/{match_id}.html"


def match_data_href(tslug: str, match_id: int) -> str:
    """The data file of a match's replay: a script (a page opened from disk may load a script, but not fetch a
    file) that hands replay.js the match's names and compact events."""
    return f"t/{tslug}/matches/{match_id}.js"


def match_index_href(tslug: str) -> str:
    """The tournament's match index (:func:`match_index`): a script, as a match's data file is."""
    return f"t/{tslug}/matches/index.js"


def match_log_href(tslug: str, match_id: int) -> str:
    """A match's event log in the site, to download: the log as the runner wrote it (gzip-compressed JSON lines),
    or, on a site without the bots' stderr (the league server's public one), that log without it."""
    return f"t/{tslug}/matches/{match_id}.jsonl.gz"


def standings_href(tslug: str, page: int = 1) -> str:
    """A page of a big field's standings: the first is the tournament's page."""
    return tournament_href(tslug) if page == 1 else f"t/{tslug}/standings-{page}.html"


def standings_index_href(tslug: str) -> str:
    """Every bot's rank and name (:func:`standings_index`), what the standings' filter searches."""
    return f"t/{tslug}/standings.js"


def bot_href(tslug: str, bslug: str, page: int = 1) -> str:
    return f"t/{tslug}/bots/{bslug}/index.html" if page == 1 else f"t/{tslug}/bots/{bslug}/matches-{page}.html"


def faults_href(tslug: str, bslug: str) -> str:
    """A bot's page of all its faults (its own page shows the latest)."""
    return f"t/{tslug}/bots/{bslug}/faults.html"


def highlights_href(tslug: str) -> str:
    """A tournament's highlights: closest finishes, comebacks, failed declarations (arena/site/pages/highlights.py)."""
    return f"t/{tslug}/highlights.html"


def pair_href(tslug: str, first: str, second: str) -> str:
    """The page of two bots side by side (arena/site/pages/pair.py), by their slugs, the bot of the lower row id
    first: one page a pair, whichever bot's page links it. A directory per first bot, as slugs may hold ``-``."""
    return f"t/{tslug}/pairs/{first}/{second}.html"


def step_href(href: str, step: int | None) -> str:
    """``href`` (a match's page) opened at replay step ``step`` (1-based, as the replay's counter and its
    ``#step=N`` address count), or at its default step when not known."""
    return href if step is None else f"{href}#step={step}"


@dataclass(frozen=True)
class Crumb:
    label: str
    href: str | None  # None: the current page


@dataclass(frozen=True)
class Pager:
    """The page links of one page of a listing: the first page, those near this one and (from the first page, or
    near the end) the last. A page far from the end names no page count, so it stays the same file while a league
    adds pages after it (an incremental build rewrites only what changed)."""

    page: int
    links: tuple[tuple[int, str] | None, ...]
    """The page numbers shown with their hrefs, in order (this page among them); None marks a gap."""
    prev: str | None
    next: str | None


def pager(page: int, hrefs: Sequence[str], radius: int = 3) -> Pager:
    """The pager of page ``page`` (1-based) of the pages at ``hrefs``.

    >>> [link and link[0] for link in pager(10, [str(n) for n in range(20)], 2).links]
    [1, None, 8, 9, 10, 11, 12, None]
    >>> [link and link[0] for link in pager(1, [str(n) for n in range(20)], 2).links]
    [1, 2, 3, None, 20]
    """
    count = len(hrefs)
    keep = {1, *range(page - radius, page + radius + 1)} | ({count} if page == 1 else set())
    links: list[tuple[int, str] | None] = []
    shown = 0
    # The pages shown, not every page: a big league's 2,000 listing pages each have a pager.
    for number in sorted(number for number in keep if 1 <= number <= count):
        if number > shown + 1:
            links.append(None)
        links.append((number, hrefs[number - 1]))
        shown = number
    if links and shown < count:
        links.append(None)
    return Pager(page, tuple(links) if count > 1 else (), hrefs[page - 2] if page > 1 else None,
                 hrefs[page] if page < count else None)


def page_spans(groups: Sequence[int | None], per_page: int) -> list[range]:
    """Pages of a listing whose items belong to ``groups`` (a match's deal group, in listing order): at most
    ``per_page`` items a page, a page never breaking a run of one group (the rotations of one deal are read
    together) unless that run alone is longer than a page. Earlier pages do not change as items are appended.

    >>> page_spans([0, 0, 0, 1, 1, 1, 2, 2, 2], 4), page_spans([0] * 5, 2), page_spans([], 3)
    ([range(0, 3), range(3, 6), range(6, 9)], [range(0, 2), range(2, 4), range(4, 5)], [range(0, 0)])
    """
    spans: list[range] = []
    start = 0
    run = 0  # the first item of the current group's run
    for position in range(1, len(groups) + 1):
        if position < len(groups) and groups[position] == groups[run] and groups[run] is not None:
            continue
        # the run [run, position) ends here
        if position - start > per_page and run > start:
            spans.append(range(start, run))  # the run does not fit after what the page holds: it starts the next
            start = run
        while position - start > per_page:
            spans.append(range(start, start + per_page))  # a run longer than a page is cut
            start += per_page
        run = position
    if start < len(groups) or not spans:
        spans.append(range(start, len(groups)))
    return spans


# -- downloads --------------------------------------------------------------------------------------------------------


def results_href(tslug: str, kind: str) -> str:
    """A tournament's results to download: ``results.json`` (standings and matches), ``standings.csv``,
    ``matches.csv``."""
    return f"t/{tslug}/{kind}"
