"""The results site's accessibility in a real browser (Chromium, from disk): axe-core finds no serious or critical
violation on any page type at a phone's width and a desktop's, in the light and the dark colour scheme; the replay
says each move to a screen reader; the rating charts' values are on a table and their labels are tab stops; the
keyboard reaches the content past a skip link. Skipped without a browser as tests/site/test_site_browser.py is.

axe-core is the copy the pinned axe-playwright-python package bundles (the ``test`` extra), so a rule that changes
in a new axe-core does not change what passes here by itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from arena.site import urls
from arena.site.build import build_site
from arena.store import Store
from tests.sitestore import make_store
from tests.support.browser import browser_fixture, url  # noqa: F401 - fixtures, by their names

# isort: split
from tests.axecheck import problems  # after the module above, which skips without a browser

pytestmark = pytest.mark.slow

BOTS = ("planner", "greedy", "flaky", "random", "bold")
PAUSED = "try { sessionStorage.setItem('arena-live-paused', '1'); } catch (e) {}"
"""A live page reloads itself (live.js) unless paused: paused, it stays put under axe."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Path, Path]:
    """60 matches of 5 bots, 3 at a table (every fifth match one seat crashes: tests/sitestore.py), so the list has
    two pages and faults pages exist; built once finished and once as a live page of a run in progress."""
    directory = tmp_path_factory.mktemp("a11y")
    store = make_store(directory, name="league", bots=BOTS, players=3, repeats=2)
    build_site(store, directory / "site", workers=1)
    build_site(store, directory / "live", workers=1, live_refresh_s=60)
    return store, directory / "site", directory / "live"


def faulty_match(store: Store) -> int:
    return next(m.id for m in store.matches(store.tournament("league")["id"])
                if m.result is not None and any(p.fault is not None for p in m.result.players))


def page_types(store: Store) -> list[tuple[str, str]]:
    """Every kind of page the build writes (a name, its address under the site), and the states scripts put some in:
    a search's results, a replay's last step (the final table). A list's second page, a bot page's search and the
    like are the same markup again, left out: axe takes seconds over a table of 50 matches."""
    match = urls.match_href("league", faulty_match(store))
    return [("home", "index.html"), ("tournament", "t/league/index.html"), ("matches", "t/league/matches/index.html"),
            ("search", "t/league/matches/index.html?bot=flaky&vs=planner"), ("match", match),
            ("match, last step", match + "#step=99999"), ("bot", "t/league/bots/flaky/index.html"),
            ("bot faults", "t/league/bots/flaky/faults.html"), ("two bots side by side", "t/league/pairs/planner/flaky.html"),
            ("highlights", "t/league/highlights.html")]


@pytest.fixture(params=["light", "dark"])
def scheme(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextmanager
def opened(browser: Browser, width: int, scheme: str) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": width, "height": 844}, color_scheme=scheme)  # type: ignore[arg-type]
    context.add_init_script(PAUSED)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], errors


def goto(page: Page, root: Path, address: str) -> None:
    path = re.split(r"[?#]", address, maxsplit=1)[0]
    assert (root / path).is_file(), path  # a page not built would be the browser's error page under axe
    page.goto(url(root / path) + address[len(path):])
    if "#step=" in address:
        expect(page.locator("[data-final]")).to_be_visible()
    if "?" in address:
        expect(page.locator("[data-found]")).to_be_visible()


@pytest.mark.parametrize("width", [390, 1280])
def test_no_serious_axe_violation_on_any_page(built: tuple[Store, Path, Path], browser: Browser,
                                              width: int, scheme: str) -> None:
    store, site, live = built
    # The dark scheme changes colours only (style.css), so it is checked by the colour rules alone.
    rules = ["color-contrast", "link-in-text-block"] if scheme == "dark" else None
    found: dict[str, list[str]] = {}
    with opened(browser, width, scheme) as page:
        for name, address in page_types(store):
            goto(page, site, address)
            found[name] = problems(page, rules)
        # The live page of a run in progress (its banner and its pause button), and head to head at the strongest
        # tint a cell can take (a bot that always places above another): its above–tied–below line must still
        # read at 4.5:1.
        goto(page, live, "t/league/index.html")
        expect(page.locator("[data-live-pause]")).to_be_visible()
        cells = page.locator("table.h2h td.cell")
        cells.evaluate_all("cells => cells.forEach(c => c.style.setProperty('--lead', '1'))")
        assert page.locator("table.h2h td.ahead").count() and page.locator("table.h2h td.behind").count()
        found["live tournament, head to head at its strongest tint"] = problems(page, rules)
    failing = {name: lines for name, lines in found.items() if lines}
    assert not failing, "\n".join(f"{name} ({width} px, {scheme}):\n  " + "\n  ".join(lines)
                                  for name, lines in failing.items())


