"""The results site in a real browser: a small real tournament, its site opened from disk (file://) in Chromium.

Checks the standings table, follows every link of every page (each must name an existing file, and a #fragment an
element of it), steps a replay forward and back (buttons and arrow keys), checks the no-JavaScript fallback, and
saves screenshots of the main pages under test-output/screenshots/ for people to look at.

Needs Debian's ``chromium`` (/usr/bin/chromium) and the ``playwright`` Python package; the browser Playwright
would download is never used. Without them the tests skip, saying why, unless ARENA_REQUIRE_BROWSER=1 (as in
CI), in which case they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import deque
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from click.testing import CliRunner

from arena.cli.main import main
from arena.game.narrate import Line, narrate
from arena.site import common, snapshot, urls
from arena.site.html import script_json
from arena.site.replay import card_text, compact_events
from arena.site.rows import FaultRow
from arena.store import Store
from tests.support.browser import SCREENSHOTS, Browser, Page, browser_fixture, expect, page_fixture, shoot, url  # noqa: F401 - fixtures, by their names

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real tournament of 2-3 sample bots, played and built by ``arena run`` (the only one in its store: match N,
    its page matches/N.html, is the schedule's (N-1)th)."""
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
def ranked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A real tournament with enough deals to rank (8 a bot: 3 sample bots at 3 seats, 8 deals, 24 matches), played
    and built by ``arena run``, and what ``arena standings --json`` says of it."""
    directory = tmp_path_factory.mktemp("ranked")
    config = {"name": "ranked", "bots": [str(ROOT / "sample_bots" / b) for b in ("planner", "greedy", "random")],
              "players": 3, "repeats": 8, "seed": 3, "rules": {"threshold": 25}, "limits": {"move_ms": 2000},
              "workers": 2}
    path = directory / "ranked.yaml"
    path.write_text(yaml.safe_dump(config))
    db = directory / "results" / "arena.db"
    result = CliRunner().invoke(main, ["run", str(path), "--db", str(db)])
    assert result.exit_code == 0, result.output
    standings = CliRunner().invoke(main, ["standings", "--db", str(db), "--json"])
    assert standings.exit_code == 0, standings.output
    return directory / "results" / "site", json.loads(standings.stdout)


def test_a_ranked_interval_and_p_above_are_shown_as_arena_standings_gives_them(
        ranked: tuple[Path, dict[str, Any]], page: Page) -> None:
    # With 8 deals a bot the standings rank: each bot's rank is its own 95% interval ("1–2": first or second), P(above
    # next) is shown and is never a certainty; the page says what arena standings --json says, line by line.
    site, printed = ranked
    lines = printed["standings"]
    assert printed["note"] is None and all(line["shared_rank"] != "-" for line in lines)
    page.goto(url(site / "t" / "ranked" / "index.html"))
    expect(page.locator("p.standings-note")).to_have_count(0)
    rows = page.locator("table.standings tbody tr")
    expect(rows).to_have_count(3)
    for i, line in enumerate(lines):
        row = rows.nth(i)
        expect(row.locator("th a")).to_have_text(line["bot"])
        low, high = line["rank_interval_95"]
        expect(row.locator("td.rank")).to_have_text(str(low) if low == high else f"{low}–{high}")
        if low < high:
            expect(row.locator("td.rank")).to_have_attribute(
                "title", f"it could truly be anywhere from {low} to {high} (95%)")
        expect(row.locator("td.pnext")).to_have_text(line["p_above_next_text"])
    texts = [line["p_above_next_text"] for line in lines]
    assert texts[-1] == "-" and all(text != "-" and "1.00" not in text for text in texts[:-1]), texts
    assert any(line["p_above_next"] is not None for line in lines)
    # random, last in nearly every match, is ranked last: its range ends at third.
    assert lines[-1]["bot"] == "random" and lines[-1]["rank_interval_95"][1] == 3
    shoot(page, "standings-ranked")


def to_path(link: str) -> Path:
    return Path(unquote(urlsplit(link).path))


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
    # Ranks as arena standings gives them; two deals a bot are too few to rank (docs/RATINGS.md): the page says so
    # above the table, and shows no rank and no P(above) rather than a bootstrap's false certainty.
    expect(page.locator("p.standings-note")).to_contain_text("too few to rank")
    ranks = [rows.nth(i).locator("td.rank").inner_text().strip() for i in range(bots)]
    assert ranks == ["-"] * bots, ranks
    headers = table.locator("thead th").all_inner_texts()
    for wanted in ("Rank", "Bot", "Fit", "Rating", "Matches", "Wins", "Win %", "P(above", "Mean", "Points", "Declarations",
                   "Faults"):
        assert any(wanted in header for header in headers), (wanted, headers)
    # Every header but the bot's name says what it means on hover.
    titled = table.locator("thead th[title]").count()
    assert titled >= len(headers) - 3, (titled, headers)
    # Ordered by the fitted strength; in this round-robin that is mean place's order too.
    strengths = [float(rows.nth(i).locator("td.strength").inner_text()) for i in range(bots)]
    assert strengths == sorted(strengths, reverse=True)
    places = [float(rows.nth(i).locator("td.meanplace").inner_text()) for i in range(bots)]
    assert places == sorted(places)
    assert [rows.nth(i).locator("td.pnext").inner_text() for i in range(bots)] == ["-"] * bots
    wins = [rows.nth(i).locator("td.winpct").inner_text() for i in range(bots)]
    assert all(w.endswith("%") for w in wins)
    expect(table.locator("svg.ratingbar")).to_have_count(bots)
    # The bars have a scale: round rating values above them.
    assert len(table.locator("svg.ratingaxis text").all_inner_texts()) >= 2
    page.locator("details.glossary summary").click()
    expect(page.locator("details.glossary")).to_contain_text("tie for first counts as a win")
    expect(page.locator("#history svg.chart polyline")).to_have_count(bots)
    expect(page.locator("table.h2h tbody tr")).to_have_count(bots)
    # Head to head: the score counts a tie as a half, green above 50% and red below, with wins-ties-losses; the
    # headers sit right-aligned over their numbers.
    cells = page.locator("table.h2h td.cell")
    assert cells.count() == bots * (bots - 1)
    for i in range(cells.count()):
        cell = cells.nth(i)
        percent = cell.locator("strong").inner_text()
        above, ties, below = (int(n) for n in cell.locator(".unit").inner_text().split("–"))
        share = (above + ties / 2) / (above + ties + below)
        assert percent == (">99%" if 0.995 <= share < 1 else "<1%" if 0 < share < 0.005 else f"{round(100 * share)}%")
        kind = cell.get_attribute("class") or ""
        assert ("ahead" in kind) == (above > below) and ("behind" in kind) == (above < below), (kind, above, below)
    head = page.locator("table.h2h thead th").nth(1).bounding_box()
    first = page.locator("table.h2h tbody tr").nth(1).locator("td").first.bounding_box()
    assert head is not None and first is not None
    assert abs((head["x"] + head["width"]) - (first["x"] + first["width"])) < 2
    assert page.locator("table.h2h thead th").nth(1).evaluate("th => getComputedStyle(th).textAlign") == "right"
    expect(page.locator("#rules")).to_contain_text("threshold")
    shoot(page, "tournament")
    page.set_viewport_size({"width": 390, "height": 844})
    shoot(page, "tournament-phone")
    # A phone-width table scrolls inside its box instead of widening the page.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # On a phone the priority columns fit the screen (rank, bot, strength, win %, rating); the rest on demand.
    box = table.locator("xpath=..").bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390
    assert table.evaluate("t => t.scrollWidth <= t.parentElement.clientWidth + 1")
    for selector in ("td.rank", "th a", "td.strength", "td.winpct", "td.rating"):
        cell = rows.first.locator(selector).bounding_box()
        assert cell is not None and cell["x"] + cell["width"] <= 390, selector
    expect(rows.first.locator("td.pnext")).to_be_hidden()
    page.get_by_text("Show all columns").click()
    expect(rows.first.locator("td.pnext")).to_be_visible()
    expect(table.locator("svg.ratingbar").first).to_be_visible()
    shoot(page, "tournament-phone-all-columns")


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
        if fragment.startswith("step="):  # a replay step, read by replay.js (test_replay_navigation follows them)
            assert "replay" in ids[target] and int(fragment[5:]) >= 1, f"{source}: #{fragment}"
            continue
        assert fragment in ids[target], f"{source}: #{fragment} is not an element of {target}"
    every_page = {p.resolve() for p in site.rglob("*.html")}
    assert seen == every_page, f"pages no link reaches: {sorted(every_page - seen)}"
    assert len(seen) > 8


def _state(page: Page) -> dict[str, Any]:
    return {"counter": page.locator("[data-counter]").inner_text(),
            "floor": page.locator("[data-floor]").inner_text(),
            "hands": page.locator("[data-hands]").inner_text(),
            "what": page.locator("[data-what]").inner_text()}


def _step(page: Page) -> int:
    return int(page.locator("[data-counter]").inner_text().split()[1])


def _at_step(page: Page, step: int) -> None:
    """Wait (briefly) until the replay shows ``step``: a click's or a key's effect lands on the page's own time."""
    expect(page.locator("[data-counter]")).to_have_text(re.compile(rf"^Step {step} /"))


