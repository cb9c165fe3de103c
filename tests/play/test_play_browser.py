"""`arena play --web`: a person plays a whole match in real Chromium at a phone's size, by clicking; the table
refuses what is not a legal move without a traceback, and the stored match replays to the same outcome."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arena.game.rules import Rules, legal_discards
from arena.match.matchlog import load, verify
from tests.support.browser import Browser, browser_fixture, expect  # noqa: F401 - fixtures, by their names
from tests.support.runs import stored_play

# isort: split
from tests.axecheck import problems  # after the module above, which skips without a browser

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture
def table(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    process = subprocess.Popen([sys.executable, "-m", "arena", "play", "--web", "--threshold", "30", "--seed", "5"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                               env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith("your table: http://127.0.0.1:"), first + (process.stderr.read() if process.stderr else "")
    try:
        yield first.split()[2], process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)


def test_a_person_plays_a_whole_match_in_the_browser_on_a_phone(table: tuple[str, subprocess.Popen[str]],
                                                                  browser: Browser, tmp_path: Path) -> None:
    url, process = table
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    expect(page.locator(".play-throw").first).to_be_visible(timeout=120_000)
    assert problems(page) == []
    # Nothing on the page scrolls sideways at a phone's width.
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    token = page.locator('meta[name="table-token"]').get_attribute("content")
    # What the page never sends, sent by hand: refused with the reason, the turn still open.
    assert httpx.post(f"{url}move", json={"throw": 0, "take": "deck"}).status_code == 403  # no token
    wrong = httpx.post(f"{url}move", json={"throw": 99, "take": "deck"}, headers={"X-Table-Token": str(token)})
    assert wrong.status_code == 409 and "No such throw" in wrong.json()["error"]
    junk = httpx.post(f"{url}move", content=b"{not json", headers={"X-Table-Token": str(token)})
    assert junk.status_code == 400
    rebound = httpx.get(f"{url}state", headers={"Host": "evil.example:80"})
    assert rebound.status_code == 403  # a page of another site resolved to 127.0.0.1 reads nothing
    turns = 0
    while True:
        # The page counts the turns it has shown (body's data-turns): the next one, or the match's end.
        # (Polled from here: the table's Content-Security-Policy forbids wait_for_function's eval, as it should.)
        deadline = time.monotonic() + 120
        while not page.evaluate(f"Number(document.body.dataset.turns || 0) > {turns} || "
                                "document.getElementById('clock').textContent === 'The match is over.'"):
            assert time.monotonic() < deadline, page.locator("#log").text_content()
            page.wait_for_timeout(100)
        if page.locator("#clock").text_content() == "The match is over.":
            break
        page.locator(".play-throw").first.tap()
        page.get_by_role("button", name="Take from the deck").tap()
        turns += 1
    expect(page.locator("#log")).to_contain_text("Match over:")
    assert process.wait(60) == 0, process.stderr.read() if process.stderr else ""
    context.close()
    assert errors == []
    match, _ = stored_play(tmp_path / "results" / "arena.db")
    assert match.status == "done" and match.log_path is not None
    log = load(tmp_path / match.log_path)
    assert verify(log) == []
    assert sum(1 for event in log.events if event["type"] == "play" and event["seat"] == 0) == turns


def test_a_person_who_leaves_in_the_browser_forfeits_and_the_match_is_kept(
        table: tuple[str, subprocess.Popen[str]], browser: Browser, tmp_path: Path) -> None:
    url, process = table
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(url)
    expect(page.locator(".play-throw").first).to_be_visible(timeout=120_000)
    page.get_by_role("button", name="Leave the match").click()
    expect(page.locator("#log")).to_contain_text("You leave the table", timeout=60_000)
    expect(page.locator("#log")).to_contain_text("Match over:", timeout=120_000)
    assert process.wait(60) == 0
    context.close()
    match, _ = stored_play(tmp_path / "results" / "arena.db")
    assert match.status == "done" and match.result is not None
    (person,) = [player for player in match.result.players if player.seat == 0]
    assert person.fault is not None and person.place == 3


def test_the_coach_button_shows_what_the_first_opponent_would_play(
        table: tuple[str, subprocess.Popen[str]], browser: Browser) -> None:
    url, process = table
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(url)
    expect(page.locator(".play-throw").first).to_be_visible(timeout=120_000)
    hand = page.locator("#hand .play-card").all_text_contents()
    floor = [text.removeprefix("Take ") for text in page.locator("#floor .play-card").all_text_contents()]
    page.get_by_role("button", name="What would planner play?").click()
    advice = page.locator("#advice")
    expect(advice).to_contain_text("Coach: planner would", timeout=60_000)
    found = re.fullmatch(r"Coach: planner would throw (.+) and take (from the deck|\S+)\.",
                         str(advice.text_content()))
    assert found, advice.text_content()
    assert tuple(found[1].split()) in legal_discards(hand, Rules(threshold=30)), (found[1], hand)
    assert found[2] == "from the deck" or found[2] in floor
    # Shown, never played: the turn is still the person's, whose clock kept running.
    expect(page.locator(".play-throw").first).to_be_enabled()
    page.get_by_role("button", name="Leave the match").click()
    expect(page.locator("#log")).to_contain_text("Match over:", timeout=120_000)
    assert process.wait(60) == 0
    context.close()
