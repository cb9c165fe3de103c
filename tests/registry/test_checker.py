"""``arena check``: real bots in the real sandbox, and the plain-word explanations of the common mistakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.bots.scaffold import scaffold
from arena.cli.main import main
from arena.game.results import Fault, Reason
from arena.match.protocol import Limits
from arena.registry.check import DEBUG_STDOUT, NO_FLUSH, READ_ALL, check_bot, explain, format_report
from tests.hostile import make_bot

QUICK_HELLO = Limits(hello_ms=2000)
"""Only for bots expected to fail at hello: a passing bot is always checked with the tournament defaults."""


def write_bot(root: Path, name: str, body: str) -> Path:
    """A bot without the helper, in plain Python, so each test shows the mistake in the open."""
    directory = root / name
    directory.mkdir()
    (directory / "bot.py").write_text("import json, sys\n" + body)
    (directory / "bot.yaml").write_text(f"name: {name}\ncommand: python3 bot.py\n")
    return directory


def failed_step(report):
    failed = [step for step in report.steps if step.ok is False]
    assert len(failed) == 1, report.to_dict()
    return failed[0]


@pytest.mark.parametrize("language", ["python", "javascript"])
def test_a_scaffolded_bot_passes_the_check_as_is(tmp_path, language):
    directory = scaffold("fresh", language, tmp_path / "fresh")
    result = CliRunner().invoke(main, ["check", str(directory)])
    assert result.exit_code == 0, result.output
    assert [line[0] for line in result.output.splitlines()[1:6]] == ["✓"] * 5
    assert "fit to enter a tournament" in result.output
    assert "\033[" not in result.output  # colour only on a terminal


def test_json_output_lists_every_step_with_what_was_expected_and_what_arrived(tmp_path):
    directory = scaffold("fresh", "python", tmp_path / "fresh")
    result = CliRunner().invoke(main, ["check", str(directory), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["fit"] is True and report["bot"] == "fresh"
    assert [step["step"] for step in report["steps"]] == ["manifest", "files", "hello", "self-play", "vs greedy"]
    assert all(step["expected"] and step["got"] for step in report["steps"])


def test_debug_text_on_stdout_is_explained(tmp_path):
    directory = write_bot(tmp_path, "chatty", """
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "hello":
        print(json.dumps({"type": "ready"}), flush=True)
    elif message["type"] == "turn":
        print("thinking about", message["hand"], flush=True)
        print(json.dumps({"type": "play", "discard": [message["hand"][0]], "take": "deck"}), flush=True)
""")
    report = check_bot(directory)
    step = failed_step(report)
    assert step.name == "self-play"
    assert "thinking about" in step.got
    assert DEBUG_STDOUT in step.advice
    assert report.exit_code == 1


def test_a_hostile_not_json_bot_gets_the_same_advice(tmp_path):
    step = failed_step(check_bot(make_bot(tmp_path, "not_json")))
    assert step.advice == [DEBUG_STDOUT]


@pytest.mark.slow
def test_not_flushing_is_explained(tmp_path):
    # PYTHONUNBUFFERED rescues print() under the runner, so buffer the way a C or Java bot would: a file object of
    # our own on fd 1, never flushed.
    directory = write_bot(tmp_path, "silent", """
out = open(1, "w", closefd=False)
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "hello":
        out.write(json.dumps({"type": "ready"}) + "\\n")
""")
    report = check_bot(directory, limits=QUICK_HELLO)
    step = failed_step(report)
    assert step.name == "hello"
    assert "0 bytes" in step.got
    assert step.advice == [NO_FLUSH]
    assert "did not flush stdout" in NO_FLUSH and "answer each line as it comes" in NO_FLUSH
    assert [s.ok for s in report.steps[3:]] == [None, None]  # the matches are skipped, not failed


def test_ten_written_as_10h_is_explained(tmp_path):
    directory = write_bot(tmp_path, "tens", """
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "hello":
        print(json.dumps({"type": "ready"}), flush=True)
    elif message["type"] == "turn":
        card = max(message["hand"], key="A23456789TJQK".index)
        card = card.replace("T", "10") if card[0] == "T" else card
        print(json.dumps({"type": "play", "discard": [card], "take": "deck"}), flush=True)
