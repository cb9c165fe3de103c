"""The league server in a real browser (Chromium through Playwright): the upload page and the live standings.

Skips, saying why, without Chromium or the playwright package, exactly as tests/site/test_site_browser.py does.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.server import SAMPLES, Server, free_port, make_bot

CHROMIUM = os.environ.get("ARENA_CHROMIUM", "/usr/bin/chromium")
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--disable-dev-shm-usage"]
try:
    import playwright.sync_api  # noqa: F401
    MISSING = None if Path(CHROMIUM).is_file() else f"no Chromium at {CHROMIUM} (apt-get install chromium)"
except ImportError:
    MISSING = "the playwright package is not installed (pip install -e '.[test]')"
if MISSING is not None:
    if os.environ.get("ARENA_REQUIRE_BROWSER") == "1":
        pytest.fail(f"ARENA_REQUIRE_BROWSER=1 but {MISSING}", pytrace=False)
    pytest.skip(MISSING, allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright

from arena.registry.client import pack
from arena.store import Store

pytestmark = pytest.mark.slow

CONFIG = """\
league: {{name: browser-league, bots: ["registry:*", {greedy}, {random}], players: 2, seed: 3,
          rules: {{threshold: 30}}, workers: 1}}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("browser-league")
    config = root / "league.yaml"
    config.write_text(CONFIG.format(greedy=SAMPLES / "greedy", random=SAMPLES / "random"))
    with Server(root, config, root / "results" / "arena.db", free_port()).running() as running:
        yield running


@pytest.fixture
def page() -> Iterator[Page]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        opened = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
        errors: list[str] = []
        opened.on("pageerror", lambda error: errors.append(str(error)))
        yield opened
        browser.close()
        assert errors == [], errors


def test_an_author_uploads_with_the_form_and_sees_the_check_report(server: Server, page: Page,
                                                                     tmp_path: Path) -> None:
    token = server.add_author("web-author")
    archive = tmp_path / "web-bot.tar.gz"
    archive.write_bytes(pack(make_bot(tmp_path, "web-bot", SAMPLES / "random")))
    page.goto(f"{server.url}/upload")
    page.get_by_label("API token").fill(token)
    page.get_by_label(re.compile("Bot archive")).set_input_files(str(archive))
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#result h2")).to_have_text("Stored web-bot@1", timeout=60_000)
    expect(page.locator("#check tbody tr").first).to_contain_text("manifest")
    # Submitting the same page again is still accepted by the CSRF check (same cookie, same form token).
    page.get_by_label("API token").fill("not-my-token")
    page.get_by_label(re.compile("Bot archive")).set_input_files(str(archive))
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#result")).to_contain_text("that API token is not valid")


def test_the_standings_page_refreshes_itself(server: Server, page: Page) -> None:
    page.goto(f"{server.url}/")
    expect(page.locator("#standings")).to_contain_text("web-bot@1", timeout=30_000)
    first = page.locator("main > p").first.inner_text()
    # No navigation from the test: the page reloads itself and shows more matches played.
    expect(page.locator("main > p").first).not_to_have_text(first, timeout=30_000)
    assert "matches played" in page.locator("main > p").first.inner_text()


