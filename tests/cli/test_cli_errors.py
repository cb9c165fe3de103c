"""Bad input of every kind gets one plain line naming the file or the field, exit 2, and no traceback (issue 13.8,
13.10): run as a user would, in a subprocess, so that a traceback anywhere would show on stderr."""

from __future__ import annotations

import gzip
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.cli.play import progress_status
from arena.game.results import counted
from arena.match.matchlog import LogError, describe, load
from arena.run.loop import Progress
from tests.sigint import default_sigint
from tests.sitestore import make_store
from tests.support.runs import shadowed

ROOT = Path(__file__).resolve().parents[2]
GREEDY = str(ROOT / "sample_bots" / "greedy")
RANDOM = str(ROOT / "sample_bots" / "random")


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena", *args], capture_output=True, text=True, cwd=cwd, check=False)


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_serve_and_cluster_without_their_extra_name_the_pip_line(tmp_path: Path) -> None:
    env = shadowed(tmp_path, "uvicorn", "distributed")
    league = tmp_path / "league.yaml"
    league.write_text("league: {name: l}\n")
    done = subprocess.run([sys.executable, "-m", "arena", "serve", str(league)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, check=False)
    plain(done, 2, "arena serve needs the server extra", "pip install 'least-score-arena[server]'")
    config = tmp_path / "t.yaml"
    config.write_text(f"name: t\nbots: [{GREEDY}, {RANDOM}]\nplayers: 2\nseed: 1\n")
    done = subprocess.run([sys.executable, "-m", "arena", "run", str(config), "--cluster", "local:2"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, check=False)
    plain(done, 2, "--cluster needs the cluster extra", "pip install 'least-score-arena[cluster]'")
    config.write_text(f"name: t\nbots: [{GREEDY}, {RANDOM}]\nplayers: 2\nseed: 1\ncluster: local:2\n")
    done = subprocess.run([sys.executable, "-m", "arena", "run", str(config)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, check=False)
    plain(done, 2, f"{config}: cluster: needs the cluster extra", "pip install 'least-score-arena[cluster]'")
    assert not (tmp_path / "results").exists()  # refused before a store was made


@pytest.mark.slow
def test_a_log_whose_match_start_is_empty_is_malformed_with_or_without_verify(tmp_path: Path) -> None:
    log = tmp_path / "m.jsonl.gz"
    played = arena("match", "sample:greedy", "sample:random", "--threshold", "20", "--log", str(log), cwd=tmp_path)
    assert played.returncode == 0, played.stderr  # the shipped samples by name, from a directory that has none
    lines = gzip.decompress(log.read_bytes()).decode().splitlines()
    start = next(i for i, line in enumerate(lines) if '"type":"match_start"' in line)
    lines[start] = json.dumps({"t": "event", "event": {}})
    log.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    for verify in ((), ("--verify",)):
        done = arena("replay", str(log), *verify, cwd=tmp_path)
        plain(done, 2, str(log), "malformed", "event 1", '"type"')
        assert done.stdout == "" and "?" not in done.stderr and "MISMATCH" not in done.stderr
    lines[start] = json.dumps({"t": "event", "event": {"type": "round_start", "round": 1}})
    log.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    with pytest.raises(LogError, match="event 1: a round_start event without its 'hands' field"):
        list(describe(load(log)))  # what the command prints, as above, in-process


@pytest.mark.slow
def test_unknown_sample_bots_are_named_and_configs_take_samples(tmp_path: Path) -> None:
    plain(arena("match", "sample:nosuch", "sample:greedy", cwd=tmp_path), 2, "sample:nosuch: no such sample bot",
          "sample:greedy", "sample:random")
    config = tmp_path / "t.yaml"
    config.write_text("name: t\nbots: [sample:greedy, sample:random]\nplayers: 2\nseed: 1\n")
    done = arena("run", str(config), "--dry-run", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)["seats_per_bot"]) == {"greedy", "random"}
    config.write_text("name: t\nbots: [sample:greedy, sample:nosuch]\nplayers: 2\nseed: 1\n")
    plain(arena("run", str(config), "--dry-run", cwd=tmp_path), 2, f"{config}: bots[1]: sample:nosuch: no such")


@pytest.mark.slow
def test_replay_takes_a_match_id_as_arena_matches_shows_it(tmp_path: Path) -> None:
    store = make_store(tmp_path, limit=3)
    db = str(tmp_path / "arena.db")
    last = store.match_list(store.latest_tournament()["id"])[-1]
    store.close()
    done = arena("replay", str(last["id"]), "--db", db, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("match seed") and "Match over" in done.stdout
    plain(arena("replay", "999", "--db", db, cwd=tmp_path), 2, "999: no such log file", "no match with id 999")
    plain(arena("replay", "7", cwd=tmp_path), 2, "no results store at results/arena.db")


def test_submit_to_a_server_without_a_scheme_says_to_add_it(tmp_path: Path) -> None:
    plain(arena("submit", GREEDY, "--server", "127.0.0.1:18431", "--token", "t", cwd=tmp_path), 2,
          "127.0.0.1:18431", "http://", "https://")


def test_the_progress_of_a_resumed_run_counts_as_its_final_line() -> None:
    progress = Progress(total=120, done=55)
    for _ in range(16):
        progress.played += 1
    assert progress_status(progress).startswith("71/120 done")


def test_new_bot_readme_plays_a_sample_from_anywhere(tmp_path: Path) -> None:
    made = arena("new-bot", "mine", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    readme = (tmp_path / "mine" / "README.md").read_text()
    assert "arena match mine sample:greedy --seed 1" in readme and "sample_bots/" not in readme
    done = arena("match", "mine", "sample:greedy", "--seed", "1", "--threshold", "20", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "greedy" in done.stdout and "Traceback" not in done.stderr


@pytest.mark.slow
def test_ctrl_c_in_a_series_prints_the_totals_of_the_finished_matches(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    runner = subprocess.Popen([sys.executable, "-m", "arena", "match", GREEDY, RANDOM, "--games", "500", "--workers",
                               "1", "--threshold", "20", "--log", str(logs)], cwd=tmp_path, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_sigint)  # noqa: PLW1509
    # One worker: once a fourth log is begun, three matches have ended (no clock to race).
    while len(list(logs.rglob("*.jsonl.gz"))) < 4 and runner.poll() is None:
        time.sleep(0.05)
    runner.send_signal(signal.SIGINT)
    out, err = runner.communicate(timeout=60)
    assert runner.returncode == 1, out + err
    assert "Traceback" not in err and "Aborted" not in err, err
    finished = int(re.search(r"Score of greedy vs random: (\d+) matches", out).group(1))  # type: ignore[union-attr]
    assert 1 <= finished < 500, out
    assert f"interrupted: the totals are of the {finished} of 500 matches that finished" in err
    per_bot = [int(line.split()[1]) for line in out.splitlines() if line.startswith(("greedy ", "random "))]
    assert per_bot == [finished, finished], out
