"""A live page in a real browser (Chromium, from disk): it reloads itself, a button pauses that, and the build at
the run's end stops it. Skipped without a browser as tests/site/test_site_browser.py is (whose fixtures it uses)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from arena.site import build
from tests.sitestore import make_store
from tests.support.browser import browser_fixture, page_fixture, shoot, url  # noqa: F401 - fixtures, by their names

pytestmark = pytest.mark.slow


def test_a_live_page_reloads_itself_pauses_on_request_and_stops_after_the_last_build(
        tmp_path: Path, page: Page) -> None:
    store = make_store(tmp_path)
    out = tmp_path / "site"
    build.build_site(store, out, workers=1, live_refresh_s=2)
    loads: list[str] = []
    page.on("load", lambda _: loads.append(page.url))
    page.goto(url(out / "t" / "t" / "index.html"))
    # Paused first (kept for the session, so a reload that came meanwhile stays paused), to look at it still.
    pause = page.locator("[data-live-pause]")
    pause.click()
    expect(pause).to_have_attribute("aria-pressed", "true")
    expect(pause).to_have_text("Resume updates")
    banner = page.locator("[data-live-refresh]")
    expect(banner).to_contain_text("live, 12 of 12 matches")
    shoot(page, "live-tournament")
    seen = len(loads)
    page.wait_for_timeout(5_000)  # two periods and more: a reload still scheduled would have come
    assert len(loads) == seen, "a paused page does not reload"
    with page.expect_event("load", timeout=60_000):  # resumed: every 2 s, by itself
        pause.click()
    expect(pause).to_have_attribute("aria-pressed", "false")
    # The last build writes the page without the mark: the next reload shows it, and then no more come.
    build.build_site(store, out, workers=1)
    expect(banner).to_have_count(0, timeout=60_000)
    seen = len(loads)
    page.wait_for_timeout(5_000)
    assert len(loads) == seen, "the final page does not reload"
