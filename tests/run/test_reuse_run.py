"""Tournaments with bots kept up between matches (``reuse:``): the same results whatever the workers, and no
process that plays two matches of one deal (arena/run/lanes.py, docs/SECURITY.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from arena.bots.manifest import load_bot
from arena.game.rules import Rules
from arena.match.live import Reuse
from arena.match.protocol import Limits
from arena.run.config import ConfigError, load_config
from arena.run.dispatch import ChainQueue
from arena.run.jobs import MatchJob
from arena.run.lanes import chains
from arena.run.tournament import run_tournament
from arena.sandbox import SandboxLimits
from arena.schedule import make_schedule
from arena.store import Store
from tests.support.runs import counts, results, write_config

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
    queue.done(first)
    third = queue.take()
    assert third is not None and {job.seed for job in third} == {job.seed for job in first}  # first's block, next