""".replace('key="A23456789TJQK".index', 'key=lambda c: "A23456789TJQK".index(c[0])'))
    step = failed_step(check_bot(directory))
    assert "10" in step.got
    assert "cards are rank+suit like TH, not 10H" in step.advice[0]


@pytest.mark.parametrize("attack, words", [
    ("card_not_in_hand", "not in its hand"),
    ("illegal_set", "not a legal set"),
    ("declare_first_turn", "declared on its first turn"),
    ("take_not_on_floor", "\"take\" must be \"deck\""),
    ("bad_ready", 'answer hello with exactly {"type": "ready"}'),
])
def test_illegal_moves_are_explained(tmp_path, attack, words):
    step = failed_step(check_bot(make_bot(tmp_path, attack)))
    assert any(words in advice for advice in step.advice), step.to_dict()


def test_a_crash_shows_the_traceback(tmp_path):
    report = check_bot(make_bot(tmp_path, "crash_traceback"))
    step = failed_step(report)
    assert "crashed with an exception" in step.advice[0]
    assert "RuntimeError: boom: the bot fell over" in step.stderr_tail
    text = "\n".join(format_report(report))
    assert "stderr (last lines):" in text and "RuntimeError: boom" in text


def test_a_bot_that_exits_at_once_fails_at_hello(tmp_path):
    directory = write_bot(tmp_path, "quitter", "sys.stderr.write('no thanks\\n')\nsys.exit(3)\n")
    step = failed_step(check_bot(directory, limits=QUICK_HELLO))
    assert step.name == "hello"
    assert "exited with status 3" in step.got
    assert "no thanks" in step.stderr_tail


@pytest.mark.parametrize("manifest, words", [
    (None, "bot.yaml: missing"),
    ("name: Bad Name\ncommand: python3 bot.py\n", "field name"),
    ("name: ok\n", "field command"),
])
def test_a_bad_manifest_exits_2(tmp_path, manifest, words):
    directory = tmp_path / "bot"
    directory.mkdir()
    if manifest is not None:
        (directory / "bot.yaml").write_text(manifest)
    result = CliRunner().invoke(main, ["check", str(directory)])
    assert result.exit_code == 2, result.output
    assert "✗ manifest" in result.output and words in result.output


def test_a_failing_bot_exits_1_from_the_command_line(tmp_path):
    result = CliRunner().invoke(main, ["check", str(make_bot(tmp_path, "not_json"))])
    assert result.exit_code == 1
    assert "✗ self-play" in result.output and "NOT fit" in result.output


@pytest.mark.parametrize("fault, stderr, words", [
    (Fault(Reason.INVALID_NOT_JSON, "not JSON", 1, line="{"), "", "do not pretty-print"),
    (Fault(Reason.INVALID_NOT_JSON, "not JSON", 1, line="thinking..."), "", "printed text to stdout"),
    (Fault(Reason.INVALID_NOT_UTF8, "not UTF-8", 1, line="\ufffd\ufffd"), "", "printed text to stdout"),
    (Fault(Reason.INVALID_UNSOLICITED, "a line when none was asked for", 1, line="debug: 3 cards"), "",
     "printed text to stdout"),
    (Fault(Reason.INVALID_UNSOLICITED, "a line when none was asked for", 1, line='{"type": "ok"}'), "",
     "answered a message that wants no reply"),
    (Fault(Reason.INVALID_CARD, "unknown card", 1, line='{"type":"play","discard":["10H"],"take":"deck"}'), "",
     "not 10H"),
    (Fault(Reason.INVALID_CARD, "unknown card", 1, line='{"type":"play","discard":["XX"],"take":"deck"}'), "",
     '"discard": [cards]'),
    (Fault(Reason.INVALID_MOVE, "no discard", 1, line='{"type":"play"}'), "", '"discard": [cards]'),
    (Fault(Reason.INVALID_READY, "not ready", 0, line='{"type":"hi"}'), "", 'answer hello with exactly'),
    (Fault(Reason.INVALID_LINE_TOO_LONG, "too long", 1), "", "at most 64 KiB"),
    (Fault(Reason.ILLEGAL_NOT_IN_HAND, "not in hand", 1), "", "not in its hand"),
    (Fault(Reason.ILLEGAL_NOT_A_SET, "not a set", 1), "", "not a legal set"),
    (Fault(Reason.ILLEGAL_FIRST_TURN_DECLARE, "first turn", 1), "", "declared on its first turn"),
    (Fault(Reason.ILLEGAL_DECLARE_OVER_MAX, "over max", 1), "", "declared when it may not"),
    (Fault(Reason.ILLEGAL_TAKE_NOT_ON_FLOOR, "not on the floor", 1), "", '"take" must be "deck"'),
    (Fault(Reason.ILLEGAL_OTHER, "stored before reason codes", 1), "", "broke a rule"),
    (Fault(Reason.TIMEOUT_MOVE, "no move within 11000 ms", 1), "", "did not flush stdout"),
    (Fault(Reason.TIMEOUT_HELLO, "no reply", 1), "", "did not flush stdout"),
    (Fault(Reason.TIMEOUT_HELLO, "no reply", 1), "", "reads all of stdin before answering"),
    (Fault(Reason.TIMEOUT_HELLO, "no reply", 1, line='{"type": "ready"}'), "", "never ended with a newline"),
    (Fault(Reason.TIMEOUT_NOT_READING, "not reading", 1), "", "stopped reading its stdin"),
    (Fault(Reason.CRASH_EXIT, "exited with status 127", 1, exit_status=127), "", "could not start"),
    (Fault(Reason.CRASH_EXIT, "exited with status 126", 1, exit_status=126), "", "chmod +x"),
    (Fault(Reason.CRASH_EXIT, "exited with status 1", 1, exit_status=1), "Traceback (most recent call last):",
     "crashed with an exception"),
    (Fault(Reason.CRASH_CLOSED_STDOUT, "closed its stdout", 1), "", "keep reading stdin"),
    (Fault(Reason.LIMIT_MEMORY, "killed by the memory limit", 1), "", "too much of a resource"),
])
def test_advice_is_chosen_by_the_reason_code(fault, stderr, words):
    advice = explain(fault, stderr)
    assert any(words in line for line in advice), advice


def test_a_debug_line_before_a_move_blames_the_debug_line_not_the_move():
    move = '{"type": "play", "discard": ["AS"], "take": "deck"}'
    fault = Fault(Reason.INVALID_UNSOLICITED, "a line when none was asked for", 1, line=move)
    assert explain(fault, lines=["thinking about AS", move]) == [DEBUG_STDOUT]


def test_no_flush_advice_speaks_the_bots_language():
    silent = Fault(Reason.TIMEOUT_HELLO, "nothing within 10000 ms", 0)
    assert "fflush(stdout)" in explain(silent, language="c")[0]
    assert "PYTHONUNBUFFERED" in explain(silent, language="python")[0]
    assert "readline" in explain(silent, language="javascript")[0]
    assert "fflush(stdout)" in explain(silent)[0] and "flush=True" in explain(silent)[0]  # unknown: several
    assert explain(silent, reads_all=True)[0] == READ_ALL


@pytest.mark.slow
def test_a_bot_reading_all_of_stdin_is_told_to_read_line_by_line(tmp_path):
    directory = write_bot(tmp_path, "slurp", "messages = sys.stdin.read()\n")
    step = failed_step(check_bot(directory, limits=QUICK_HELLO))
    assert step.name == "hello" and step.advice == [READ_ALL]  # not the flush advice: the source says why


def test_a_command_that_is_not_executable_is_explained(tmp_path):
    directory = write_bot(tmp_path, "noexec", "")
    (directory / "bot.yaml").write_text("name: noexec\ncommand: ./bot.py\n")
    (directory / "bot.py").chmod(0o644)
    step = failed_step(check_bot(directory, limits=QUICK_HELLO))
    assert step.name == "hello" and any("chmod +x" in advice for advice in step.advice), step.to_dict()
