"""The results site of a big field (arena/site: :data:`arena.site.snapshot.SMALL_FIELD` and over): no page grows with
the square of the field. A synthetic store of 120 bots (places drawn from a skill model by bench/scale.py, no
match played, no logs) is built once; the pages are read back as HTML."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from arena.site import build, common, output, snapshot, urls
from arena.site import html as site_html
from arena.site.pages import bot as bot_data
from arena.site.pages import listings as listings_data
from arena.site.pages import tournament as tournament_data
from arena.store import Store
from bench.scale import fill, insert
from tests.sitestore import broken_links

BOTS = 120
PER_BOT = 32  # two rounds of the balanced random design: every bot at two tables of four rotations


class Tables(HTMLParser):
    """The row headings (their link's text) of each table with an id or class, by that name, and the id'd forms."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[str]] = {}
        self.cells: dict[str, list[int]] = {}
        self.ids: set[str] = set()
        self._table: str | None = None
        self._body = False
        self._heading: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"] or "")
        if tag == "table":
            self._table = (values.get("class") or "").split()[0]
            self.rows.setdefault(self._table, [])
            self.cells.setdefault(self._table, [])
        elif tag == "tbody" and self._table:
            self._body = True
        elif tag == "tr" and self._table and self._body:
            self.cells[self._table].append(0)
        elif tag == "td" and self._table and self._body:
            self.cells[self._table][-1] += 1
        elif tag == "th" and self._table and self._body and values.get("scope") == "row":
            self._heading = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table, self._body = None, False
        elif tag == "th" and self._heading is not None and self._table:
            self.rows[self._table].append("".join(self._heading).strip())
            self._heading = None

    def handle_data(self, text: str) -> None:
        if self._heading is not None and not self._heading:
            self._heading.append(text)  # the link's text: the bot's name, not a "(left the league)" after it


def tables(page: Path) -> Tables:
    parser = Tables()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, snapshot.Snapshot, Path]:
    directory = tmp_path_factory.mktemp("big")
    store, _, _, _ = fill(directory / "arena.db", BOTS, PER_BOT, seed=3)
    out = directory / "site"
    build.build_site(store, out, workers=1)
    return store, snapshot.snapshot(store, "scale"), out


def met(store: Store, tid: int) -> dict[str, Counter[str]]:
    """For each bot, the matches it shared with each other bot, straight from the seats."""
    rows = store.db.execute(
        "SELECT a.name, b.name FROM seats sa JOIN seats sb ON sa.match_id = sb.match_id AND sa.seat != sb.seat "
        "JOIN bots a ON a.id = sa.bot_id JOIN bots b ON b.id = sb.bot_id JOIN matches m ON m.id = sa.match_id "
        "WHERE m.tournament_id = ? AND m.status = 'done'", (tid,)).fetchall()
    shared: dict[str, Counter[str]] = {}
    for me, other in rows:
        shared.setdefault(me, Counter())[other] += 1
    return shared


@pytest.mark.slow  # a field of 120 bots built whole: seconds of CPU
def test_the_tournament_page_shows_a_bounded_head_to_head_of_the_top(
        big: tuple[Store, snapshot.Snapshot, Path]) -> None:
    _, snap, out = big
    page = out / urls.tournament_href(snap.slug)
    parsed = tables(page)
    top = [line.name for line in snap.standings[:snapshot.SMALL_FIELD]]
    assert parsed.rows["h2h"] == top
    assert parsed.cells["h2h"] == [snapshot.SMALL_FIELD] * snapshot.SMALL_FIELD
    text = page.read_text(encoding="utf-8")
    assert f"The top {snapshot.SMALL_FIELD} of the standings against each other" in text
    assert "Every bot's page has its results against each opponent it met" in text
    assert text.count('<li><span class="swatch') == snapshot.SMALL_FIELD  # the rating chart's legend: the top only


