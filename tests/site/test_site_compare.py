"""Comparing bots (issue 43): two bots side by side, a tournament's highlights and a big field's bands.

A page per pair of bots that met, its numbers recomputed here from the store's rows (places deal by deal, above and
below, mean places, think times, faults by kind, ratings and rank intervals); the head-to-head grid and each bot's
page link it; a big field has pages for the pairs of its grid only. The highlights (closest finishes, comebacks,
failed declarations) recomputed from the store's places and scores and the logs' events, each linked to its step.
The bands of a big field against the 95% rank intervals. In a real browser (Chromium, from disk) none of these pages
scrolls sideways at 320, 390, 768 or 1280 px, nor has a serious or critical axe-core violation.
"""

from __future__ import annotations

import html
import re
import sqlite3
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path

import pytest

from arena.game.engine import Match
from arena.game.results import Fault, Reason
from arena.match.matchlog import load
from arena.site.build import build_site
from arena.site.html import render_pair
from arena.site.pages.pair import DEALS_SHOWN, pair_page
from arena.site.snapshot import SMALL_FIELD, snapshot
from arena.store import Store
from bench.scale import fill
from tests.sitestore import CRASH, broken_links, fill_store
from tests.support.browser import Browser, browser_fixture, opened, url  # noqa: F401 - fixtures, by their names

# isort: split
from tests.axecheck import problems  # after the module above, which skips without a browser

BOTS = ("planner", "greedy", "crasher", "sleeper", "garbage", "cheater", "flaky", "random")
WIDTHS = (320, 390, 768, 1280)


def faults(bot: str, match: Match) -> Fault:
    """Faults of three kinds, so that a pair's faults by kind have more than one kind to count."""
    if bot in ("sleeper", "flaky"):
        return Fault(Reason.TIMEOUT_MOVE, "no move within the move's time and the bank", match.round)
    if bot == "cheater":
        return Fault(Reason.ILLEGAL_NOT_IN_HAND, "discard 2X not in hand", match.round)
    return CRASH


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """8 bots at tables of 3 in duplicate deals (every rotation of a deal), a forfeit every fifth match, and a think
    time stored for every seat (the store's seats.think_ms, as a run keeps it), then the site built."""
    directory = tmp_path_factory.mktemp("pairs")
    store = Store(directory / "arena.db")
    fill_store(store, name="pairs", bots=BOTS, players=3, repeats=2, think=True, fault_of=faults)
    with store.atomic() as db:
        db.execute("UPDATE seats SET think_ms = (match_id * 37 + seat * 11) % 900 + 5")
    build_site(store, directory / "site", workers=1)
    return directory / "arena.db", directory / "site"


def stored(db: Path) -> dict[int, tuple[int, dict[int, tuple[int, int, int, str | None]]]]:
    """Every finished match straight from the store's tables: its group and, by bot, (seat, place, think ms,
    fault kind)."""
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT m.id, m.grp, s.bot_id, s.seat, s.place, s.think_ms, s.fault_kind FROM matches m "
                           "JOIN seats s ON s.match_id = m.id WHERE m.status = 'done' ORDER BY m.idx, s.seat")
        matches: dict[int, tuple[int, dict[int, tuple[int, int, int, str | None]]]] = {}
        for match_id, group, bot, seat, place, think, kind in rows:
            matches.setdefault(match_id, (group, {}))[1][bot] = (seat, place, think, kind)
    return matches


def text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def cells(page: str, name: str) -> list[str]:
    return [text(cell) for cell in re.findall(rf'<td class="num {name}">(.*?)</td>', page, re.DOTALL)]


