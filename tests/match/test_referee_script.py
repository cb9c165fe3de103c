"""The referee and its channels driven by scripted bots (tests/scriptedbot.py): every state and fault, no processes.

The real-process tests (test_referee.py, test_sandbox.py...) show the same faults against real programs; these pin
down each one deterministically, with the exact reason, line and structured details.
"""

from __future__ import annotations

import gzip
import json
import random
import threading
from pathlib import Path

import pytest

from arena.game.engine import Match
from arena.game.results import MatchResult, Reason
from arena.game.rules import Rules
from arena.match import protocol
from arena.match.channel import TRANSITIONS, BotChannel, Caps, Poller, State
from arena.match.matchlog import load, verify
from arena.match.protocol import Limits
from arena.match.referee import Referee, seat_names
from tests.scriptedbot import READY, ScriptedBot, ScriptedSandbox, Step, spec

QUICK = Limits(hello_ms=2000, move_ms=300, bank_ms=0)
SHORT = Rules(threshold=30)
PLAY = b'{"type":"play","discard":["%s"],"take":"deck"}\n'


def referee(*bots: ScriptedBot, limits: Limits = QUICK, caps: Caps = Caps(), log: Path | None = None,
            names: list[str] | None = None) -> Referee:
    specs = [spec(name) for name in names or [f"bot{seat}" for seat in range(len(bots))]]
    return Referee(specs, 7, ScriptedSandbox(*bots), SHORT, limits, log_path=log, caps=caps)


def play(*bots: ScriptedBot, **options: object) -> MatchResult:
    return referee(*bots, **options).run()  # type: ignore[arg-type]


def first_turn(seats: int) -> int:
    """Which seat moves first in these matches (seed 7)."""
    return Match(seats, 7, SHORT).turn


def fault_of(result: MatchResult, seat: int) -> tuple[Reason, str | None]:
    fault = result.players[seat].fault
    assert fault is not None, result.to_dict()
    return fault.reason, fault.line


# -- whole matches --------------------------------------------------------------------------------------------


def test_correct_bots_play_a_whole_match_that_replays(tmp_path):
    bots = [ScriptedBot(), ScriptedBot(), ScriptedBot()]
    ref = referee(*bots, log=tmp_path / "m.jsonl.gz")
    result = ref.run()
    assert all(p.fault is None for p in result.players)
    assert result.turns > 10 and verify(load(tmp_path / "m.jsonl.gz")) == []
    assert [c.state for c in ref.channels] == [State.CLOSED] * 3
    for seat, bot in enumerate(bots):
        kinds = [m["type"] for m in bot.received]
        assert kinds[0] == "hello" and kinds[-1] == "match_end" and bot.received[0]["seat"] == seat
        # every turn of this seat, and only those, reached it
        assert kinds.count("turn") == result.players[seat].stats.turns


def test_a_bot_entered_twice_has_a_distinct_name_everywhere(tmp_path):
    bots = [ScriptedBot(), ScriptedBot(), ScriptedBot()]
    result = play(*bots, names=["greedy", "random", "greedy"], log=tmp_path / "m.jsonl.gz")
    assert [p.name for p in result.players] == ["greedy", "random", "greedy-2"]
    assert bots[0].received[0]["players"] == ["greedy", "random", "greedy-2"]
    assert [b["name"] for b in load(tmp_path / "m.jsonl.gz").header["bots"]] == ["greedy", "random", "greedy-2"]


def test_seat_names():
    assert seat_names(["a", "b"]) == ["a", "b"]
    assert seat_names(["a", "a", "a"]) == ["a", "a-2", "a-3"]
    assert seat_names(["a", "a", "a-2"]) == ["a", "a-3", "a-2"]  # a real "a-2" keeps its name
    assert len(set(seat_names(["x"] * 8))) == 8


# -- the hello ------------------------------------------------------------------------------------------------


def test_no_ready_in_time_is_a_hello_timeout_with_the_partial_line():
    result = play(ScriptedBot(), ScriptedBot(Step("hello", b'{"type":"rea')), ScriptedBot(),
                  limits=Limits(hello_ms=300, move_ms=300, bank_ms=0))
    assert fault_of(result, 1) == (Reason.TIMEOUT_HELLO, '{"type":"rea')
    assert result.players[1].place == 3 and result.players[0].fault is None


def test_a_wrong_ready_is_invalid():
    result = play(ScriptedBot(), ScriptedBot(Step("hello", b'{"type":"steady"}\n')))
    assert fault_of(result, 1) == (Reason.INVALID_READY, '{"type":"steady"}')


