"""``arena check``: real bots in the real sandbox, and the plain-word explanations of the common mistakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.checker import DEBUG_STDOUT, NO_FLUSH, check_bot, explain, format_report
from arena.cli import main
from arena.protocol import Limits
from arena.scaffold import scaffold
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
    assert "did you flush stdout after writing?" in NO_FLUSH
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


@pytest.mark.parametrize("kind, detail, words", [
    ("invalid", "not JSON (Expecting property name at column 2): '{'", "do not pretty-print"),
    ("invalid", "sent a line when no reply was asked for: 'debug: 3 cards' (only hello and turn want a reply)",
     "printed text to stdout"),
    ("invalid", "sent a line when no reply was asked for: '{\"type\": \"ok\"}' (only hello ...)",
     "answered a message that wants no reply"),
    ("timeout", "no move within 11000 ms", "did not flush stdout"),
    ("crash", "closed its stdout (exited with status 127)", "could not start"),
    ("limit", "killed by the memory limit", "too much of a resource"),
])
def test_explanations_come_from_the_fault_details(kind, detail, words):
    assert any(words in advice for advice in explain(kind, detail)), explain(kind, detail)