def test_each_pair_page_agrees_with_the_store(site: tuple[Path, Path]) -> None:
    db, out = site
    matches = stored(db)
    with sqlite3.connect(db) as con:
        ids = dict(con.execute("SELECT name, id FROM bots"))
    names = {bot_id: name for name, bot_id in ids.items()}
    snap = snapshot(Store(db, readonly=True), "pairs")
    rows = {line.bot_id: row for line, row in zip(snap.standings, snap.standing_rows)}
    pages = sorted((out / "t" / "pairs" / "pairs").glob("*/*.html"))
    met = {tuple(sorted((a, b))) for _, seats in matches.values() for a in seats for b in seats if a != b}
    assert {(ids[p.parent.name], ids[p.stem]) for p in pages} == met
    assert len(pages) == len(BOTS) * (len(BOTS) - 1) // 2  # every pair of 8 met over the duplicate deals
    kinds: Counter[str] = Counter()
    for path in pages:
        a, b = ids[path.parent.name], ids[path.stem]
        assert a < b  # one page a pair: the lower row id first
        page = path.read_text(encoding="utf-8")
        shared = {match_id: (group, seats[a], seats[b]) for match_id, (group, seats) in matches.items()
                  if a in seats and b in seats}
        above = sum(1 for _, x, y in shared.values() if x[1] < y[1])
        below = sum(1 for _, x, y in shared.values() if x[1] > y[1])
        lede = text(re.search(r'<p class="lede">(.*?)</p>', page, re.DOTALL)[1])
        deals: dict[int, list[int]] = defaultdict(list)
        for match_id, (group, _, _) in shared.items():
            deals[group].append(match_id)
        assert lede.startswith(f"{len(shared)} matches shared over {len(deals)} deals: {names[a]} placed above "
                               f"{names[b]} in {above}, below in {below}, level in {len(shared) - above - below}")
        # Deal by deal: every match of each deal shown, latest deal first, with each bot's place and seat.
        shown = re.findall(r'<tbody class="deal">(.*?)</tbody>', page, re.DOTALL)
        assert len(shown) == min(len(deals), DEALS_SHOWN)
        for group, body in zip(sorted(deals, reverse=True), shown):
            sums = [sum(shared[m][side][1] for m in deals[group]) for side in (1, 2)]
            assert text(body).startswith(f"Deal {group + 1}: places {sums[0]} against {sums[1]}")
            found = re.findall(r'#(\d+)</a></th><td class="num place-\d+">(\d+)(.*?)seat (\d+)</span></td>'
                               r'<td class="num place-\d+">(\d+)(.*?)seat (\d+)</span>', body, re.DOTALL)
            assert [int(f[0]) for f in found] == deals[group]
            for match_id, place_a, fault_a, seat_a, place_b, fault_b, seat_b in found:
                _, x, y = shared[int(match_id)]
                assert (int(seat_a), int(place_a), int(seat_b), int(place_b)) == (x[0], x[1], y[0], y[1])
                assert (text(fault_a), text(fault_b)) == (x[3] or "", y[3] or "")
        better = Counter((s[0] < s[1]) - (s[0] > s[1]) for s in
                         ([sum(shared[m][side][1] for m in ms) for side in (1, 2)] for ms in deals.values()))
        assert cells(page, "deals") == [str(better[1]), str(better[-1])]
        # Each side: over the shared matches, its mean place, think times and faults by kind; over the tournament,
        # its rank interval and rating as the standings have them.
        for side, bot, shown_place, mean, most, fault in zip(
                (1, 2), (a, b), cells(page, "meanplace"), cells(page, "think"), cells(page, "thinkmax"),
                cells(page, "faults")):
            seats = [s[side] for s in shared.values()]
            assert shown_place == f"{sum(s[1] for s in seats) / len(seats):.2f}"
            assert mean == f"{sum(s[2] for s in seats) / len(seats):.0f} ms"
            assert most == f"{max(s[2] for s in seats)} ms"
            counted = Counter(s[3] for s in seats if s[3] is not None)
            assert fault == (" ".join(f"{kind} {n}" for kind, n in sorted(counted.items())) or "–")
            kinds.update(counted)
        for bot, rank, rating in zip((a, b), cells(page, "rank"), cells(page, "rating")):
            assert rank == rows[bot].shared_rank.replace("-", "–")
            assert rating.startswith(f"{rows[bot].conservative:.2f}μ {rows[bot].mu:.2f}")
    assert len(kinds) >= 2  # faults of more than one kind were counted: the by-kind split was tested