def test_an_author_logs_in_sees_their_own_page_and_logs_out(server: Server, page: Page, tmp_path: Path) -> None:
    token = server.add_author("page-author")
    reply = server.upload(token, pack(make_bot(tmp_path, "page-bot", SAMPLES / "random")))
    assert reply.status_code == 201, reply.text
    page.goto(f"{server.url}/me")
    expect(page).to_have_url(f"{server.url}/me/login")  # not logged in yet
    page.get_by_label("API token").fill("not-a-token")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#message")).to_have_text("That API token is not valid.")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{server.url}/me")
    expect(page.locator("h1")).to_have_text("page-author's bots")
    expect(page.locator("#page-bot-1")).to_contain_text("page-bot@1")
    page.locator("#page-bot-1 .check-report summary").click()
    expect(page.locator("#page-bot-1 .check-report")).to_contain_text("self-play")
    # The session cookie is out of the page's reach: HttpOnly, so no script can read or send it elsewhere.
    assert "arena_session" not in page.evaluate("document.cookie")
    cookie = next(c for c in page.context.cookies() if c["name"] == "arena_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/me"
    # Its matches appear once the league has played it (the page is rendered per request).
    for _ in range(60):
        page.reload()
        if page.locator("#my-matches tbody tr").count() > 0:
            break
        page.wait_for_timeout(1000)
    expect(page.locator("#my-matches")).to_contain_text("page-bot@1")
    page.get_by_role("button", name="Log out").click()
    expect(page.locator("#message")).to_have_text("You are logged out.")
    page.goto(f"{server.url}/me")
    expect(page).to_have_url(f"{server.url}/me/login")


def test_a_build_that_fails_shows_its_log_on_the_upload_page(server: Server, page: Page, tmp_path: Path) -> None:
    from arena.bots.scaffold import scaffold
    token = server.add_author("c-author")
    bot = scaffold("broken-c", "c", tmp_path / "broken-c")
    (bot / "bot.c").write_text("int main(void) { return undeclared_thing; }\n")
    archive = tmp_path / "broken-c.tar.gz"
    archive.write_bytes(pack(bot))
    page.goto(f"{server.url}/upload")
    page.get_by_label("API token").fill(token)
    page.get_by_label(re.compile("Bot archive")).set_input_files(str(archive))
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#result h2")).to_have_text("Rejected, nothing stored", timeout=60_000)
    build_log = page.locator("#check details").filter(has_text="build log")
    expect(build_log).to_have_attribute("open", "")  # a failed build's log is shown without a click
    expect(build_log.locator("pre")).to_contain_text("undeclared_thing")


@pytest.mark.parametrize("width", [390, 1280])
def test_the_servers_pages_have_no_serious_axe_violation(server: Server, page: Page, width: int) -> None:
    """The live standings (reloaded by a script a user can pause, not a meta refresh: axe rates that critical), the
    upload form, the login and an author's own page, light and dark (the dark scheme by the colour rules alone)."""
    from tests.axecheck import problems

    page.set_viewport_size({"width": width, "height": 844})
    token = server.add_author(f"axe-author-{width}")
    found: dict[str, list[str]] = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        rules = ["color-contrast", "link-in-text-block"] if scheme == "dark" else None
        page.goto(f"{server.url}/")
        pause = page.locator("[data-live-pause]")
        if pause.get_attribute("aria-pressed") != "true":
            pause.click()  # kept for the session: no reload under axe
        expect(pause).to_have_attribute("aria-pressed", "true")
        found[f"live standings, {scheme}"] = problems(page, rules)
        page.goto(f"{server.url}/upload")
        found[f"upload, {scheme}"] = problems(page, rules)
        page.goto(f"{server.url}/me/login")
        found[f"login, {scheme}"] = problems(page, rules)
        if scheme == "light":
            page.get_by_label("API token").fill(token)
            page.get_by_role("button", name="Log in").click()
            expect(page).to_have_url(f"{server.url}/me")
        page.goto(f"{server.url}/me")
        found[f"author page, {scheme}"] = problems(page, rules)
    failing = {name: lines for name, lines in found.items() if lines}
    assert not failing, "\n".join(f"{name} ({width} px):\n  " + "\n  ".join(lines) for name, lines in failing.items())


def test_an_author_plays_a_house_bot_from_a_phone_privately_and_unrated(server: Server, page: Page) -> None:
    token = server.add_author("table-author")
    browser = page.context.browser
    assert browser is not None
    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True).new_page()
    phone.goto(f"{server.url}/me/login")
    phone.get_by_label("API token").fill(token)
    phone.get_by_role("button", name="Log in").tap()
    phone.get_by_role("link", name="Play a match yourself").tap()
    phone.get_by_label("greedy").check()
    phone.get_by_label("random").uncheck()
    phone.get_by_role("button", name="Sit down").tap()
    expect(phone.locator("h1")).to_have_text("Your seat")
    table_url = phone.url
    # Nobody but its author can see the table exists: no session, no table.
    assert httpx.get(table_url).status_code == 404
    assert httpx.get(f"{table_url}state").status_code == 404
    turns = 0
    deadline = time.monotonic() + 180
    while True:
        while not phone.evaluate(f"Number(document.body.dataset.turns || 0) > {turns} || "
                                 "document.getElementById('clock').textContent === 'The match is over.'"):
            assert time.monotonic() < deadline, phone.locator("#log").text_content()
            phone.wait_for_timeout(100)
        if phone.locator("#clock").text_content() == "The match is over.":
            break
        phone.locator(".play-throw").first.tap()
        phone.get_by_role("button", name="Take from the deck").tap()
        turns += 1
    expect(phone.locator("#log")).to_contain_text("Match over:")
    assert phone.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    # Stored in the author's own run, unrated; the league's standings never name the person.
    store = Store(server.db)
    try:
        runs = {row["name"]: row["id"] for row in store.tournaments()}
        played = [run for run in runs if run.startswith("play-by-")]
        assert len(played) == 1
        (match,) = store.matches(runs[played[0]])
        assert match.status == "done" and "table-author" in match.names
        assert store.rating_rows(runs[played[0]]) == []
    finally:
        store.close()
    assert "table-author" not in server.standings()


# -- a match followed live (issue 43) ------------------------------------------------------------------------------

WATCHED = """\
league: {{name: watched-league, bots: [{slow}, {random}], players: 2, seed: 11, rules: {{threshold: 100}}, workers: 1}}
"""
CARD_CODE = re.compile(r"\b(?:10|[2-9TJQKA])[CDHS]\b")
CARD_LABEL = re.compile("(?:10|[2-9JQKA])[\u2663\u2666\u2665\u2660]")
SUIT_SIGN = {"C": "\u2663", "D": "\u2666", "H": "\u2665", "S": "\u2660"}
RECORD_DOM = """
window.__seen = [];
new MutationObserver(function (records) {
  records.forEach(function (r) {
    if (r.type === "characterData") window.__seen.push(r.target.textContent);
    r.addedNodes.forEach(function (n) { window.__seen.push(n.textContent || ""); });
  });
}).observe(document, { subtree: true, childList: true, characterData: true });
"""


