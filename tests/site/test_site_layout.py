"""The site's layout and list defects of issue 43, in a real browser (Chromium, from disk) at 320, 390, 768 and 1280
px: no page scrolls sideways (the head-to-head grid scrolls in its own box, its hidden labels inside it) on three
sites, the demo as ``arena run`` plays it, an 8-bot tournament of faulty bots and a 200-bot field; faults that name
the hand or the line are grouped; Page Up and Page Down on the replay's slider go a round back and on; a bot's
matches sort worst first; the phone's replay bar has no two buttons alike; a timeout's step says how long the seat
waited; the filtered list has the columns of the list without a filter.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from arena.game.engine import Match
from arena.game.results import Fault, Reason
from arena.site.build import build_site
from arena.store import Store
from bench.scale import fill
from tests.sitestore import CRASH, fill_store
from tests.support.browser import browser_fixture, opened, url  # noqa: F401 - fixtures, by their names

pytestmark = [pytest.mark.slow, pytest.mark.long]

WIDTHS = (320, 390, 768, 1280)
ROOT = Path(__file__).resolve().parents[2]
FAULTY = ("planner", "greedy", "crasher", "sleeper", "garbage", "cheater", "flaky", "random")


def faults(bot: str, match: Match) -> Fault:
    """A faulty bot's fault, as the review's bots made them: a card not in hand (the hand in the detail), a debug line
    on stdout (the line in the detail), a timeout, else a crash."""
    hand = " ".join(match.hands[1])
    if bot == "cheater":
        return Fault(Reason.ILLEGAL_NOT_IN_HAND, f"discard 2X not in hand {hand}", match.round)
    if bot == "garbage":
        line = f"DEBUG hand is {hand}"
        return Fault(Reason.INVALID_NOT_JSON, f"not JSON (Expecting value at column 1): {line!r}; stdout carries "
                     "protocol lines only, debug output belongs on stderr", match.round, line)
    if bot == "sleeper":
        return Fault(Reason.TIMEOUT_MOVE, "no move within the move's time and the bank", match.round)
    return CRASH


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("demo")
    subprocess.run([sys.executable, "-m", "arena", "run", str(ROOT / "tournaments" / "demo.yaml"), "--db",
                    str(directory / "arena.db"), "--site", str(directory / "site")], check=True, capture_output=True)
    return directory / "site"


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("faulty")
    store = Store(directory / "arena.db")
    fill_store(store, name="faulty", bots=FAULTY, players=3, repeats=1, think=True, fault_of=faults)
    build_site(store, directory / "site", workers=1)
    return directory / "site"


@pytest.fixture(scope="module")
def field(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("field")
    store, _, _, _ = fill(directory / "arena.db", 200, 8, seed=3)
    build_site(store, directory / "site", workers=1)
    return directory / "site"


def addresses(site: Path, name: str) -> list[str]:
    """A page of each type of tournament ``name``: home, tournament, further standings, the list, a filtered
    list, a match (its replay), a bot and its faults (the bot with the most faults' pages, when any)."""
    tdir = site / "t" / name
    bots = sorted((tdir / "bots").iterdir(), key=lambda b: -len(list(b.glob("faults.html"))))
    match = max((p for p in (tdir / "matches").glob("*.html") if p.stem.isdigit()), key=lambda p: int(p.stem))
    pages = [site / "index.html", tdir / "index.html", *sorted(tdir.glob("standings-*.html"))[:1],
             tdir / "matches" / "index.html", match, bots[0] / "index.html", *bots[0].glob("faults.html")]
    return [url(page) for page in pages] + [url(tdir / "matches" / "index.html") + "?result=won&bot=" + bots[0].name
                                            + "&sort=turns"]


# The page's own width against the screen's, and each scrolling box: whether its hidden labels are placed in it
# (their offset parent the box or inside it), the fault the review found in the head-to-head grid.
MEASURE = """() => {
  const escaped = [];
  for (const box of document.querySelectorAll('.scroll'))
    for (const label of box.querySelectorAll('.sr'))
      if (label.offsetParent && !box.contains(label.offsetParent)) escaped.push(label.textContent.slice(0, 40));
  const grid = document.querySelector('table.h2h');
  const box = grid && grid.closest('.scroll');
  return {page: document.scrollingElement.scrollWidth, screen: innerWidth, escaped,
          grid: grid ? {wide: grid.scrollWidth, box: box.clientWidth, scrolls: box.scrollWidth > box.clientWidth}
                     : null};
}"""


@pytest.mark.parametrize("site_name", ["demo", "faulty", "field"])
def test_no_page_scrolls_sideways(site_name: str, browser: Browser, request: pytest.FixtureRequest) -> None:
    site: Path = request.getfixturevalue(site_name)
    name = {"field": "scale"}.get(site_name, site_name)
    found: dict[str, object] = {}
    grids = 0
    for width in WIDTHS:
        with opened(browser, width) as page:
            for address in addresses(site, name):
                page.goto(address)
                page.wait_for_load_state("load")
                if "?" in address:
                    expect(page.locator("[data-found] table")).to_be_visible()
                measured = page.evaluate(MEASURE)
                short = f"{width} {address.split('/t/')[-1]}"
                if measured["page"] > measured["screen"] or measured["escaped"]:
                    found[short] = measured
                grid = measured["grid"]
                if grid is not None and grid["wide"] > grid["box"]:
                    grids += 1
                    assert grid["scrolls"], short  # wider than the screen: it scrolls in its own box
    assert found == {}
    assert grids > 0  # the grid was wider than the screen somewhere: what the fix is for was tested


def test_faults_that_name_the_hand_are_grouped(faulty: Path, browser: Browser) -> None:
    bots = faulty / "t" / "faulty" / "bots"
    for width in WIDTHS:
        with opened(browser, width) as page:
            page.goto(url(bots / ("cheater" if width % 20 else "garbage") / "faults.html"))
            reasons = {row.locator("code").inner_text(): int(row.locator("td").inner_text())
                       for row in page.locator("table.faultreasons tbody tr").all()}
            groups = page.locator(".faultgroup")
            shown = [(group.locator("code.reason").first.inner_text(),
                      int(group.locator(".times").inner_text().lstrip("×"))) for group in groups.all()]
            # One group a reason: the hands and lines in the details differ from fault to fault.
            assert sorted(shown) == sorted(reasons.items()), (shown, reasons)
            assert shown[0][0].startswith(("illegal", "invalid")) and shown[0][1] > 1, shown
            assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")


def test_replay_keys_bar_and_timeout(faulty: Path, browser: Browser) -> None:
    """Page Up and Page Down on the focused slider, the phone bar's buttons, the timeout step's think line."""
    matches = faulty / "t" / "faulty" / "matches"
    timed_out = next(p for p in sorted(matches.glob("*.html"))
                     if p.stem.isdigit() and "timeout.move" in p.read_text())
    for width in WIDTHS:
        with opened(browser, width) as page:
            page.goto(url(timed_out))
            counter = page.locator("[data-counter]")
            expect(counter).to_have_text(re.compile(r"^Step \d+ /"))
            # The bar's buttons as a sighted reader sees them: no two alike (Play was Forward's ▶ on a phone).
            seen = [b.inner_text().strip() for b in page.locator(".controls button").all()]
            assert len(set(seen)) == len(seen) == 7, seen
            # The slider: Page Down on to the round's end, Page Up back to the deal (it went the other way).
            slider = page.locator("[data-slider]")
            page.goto(url(timed_out) + "#step=6")
            page.reload()
            expect(counter).to_have_text(re.compile(r"^Step 6 /"))
            slider.focus()
            page.keyboard.press("PageDown")
            after = int(slider.input_value())
            assert after > 5
            expect(page.locator("[data-what]")).to_contain_text(" ends")
            page.keyboard.press("PageUp")
            page.keyboard.press("PageUp")
            assert int(slider.input_value()) < 5
            # The forfeit's step: how long the seat waited, its move's time and its bank's (the bank its last
            # move left), where the line was blank.
            step = int(page.locator("#faults a[href^='#step=']").first.get_attribute("href").split("=")[1])
            page.goto(url(timed_out) + f"#step={step}")
            page.reload()
            expect(counter).to_have_text(re.compile(rf"^Step {step} /"))
            think = page.locator("[data-think]").inner_text()
            said = re.fullmatch(r"(\S+) waited ([\d,]+) ms \(1,000 ms a move and ([\d,]+) ms left in its bank\) "
                                r"without a move; its time bank: 0 ms left\.", think)
            assert said, think
            waited, bank = (int(said[n].replace(",", "")) for n in (2, 3))
            assert waited == 1000 + bank
            # That bank is what the seat's last move left it.
            for back in range(step - 1, 0, -1):
                page.evaluate(f"location.hash = '#step={back}'")
                expect(counter).to_have_text(re.compile(rf"^Step {back} /"))
                line = page.locator("[data-think]").inner_text()
                if line.startswith(said[1] + " thought"):
                    assert line.endswith(f"its time bank: {said[3]} ms left."), line
                    break
            else:
                assert bank == 10_000  # no move before: the whole bank


def test_a_bots_matches_sort_and_keep_their_columns(faulty: Path, browser: Browser) -> None:
    tdir = faulty / "t" / "faulty"
    bot = tdir / "bots" / "planner" / "index.html"
    for width in WIDTHS:
        with opened(browser, width) as page:
            page.goto(url(bot))
            static = page.locator("[data-listing] table.matches thead th")
            columns = [th.inner_text() for th in static.all()]
            shown = [th.is_visible() for th in static.all()]
            page.get_by_label("sort").select_option("place")
            found = page.locator("[data-found] table")
            expect(found).to_be_visible()
            assert "?sort=place" in page.url
            heads = found.locator("thead th")
            # The same columns, and on a phone the same ones left out (the static list's .opt).
            assert [th.inner_text() for th in heads.all()] == columns
            assert [th.is_visible() for th in heads.all()] == shown
            places = [int(p) for p in found.locator("tbody td.num:first-of-type").all_inner_texts()]
            expect(page.locator("[data-filter-count]")).to_have_text(f"{len(places)} of {len(places)} matches")
            assert places == sorted(places, reverse=True) and places[0] == 3 and places[-1] == 1
            # The last place alone: a result of its own.
            page.get_by_label("result").select_option("last")
            expect(found.locator("caption")).to_contain_text("last")
            assert set(found.locator("tbody td.num:first-of-type").all_inner_texts()) == {"3"}
            # A row of the filtered list has the rounds, turns and ending of the match as its page says them.
            first = found.locator("tbody tr").first
            cells = first.locator("td").evaluate_all("tds => tds.map(td => td.textContent)")
            first.locator("a.whole").click()
            lede = page.locator(".lede").inner_text()
            assert f"{cells[2]} rounds · {cells[3]} turns" in lede and f"ended: {cells[4]}" in lede, (cells, lede)