def test_a_pair_page_lists_the_latest_deals_and_counts_them_all(site: tuple[Path, Path]) -> None:
    """A page lists its latest deals only (:data:`DEALS_SHOWN` of them in a build; here 3) and counts every deal,
    saying where the rest are: the deals recomputed from the store's rows."""
    db, _ = site
    snap = snapshot(Store(db, readonly=True), "pairs")
    a, b = snap.bots[0].id, snap.bots[1].id
    deals = sorted({group for group, seats in stored(db).values() if a in seats and b in seats})
    assert len(deals) > 3
    page = pair_page(snap, a, b, deals_shown=3)
    assert [deal.group for deal in page.deals] == deals[::-1][:3] and page.deals_total == len(deals)
    assert sum(page.deals_ahead) == len(deals)
    html_text = text(render_pair(page))
    assert f"the latest 3 of {len(deals)} deals, the rest in the list of every match they shared" in html_text
    assert DEALS_SHOWN >= len(deals)  # the built pages list all their deals: the test above saw every one


@pytest.mark.slow
def test_the_grid_and_the_bot_pages_link_every_pair(site: tuple[Path, Path]) -> None:
    _, out = site
    tdir = out / "t" / "pairs"
    pages = {p.relative_to(tdir).as_posix() for p in (tdir / "pairs").glob("*/*.html")}
    grid = set(re.findall(r'class="h2hlink" href="([^"]+)"', (tdir / "index.html").read_text(encoding="utf-8")))
    assert grid == pages  # every met cell opens its pair's page, both cells of a pair the same one
    for bot in BOTS:
        page = (tdir / "bots" / bot / "index.html").read_text(encoding="utf-8")
        linked = {(tdir / "bots" / bot / href).resolve().relative_to(tdir.resolve()).as_posix()
                  for href in re.findall(r'href="([^"]+)" aria-label="[^"]*side by side', page)}
        assert linked == {p for p in pages if bot in (p.split("/")[1], Path(p).stem)}
        assert len(linked) == len(BOTS) - 1
    assert broken_links(out) == []


@pytest.fixture(scope="module")
def field(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Path]:
    """60 bots, about 48 matches each (12 deals: enough to rank them): a big field (more than 30 bots)."""
    directory = tmp_path_factory.mktemp("field")
    store, _, _, _ = fill(directory / "arena.db", 60, 48, seed=3)
    build_site(store, directory / "site", workers=1)
    return store, directory / "site"


@pytest.mark.slow
def test_a_big_field_has_pages_for_the_pairs_of_its_grid_only(field: tuple[Store, Path]) -> None:
    store, site = field
    tmp_path = site.parent
    snap = snapshot(store, "scale")
    top = [line.bot_id for line in snap.standings[:SMALL_FIELD]]
    met = {(min(a, b), max(a, b)) for a in top for b in top if a != b and snap.head_to_head.get((a, b), (0, 0))[1]}
    tdir = tmp_path / "site" / "t" / "scale"
    slugs = {bot.slug: bot.id for bot in snap.bots}
    pages = {(slugs[p.parent.name], slugs[p.stem]) for p in (tdir / "pairs").glob("*/*.html")}
    assert pages == met and 0 < len(pages) < 60 * 59 // 2
    def opponents(bot_id: int) -> str:
        page = (tdir / "bots" / snap.bot_by_id[bot_id].slug / "index.html").read_text(encoding="utf-8")
        return page.split('id="opponents-table"', 1)[1].split("</table>", 1)[0]

    # The first bot's opponents in the grid link their pairs; the last bot, out of the grid, links none.
    assert opponents(top[0]).count(": side by side with") == sum(1 for pair in met if top[0] in pair)
    assert ": side by side with" not in opponents(snap.standings[-1].bot_id)
    assert broken_links(tmp_path / "site") == []


