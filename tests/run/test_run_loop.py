"""The one run loop under every runner (arena/run/): what each runner gains by being a policy over it.

Real runs throughout: ``arena test`` and ``arena run`` in subprocesses with real signals, a real SQLite store, a
local Dask cluster, a league thread. The structure checks at the end keep the design honest in ``arena/``: no SQL
on the store's tables outside ``arena/store/``, one place that starts match workers and one that talks to Dask (the
import graph's floors are tests/test_imports.py's).
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli.main import main
from arena.game.rules import Rules
from arena.run.config import LeagueConfig, load_config
from arena.run.league import League
from arena.run.tournament import run_tournament
from arena.stats.standings import final_ratings
from arena.store import LeaseHeldError, Store
from tests.support.runs import (
    arena,
    counts,
    league_playing,
    plain_failure,
    results,
    start,
    wait_group_gone,
    write_stop_config,
)

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"
PACKAGE = ROOT / "arena"
# An A/B test of two identical bots that cannot decide before its cap: every run plays all 80 matches.
UNDECIDED = ("--max-matches", "80", "--margin", "0.001", "--alpha", "0.001", "--beta", "0.001",
             "--threshold", "25", "--workers", "2", "--no-site", "--json")


def wait_for(condition: object, what: object, limit: float = 120.0) -> None:
    """Wait for ``condition``; ``what`` (called if callable) says what was awaited when it never comes."""
    deadline = time.monotonic() + limit
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what() if callable(what) else what
        time.sleep(0.05)


@pytest.mark.slow
def test_arena_test_holds_its_lease_and_resumes_after_sigterm_to_the_same_verdict(tmp_path: Path) -> None:
    new = tmp_path / "greedy-new"
    shutil.copytree(SAMPLES / "greedy", new, ignore=shutil.ignore_patterns("__pycache__"))
    args = ("test", new, SAMPLES / "greedy", *UNDECIDED)
    whole = arena(*args, "--db", tmp_path / "whole.db")
    assert whole.returncode == 3, whole.stderr
    expected = json.loads(whole.stdout)
    assert expected["verdict"] == "undecided" and expected["matches"] == 80

    db = tmp_path / "parted.db"
    first = start(*args, "--db", db)
    try:
        wait_for(lambda: counts(db).get("done", 0) >= 4, "the first test plays")
        assert first.poll() is None, "the first test finished too soon to be raced"
        second = arena(*args, "--db", db)
        plain_failure(second, 1, f"is being run by PID {first.pid} on")
        first.send_signal(signal.SIGTERM)  # the runner alone, as kill does
        stdout, stderr = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    plain_failure((first.returncode, stderr), 4, "interrupted", "run the same command again to resume")
    assert json.loads(stdout)["stopped"] == "interrupted"  # not "undecided at the cap"
    assert not wait_group_gone(first.pid), "bots or workers outlived the stop"
    assert counts(db).get("done", 0) < 80, "the stop came after the end"

    resumed = arena(*args, "--db", db)
    assert resumed.returncode == 3, resumed.stderr
    again = json.loads(resumed.stdout)
    assert 0 < again["played"] < 80
    same = ("verdict", "matches", "llr", "difference", "deals")
    assert {key: again[key] for key in same} == {key: expected[key] for key in same}
    assert results(db, expected["tournament"]) == results(tmp_path / "whole.db", expected["tournament"])


@pytest.mark.slow
def test_a_stop_rule_tournament_on_a_cluster_stops_at_the_round_the_local_pool_does(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="the cluster extra is not installed (pip install 'least-score-arena[cluster]')")
    # A seed whose deals settle the order before max_matches (seed 3: after 3 rounds, 18 matches; the default 4
    # plays all 60 since deals are keyed, arena/schedule.py), so that where it stops says something.
    config = write_stop_config(tmp_path, seed=3)
    found = {}
    for where, extra in (("pool", ()), ("cluster", ("--cluster", "local:2"))):
        outcome = CliRunner().invoke(main, ["run", str(config), "--db", str(tmp_path / f"{where}.db"), "--no-site",
                                            "--json", *extra], catch_exceptions=False)
        assert outcome.exit_code == 0, outcome.stderr
        found[where] = json.loads(outcome.stdout)
    pool, cluster = found["pool"], found["cluster"]
    assert cluster["cluster"]["address"] == "local:2" and sum(cluster["cluster"]["matches_per_worker"].values()) \
        == cluster["played"]
    assert pool["matches"] < 60 and pool["matches"] % 6 == 0, pool  # stopped by the rule, on a whole round
    assert cluster["matches"] == pool["matches"] and cluster["standings"] == pool["standings"]
    assert results(tmp_path / "cluster.db", "s") == results(tmp_path / "pool.db", "s")


@pytest.mark.slow
def test_arena_test_on_a_cluster_reaches_the_verdict_of_the_local_pool(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="the cluster extra is not installed (pip install 'least-score-arena[cluster]')")
    new = tmp_path / "greedy-new"
    shutil.copytree(SAMPLES / "greedy", new, ignore=shutil.ignore_patterns("__pycache__"))
    found = []
    for where, extra in (("pool", ()), ("cluster", ("--cluster", "local:2"))):
        outcome = CliRunner().invoke(main, ["test", str(new), str(SAMPLES / "greedy"), "--threshold", "25",
                                            "--no-site", "--json", "--db", str(tmp_path / f"{where}.db"), *extra],
                                     catch_exceptions=False)
        assert outcome.exit_code == 1, outcome.stderr  # identical bots: not better
        found.append(json.loads(outcome.stdout))
    same = ("verdict", "matches", "llr", "difference")
    assert {key: found[1][key] for key in same} == {key: found[0][key] for key in same}


@pytest.mark.slow
def test_a_stop_rule_run_on_the_local_pool_is_held_and_rated_like_any_tournament(tmp_path: Path) -> None:
    config = load_config(write_stop_config(tmp_path, stop={"confidence": 0.95, "max_matches": 6}))
    store = Store(tmp_path / "a.db")
    held = store.acquire("s")
    with pytest.raises(LeaseHeldError, match="tournament s is being run by PID"):
        run_tournament(config, store)
    store.release(held)
    report = run_tournament(config, store)
    assert (report.total, report.played, report.failed, report.interrupted) == (6, 6, 0, False)
    assert all(line.rating is not None for line in report.standings)
    assert store.tournament("s")["finished_at"] is not None


def test_a_league_holds_its_run_while_it_plays_and_lets_go_when_it_stops(tmp_path: Path) -> None:
    config = LeagueConfig(name="ladder", entries=(str(SAMPLES / "greedy"), str(SAMPLES / "random")), players=2,
                          seed=3, registry=tmp_path / "bots", rules=Rules.from_dict({"threshold": 25}))
    league = League(config, tmp_path / "league.db")
    with league_playing(league) as thread:
        wait_for(lambda: league.state.matches_played >= 2 or league.state.error,
                 lambda: f"the league plays: {league.state}", 60)
        assert league.state.error is None
        other = Store(tmp_path / "league.db")
        with pytest.raises(LeaseHeldError, match="league ladder is being run by PID"):
            other.acquire("ladder")
    assert not thread.is_alive() and league.state.state == "stopped" and league.state.error is None
    other.release(other.acquire("ladder"))  # free again
    tid = other.tournament("ladder")["id"]
    assert other.tournament("ladder")["finished_at"] is None  # a league never finishes
    assert other.status_counts(tid).get("done", 0) >= 2 and final_ratings(other, tid)


# -- the structure --------------------------------------------------------------------------------------------

STORE_TABLES = re.compile(r"\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM|FROM|JOIN)\s+"
                          r"(?:matches|seats|bots|ratings|tournaments)\b", re.IGNORECASE)


def test_no_sql_on_the_stores_tables_outside_the_store() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent == PACKAGE / "store":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if STORE_TABLES.search(line) and ('"' in line or "'" in line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert STORE_TABLES.search('"SELECT count(*) FROM matches WHERE"')  # the pattern finds what it looks for
    assert not found, "\n".join(found)


def test_one_place_starts_match_workers_and_one_talks_to_dask() -> None:
    pools, dask = [], []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if re.search(r"\.Pool\(|ProcessPoolExecutor", text) and "run_job" in text:  # match workers, not page builders
            pools.append(path.relative_to(ROOT).as_posix())
        if re.search(r"^\s*(?:import|from)\s+(?:distributed|dask)\b", text, re.MULTILINE):
            dask.append(path.relative_to(ROOT).as_posix())
    assert pools == ["arena/run/players.py"] and dask == ["arena/run/cluster.py"], (pools, dask)


def test_the_runners_have_no_loop_of_their_own() -> None:
    """Only the loop and the players iterate over results: a runner that calls a player or a pool itself has a
    loop of its own again."""
    for name in ("tournament", "stoprule", "abtest", "league"):
        text = (PACKAGE / "run" / f"{name}.py").read_text(encoding="utf-8")
        assert not re.search(r"\.play\(|imap|worker_pool|Connection\(", text), name
    assert sys.modules["arena.run.tournament"].run_tournament is run_tournament
