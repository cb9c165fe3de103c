"""Which process plays which seat when bots stay up between matches: the schedule's chains and lanes.

A bot that plays several matches in one process may remember them (opponent modelling: docs/SECURITY.md), so what
a process has played must follow from the config alone, never from which worker was free, and no process may play
two matches of one deal. Both follow from this rule, a pure function of the schedule:

- the groups (each a deal, for duplicate deals) are cut, in schedule order, into blocks of ``reuse.matches``
  consecutive groups;
- a block's *chain* ``r`` is the rotation-``r`` match of each of its groups, in schedule order: one match per deal,
  so no process of the chain sees a deal twice;
- in a chain, each bot of the tournament has one *lane*: the process that plays that bot in the chain's matches,
  in order (a fresh one after a fault, an unclean end or a recycling, arena/match/live.py).

A chain is played whole by one worker, from fresh processes, and its results are stored in one transaction
(arena/run/loop.py), so a run stopped or killed mid-chain plays that chain again from its start when resumed. The
chains of one block share their deals and never play at once (arena/run/dispatch.py's ``ChainQueue``); chains of
different blocks have no deal in common.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arena.schedule import ScheduledMatch


@dataclass(frozen=True)
class Chain:
    """Where one match sits among the matches that share processes."""

    chain: int
    """The chain's number, in order of its first match."""
    position: int
    """The match's place in its chain, from 0."""
    lanes: tuple[str, ...]
    """Each seat's lane: the chain and the bot's place in the tournament's list (the bot, whatever its seat)."""


def chains(schedule: Sequence[ScheduledMatch], length: int) -> dict[int, Chain]:
    """Each match's :class:`Chain`, by schedule index, for blocks of ``length`` groups (see the module docstring)."""
    block_of: dict[int, int] = {}
    for match in schedule:
        if match.group not in block_of:
            block_of[match.group] = len(block_of) // length
    numbers: dict[tuple[int, int], int] = {}
    positions: dict[int, int] = {}
    found: dict[int, Chain] = {}
    for match in sorted(schedule, key=lambda m: m.index):
        number = numbers.setdefault((block_of[match.group], match.rotation), len(numbers))
        position = positions[number] = positions.get(number, -1) + 1
        found[match.index] = Chain(number, position, tuple(f"{number}/{bot}" for bot in match.bots))
    return found


def blocks(schedule: Sequence[ScheduledMatch], length: int) -> int:
    """How many blocks of ``length`` groups ``schedule`` is cut into: the most chains that may play at once, since a
    block's chains share its deals and play one after another. Interleaving them a match at a time would not do:
    a process that has played a deal would be alive, holding that deal's cards, while another chain plays it
    (docs/SECURITY.md, "One deal at a time")."""
    return -(-len({match.group for match in schedule}) // length)