@pytest.mark.slow
def test_the_new_pages_fit_the_screen_and_pass_axe(site: tuple[Path, Path], field: tuple[Store, Path],
                                                   browser: Browser) -> None:
    """Two pair pages (the two longest names, and faults on both sides), the highlights, and a big field's
    tournament page with its bands and a pair page of it."""
    _, out = site
    pages = sorted((out / "t" / "pairs" / "pairs").glob("*/*.html"))
    widest = max(pages, key=lambda p: len(p.parent.name) + len(p.stem))
    big = field[1] / "t" / "scale"
    checked = [widest, out / "t" / "pairs" / "pairs" / "greedy" / "cheater.html", out / "t" / "pairs" / "highlights.html",
               big / "index.html", next((big / "pairs").glob("*/*.html"))]
    wide: dict[str, int] = {}
    found: dict[str, list[str]] = {}
    for width in WIDTHS:
        with opened(browser, width) as page:
            for path in checked:
                page.goto(url(path))
                page.wait_for_load_state("load")
                scroll = page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
                if scroll > 0:
                    wide[f"{width} {path.parent.name}/{path.name}"] = scroll
    assert wide == {}
    # axe reads the stylesheets by XMLHttpRequest, which a page from disk refuses with a console error: a context
    # of its own, as tests/site/test_site_a11y.py checks every other page type.
    for width in (320, 1280):
        context = browser.new_context(viewport={"width": width, "height": 844})
        page = context.new_page()
        for path in checked:
            page.goto(url(path))
            found[f"{width} {path.parent.name}/{path.name}"] = problems(page)
        context.close()
    assert {name: lines for name, lines in found.items() if lines} == {}


@pytest.mark.slow
def test_a_big_fields_bands_are_runs_of_bots_the_data_do_not_order(field: tuple[Store, Path]) -> None:
    """The bands on the page against the standings' 95% rank intervals (arena/stats/display.py's): every ranked
    bot in one band, in the standings' order; within a band every two bots' intervals meet, and the ranks shown are
    those all of them could hold; each band ends at the first bot whose interval misses one of the band's."""
    store, site = field
    snap = snapshot(store, "scale")
    lines = [line for line in snap.shown.lines if line.ranked]
    interval = {snap.bot_by_id[line.bot].name: line.interval or (0, 0) for line in lines}
    page = (site / "t" / "scale" / "index.html").read_text(encoding="utf-8")
    shown = []
    for item in re.findall(r"<li>(.*?)</li>", page.split('<ol class="bands">', 1)[1].split("</ol>", 1)[0], re.DOTALL):
        ranks = text(item.split('<span class="bandranks">', 1)[1].split("</span>", 1)[0]).split("–")
        bots = [text(name) for name in re.findall(r"<a [^>]*>(.*?)</a>", item)]
        shown.append((bots, int(ranks[0]), int(ranks[-1])))
    assert [bot for bots, _, _ in shown for bot in bots] == list(interval)
    for bots, low, high in shown:
        assert all(interval[a][0] <= interval[b][1] and interval[b][0] <= interval[a][1] for a in bots for b in bots)
        assert (low, high) == (max(interval[b][0] for b in bots), min(interval[b][1] for b in bots))
    for (before, _, _), (after, _, _) in pairwise(shown):
        first = interval[after[0]]
        assert any(first[0] > interval[b][1] or interval[b][0] > first[1] for b in before)
    assert 1 < len(shown) < len(lines)  # bots told apart and bots not: both were checked
    assert any(len(bots) > 1 for bots, _, _ in shown)
    unranked = [line.bot for line in snap.shown.lines if not line.ranked]
    assert (f"Not yet ranked ({len(unranked)})" in page) == bool(unranked)