def finished_within_a_minute(*bots: ScriptedBot, **options: object) -> MatchResult:
    """The match's result; it fails when the match takes a minute (its limits are ten: somebody waited them out)."""
    result: list[MatchResult] = []
    worker = threading.Thread(target=lambda: result.append(play(*bots, **options)), daemon=True)
    worker.start()
    worker.join(60)
    assert result, "the referee waited out a limit after the match was over"
    return result[0]


def test_a_bot_that_exits_at_once_is_a_crash_at_once_with_two_seats():
    # The survivor's ready arrives after the forfeit has ended the match: nobody waits for it any more.
    bots = ScriptedBot(), ScriptedBot(Step("hello", b"", "exit", status=3))
    result = finished_within_a_minute(*bots, limits=Limits(hello_ms=600_000))
    fault = result.players[1].fault
    assert fault is not None and fault.reason == Reason.CRASH_EXIT and fault.exit_status == 3
    assert result.players[0].fault is None and result.termination == "forfeits"


def test_a_forfeit_that_ends_the_match_ends_the_wait_for_a_move():
    mover = first_turn(2)
    bots = [ScriptedBot(), ScriptedBot()]
    bots[mover] = ScriptedBot(Step("hello", READY), Step("round_start"), Step("turn", b""))  # thinks for ever
    bots[1 - mover] = ScriptedBot(Step("hello", READY), Step("round_start", b"", "exit", status=0))
    result = finished_within_a_minute(*bots, limits=Limits(move_ms=600_000), caps=Caps(batch_bytes=0))
    assert result.players[mover].fault is None and result.players[mover].place == 1
    fault = result.players[1 - mover].fault
    assert fault is not None and fault.reason == Reason.CRASH_EXIT
    assert bots[mover].received[-1]["type"] == "match_end"


# -- turns ----------------------------------------------------------------------------------------------------


def scripted_first_mover(*steps: Step, seats: int = 2) -> tuple[list[ScriptedBot], int]:
    """Bots for a match whose first mover follows ``steps`` after its hello and round_start."""
    mover = first_turn(seats)
    bots = [ScriptedBot() for _ in range(seats)]
    bots[mover] = ScriptedBot(Step("hello", READY), Step("round_start"), *steps)
    return bots, mover


def test_a_line_before_it_was_asked_for_is_unsolicited():
    # Unbatched, so that round_start reaches the seat that does not move first on its own, while it is idle.
    idle = 1 - first_turn(2)
    bots = [ScriptedBot(), ScriptedBot()]
    bots[idle] = ScriptedBot(Step("hello", READY), Step("round_start", b'{"type":"declare"}\n'))
    result = play(*bots, caps=Caps(batch_bytes=0))
    assert fault_of(result, idle) == (Reason.INVALID_UNSOLICITED, '{"type":"declare"}')


def test_two_readies_fault_the_second():
    result = play(ScriptedBot(), ScriptedBot(Step("hello", READY + READY)))
    assert fault_of(result, 1) == (Reason.INVALID_UNSOLICITED, '{"type":"ready"}')


def test_two_replies_to_one_turn_fault_the_second():
    bots, mover = scripted_first_mover(Step("turn", PLAY % b"KS" + b'{"type":"declare"}\n'))
    result = play(*bots)
    assert fault_of(result, mover) == (Reason.INVALID_UNSOLICITED, '{"type":"declare"}')


def test_debug_text_then_a_move_reports_the_debug_text():
    bots, mover = scripted_first_mover(Step("turn", b"thinking...\n" + PLAY % b"KS"))
    result = play(*bots)
    assert fault_of(result, mover) == (Reason.INVALID_NOT_JSON, "thinking...")


def test_a_partial_line_at_the_deadline_is_a_move_timeout_that_shows_it():
    bots, mover = scripted_first_mover(Step("turn", b'{"type":"pla'))
    result = play(*bots)
    reason, line = fault_of(result, mover)
    assert (reason, line) == (Reason.TIMEOUT_MOVE, '{"type":"pla')
    assert "no move within 300 ms" in result.players[mover].fault.detail  # type: ignore[union-attr]


def test_eof_in_the_middle_of_a_line_while_running_is_a_closed_stdout():
    bots, mover = scripted_first_mover(Step("turn", b'{"type"', "close_stdout"))
    result = play(*bots)
    fault = result.players[mover].fault
    assert fault is not None and fault.reason == Reason.CRASH_CLOSED_STDOUT
    assert fault.detail == "closed its stdout in the middle of a line (7 bytes) while still running"
    assert fault.exit_status is None