@pytest.mark.slow  # a field of 120 bots built whole: seconds of CPU
def test_every_bot_page_lists_every_opponent_it_met(big: tuple[Store, snapshot.Snapshot, Path]) -> None:
    store, snap, out = big
    shared = met(store, snap.id)
    assert len(shared) == BOTS
    for bot in snap.bots:
        parsed = tables(out / urls.bot_href(snap.slug, bot.slug))
        listed = parsed.rows["opponents"]
        assert sorted(listed) == sorted(shared[bot.name]), bot.name  # those it met, each once, none it did not
        assert "opponents-table" in parsed.ids
        assert parsed.cells["opponents"] == [5] * len(listed)
    # Most matches shared first (then by name: the field's order would change with every match played), with the
    # shared counts of the store.
    beta = snap.bots[7]
    page = bot_data.bot_page(snap, beta.id, bot_data.bot_listings(snap, beta.id)[0].make())
    assert {o.bot: o.shared for o in page.opponents} == dict(shared[beta.name]) and page.opponents_met
    assert [o.bot for o in page.opponents] == sorted(shared[beta.name], key=lambda name: (-shared[beta.name][name],
                                                                                          name))
    assert len({o.shared for o in page.opponents}) > 1  # an order that says something


@pytest.mark.slow  # a field of 120 bots built whole: seconds of CPU
def test_a_bot_page_takes_its_rank_from_the_standings_index(big: tuple[Store, snapshot.Snapshot, Path]) -> None:
    _, snap, out = big
    rows = {row.bot: row for row in snap.standing_rows}
    index = {bot[1]: bot for bot in tournament_data.standings_index(snap)["bots"]}
    for bot in snap.bots:
        row = rows[bot.name]
        assert index[bot.name] == [row.shared_rank, bot.name, bot.slug, *(row.rank95 or (None, None))]
    bot = snap.bots[3]
    html = (out / urls.bot_href(snap.slug, bot.slug)).read_text(encoding="utf-8")
    # Without JavaScript: a link to the standings, no rank that would go stale; the facts of its own matches.
    assert f'<a class="rankbadge" href="../../index.html" data-rank-of="{bot.slug}">' in html
    assert "ranked #" not in html and "<div data-rank95 hidden>" in html
    assert '<script src="../../standings.js"></script><script src="../../../../assets/rank.js">' in html
    assert f"<dt>Wins</dt><dd>{rows[bot.name].wins}</dd>" in html


@pytest.mark.slow  # a field of 120 bots built whole, then again: seconds of CPU
def test_a_league_batch_rewrites_the_pages_of_the_bots_that_played_only(tmp_path: Path) -> None:
    store, _, _, batch = fill(tmp_path / "arena.db", BOTS, PER_BOT, seed=5, extra=8)
    out = tmp_path / "site"
    build.build_site(store, out, workers=1)
    insert(store, batch)
    report = build.build_site(store, out, workers=1)
    snap = snapshot.snapshot(store, "scale")
    played = {seat[2] for seat in batch[1]}  # the bot id of each seat of the batch
    pages = {urls.bot_href(snap.slug, snap.bot_by_id[bot_id].slug) for bot_id in played}
    written = set(report.written_files)
    bot_pages = {path for path in written if path.endswith("/index.html") and "/bots/" in path}
    assert bot_pages == pages and len(pages) < BOTS // 2
    assert urls.standings_index_href(snap.slug) in written  # where every bot's page finds its new rank
    # And the site is the one a full build makes.
    again = tmp_path / "again"
    build.build_site(store, again, workers=1, full=True)
    assert all((out / path).read_bytes() == (again / path).read_bytes()
               for path in (str(p.relative_to(again)) for p in again.rglob("*") if p.is_file())
               if not path.startswith(".arena-site"))


@pytest.mark.slow  # 720 match pages built twice: seconds of CPU (test_site_render checks a small parallel build)
def test_a_parallel_build_makes_the_bots_later_pages_while_its_workers_make_the_match_pages(tmp_path: Path) -> None:
    # 24 bots in 120 matches each: three pages of matches a bot, 720 match pages in three chunks for the workers.
    store, _, _, _ = fill(tmp_path / "arena.db", 24, 120, seed=6)
    serial = build.build_site(store, tmp_path / "serial", workers=1)
    parallel = build.build_site(store, tmp_path / "parallel", workers=2, parallel_from=1)
    files = {str(path.relative_to(serial.out)) for path in serial.out.rglob("*") if path.is_file()}
    assert files == {str(path.relative_to(parallel.out)) for path in parallel.out.rglob("*") if path.is_file()}
    assert all((serial.out / path).read_bytes() == (parallel.out / path).read_bytes()
               for path in files if path != output.MANIFEST)
    # The second page of a bot's matches is made once the match pages of the first two chunks are, before the last
    # chunk's: not after all of them, with one core idle.
    order = parallel.written_files
    second = [n for n, path in enumerate(order) if "/bots/" in path and path.endswith("/matches-2.html")]
    matches = [n for n, path in enumerate(order) if re.fullmatch(r"t/scale/matches/\d+\.html", path)]
    assert len(second) == 24 and len(matches) == 720
    assert max(second) < max(matches)
    assert build.build_site(store, parallel.out, workers=2, parallel_from=1).written == 0