def test_the_highlights_agree_with_the_store_and_the_logs(site: tuple[Path, Path]) -> None:
    """Each kind's rows recomputed: the closest finishes from the store's places and scores, the comebacks and
    failed declarations from the round ends in each match's log, each with its replay step (events counted from
    1) and the bot whose moment it is; the failed declarations in all from the store's counts."""
    db, out = site
    with sqlite3.connect(db) as con:
        names = dict(con.execute("SELECT id, name FROM bots"))
        seats: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        for match_id, bot, place, score in con.execute(
                "SELECT m.id, s.bot_id, s.place, s.score FROM matches m JOIN seats s ON s.match_id = m.id "
                "WHERE m.status = 'done' ORDER BY m.id, s.seat"):
            seats[match_id].append((bot, place, score))
        logs = dict(con.execute("SELECT id, log_path FROM matches WHERE status = 'done'"))
        failed_total = con.execute("SELECT sum(declares_failed) FROM seats").fetchone()[0]
    closest, comebacks, failed = [], [], []
    for match_id, row in seats.items():
        events = load(Path(logs[match_id])).events
        steps = {id(event): step for step, event in enumerate(events, 1)}
        ends = [event for event in events if event["type"] == "round_end"]
        winners = [seat for seat, (_, place, _) in enumerate(row) if place == 1]
        if len(winners) == 1:
            (winner,) = winners
            runners = [score for _, place, score in row if place == 2]
            if runners and min(runners) > row[winner][2]:
                closest.append((min(runners) - row[winner][2], match_id, len(events), names[row[winner][0]]))
            behind = [(end["scores"][winner] - min(s for seat, s in enumerate(end["scores"]) if seat != winner),
                       steps[id(end)]) for end in ends[:-1]]
            worst = max(behind, default=(0, 0), key=lambda b: (b[0], -b[1]))
            if worst[0] > 0:
                comebacks.append((-worst[0], match_id, worst[1], names[row[winner][0]]))
        for end in ends:
            if end["reason"] == "failed_declaration":
                failed.append((-end["points"][end["declarer"]], match_id, steps[id(end)],
                               names[row[end["declarer"]][0]]))
    page = (out / "t" / "pairs" / "highlights.html").read_text(encoding="utf-8")

    def shown(section: str) -> list[tuple[int, int, int, str]]:
        body = page.split(f'<section id="{section}">', 1)[1].split("</section>", 1)[0]
        return [(int(re.match(r"\d+", text(value))[0]), int(match), int(step), text(bot))  # type: ignore[index]
                for match, step, bot, value in re.findall(
                    r'<a href="matches/(\d+)\.html#step=(\d+)">#\d+</a></th><td><a [^>]*>(.*?)</a>.*?'
                    r'<td class="num value">(.*?)</td>', body, re.DOTALL)]

    assert shown("closest") == sorted(closest)[:5]
    assert shown("comebacks") == [(-v, *rest) for v, *rest in sorted(comebacks)[:5]]
    assert shown("failed") == [(-v, *rest) for v, *rest in sorted(failed)[:10]]
    assert len(closest) > 5 and len(comebacks) > 5 and len(failed) > 10  # more than shown: the order was tested
    assert f"{failed_total} declarations in all" in page
    assert 'href="highlights.html"' in (out / "t" / "pairs" / "index.html").read_text(encoding="utf-8")


def test_a_sealed_matchs_think_times_wait_for_its_group(tmp_path: Path) -> None:
    """Think times are published with the rest of a match once its deal group is over (docs/SECURITY.md, "What is
    published when"): a pair's page leaves out those of a group still being played."""
    store = Store(tmp_path / "arena.db")
    fill_store(store, name="pairs", bots=BOTS[:3], players=3, repeats=2, think=True)
    with store.atomic() as db:
        db.execute("UPDATE seats SET think_ms = 40")
        first_group = db.execute("SELECT grp FROM matches ORDER BY idx LIMIT 1").fetchone()[0]
        db.execute("UPDATE matches SET status = 'pending' WHERE id = (SELECT max(id) FROM matches WHERE grp = ?)",
                   (first_group,))
    store.close()
    snap = snapshot(Store(tmp_path / "arena.db", readonly=True), "pairs")
    group_of = {stamp.id: stamp.group for stamp in snap.stamps}
    seen = {match_id: {think for _, _, _, think, _ in seats} for match_id, seats in snap.pair_seats.items()}
    assert {match_id for match_id, thinks in seen.items() if thinks == {None}} == {
        match_id for match_id in seen if group_of[match_id] == first_group}
    assert all(thinks == {40} for match_id, thinks in seen.items() if group_of[match_id] != first_group)
