"""Bad input of every kind gets one plain line naming the file or the field, exit 2, and no traceback (issue 13.8,
13.10): run as a user would, in a subprocess, so that a traceback anywhere would show on stderr."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from arena.results import counted
from sitestore import make_store

ROOT = Path(__file__).resolve().parent.parent
GREEDY = str(ROOT / "sample_bots" / "greedy")
RANDOM = str(ROOT / "sample_bots" / "random")


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena", *args], capture_output=True, text=True, cwd=cwd)


def plain(done: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    """Exit ``code`` with one line on stderr holding every needle, and no traceback."""
    assert done.returncode == code, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_a_log_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    plain(arena("match", GREEDY, RANDOM, "--log", "/proc/x.jsonl.gz", cwd=tmp_path), 2,
          "/proc/x.jsonl.gz", "cannot write the event log")


def test_new_bot_where_no_directory_can_be_made(tmp_path: Path) -> None:
    plain(arena("new-bot", "x", "--dir", "/proc/x", cwd=tmp_path), 2, "/proc/x", "cannot create")


def test_a_negative_seed_is_refused_by_match_as_by_a_config(tmp_path: Path) -> None:
    done = arena("match", GREEDY, RANDOM, "--seed", "-1", cwd=tmp_path)
    assert done.returncode == 2 and "--seed" in done.stderr and "Traceback" not in done.stderr


def test_a_key_given_twice_is_refused_with_both_lines(tmp_path: Path) -> None:
    config = tmp_path / "t.yaml"
    config.write_text(f"name: t\nbots: [{GREEDY}, {RANDOM}]\nplayers: 2\nplayers: 3\nseed: 1\n")
    plain(arena("run", str(config), "--dry-run", cwd=tmp_path), 2, str(config), "'players' is given twice",
          "line 4", "first on line 3")
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "bot.yaml").write_text("name: a\ncommand: x\nname: b\n")
    done = arena("check", str(bot), "--json", cwd=tmp_path)
    assert done.returncode == 2 and "'name' is given twice" in done.stdout  # a manifest error is bad input


def test_a_manifest_without_a_name_says_missing(tmp_path: Path) -> None:
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "bot.yaml").write_text("command: python3 bot.py\n")
    done = arena("match", str(bot), RANDOM, cwd=tmp_path)
    plain(done, 2, "field name: missing")
    assert "None" not in done.stderr


def test_replay_of_a_malformed_event_is_one_line_and_json_under_json(tmp_path: Path) -> None:
    log = tmp_path / "bad.jsonl.gz"
    header = {"t": "header", "format": 2, "seed": 1, "players": 2, "rules": {}, "bots": [{"name": "a"}, {"name": "b"}]}
    event = {"t": "event", "event": {"type": "play", "seat": "one"}}
    log.write_bytes(gzip.compress((json.dumps(header) + "\n" + json.dumps(event) + "\n").encode()))
    plain(arena("replay", str(log), cwd=tmp_path), 2, str(log), "malformed event")
    done = arena("replay", str(log), "--json", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == ""
    assert json.loads(done.stdout)["error"].startswith(str(log))
    missing = arena("replay", str(tmp_path / "nothing.jsonl.gz"), "--json", cwd=tmp_path)
    assert missing.returncode == 2 and json.loads(missing.stdout)["exit_code"] == 2


def test_replay_json_gives_the_narration(tmp_path: Path) -> None:
    log = tmp_path / "m.jsonl.gz"
    played = arena("match", GREEDY, RANDOM, "--threshold", "20", "--log", str(log), cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    done = arena("replay", str(log), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["events"] > 0 and any("greedy" in line for line in data["lines"])


def test_matches_of_a_bot_not_in_the_tournament_says_so(tmp_path: Path) -> None:
    make_store(tmp_path, limit=2)
    plain(arena("matches", "--db", str(tmp_path / "arena.db"), "--bot", "nosuch", cwd=tmp_path), 2,
          "tournament t has no bot called 'nosuch'")
    found = arena("matches", "--db", str(tmp_path / "arena.db"), "--bot", "alpha", cwd=tmp_path)
    assert found.returncode == 0 and "alpha" in found.stdout


def test_counts_read_as_english() -> None:
    assert counted(1, "round") == "1 round" and counted(0, "round") == "0 rounds" and counted(2, "turn") == "2 turns"


def test_submit_from_another_directory_names_the_new_registry(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = arena("submit", GREEDY, "--json", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    registry = elsewhere / "results" / "bots"
    assert f"no registry at {registry} yet" in done.stderr
    assert json.loads(done.stdout)["registry"] == str(registry)
    again = arena("submit", GREEDY, cwd=elsewhere)
    assert again.returncode == 0 and "no registry" not in again.stderr and str(registry) in again.stdout


def test_every_config_problem_is_reported_at_once(tmp_path: Path) -> None:
    config = tmp_path / "t.yaml"
    config.write_text(f"name: Bad Name\nbots: [{GREEDY}, {RANDOM}]\nplayers: 9\nseed: -3\ncolour: blue\n"
                      "limits: {move_ms: 0}\n")
    done = arena("run", str(config), "--dry-run", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    for key in ("colour: unknown key", "name: expected", "players: expected", "seed: expected", "limits.move_ms"):
        assert f"{config}: {key}" in done.stderr, done.stderr
