"""The league server keeps bots up between matches (``reuse:`` in its ``league:`` section, issue 41): a real
``arena serve`` on loopback plays each batch in the schedule's chains (arena/run/lanes.py), no process of a bot ever
plays two matches of one deal (checked against the store), and deterministic bots play exactly what they play in
fresh processes."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import httpx
import pytest

from arena.run.config import ConfigError
from arena.run.lanes import chains
from arena.schedule import ScheduledMatch
from arena.server.config import load_serve_config
from tests.support.server import SAMPLES, Server, free_port, league_results
from tests.support.witness import assert_never_a_deal_twice, witness, witnessed

CONFIG = """\
league:
  name: lanes
  bots: [{witness}, {random}, {planner}]
  players: 3
  seed: 17
  rules: {{threshold: 30}}
  workers: 2
  groups_per_batch: 4
  keep_stderr: 100000
  throttle: false
{reuse}"""


def write_config(root: Path, bots: Path, reuse: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    config = root / "league.yaml"
    config.write_text(CONFIG.format(witness=bots, random=SAMPLES / "random", planner=SAMPLES / "planner",
                                    reuse=reuse))
    return config


def play(root: Path, config: Path, at_least: int) -> dict[str, object]:
    """Serve the league until ``at_least`` matches are stored; its ``/api/league`` then."""
    server = Server(root, config, root / "arena.db", free_port())
    with server.running():
        server.wait_for(f"{at_least} matches", lambda: httpx.get(f"{server.url}/api/league").json()["matches"].get(
            "done", 0) >= at_least, seconds=240)
        league: dict[str, object] = httpx.get(f"{server.url}/api/league").json()
    return league


def assert_same_results(one: Path, other: Path, at_least: int) -> None:
    """The two leagues' stores have at least ``at_least`` matches in common, with the same places and scores."""
    first, second = league_results(one), league_results(other)
    both = sorted(set(first) & set(second))
    assert len(both) >= at_least
    assert [first[index] for index in both] == [second[index] for index in both]


@pytest.mark.slow  # two servers' leagues of 24 matches: 35-41 s at load 12 on 2 cores, a long test as the next one
@pytest.mark.long
def test_a_league_with_reuse_never_shows_a_process_a_deal_twice_and_plays_what_fresh_processes_play(
        tmp_path: Path) -> None:
    bots = witness(tmp_path / "bots")
    kept = tmp_path / "kept"
    # 4 groups a batch in blocks of 2: each block's 3 chains of 2 matches, one process of each bot per chain.
    league = play(kept, write_config(kept, bots, "  reuse: {matches: 2}\n"), 24)
    assert league["error"] is None, league["error"]
    processes = witnessed(kept / "arena.db")
    assert_never_a_deal_twice(processes)
    assert max(len(played) for played in processes.values()) == 2  # kept up, for at most a chain

    fresh = tmp_path / "fresh"
    done = league_results(kept / "arena.db")
    league = play(fresh, write_config(fresh, bots, ""), len(done))
    assert league["error"] is None, league["error"]
    assert all(len(played) == 1 for played in witnessed(fresh / "arena.db").values())  # a process a match
    assert_same_results(kept / "arena.db", fresh / "arena.db", 24)


@pytest.mark.parametrize(("reuse", "words"), [
    ("  reuse: {matches: 1}\n", "league.reuse.matches: expected an integer from 2 to 1000, got 1"),
    ("  reuse: 'yes'\n", "league.reuse: expected true, false, or a mapping"),
])
def test_the_leagues_reuse_key_is_checked_naming_the_file_and_the_key(tmp_path: Path, reuse: str,
                                                                      words: str) -> None:
    config = write_config(tmp_path, SAMPLES / "greedy", reuse)
    with pytest.raises(ConfigError) as caught:
        load_serve_config(config, tmp_path / "registry")
    assert str(caught.value).startswith(f"{config}: ") and words in str(caught.value)


def test_reuse_is_part_of_a_leagues_identity_and_sizes_its_batches(tmp_path: Path) -> None:
    config = tmp_path / "league.yaml"
    config.write_text(f"league: {{name: x, bots: [{SAMPLES / 'greedy'}], players: 2, workers: 2, reuse: true}}\n")
    on = load_serve_config(config, tmp_path / "registry").league
    config.write_text(f"league: {{name: x, bots: [{SAMPLES / 'greedy'}], players: 2, workers: 2}}\n")
    off = load_serve_config(config, tmp_path / "registry").league
    assert on.identity() == {**off.identity(), "reuse": {"matches": 16, "memory_fraction": 0.5}}
    # A block of reuse.matches groups per worker: a block's chains share its deals and play one after another.
    assert (on.groups_per_batch, off.groups_per_batch) == (32, 2)


@pytest.mark.slow
def test_serve_refuses_reuse_on_a_dask_cluster_naming_the_key(tmp_path: Path) -> None:
    config = write_config(tmp_path, SAMPLES / "greedy", "  reuse: true\n")
    done = subprocess.run([sys.executable, "-m", "arena", "serve", str(config), "--db", str(tmp_path / "arena.db"),
                           "--port", str(free_port()), "--cluster", "local:1"],
                          check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"{config}: league.reuse: a Dask cluster does not keep bots up yet; leave reuse off" in done.stderr


@pytest.mark.slow
@pytest.mark.long
def test_a_league_killed_mid_batch_resumes_its_chains_whole_to_the_results_of_an_uninterrupted_one(
        tmp_path: Path) -> None:
    bots = witness(tmp_path / "bots")
    whole = tmp_path / "whole"
    play(whole, write_config(whole, bots, "  reuse: {matches: 2}\n"), 24)
    killed = tmp_path / "killed"
    config = write_config(killed, bots, "  reuse: {matches: 2}\n")
    server = Server(killed, config, killed / "arena.db", free_port())
    server.start()
    try:
        server.wait_for("a chain stored", lambda: len(league_results(killed / "arena.db")) >= 2)
    finally:
        server.stop(signal.SIGKILL)
    done = set(league_results(killed / "arena.db"))
    # The first batch: 4 groups of 3 rotations (indices 0-11) in blocks of 2 groups, 6 chains of 2 matches.
    placed = chains([ScheduledMatch(index, index // 3, index % 3, index // 3, (0, 1, 2)) for index in range(12)], 2)
    members: dict[int, set[int]] = defaultdict(set)
    for index, chain in placed.items():
        members[chain.chain].add(index)
    assert done < set(range(12)), f"the batch was played before the server could be killed: {sorted(done)}"
    assert all(chain <= done or not chain & done for chain in members.values()), "a chain stored in part"
    play(killed, config, 24)
    assert_never_a_deal_twice(witnessed(killed / "arena.db"))
    assert_same_results(whole / "arena.db", killed / "arena.db", 24)