@pytest.mark.slow  # a field of 120 bots built whole: seconds of CPU
def test_the_standings_pages_together_list_every_bot_once(big: tuple[Store, snapshot.Snapshot, Path]) -> None:
    _, snap, out = big
    pages = -(-BOTS // common.STANDINGS_PER_PAGE)
    assert pages > 1 and not (out / urls.standings_href(snap.slug, pages + 1)).exists()
    listed = []
    for n in range(1, pages + 1):
        rows = tables(out / urls.standings_href(snap.slug, n)).rows["standings"]
        assert 0 < len(rows) <= common.STANDINGS_PER_PAGE
        listed += rows
    assert listed == [line.name for line in snap.standings]  # each once, in the standings' order
    index = tournament_data.standings_index(snap)
    assert [bot[1] for bot in index["bots"]] == listed and index["per_page"] == common.STANDINGS_PER_PAGE
    assert (out / urls.standings_index_href(snap.slug)).read_text(encoding="utf-8").startswith(
        "window.arenaStandings = {")
    assert broken_links(out) == []


@pytest.mark.slow  # a field of 120 bots built whole: seconds of CPU
def test_no_page_grows_with_the_square_of_the_field(big: tuple[Store, snapshot.Snapshot, Path]) -> None:
    store, snap, out = big
    sizes = {path.relative_to(out).as_posix(): path.stat().st_size for path in out.rglob("*.html")}
    tournament = sizes.pop(urls.tournament_href(snap.slug))
    # The tournament page: a page of standings, the top's matrix and rating lines, whatever the field (at 1,000
    # bots the whole matrix alone was 42 MB; bench/scale.py measures that size).
    assert tournament < 400_000
    standings = [sizes.pop(urls.standings_href(snap.slug, n)) for n in range(2, -(-BOTS // 100) + 1)]
    assert max(standings) < 200_000
    shared = met(store, snap.id)
    for bot in snap.bots:
        # A bot's page: its own facts, a page of its matches and a row per opponent it met.
        assert sizes.pop(urls.bot_href(snap.slug, bot.slug)) < 40_000 + 600 * len(shared[bot.name])
    # The rest (listings of 50 matches, match pages) do not depend on the field: no bot's name list on them.
    assert max(sizes.values()) < 60_000
    listing = (out / urls.matches_href(snap.slug)).read_text(encoding="utf-8")
    assert 'data-filter-bot data-fill><option value="">any</option></select>' in listing


def test_a_small_field_is_shown_whole_as_before(tmp_path: Path) -> None:
    store, _, _, _ = fill(tmp_path / "arena.db", snapshot.SMALL_FIELD, 8, seed=4)
    snap = snapshot.snapshot(store, "scale")
    page = tournament_data.tournament_page(snap)
    assert len(page.standings) == snapshot.SMALL_FIELD and page.standings_pager is None and page.top is None
    assert len(page.head_to_head.cells) == snapshot.SMALL_FIELD and len(page.history) == snapshot.SMALL_FIELD
    bot = snap.bots[0]
    mine = bot_data.bot_page(snap, bot.id, bot_data.bot_listings(snap, bot.id)[0].make())
    assert len(mine.opponents) == snapshot.SMALL_FIELD - 1 and not mine.opponents_met  # the unmet ones too
    assert listings_data.filter_names(snap) == tuple(b.name for b in snap.bots)
    html = site_html.render_tournament(page)
    assert "standings-table" in html and "data-rows=" not in html and "assets/filter.js" not in html