def test_an_exit_mid_match_keeps_the_status_and_stderr():
    bots, mover = scripted_first_mover(Step("turn", b"", "exit", status=2))
    bots[mover].stderr(b"Traceback: boom\n")
    result = play(*bots)
    fault = result.players[mover].fault
    assert fault is not None and (fault.reason, fault.exit_status, fault.detail) == (
        Reason.CRASH_EXIT, 2, "exited with status 2")
    assert result.players[mover].stderr_tail == "Traceback: boom\n"


def test_a_kill_by_a_limit_is_a_limit_fault_with_the_signal():
    bots, mover = scripted_first_mover(Step("turn", b"", "exit", signal=9, limit="memory"))
    fault = play(*bots).players[mover].fault
    assert fault is not None and (fault.reason, fault.signal, fault.exit_status) == (Reason.LIMIT_MEMORY, 9, None)


def test_a_closed_stdin_is_a_crash():
    bots, mover = scripted_first_mover(Step("turn", None, "close_stdin"))
    result = play(*bots, limits=Limits(hello_ms=2000, move_ms=300, bank_ms=0))
    fault = result.players[mover].fault
    assert fault is not None and fault.reason == Reason.CRASH_CLOSED_STDIN
    assert fault.detail == "closed its stdin while still running"


@pytest.mark.parametrize("newline", [b"\n", b""])
def test_an_oversized_line_is_invalid_with_or_without_its_newline(newline):
    bots, mover = scripted_first_mover(Step("turn", b"x" * 150 + newline))
    result = play(*bots, caps=Caps(line_bytes=100))
    reason, line = fault_of(result, mover)
    assert reason == Reason.INVALID_LINE_TOO_LONG and line == "x" * 150
    detail = result.players[mover].fault.detail  # type: ignore[union-attr]
    assert detail == ("a line longer than 100 bytes (150 bytes)" if newline else
                      "a line longer than 100 bytes (cut off at 150 bytes)")


def test_a_bot_that_stops_reading_is_a_not_reading_timeout():
    bots = [ScriptedBot(), ScriptedBot(Step("hello", READY, "stop_reading")), ScriptedBot()]
    result = play(*bots, caps=Caps(pending_bytes=100, batch_bytes=50))
    reason, _ = fault_of(result, 1)
    assert reason == Reason.TIMEOUT_NOT_READING
    assert all(result.players[seat].fault is None for seat in (0, 2))


def test_a_wrong_card_and_an_illegal_move_carry_their_reasons():
    bots, mover = scripted_first_mover(Step("turn", b'{"type":"play","discard":["10H"],"take":"deck"}\n'))
    assert fault_of(play(*bots), mover)[0] == Reason.INVALID_CARD
    bots, mover = scripted_first_mover(Step("turn", b'{"type":"declare"}\n'))
    assert fault_of(play(*bots), mover) == (Reason.ILLEGAL_FIRST_TURN_DECLARE, '{"type":"declare"}')


def test_time_used_beyond_the_move_limit_comes_out_of_the_bank():
    bots, _ = scripted_first_mover()
    result = play(*bots, limits=Limits(hello_ms=2000, move_ms=300, bank_ms=5000))
    assert all(p.fault is None for p in result.players)
    assert all(p.bank_left_ms == 5000 for p in result.players)  # instant answers never touch the bank


# -- the channel's states -------------------------------------------------------------------------------------


def channel(bot: ScriptedBot, faults: list[tuple[Reason, str]]) -> BotChannel:
    return BotChannel(0, bot, Poller(), lambda ch, reason, detail, line, ended: faults.append((reason, detail)))


def test_channel_walks_through_its_states():
    faults: list[tuple[Reason, str]] = []
    bot = ScriptedBot()
    ch = channel(bot, faults)
    assert ch.state is State.STARTING and ch.waiting
    ch.send(b'{"type":"hello","seat":0}\n', urgent=True)
    ch.on_ready(bot.read_fds()[0], writable=False)
    assert ch.state is State.ANSWERED and not ch.waiting
    assert ch.take_reply() == b'{"type":"ready"}' and ch.state is State.IDLE
    ch.finish()
    assert ch.state is State.FINISHED and ch.live
    ch.kill()
    assert ch.state is State.CLOSED and not ch.live and faults == []


def test_every_transition_outside_the_table_is_refused():
    faults: list[tuple[Reason, str]] = []
    ch = channel(ScriptedBot(), faults)
    with pytest.raises(AssertionError, match="STARTING -> AWAITING_MOVE"):
        ch.ask(b"{}\n")  # a turn before the hello was answered
    with pytest.raises(AssertionError):
        ch.take_reply()  # nothing arrived
    ch.kill()
    for state in State:  # CLOSED and KEPT (a process handed back for another match) are where a channel ends
        assert (State.CLOSED in TRANSITIONS[state]) == (state not in (State.CLOSED, State.KEPT))


