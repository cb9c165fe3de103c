"""A persistent copy of the greedy sample bot that names its process, for the tests of bots kept up between
matches (issue 41): it plays exactly as greedy does, so its results with reuse on are those of fresh processes, and
after each match it says on stderr which process played it and whether it had been dealt any of the match's hands
before, so a test can check against the store that no process played two matches of one deal."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from arena.store import Store
from tests.support.server import SAMPLES, make_bot

WITNESS = '''\
import os

import arena_bot
from greedy import GreedyBot


class Witness(GreedyBot):
    """Plays as greedy does (its memory never changes a move), and remembers every hand it was dealt in its
    process: after each match it writes its process's token, the match's number in the process and whether any hand
    of the match was one it had been dealt before, for the test to check against the store."""

    token = os.urandom(8).hex()
    played = 0
    seen = set()

    def on_hello(self, message):
        super().on_hello(message)
        self.dealt = []

    def on_message(self, message):
        if message["type"] == "round_start":
            self.dealt.append((tuple(sorted(message["hand"])), tuple(message["floor"])))
        if message["type"] == "match_end":
            Witness.played += 1
            again = any(hand in Witness.seen for hand in self.dealt)
            Witness.seen.update(self.dealt)
            arena_bot.log(f"process {Witness.token} match {Witness.played} dealt-before {again}")


if __name__ == "__main__":
    arena_bot.run(Witness())
'''
SAID = re.compile(r"process (\w+) match (\d+) dealt-before (True|False)")

def witness(where: Path) -> Path:
    """A persistent copy of sample:greedy that says which process played each of its matches."""
    directory = make_bot(where, "witness", SAMPLES / "greedy")
    (directory / "greedy.py").write_text((directory / "bot.py").read_text())
    (directory / "bot.py").write_text(WITNESS)
    return directory


@dataclass(frozen=True)
class Played:
    """One match of a witness's process, as the store has it."""

    number: int
    """The match's number in its process, from 1."""
    seed: int
    group: int
    dealt_before: bool
    """Whether the process had been dealt one of the match's hands before (it says so itself)."""


def witnessed(db: Path, name: str = "witness") -> dict[str, list[Played]]:
    """The witness's processes, each with the matches it played in schedule order, from the store."""
    store = Store(db, readonly=True)
    try:
        found: dict[str, list[Played]] = defaultdict(list)
        for seed, group, tail in store.db.execute(
                "SELECT m.seed, m.grp, s.stderr_tail FROM matches m JOIN seats s ON s.match_id = m.id JOIN bots b "
                "ON b.id = s.bot_id WHERE m.status = 'done' AND b.name = ? ORDER BY m.idx", (name,)):
            said = SAID.search(tail or "")
            assert said is not None, tail
            found[said[1]].append(Played(int(said[2]), seed, group, said[3] == "True"))
        return found
    finally:
        store.close()


def assert_never_a_deal_twice(processes: dict[str, list[Played]]) -> None:
    """No process was dealt a hand twice, played two matches of one deal (by the store's seeds), or played a match
    the store does not have (its matches are numbered 1, 2, ... in schedule order)."""
    for token, played in processes.items():
        assert not any(match.dealt_before for match in played), played
        seeds = [match.seed for match in played]
        assert len(set(seeds)) == len(seeds), f"process {token} played a deal twice: {played}"
        assert [match.number for match in played] == list(range(1, len(played) + 1)), played
