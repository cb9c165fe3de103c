"""The JSON Schemas in protocol/schema/ against what the referee really sends and what the sample bots reply.

Matches are played in-process (``arena.match.local.play_local``, the referee's own message builders) over rule variants
chosen so that every message type turns up, forfeits included. Every message is validated against the schema of its
type, and every reply against ``ready`` or ``move``. Each schema must also reject obviously wrong instances, or it
would pass anything. The transcripts double as a check of information hiding: no message before ``round_end`` shows
a seat a card it could not know.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from arena.game.rules import Rules
from arena.match.local import play_local
from tests.samplebots import PROTOCOL_DIR, load_sample_bot

SCHEMA_DIR = PROTOCOL_DIR / "schema"
TO_BOT = ["hello", "round_start", "turn", "played", "reshuffle", "forfeit", "round_end", "match_end"]
TO_REFEREE = ["ready", "move", "done"]
CARD = re.compile(r"[A23456789TJQK][CDHS]")

RandomBot = load_sample_bot("random").RandomBot
GreedyBot = load_sample_bot("greedy").GreedyBot


@cache
def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator(schema)


def errors(name: str, instance: object) -> list[str]:
    return [error.message for error in validator(name).iter_errors(instance)]


class CheatingBot(GreedyBot):  # type: ignore[misc,valid-type]
    """Plays like greedy, then sends one bad move at its ``at``-th turn, so that matches contain forfeits."""

    def __init__(self, at: int, move: dict[str, Any]) -> None:
        self.at = at
        self.move = move
        self.turns = 0

    def on_turn(self, message: dict[str, Any]) -> dict[str, Any]:
        self.turns += 1
        return self.move if self.turns == self.at else super().on_turn(message)


class Recorder:
    """Wraps a bot and keeps every (message, reply) pair it saw."""

    def __init__(self, bot: Any) -> None:
        self.bot = bot
        self.exchanges: list[tuple[dict[str, Any], dict[str, Any] | None]] = []

    def reply(self, message: dict[str, Any]) -> dict[str, Any] | None:
        answer = self.bot.reply(message)
        self.exchanges.append((message, answer))
        return answer  # type: ignore[no-any-return]


def _lineups() -> Iterator[tuple[str, list[Any], int, Rules]]:
    yield "heads-up", [GreedyBot(), RandomBot()], 1, Rules()
    yield "three", [GreedyBot(), RandomBot(), RandomBot()], 2, Rules()
    yield "eight", [RandomBot() if seat % 2 else GreedyBot() for seat in range(8)], 3, Rules(threshold=50)
    # declare_max=0: no declaration is ever legal, so rounds run to the turn cap and the deck runs out.
    yield "turn-cap", [GreedyBot(), RandomBot(), GreedyBot()], 4, Rules(declare_max=0, max_turns_per_player=25)
    yield "first-out", [GreedyBot(), GreedyBot(), RandomBot(), RandomBot()], 5, Rules(until="first_out")
    yield "variant-sets", [GreedyBot(), RandomBot(), RandomBot()], 6, Rules(
        two_pairs_mixed=False, sequence_lengths=(3, 4), sequence_same_suit=True, flush_size=4, tie_fails=False
    )
    yield "forfeits", [
        CheatingBot(2, {"type": "play", "discard": ["10H"], "take": "deck"}),
        GreedyBot(),
        CheatingBot(5, {"type": "declare"}),  # sometimes legal by then; the match is valid either way
        RandomBot(),
        CheatingBot(3, {"type": "pass"}),
    ], 7, Rules()
    yield "forfeits-to-the-end", [CheatingBot(1, {"type": "declare"}), RandomBot()], 8, Rules()


@cache
def played() -> list[tuple[str, list[Recorder], list[tuple[int, dict[str, Any]]]]]:
    """Every lineup's match, played once for all the tests of this module."""
    matches = []
    for name, bots, seed, rules in _lineups():
        recorders = [Recorder(bot) for bot in bots]
        transcript: list[tuple[int, dict[str, Any]]] = []
        play_local(recorders, seed, rules, transcript=transcript)
        matches.append((name, recorders, transcript))
    return matches