def parting(bot: ScriptedBot, faults: list[tuple[Reason, str]]) -> BotChannel:
    """A channel whose bot answered hello, told the match is over and that its ``done`` is awaited."""
    ch = channel(bot, faults)
    ch.send(b'{"type":"hello","seat":0}\n', urgent=True)
    ch.on_ready(bot.read_fds()[0], writable=False)
    ch.take_reply()
    ch.finish(parting=True)
    return ch


def test_a_persistent_channel_parts_with_done_and_hands_its_live_process_back():
    faults: list[tuple[Reason, str]] = []
    bot = ScriptedBot()
    ch = parting(bot, faults)
    assert ch.parting and ch.live
    bot._say(b'{"type":"done"}\n')
    ch.on_ready(bot.read_fds()[0], writable=False)
    assert ch.state is State.PARTED and ch.take_done() == b'{"type":"done"}'
    assert ch.keep() is bot and ch.state is State.KEPT and not ch.live
    assert ch.kill().returncode is None and bot.poll() is None  # a kept process is no longer the channel's to kill
    bot.kill()


def test_a_line_after_done_is_unsolicited():
    faults: list[tuple[Reason, str]] = []
    bot = ScriptedBot()
    ch = parting(bot, faults)
    bot._say(b'{"type":"done"}\n')
    bot._say(b'{"type":"done"}\n')
    ch.on_ready(bot.read_fds()[0], writable=False)
    assert [reason for reason, _ in faults] == [Reason.INVALID_UNSOLICITED]
    bot.kill()


# -- what goes on the wire and in the log ---------------------------------------------------------------------


def test_messages_built_without_the_encoder_are_the_encoders_bytes():
    for seed in range(60):
        players = 2 + seed % 7
        match, rng, told = Match(players, seed, SHORT), random.Random(seed), 0
        while match.outcome is None:
            for seat in range(players):
                assert protocol.turn_line(match, seat, 1234, 56) == protocol.encode(
                    protocol.turn(match.view(seat), 1234, 56))
            if rng.random() < 0.02:
                match.forfeit(match.turn, "test")
            else:
                match.apply(rng.choice(list(match.legal_moves())))
            for event in match.events[told:]:
                expected = [None if (m := protocol.for_seat(event, s, match)) is None else protocol.encode(m)
                            for s in range(players)]
                assert protocol.tell(event, match) == expected
            told = len(match.events)


def test_every_log_record_is_compact_json_as_the_writer_always_wrote_it(tmp_path):
    bots = [ScriptedBot(), ScriptedBot(Step("hello", READY), Step("round_start"),
                                       Step("turn", b'{"type" : "x\\\\y\xc3\xa9\x01\xff"}\n')), ScriptedBot()]
    play(*bots, log=tmp_path / "m.jsonl.gz")
    raw = gzip.decompress((tmp_path / "m.jsonl.gz").read_bytes()).splitlines(keepends=True)
    kinds = {json.loads(line)["t"] for line in raw}
    assert {"header", "send", "recv", "event", "fault", "result"} <= kinds
    for line in raw:
        assert line == json.dumps(json.loads(line), separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def test_each_move_is_logged_as_sent_to_every_live_seat_and_to_no_faulted_one(tmp_path):
    # The moves told to every seat are logged in one write (MatchLog.write_told): before a fault to all three
    # seats, after it to the two left, each record the bytes that seat was sent and the mover's with its draw.
    second = (first_turn(3) + 1) % 3  # faults on its first turn, after the first mover's move
    bots = [ScriptedBot() for _ in range(3)]
    bots[second] = ScriptedBot(Step("hello", READY), Step("round_start"), Step("played"), Step("turn", b"nonsense\n"))
    play(*bots, log=tmp_path / "m.jsonl.gz")
    records = [json.loads(line) for line in gzip.decompress((tmp_path / "m.jsonl.gz").read_bytes()).splitlines()]
    faulted = next(i for i, record in enumerate(records) if record["t"] == "fault")
    told_seats: dict[bool, set[tuple[int, ...]]] = {False: set(), True: set()}
    for i, record in enumerate(records):
        if record["t"] != "event" or record["event"]["type"] != "play":
            continue
        event, sends = record["event"], []
        for earlier in reversed(records[:i]):
            if earlier["t"] != "send" or earlier["msg"]["type"] != "played":
                break
            sends.insert(0, earlier)
        told_seats[i > faulted].add(tuple(send["seat"] for send in sends))
        for send in sends:
            expected = dict(event, type="played")
            if send["seat"] != event["seat"]:
                expected.pop("drew", None)
            assert send["msg"] == expected
    assert told_seats == {False: {(0, 1, 2)}, True: {tuple(seat for seat in range(3) if seat != second)}}
