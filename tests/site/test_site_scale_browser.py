"""A big field's site in a real browser (Chromium, as tests/site/test_site_browser.py runs it): the standings filter that
finds a bot on any page, a bot's opponents table filtered and sorted, the listing's bot choices taken from the
match index. The store is bench/scale.py's synthetic one (120 bots, no match played)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.site import build, common, snapshot, urls
from bench.scale import fill
from tests.support.browser import Browser, Page, browser_fixture, expect, page_fixture, url  # noqa: F401 - fixtures, by their names

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[snapshot.Snapshot, Path]:
    directory = tmp_path_factory.mktemp("bigbrowser")
    store, _, _, _ = fill(directory / "arena.db", 120, 32, seed=3)
    build.build_site(store, directory / "site", workers=1)
    return snapshot.snapshot(store, "scale"), directory / "site"


def test_the_standings_filter_finds_bots_on_every_page(big: tuple[snapshot.Snapshot, Path], page: Page) -> None:
    snap, out = big
    page.goto(url(out / urls.tournament_href(snap.slug)))
    names = [line.name for line in snap.standings]
    wanted = "bot-1"  # bot-1, bot-10 ... bot-119: on both pages of the standings
    here = [name for name in names[:common.STANDINGS_PER_PAGE] if wanted in name]
    there = [name for name in names[common.STANDINGS_PER_PAGE:] if wanted in name]
    assert here and there
    page.get_by_label("Find a bot").fill(wanted)
    rows = page.locator("#standings-table tbody tr:visible th a")
    expect(rows).to_have_count(len(here))
    assert rows.all_inner_texts() == here
    expect(page.locator("[data-rows-count]")).to_have_text(f"{len(here)} of {common.STANDINGS_PER_PAGE} on this page")
    found = page.locator("[data-rows-found] li")
    expect(found).to_have_count(len(there))
    first = there[0]
    item = found.filter(has_text=first).first
    expect(item).to_contain_text(f"{next(r.shared_rank for r in snap.standing_rows if r.bot == first)}. ")
    item.get_by_role("link", name="standings page 2").click()
    expect(page.locator("h1")).to_contain_text("standings, page 2")
    expect(page.locator("#standings-table tbody th a", has_text=first).first).to_be_visible()


def test_a_bots_opponents_filter_and_sort(big: tuple[snapshot.Snapshot, Path], page: Page) -> None:
    snap, out = big
    bot = snap.bots[5]
    page.goto(url(out / urls.bot_href(snap.slug, bot.slug)))
    table = page.locator("#opponents-table")
    names = table.locator("tbody th").all_inner_texts()
    assert len(names) >= 3
    page.get_by_label("Filter opponents").fill(names[1])
    expect(table.locator("tbody tr:visible")).to_have_count(sum(names[1] in name for name in names))
    page.get_by_label("Filter opponents").fill("")
    expect(table.locator("tbody tr:visible")).to_have_count(len(names))
    table.get_by_role("button", name="Shared").click()
    shared = [int(text) for text in table.locator("tbody td:nth-child(5)").all_inner_texts()]
    assert shared == sorted(shared)


def test_a_bots_rank_comes_from_the_standings_index(big: tuple[snapshot.Snapshot, Path], page: Page) -> None:
    snap, out = big
    rows = snap.standing_rows
    position, row = next((n, row) for n, row in enumerate(rows) if n >= common.STANDINGS_PER_PAGE and row.rank95)
    bot = next(b for b in snap.bots if b.name == row.bot)
    page.goto(url(out / urls.bot_href(snap.slug, bot.slug)))
    badge = page.locator("h1 .rankbadge")
    expect(badge).to_have_text(f"#{row.shared_rank}")
    assert row.rank95 is not None
    expect(page.locator("[data-rank95] dd")).to_have_text(f"{row.rank95[0]}–{row.rank95[1]}")
    badge.click()  # to the page of the standings it is on
    expect(page.locator("h1")).to_contain_text(f"standings, page {position // common.STANDINGS_PER_PAGE + 1}")
    expect(page.locator("#standings-table tbody th").get_by_role("link", name=bot.name, exact=True)).to_be_visible()


def test_the_listing_offers_every_bot_from_the_index(big: tuple[snapshot.Snapshot, Path], page: Page) -> None:
    snap, out = big
    page.goto(url(out / urls.matches_href(snap.slug)))
    chooser = page.locator("[data-filter-bot]")
    expect(chooser.locator("option")).to_have_count(1)  # "any": the page does not carry 120 names twice
    chooser.focus()
    expect(chooser.locator("option")).to_have_count(1 + len(snap.bots))
    chooser.select_option("bot-7")
    expect(page.locator("[data-filter-count]")).to_contain_text(" of ")
    assert all("bot-7" in row for row in page.locator("[data-found] tr[data-bots]").evaluate_all(
        "rows => rows.map(row => row.getAttribute('data-bots'))"))


def test_a_big_fields_pages_have_no_serious_axe_violation(big: tuple[snapshot.Snapshot, Path],
                                                         browser: Browser) -> None:
    from tests.axecheck import problems

    snap, out = big
    bot = snap.bots[5]
    # A context of its own, as tests/site/test_site_a11y.py opens one: axe reads the stylesheet in a way file:// refuses
    # (a console error, not the page's), so only the page's own errors fail this.
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    found = {}
    for path in (urls.tournament_href(snap.slug), urls.standings_href(snap.slug, 2),
                 urls.bot_href(snap.slug, bot.slug)):
        page.goto(url(out / path))
        # With a filter typed in, its results (the bots found on other pages) in the page as well.
        page.locator("[data-rows-input]").first.fill("bot-1")
        found[path] = problems(page)
    context.close()
    assert errors == [] and all(not lines for lines in found.values()), (errors, found)