def label(code: str) -> str:
    return ("10" if code[0] == "T" else code[0]) + SUIT_SIGN[code[1]]


def cards_shown(text: str) -> set[str]:
    """The cards in a text, by code (the moves in words) or by label (the card table's faces), as codes."""
    signs = {sign: suit for suit, sign in SUIT_SIGN.items()}
    return ({code.replace("10", "T") for code in CARD_CODE.findall(text)}
            | {("T" if found[:-1] == "10" else found[:-1]) + signs[found[-1]] for found in CARD_LABEL.findall(text)})


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A league whose matches last long enough to follow (several seconds): one house bot takes 0.5 s a move, and a match lasts rounds."""
    from tests.support.diarist import slow_greedy

    root = tmp_path_factory.mktemp("watched-league")
    config = root / "league.yaml"
    config.write_text(WATCHED.format(slow=slow_greedy(root, "slowpoke", 0.5), random=SAMPLES / "random"))
    with Server(root, config, root / "results" / "arena.db", free_port()).running() as running:
        yield running


def test_a_spectator_follows_a_match_on_the_live_page_and_never_sees_a_hidden_card(
        watched: Server, page: Page) -> None:
    from arena.match.matchlog import load
    from arena.match.spectator import public_event

    bodies: list[str] = []

    def recorded(route: Any) -> None:  # every answer of the live API the page got, as it got it
        response = route.fetch()
        bodies.append(response.text())
        route.fulfill(response=response)

    page.route("**/api/live/**", recorded)
    page.add_init_script(RECORD_DOM)
    # From the home page's list of matches in play (it lists them as the page is made: reload until one is).
    deadline = time.monotonic() + 120
    while True:
        page.goto(f"{watched.url}/")
        link = page.locator("ul.inplay a").first
        if link.count():
            break
        assert time.monotonic() < deadline, "no match in play on the home page"
        page.wait_for_timeout(300)
    link.click()
    index = int(page.url.rstrip("/").rsplit("/", 1)[1])
    expect(page.locator(".cardtable")).to_be_visible(timeout=30_000)
    faces_in_hands: list[str] = []
    moves_seen: list[int] = []
    while not page.locator("[data-watch-replay]").count():  # in play: the hands are card backs, and nothing else
        faces_in_hands += page.eval_on_selector_all(".seathand .card",
                                                     "nodes => nodes.map(n => n.className + '|' + n.textContent)")
        moves_seen.append(page.locator("[data-watch-moves] li").count())
        page.wait_for_timeout(150)
    assert len(set(moves_seen)) >= 3, moves_seen  # the page grew move by move while the match was played
    assert faces_in_hands and set(faces_in_hands) == {"card back|"}, set(faces_in_hands)
    expect(page.locator("[data-watch-replay]")).to_have_text("The match is over: watch its replay")
    assert page.locator("[data-watch-moves] li").first.inner_text().startswith("Match over:")
    from tests.axecheck import problems
    assert problems(page) == []  # the live page, with its table, its moves and its link, light and dark
    page.emulate_media(color_scheme="dark")
    assert problems(page, ["color-contrast", "link-in-text-block"]) == []

    log = load(watched.db.parent / "logs" / "watched-league" / f"{index:06d}.jsonl.gz")
    events = [event for body in bodies for event in json.loads(body).get("events", [])]
    assert events == [public_event(event) for event in log.events]  # every move, in order, as told to all
    public = {card for event in log.events for card in
              [*event.get("floor", ()), *event.get("discard", ()), event.get("take", "deck")] if card != "deck"}
    held = {card for event in log.events for card in
            [*(c for hand in event.get("hands", ()) for c in hand), event.get("drew", "")] if card}
    hidden = held - public  # cards in a hand that no player was ever shown
    assert hidden, "a match with no hidden card cannot test this"
    seen_dom = page.evaluate("window.__seen.join('\\n')") + page.content()
    assert not cards_shown(seen_dom) & hidden, cards_shown(seen_dom) & hidden
    assert not cards_shown("\n".join(bodies)) & hidden
    assert cards_shown(seen_dom) <= public

    # The link leads to the replay once it is public (its deal's other rotation played), and says so until then.
    def replay_open() -> bool:
        page.locator("[data-watch-replay]").click()
        if page.locator("#replay-later").count():
            page.go_back()
            return False
        return True

    watched.wait_for("the followed match's replay", replay_open, seconds=120)
    assert re.search(r"/site/t/[^/]+/matches/\d+\.html", page.url), page.url
    expect(page.locator("h1")).to_contain_text("Match #")
