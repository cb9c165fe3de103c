"""The replay's card table (site/assets/cardtable.js) in Chromium, against the event log: at every step of three
matches (one with a forfeit) each seat's hand, score and note, the floor and the deck's count are what the log's
events make them (read with :mod:`arena.match.matchlog`), the deck's count also what the engine's deck holds after
each move the log records; the step's address is the same as without the table; a move animates unless the reader
asked for reduced motion; axe finds no serious or critical violation on the match page with the table; the table of
hands is still what a screen reader reads, and shows at the view button's press.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arena.game.engine import Forfeit, Match, actions_from_events, deal_version_of
from arena.game.rules import Rules
from arena.match import matchlog
from arena.site import urls
from arena.site.build import build_site
from arena.site.replay import card_text
from arena.store import Store
from tests import axecheck
from tests.sitestore import fill_store
from tests.support.browser import Browser, browser_fixture, expect, opened, url  # noqa: F401 - fixtures, by their names

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Path]:
    directory = tmp_path_factory.mktemp("cardtable")
    store = Store(directory / "arena.db")
    fill_store(store, name="table", bots=("planner", "greedy", "flaky", "random"), players=3, repeats=1, think=True)
    build_site(store, directory / "site", workers=1)
    return store, directory / "site"


def expected_steps(log: matchlog.LoadedLog) -> list[dict[str, Any]]:
    """What the card table shows at each step (one an event), made from the log's events: the hands (a forfeited
    seat's shown at its forfeit, put away from the next step on), the floor, the deck's count and the scores."""
    players = int(log.header["players"])
    hands: list[list[str]] = [[] for _ in range(players)]
    floor: list[str] = []
    deck: int | None = None
    scores = [0] * players
    steps = []
    put_away: int | None = None
    for event in log.events:
        kind = event["type"]
        if put_away is not None:
            hands[put_away], put_away = [], None
        if kind == "round_start":
            hands = [list(hand) for hand in event["hands"]]
            floor = list(event["floor"])
            scores = list(event["scores"])
            deck = 52 - sum(map(len, hands)) - len(floor)
        elif kind == "play":
            hand = hands[event["seat"]]
            for card in event["discard"]:
                hand.remove(card)
            if event["take"] == "deck":
                assert deck is not None
                deck -= 1
                hand.append(event["drew"])
            else:
                hand.append(event["take"])
            floor = list(event["discard"])
        elif kind == "reshuffle":
            deck = event["deck_size"]
        elif kind == "forfeit":
            put_away = event["seat"]
        elif kind == "round_end":
            hands = [list(hand) for hand in event["hands"]]
            scores = list(event["scores"])
        elif kind == "match_end":
            scores = list(event["scores"])
        steps.append({"hands": [sorted(card_text(c) for c in hand) for hand in hands],
                      "floor": sorted(card_text(c) for c in floor), "deck": "" if deck is None else str(deck),
                      "scores": [str(score) for score in scores]})
    return steps


def engine_decks(log: matchlog.LoadedLog) -> dict[int, int]:
    """By step (0-based), the engine's deck after each recorded move that made one event (a play within a round):
    the log's moves replayed on the log's seed and rules."""
    match = Match(int(log.header["players"]), int(log.header["seed"]), Rules.from_dict(log.header["rules"]),
                  deal_version_of(log.events))
    decks = {}
    for seat, action in actions_from_events(log.events):
        before = len(match.events)
        if isinstance(action, Forfeit):
            match.forfeit(seat, action.reason)
        else:
            match.apply(action)
        if len(match.events) == before + 1 and match.events[-1]["type"] == "play":
            decks[before] = len(match.deck)
    return decks


# Every step's card table, walked in the page with the replay's own keys (→), from the first: the seats' cards,
# scores and notes, the floor and the deck as a sighted reader sees them.
WALK = """() => {
  const text = el => el.textContent;
  const seen = [];
  document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Home', bubbles: true}));
  for (;;) {
    const seats = [...document.querySelectorAll('.cardtable .tableseat')];
    seen.push({step: location.hash,
               hands: seats.map(s => [...s.querySelectorAll('.seathand .card')].map(text).sort()),
               scores: seats.map(s => text(s.querySelector('.seatscore'))),
               notes: seats.map(s => text(s.querySelector('.seatnote'))),
               floor: [...document.querySelectorAll('.cardtable .floorpile .card')].map(text).sort(),
               deck: document.querySelector('.cardtable .deckpile').style.visibility === 'hidden' ? ''
                 : text(document.querySelector('.cardtable .deckpile .back'))});
    if (document.querySelector('[data-go=next]').disabled) return seen;
    document.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true}));
  }
}"""


def test_the_card_table_agrees_with_the_event_log_at_every_step(built: tuple[Store, Path], browser: Browser) -> None:
    store, site = built
    matches = store.matches(store.tournament("table")["id"])
    faulted = next(m for m in matches if m.result and any(p.fault for p in m.result.players))
    longest = sorted((m for m in matches if m is not faulted and m.result), key=lambda m: -m.result.turns)[:2]
    checked = 0
    with opened(browser, 1280) as page:
        for match in (faulted, *longest):
            log = matchlog.load(Path(str(match.log_path)))
            expected = expected_steps(log)
            page.goto(url(site / urls.match_href("table", match.id)))
            expect(page.locator(".cardtable .tableseat")).to_have_count(len(log.header["bots"]))
            seen = page.evaluate(WALK)
            assert len(seen) == len(expected) == len(log.events)
            for index, (shown, wanted) in enumerate(zip(seen, expected, strict=True)):
                assert shown["step"] == f"#step={index + 1}"  # the same addresses as before the table
                got = {key: shown[key] for key in wanted}
                assert got == wanted, (match.id, index + 1, log.events[index])
                for seat, hand in enumerate(wanted["hands"]):
                    if hand:  # a hand's total is its cards' (the table of hands says the same)
                        assert shown["notes"][seat].startswith("total "), shown["notes"]
            decks = engine_decks(log)
            assert decks and all(seen[step]["deck"] == str(deck) for step, deck in decks.items())
            checked += len(seen)
    assert checked > 200


def test_moves_animate_unless_reduced_motion_and_axe_finds_nothing(built: tuple[Store, Path],
                                                                   browser: Browser) -> None:
    store, site = built
    match = store.matches(store.tournament("table")["id"])[0]
    address = url(site / urls.match_href("table", match.id))
    animations = "() => document.getAnimations().filter(a => a.effect.target.closest('.cardtable')).length"
    for reduced in (False, True):
        context = browser.new_context(viewport={"width": 1280, "height": 900},
                                      reduced_motion="reduce" if reduced else "no-preference")
        page = context.new_page()
        page.goto(address + "#step=3")
        expect(page.locator("[data-counter]")).to_contain_text("Step 3 /")
        assert page.evaluate(animations) == 0  # opening at a step moves nothing
        page.keyboard.press("ArrowRight")  # a play: the throw goes to the floor, the card taken to the hand
        expect(page.locator("[data-counter]")).to_contain_text("Step 4 /")
        moving = page.evaluate(animations)
        assert (moving == 0) if reduced else (moving >= 2), moving
        context.close()
    for width in (390, 1280):
        # Not opened(): axe asks for the style sheet, which a page from disk may not fetch (a console error).
        context = browser.new_context(viewport={"width": width, "height": 844}, is_mobile=width < 1000)
        page = context.new_page()
        page.goto(address + "#step=5")
        expect(page.locator(".cardtable")).to_be_visible()
        assert axecheck.problems(page) == []
        # The table of hands is what a screen reader reads: in the accessibility tree, the card table not.
        hands = page.get_by_role("table", name="Every hand at this step")
        expect(hands).to_have_count(1)
        assert page.locator(".cardtable").get_attribute("aria-hidden") == "true"
        # The view button swaps the pictures for sighted readers.
        page.get_by_role("button", name="Table of hands").click()
        expect(page.locator(".cardtable")).to_be_hidden()
        expect(page.locator("table.hands")).to_be_visible()
        assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")
        context.close()


def test_the_bots_eye_view_shows_one_seats_hand_at_every_step(built: tuple[Store, Path], browser: Browser) -> None:
    """Watching as one seat: its hand face up, every other hand face down as one card back with its count (and the
    note says how many cards, not their total), until a round's end reveals them all; at the same step addresses.
    Then back to the spectator's view, every hand up. No width from 320 to 1280 px scrolls sideways with it."""
    store, site = built
    match = max((m for m in store.matches(store.tournament("table")["id"]) if m.result),
                key=lambda m: m.result.turns if m.result else 0)
    log = matchlog.load(Path(str(match.log_path)))
    expected = expected_steps(log)
    address = url(site / urls.match_href("table", match.id))
    with opened(browser, 1280) as page:
        page.goto(address)
        eye = page.get_by_label("Hands seen by")
        for seat in range(len(log.header["bots"])):
            eye.select_option(str(seat))
            seen = page.evaluate(WALK)
            assert len(seen) == len(expected)
            hidden = 0
            for index, (shown, wanted) in enumerate(zip(seen, expected, strict=True)):
                assert shown["step"] == f"#step={index + 1}"
                revealed = log.events[index]["type"] in ("round_end", "match_end")
                for other, hand in enumerate(wanted["hands"]):
                    if other == seat or revealed or not hand:
                        assert shown["hands"][other] == hand, (index + 1, other)
                    else:
                        assert shown["hands"][other] == [str(len(hand))], (index + 1, other)
                        assert shown["notes"][other].startswith(f"{len(hand)} card"), shown["notes"][other]
                        hidden += 1
            assert hidden > 50
        eye.select_option("")
        assert page.evaluate(WALK) == page.evaluate(WALK) and all(
            shown["hands"] == wanted["hands"] for shown, wanted in zip(page.evaluate(WALK), expected, strict=True))
    for width in (320, 390, 768, 1280):
        with opened(browser, width) as page:
            page.goto(address + "#step=5")
            page.get_by_label("Hands seen by").select_option("1")
            expect(page.locator(".cardtable .tableseat.hidden")).not_to_have_count(0)
            assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth"), width
            # the chooser does not sit on the view button
            boxes = [page.locator(selector).bounding_box() for selector in (".felt .eye", ".felt .view")]
            assert boxes[0] and boxes[1] and boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"], (width, boxes)