def test_the_replay_says_each_move_to_a_screen_reader(built: tuple[Store, Path, Path], browser: Browser) -> None:
    store, site, _ = built
    with opened(browser, 1280, "light") as page:
        goto(page, site, urls.match_href("league", faulty_match(store)))
        said = page.locator("[data-announce]")
        expect(said).to_have_attribute("aria-live", "polite")
        # One live region: the counter is not one too (a listener would hear the step twice, or only the step).
        assert page.locator("[data-replay] [aria-live], [data-replay] output").count() == 1
        spoken = []
        for _ in range(3):
            page.keyboard.press("ArrowRight")
            counter = page.locator("[data-counter]").inner_text()
            step, total = map(int, re.match(r"Step (\d+) / (\d+)", counter).groups())  # type: ignore[union-attr]
            what = page.locator("[data-what]").inner_text()
            assert what.strip()
            expect(said).to_have_text(re.compile(rf"^Step {step} of {total}(, round \d+)?: {re.escape(what)}$"))
            # The slider says the step in words too.
            expect(page.locator("[data-slider]")).to_have_attribute("aria-valuetext", re.compile(rf"^Step {step} of"))
            spoken.append(said.inner_text())
        # A move is said in words, with its cards: not only a step number.
        assert any(" throws " in line for line in spoken), spoken
        # The step's text box has a fixed height: a line longer than it scrolls, and is then a tab stop.
        what = page.locator("[data-what]")
        assert what.get_attribute("tabindex") is None
        page.add_style_tag(content="[data-what] { height: 1em !important; }")
        page.keyboard.press("ArrowRight")
        expect(what).to_have_attribute("tabindex", "0")
        page.add_style_tag(content="[data-what] { height: 30em !important; }")
        page.keyboard.press("ArrowRight")
        expect(what).not_to_have_attribute("tabindex", "0")


def test_chart_values_are_a_table_its_labels_tab_stops_and_head_to_head_said(built: tuple[Store, Path, Path],
                                                            browser: Browser) -> None:
    _, site, _ = built
    with opened(browser, 1280, "light") as page:
        goto(page, site, "t/league/index.html")
        labels = page.locator("svg.chart text.end")
        expect(labels).to_have_count(len(BOTS))
        # The keyboard reaches each line's label, which says its last value, and shows that line's points.
        labels.first.focus()
        expect(labels.first).to_be_focused()
        points = labels.first.locator("xpath=..").locator(".pt").first
        assert points.evaluate("p => getComputedStyle(p).opacity") == "1"
        page.keyboard.press("Tab")
        expect(labels.nth(1)).to_be_focused()
        # The values as a table: a column per bot, its last row each line's last value (the label's).
        table = page.locator("details.chartdata")
        table.locator("summary").click()
        heads = table.locator("thead th").all_inner_texts()[1:]
        last = table.locator("tbody tr").last.locator("td").all_inner_texts()
        assert 2 <= table.locator("tbody tr").count() <= 40
        for i in range(labels.count()):
            title = labels.nth(i).locator("title").text_content() or ""
            name, value = re.match(r"(\S+): (-?[\d.]+) after match", title).groups()  # type: ignore[union-attr]
            assert last[heads.index(name)] == value, (name, value, heads, last)
        # A head-to-head cell's link says what it shows, the pair first (an aria-label used to hide its numbers).
        name = re.compile(r"^flaky against planner: \d+% \d+–\d+–\d+ \(above, tied, below\) in \d+ matches$")
        expect(page.get_by_role("link", name=name)).to_have_count(1)
        # The bot page's chart: μ with its band, as a table too.
        goto(page, site, "t/league/bots/flaky/index.html")
        page.locator("details.chartdata summary").click()
        expect(page.locator("details.chartdata tbody tr").last.locator("td")).to_have_text(
            re.compile(r"^-?[\d.]+ \(-?[\d.]+ to -?[\d.]+\)$"))


@pytest.mark.parametrize("width", [390, 1280])
def test_keyboard_skips_to_the_content_and_reaches_every_scroll_region(built: tuple[Store, Path, Path],
                                                                       browser: Browser, width: int) -> None:
    store, site, _ = built
    with opened(browser, width, "light") as page:
        for _, address in page_types(store):
            page.goto("about:blank")  # a page opened afresh: not the same one with another #step
            goto(page, site, address)
            page.keyboard.press("Tab")
            skip = page.get_by_role("link", name="Skip to content")
            expect(skip, address).to_be_focused()
            expect(skip).to_be_in_viewport()
            page.keyboard.press("Enter")
            expect(page.locator("main")).to_be_focused()
            # Whatever scrolls sideways or down inside the page is a tab stop of its own (axe is content with a
            # link inside, which need not bring the rest of the box into view).
            unreachable = page.evaluate("""() => [...document.querySelectorAll('body *')].filter(e => {
                const s = getComputedStyle(e);
                const scrolls = (e.scrollWidth > e.clientWidth + 1 && /auto|scroll/.test(s.overflowX))
                    || (e.scrollHeight > e.clientHeight + 1 && /auto|scroll/.test(s.overflowY));
                return scrolls && e.offsetParent !== null && e.tabIndex < 0;
            }).map(e => e.outerHTML.slice(0, 120))""")
            assert unreachable == [], (address, unreachable)
        # A paged list's two pagers are two landmarks, told apart by their labels.
        goto(page, site, "t/league/matches/index.html")
        labels = page.locator("nav.pager").evaluate_all("navs => navs.map(n => n.getAttribute('aria-label'))")
        assert labels == ["Pages (top)", "Pages (bottom)"]
