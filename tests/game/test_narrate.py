"""The one narrator (arena/game/narrate.py): a line per engine event, seats told apart, faults by reason code; and
``arena replay`` of a log in the first format, narrated and verified."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from click.testing import CliRunner

from arena.cli.main import main
from arena.game.cards import hand_total
from arena.game.engine import Match
from arena.game.narrate import narrate
from arena.game.results import Fault, Reason
from arena.game.rules import Rules
from arena.match.matchlog import describe, load

NAMES = ["greedy", "greedy", "random"]  # two entrants of one name: only the seat tells them apart


def played(seed: int = 11, forfeit_round: int = 2) -> tuple[Match, dict[int, int]]:
    """A match of random legal moves in which seat 2 forfeits, and the hand total after each play (by event)."""
    rng = random.Random(seed)
    match = Match(3, seed, Rules(threshold=40))
    totals = {}
    while match.outcome is None:
        if match.round == forfeit_round and match.in_play(2):
            match.forfeit(2, "crash.exit")
            continue
        seat = match.turn
        match.apply(rng.choice(list(match.legal_moves())))
        if match.events[-1]["type"] == "play":  # (a play that ends the round is followed by its round_end)
            totals[len(match.events) - 1] = hand_total(match.hands[seat])
    return match, totals


def test_one_line_per_event_in_order() -> None:
    match, _ = played()
    lines = narrate(match.events, NAMES)
    assert [line.kind for line in lines] == [event["type"] for event in match.events]
    rounds = [line.round for line in lines]
    assert rounds == sorted(rounds) and rounds[-1] == match.round
    assert lines[0].text == "The match starts: 3 players, elimination above 40 points."
    assert lines[-1].text.startswith("Match over (")


def test_plays_name_the_seat_the_cards_and_the_hand_total_after() -> None:
    match, totals = played()
    lines = narrate(match.events, NAMES)
    assert len(totals) > 10
    for index, total in totals.items():
        event = match.events[index]
        text = lines[index].text
        assert text.startswith(f"{NAMES[event['seat']]} (seat {event['seat']}) throws {' '.join(event['discard'])} "
                               "and takes ")
        assert text.endswith(f"; hand total now {total}.")
    assert any("greedy (seat 0)" in line.text for line in lines) and any("greedy (seat 1)" in line.text
                                                                      for line in lines)


def test_a_forfeit_says_its_reason_code_and_detail() -> None:
    match, _ = played()
    fault = Fault(Reason.CRASH_EXIT, "exited with status 1", 2, exit_status=1)
    with_fault = [line.text for line in narrate(match.events, NAMES, {2: fault}) if line.kind == "forfeit"]
    assert with_fault == ["random (seat 2) forfeits (crash.exit: exited with status 1)."]
    without = [line.text for line in narrate(match.events, NAMES) if line.kind == "forfeit"]
    assert without == ["random (seat 2) forfeits (crash.exit)."]  # the engine event's own reason


def test_cards_are_written_the_way_the_medium_wants() -> None:
    match, _ = played()
    shown = narrate(match.events, NAMES, card=lambda code: f"<{code}>")
    deal = next(line for line in shown if line.kind == "round_start")
    assert f"the floor shows <{match.events[1]['floor'][0]}>." in deal.text
    assert len(deal.hands) == 3 and all("<" in hand for hand in deal.hands)


def test_declarations_and_round_ends() -> None:
    events = [
        {"type": "match_start", "players": 2, "seed": 1, "rules": {"threshold": 30}},
        {"type": "round_start", "round": 1, "starter": 0, "hands": [["AS", "2C"], ["KD", "QH"]], "floor": ["5H"],
         "scores": [0, 0], "live": [0, 1]},
        {"type": "declare", "seat": 0},
        {"type": "round_end", "round": 1, "reason": "declared", "declarer": 0, "hands": [["AS", "2C"], ["KD", "QH"]],
         "totals": [3, 20], "points": [0, 17], "scores": [0, 17], "eliminated": []},
        {"type": "something_new"},
    ]
    lines = [line.text for line in narrate(events, ["a", "b"])]
    assert lines[2] == "a (seat 0) declares with a total of 3."
    assert lines[3] == "Round 1 ends: a (seat 0) declared and was lowest. Points: a 3, declarer: +0, b 20 - 3 = +17."
    assert lines[4] == "something_new"  # an unknown event keeps its place


def test_the_end_says_how_the_match_ended_and_a_newer_arenas_ending_is_other() -> None:
    end = {"type": "match_end", "places": [2, 1], "scores": [60, 12], "termination": "max_rounds"}
    assert narrate([end], ["a", "b"])[0].text == "Match over (max rounds): 1. b 12, 2. a 60."
    # read as the store reads it (termination_of), as a newer arena's fault code is read as its kind's generic one
    newer = narrate([end | {"termination": "agreed_draw"}], ["a", "b"])[0].text
    assert newer == "Match over (other): 1. b 12, 2. a 60."


def write_format_1_log(path: Path, match: Match) -> None:
    """A log as the first format wrote it: faults with a kind and no reason code, forfeit reasons "kind: detail"."""
    records = [{"t": "header", "format": 1, "seed": match.seed, "players": 3, "rules": match.rules.to_dict(),
                "limits": {}, "sandbox": "process", "sandbox_limits": {},
                "bots": [{"name": name} for name in NAMES]},
               {"t": "send", "seat": 0, "at": 0, "msg": {"type": "hello"}},
               {"t": "recv", "seat": 0, "at": 1, "line": '{"type":"ready"}'}]
    for event in match.events:
        if event["type"] == "forfeit":
            records.append({"t": "fault", "seat": 2, "kind": "crash", "detail": "exited with status 1", "round": 2,
                            "stderr_tail": "boom"})
        records.append({"t": "event", "event": event})
    assert match.outcome is not None
    records.append({"t": "result", "result": {"players": [
        {"seat": s, "place": match.outcome.places[s], "score": match.outcome.scores[s],
         "fault": {"kind": "crash", "detail": "exited with status 1", "round": 2, "stderr_tail": "boom"}
         if s == 2 else None} for s in range(3)]}})
    path.write_bytes(gzip.compress(b"".join(json.dumps(r).encode() + b"\n" for r in records)))


def test_a_format_1_log_still_replays_and_verifies(tmp_path: Path) -> None:
    match, _ = played()
    # The first format's engine wrote the forfeit reason as "kind: detail"; replaying must not care.
    for event in match.events:
        if event["type"] == "forfeit":
            event["reason"] = "crash: exited with status 1"
    path = tmp_path / "old.jsonl.gz"
    write_format_1_log(path, match)
    log = load(path)
    assert log.messages == 2 and log.faults == {2: Fault(Reason.CRASH_OTHER, "exited with status 1", 2)}
    text = list(describe(log))
    assert "random (seat 2) forfeits (crash.other: exited with status 1)." in [line.strip() for line in text]
    runner = CliRunner()
    shown = runner.invoke(main, ["replay", str(path)])
    assert shown.exit_code == 0 and "Round 1 is dealt. " in shown.stdout
    verified = runner.invoke(main, ["replay", str(path), "--verify", "--json"])
    assert verified.exit_code == 0, verified.output
    assert json.loads(verified.stdout)["ok"] is True


def test_an_unknown_log_format_is_refused_naming_the_versions(tmp_path: Path) -> None:
    path = tmp_path / "future.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"t":"header","format":3}\n'))
    result = CliRunner().invoke(main, ["replay", str(path)])
    assert result.exit_code == 2 and "format 1 or 2" in result.stderr and "future.jsonl.gz" in result.stderr



def test_round_end_arithmetic_adds_up_to_the_points_scored() -> None:
    """Every round end of real matches (declared, failed, turn cap) writes a sum whose result is the seat's points,
    and whose terms are the totals of the event (a failed declarer: the penalty plus its total minus the lowest)."""
    seen = set()
    for seed in range(12):
        rng = random.Random(seed)
        match = Match(3, seed, Rules(threshold=60, penalty=25, max_turns_per_player=4))
        while match.outcome is None:
            match.apply(rng.choice(list(match.legal_moves())))
        lines = narrate(match.events, NAMES)
        for event, line in zip(match.events, lines):
            if event["type"] != "round_end":
                continue
            seen.add(event["reason"])
            for seat, hand in enumerate(event["hands"]):
                if not hand:
                    continue
                total, gained = event["totals"][seat], event["points"][seat]
                if event["reason"] == "failed_declaration" and seat == event["declarer"]:
                    lowest = min(t for s, (t, h) in enumerate(zip(event["totals"], event["hands"])) if h and s != seat)
                    assert f"failed declaration: 25 + ({total} - {lowest}) = +{gained}" in line.text
                    assert gained == 25 + total - lowest
                elif event["reason"] == "declared" and seat != event["declarer"]:
                    own = event["totals"][event["declarer"]]
                    assert f"{total} - {own} = +{gained}" in line.text and gained == total - own
                elif event["reason"] == "turn_cap":
                    assert f"{total} = +{gained}" in line.text
    assert seen == {"declared", "failed_declaration", "turn_cap"}, seen