def _narration(site: Path, page: Page) -> list[Line]:
    """What the one narrator (arena/game/narrate.py) says of each event of the match the page shows, read from the
    store and the match's log: step i of its replay must show line i - 1."""
    snap = snapshot.snapshot(Store(site.parent / "arena.db"), "browser")
    match = next(m for m in snap.matches if m.id == int(to_path(page.url).stem))  # pages are named by match id
    log, _ = common.match_log(snap, match)
    assert log is not None and match.result is not None
    faults = {p.seat: p.fault for p in match.result.players if p.fault is not None}
    return narrate(log.events, [snap.bot_link(bot)[0] for bot in match.bot_ids], faults, card_text)


def _kinds(site: Path, page: Page) -> list[str]:
    """The engine event of each replay step (step i is event i - 1)."""
    return [line.kind for line in _narration(site, page)]


def test_replay_steps_forward_and_back(site: Path, page: Page) -> None:
    page.goto(url(site / "t" / "browser" / "matches" / "2.html"))
    replay = page.locator("[data-replay]")
    expect(replay).to_be_visible()
    # It opens at the first deal, not at an empty table, and says so in the address.
    start = _state(page)
    assert start["counter"].startswith("Step 2 / ") and start["what"].startswith("Round 1 is dealt")
    assert page.evaluate("location.hash") == "#step=2"
    total = int(start["counter"].split("/")[1].split()[0])
    assert total > 10
    forward = page.get_by_role("button", name="Forward")
    for _ in range(3):
        forward.click()
    after = _state(page)
    assert after["counter"].startswith("Step 5 / ")
    assert after["hands"] != start["hands"] and after["floor"] != start["floor"] and after["what"] != start["what"]
    shoot(page, "match-replay")
    page.keyboard.press("ArrowRight")
    assert _state(page)["counter"].startswith("Step 6 / ")
    page.keyboard.press("ArrowLeft")
    assert _state(page) == after
    back = page.get_by_role("button", name="Back")
    for _ in range(3):
        back.click()
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
    # Each step shows the narrator's line for its event, word for word: replay.js words a turn the way
    # arena/game/narrate.py does, and takes every other line from the page's move list. All the steps of the match.
    lines = [line.text for line in _narration(site, page)]
    page.keyboard.press("Home")
    shown = [_state(page)["what"]]
    for step in range(2, total + 1):
        page.keyboard.press("ArrowRight")
        _at_step(page, step)
        shown.append(page.locator("[data-what]").inner_text())
    assert shown == lines
    assert any(text.startswith("Round 1 is dealt") for text in texts)
    page.keyboard.press("End")
    shoot(page, "match-end")


def test_replay_says_each_moves_think_time_and_the_bank_left(site: Path, page: Page) -> None:
    """Each move's step says its bot's think time and bank as the log has them (arena/match/thinktime.py); other steps
    say nothing of time. The bot's page sums them, with a link to the step of its move closest to the limit."""
    from arena.match import thinktime
    page.goto(url(site / "t" / "browser" / "matches" / "2.html"))
    snap = snapshot.snapshot(Store(site.parent / "arena.db"), "browser")
    match = next(m for m in snap.matches if m.id == 2)
    log, _ = common.match_log(snap, match)
    assert log is not None
    names = [snap.bot_link(bot)[0] for bot in match.bot_ids]
    moves = [t for t in thinktime.thoughts(log.text, log.events) if t.step is not None]
    assert len(moves) > 5
    for thought in moves[:3] + moves[-2:]:
        page.goto(url(site / "t" / "browser" / "matches" / "2.html") + f"#step={thought.step}")
        _at_step(page, thought.step)
        expect(page.locator("[data-think]")).to_have_text(
            f"{names[thought.seat]} thought {thought.think_ms:,} ms; its time bank: {thought.bank_left_ms:,} ms left.")
    page.goto(url(site / "t" / "browser" / "matches" / "2.html") + "#step=1")
    _at_step(page, 1)
    assert page.locator("[data-think]").inner_text().strip() == ""  # a line kept, with nothing on it
    bot = snap.bot_by_id[match.bot_ids[0]]
    page.goto(url(site / urls.bot_href(snap.slug, bot.slug)))
    think = page.locator("#think")
    expect(think).to_contain_text("Mean")
    think.get_by_role("link").first.click()
    expect(page.locator("[data-counter]")).to_have_text(re.compile(r"^Step \d+ /"))
    assert re.search(r"/matches/\d+\.html#step=\d+$", page.url)
    expect(page.locator("[data-think]")).to_contain_text(" thought ")


