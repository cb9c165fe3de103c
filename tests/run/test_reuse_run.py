"""Tournaments with bots kept up between matches (``reuse:``): the same results whatever the workers, and no
process that plays two matches of one deal (arena/run/lanes.py, docs/SECURITY.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.bots.manifest import load_bot
from arena.cli.main import main
from arena.game.rules import Rules
from arena.match.live import Reuse
from arena.match.protocol import Limits
from arena.run.config import ConfigError, load_config
from arena.run.dispatch import ChainQueue
from arena.run.jobs import MatchJob
from arena.run.lanes import chains
from arena.run.stoprule import round_of
from arena.run.tournament import run_tournament
from arena.sandbox import SandboxLimits
from arena.schedule import make_schedule
from arena.store import Store
from tests.support.runs import counts, results, write_config, write_stop_config
from tests.support.witness import assert_never_a_deal_twice, witness, witnessed

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"

MEMORY_BOT = '''\
import os
import arena_bot


class Memory(arena_bot.Bot):
    """Plays differently with every match its process has played, and remembers every deal it was dealt: its
    process's token, the match's number in the process and what it was dealt are on stderr for the test."""

    persistent = True
    token = os.urandom(6).hex()
    played = 0

    def on_hello(self, message):
        super().on_hello(message)
        self.dealt = None

    def on_message(self, message):
        if message["type"] == "round_start" and message["round"] == 1:
            self.dealt = [message["floor"][0], sorted(message["hand"])]
        if message["type"] == "match_end":
            Memory.played += 1
            arena_bot.log(f"process {self.token} match {self.played} dealt {self.dealt}")

    def on_turn(self, message):
        hand = message["hand"]
        return arena_bot.play([hand[self.played % len(hand)]], "deck")


arena_bot.run(Memory())
'''


def memory_bot(root: Path) -> Path:
    directory = root / "memory"
    directory.mkdir(parents=True)
    (directory / "bot.py").write_text(MEMORY_BOT)
    (directory / "bot.yaml").write_text("name: memory\ncommand: python3 bot.py\n")
    return directory


def configured(tmp_path: Path, reuse: object) -> Path:
    bots = [str(SAMPLES / "greedy"), str(SAMPLES / "random"), str(memory_bot(tmp_path / "bots"))]
    return write_config(tmp_path, bots=bots, reuse=reuse)


def processes_by_deal(db: Path) -> dict[str, list[int]]:
    """The memory bot's processes, each with the deal seeds of the matches it played (from the store)."""
    store = Store(db, readonly=True)
    try:
        played: dict[str, list[int]] = defaultdict(list)
        for match in store.matches(store.tournament("t")["id"]):
            assert match.result is not None
            for name, seat in zip(match.names, match.result.players):
                if name == "memory":
                    token = seat.stderr_tail.split()[1]
                    played[token].append(match.seed)
        return played
    finally:
        store.close()


def test_reuse_key_is_checked_and_part_of_the_identity(tmp_path):
    assert load_config(write_config(tmp_path)).reuse is None
    on = load_config(write_config(tmp_path, reuse={"matches": 3}))
    assert on.reuse == Reuse(matches=3) and on.identity()["reuse"]["matches"] == 3
    assert "reuse" not in load_config(write_config(tmp_path, reuse=False)).identity()
    with pytest.raises(ConfigError, match=r"t\.yaml: reuse\.matches: expected an integer from 2 to 1000, got 1"):
        load_config(write_config(tmp_path, reuse={"matches": 1}))


