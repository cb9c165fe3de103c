"""The command line, run through click's runner with stdout and stderr kept apart."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from arena import __version__
from arena.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
GREEDY = str(ROOT / "sample_bots" / "greedy")
RANDOM = str(ROOT / "sample_bots" / "random")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_version_and_help():
    result = invoke("--version")
    assert result.exit_code == 0 and __version__ in result.output and "Python" in result.output
    for command in ([], ["match"], ["replay"]):
        assert invoke(*command, "--help").exit_code == 0


def test_python_dash_m_arena_works():
    done = subprocess.run([sys.executable, "-m", "arena", "--version"], capture_output=True, text=True, cwd=ROOT,
                          check=False)
    assert done.returncode == 0 and __version__ in done.stdout


def test_match_json_has_the_documented_shape(tmp_path):
    log = tmp_path / "m.jsonl.gz"
    result = invoke("match", GREEDY, RANDOM, "--seed", "4", "--threshold", "30", "--json", "--log", str(log))
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"seed", "rounds", "turns", "players", "log"} <= set(data)
    assert data["seed"] == 4
    assert [p["seat"] for p in data["players"]] == [0, 1]
    assert sorted(p["place"] for p in data["players"]) == [1, 2]
    assert all(set(p) >= {"seat", "name", "place", "score", "fault"} for p in data["players"])
    assert log.exists()


def test_match_table_and_replay(tmp_path):
    log = tmp_path / "m.jsonl.gz"
    result = invoke("match", GREEDY, RANDOM, "--threshold", "30", "--log", str(log))
    assert result.exit_code == 0
    assert "place" in result.stdout and "greedy" in result.stdout and "random" in result.stdout
    shown = invoke("replay", str(log))
    assert shown.exit_code == 0
    assert "Round 1 is dealt" in shown.stdout and " throws " in shown.stdout and "Match over" in shown.stdout
    verified = invoke("replay", str(log), "--verify", "--json")
    assert verified.exit_code == 0 and json.loads(verified.stdout)["ok"] is True


def test_replay_verify_catches_a_tampered_log(tmp_path):
    log = tmp_path / "m.jsonl.gz"
    assert invoke("match", GREEDY, RANDOM, "--threshold", "30", "--log", str(log)).exit_code == 0
    lines = gzip.decompress(log.read_bytes()).splitlines()
    tampered = []
    for line in lines:
        record = json.loads(line)
        if record["t"] == "result":
            record["result"]["players"][0]["score"] += 1
        tampered.append(json.dumps(record).encode())
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(gzip.compress(b"\n".join(tampered) + b"\n"))
    result = invoke("replay", str(bad), "--verify")
    assert result.exit_code == 1
    assert "scores differ" in result.stderr


def test_corrupt_or_missing_log_is_an_input_error(tmp_path):
    junk = tmp_path / "junk.jsonl.gz"
    junk.write_bytes(b"not gzip at all")
    result = invoke("replay", str(junk))
    assert result.exit_code == 2 and str(junk) in result.stderr
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(b'{"t":"header","format":1}\n' * 200)[:60])
    result = invoke("replay", str(cut))
    assert result.exit_code == 2 and "cut.jsonl.gz" in result.stderr
    assert invoke("replay", str(tmp_path / "none.jsonl.gz")).exit_code == 2


def test_bad_manifest_names_file_and_field(tmp_path):
    bot = tmp_path / "bad"
    bot.mkdir()
    (bot / "bot.yaml").write_text("name: Bad Name!\ncommand: python3 bot.py\n")
    result = invoke("match", GREEDY, str(bot))
    assert result.exit_code == 2
    assert "bot.yaml" in result.stderr and "field name" in result.stderr and "slug" in result.stderr
    (bot / "bot.yaml").write_text("name: ok\ncommand: 42\n")
    result = invoke("match", GREEDY, str(bot))
    assert result.exit_code == 2 and "field command" in result.stderr
    (bot / "bot.yaml").unlink()
    result = invoke("match", GREEDY, str(bot))
    assert result.exit_code == 2 and "missing" in result.stderr


def test_bad_rules_and_usage_errors(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("threshold: lots\n")
    result = invoke("match", GREEDY, RANDOM, "--rules", str(rules))
    assert result.exit_code == 2 and "rules.threshold" in result.stderr and "rules.yaml" in result.stderr
    assert invoke("match", GREEDY).exit_code == 2
    assert invoke("match", *[GREEDY] * 9).exit_code == 2


def test_run_takes_the_name_of_a_shipped_example_config_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    demo = invoke("run", "demo", "--dry-run", "--json")
    assert demo.exit_code == 0, demo.stderr
    summary = json.loads(demo.stdout)
    assert summary["name"] == "demo" and summary["matches"] == 48 and summary["bots"] == 4
    assert not (tmp_path / "results").exists(), "a dry run writes nothing"
    assert summary["cluster"] is None and summary["workers"] == 2
    on_cluster = json.loads(invoke("run", "demo", "--dry-run", "--json", "--cluster", "local:3").stdout)
    assert on_cluster["cluster"] == "local:3" and on_cluster["workers"] == 3
    assert "on the cluster tcp://127.0.0.1:8786" in invoke("run", "demo", "--dry-run", "--cluster",
                                                           "tcp://127.0.0.1:8786").stdout
    unknown = invoke("run", "no-such-example", "--dry-run")
    assert unknown.exit_code == 2 and "no-such-example: no such config file" in unknown.stderr
    (tmp_path / "demo").mkdir()  # a path that exists is never taken for an example's name
    assert invoke("run", "demo", "--dry-run").exit_code == 2