def test_every_moves_think_time_reads_as_the_log_has_it(page: Page, tmp_path: Path) -> None:
    """replay.js decodes the data file's think times (arena/match/thinktime.py, compact: a few letters a move, a bank only
    where the referee's is not the one predicted) into the text it showed from the plain numbers before, on every
    step of a match whose bots draw on their banks, a referee's count a millisecond off the log's included."""
    from arena.match import thinktime
    from arena.site.build import build_site
    from tests.sitestore import fill_store

    store = Store(tmp_path / "arena.db")
    fill_store(store, name="timed", bots=("alpha", "beta", "gamma"), players=3, repeats=1, think=True)
    build_site(store, tmp_path / "site", workers=1)
    snap = snapshot.snapshot(store, "timed")
    match = snap.matches[0]
    log, _ = common.match_log(snap, match)
    assert log is not None
    names = [snap.bot_link(bot)[0] for bot in match.bot_ids]
    found = [t for t in thinktime.thoughts(log.text, log.events) if t.step is not None]
    expected = {t.step: f"{names[t.seat]} thought {t.think_ms:,} ms; its time bank: {t.bank_left_ms:,} ms left."
                for t in found}
    data_file = (tmp_path / "site" / urls.match_data_href(snap.slug, match.id)).read_text(encoding="utf-8")
    assert "~" in data_file  # a bank the replay could not predict
    assert len({t.bank_left_ms for t in found}) > 3 and max(t.think_ms or 0 for t in found) > 1000
    page.goto(url(tmp_path / "site" / urls.match_href(snap.slug, match.id)) + "#step=1")
    _at_step(page, 1)
    shown = {}
    for step in range(1, len(log.events) + 1):
        if step > 1:
            page.keyboard.press("ArrowRight")
            _at_step(page, step)
        shown[step] = page.locator("[data-think]").inner_text().strip()
    assert shown == {step: expected.get(step, "") for step in shown}


def test_replay_navigation(site: Path, page: Page) -> None:
    page.goto(url(site / "t" / "browser" / "matches" / "2.html"))
    kinds = _kinds(site, page)
    total = len(kinds)
    deals = [i + 1 for i, kind in enumerate(kinds) if kind == "round_start"]
    ends = [i + 1 for i, kind in enumerate(kinds) if kind == "round_end"]
    assert len(deals) >= 2, "the test needs a match of two rounds or more"
    buttons = {name: page.locator(f"[data-go={name}]") for name in ("first", "prev", "prevround", "next",
                                                                     "nextround", "last")}
    # Disabled at the ends: nothing before the first step, nothing after the last.
    buttons["first"].click()
    _at_step(page, 1)
    for name in ("first", "prev", "prevround"):
        expect(buttons[name]).to_be_disabled()
    for name in ("next", "nextround", "last"):
        expect(buttons[name]).to_be_enabled()
    buttons["last"].click()
    _at_step(page, total)
    for name in ("next", "nextround", "last"):
        expect(buttons[name]).to_be_disabled()
    expect(buttons["prev"]).to_be_enabled()
    # Round by round: next round stops at each deal and at each round's end (its points, why it ended) before the
    # next deal, then the end; previous round goes back the same way (from within a round, first to its own deal).
    buttons["first"].click()
    visited = []
    while _step(page) != total:
        buttons["nextround"].click()
        visited.append(_step(page))
    assert visited == sorted(deals + ends) + [total]
    assert all(kinds[step - 1] == "round_end" for step in visited[1::2]), visited
    page.keyboard.press("End")
    buttons["prevround"].click()
    _at_step(page, ends[-1])
    buttons["prevround"].click()
    _at_step(page, deals[-1])
    buttons["next"].click()
    buttons["next"].click()
    page.keyboard.press("PageUp")
    _at_step(page, deals[-1])
    page.keyboard.press("PageUp")
    _at_step(page, ends[-2])
    page.keyboard.press("PageDown")
    _at_step(page, deals[-1])
    # Each seat's last move of the round: after a play, the player's row says what it threw and took.
    page.goto(url(site / "t" / "browser" / "matches" / "2.html") + "#step=" + str(kinds.index("play") + 1))
    actor = page.locator("[data-hands] tr.actor")
    expect(actor.locator("td.last")).to_contain_text("threw")
    expect(actor.locator("td.last")).to_contain_text("took")
    expect(actor.locator("td.last .card").first).to_be_visible()


def test_replay_deep_link_and_score_rows(site: Path, page: Page) -> None:
    match = url(site / "t" / "browser" / "matches" / "2.html")
    total = len(_kinds(site, page) if page.goto(match) else [])
    wanted = min(40, total - 1)
    page.goto(f"{match}#step={wanted}")
    _at_step(page, wanted)
    assert _state(page)["what"] == _narration(site, page)[wanted - 1].text
    page.goto(f"{match}#step=100000")  # past the end: the last step
    _at_step(page, total)
    # No step number: the first step, opened fresh or followed from another step (never where a page without an
    # address opens, step 2, the first deal), and the address says so.
    for address in ("#step=abc", "#step=", "#step=-3"):
        page.goto("about:blank")
        page.goto(f"{match}{address}")
        _at_step(page, 1)
        assert page.evaluate("location.hash") == "#step=1"
        page.goto(f"{match}#step=5")
        _at_step(page, 5)
        page.goto(f"{match}{address}")
        _at_step(page, 1)
    page.goto(f"{match}#step=2")
    # A row of "Scores per round" opens the replay at that round's end, and the address follows.
    rows = page.locator("table.rounds tbody tr")
    assert rows.count() >= 2
    # replay.js makes the table from the data file: a row per round end, each at its step, its running scores
    # those of the event (a seat that is out is a dash).
    kinds = _kinds(site, page)
    assert [int(row.get_attribute("data-step") or 0) for row in rows.all()] == [
        i + 1 for i, kind in enumerate(kinds) if kind == "round_end"]
    match_end = next(line for line in _narration(site, page) if line.kind == "match_end").text
    for name, score in zip(page.locator("table.rounds thead th").all()[2:], rows.last.locator("td").all()[1:]):
        if score.inner_text() != "\u2013":
            assert f"{name.inner_text()} {score.locator('i').inner_text()}" in match_end
    second = rows.nth(1)
    step = int(second.get_attribute("data-step") or 0)
    second.locator("th a").click()
    _at_step(page, step)
    assert _state(page)["what"].startswith("Round 2 ends")
    assert page.evaluate("location.hash") == f"#step={step}"
    # The round-end line shows the arithmetic of the points; the declarer is marked in the score table.
    text = _state(page)["what"]
    assert " = +" in text or " → +" in text, text
    if second.locator("td.declarer").count():
        expect(second.locator("td.declarer .star")).to_have_text("★")
    # The replay marks the declarer at a round's end, in red when the declaration failed.
    declarer = page.locator("[data-hands] tr.declarer")
    if second.locator("td.declarer").count():
        expect(declarer).to_have_count(1)
        expect(declarer.locator(".star")).to_have_text("★")
        assert ("failed" in (declarer.get_attribute("class") or "")) == ("(failed)" in text)
    # Anywhere on a row works too, not only on its round number.
    third = rows.nth(2) if rows.count() > 2 else rows.first
    third.locator("td").first.click()
    _at_step(page, int(third.get_attribute("data-step") or 0))
    second.locator("th a").click()
    # Stepping on updates the address, so that a copied address opens at this moment.
    page.get_by_role("button", name="Forward").click()
    assert page.evaluate("location.hash") == f"#step={step + 1}"