@pytest.mark.parametrize("name", TO_BOT + TO_REFEREE)
def test_schema_is_valid_draft_2020_12(name: str) -> None:
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_one_schema_per_message_type() -> None:
    assert sorted(path.name for path in SCHEMA_DIR.glob("*.json")) == sorted(
        f"{name}.schema.json" for name in TO_BOT + TO_REFEREE
    )


@pytest.mark.slow
def test_every_message_sent_matches_its_schema() -> None:
    seen: set[str] = set()
    for name, _, transcript in played():
        for seat, message in transcript:
            kind = message["type"]
            assert kind in TO_BOT, f"{name}: seat {seat} was sent an undocumented message type {kind!r}"
            assert errors(kind, message) == [], (name, seat, message)
            seen.add(kind + ("+drew" if "drew" in message else ""))
    # The lineups are chosen so that every type turns up; without this the test could pass vacuously.
    assert seen == {*TO_BOT, "played+drew"}


def test_every_sample_bot_reply_matches_its_schema() -> None:
    replies = 0
    for name, recorders, _ in played():
        for seat, recorder in enumerate(recorders):
            for message, answer in recorder.exchanges:
                if message["type"] == "hello":
                    assert errors("ready", answer) == [], (name, seat, answer)
                elif message["type"] == "turn" and not isinstance(recorder.bot, CheatingBot):
                    assert errors("move", answer) == [], (name, seat, answer)
                    replies += 1
                elif message["type"] == "match_end" and getattr(recorder.bot, "persistent", False):
                    assert errors("done", answer) == [], (name, seat, answer)
                elif message["type"] != "turn":
                    assert answer is None, f"{name}: seat {seat} answered a {message['type']} message: {answer}"
    assert replies > 1000


def test_the_cheaters_forfeited_and_the_others_did_not() -> None:
    for name, recorders, transcript in played():
        forfeited = sorted({message["seat"] for _, message in transcript if message["type"] == "forfeit"})
        cheaters = [seat for seat, r in enumerate(recorders) if isinstance(r.bot, CheatingBot) and r.bot.turns >= r.bot.at]
        assert set(forfeited) <= set(cheaters), name
        assert set(cheaters) - set(forfeited) <= {2}, f"{name}: only the declaring cheater may have got away with it"


def _cards_in(value: object) -> Iterator[str]:
    if isinstance(value, str) and CARD.fullmatch(value):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _cards_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _cards_in(item)


def test_no_message_shows_a_seat_a_card_it_could_not_know() -> None:
    for name, recorders, transcript in played():
        known: list[set[str]] = [set() for _ in recorders]
        for seat, message in transcript:
            kind = message["type"]
            mine = known[seat]
            if kind == "round_start":
                mine.clear()
                mine.update(message["hand"], message["floor"])
            elif kind == "played":
                mine.update(message["discard"], [message["take"]] if message["take"] != "deck" else [])
                if "drew" in message:
                    assert message["seat"] == seat, f"{name}: seat {seat} was told another seat's draw"
                    mine.add(message["drew"])
            elif kind in ("round_end", "match_end"):
                continue  # everything may be revealed now
            leaked = set(_cards_in(message)) - mine
            assert not leaked, f"{name}: seat {seat} was shown {sorted(leaked)} in {message}"


def _real(kind: str) -> dict[str, Any]:
    for _, _, transcript in played():
        for _, message in transcript:
            if message["type"] == kind:
                return message
    raise AssertionError(f"no {kind} message in the transcripts")


@pytest.mark.parametrize("name", TO_BOT)
def test_schemas_allow_fields_from_later_versions(name: str) -> None:
    assert errors(name, _real(name) | {"added_in_v1_5": [1, "two"]}) == []


def test_move_schema_allows_extra_fields() -> None:
    assert errors("move", {"type": "play", "discard": ["TH"], "take": "deck", "note": "why not"}) == []
    assert errors("move", {"type": "declare", "confidence": 0.9}) == []
    assert errors("ready", {"type": "ready", "bot_version": "1.2"}) == []


def _without(message: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != key}