@pytest.mark.slow
@pytest.mark.long
def test_reuse_gives_the_same_results_with_one_and_two_workers_and_never_a_deal_twice(tmp_path):
    reuse = {"matches": 3}  # 6 groups: 2 blocks of 3 groups, 2 chains each (a rotation per chain)
    config = load_config(configured(tmp_path, reuse))
    one = run_tournament(config, Store(tmp_path / "one" / "a.db"), workers=1)
    two = run_tournament(config, Store(tmp_path / "two" / "a.db"), workers=2)
    assert one.played == two.played == 12 and one.failed == 0
    assert results(tmp_path / "one" / "a.db") == results(tmp_path / "two" / "a.db")
    # It mattered: the memory bot plays by how many matches its process has played.
    fresh = run_tournament(load_config(configured(tmp_path / "off", False)), Store(tmp_path / "off" / "a.db"))
    assert fresh.played == 12
    assert results(tmp_path / "off" / "a.db")[1] != results(tmp_path / "one" / "a.db")[1]
    for db in (tmp_path / "one" / "a.db", tmp_path / "two" / "a.db"):
        played = processes_by_deal(db)
        # Groups (0,1) (0,1) (0,2) | (0,2) (1,2) (1,2): the memory bot (bot 2) plays 1 match in each chain of block
        # 0 and 3 in each of block 1, one process per chain.
        assert sorted(len(seeds) for seeds in played.values()) == [1, 1, 3, 3]
        assert all(len(set(seeds)) == len(seeds) for seeds in played.values()), played  # never a deal twice