def test_replay_plays_and_pauses(site: Path, page: Page) -> None:
    page.goto(url(site / "t" / "browser" / "matches" / "2.html"))
    play = page.locator("[data-play]")
    page.locator("[data-speed]").select_option(label="5×")
    start = _step(page)
    play.click()
    expect(play).to_have_attribute("aria-pressed", "true")
    page.wait_for_function(f"parseInt(document.querySelector('[data-counter]').textContent.split(' ')[1]) >= {start + 3}")
    play.click()
    expect(play).to_have_attribute("aria-pressed", "false")
    paused = _step(page)
    page.wait_for_timeout(600)  # several intervals at 5x: a paused replay does not move
    _at_step(page, paused)
    # Played to the end, it stops there by itself.
    page.keyboard.press("End")
    page.get_by_role("button", name="Back").click()
    page.get_by_role("button", name="Back").click()
    play.click()
    expect(play).to_have_attribute("aria-pressed", "false", timeout=5000)
    _at_step(page, len(_kinds(site, page)))


def _layout(page: Page) -> dict[str, Any]:
    """Where the controls and the table are: these must not move from step to step."""
    return page.evaluate("""() => {
        const box = el => { const r = el.getBoundingClientRect(); return [Math.round(r.x), Math.round(r.y)]; };
        return { forward: box(document.querySelector('[data-go=next]')),
                 last: box(document.querySelector('[data-go=last]')),
                 table: box(document.querySelector('table.hands')) };
    }""")


