"""The results site in a real browser: a small real tournament, its site opened from disk (file://) in Chromium.

Checks the standings table, follows every link of every page (each must name an existing file, and a #fragment an
element of it), steps a replay forward and back (buttons and arrow keys), checks the no-JavaScript fallback, and
saves screenshots of the main pages under test-output/screenshots/ for people to look at.

Needs Debian's ``chromium`` (/usr/bin/chromium) and the ``playwright`` Python package; the browser Playwright
would download is never used. Without them the tests skip, saying why, unless ARENA_REQUIRE_BROWSER=1 (as in
CI), in which case they fail.
"""

from __future__ import annotations

import os
import shutil
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from click.testing import CliRunner

from arena.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "test-output" / "screenshots"
CHROMIUM = os.environ.get("ARENA_CHROMIUM", "/usr/bin/chromium")
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--disable-dev-shm-usage"]


def _missing() -> str | None:
    if not Path(CHROMIUM).is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    return None


MISSING = _missing()
if MISSING is not None:
    if os.environ.get("ARENA_REQUIRE_BROWSER") == "1":
        pytest.fail(f"ARENA_REQUIRE_BROWSER=1 but {MISSING}", pytrace=False)
    pytest.skip(MISSING, allow_module_level=True)

from playwright.sync_api import Browser, Page, expect, sync_playwright

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real tournament of 2-3 sample bots, played and built by ``arena run``."""
    directory = tmp_path_factory.mktemp("browser")
    bots = ["greedy", "random"] + (["js-greedy"] if shutil.which("node") else [])
    config = {"name": "browser", "bots": [str(ROOT / "sample_bots" / b) for b in bots], "players": len(bots),
              "repeats": 2, "seed": 11, "rules": {"threshold": 30}, "limits": {"move_ms": 2000}, "workers": 2}
    path = directory / "browser.yaml"
    path.write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(main, ["run", str(path), "--db", str(directory / "results" / "arena.db")])
    assert result.exit_code == 0, result.output
    index = directory / "results" / "site" / "index.html"
    assert index.is_file()
    return index.parent


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    yield opened
    context.close()
    assert errors == [], errors


def url(path: Path) -> str:
    return path.resolve().as_uri()


def to_path(link: str) -> Path:
    return Path(unquote(urlsplit(link).path))


def shoot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def test_standings_table(site: Path, page: Page) -> None:
    page.goto(url(site / "index.html"))
    expect(page.locator("table.home tbody tr")).to_have_count(1)
    shoot(page, "home")
    page.get_by_role("link", name="browser", exact=True).first.click()
    expect(page).to_have_title("browser · arena")
    table = page.locator("table.standings")
    expect(table.locator("caption")).to_contain_text("Standings")
    rows = table.locator("tbody tr")
    bots = rows.count()
    assert bots in (2, 3)
    assert [rows.nth(i).locator("td.rank").inner_text() for i in range(bots)] == [str(i + 1) for i in range(bots)]
    headers = table.locator("thead th").all_inner_texts()
    for wanted in ("Rank", "Bot", "Rating", "Matches", "Wins", "Mean", "Points", "Declarations", "Faults"):
        assert any(wanted in header for header in headers), (wanted, headers)
    ratings = [float(rows.nth(i).locator("td.strong").inner_text()) for i in range(bots)]
    assert ratings == sorted(ratings, reverse=True)
    expect(table.locator("svg.ratingbar")).to_have_count(bots)
    expect(page.locator("#history svg.chart polyline")).to_have_count(bots)
    expect(page.locator("table.h2h tbody tr")).to_have_count(bots)
    expect(page.locator("#rules")).to_contain_text("threshold")
    shoot(page, "tournament")
    page.set_viewport_size({"width": 390, "height": 844})
    shoot(page, "tournament-phone")
    # A phone-width table scrolls inside its box instead of widening the page.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_every_link_on_every_page_resolves(site: Path, page: Page) -> None:
    seen: set[Path] = set()
    ids: dict[Path, set[str]] = {}
    fragments: list[tuple[Path, Path, str]] = []
    queue = deque([(site / "index.html").resolve()])
    root = site.resolve()
    while queue:
        current = queue.popleft()
        if current in seen:
            continue
        seen.add(current)
        page.goto(url(current))
        ids[current] = set(page.eval_on_selector_all("[id]", "els => els.map(e => e.id)"))
        links: list[str] = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        assets: list[str] = page.eval_on_selector_all("link[href], script[src]", "els => els.map(e => e.href || e.src)")
        for link in links + assets:
            assert link.startswith("file://"), f"{current}: {link} is not a local file link"
            target = to_path(link)
            assert target.is_file(), f"{current}: broken link {link}"
            assert root in target.parents, f"{current}: {link} leaves the site"
            fragment = urlsplit(link).fragment
            if fragment:
                fragments.append((current, target, fragment))
            if target.suffix == ".html" and target not in seen:
                queue.append(target)
    for source, target, fragment in fragments:
        assert fragment in ids[target], f"{source}: #{fragment} is not an element of {target}"
    every_page = {p.resolve() for p in site.rglob("*.html")}
    assert seen == every_page, f"pages no link reaches: {sorted(every_page - seen)}"
    assert len(seen) > 8


def _state(page: Page) -> dict[str, Any]:
    return {"counter": page.locator("[data-counter]").inner_text(),
            "floor": page.locator("[data-floor]").inner_text(),
            "hands": page.locator("[data-hands]").inner_text(),
            "what": page.locator("[data-what]").inner_text()}


def test_replay_steps_forward_and_back(site: Path, page: Page) -> None:
    page.goto(url(site / "t" / "browser" / "matches" / "1.html"))
    replay = page.locator("[data-replay]")
    expect(replay).to_be_visible()
    start = _state(page)
    assert start["counter"].startswith("Step 1 / ")
    total = int(start["counter"].split("/")[1].split()[0])
    assert total > 10
    forward = page.get_by_role("button", name="Forward")
    for _ in range(3):
        forward.click()
    after = _state(page)
    assert after["counter"].startswith("Step 4 / ")
    assert after["hands"] != start["hands"] and after["floor"] != start["floor"] and after["what"] != start["what"]
    shoot(page, "match-replay")
    page.keyboard.press("ArrowRight")
    assert _state(page)["counter"].startswith("Step 5 / ")
    page.keyboard.press("ArrowLeft")
    assert _state(page) == after
    back = page.get_by_role("button", name="Back")
    for _ in range(3):
        back.click()
    assert _state(page) == start
    back.click()  # already at the first step: stays there
    assert _state(page) == start
    page.keyboard.press("End")
    end = _state(page)
    assert end["counter"].startswith(f"Step {total} / {total}") and "Match over" in end["what"]
    # A play step names the thrower and what was thrown and taken.
    page.keyboard.press("Home")
    texts = []
    for _ in range(min(total, 12)):
        page.keyboard.press("ArrowRight")
        texts.append(_state(page)["what"])
    assert any(" throws " in text and " takes " in text for text in texts)
    # Each step shows the narration the page embeds (its move list, one line per event), not a narration of its own.
    assert texts == page.locator("[data-moves] > li").all_text_contents()[1:len(texts) + 1]
    assert any(text.startswith("Round 1 is dealt") for text in texts + [start["what"]])
    page.keyboard.press("End")
    shoot(page, "match-end")
    page.set_viewport_size({"width": 390, "height": 844})
    page.keyboard.press("Home")
    forward.click()
    shoot(page, "match-phone")


def test_match_page_without_javascript(site: Path, browser: Browser) -> None:
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(url(site / "t" / "browser" / "matches" / "0.html"))
    expect(page.locator("table.result tbody tr").first).to_be_visible()
    expect(page.locator("[data-replay]")).to_be_hidden()
    expect(page.locator("table.rounds tbody tr").first).to_be_visible()
    page.locator("details.moves summary").click()
    expect(page.locator("details.moves li").first).to_be_visible()
    shoot(page, "match-nojs")
    context.close()


def test_bot_page_and_dark_mode(site: Path, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900}, color_scheme="dark")
    page = context.new_page()
    page.goto(url(site / "t" / "browser" / "bots" / "greedy" / "index.html"))
    expect(page.locator("h1")).to_contain_text("greedy")
    expect(page.locator("#history svg.chart polygon")).to_have_count(1)
    opponents = page.locator("table.opponents tbody tr").count()
    expect(page.locator("table.seats tbody tr")).to_have_count(opponents + 1)  # as many seats as players
    shown = page.locator("table.settings tr", has_text="files_hash").locator("td").inner_text()
    expect(page.locator("#manifest code.hash")).to_have_text(shown)
    assert len(shown) == 64
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(247, 247, 244)"  # the dark palette, not the light one
    shoot(page, "bot-dark")
    page.goto(url(site / "t" / "browser" / "index.html"))
    shoot(page, "tournament-dark")
    context.close()

