"""The results site on a phone and on a desktop, in a real browser (Chromium, from disk): every page type at 320,
390 and 1280 px wide fits the screen, no text is cut off by a box too small for it, captions stay whole above a
table that scrolls sideways, and the replay keeps its bar of controls in view, steps by taps on its table and shows
every seat of a 4-seat match without scrolling. Screenshots at 390 and 1280 px, light and dark, go to
test-output/screenshots/phones/ (or $ARENA_PHONE_SHOTS) for people to look at.

Skipped without a browser as tests/site/test_site_browser.py is (whose fixtures it uses). The tournament is
tests/sitestore.py's: real engine matches of 4 seats with real logs, every fifth match a seat crashing in round 2,
and a bot with a long name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from arena.site import common, snapshot, urls
from arena.site.build import build_site
from arena.site.rows import FaultRow
from arena.store import Store
from tests.sitestore import fill_store
from tests.support.browser import SCREENSHOTS, browser_fixture, opened, url  # noqa: F401 - fixtures, by their names

pytestmark = pytest.mark.slow

SHOTS = Path(os.environ.get("ARENA_PHONE_SHOTS", SCREENSHOTS / "phones"))
BOTS = ("planner", "greedy", "flaky", "random", "cautious", "slowpoke-long-name")
WIDTHS = (320, 390, 1280)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("phone")
    store = Store(directory / "arena.db")
    fill_store(store, name="four", bots=BOTS, players=4, repeats=1)
    build_site(store, directory / "site", workers=1)
    return directory / "site"


def _faulted(site: Path) -> tuple[snapshot.Snapshot, FaultRow]:
    snap = snapshot.snapshot(Store(site.parent / "arena.db"), "four")
    return snap, common.fault_rows(snap, limit=None, steps=True)[0]


def pages(site: Path) -> dict[str, str]:
    """A page of each type, by name: the address to open."""
    snap, fault = _faulted(site)
    bot = next(b for b in snap.bots if b.name == fault.player.name)
    return {
        "home": url(site / "index.html"),
        "tournament": url(site / "t" / "four" / "index.html"),
        "matches": url(site / urls.matches_href("four")),
        "found": url(site / urls.matches_href("four")) + "?fault=crash",  # the whole-tournament search's list
        "match": url(site / urls.match_href("four", fault.match_id)) + f"#step={fault.step}",
        "bot": url(site / urls.bot_href("four", bot.slug)),
        "faults": url(site / urls.faults_href("four", bot.slug)),
    }


# What the page looks like to a reader, measured in the page: the document's width, text cut off by a box that
# hides its overflow (a visually hidden label, 1 px, is meant to be), badges and captions outside the visible part
# of their scrolling box, and each scrolling table: whether it fits, and whether its first column stays in view.
MEASURE = """() => {
  const seen = el => el.getClientRects().length > 0 && getComputedStyle(el).visibility === 'visible';
  const name = el => el.tagName.toLowerCase() + (el.className && el.className.baseVal === undefined
    ? '.' + el.className.trim().split(/\\s+/).join('.') : '') + ' "' + el.textContent.trim().slice(0, 30) + '"';
  const out = {doc: document.documentElement.scrollWidth, inner: window.innerWidth, clipped: [], outside: [],
               tables: []};
  // Inside a box visually hidden for screen readers (1 px, its overflow hidden): the replay's table of hands
  // while the card table is shown. Not on the screen, so not measured.
  const unseen = el => { for (let box = el; box; box = box.parentElement)
    if (box.clientWidth <= 1 && box.clientHeight <= 1 && getComputedStyle(box).overflow === 'hidden') return true;
    return false; };
  for (const el of document.querySelectorAll('body *')) {
    if (!seen(el) || el.clientWidth <= 1 || !el.textContent.trim() || unseen(el)) continue;
    const style = getComputedStyle(el);
    if (['hidden', 'clip'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1) out.clipped.push(name(el));
  }
  const inside = (el, box) => { const r = el.getBoundingClientRect();
    return r.left >= box.left - 1 && r.right <= box.right + 1; };
  for (const scroller of document.querySelectorAll('.scroll')) {
    if (!seen(scroller) || unseen(scroller)) continue;
    const box = scroller.getBoundingClientRect();
    const table = scroller.querySelector('table');
    const first = table.querySelector('tbody tr > *');
    out.tables.push({name: name(table).split(' ')[0], fits: table.scrollWidth <= scroller.clientWidth + 1,
                     sticky: !!first && getComputedStyle(first).position === 'sticky'});
    for (const el of scroller.querySelectorAll('caption, .fault, .outtag, .tag'))
      if (seen(el) && el.clientWidth > 1 && !inside(el, box)) out.outside.push(name(el));
    scroller.scrollLeft = scroller.scrollWidth;  // scrolled to its end, the caption is still whole
    for (const caption of scroller.querySelectorAll('caption'))
      if (seen(caption) && caption.clientWidth > 1 && !inside(caption, box)) out.outside.push('scrolled ' + name(caption));
    scroller.scrollLeft = 0;
  }
  return out;
}"""

# Tables that fit a 320 px screen whole; the others (the head-to-head matrix, a bot's opponents, "Scores per round"
# of many seats) may scroll in their box, their first column kept in view.
FIT_ON_A_PHONE = {"table.matches.listing", "table.matches.listing.found", "table.faults", "table.result", "table.home",
                  "table.standings", "table.hands", "table.rounds", "table.faultreasons", "table.faultrounds",
                  "table.seats", "table.finaltable", "table.settings"}


def _shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _ready(page: Page, kind: str) -> None:
    if kind == "match":
        expect(page.locator("[data-counter]")).to_have_text(re.compile(r"^Step \d+ /"))
        expect(page.locator("table.rounds")).to_be_visible()
    if kind == "found":
        expect(page.locator("[data-found] table.matches")).to_be_visible()


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_type_fits_the_screen(site: Path, browser: Browser, width: int) -> None:
    problems: dict[str, Any] = {}
    with opened(browser, width) as page:
        for kind, address in pages(site).items():
            page.goto(address)
            _ready(page, kind)
            measured = page.evaluate(MEASURE)
            wide = [t["name"] for t in measured["tables"] if not t["fits"] and (
                width >= 1000 or t["name"] in FIT_ON_A_PHONE or not t["sticky"])]
            found = {"page wider than the screen": measured["doc"] > measured["inner"],
                     "text cut off": measured["clipped"], "outside its box": measured["outside"],
                     "tables too wide": wide}
            if any(found.values()):
                problems[kind] = {key: value for key, value in found.items() if value}
            assert measured["tables"] or kind in ("faults",), kind
    assert problems == {}


@pytest.mark.parametrize("width", (390, 1280))
@pytest.mark.parametrize("dark", (False, True), ids=("light", "dark"))
@pytest.mark.skipif(not os.environ.get("ARENA_PHONE_SHOTS"), reason="screenshots for a person to look at: set "
                    "ARENA_PHONE_SHOTS=DIR to write them there (they check nothing: CI does not spend a minute on them)")
def test_screenshots(site: Path, browser: Browser, width: int, dark: bool) -> None:
    """Every page type, full length, for a person to look at (the checks are the test above)."""
    with opened(browser, width, dark) as page:
        for kind, address in pages(site).items():
            page.goto(address)
            _ready(page, kind)
            if kind == "match":
                page.evaluate("window.scrollTo(0, 0)")
            _shot(page, f"{kind}-{width}-{'dark' if dark else 'light'}")
        # The standings with every column, on a phone: the bot's name stays in view as the table scrolls.
        if width < 1000:
            page.goto(pages(site)["tournament"])
            page.get_by_text("Show all columns").click()
            page.locator("table.standings").evaluate("t => t.parentElement.scrollLeft = 400")
            page.locator("table.standings tbody").scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / f"standings-scrolled-{width}.png"))


def test_the_standings_fit_every_desktop_width(site: Path, browser: Browser) -> None:
    """The Faults column is whole at any desktop width (it was cut off at all of them), a long name included."""
    with opened(browser, 1280) as page:
        page.goto(pages(site)["tournament"])
        table = page.locator("table.standings")
        for width in (1920, 1280, 1201, 1199, 1024):
            page.set_viewport_size({"width": width, "height": 900})
            assert table.evaluate("t => t.scrollWidth <= t.parentElement.clientWidth + 1"), width
            for cell in table.locator("td.faults").all():
                box, wrap = cell.bounding_box(), table.locator("xpath=..").bounding_box()
                assert box is not None and wrap is not None and box["x"] + box["width"] <= wrap["x"] + wrap["width"]
            badge = table.locator("td.faults .fault").first
            assert badge.evaluate("b => b.scrollWidth <= b.clientWidth"), width


def _step(page: Page) -> int:
    return int((page.locator("[data-counter]").text_content() or "").split()[1])


def _seat_to_move(page: Page) -> int | None:
    for seat, text in enumerate(page.locator("[data-hands] th.seat").all_inner_texts()):
        if text.startswith("▶"):
            return seat
    return None


@pytest.mark.parametrize(("width", "height"), [(320, 844), (390, 844), (844, 390)], ids=("320", "390", "on-its-side"))
def test_the_replay_bar_stays_in_view_and_taps_step(site: Path, browser: Browser, width: int,
                                                    height: int) -> None:
    with opened(browser, width, height=height) as page:
        page.goto(pages(site)["match"])
        expect(page.locator("[data-counter]")).to_have_text(re.compile(r"^Step \d+ /"))
        bar = page.locator(".replaybar")
        # Compact: back, forward, play and the round buttons with the counter in one bar of a line or two.
        for go in ("prevround", "prev", "next", "nextround"):
            expect(page.locator(f".replaybar [data-go={go}]")).to_be_visible()
        expect(page.locator(".replaybar [data-play]")).to_be_visible()
        expect(page.locator(".replaybar [data-counter]")).to_be_visible()
        box = bar.bounding_box()
        assert box is not None and box["height"] < (110 if width < 390 else 90), box
        # The words of the buttons are there for a screen reader, not on the screen.
        expect(page.get_by_role("button", name="Forward")).to_be_visible()
        # Scrolled down through the replay, the bar stays at the top of the screen and still works.
        replay = page.locator("[data-replay]").bounding_box()
        assert replay is not None
        page.evaluate(f"window.scrollBy(0, {replay['y'] + replay['height'] - 300})")
        page.wait_for_function("document.querySelector('.replaybar').getBoundingClientRect().top < 1")
        box = bar.bounding_box()
        assert box is not None and -1 <= box["y"] and box["y"] + box["height"] <= height
        step = _step(page)
        page.locator(".replaybar [data-go=next]").tap()
        expect(page.locator("[data-counter]")).to_have_text(re.compile(rf"^Step {step + 1} /"))
        # Tap zones: the right half of the table steps forward, the left half back.
        felt = page.locator(".felt")
        page.evaluate("document.querySelector('.felt').scrollIntoView({block: 'center'})")
        size = felt.bounding_box()
        assert size is not None
        middle = size["height"] / 2
        felt.tap(position={"x": size["width"] * 0.8, "y": middle})
        expect(page.locator("[data-counter]")).to_have_text(re.compile(rf"^Step {step + 2} /"))
        felt.tap(position={"x": size["width"] * 0.8, "y": middle})
        expect(page.locator("[data-counter]")).to_have_text(re.compile(rf"^Step {step + 3} /"))
        felt.tap(position={"x": size["width"] * 0.2, "y": middle})
        expect(page.locator("[data-counter]")).to_have_text(re.compile(rf"^Step {step + 2} /"))
        assert page.evaluate("location.hash") == f"#step={step + 2}"


def test_every_seat_and_the_player_to_move_are_on_the_screen(site: Path, browser: Browser) -> None:
    """4 seats at 390 x 844: opened at a step where the last seat is to move (a link to the step scrolls the
    replay to the top), every seat of the card table and the mark of the seat to move are on the screen, no
    scrolling."""
    snap, fault = _faulted(site)
    match = next(m for m in snap.matches if m.id != fault.match_id and len(m.bot_ids) == 4)
    with opened(browser, 390) as page:
        address = url(site / urls.match_href("four", match.id))
        page.goto(address)
        expect(page.locator("[data-counter]")).to_have_text(re.compile(r"^Step \d+ /"))
        for _ in range(12):  # a deal, then turns round the table: the last seat's turn comes within one round
            if _seat_to_move(page) == 3:
                break
            page.keyboard.press("ArrowRight")
        assert _seat_to_move(page) == 3
        step = _step(page)
        page.goto("about:blank")
        page.goto(f"{address}#step={step}")
        expect(page.locator("[data-counter]")).to_have_text(re.compile(rf"^Step {step} /"))
        height = page.evaluate("window.innerHeight")
        # The card table's seats (the table of hands is for screen readers, or at the view button's press).
        seats = page.locator(".cardtable .tableseat")
        expect(seats).to_have_count(4)
        for seat in seats.all():
            box = seat.bounding_box()
            assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= height, box
        expect(seats.nth(3)).to_have_class(re.compile(r"\btoplay\b"))
        expect(seats.nth(3).locator(".seatnote")).to_contain_text("to play")
        bar = page.locator(".replaybar").bounding_box()
        assert bar is not None and 0 <= bar["y"] < height / 3
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "replay-4-seats-390.png"))


def test_a_mouse_click_on_a_wide_screen_selects_rather_than_steps(site: Path, browser: Browser) -> None:
    """The tap zones are for touch and phones: on a desktop a click on the table (to select a card's text, say)
    leaves the step as it was, while a tap on a touch screen of any width steps."""
    with opened(browser, 1280) as page:
        page.goto(pages(site)["match"])
        expect(page.locator("[data-counter]")).to_have_text(re.compile(r"^Step \d+ /"))
        step = _step(page)
        felt = page.locator(".felt")
        felt.click(position={"x": 900, "y": 40})
        felt.click(position={"x": 100, "y": 40})
        felt.click(position={"x": 900, "y": 40})
        page.keyboard.press("ArrowRight")  # an event after the clicks: had they stepped, it would show
        expect(page.locator("[data-counter]")).to_have_text(re.compile(rf"^Step {step + 1} /"))


# Between a phone and a desktop (a tablet, a narrow window): the standings' columns seen at each width, the columns
# of detail going first as it narrows; "Show all columns" brings every one back.
STANDINGS_SEEN = {
    "narrow": ["Rank", "Bot", "Fit", "Mean place", "Win % ties count", "Matches", "Rating μ − 3σ", "Faults"],
    "middle": ["Rank", "Bot", "Fit", "Mean place", "Win % ties count", "Wins (shared)", "Matches",
               "Rating μ − 3σ", "Points per round", "Faults"],
    "wide": ["Rank", "Bot", "Fit", "Mean place", "P(above next)", "Win % ties count", "Wins (shared)",
             "Matches", "Rating μ − 3σ", "Points per round", "Declarations ok / failed", "Faults"],
}

# The standings measured: whether the table fits its box, the page the screen, the headings of the columns shown
# (a line break read as a space, a heading's scale left out) and any text cut off in the table.
STANDINGS = """() => {
  const table = document.querySelector('table.standings');
  const heads = [...table.querySelectorAll('thead th')].filter(th => th.getClientRects().length > 0);
  const clipped = [...table.querySelectorAll('th, td, .fault')].filter(el => el.getClientRects().length > 0
    && el.scrollWidth > el.clientWidth + 1).map(el => el.textContent.trim());
  return {fits: table.scrollWidth <= table.parentElement.clientWidth + 1,
          page: document.documentElement.scrollWidth <= window.innerWidth,
          heads: heads.map(th => [...(th.querySelector('button.sort') || th).childNodes].map(
            node => node.nodeName === 'BR' ? ' ' : node.nodeName === 'svg' ? '' : node.textContent).join('')
            .replace(/\\s+/g, ' ').trim()),
          clipped: clipped};
}"""


def test_the_standings_fit_between_a_phone_and_a_desktop(site: Path, browser: Browser) -> None:
    """From 600 to 1000 px (a tablet, a narrow window) the standings fit their box, no sideways scrolling, with the
    most columns that fit; they scrolled at 641-990 px. The columns left out are a tick away."""
    widths = sorted({*range(600, 1001, 10), 640, 768, 900, 990, 1023})
    seen: dict[int, list[str]] = {}
    with opened(browser, 768) as page:
        page.goto(pages(site)["tournament"])
        for width in widths:
            page.set_viewport_size({"width": width, "height": 844})
            measured = page.evaluate(STANDINGS)
            assert measured["fits"] and measured["page"] and measured["clipped"] == [], (width, measured)
            seen[width] = measured["heads"]
        assert seen[700] == STANDINGS_SEEN["narrow"]
        assert seen[768] == seen[900] == STANDINGS_SEEN["middle"]
        assert seen[990] == seen[1023] == STANDINGS_SEEN["wide"]
        assert all(len(seen[width]) >= len(STANDINGS_SEEN["narrow"]) for width in widths if width > 640)
        # Every column a tick away: the table then scrolls in its box, the bot's name kept in view.
        page.set_viewport_size({"width": 768, "height": 844})
        page.get_by_text("Show all columns").click()
        measured = page.evaluate(STANDINGS)
        assert len(measured["heads"]) == 13 and "Uncertainty μ ± 3σ" in measured["heads"], measured["heads"]
        bot = page.locator("table.standings tbody th").first
        page.locator("table.standings").evaluate("t => t.parentElement.scrollLeft = t.parentElement.scrollWidth")
        box, wrap = bot.bounding_box(), page.locator(".standings-wrap .scroll").bounding_box()
        assert box is not None and wrap is not None and wrap["x"] - 1 <= box["x"] <= wrap["x"] + 1
        page.get_by_text("Show all columns").click()
        for width in (768, 900):
            page.set_viewport_size({"width": width, "height": 844})
            page.evaluate("document.querySelector('#standings').scrollIntoView()")
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"standings-{width}.png"))


# Text cut off in the replay's table of hands (a heading or a seat's last move ending in an ellipsis), and whether
# the table fits its box.
HANDS = """() => {
  const table = document.querySelector('table.hands');
  const cut = [...table.querySelectorAll('th, td')].filter(el => el.getClientRects().length > 0
    && el.scrollWidth > el.clientWidth + 1).map(el => el.className + ' "' + el.textContent.trim() + '"');
  return {cut: cut, fits: table.scrollWidth <= table.parentElement.clientWidth + 1};
}"""


@pytest.mark.parametrize(("width", "height"), [(844, 390), (768, 1024), (1024, 768)],
                         ids=("on-its-side", "tablet", "desktop"))
def test_a_seats_last_move_is_shown_whole(site: Path, browser: Browser, width: int,
                                         height: int) -> None:
    """Through the first rounds of a 4-seat match no heading and no seat's last move is cut off (a last move
    ended in an ellipsis on a phone on its side, and "threw 10♠J♣Q♠ took J♠" even at 1024 px), and on a phone on
    its side the table fits the screen."""
    snap = snapshot.snapshot(Store(site.parent / "arena.db"), "four")
    match = next(m for m in snap.matches if len(m.bot_ids) == 4)
    with opened(browser, width, height=height) as page:
        page.goto(url(site / urls.match_href("four", match.id)) + "#step=1")
        expect(page.locator("[data-counter]")).to_have_text(re.compile(r"^Step 1 /"))
        page.get_by_role("button", name="Table of hands").click()  # the table, as a reader who chose it sees it
        cut: dict[int, list[str]] = {}
        scrolls, moves = [], 0
        for step in range(1, 61):
            measured = page.evaluate(HANDS)
            if measured["cut"]:
                cut[step] = measured["cut"]
            if not measured["fits"]:
                scrolls.append(step)
            moves += page.locator("table.hands td.last .card").count() > 0
            page.keyboard.press("ArrowRight")
            expect(page.locator("[data-counter]")).to_have_text(re.compile(rf"^Step {step + 1} /"))
        assert moves > 40 and cut == {}, cut
        assert scrolls == [], scrolls
        if width == 844:
            page.goto(url(site / urls.match_href("four", match.id)) + "#step=12")
            page.evaluate("document.querySelector('.felt').scrollIntoView({block: 'center'})")
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "replay-on-its-side-844x390.png"))