@pytest.mark.parametrize("width", [1280, 390])
def test_replay_layout_does_not_drift(site: Path, page: Page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url(site / "t" / "browser" / "matches" / "2.html"))
    total = len(_kinds(site, page))
    page.keyboard.press("Home")
    first = _layout(page)
    for step in sorted({2, 3, 9, total // 3, total // 2, total - 1, total}):
        page.evaluate(f"location.hash = '#step={step}'")
        page.wait_for_function(f"document.querySelector('[data-counter]').textContent.startsWith('Step {step} ')")
        page.evaluate("window.scrollTo(0, 0)")
        assert _layout(page) == first, (step, _layout(page), first)
    if width == 390:
        # Seats stacked: each seat's name and score on one line, inside the screen.
        page.evaluate("location.hash = '#step=3'")
        for row in page.locator("[data-hands] tr").all():
            name, score = row.locator("td.bot").bounding_box(), row.locator("td.score").bounding_box()
            assert name is not None and score is not None
            assert abs(name["y"] - score["y"]) < 8 and score["x"] + score["width"] <= width
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shoot(page, "match-phone")
    else:
        shoot(page, "match-desktop")


def test_places_decided_by_elimination_are_marked(site: Path, page: Page) -> None:
    page.goto(url(site / "t" / "browser" / "matches" / "index.html"))
    expect(page).to_have_title("All matches of browser · arena")
    marks = page.locator("table.matches tbody .outtag")
    assert marks.count() > 0, "the test tournament (threshold 30) has eliminations"
    row = page.locator("table.matches tbody tr", has=page.locator(".outtag")).first
    mark = row.locator(".player .outtag").first.inner_text()
    assert mark.startswith("out r")
    out_round = int(mark[5:])
    row.locator("th a").click()
    # The match page says the same, its score table lists the player as out in that round, and the replay's end
    # gives each place with the round of going out.
    expect(page.locator("table.result [data-out]").first).to_have_text(f"out in round {out_round}")
    expect(page.locator("table.rounds tbody tr").nth(out_round - 1).locator("td").first).to_contain_text("out:")
    page.keyboard.press("End")
    expect(page.locator("[data-hands]")).to_contain_text(f"out in round {out_round}")
    assert " v " in page.title() and "Match #" in page.title()
    shoot(page, "match-eliminated")


def test_match_page_without_javascript(site: Path, browser: Browser) -> None:
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(url(site / "t" / "browser" / "matches" / "1.html"))
    expect(page.locator("table.result tbody tr").first).to_be_visible()
    expect(page.locator("[data-replay]")).to_be_hidden()
    # No score table without JavaScript (replay.js makes it): the move list's round ends say the scores.
    expect(page.locator("[data-rounds]")).to_be_hidden()
    expect(page.locator("table.rounds")).to_have_count(0)
    # Every move, a fold per round: its deal, a grid of its turns and its end, plain text.
    folds = page.locator("[data-moves] details")
    expect(folds.first.locator("pre")).to_be_hidden()
    folds.first.locator("summary").click()
    expect(folds.first.locator("pre")).to_be_visible()
    expect(folds.first.locator("pre")).to_contain_text("dealt: ")
    assert folds.count() == sum(kind == "round_start" for kind in _kinds(site, page))
    shoot(page, "match-nojs")
    context.close()


def test_bot_page_and_dark_mode(site: Path, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900}, color_scheme="dark")
    page = context.new_page()
    page.goto(url(site / "t" / "browser" / "bots" / "greedy" / "index.html"))
    expect(page.locator("h1")).to_contain_text("greedy")
    # The rank badge is the standings' rank as shown (its 95% interval, or "-" before there are deals enough).
    badge = page.locator("h1 .rankbadge").inner_text().lstrip("#")
    page.goto(url(site / "t" / "browser" / "index.html"))
    row = page.locator("table.standings tbody tr", has=page.get_by_role("link", name="greedy", exact=True))
    assert row.locator("td.rank").inner_text().split("\n")[0].strip() == badge
    page.goto(url(site / "t" / "browser" / "bots" / "greedy" / "index.html"))
    expect(page.locator("#history svg.chart polygon")).to_have_count(1)
    opponents = page.locator("table.opponents tbody tr").count()
    expect(page.locator("table.seats tbody tr")).to_have_count(opponents + 1)  # as many seats as players
    shown = page.locator("table.settings tr", has_text="files_hash").locator("td").inner_text()
    expect(page.locator("#manifest code.hash")).to_have_text(shown)
    assert len(shown) == 64
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(247, 247, 244)"  # the dark palette, not the light one
    shoot(page, "bot-dark")
    # On a phone the stat cards go two to a row.
    page.set_viewport_size({"width": 390, "height": 844})
    cards = [page.locator("dl.facts > div").nth(i).bounding_box() for i in range(3)]
    assert all(card is not None for card in cards)
    assert cards[0]["y"] == cards[1]["y"] and cards[2]["y"] > cards[0]["y"]  # type: ignore[index]
    assert cards[1]["x"] + cards[1]["width"] <= 390  # type: ignore[index]
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing widens the page
    shoot(page, "bot-phone")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(url(site / "t" / "browser" / "index.html"))
    shoot(page, "tournament-dark")
    context.close()



@pytest.mark.parametrize("width", [1280, 390])
def test_rating_chart_names_its_lines(site: Path, page: Page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url(site / "t" / "browser" / "index.html"))
    labels = page.locator("#history svg.chart text.end")
    bots = page.locator("table.standings tbody tr").count()
    expect(labels).to_have_count(bots)
    names = [(name or "").split(" ")[0] for name in labels.all_text_contents()]
    assert sorted(names) == sorted(page.locator("table.standings tbody th a").all_inner_texts())
    boxes = [box for box in (labels.nth(i).bounding_box() for i in range(bots)) if box is not None]
    tops = sorted(box["y"] for box in boxes)
    assert all(b - a >= boxes[0]["height"] * 0.7 for a, b in pairwise(tops)), tops  # labels do not overlap
    labels.first.focus()  # keyboard users reach the values too
    assert page.evaluate("document.activeElement.classList.contains('end')")
    page.locator("#history").scroll_into_view_if_needed()
    page.locator("#history figure").screenshot(path=str(SCREENSHOTS / f"rating-chart-{width}.png"))


def test_touch_screens_get_no_keyboard_hint(site: Path, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    page.goto(url(site / "t" / "browser" / "matches" / "2.html"))
    expect(page.locator("[data-replay]")).to_be_visible()
    expect(page.locator(".keys")).to_be_hidden()
    context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_matches_grouped_by_deal_filtered_and_clickable(site: Path, page: Page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url(site / "t" / "browser" / "matches" / "index.html"))
    heads = page.locator("table.matches tr.dealhead")
    assert heads.count() >= 1
    expect(heads.first).to_contain_text("seat rotations")
    expect(heads.first).to_contain_text("mean place")
    rows = page.locator("table.matches tr[data-bots]")
    total = rows.count()
    # The winner of each match is in bold.
    winner = rows.first.locator(".player.winner a")
    assert int(winner.evaluate("a => getComputedStyle(a).fontWeight")) >= 700
    shoot(page, f"matches-{width}")
    # Filter by a bot and an opponent: only their shared matches stay.
    bots = page.locator("[data-filter-bot] option").all_inner_texts()[1:]
    page.locator("[data-filter-bot]").select_option(bots[0])
    page.locator("[data-filter-opponent]").select_option(bots[1])
    visible = page.locator("table.matches tr[data-bots]:visible")
    for i in range(visible.count()):
        names = visible.nth(i).get_attribute("data-bots") or ""
        assert bots[0] in names.split("\n") and bots[1] in names.split("\n")
    expect(page.locator("[data-filter-count]")).to_contain_text(f"of {total} matches")
    page.locator("[data-filter-bot]").select_option("")
    page.locator("[data-filter-opponent]").select_option("")
    expect(rows.first).to_be_visible()
    # Anywhere on a row (not only its number) opens the match.
    href = rows.nth(1).locator("a.whole").get_attribute("href") or ""
    cell = rows.nth(1).locator("td.players")
    box = cell.bounding_box()
    assert box is not None
    cell.click(position={"x": box["width"] - 4, "y": 3})  # the cell's padding: no link there
    page.wait_for_url("**/" + href.split("/")[-1] + "*")
    expect(page.locator("[data-replay]")).to_be_visible()
    # A bot's own list too.
    page.goto(url(site / "t" / "browser" / "bots" / "greedy" / "index.html"))
    row = page.locator("table.matches tr[data-bots]").first
    href = row.locator("a.whole").get_attribute("href") or ""
    row.locator("td.place-1, td.place-2, td.place-3").first.click()
    page.wait_for_url("**/" + href.split("/")[-1] + "*")


def test_how_least_score_works_is_one_click_from_a_match(site: Path, page: Page) -> None:
    page.goto(url(site / "t" / "browser" / "matches" / "2.html"))
    page.locator(".howlink a").first.click()
    how = page.locator("details#how")
    how.locator("summary").click()
    expect(how).to_contain_text("8 − 4 = +4")
    expect(how).to_contain_text("20 + (38 − 4) = +54")
    how.get_by_role("link", name="This tournament's rules and limits").click()
    expect(page.locator("#rules")).to_be_in_viewport()


def test_no_page_is_wider_than_a_phone(site: Path, page: Page) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    tournament = site / "t" / "browser"
    for path in (site / "index.html", tournament / "index.html", tournament / "matches" / "index.html",
                 tournament / "matches" / "2.html", *sorted((tournament / "bots").glob("*/index.html"))):
        page.goto(url(path))
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, path


@pytest.mark.parametrize("width", [1280, 390])
def test_replay_loads_its_data_file_from_disk(site: Path, page: Page, width: int) -> None:
    """The replay's data is a file of its own beside the page (matches/N.js, loaded by a script element, which a
    page opened from file:// may do), not embedded in it; the deep link and the round buttons work from it."""
    page.set_viewport_size({"width": width, "height": 900})
    match = site / "t" / "browser" / "matches" / "2.html"
    html = match.read_text(encoding="utf-8")
    assert 'src="2.js"' in html and "arenaMatch" not in html
    assert (match.parent / "2.js").read_text(encoding="utf-8").startswith("window.arenaMatch = ")
    loaded: list[str] = []
    page.on("request", lambda request: loaded.append(request.url))
    page.goto(url(match))
    assert url(match.parent / "2.js") in loaded and all(link.startswith("file://") for link in loaded)
    expect(page.locator("[data-replay]")).to_be_visible()
    lines = _narration(site, page)
    deals = [i + 1 for i, line in enumerate(lines) if line.kind == "round_start"]
    ends = [i + 1 for i, line in enumerate(lines) if line.kind == "round_end"]
    # Deep link: the end of the first round, as the round's number in "Scores per round" links it.
    page.goto(f"{url(match)}#step={ends[0]}")
    _at_step(page, ends[0])
    assert _state(page)["what"] == lines[ends[0] - 1].text and "Points: " in _state(page)["what"]
    expect(page.locator("[data-hands] tr.declarer .star")).to_have_count(1 if lines[ends[0] - 1].text.count(" declared") else 0)
    shoot(page, f"match-datafile-round-end-{width}")
    # Round buttons: on to the next deal, back to this round's deal, back to the end of the one before, its deal.
    page.locator("[data-go=nextround]").click()
    _at_step(page, deals[1])
    assert _state(page)["what"] == lines[deals[1] - 1].text and page.url.endswith(f"#step={deals[1]}")
    page.locator("[data-go=next]").click()
    page.locator("[data-go=prevround]").click()
    _at_step(page, deals[1])
    page.locator("[data-go=prevround]").click()
    _at_step(page, ends[0])
    page.locator("[data-go=prevround]").click()
    _at_step(page, deals[0])
    shoot(page, f"match-datafile-deal-{width}")
    # The row of a round in "Scores per round" jumps to its end.
    page.locator("table.rounds tbody tr").nth(1).locator("td").first.click()
    _at_step(page, ends[1])
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_replay_of_turns_spelt_out_in_the_data_file(site: Path, page: Page, tmp_path: Path) -> None:
    """A match whose grids could not be read back (an odd name or event: arena.site.replay.grid_readable) has every
    turn spelt out in its data file; replay.js shows the very same steps from it as from the page's grid cells."""
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    snap = snapshot.snapshot(Store(site.parent / "arena.db"), "browser")
    match = next(m for m in snap.matches if m.idx == 1)
    log, _ = common.match_log(snap, match)
    assert log is not None
    names = [snap.bot_link(bot)[0] for bot in match.bot_ids]
    spelt = json.dumps({"names": names, "events": compact_events(log.events)}, ensure_ascii=False)
    assert " t" in (site / urls.match_data_href("browser", match.id)).read_text(encoding="utf-8") and " t" not in spelt
    (copy / urls.match_data_href("browser", match.id)).write_text(f"window.arenaMatch = {script_json(spelt)};\n",
                                                          encoding="utf-8")
    total = len(log.events)
    steps = [*range(1, total + 1, 7), total]
    seen = []
    for root in (site, copy):
        page.goto(url(root / urls.match_href("browser", match.id)))
        states = []
        for step in steps:
            page.evaluate(f"location.hash = '#step={step}'")
            _at_step(page, step)
            states.append(_state(page))
        seen.append(states)
    assert seen[0] == seen[1] and any(" throws " in state["what"] for state in seen[0])


# -- faults and the end of a match: a store with forfeits (tests/sitestore.py: every fifth match, seat 1 crashes in
# round 2), in a 3-seat tournament (the match goes on without it) and a 2-seat one (the forfeit ends the match).

SHOTS = Path(os.environ.get("ARENA_SHOTS", "/tmp/arena-faults-shots"))


@pytest.fixture(scope="module")
def fault_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from arena.site.build import build_site
    from tests.sitestore import fill_store

    directory = tmp_path_factory.mktemp("faults")
    store = Store(directory / "arena.db")
    fill_store(store, name="three", bots=("alpha", "beta", "gamma", "delta"), players=3, repeats=1)
    fill_store(store, name="duel", bots=("alpha", "beta", "gamma"), players=2, repeats=2)
    build_site(store, directory / "site", workers=1)
    return directory / "site"


def _faulted(site: Path, name: str) -> tuple[snapshot.Snapshot, list[FaultRow]]:
    snap = snapshot.snapshot(Store(site.parent / "arena.db"), name)
    return snap, common.fault_rows(snap, limit=None, steps=True)


@pytest.mark.parametrize("width", [1280, 390])
def test_a_fault_opens_the_replay_at_its_forfeit(fault_site: Path, page: Page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    snap, rows = _faulted(fault_site, "three")
    row = rows[0]
    bot = next(b for b in snap.bots if b.name == row.player.name)
    page.goto(url(fault_site / urls.faults_href(snap.slug, bot.slug)))
    expect(page.locator("h1")).to_contain_text(f"Faults of {bot.name}")
    expect(page.locator("table.faultreasons")).to_contain_text("crash.exit")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"faults-page-{width}.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    # "latest #N": the match page, at the step of the forfeit, whose line says who forfeited and why.
    page.locator(".faultgroup").first.get_by_role("link", name=f"#{row.match_id}").click()
    assert row.step is not None
    _at_step(page, row.step)
    assert page.evaluate("location.hash") == f"#step={row.step}"
    expect(page.locator("[data-what]")).to_have_text(re.compile(rf"^{re.escape(bot.name)} \(seat 1\) forfeits \(crash\.exit"))
    seat = page.locator("[data-hands] tr").nth(1)
    # The hand it held when it forfeited stays in view at this step, marked; the next step puts it away.
    expect(seat.locator("td.cards .status")).to_have_text(" forfeited")
    held = seat.locator("td.cards .card").count()
    assert held > 0, "the forfeit in round 2 is of a seat holding cards"  # each card checked: test_site_cardtable
    expect(seat.locator("td.last")).to_have_text("forfeited")
    expect(page.locator(".cardtable [data-seat='1'] .seathand .card")).to_have_count(held)
    expect(page.locator(".cardtable [data-seat='1'] .seatnote")).to_contain_text("forfeited")
    page.keyboard.press("ArrowRight")
    _at_step(page, row.step + 1)
    expect(seat.locator("td.cards")).to_have_text("forfeited")
    expect(page.locator(".cardtable [data-seat='1'] .seathand .card")).to_have_count(0)
    page.keyboard.press("ArrowLeft")
    _at_step(page, row.step)
    # The replay is in view, not the top of the page.
    box = page.locator("[data-replay]").bounding_box()
    assert box is not None and box["y"] < 100
    page.screenshot(path=str(SHOTS / f"forfeit-step-{width}.png"))
    # The legend says which highlight is which.
    expect(page.locator(".handkey")).to_contain_text("just moved")
    expect(page.locator(".handkey")).to_contain_text("to move next")
    # The match page's fault box links to the same step.
    page.goto(url(fault_site / urls.match_href(snap.slug, row.match_id)))
    page.get_by_role("link", name="see it in the replay").click()
    _at_step(page, row.step)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_latest_faults_tables_open_the_replay_at_the_forfeit(fault_site: Path, page: Page, width: int) -> None:
    """The tables of the latest faults, on the tournament's page and on a bot's, link each fault to its replay
    step (matches/N.html#step=K), as the bot's faults page does."""
    page.set_viewport_size({"width": width, "height": 900})
    snap, rows = _faulted(fault_site, "three")
    row = rows[0]  # the latest: the first row of both tables
    bot = next(b for b in snap.bots if b.name == row.player.name)
    assert row.step is not None
    for href in (urls.tournament_href(snap.slug), urls.bot_href(snap.slug, bot.slug)):
        page.goto(url(fault_site / href))
        page.locator("table.faults tbody tr").first.get_by_role("link", name=f"#{row.match_id}").click()
        _at_step(page, row.step)
        assert to_path(page.url).name == f"{row.match_id}.html" and page.evaluate("location.hash") == f"#step={row.step}"
        expect(page.locator("[data-what]")).to_have_text(re.compile(rf"^{re.escape(bot.name)} \(seat 1\) forfeits"))


@pytest.mark.parametrize("width", [1280, 390])
def test_the_last_step_marks_the_winner_and_each_seats_fate(fault_site: Path, page: Page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    snap, rows = _faulted(fault_site, "three")
    match = next(m for m in snap.matches if m.id == rows[0].match_id)
    assert match.result is not None
    page.goto(url(fault_site / urls.match_href(snap.slug, match.id)))
    final = page.locator("[data-final]")
    expect(final).to_be_hidden()  # only on the last step
    # The result's caption gives rule 8.6, as the table under it shows: the forfeit below the others.
    expect(page.locator("table.result caption")).to_contain_text("rule 8.6")
    expect(page.locator("table.result tbody tr").last.locator("[data-forfeit]")).to_have_text("forfeited in round 2")
    page.keyboard.press("End")
    expect(final).to_be_visible()
    shown = final.locator("tbody tr")
    expect(shown).to_have_count(len(match.bot_ids))
    results = sorted(match.result.players, key=lambda p: (p.place, p.seat))
    out_rounds = {p.seat: p.stats.rounds for p in results
                  if p.fault is None and p.score > match.result.rules.threshold}
    for tr, result in zip(shown.all(), results):
        cells = tr.locator("th, td").all_inner_texts()
        assert cells[0] == f"{result.place}." and cells[1].startswith(result.name) and cells[2] == str(result.score)
        if result.fault is not None:
            assert cells[3] == f"forfeited in round {result.fault.round} ({result.fault.reason.value})"
        elif result.seat in out_rounds:
            assert cells[3] == f"out in round {out_rounds[result.seat]}"
        elif result.place == 1:
            assert cells[3].startswith("winner")
    expect(shown.first).to_have_class(re.compile("winner"))
    expect(page.locator("[data-hands] tr.winner")).to_have_count(1)
    expect(page.locator("[data-hands] tr.winner td.bot")).to_have_text(results[0].name)
    final.screenshot(path=str(SHOTS / f"final-step-{width}.png"))
    # "Scores per round" says the forfeit in the row of its round.
    forfeit_row = page.locator("table.rounds tbody tr").nth(1)
    expect(forfeit_row).to_contain_text(f"{rows[0].player.name} forfeited (crash.exit)")
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_a_round_a_forfeit_ended_has_its_row(fault_site: Path, page: Page) -> None:
    """In a two-seat match a forfeit ends the match in its round: "Scores per round" still gives that round."""
    snap, rows = _faulted(fault_site, "duel")
    row = rows[0]
    assert row.step is not None
    page.goto(url(fault_site / urls.match_href(snap.slug, row.match_id)))
    last = page.locator("table.rounds tbody tr").last
    expect(last.locator("th")).to_have_text(str(row.fault.round))
    expect(last).to_contain_text(f"never ended: {row.player.name} forfeited (crash.exit)")
    assert last.get_attribute("data-step") == str(row.step)
    last.locator("th a").click()
    _at_step(page, row.step)
    page.keyboard.press("End")
    expect(page.locator("[data-final] tbody tr").first).to_contain_text("winner: the last in play")


@pytest.mark.parametrize("width", [1280, 1024])
def test_the_standings_fit_desktop_widths(fault_site: Path, page: Page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url(fault_site / "t" / "three" / "index.html"))
    table = page.locator("table.standings")
    assert table.evaluate("t => t.scrollWidth <= t.parentElement.clientWidth + 1")
    faults = table.locator("td.faults").first
    box, wrap = faults.bounding_box(), table.locator("xpath=..").bounding_box()
    assert box is not None and wrap is not None and box["x"] + box["width"] <= wrap["x"] + wrap["width"] + 1
    expect(table.locator("td.pnext").first).to_be_visible()
    page.screenshot(path=str(SHOTS / f"standings-{width}.png"))
# -- whole-tournament search, head-to-head links, sortable standings ---------------------------------------------------

SEARCH_BOTS = ("planner", "greedy", "flaky", "random", "cautious", "bold", "lazy")


@pytest.fixture(scope="module")
def seven(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Path]:
    """A 7-bot, 3-seat tournament of 315 real engine matches with logs (tests/sitestore.py: every fifth match one
    seat crashes), built into a site: every pair met 45 times, spread over several pages of the list."""
    from arena.site.build import build_site
    from tests.sitestore import make_store

    directory = tmp_path_factory.mktemp("seven")
    store = make_store(directory, name="seven", bots=SEARCH_BOTS, players=3, repeats=3)
    build_site(store, directory / "site")
    return store, directory / "site"


def _shared(store: Store, *names: str) -> list[int]:
    return [m.id for m in store.matches(store.tournament("seven")["id"]) if set(names) <= set(m.names)]


def _crashed(store: Store, bot: str | None = None) -> list[int]:
    return [m.id for m in store.matches(store.tournament("seven")["id"]) if m.result is not None
            and any(p.fault is not None and bot in (None, p.name) for p in m.result.players)]


def _found_ids(page: Page) -> list[int]:
    return [int(text.lstrip("#")) for text in page.locator("[data-found] a.whole").all_inner_texts()]


@pytest.mark.parametrize("width", [1280, 390])
def test_search_lists_every_match_a_pair_played_and_keeps_it_in_the_address(seven: tuple[Store, Path], page: Page,
                                                                             width: int) -> None:
    store, out = seven
    page.set_viewport_size({"width": width, "height": 900})
    matches = out / "t" / "seven" / "matches"
    page.goto(url(matches / "index.html"))
    expect(page.locator("table.matches tr[data-bots]")).not_to_have_count(0)
    # The static first page does not hold all of them: the filter searches the whole tournament.
    shared = _shared(store, "flaky", "planner")
    assert len(shared) == 45
    on_page = [int(t.lstrip("#")) for t in page.locator("[data-listing] a.whole").all_inner_texts()]
    assert not set(shared) <= set(on_page)
    page.locator("[data-filter-bot]").select_option("flaky")
    page.locator("[data-filter-opponent]").select_option("planner")
    expect(page.locator("[data-filter-count]")).to_have_text("45 of 315 matches")
    assert _found_ids(page) == shared
    expect(page.locator("[data-listing]")).to_be_hidden()
    assert urlsplit(page.url).query == "bot=flaky&vs=planner"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shoot(page, f"search-pair-{width}")
    # The address round-trips: a reload, and another page of the list with the same query, show the same.
    page.reload()
    expect(page.locator("[data-filter-count]")).to_have_text("45 of 315 matches")
    expect(page.locator("[data-filter-opponent]")).to_have_value("planner")
    page.goto(url(matches / "page-3.html") + "?bot=flaky&vs=planner")
    expect(page.locator("[data-filter-count]")).to_have_text("45 of 315 matches")
    assert _found_ids(page) == shared
    # A result of the bot's: its wins against planner are the matches it placed first in.
    page.locator("[data-filter-result]").select_option("won")
    won = [m.id for m in store.matches(store.tournament("seven")["id"]) if m.id in shared and m.result is not None
           and m.result.players[m.names.index("flaky")].place == 1]
    expect(page.locator("[data-filter-count]")).to_have_text(f"{len(won)} of 315 matches")
    assert _found_ids(page) == won and urlsplit(page.url).query == "bot=flaky&vs=planner&result=won"
    # Clearing the filter brings the static page back, and the address loses its query.
    page.get_by_role("button", name="Clear").click()
    expect(page.locator("[data-listing]")).to_be_visible()
    expect(page.locator("[data-filter-count]")).to_have_text("")
    assert urlsplit(page.url).query == ""


@pytest.mark.parametrize("width", [1280, 390])
def test_search_by_fault_finds_the_crashes(seven: tuple[Store, Path], page: Page, width: int) -> None:
    store, out = seven
    page.set_viewport_size({"width": width, "height": 900})
    crashed = _crashed(store)
    page.goto(url(out / "t" / "seven" / "matches" / "index.html") + "?fault=crash")
    expect(page.locator("[data-filter-count]")).to_have_text(f"{len(crashed)} of 315 matches")
    assert _found_ids(page) == crashed and len(crashed) == 63
    expect(page.locator("[data-found] tr[data-bots]", has=page.locator("span.fault"))).to_have_count(len(crashed))
    # The exact reason, and one bot's crashes on its own page (of its matches only).
    page.locator("[data-filter-fault]").select_option("crash.exit")
    expect(page.locator("[data-filter-count]")).to_have_text(f"{len(crashed)} of 315 matches")
    mine = _crashed(store, "flaky")
    page.goto(url(out / "t" / "seven" / "bots" / "flaky" / "index.html") + "?fault=crash")
    expect(page.locator("[data-filter-count]")).to_have_text(f"{len(mine)} of 135 matches")
    assert _found_ids(page) == mine
    places = page.locator("[data-found] tbody td.num").first
    expect(places).to_have_text("3")  # a crash places last: the place column is flaky's
    shoot(page, f"search-bot-faults-{width}")


@pytest.mark.parametrize("width", [1280, 390])
def test_head_to_head_links_land_on_the_filtered_list(seven: tuple[Store, Path], page: Page, width: int) -> None:
    store, out = seven
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url(out / "t" / "seven" / "index.html"))
    # A cell opens the two bots side by side (the lower row id first: planner, then flaky), whose page links the
    # list of every match they shared.
    cell = page.get_by_role("row", name=re.compile(r"^flaky")).locator("a.h2hlink[href$='pairs/planner/flaky.html']")
    expect(cell).to_have_count(1)
    cell.click()
    page.wait_for_url("**/pairs/planner/flaky.html")
    page.get_by_role("link", name="every match they shared").first.click()
    page.wait_for_url("**/matches/index.html?bot=planner&vs=flaky")
    expect(page.locator("[data-filter-count]")).to_have_text("45 of 315 matches")
    assert _found_ids(page) == _shared(store, "flaky", "planner")
    # A bot's own head-to-head: the count of shared matches links to the same list.
    page.goto(url(out / "t" / "seven" / "bots" / "planner" / "index.html"))
    page.locator("table.opponents tr", has_text="flaky").get_by_role("link", name="45").click()
    page.wait_for_url("**/matches/index.html?bot=planner&vs=flaky")
    expect(page.locator("[data-filter-count]")).to_have_text("45 of 315 matches")


@pytest.mark.parametrize("width", [1280, 390])
def test_standings_columns_sort_by_click_and_keyboard(seven: tuple[Store, Path], page: Page, width: int) -> None:
    _, out = seven
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url(out / "t" / "seven" / "index.html"))
    table = page.locator("table.standings")
    heads = table.locator("thead th")
    expect(heads.first).to_have_attribute("aria-sort", "ascending")  # built in rank order

    def column(index: int) -> list[str]:
        return [t.strip() for t in table.locator(f"tbody tr > :nth-child({index + 1})").all_inner_texts()]

    bot = heads.nth(1).get_by_role("button")
    bot.click()
    expect(heads.nth(1)).to_have_attribute("aria-sort", "ascending")
    expect(heads.first).not_to_have_attribute("aria-sort", re.compile("."))
    assert column(1) == sorted(SEARCH_BOTS)
    bot.click()
    expect(heads.nth(1)).to_have_attribute("aria-sort", "descending")
    assert column(1) == sorted(SEARCH_BOTS, reverse=True)
    # By keyboard: the win % heading (a column shown at every width) is a button; Enter sorts, by number.
    at = [text.strip() for text in heads.all_inner_texts()].index(next(
        text.strip() for text in heads.all_inner_texts() if text.strip().startswith("Win %")))
    wins = heads.nth(at).get_by_role("button")
    wins.focus()
    page.keyboard.press("Enter")
    expect(heads.nth(at)).to_have_attribute("aria-sort", "ascending")
    values = [float(v.rstrip("%")) for v in column(at)]
    assert values == sorted(values) and len(set(values)) > 1
    page.keyboard.press("Space")
    expect(heads.nth(at)).to_have_attribute("aria-sort", "descending")
    assert [float(v.rstrip("%")) for v in column(at)] == sorted(values, reverse=True)
    shoot(page, f"standings-sorted-{width}")


def test_listing_without_javascript_is_paged_between_deals(seven: tuple[Store, Path], browser: Browser) -> None:
    store, out = seven
    context = browser.new_context(java_script_enabled=False, viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(url(out / "t" / "seven" / "matches" / "index.html") + "?bot=flaky&vs=planner")
    expect(page.locator("form[data-search]")).to_be_hidden()
    expect(page.locator("[data-listing] table.matches")).to_be_visible()
    groups = {m.id: m.idx // 3 for m in store.matches(store.tournament("seven")["id"])}
    seen: list[set[int]] = []
    pages = 0
    while True:
        pages += 1
        ids = [int(t.lstrip("#")) for t in page.locator("[data-listing] a.whole").all_inner_texts()]
        assert 0 < len(ids) <= 50
        seen.append({groups[i] for i in ids})
        following = page.locator("nav.pager a[rel=next]").first
        if following.count() == 0:
            break
        following.click()
    assert pages == 7 and sum(len(s) for s in seen) == 105  # 315 matches, 105 deals, each whole on one page
    context.close()


def test_an_old_bot_address_sends_chromium_on_to_the_page_now(tmp_path: Path, page: Page) -> None:
    from arena.site.build import build_site
    from tests.sitestore import as_before_addresses, make_store

    store = make_store(tmp_path, bots=("bob-late@1", "alice"), repeats=1)
    out = tmp_path / "site"
    build_site(store, out, workers=1)
    bob = next(int(bot["id"]) for bot in store.bots(store.tournament("t")["id"]) if bot["name"] == "bob-late@1")
    old = as_before_addresses(out, "t", "bob-late@1", bob)
    build_site(store, out, workers=1)  # the first build after the upgrade
    page.goto(url(out / old / "index.html"))
    page.wait_for_url(lambda now: unquote(now) == unquote(url(out / "t/t/bots/bob-late@1/index.html")))
    expect(page.locator("h1")).to_contain_text("bob-late@1")