def _wrong_instances() -> Iterator[tuple[str, str, Callable[[], Any]]]:
    """(schema, what is wrong, how to make the instance) for instances that each schema must reject, most built from
    real ones: made when the test runs, not when it is collected (the real ones are 8 matches to play)."""
    for kind in TO_BOT:
        yield kind, "missing type", lambda kind=kind: _without(_real(kind), "type")
        yield kind, "another type", lambda kind=kind: _real(kind) | {"type": "something_else"}
        yield kind, "not an object", lambda kind=kind: [_real(kind)]
    yield "hello", "missing seat", lambda: _without(_real("hello"), "seat")
    yield "hello", "protocol 2", lambda: _real("hello") | {"protocol": 2}
    yield "hello", "rules without threshold", lambda: _real("hello") | {
        "rules": _without(_real("hello")["rules"], "threshold")}
    yield "hello", "limits as strings", lambda: _real("hello") | {
        "limits": {"hello_ms": "10s", "move_ms": 1000, "bank_ms": 0}}
    yield "round_start", "card 10H", lambda: _real("round_start") | {"hand": ["10H", "2C", "3C", "4C", "5C"]}
    yield "round_start", "missing starter", lambda: _without(_real("round_start"), "starter")
    yield "turn", "card 10H", lambda: _real("turn") | {"hand": ["10H"]}
    yield "turn", "lower-case card", lambda: _real("turn") | {"floor": ["th"]}
    yield "turn", "empty floor", lambda: _real("turn") | {"floor": []}
    yield "turn", "missing time_left_ms", lambda: _without(_real("turn"), "time_left_ms")
    yield "turn", "may_declare as a string", lambda: _real("turn") | {"may_declare": "yes"}
    yield "played", "take 10H", lambda: _real("played") | {"take": "10H"}
    yield "played", "drew after a floor take", lambda: _real("played") | {"take": "AS", "drew": "2C"}
    yield "played", "empty discard", lambda: _real("played") | {"discard": []}
    yield "reshuffle", "negative deck", lambda: {"type": "reshuffle", "deck_size": -1}
    yield "reshuffle", "missing deck_size", lambda: {"type": "reshuffle"}
    yield "forfeit", "seat as a string", lambda: {"type": "forfeit", "seat": "2"}
    yield "round_end", "unknown reason", lambda: _real("round_end") | {"reason": "won"}
    yield "round_end", "declared without a declarer", lambda: _real("round_end") | {
        "reason": "declared", "declarer": None}
    yield "round_end", "turn cap with a declarer", lambda: _real("round_end") | {"reason": "turn_cap", "declarer": 0}
    yield "round_end", "missing points", lambda: _without(_real("round_end"), "points")
    yield "match_end", "unknown termination", lambda: _real("match_end") | {"termination": "timeout"}
    yield "match_end", "place 0", lambda: _real("match_end") | {"places": [0] * len(_real("match_end")["places"])}
    yield "match_end", "missing places", lambda: _without(_real("match_end"), "places")
    yield "ready", "missing type", dict
    yield "ready", "ok", lambda: {"type": "ok"}
    yield "move", "card 10H", lambda: {"type": "play", "discard": ["10H"], "take": "deck"}
    yield "move", "take 10H", lambda: {"type": "play", "discard": ["TH"], "take": "10H"}
    yield "move", "missing take", lambda: {"type": "play", "discard": ["TH"]}
    yield "move", "missing discard", lambda: {"type": "play", "take": "deck"}
    yield "move", "empty discard", lambda: {"type": "play", "discard": [], "take": "deck"}
    yield "move", "a card twice", lambda: {"type": "play", "discard": ["TH", "TH"], "take": "deck"}
    yield "move", "discard as a string", lambda: {"type": "play", "discard": "TH", "take": "deck"}
    yield "move", "pass", lambda: {"type": "pass"}
    yield "move", "missing type", lambda: {"discard": ["TH"], "take": "deck"}
    yield "move", "a card object", lambda: {"type": "play", "discard": [{"rank": 10, "suit": "H"}], "take": "deck"}


@pytest.mark.parametrize(
    "schema,what,make", [pytest.param(*case, id=f"{case[0]}: {case[1]}") for case in _wrong_instances()]
)
def test_schema_rejects_wrong_instances(schema: str, what: str, make: Callable[[], Any]) -> None:
    instance = make()
    assert errors(schema, instance), f"{schema} schema accepted an instance with {what}: {instance}"
