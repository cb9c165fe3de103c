"""Arbitrary replies thrown at the referee: it never crashes, it only records faults."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.bots.manifest import load_bot
from arena.game.results import FaultKind
from arena.game.rules import Rules
from arena.match.protocol import InvalidReplyError, Limits, parse_move, parse_ready
from arena.match.referee import play_match
from arena.sandbox.process import ProcessSandbox

ROOT = Path(__file__).resolve().parents[2]

REPLAYER = """\
import sys
replies = open("replies.bin", "rb").read().split(b"\\0")
for line, reply in zip(sys.stdin.buffer, replies):
    if b'"type":"hello"' in line or b'"type":"turn"' in line:
        sys.stdout.buffer.write(reply)
        sys.stdout.buffer.flush()
import time
time.sleep(30)
"""

json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.sampled_from(["7H", "deck", "play", "AS"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["type", "discard", "take", "x"]), children, max_size=4),
    max_leaves=10,
)


@pytest.mark.parametrize("examples", [100, pytest.param(300, marks=pytest.mark.slow)])  # 400 in a whole run
def test_reply_parsers_only_raise_invalid_reply(examples):
    @settings(max_examples=examples, deadline=None)
    @given(st.binary(max_size=300) | json_like.map(lambda v: repr(v).encode()))
    def check(line):
        for parse in (parse_move, parse_ready):
            try:
                parse(line)
            except InvalidReplyError as error:
                assert str(error)

    check()


replies = st.lists(
    st.one_of(
        st.binary(max_size=200).map(lambda b: b.replace(b"\0", b"") + b"\n"),
        st.binary(max_size=50).map(lambda b: b.replace(b"\0", b"")),  # no newline at all
        st.sampled_from([
            b'{"type":"ready"}\n',
            b'{"type":"declare"}\n',
            b'{"type":"play","discard":["KS"],"take":"deck"}\n',
            b'{"type":"play","discard":[],"take":"deck"}\n',
            b'{"type":"ready"}\n{"type":"ready"}\n',
            b"\xff\xfe\n",
            b"[]\n",
        ]),
    ),
    min_size=1,
    max_size=4,
)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(replies)
def test_referee_survives_arbitrary_bot_output(tmp_path_factory, script):
    directory = tmp_path_factory.mktemp("fuzzbot")
    directory.chmod(0o755)  # the bot runs as a uid of its own: pytest's 0700 directory would hide bot.py from it
    (directory / "bot.yaml").write_text("name: fuzz\ncommand: [python3, bot.py]\n")
    (directory / "bot.py").write_text(REPLAYER)
    (directory / "replies.bin").write_bytes(b"\0".join(script))
    bots = [load_bot(ROOT / "sample_bots" / "greedy"), load_bot(directory)]
    result = play_match(bots, 5, ProcessSandbox(), Rules(threshold=20), Limits(hello_ms=1500, move_ms=150, bank_ms=0))
    fuzz = result.players[1]
    if fuzz.fault is None:
        return  # only possible when the bytes happened to be a legal game
    # The replayer neither exits nor grows: whatever it sends, the fault is the bot's words or its silence.
    assert fuzz.fault.kind in {FaultKind.TIMEOUT, FaultKind.INVALID, FaultKind.ILLEGAL}, fuzz.fault
    answer, newline, more = script[0].partition(b"\n")
    problem = hello_problem(answer.removesuffix(b"\r"))
    if not newline:  # no whole line ever answers hello
        assert fuzz.fault.kind == FaultKind.TIMEOUT and "no reply to hello" in fuzz.fault.detail, fuzz.fault
    elif problem is not None:
        assert fuzz.fault.kind == FaultKind.INVALID, fuzz.fault
        if not more:  # a second line would be reported instead when the first one parses
            assert fuzz.fault.detail == problem
    if fuzz.fault.kind == FaultKind.ILLEGAL:
        assert "the move was" in fuzz.fault.detail, fuzz.fault
    assert fuzz.place == 2 and result.players[0].place == 1


def hello_problem(line: bytes) -> str | None:
    try:
        parse_ready(line)
    except InvalidReplyError as error:
        return str(error)
    return None