@pytest.mark.slow
@pytest.mark.long
def test_a_run_killed_mid_chain_resumes_to_the_results_of_an_uninterrupted_one(tmp_path):
    path = configured(tmp_path, {"matches": 3})
    reference = tmp_path / "reference" / "a.db"
    run_tournament(load_config(path), Store(reference), workers=2)
    db = tmp_path / "killed" / "a.db"
    runner = subprocess.Popen([sys.executable, "-m", "arena", "run", str(path), "--db", str(db), "--no-site"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and runner.poll() is None and counts(db).get("done", 0) < 1:
        time.sleep(0.05)
    assert runner.poll() is None, "the run finished before it could be killed"
    os.killpg(runner.pid, signal.SIGKILL)
    runner.wait()
    store = Store(db)
    try:
        tid = store.tournament("t")["id"]
        placed = chains(store.scheduled(tid, "pending", "done", "failed"), 3)
        done = {row["idx"] for row in store.matches_with_status(tid, "done")}
    finally:
        store.close()
    by_chain: dict[int, set[int]] = defaultdict(set)
    for index, chain in placed.items():
        by_chain[chain.chain].add(index)
    assert done and done < set(placed)
    assert all(members <= done or not members & done for members in by_chain.values()), "a chain stored in part"
    run_tournament(load_config(path), Store(db), workers=2)
    assert results(db) == results(reference)


def test_chains_have_one_match_per_deal_and_a_blocks_chains_never_play_at_once():
    schedule = make_schedule(4, 3, 2, "secret")  # 8 groups of 3 rotations
    placed = chains(schedule, 4)  # 2 blocks of 4 groups: 6 chains of 4 matches
    members: dict[int, list[int]] = defaultdict(list)
    for match in schedule:
        members[placed[match.index].chain].append(match.index)
    assert sorted(len(indices) for indices in members.values()) == [4] * 6
    seeds = {match.index: match.seed for match in schedule}
    assert all(len({seeds[i] for i in indices}) == len(indices) for indices in members.values())
    bot = load_bot(SAMPLES / "greedy")
    units = [tuple(MatchJob(i, seeds[i], (bot,) * 3, Rules(), Limits(), SandboxLimits(), "process", "", 0)
                   for i in indices) for indices in members.values()]
    queue = ChainQueue(units)
    first, second = queue.take(), queue.take()
    assert first is not None and second is not None and queue.take() is None  # one chain per block at a time
    assert not {job.seed for job in first} & {job.seed for job in second}
    waiting = queue.upcoming()  # what an idle worker gets ready meanwhile (arena/run/players.py)
    queue.done(first)
    third = queue.take()
    assert third is not None and {job.seed for job in third} == {job.seed for job in first}  # first's block, next
    assert waiting == third


def stop_config(root: Path, reuse: object) -> Path:
    """The stop rule's test config (3 bots heads-up: rounds of 6 matches), the witness in greedy's place."""
    root.mkdir(parents=True, exist_ok=True)
    bots = [str(witness(root / "bots")), str(SAMPLES / "random"), str(SAMPLES / "planner")]
    return write_stop_config(root, bots=bots, stop={"confidence": 0.8, "max_matches": 120}, reuse=reuse)


@pytest.mark.slow
@pytest.mark.long
def test_a_stop_rule_with_reuse_stops_where_fresh_processes_stop_and_a_chain_stays_in_its_round(tmp_path):
    kept = load_config(stop_config(tmp_path / "kept", {"matches": 3}))
    report = run_tournament(kept, Store(tmp_path / "kept" / "a.db"), workers=2)
    fresh = run_tournament(load_config(stop_config(tmp_path / "fresh", False)), Store(tmp_path / "fresh" / "a.db"),
                           workers=1)
    assert report.total == fresh.total < 120 and report.failed == 0  # it stopped early, after the same round
    assert results(tmp_path / "kept" / "a.db", "s") == results(tmp_path / "fresh" / "a.db", "s")
    processes = witnessed(tmp_path / "kept" / "a.db")
    assert_never_a_deal_twice(processes)
    assert max(len(played) for played in processes.values()) == 2  # 3 groups a round, the witness in 2 of them
    for played in processes.values():  # the rule decides between rounds: no process outlives its round
        assert len({round_of(match.group, 3, 2, kept.repeats) for match in played}) == 1, played


def ab_test(root: Path, *options: str) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    done = CliRunner().invoke(main, ["test", str(witness(root / "bots")), str(SAMPLES / "random"), "--max-matches",
                                     "120", "--name", "ab", "--db", str(root / "a.db"), "--no-site", "--json",
                                     *options], catch_exceptions=False)
    assert done.exit_code == 0, done.stderr + done.stdout
    found: dict = json.loads(done.stdout)
    return found


@pytest.mark.slow
@pytest.mark.long
def test_an_ab_test_with_reuse_reaches_the_verdict_of_fresh_processes_on_the_same_matches(tmp_path):
    # Heads-up at the table: 2 matches a deal, so --reuse 4 makes blocks of 4 deals and 2 chains of 4 matches each.
    kept = ab_test(tmp_path / "kept", "--reuse", "4", "--workers", "2")
    fresh = ab_test(tmp_path / "fresh", "--workers", "1")
    assert kept["verdict"] == fresh["verdict"] == "better"
    assert kept["matches"] == fresh["matches"] < 120
    assert results(tmp_path / "kept" / "a.db", "ab") == results(tmp_path / "fresh" / "a.db", "ab")
    processes = witnessed(tmp_path / "kept" / "a.db", "witness")
    assert_never_a_deal_twice(processes)
    assert max(len(played) for played in processes.values()) > 1


def test_reuse_on_a_dask_cluster_is_refused_naming_the_option(tmp_path):
    done = CliRunner().invoke(main, ["test", str(SAMPLES / "greedy"), str(SAMPLES / "random"), "--reuse", "4",
                                     "--cluster", "local:1", "--db", str(tmp_path / "a.db")])
    assert done.exit_code == 2, done.stderr
    assert "--reuse: a Dask cluster does not keep bots up yet" in done.stderr


def test_the_dry_run_says_how_many_chains_play_at_once_and_a_run_warns_when_workers_would_wait(tmp_path):
    def dry_run(reuse: object) -> tuple[dict, str]:
        done = CliRunner().invoke(main, ["run", str(configured(tmp_path / str(reuse["matches"]), reuse)),
                                         "--dry-run", "--json", "--workers", "2"], catch_exceptions=False)
        assert done.exit_code == 0, done.stderr
        return json.loads(done.stdout), done.stderr

    # 6 groups: blocks of 3 make 2 (a chain of each at once, one per worker); blocks of 6 make 1.
    enough, quiet = dry_run({"matches": 3})
    assert enough["reuse"] == {"matches": 3, "memory_fraction": 0.5, "chains_at_once": 2} and "reuse.matches" not in quiet
    one, said = dry_run({"matches": 6})
    assert one["reuse"]["chains_at_once"] == 1
    assert "reuse.matches: blocks of 6 groups leave 1 chain to play at once for 2 workers" in said
