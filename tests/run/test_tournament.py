"""Tournaments end to end: config validation, parallel runs, resume after kill -9, faults and infrastructure."""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli.main import main
from arena.run.config import ConfigError, load_config
from arena.run.plan import identity_hash
from arena.run.tournament import run_tournament
from arena.sandbox.rlimits import ceiling
from arena.stats.standings import rated_matches
from arena.store import Store
from tests.hostile import make_bot
from tests.support.runs import write_config

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"


def standings_json(db: Path, name: str = "t") -> list[dict]:
    result = CliRunner().invoke(main, ["standings", name, "--db", str(db), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["standings"]


@pytest.mark.parametrize("change, message", [
    ({"name": "Bad Name"}, "name: expected a slug"),
    ({"players": 9}, "players: expected an integer from 2 to 3"),
    ({"bots": ["nowhere"]}, "bots: expected a list of at least 2"),
    ({"bots": ["nowhere", "elsewhere"]}, "bots[0]: expected a bot directory"),
    ({"repeats": 0}, "repeats: expected an integer"),
    ({"rules": {"threshold": "high"}}, "rules.threshold"),
    ({"limits": {"move_ms": -5}}, "limits.move_ms: expected a positive integer"),
    ({"limits": {"memroy_mb": 5}}, "limits.memroy_mb"),
    ({"rating": {"draw_probability": 0}}, "rating.draw_probability: expected a positive number"),
    ({"sandbox": "vm"}, "sandbox: expected one of process, docker"),
    ({"deals": "shared"}, "deals: expected one of duplicate, independent"),
    ({"colour": "red"}, "colour: unknown key"),
])
def test_config_errors_name_the_file_and_the_key(tmp_path, change, message):
    path = write_config(tmp_path, **change)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(path) in str(caught.value) and message in str(caught.value)
    result = CliRunner().invoke(main, ["run", str(path), "--db", str(tmp_path / "a.db")])
    assert result.exit_code == 2 and message in result.stderr


def test_deals_key_chooses_the_schedule_and_keeps_old_config_hashes(tmp_path):
    default = load_config(write_config(tmp_path))
    assert default.deals == "duplicate" and "deals" not in default.identity()
    independent = load_config(write_config(tmp_path, deals="independent"))
    assert independent.identity()["deals"] == "independent"
    assert identity_hash(independent.identity()) != identity_hash(default.identity())
    result = CliRunner().invoke(main, ["run", str(tmp_path / "t.yaml"), "--dry-run", "--json"])
    assert result.exit_code == 0
    summary = json.loads(result.stdout)
    assert summary["deal_mode"] == "independent" and summary["deals"] == summary["matches"]


def test_missing_keys_and_broken_yaml(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("name: t\nbots: [a, b\n")
    with pytest.raises(ConfigError, match="cannot read the config"):
        load_config(path)
    path.write_text("name: t\n")
    with pytest.raises(ConfigError, match="bots: missing"):
        load_config(path)


@pytest.mark.slow
def test_ratings_are_the_same_with_one_and_two_workers(tmp_path):
    config = load_config(write_config(tmp_path))
    one = run_tournament(config, Store(tmp_path / "one" / "a.db"), workers=1)
    two = run_tournament(config, Store(tmp_path / "two" / "a.db"), workers=2)
    assert one.played == two.played == 12 and one.failed == 0
    assert [line.to_dict(0) for line in one.standings] == [line.to_dict(0) for line in two.standings]
    assert {line.name for line in one.standings} == {"greedy", "random", "js-greedy"}
    assert one.standings[-1].name == "random"


def test_a_bot_that_faults_every_match_sinks_to_the_bottom(tmp_path):
    faulty = make_bot(tmp_path / "bots", "declare_first_turn", "faulty")
    config = load_config(write_config(tmp_path, bots=[str(SAMPLES / "random"), str(SAMPLES / "greedy"),
                                                     str(faulty)], players=3, repeats=1))
    store = Store(tmp_path / "a.db")
    report = run_tournament(config, store)
    assert report.standings[-1].name == "faulty"
    assert report.standings[-1].faults == {"illegal": 3}
    assert report.standings[-1].mean_place == 3.0
    # The store keeps each fault as the referee decided it: its reason code and the line that broke the rule.
    faults = [p.fault for m in store.matches(report.tid) if m.result for p in m.result.players if p.fault]
    assert [f.reason.value for f in faults] == ["illegal.first_turn_declare"] * 3
    assert all(f.line is not None and "declare" in f.line for f in faults)


@pytest.mark.slow  # 12 attempts, each with its pause, twice
def test_infrastructure_errors_are_retried_and_never_rated(tmp_path, monkeypatch):
    # A real failure of the host's machinery: the docker engine cannot be reached at this address.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker-here.sock")
    config = load_config(write_config(tmp_path, sandbox="docker", retries=1, repeats=1))
    store = Store(tmp_path / "a.db")
    report = run_tournament(config, store, workers=1)
    assert report.failed == report.played == 6
    rows = store.db.execute("SELECT status, attempts, error FROM matches").fetchall()
    assert {row["status"] for row in rows} == {"failed"} and {row["attempts"] for row in rows} == {2}
    assert all(row["error"] for row in rows)
    assert rated_matches(store, report.tid) == []
    assert all(line.matches == 0 and line.rating.mu == 25 for line in report.standings)
    result = CliRunner().invoke(main, ["run", str(tmp_path / "t.yaml"), "--db", str(tmp_path / "a.db")])
    assert result.exit_code == 1 and "infrastructure" in result.stderr


def nofile_above_the_host() -> int:
    cap = ceiling(resource.RLIMIT_NOFILE)
    if cap is None:
        pytest.skip("this host caps no bot's open files")
    return cap[0] + 1


def test_a_limit_the_host_cannot_grant_is_refused_when_the_config_is_read(tmp_path):
    path = write_config(tmp_path, limits={"move_ms": 2000, "open_files": nofile_above_the_host()})
    with pytest.raises(ConfigError, match=r"limits\.open_files: expected a value this host can grant"):
        load_config(path)
    result = CliRunner().invoke(main, ["run", str(path), "--db", str(tmp_path / "a.db")])
    assert result.exit_code == 2 and "limits.open_files" in result.stderr


@pytest.mark.slow
def test_bots_the_host_cannot_launch_fail_their_matches_and_the_tournament_goes_on(tmp_path, monkeypatch):
    # Past the config check (a host whose limits shrank after the config was read, say), every launch fails in
    # the child: each match is retried, then marked failed with the real cause, and the run ends with exit 1.
    path = write_config(tmp_path, limits={"move_ms": 2000, "open_files": nofile_above_the_host()}, repeats=1,
                        retries=1)
    monkeypatch.setattr("arena.run.config.ungrantable", lambda limits, backend: {})
    result = CliRunner().invoke(main, ["run", str(path), "--db", str(tmp_path / "a.db"), "--workers", "2"])
    assert result.exit_code == 1, result.output
    assert "6 matches failed for infrastructure reasons" in result.stderr and "Traceback" not in result.output
    rows = Store(tmp_path / "a.db").db.execute("SELECT status, attempts, error FROM matches").fetchall()
    assert len(rows) == 6 and {row["status"] for row in rows} == {"failed"}
    assert {row["attempts"] for row in rows} == {2}
    assert all("RLIMIT_NOFILE" in row["error"] and "limits.open_files" in row["error"] for row in rows)


@pytest.mark.slow
def test_changed_config_or_bot_is_refused_unless_fresh(tmp_path):
    bot = tmp_path / "copy"
    bot.mkdir()
    for name in ("bot.py", "bot.yaml"):
        (bot / name).write_text((SAMPLES / "greedy" / name).read_text())
    (bot / "bot.yaml").write_text((bot / "bot.yaml").read_text().replace("name: greedy", "name: copy"))
    path = write_config(tmp_path, bots=[str(SAMPLES / "random"), str(bot)], repeats=1)
    db = tmp_path / "a.db"
    runner = CliRunner()
    once = ["--workers", "1", "--no-site"]  # what is refused is the store's business: one worker, no site to build
    assert runner.invoke(main, ["run", str(path), "--db", str(db), *once]).exit_code == 0
    (bot / "bot.py").write_text((bot / "bot.py").read_text() + "\n# changed\n")
    refused = runner.invoke(main, ["run", str(path), "--db", str(db)])
    assert refused.exit_code == 2 and "changed" in refused.stderr and "--fresh" in refused.stderr
    write_config(tmp_path, bots=[str(SAMPLES / "random"), str(bot)], repeats=1, seed=99)
    refused = runner.invoke(main, ["run", str(path), "--db", str(db)])
    assert refused.exit_code == 2 and "different config" in refused.stderr
    assert runner.invoke(main, ["run", str(path), "--db", str(db), "--fresh", *once]).exit_code == 0


@pytest.mark.slow
def test_resume_after_kill_9_gives_identical_standings(tmp_path):
    path = write_config(tmp_path, repeats=6, rules={"threshold": 60})
    reference = tmp_path / "reference" / "a.db"
    assert CliRunner().invoke(main, ["run", str(path), "--db", str(reference)]).exit_code == 0

    db = tmp_path / "killed" / "a.db"
    runner = subprocess.Popen([sys.executable, "-m", "arena", "run", str(path), "--db", str(db)], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    done = 0
    while time.monotonic() < deadline and runner.poll() is None:
        time.sleep(0.1)
        try:
            with sqlite3.connect(db) as probe:
                done = probe.execute("SELECT count(*) FROM matches WHERE status = 'done'").fetchone()[0]
        except sqlite3.Error:
            continue
        if done >= 5:
            break
    assert runner.poll() is None, "the run finished before it could be killed"
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait()
    with sqlite3.connect(db) as probe:
        total, finished = probe.execute("SELECT count(*), sum(status = 'done') FROM matches").fetchone()
    assert 5 <= finished < total
    resumed = CliRunner().invoke(main, ["run", str(path), "--db", str(db), "--json"], catch_exceptions=False)
    assert resumed.exit_code == 0, resumed.stderr
    assert json.loads(resumed.stdout)["played"] == total - finished
    assert standings_json(db) == standings_json(reference)
    logs = db.parent / "logs" / "t"
    assert not list(logs.glob("*.tmp")), "half-written logs of the killed run are cleared"
    assert len(list(logs.glob("*.jsonl.gz"))) == total


@pytest.mark.slow
def test_dry_run_and_listing_commands(tmp_path):
    path = write_config(tmp_path, repeats=1)
    runner = CliRunner()
    dry = runner.invoke(main, ["run", str(path), "--dry-run", "--json", "--db", str(tmp_path / "a.db")])
    assert dry.exit_code == 0
    summary = json.loads(dry.stdout)
    assert summary["matches"] == 6 and summary["seats_per_bot"]["greedy"] == [2, 2]
    assert not (tmp_path / "a.db").exists(), "a dry run touches no store"
    eight = json.loads(runner.invoke(main, ["run", str(path), "--dry-run", "--json", "--workers", "8"]).stdout)
    assert eight["workers"] == 8 and summary["workers"] != 8, "--workers overrides the config's, as in a run"
    assert eight["estimated_seconds"] < summary["estimated_seconds"]
    assert runner.invoke(main, ["run", str(path), "--db", str(tmp_path / "a.db")]).exit_code == 0
    listed = json.loads(runner.invoke(main, ["matches", "--db", str(tmp_path / "a.db"), "--json",
                                             "--bot", "random"]).stdout)["matches"]
    assert len(listed) == 4 and all(m["status"] == "done" for m in listed)
    shown = runner.invoke(main, ["show", str(listed[0]["id"]), "--db", str(tmp_path / "a.db")])
    assert shown.exit_code == 0 and "arena replay" in shown.stdout
    assert runner.invoke(main, ["show", "9999", "--db", str(tmp_path / "a.db")]).exit_code == 2
    assert runner.invoke(main, ["standings", "nope", "--db", str(tmp_path / "a.db")]).exit_code == 2
